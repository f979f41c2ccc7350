"""Factories against numpy and PyTorch's documented rules: dtype inference, arange/linspace
edge cases (empty, negative steps, float steps, exact endpoints), eye, *_like, random draws."""
import math

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import tensorplay as tp

from test_ops_support import NP, check, dtypes, shapes, tensors


@given(shape=shapes(), dtype=st.one_of(st.none(), dtypes))
def test_zeros_ones_full_empty(shape, dtype):
    d = dtype or tp.float32
    check(tp.zeros(shape, dtype=dtype), np.zeros(shape, NP[d]), d)
    check(tp.zeros(*shape, dtype=dtype), np.zeros(shape, NP[d]), d)
    check(tp.ones(shape, dtype=dtype), np.ones(shape, NP[d]), d)
    assert tp.empty(shape, dtype=dtype).shape == shape and tp.empty(shape, dtype=dtype).dtype is d
    for value, inferred in ((7, tp.int64), (2.5, tp.float32), (True, tp.bool)):
        out = tp.full(shape, value, dtype=dtype)
        dd = dtype or inferred
        check(out, np.full(shape, value).astype(NP[dd]), dd)
    z = tp.zeros(shape, dtype=dtype)
    if z.numel():
        z[...] = 1  # factories return fresh, writable storage
        assert bool(z.all())


@given(data=tensors(), dtype=st.one_of(st.none(), dtypes))
def test_like_factories(data, dtype):
    t, arr = data
    d = dtype or t.dtype
    check(tp.zeros_like(t, dtype=dtype), np.zeros(arr.shape, NP[d]), d)
    check(tp.ones_like(t, dtype=dtype), np.ones(arr.shape, NP[d]), d)
    check(tp.full_like(t, 1, dtype=dtype), np.ones(arr.shape, NP[d]), d)
    assert tp.empty_like(t, dtype=dtype).shape == arr.shape


ARANGE_CASES = [
    (5,), (0,), (1,), (2, 7), (7, 2, -1), (0, 1, 0.25), (-3, 3, 1.5), (1, 2.5, 0.5), (10, 0, -3), (0.5,),
    (0, 0), (3, 3, -1), (0, 1, 0.1), (-1.0, 1.0, 0.3), (1e-3, 1e-2, 1e-3), (0, 10, 3), (-10, -1, 4),
]


@pytest.mark.parametrize("args", ARANGE_CASES, ids=[str(a) for a in ARANGE_CASES])
def test_arange(args):
    is_int = all(isinstance(a, int) for a in args)
    dtype = tp.int64 if is_int else tp.float32
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args + (1,))[:3]
    n = max(math.ceil((end - start) / step), 0)
    # PyTorch: float results are start + i * step in double, rounded once to the result dtype
    # (numpy's arange differs in the last bit: it steps by (start + step) - start)
    exact = start + step * np.arange(n, dtype=np.float64)
    if is_int:
        np.testing.assert_array_equal(exact, np.arange(*args))
    check(tp.arange(*args), exact.astype(NP[dtype]), dtype, exact=True)
    check(tp.arange(*args, dtype=tp.float64), exact, tp.float64, exact=True)


@given(start=st.integers(-20, 20), end=st.integers(-20, 20), step=st.integers(-7, 7).filter(bool))
def test_arange_integers(start, end, step):
    if (end - start) * step < 0:
        with pytest.raises(ValueError, match="arange"):
            tp.arange(start, end, step)
        return
    check(tp.arange(start, end, step), np.arange(start, end, step), tp.int64)
    check(tp.arange(start, end, step, dtype=tp.int32), np.arange(start, end, step, dtype=np.int32), tp.int32)


@given(start=st.floats(-50, 50), span=st.floats(0, 50), step=st.floats(0.01, 10))
def test_arange_floats(start, span, step):
    end = start + span
    n = math.ceil((end - start) / step)
    assume(n < 10000)
    expected = (start + step * np.arange(max(n, 0), dtype=np.float64)).astype(np.float32)
    check(tp.arange(start, end, step), expected, tp.float32, exact=True)
    check(tp.arange(end, start, -step), (end - step * np.arange(max(math.ceil((start - end) / -step), 0),
                                                                 dtype=np.float64)).astype(np.float32),
          tp.float32, exact=True)


