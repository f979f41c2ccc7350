"""The traced path equals eager: `tp.make_graph(fn, *args)` run by the reference interpreter
(arguments, then captures) gives eager's values, shapes and dtypes, for a sample of ops on
random (0-d, empty, non-contiguous) inputs."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tensorplay as tp
from tensorplay.ir.interpreter import interpret
from tensorplay.ir.verify import verify

from test_ops_support import arrays, dtypes, float_dtypes, layouts, make_tensor, quiet, shapes

CAPTURED = tp.tensor([0.5, -1.0, 2.0])


def _run_traced(fn, args):
    closed = tp.make_graph(fn, *args)
    inputs = [np.asarray(a) for a in args] + [np.asarray(c) for c in closed.capture_tensors()]
    return closed, interpret(closed.graph, inputs)


def _flat(out):
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]


def _assert_traced_equals_eager(fn, args):
    with quiet():
        eager = _flat(fn(*args))
        closed, traced = _run_traced(fn, args)
    assert len(eager) == len(traced)
    for e, t in zip(eager, traced):
        assert e.shape == t.shape and e.dtype == t.dtype, (e.shape, t.shape, e.dtype, t.dtype)
        if e.dtype.kind == "f":
            np.testing.assert_allclose(t, e, rtol=1e-6, atol=1e-7, equal_nan=True)
        else:
            np.testing.assert_array_equal(t, e)
    verify(closed.graph)


def _last(x):
    return -1 if x.ndim else 0


# one-argument functions of any tensor
UNARY = {
    "sin": tp.sin, "exp_int": lambda x: tp.exp(x.long()) if x.dtype is not tp.bool else tp.exp(x),
    "abs_neg": lambda x: tp.abs(-x) if x.dtype is not tp.bool else x.logical_not(),
    "round_floor": lambda x: tp.floor(x) + tp.round(x, decimals=1) if x.is_floating_point() else tp.floor(x),
    "sum_all": lambda x: x.sum(), "sum_dim": lambda x: x.sum(_last(x), keepdim=True),
    "sum_tuple": lambda x: x.sum(tuple(range(x.ndim))),
    "prod": lambda x: x.prod(_last(x)), "mean": lambda x: x.double().mean(_last(x)),
    "var": lambda x: x.double().var(_last(x), correction=0), "std": lambda x: x.double().std(),
    "amax": lambda x: x.amax(_last(x)) if x.numel() else x, "all_any": lambda x: (x.all(_last(x)), x.any()),
    "max_dim": lambda x: tuple(tp.max(x, _last(x))) if x.numel() else x,
    "argmin": lambda x: x.argmin(_last(x)) if x.numel() else x,
    "logsumexp": lambda x: tp.logsumexp(x, _last(x)), "softmax": lambda x: tp.softmax(x, _last(x)),
    "log_softmax": lambda x: tp.log_softmax(x.double(), _last(x)),
    "cumsum": lambda x: tp.cumsum(x, _last(x)),
    "norm": lambda x: tp.norm(x.double(), 3), "flip": lambda x: tp.flip(x, tuple(range(x.ndim))),
    "roll": lambda x: tp.roll(x, 2), "repeat": lambda x: x.repeat((2,) * x.ndim + (1,)),
    "tile": lambda x: tp.tile(x, (2,)), "repeat_interleave": lambda x: tp.repeat_interleave(x, 2),
    "transpose_reshape": lambda x: x.T.reshape(-1), "movedim": lambda x: tp.movedim(x, 0, -1) if x.ndim else x,
    "flatten_unsqueeze": lambda x: tp.flatten(x).unsqueeze(0), "squeeze": lambda x: tp.squeeze(x),
    "cat_stack": lambda x: (tp.cat([x.reshape(-1), x.reshape(-1)]), tp.stack([x, x], -1)),
    "split_chunk": lambda x: tp.split(x, 1, 0) + tp.chunk(x, 2, 0) if x.ndim else x,
    "clamp_where": lambda x: tp.where(x > 0, tp.clamp(x, -1, 1), x * 2) if x.dtype is not tp.bool else x,
    "isfinite_isnan": lambda x: (tp.isfinite(x), tp.isnan(x)),
    "pow_int": lambda x: x ** 3 if x.dtype is not tp.bool else x,
    "floor_divide": lambda x: x // 3 if x.dtype is not tp.bool else x,
    "remainder": lambda x: x % 3 if x.dtype is not tp.bool else x,
    "div_promote": lambda x: x / 2, "captured": lambda x: x.reshape(-1).sum() * CAPTURED,
    "diagonal": lambda x: tp.diagonal(x, 0, 0, -1) if x.ndim >= 2 else x,
}


@pytest.mark.parametrize("name", sorted(UNARY))
@given(dtype=dtypes, shape=shapes(max_dims=3, max_side=3), layout=layouts, data=st.data())
def test_unary_traced_equals_eager(name, dtype, shape, layout, data):
    x = make_tensor(data.draw(arrays(dtype, shape)), layout)
    fn = UNARY[name]
    try:
        with quiet():
            fn(x)
    except (TypeError, ValueError, IndexError):
        return  # not defined for this input; bad-input errors are tested elsewhere
    _assert_traced_equals_eager(fn, (x,))


BINARY = {
    "add": tp.add, "sub_alpha": lambda a, b: tp.sub(a, b, alpha=2), "mul": tp.mul, "div": tp.div,
    "maximum": tp.maximum, "eq": tp.eq, "lt": tp.lt, "atan2": tp.atan2, "fmod": tp.fmod,
    "floor_divide_float": lambda a, b: tp.floor_divide(a.double(), b.double()),
    "remainder_float": lambda a, b: tp.remainder(a.double(), b.double()),
    "pow_float": lambda a, b: tp.pow(a.double(), b), "pow_int": lambda a, b: tp.pow(a.long(), b.long().clamp(-2, 5)),
    "isclose": tp.isclose, "lerp": lambda a, b: tp.lerp(a.double(), b.double(), 0.25),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@given(dtypes_=st.tuples(dtypes, dtypes), data=st.data())
def test_binary_traced_equals_eager(name, dtypes_, data):
    import hypothesis.extra.numpy as hnp

    (sa, sb), _ = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3))
    a = make_tensor(data.draw(arrays(dtypes_[0], sa)), data.draw(layouts))
    b = make_tensor(data.draw(arrays(dtypes_[1], sb)), data.draw(layouts))
    fn = BINARY[name]
    try:
        with quiet():
            fn(a, b)
    except (TypeError, ValueError, RuntimeError):
        return
    _assert_traced_equals_eager(fn, (a, b))


@given(dtype=float_dtypes, data=st.data())
def test_matmul_einsum_traced(dtype, data):
    n, k, m, b = (data.draw(st.integers(0, 3)) for _ in range(4))
    x = make_tensor(data.draw(arrays(dtype, (b, n, k))), data.draw(layouts))
    y = make_tensor(data.draw(arrays(dtype, (k, m))), data.draw(layouts))
    v = make_tensor(data.draw(arrays(dtype, (k,))), data.draw(layouts))
    _assert_traced_equals_eager(lambda p, q, r: (p @ q, p @ r, tp.einsum("bnk,km->bm", p, q),
                                                 tp.einsum("...k,k", p, r), tp.tensordot(p, q, 1)), (x, y, v))


def test_factories_traced():
    def f(x):
        return (x + tp.arange(3), tp.linspace(0, 1, 3) * x, tp.eye(3) @ x.reshape(3, 1), tp.zeros_like(x),
                tp.full((3,), 2.0) + x)
    _assert_traced_equals_eager(f, (tp.tensor([1.0, 2.0, 3.0]),))


def test_int_pow_with_traced_exponent_uses_all_bits():
    f = lambda a, b: a ** b  # noqa: E731
    a = tp.tensor([3, -2, 1, -1, 0, 2], dtype=tp.int64)
    b = tp.tensor([39, 7, -3, -3, 2, 62], dtype=tp.int64)
    _assert_traced_equals_eager(f, (a, b))
    assert (a ** b).tolist() == [3 ** 39, -128, 1, -1, 0, 2 ** 62]
