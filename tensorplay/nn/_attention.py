"""Attention: `scaled_dot_product_attention` and the multi-head attention forward, as composites.

Re-exported by `tensorplay.nn.functional`; used by `nn.MultiheadAttention` and
`nn.TransformerEncoderLayer`.
"""
from __future__ import annotations

import math

from .._tensor import Tensor
from ..ops import activation as _act
from ..ops import elementwise as ew
from ..ops import linalg as _la
from ..ops import reduction as _red
from ..ops import shape as _sh
from ..ops._common import as_tensor_operand, constant, convert
from ..ops.creation import arange
from ._functional_base import dropout, linear


def _causal_mask(L: int, S: int) -> Tensor:
    """True where query i may attend to key j (j <= i): torch's ``ones(L, S).tril()``."""
    return ew.le(_sh.unsqueeze(arange(S), 0), _sh.unsqueeze(arange(L), 1))


def _as_bias(mask: Tensor, dtype, allowed_when_true: bool) -> Tensor:
    """A float mask to add to the scores: bool masks give -inf where attention is not allowed."""
    if mask.dtype.is_bool:
        blocked = ew.logical_not(mask) if allowed_when_true else mask
        return ew.where(blocked, constant(-math.inf, dtype, (), (mask,)), constant(0.0, dtype, (), (mask,)))
    if not mask.dtype.is_floating_point:
        raise TypeError(f"attention: attn_mask must be bool or floating point, got {mask.dtype.name}")
    return convert(mask, dtype)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False) -> Tensor:
    """``softmax(q @ k^T * scale + mask) @ v`` over the last two dims, as torch's reference implementation.

    A bool `attn_mask` is True where attention is allowed; a float one is added to the scores.
    `is_causal` masks keys after each query. ``enable_gqa`` repeats key/value heads (dim -3)
    to match the query heads. Dropout on the weights uses `tensorplay.rand`.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> q = k = tp.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    >>> v = tp.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    >>> F.scaled_dot_product_attention(q, k, v, is_causal=True)
    tensor([[[1.0000, 2.0000],
             [2.3395, 3.3395]]])
    """
    q, k, v = as_tensor_operand(query), as_tensor_operand(key), as_tensor_operand(value)
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError(f"scaled_dot_product_attention: expected inputs of at least 2 dims, got query "
                         f"{tuple(q.shape)}, key {tuple(k.shape)}, value {tuple(v.shape)}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"scaled_dot_product_attention: query {tuple(q.shape)}, key {tuple(k.shape)} and value "
                         f"{tuple(v.shape)} do not fit (query/key feature dims, key/value lengths)")
    if is_causal and attn_mask is not None:
        raise RuntimeError("scaled_dot_product_attention: _scaled_dot_product_attention: Explicit attn_mask should "
                           "not be set when is_causal=True")
    if enable_gqa:
        if q.ndim < 3 or q.shape[-3] % k.shape[-3] or q.shape[-3] % v.shape[-3]:
            raise ValueError(f"scaled_dot_product_attention: enable_gqa needs query heads ({tuple(q.shape)}) to be a "
                             f"multiple of key/value heads ({tuple(k.shape)}, {tuple(v.shape)})")
        k = _sh.repeat_interleave(k, q.shape[-3] // k.shape[-3], -3)
        v = _sh.repeat_interleave(v, q.shape[-3] // v.shape[-3], -3)
    L, S = q.shape[-2], k.shape[-2]
    factor = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = ew.mul(_la.matmul(q, _sh.transpose(k, -2, -1)), factor)
    if is_causal:
        scores = ew.add(scores, _as_bias(_causal_mask(L, S), scores.dtype, True))
    if attn_mask is not None:
        scores = ew.add(scores, _as_bias(as_tensor_operand(attn_mask), scores.dtype, True))
    weights = _act.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return _la.matmul(weights, v)


def multi_head_attention(module, query, key, value, key_padding_mask=None, need_weights: bool = True,
                         attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
    """The forward pass of `nn.MultiheadAttention` (its weights, dropout and layout); returns (output, weights)."""
    m = module
    q, k, v = as_tensor_operand(query), as_tensor_operand(key), as_tensor_operand(value)
    batched = q.ndim == 3
    if q.ndim not in (2, 3) or k.ndim != q.ndim or v.ndim != q.ndim:
        raise ValueError(f"MultiheadAttention: query, key and value must all be 2-d (unbatched) or 3-d, got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if not batched:
        q, k, v = (_sh.unsqueeze(t, 0) for t in (q, k, v))
    elif not m.batch_first:
        q, k, v = (_sh.transpose(t, 0, 1) for t in (q, k, v))
    N, L, E = q.shape
    S = k.shape[1]
    if E != m.embed_dim:
        raise ValueError(f"MultiheadAttention: was expecting embedding dimension of {m.embed_dim}, but got {E}")
    H, hd = m.num_heads, m.head_dim
    if m.in_proj_weight is not None:
        wq, wk, wv = _sh.chunk(m.in_proj_weight, 3)
    else:
        wq, wk, wv = m.q_proj_weight, m.k_proj_weight, m.v_proj_weight
    bq = bk = bv = None
    if m.in_proj_bias is not None:
        bq, bk, bv = _sh.chunk(m.in_proj_bias, 3)
    q = _sh.transpose(_sh.reshape(linear(q, wq, bq), (N, L, H, hd)), 1, 2)
    k = _sh.transpose(_sh.reshape(linear(k, wk, bk), (N, S, H, hd)), 1, 2)
    v = _sh.transpose(_sh.reshape(linear(v, wv, bv), (N, S, H, hd)), 1, 2)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    scores = _la.matmul(ew.mul(q, math.sqrt(1.0 / hd)), _sh.transpose(k, -2, -1))  # (N, H, L, S)
    if attn_mask is not None:
        mask = _as_bias(as_tensor_operand(attn_mask), scores.dtype, False)
        if mask.ndim == 3:  # (N * H, L, S)
            mask = _sh.reshape(mask, (N, H, L, S))
        scores = ew.add(scores, mask)
    if key_padding_mask is not None:
        kpm = _as_bias(as_tensor_operand(key_padding_mask), scores.dtype, False)
        scores = ew.add(scores, _sh.reshape(kpm, (N, 1, 1, S)))
    weights = _act.softmax(scores, -1)
    if m.dropout > 0.0 and m.training:
        weights = dropout(weights, m.dropout, training=True)
    out = _sh.reshape(_sh.transpose(_la.matmul(weights, v), 1, 2), (N, L, E))
    out = m.out_proj(out)
    if not batched:
        out = _sh.squeeze(out, 0)
    elif not m.batch_first:
        out = _sh.transpose(out, 0, 1)
    if not need_weights:
        return out, None
    w = _red.mean(weights, 1) if average_attn_weights else weights
    return out, (w if batched else _sh.squeeze(w, 0))
