"""A corpus of functions over tensors used to check tracing, the interpreter and compiled code
against eager execution. Each entry: (name, fn, make_args) with make_args(rng) -> tuple of tensors."""
from __future__ import annotations

import numpy as np

import tensorplay as tp


def _f32(rng, *shape):
    return tp.tensor(rng.standard_normal(shape).astype(np.float32))


def _pos(rng, *shape):
    return tp.tensor((rng.random(shape) + 0.5).astype(np.float32))


def mlp(x, w1, b1, w2, b2):
    h = tp.relu(x @ w1 + b1)
    return tp.tanh(h @ w2 + b2)


def mlp_loss(x, w1, b1, w2, b2):
    out = mlp(x, w1, b1, w2, b2)
    return (out * out).mean()


def layer_norm(x):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / tp.sqrt(var + 1e-5)


def batch_norm(x):
    mu = x.mean(0)
    return (x - mu) * tp.rsqrt(x.var(0, unbiased=False) + 1e-5)


def cross_entropy(logits, target_onehot):
    return -(tp.log_softmax(logits, -1) * target_onehot).sum(-1).mean()


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return tp.softmax(scores, -1) @ v


def gelu(x):
    return 0.5 * x * (1 + tp.erf(x / 2 ** 0.5))


def _onehot(rng):
    idx = rng.integers(0, 5, size=4)
    return tp.tensor(np.eye(5, dtype=np.float32)[idx])


