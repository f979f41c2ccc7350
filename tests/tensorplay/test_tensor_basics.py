"""Tensor basics against numpy and PyTorch's documented behaviour: factories, dtypes and
promotion, repr, Size, conversion, random numbers."""
import numpy as np
import pytest

import tensorplay as tp


def test_size_and_shape():
    x = tp.zeros(2, 3)
    assert x.shape == (2, 3) and isinstance(x.shape, tp.Size)
    assert repr(x.shape) == "tensorplay.Size(2, 3)"
    assert x.size() == (2, 3) and x.size(-1) == 3 and x.shape.numel() == 6
    assert x.ndim == 2 and x.dim() == 2 and x.numel() == 6 and len(x) == 2
    assert isinstance(x.shape[1:], tp.Size)


@pytest.mark.parametrize("t,expected", [
    (lambda: tp.zeros(3), "tensor([0., 0., 0.])"),
    (lambda: tp.tensor([1, 2, 3]), "tensor([1, 2, 3])"),
    (lambda: tp.tensor(3.5), "tensor(3.5000)"),
    (lambda: tp.tensor([True, False]), "tensor([ True, False])"),
    (lambda: tp.tensor([1.5, -2.25]), "tensor([ 1.5000, -2.2500])"),
    (lambda: tp.ones(2, dtype=tp.float64), "tensor([1., 1.], dtype=tensorplay.float64)"),
    (lambda: tp.tensor([1, 2], dtype=tp.int32), "tensor([1, 2], dtype=tensorplay.int32)"),
    (lambda: tp.zeros(0, 2), "tensor([], size=(0, 2))"),
    (lambda: tp.tensor([[1., 2.], [3., 4.]]), "tensor([[1., 2.],\n        [3., 4.]])"),
])
def test_repr_like_pytorch(t, expected):
    assert repr(t()) == expected


def test_factories():
    assert tp.zeros(2, 3).dtype is tp.float32
    assert tp.ones((2,), dtype=tp.int64).tolist() == [1, 1]
    assert tp.full((2,), 7).dtype is tp.int64 and tp.full((2,), 7.0).dtype is tp.float32
    assert tp.full((2,), True).dtype is tp.bool
    assert tp.arange(5).dtype is tp.int64 and tp.arange(0, 1, 0.25).tolist() == [0, 0.25, 0.5, 0.75]
    np.testing.assert_allclose(tp.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5, dtype=np.float32))
    np.testing.assert_array_equal(tp.eye(3).numpy(), np.eye(3))
    x = tp.randn(4, 5)
    assert tp.zeros_like(x).shape == (4, 5) and tp.ones_like(x, dtype=tp.int32).dtype is tp.int32
    assert tp.full_like(x, 2.0).sum().item() == 40.0
    assert tp.empty(3).shape == (3,)
    assert tp.tensor([1, 2.5]).dtype is tp.float32 and tp.tensor([True, 1]).dtype is tp.int64
    assert tp.tensor(np.zeros(2)).dtype is tp.float64


def test_from_numpy_shares_memory_tensor_copies():
    a = np.zeros(3, dtype=np.float32)
    t = tp.from_numpy(a)
    c = tp.tensor(a)
    a[0] = 5
    assert t[0].item() == 5 and c[0].item() == 0
    assert np.asarray(t) is a or np.shares_memory(np.asarray(t), a)


def test_conversions():
    x = tp.tensor([[1.5, 2.0]])
    assert x.tolist() == [[1.5, 2.0]] and x[0, 0].item() == 1.5
    assert float(x[0, 1]) == 2.0 and int(x[0, 0]) == 1 and bool(tp.tensor(1))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)
    with pytest.raises(ValueError, match="one-element"):
        x.item()


@pytest.mark.parametrize("a,b,expected", [
    (tp.tensor([1, 2]), 2.5, tp.float32),                              # int tensor + float scalar -> default float
    (tp.tensor([1, 2], dtype=tp.int32), 3, tp.int32),                  # scalar of same category keeps tensor dtype
    (tp.tensor([1, 2], dtype=tp.int32), tp.tensor(3), tp.int32),       # 0-d int64 does not widen int32
    (tp.tensor([1, 2], dtype=tp.int32), tp.tensor(3.0, dtype=tp.float64), tp.float64),  # higher-category 0-d wins
    (tp.tensor([1.0]), tp.tensor([1.0], dtype=tp.float64), tp.float64),
    (tp.tensor([True]), 1, tp.int64),
    (tp.tensor([True]), tp.tensor([1], dtype=tp.int32), tp.int32),
    (tp.tensor([1.0], dtype=tp.float64), 2.0, tp.float64),
])
def test_type_promotion(a, b, expected):
    assert (a + b).dtype is expected
    assert tp.result_type(a, b) is expected


