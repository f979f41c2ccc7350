"""Differential tests against PyTorch itself, when it is installed (skipped otherwise).

The same calls run on tensorplay and torch tensors built from one numpy array; results
must agree in shape, dtype and value, or both must raise.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tensorplay as tp

from test_ops_support import NP, arrays, dtypes, layouts, make_tensor, quiet, scalars, shapes

torch = pytest.importorskip("torch")

TORCH_DTYPE = {tp.bool: torch.bool, tp.int32: torch.int32, tp.int64: torch.int64, tp.float32: torch.float32,
               tp.float64: torch.float64}

# (name, call) where call(lib, *tensors) uses only the API both libraries share
UNARY = [
    ("sin", lambda m, x: m.sin(x)), ("exp", lambda m, x: m.exp(x)), ("sqrt", lambda m, x: m.sqrt(x)),
    ("neg", lambda m, x: m.neg(x)), ("abs", lambda m, x: m.abs(x)), ("sign", lambda m, x: m.sign(x)),
    ("floor", lambda m, x: m.floor(x)), ("round", lambda m, x: m.round(x)), ("square", lambda m, x: m.square(x)),
    ("reciprocal", lambda m, x: m.reciprocal(x)), ("isfinite", lambda m, x: m.isfinite(x)),
    ("sum", lambda m, x: x.sum()), ("sum0", lambda m, x: x.sum(0, keepdim=True)), ("prod", lambda m, x: x.prod()),
    ("mean", lambda m, x: x.mean()), ("amax", lambda m, x: m.amax(x, -1)), ("argmax", lambda m, x: x.argmax()),
    ("all", lambda m, x: x.all()), ("any", lambda m, x: m.any(x, -1)), ("var", lambda m, x: x.var(-1)),
    ("std0", lambda m, x: x.std(-1, correction=0)), ("logsumexp", lambda m, x: m.logsumexp(x, -1)),
    ("softmax", lambda m, x: m.softmax(x, -1)), ("log_softmax", lambda m, x: m.log_softmax(x, -1)),
    ("cumsum", lambda m, x: m.cumsum(x, -1)), ("flip", lambda m, x: m.flip(x, [-1])),
    ("roll", lambda m, x: m.roll(x, 1)), ("t", lambda m, x: x.mT), ("tile", lambda m, x: m.tile(x, (2, 1))),
    ("repeat_interleave", lambda m, x: m.repeat_interleave(x, 2)), ("diag", lambda m, x: m.diagonal(x, 0, -2, -1)),
    ("chunk", lambda m, x: m.chunk(x, 2, -1)), ("pow2", lambda m, x: x ** 2), ("pow_half", lambda m, x: x ** 0.5),
    ("floordiv", lambda m, x: x // 2), ("mod", lambda m, x: x % -3), ("div", lambda m, x: x / 2),
    ("add_bool", lambda m, x: x + True), ("mul_float", lambda m, x: x * 1.5), ("clamp", lambda m, x: m.clamp(x, -1, 2)),
]


def _both(arr, layout):
    a = make_tensor(arr, layout)
    return a, torch.from_numpy(np.array(arr, order="C", copy=True))  # (ascontiguousarray makes 0-d 1-d)


def _compare(ours, theirs):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _compare(o, t)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert NP[ours.dtype] == theirs.numpy().dtype.type, (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6, equal_nan=True)


def _run(fn, tp_args, torch_args):
    try:
        with quiet():
            theirs = fn(torch, *torch_args)
    except Exception:
        with pytest.raises((TypeError, ValueError, IndexError, RuntimeError)):
            with quiet():
                fn(tp, *tp_args)
        return
    with quiet():
        ours = fn(tp, *tp_args)
    _compare(ours, theirs)


@pytest.mark.parametrize("name,fn", UNARY, ids=[u[0] for u in UNARY])
@given(dtype=dtypes, shape=shapes(min_dims=2, max_dims=3, max_side=3), layout=layouts, data=st.data())
def test_unary_matches_torch(name, fn, dtype, shape, layout, data):
    arr = data.draw(arrays(dtype, shape))
    if arr.size == 0 and name in ("softmax", "log_softmax") and dtype not in (tp.float32, tp.float64):
        return  # torch skips its dtype check when there is nothing to compute; we always check
    a, ta = _both(arr, layout)
    _run(fn, (a,), (ta,))


BINARY = [("add", lambda m, x, y: x + y), ("sub", lambda m, x, y: x - y), ("mul", lambda m, x, y: x * y),
          ("div", lambda m, x, y: x / y), ("floordiv", lambda m, x, y: x // y), ("mod", lambda m, x, y: x % y),
          ("pow", lambda m, x, y: x ** y), ("maximum", lambda m, x, y: m.maximum(x, y)),
          ("lt", lambda m, x, y: x < y), ("eq", lambda m, x, y: x == y), ("and", lambda m, x, y: x & y),
          ("where", lambda m, x, y: m.where(x > 0, x, y)), ("matmul", lambda m, x, y: x @ y.mT),
          ("cat", lambda m, x, y: m.cat([x, y], -1)), ("stack", lambda m, x, y: m.stack([x, y]))]


@pytest.mark.parametrize("name,fn", BINARY, ids=[b[0] for b in BINARY])
@given(da=dtypes, db=dtypes, zero_dim=st.booleans(), data=st.data())
def test_binary_matches_torch(name, fn, da, db, zero_dim, data):
    a_arr = data.draw(arrays(da, (2, 3)))
    b_arr = data.draw(arrays(db, () if zero_dim else (2, 3)))
    a, ta = _both(a_arr, data.draw(layouts))
    b, tb = _both(b_arr, data.draw(layouts))
    _run(fn, (a, b), (ta, tb))


@given(dtype=dtypes, s=scalars(), data=st.data())
def test_scalar_promotion_matches_torch(dtype, s, data):
    a, ta = _both(data.draw(arrays(dtype, (3,))), "contiguous")
    for fn in (lambda x: x + s, lambda x: s * x, lambda x: x / (s or 1), lambda x: x > s):
        _run(lambda m, x: fn(x), (a,), (ta,))


@pytest.mark.parametrize("args", [(5,), (0, 1, 0.1), (-1.0, 1.0, 0.3), (10, 0, -3), (1e-3, 1e-2, 1e-3)])
def test_arange_matches_torch(args):
    _compare(tp.arange(*args), torch.arange(*args))


@pytest.mark.parametrize("args", [(0, 1, 7), (-3.3, 5.1, 11), (0, 10, 5), (1, 0, 4)])
def test_linspace_matches_torch(args):
    _compare(tp.linspace(*args), torch.linspace(*args))
    _compare(tp.linspace(*args, dtype=tp.float64), torch.linspace(*args, dtype=torch.float64))


@pytest.mark.parametrize("make", [lambda m: m.tensor([1.0, 10000.0]), lambda m: m.tensor([1.5, float("nan")]),
                                  lambda m: m.tensor([], dtype=m.int64), lambda m: m.arange(30.0),
                                  lambda m: m.arange(2000.0).reshape(40, 50), lambda m: m.tensor([1e-5, 1.0]),
                                  lambda m: m.tensor([[True, False]]), lambda m: m.zeros(2, 0),
                                  lambda m: m.tensor(3.25, dtype=m.float64), lambda m: m.arange(40, dtype=m.int32)])
def test_repr_matches_torch(make):
    assert repr(make(tp)).replace("tensorplay.", "torch.") == repr(make(torch))