CORPUS = [
    ("mlp", mlp, lambda r: (_f32(r, 4, 3), _f32(r, 3, 8), _f32(r, 8), _f32(r, 8, 2), _f32(r, 2))),
    ("mlp_loss", mlp_loss, lambda r: (_f32(r, 4, 3), _f32(r, 3, 8), _f32(r, 8), _f32(r, 8, 2), _f32(r, 2))),
    ("softmax", lambda x: tp.softmax(x, -1), lambda r: (_f32(r, 3, 5),)),
    ("log_softmax", lambda x: tp.log_softmax(x, 0), lambda r: (_f32(r, 3, 5),)),
    ("logsumexp", lambda x: tp.logsumexp(x, 1), lambda r: (_f32(r, 3, 5),)),
    ("layer_norm", layer_norm, lambda r: (_f32(r, 4, 6),)),
    ("batch_norm", batch_norm, lambda r: (_f32(r, 8, 3),)),
    ("cross_entropy", cross_entropy, lambda r: (_f32(r, 4, 5), _onehot(r))),
    ("attention", attention, lambda r: (_f32(r, 2, 4, 8), _f32(r, 2, 6, 8), _f32(r, 2, 6, 3))),
    ("gelu", gelu, lambda r: (_f32(r, 10),)),
    ("broadcast_add", lambda a, b: a + b, lambda r: (_f32(r, 3, 1), _f32(r, 4))),
    ("broadcast_scalar_tensor", lambda a, b: a * b - 1, lambda r: (_f32(r, 2, 3), _f32(r))),
    ("python_scalars", lambda x: 2 * x + 1.5 - x / 4, lambda r: (_f32(r, 5),)),
    ("int_promotion", lambda x, i: x + i, lambda r: (_f32(r, 3), tp.tensor([1, 2, 3]))),
    ("int_true_div", lambda i: i / 2, lambda r: (tp.tensor([1, 2, 3]),)),
    ("where_relu", lambda x: tp.where(x > 0, x, 0.1 * x), lambda r: (_f32(r, 6),)),
    ("clamp", lambda x: x.clamp(-0.5, 0.5), lambda r: (_f32(r, 6),)),
    ("index_basic", lambda x: x[1:, ::2] * x[0, 0], lambda r: (_f32(r, 4, 5),)),
    ("index_none_ellipsis", lambda x: x[None, ..., 1], lambda r: (_f32(r, 2, 3, 4),)),
    ("index_int_array", lambda x: x[tp.tensor([2, 0, -1])], lambda r: (_f32(r, 4, 3),)),
    ("index_two_arrays", lambda x: x[tp.tensor([0, 1]), tp.tensor([2, 0])], lambda r: (_f32(r, 3, 4),)),
    ("index_array_middle", lambda x: x[:, tp.tensor([[0, 1], [1, 0]])], lambda r: (_f32(r, 2, 3, 2),)),
    ("reductions", lambda x: x.sum(0) + x.max(1).values.sum() + x.min() + x.prod(1).mean(),
     lambda r: (_f32(r, 3, 4),)),
    ("argmax", lambda x: x.argmax(-1) + x.argmin(0).sum(), lambda r: (_f32(r, 3, 4),)),
    ("var_std", lambda x: x.var(1) + x.std(0).sum(), lambda r: (_f32(r, 3, 4),)),
    ("reshape_permute", lambda x: x.reshape(2, 6).t().reshape(3, 4).permute(1, 0).flatten(),
     lambda r: (_f32(r, 3, 4),)),
    ("squeeze_unsqueeze_expand", lambda x: x.unsqueeze(0).expand(3, 2, 1).squeeze(-1) * 2,
     lambda r: (_f32(r, 2, 1),)),
    ("cat_stack", lambda a, b: tp.cat([a, b], 0).sum() + tp.stack([a, b], 1), lambda r: (_f32(r, 2, 3), _f32(r, 2, 3))),
    ("split_chunk", lambda x: x.split(2, 1)[1] * x.chunk(3, 1)[0], lambda r: (_f32(r, 3, 6),)),
    ("flip_roll", lambda x: x.flip(0) + tp.roll(x, 1, 1), lambda r: (_f32(r, 3, 4),)),
    ("einsum_bmm", lambda a, b: tp.einsum("bij,bjk->bik", a, b), lambda r: (_f32(r, 2, 3, 4), _f32(r, 2, 4, 5))),
    ("einsum_trace_outer", lambda a, b: tp.einsum("ii", a) * tp.einsum("i,j->ij", b, b),
     lambda r: (_f32(r, 3, 3), _f32(r, 2))),
    ("matmul_broadcast", lambda a, b: a @ b, lambda r: (_f32(r, 2, 1, 3, 4), _f32(r, 5, 4, 2))),
    ("matvec", lambda a, v: a @ v + v @ a.t() @ a.t().t().t() @ a.t().t().t().t(), lambda r: (_f32(r, 3, 3), _f32(r, 3))),
    ("transcendentals", lambda x: tp.exp(-x * x) * tp.sin(x) + tp.tanh(x) + tp.sigmoid(x) + tp.cos(x).abs(),
     lambda r: (_f32(r, 7),)),
    ("logs_roots", lambda x: tp.log(x) + tp.sqrt(x) + tp.rsqrt(x) + tp.log1p(x) + tp.expm1(-x) + x ** 1.5,
     lambda r: (_pos(r, 7),)),
    ("float64", lambda x: (x * x).sum(), lambda r: (tp.tensor(r.standard_normal(5)),)),
    ("comparisons_bool", lambda x: ((x > 0) & (x < 1)) | (x == 0), lambda r: (_f32(r, 6),)),
    ("gather", lambda x, i: x.gather(1, i), lambda r: (_f32(r, 3, 4), tp.tensor(r.integers(0, 4, (3, 2))))),
    ("index_select_onehot", lambda x, i: x.index_select(0, i).sum() + tp.one_hot(i, 4).float().sum(0),
     lambda r: (_f32(r, 4, 2), tp.tensor([3, 1, 1]))),
    ("setitem_functional_clone", lambda x: _setitem(x), lambda r: (_f32(r, 3, 4),)),
    ("floor_div_mod", lambda i, j: i // j + i % j, lambda r: (tp.tensor([7, -7, 5, -3]), tp.tensor([2, 2, -3, 4]))),
    ("norms", lambda x: x.norm() + x.norm(1, 0).sum(), lambda r: (_f32(r, 3, 4),)),
    ("cumsum_diag", lambda x: x.cumsum(1) + x.diagonal().sum(), lambda r: (_f32(r, 3, 3),)),
    ("zero_size", lambda x: x.sum(0) + 1, lambda r: (tp.zeros(0, 3),)),
]


def _setitem(x):
    y = x.clone()
    y[0] = 1.0
    y[:, 1] = y[:, 2] * 2
    return y