def test_arange_errors():
    with pytest.raises(ValueError, match="step must be nonzero"):
        tp.arange(0, 3, 0)
    with pytest.raises(ValueError, match="inconsistent with step sign"):
        tp.arange(0, 3, -1)
    with pytest.raises(ValueError, match="arange"):
        tp.arange(0, float("inf"))
    with pytest.raises(TypeError, match="arange"):
        tp.arange("3")
    check(tp.arange(tp.tensor(3)), [0, 1, 2], tp.int64)
    check(tp.arange(0.5, 3, dtype=tp.int64), [0, 1, 2], tp.int64)  # integer results truncate the arguments


def _torch_linspace(start, end, steps, np_dtype):
    """PyTorch's CPU kernel: step in the result dtype, the second half counted back from `end`."""
    if steps == 1:
        return np.array([start], np_dtype)
    s, e = np_dtype(start), np_dtype(end)
    step = (e - s) / np_dtype(steps - 1)
    i = np.arange(steps)
    lo = s + step * i.astype(np_dtype)
    hi = e - step * (steps - 1 - i).astype(np_dtype)
    return np.where(i < steps // 2, lo, hi).astype(np_dtype)


@given(start=st.floats(-100, 100), end=st.floats(-100, 100), steps=st.integers(0, 50),
       dtype=st.sampled_from([tp.float32, tp.float64]))
def test_linspace(start, end, steps, dtype):
    out = tp.linspace(start, end, steps, dtype=dtype)
    assert out.shape == (steps,) and out.dtype is dtype
    if steps == 0:
        return
    np.testing.assert_allclose(out.numpy(), np.linspace(start, end, steps), rtol=1e-5, atol=1e-4)
    assert out[0].item() == NP[dtype](start)  # both ends exact
    if steps > 1:
        assert out[-1].item() == NP[dtype](end)
        with np.errstate(all="ignore"):
            check(out, _torch_linspace(start, end, steps, NP[dtype]), dtype, exact=True)


def test_linspace_cases():
    check(tp.linspace(0, 1, 5), [0, 0.25, 0.5, 0.75, 1], tp.float32)
    check(tp.linspace(1, 0, 3), [1, 0.5, 0], tp.float32)
    check(tp.linspace(0, 10, 5, dtype=tp.int64), [0, 2, 5, 7, 10], tp.int64)  # truncated, as in PyTorch
    check(tp.linspace(2, 2, 3), [2, 2, 2], tp.float32)
    check(tp.linspace(3, 5, 1), [3], tp.float32)
    check(tp.linspace(3, 5, 0), np.zeros(0), tp.float32)
    check(tp.logspace(0, 2, 3), [1, 10, 100], tp.float32)
    check(tp.logspace(0, 3, 4, base=2), [1, 2, 4, 8], tp.float32)
    with pytest.raises(ValueError, match="linspace"):
        tp.linspace(0, 1, -1)


@given(n=st.integers(0, 5), m=st.one_of(st.none(), st.integers(0, 5)), dtype=st.one_of(st.none(), dtypes))
def test_eye(n, m, dtype):
    d = dtype or tp.float32
    check(tp.eye(n, m, dtype=dtype), np.eye(n, m, dtype=NP[d]), d)


def test_eye_errors():
    with pytest.raises(ValueError, match="eye"):
        tp.eye(-1)


@pytest.mark.parametrize("data,dtype", [
    ([1, 2], tp.int64), ([1.0, 2], tp.float32), ([True, False], tp.bool), ([True, 1], tp.int64),
    ([[1, 2.5], [3, 4]], tp.float32), ([], tp.float32), ([[], []], tp.float32), (3, tp.int64), (3.5, tp.float32),
    (True, tp.bool), (np.float64(1.5), tp.float64), (np.int32(3), tp.int32), (np.array([1, 2], np.int32), tp.int32),
    (np.array(1.0), tp.float64), (np.array([1.0], np.float16), tp.float16), ([np.float32(1.0)], tp.float32),
])
def test_tensor_dtype_inference(data, dtype):
    t = tp.tensor(data)
    assert t.dtype is dtype
    np.testing.assert_array_equal(t.numpy(), np.asarray(data, dtype=NP[dtype]))


def test_tensor_copies_as_tensor_and_from_numpy_share():
    a = np.zeros(3, np.float32)
    t, s, f = tp.tensor(a), tp.as_tensor(a), tp.from_numpy(a)
    a[0] = 1
    assert t[0].item() == 0 and s[0].item() == 1 and f[0].item() == 1
    assert tp.as_tensor(a, dtype=tp.float64).dtype is tp.float64
    x = tp.ones(2)
    assert tp.as_tensor(x) is x
    assert not np.shares_memory(tp.tensor(x).numpy(), x.numpy())
    with pytest.raises(TypeError, match="from_numpy"):
        tp.from_numpy([1, 2])
    with pytest.raises(TypeError, match="uint8"):
        tp.from_numpy(np.zeros(2, np.uint8))


@given(shape=shapes(max_dims=3, max_side=5), dtype=st.sampled_from([None, tp.float32, tp.float64]))
def test_random_factories(shape, dtype):
    d = dtype or tp.float32
    u = tp.rand(shape, dtype=dtype)
    assert u.shape == shape and u.dtype is d
    assert bool(((u >= 0) & (u < 1)).all())
    n = tp.randn(*shape, dtype=dtype)
    assert n.shape == shape and n.dtype is d and bool(tp.isfinite(n).all())
    r = tp.randint(-3, 4, shape)
    assert r.shape == shape and r.dtype is tp.int64 and bool(((r >= -3) & (r < 4)).all())
    assert tp.rand_like(u).shape == shape and tp.randn_like(n).dtype is d
    assert tp.normal(2.0, 0.5, shape).shape == shape
    b = tp.bernoulli(tp.full(shape, 0.5))
    assert b.shape == shape and bool(((b == 0) | (b == 1)).all())


def test_randperm_and_randint_errors():
    p = tp.randperm(10)
    assert p.dtype is tp.int64 and sorted(p.tolist()) == list(range(10))
    with pytest.raises(ValueError, match="randint"):
        tp.randint(3, 3, (2,))
    with pytest.raises(TypeError, match="rand"):
        tp.rand(2, dtype=tp.int64)
    with pytest.raises(ValueError, match="zeros.*negative"):
        tp.zeros(2, -1)


# --- torch.Tensor(...) and the in-place random fills (issue 16 item 4) ------------------------------
def test_tensor_constructor_reads_sizes_and_data_like_torch():
    assert tuple(tp.Tensor(2, 3).shape) == (2, 3) and tp.Tensor(2, 3).dtype is tp.float32
    assert tuple(tp.Tensor(tp.Size([4])).shape) == (4,)
    assert tuple(tp.Tensor().shape) == (0,)
    assert tp.Tensor([1, 2]).tolist() == [1.0, 2.0] and tp.Tensor([1, 2]).dtype is tp.float32
    assert tp.Tensor((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data, as torch
    assert tp.Tensor(np.arange(3)).dtype is tp.float32
    assert isinstance(tp.Tensor(1), tp.Tensor) and tuple(tp.Tensor(1).shape) == (1,)
    with pytest.raises(TypeError, match="Tensor"):
        tp.Tensor(2, "a")
    with pytest.raises(RuntimeError, match="CPU only"):
        tp.Tensor(2, device="cuda")


def _seeded(fill, shape=(200_000,), dtype=tp.float64, seed=7):
    tp.manual_seed(seed)
    return fill(tp.empty(*shape, dtype=dtype)).numpy()


def test_uniform_normal_exponential_statistics():
    u = _seeded(lambda t: t.uniform_(-2.0, 3.0))
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.var() - 25 / 12) < 0.03
    n = _seeded(lambda t: t.normal_(1.5, 0.5))
    assert abs(n.mean() - 1.5) < 0.01 and abs(n.std() - 0.5) < 0.01
    e = _seeded(lambda t: t.exponential_(4.0))
    assert e.min() >= 0 and abs(e.mean() - 0.25) < 0.005 and abs(e.std() - 0.25) < 0.01
    b = _seeded(lambda t: t.bernoulli_(0.3))
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 0.01
    f32 = _seeded(lambda t: t.uniform_(), shape=(1000,), dtype=tp.float32)
    assert f32.dtype == np.float32


def test_fills_are_reproducible_keep_the_tensor_and_honour_generators():
    x = tp.zeros(5)
    assert x.uniform_() is x
    a = tp.zeros(6).normal_(generator=tp.Generator().manual_seed(1)).tolist()
    b = tp.zeros(6).normal_(generator=tp.Generator().manual_seed(1)).tolist()
    assert a == b and _seeded(lambda t: t.uniform_(), (8,)).tolist() == _seeded(lambda t: t.uniform_(), (8,)).tolist()
    base = tp.zeros(2, 4)
    base[1].fill_(3.0)[1:].uniform_(10, 11)  # writes through views
    assert base[0].tolist() == [0.0] * 4 and base[1, 0].item() == 3.0 and (base[1, 1:] >= 10).all()


def test_random_bounds_are_exact():
    r = _seeded(lambda t: t.random_(3, 7), shape=(5000,), dtype=tp.int64)
    assert set(np.unique(r)) == {3, 4, 5, 6}
    r = _seeded(lambda t: t.random_(4), shape=(5000,), dtype=tp.int32)
    assert set(np.unique(r)) == {0, 1, 2, 3}
    r = _seeded(lambda t: t.random_(), shape=(5000,), dtype=tp.float32)
    assert r.min() >= 0 and r.max() <= 2 ** 24 and np.all(r == np.floor(r)) and r.max() > 2 ** 23
    r = _seeded(lambda t: t.random_(), shape=(2000,), dtype=tp.bool)
    assert set(np.unique(r)) == {False, True}
    r = _seeded(lambda t: t.random_(-5, 2 ** 40), shape=(1000,), dtype=tp.int64)
    assert r.min() >= -5 and r.max() < 2 ** 40
    with pytest.raises(ValueError, match="from"):
        tp.zeros(2).random_(5, 5)


def test_bernoulli_with_tensor_probabilities_and_bad_arguments():
    probs = tp.tensor([0.0, 1.0, 0.0, 1.0])
    assert tp.zeros(3, 4).bernoulli_(probs).tolist() == [[0.0, 1.0, 0.0, 1.0]] * 3
    with pytest.raises(ValueError, match="p to be in"):
        tp.zeros(2).bernoulli_(1.5)
    with pytest.raises(TypeError, match="floating point"):
        tp.zeros(2, dtype=tp.int64).uniform_()
    with pytest.raises(ValueError, match="std"):
        tp.zeros(2).normal_(0, -1)
    with pytest.raises(ValueError, match="lambda"):
        tp.zeros(2).exponential_(0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        tp.zeros(2).uniform_(low=1)
    assert tp.zeros(3).uniform_(**{"from": 2.0, "to": 2.0}).tolist() == [2.0, 2.0, 2.0]


def test_fills_under_compile_write_the_caller_tensor():
    f = tp.compile(lambda t: t.normal_(0.0, 0.0).add_(2.0))
    x = tp.ones(3)
    f(x)
    assert x.tolist() == [2.0, 2.0, 2.0]
    g = tp.compile(lambda t: t.fill_diagonal_(7.0))
    m = tp.zeros(2, 3)
    g(m)
    assert m.tolist() == [[7.0, 0.0, 0.0], [0.0, 7.0, 0.0]]


@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((5, 4), True), ((7, 3), True), ((7, 3), False),
                                         ((2, 5), True), ((3, 3, 3), False), ((1, 1), False)])
def test_fill_diagonal_matches_torch(shape, wrap):
    torch = pytest.importorskip("torch")
    want = torch.zeros(shape).fill_diagonal_(2.5, wrap=wrap).numpy()
    got = tp.zeros(*shape).fill_diagonal_(2.5, wrap=wrap).numpy()
    np.testing.assert_array_equal(got, want)
    assert tp.zeros(3, 3, dtype=tp.int64).fill_diagonal_(4).tolist() == [[4, 0, 0], [0, 4, 0], [0, 0, 4]]