def test_division_semantics():
    i = tp.tensor([7, -7])
    assert (i / 2).dtype is tp.float32 and (i / 2).tolist() == [3.5, -3.5]
    assert (i // 2).tolist() == [3, -4] and (i % 3).tolist() == [1, 2]
    assert tp.fmod(i, 3).tolist() == [1, -1]


def test_broadcasting_and_comparisons():
    a = tp.arange(3.0).reshape(3, 1)
    b = tp.arange(4.0)
    np.testing.assert_array_equal((a * b).numpy(), np.arange(3.0)[:, None] * np.arange(4.0))
    assert (a < b).dtype is tp.bool and (a < b).shape == (3, 4)
    assert tp.where(b > 1, b, -1.0).tolist() == [-1, -1, 2, 3]


def test_reductions_against_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x = tp.tensor(a)
    np.testing.assert_allclose(x.sum((0, 2)).numpy(), a.sum((0, 2)), rtol=1e-5)
    np.testing.assert_allclose(x.mean(-1, keepdim=True).numpy(), a.mean(-1, keepdims=True), rtol=1e-5)
    v, i = x.max(1)
    np.testing.assert_array_equal(v.numpy(), a.max(1))
    np.testing.assert_array_equal(i.numpy(), a.argmax(1))
    np.testing.assert_allclose(x.var(0).numpy(), a.var(0, ddof=1), rtol=1e-4)
    np.testing.assert_allclose(x.std(2, unbiased=False).numpy(), a.std(2), rtol=1e-4)
    np.testing.assert_allclose(tp.logsumexp(x, 1).numpy(), np.log(np.exp(a).sum(1)), rtol=1e-5)
    assert x.argmax().item() == a.argmax()
    assert tp.tensor([True, False]).sum().dtype is tp.int64


def test_shape_ops_against_numpy():
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x = tp.tensor(a)
    np.testing.assert_array_equal(x.permute(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.transpose(0, 2).numpy(), a.swapaxes(0, 2))
    np.testing.assert_array_equal(x.reshape(-1, 4).numpy(), a.reshape(-1, 4))
    np.testing.assert_array_equal(x.flatten(1).numpy(), a.reshape(2, 12))
    np.testing.assert_array_equal(x.flip(1).numpy(), a[:, ::-1])
    np.testing.assert_array_equal(tp.cat([x, x], 2).numpy(), np.concatenate([a, a], 2))
    np.testing.assert_array_equal(tp.stack([x, x], -1).numpy(), np.stack([a, a], -1))
    assert [p.shape[1] for p in x.split(2, 1)] == [2, 1]
    assert [p.shape[2] for p in x.chunk(3, 2)] == [2, 2]
    np.testing.assert_array_equal(x.unsqueeze(1).expand(2, 5, 3, 4).numpy(), np.broadcast_to(a[:, None], (2, 5, 3, 4)))
    np.testing.assert_array_equal(x[:, 1:, ::2].numpy(), a[:, 1:, ::2])
    np.testing.assert_array_equal(x[..., None, 0].numpy(), a[..., None, 0])
    np.testing.assert_array_equal(x[tp.tensor([1, 0]), :, tp.tensor([0, 3])].numpy(), a[[1, 0], :, [0, 3]])
    np.testing.assert_array_equal(x[x > 10].numpy(), a[a > 10])
    np.testing.assert_array_equal(x.narrow(2, 1, 2).numpy(), a[:, :, 1:3])
    np.testing.assert_array_equal(x.select(1, -1).numpy(), a[:, -1])


def test_matmul_family_against_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    v = rng.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose((tp.tensor(a) @ tp.tensor(b)).numpy(), a @ b, rtol=1e-5)
    np.testing.assert_allclose((tp.tensor(a) @ tp.tensor(v)).numpy(), a @ v, rtol=1e-5)
    np.testing.assert_allclose((tp.tensor(v) @ tp.tensor(b)).numpy(), v @ b, rtol=1e-5)
    c = rng.standard_normal((2, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(tp.bmm(tp.tensor(a), tp.tensor(c)).numpy(), a @ c, rtol=1e-5)
    for eq, ops in [("bij,bjk->bik", (a, c)), ("ij->ji", (b,)), ("bij->", (a,)), ("i,i->", (v, v)),
                    ("bij,jk", (a, b)), ("...j,jk->...k", (a, b))]:
        np.testing.assert_allclose(tp.einsum(eq, *[tp.tensor(o) for o in ops]).numpy(),
                                   np.einsum(eq, *ops), rtol=1e-4, atol=1e-5)


def test_random_is_reproducible_and_mode_independent():
    tp.manual_seed(123)
    eager = tp.randn(5)
    eager_u = tp.rand(3)
    tp.manual_seed(123)
    f = tp.compile(lambda: (tp.randn(5), tp.rand(3)))
    traced, traced_u = f()
    np.testing.assert_array_equal(eager.numpy(), traced.numpy())
    np.testing.assert_array_equal(eager_u.numpy(), traced_u.numpy())
    again, _ = f()
    assert not np.array_equal(again.numpy(), eager.numpy())  # a compiled draw is fresh at every call
    tp.manual_seed(0)
    r = tp.randint(3, 7, (1000,))
    assert r.dtype is tp.int64 and r.min().item() >= 3 and r.max().item() <= 6
    u = tp.rand(10000)
    assert 0 <= u.min().item() and u.max().item() < 1 and abs(u.mean().item() - 0.5) < 0.02
    n = tp.randn(10000)
    assert abs(n.mean().item()) < 0.05 and abs(n.std().item() - 1) < 0.05
