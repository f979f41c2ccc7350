"""More of ``torch.nn.functional``: transposed convolution, padding modes, pixel shuffle, activations,
losses and distances. Each is a composite over tensorplay ops, so every transform applies.

>>> import tensorplay as tp
>>> import tensorplay.nn.functional as F
>>> F.conv_transpose2d(tp.ones(1, 1, 2, 2), tp.ones(1, 1, 2, 2), stride=2).shape
tensorplay.Size(1, 1, 4, 4)
>>> F.pad(tp.tensor([[[1.0, 2.0, 3.0]]]), (2, 1), mode="reflect").tolist()
[[[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]]
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from .._trace import bind
from ..ops import elementwise as ew
from ..ops import indexing as _idx
from ..ops import reduction as _red
from ..ops import shape as _sh
from ..ops._common import as_tensor_operand
from ..ops.creation import rand, tensor as _const
from ._functional_base import _conv, _reduce_loss, one_hot, softmax

__all__ = ["conv_transpose1d", "conv_transpose2d", "pad_mode", "pixel_shuffle", "pixel_unshuffle", "glu",
           "hardsigmoid", "hardswish", "mish", "selu", "celu", "softsign", "tanhshrink", "threshold", "softmin",
           "prelu", "smooth_l1_loss", "huber_loss", "kl_div", "cosine_similarity", "pairwise_distance",
           "dropout1d", "dropout2d", "gumbel_softmax", "rms_norm", "hardshrink", "softshrink"]


def _tuple(v, n: int, name: str, op: str) -> tuple:
    t = tuple(int(x) for x in v) if isinstance(v, (tuple, list)) else (int(v),) * n
    if len(t) != n:
        raise ValueError(f"{op}: expected {name} to be an int or a {n}-tuple, got {v!r}")
    return t


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, n: int, op: str):
    x, w = as_tensor_operand(input), as_tensor_operand(weight)
    if w.ndim != n + 2:
        raise ValueError(f"{op}: expected weight of {n + 2} dims (in_channels, out_channels/groups, kernel...), got "
                         f"shape {tuple(w.shape)}")
    unbatched = x.ndim == n + 1
    if unbatched:
        x = _sh.unsqueeze(x, 0)
    if x.ndim != n + 2:
        raise ValueError(f"{op}: expected a {n + 1}-d or {n + 2}-d input, got shape {tuple(x.shape)}")
    stride, padding = _tuple(stride, n, "stride", op), _tuple(padding, n, "padding", op)
    output_padding, dilation = _tuple(output_padding, n, "output_padding", op), _tuple(dilation, n, "dilation", op)
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation) or any(p < 0 for p in padding):
        raise ValueError(f"{op}: stride {stride} and dilation {dilation} must be positive, padding {padding} "
                         f"non-negative")
    if any(op_ >= max(s, d) for op_, s, d in zip(output_padding, stride, dilation)):
        raise ValueError(f"{op}: output padding {output_padding} must be smaller than either stride {stride} or "
                         f"dilation {dilation}")
    Cin, Cg = w.shape[0], w.shape[1]
    if x.shape[1] != Cin or Cin % groups:
        raise ValueError(f"{op}: input of shape {tuple(x.shape)} and weight of shape {tuple(w.shape)} (groups="
                         f"{groups}): expected the input to have {Cin} channels, divisible by groups")
    kernel = tuple(w.shape[2:])
    # the input spread by the stride, padded by dilation*(k-1) - padding (+ output_padding at the end)
    lo = [d * (k - 1) - p for d, k, p in zip(dilation, kernel, padding)]
    hi = [lo_ + o for lo_, o in zip(lo, output_padding)]
    xp = bind("pad", x, low=(0, 0) + tuple(max(v, 0) for v in lo), high=(0, 0) + tuple(max(v, 0) for v in hi),
              interior=(0, 0) + tuple(s - 1 for s in stride), value=0.0 if x.dtype.is_floating_point else 0)
    if any(v < 0 for v in lo + hi):  # padding larger than the kernel reach: crop instead
        for i, (a, b) in enumerate(zip(lo, hi)):
            size = xp.shape[2 + i]
            start, stop = max(-a, 0), size - max(-b, 0)
            xp = _sh.narrow(xp, 2 + i, start, stop - start)
    # weight (Cin, Cout/g, k...) -> (Cout, Cin/g, k...), flipped in space
    wg = _sh.reshape(w, (groups, Cin // groups, Cg) + kernel)
    wg = _sh.transpose(wg, 1, 2)
    wt = _sh.flip(_sh.reshape(wg, (groups * Cg, Cin // groups) + kernel), tuple(range(2, 2 + n)))
    out = _conv(xp, wt, bias, 1, 0, dilation, groups, n, op)
    return _sh.squeeze(out, 0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1) -> Tensor:
    """The transposed 1-d convolution (the gradient of conv1d w.r.t. its input), weight ``(C_in, C_out/groups, k)``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.conv_transpose1d(tp.tensor([[[1.0, 2.0]]]), tp.ones(1, 1, 2)).tolist()
    [[[1.0, 3.0, 2.0]]]
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1) -> Tensor:
    """The transposed 2-d convolution, weight ``(C_in, C_out/groups, kh, kw)``; output size
    ``(H-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.conv_transpose2d(tp.ones(1, 2, 3, 3), tp.ones(2, 4, 3, 3), stride=2, padding=1, output_padding=1).shape
    tensorplay.Size(1, 4, 6, 6)
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


def _source_index(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    idx = np.arange(-lo, n + hi)
    if mode == "reflect":
        if lo >= n or hi >= n:
            raise ValueError(f"pad: padding ({lo}, {hi}) must be smaller than the dimension size {n} for 'reflect'")
        period = 2 * (n - 1) if n > 1 else 1
        idx = np.abs(idx) % period
        return np.where(idx >= n, period - idx, idx)
    if mode == "replicate":
        return np.clip(idx, 0, n - 1)
    if lo > n or hi > n:
        raise ValueError(f"pad: padding ({lo}, {hi}) must be at most the dimension size {n} for 'circular'")
    return idx % n


def pad_mode(x: Tensor, pad: tuple, mode: str) -> Tensor:
    """`x` padded with ``mode`` 'reflect', 'replicate' or 'circular' (widths as F.pad's), by gathering indices."""
    if len(pad) // 2 > x.ndim - 1:
        raise ValueError(f"pad: mode {mode!r} pads at most {x.ndim - 1} trailing dims of an input of shape "
                         f"{tuple(x.shape)}, got padding {list(pad)}")
    if any(p < 0 for p in pad):
        raise NotImplementedError(f"pad: negative padding {list(pad)} is not supported")
    out = x
    for i in range(len(pad) // 2):
        dim = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo == 0 and hi == 0:
            continue
        n = x.shape[dim]
        if n == 0:
            raise ValueError(f"pad: cannot pad an empty dimension with mode {mode!r} (shape {tuple(x.shape)})")
        idx = _const(_source_index(n, lo, hi, mode))
        out = _idx.index_select(out, dim, idx)
    return out


def pixel_shuffle(input, upscale_factor: int) -> Tensor:
    """``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``: sub-pixel rearrangement.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.pixel_shuffle(tp.arange(4.0).reshape(1, 4, 1, 1), 2).tolist()
    [[[[0.0, 1.0], [2.0, 3.0]]]]
    """
    x, r = as_tensor_operand(input), int(upscale_factor)
    if x.ndim < 3 or r < 1 or x.shape[-3] % (r * r):
        raise ValueError(f"pixel_shuffle: expected an input of at least 3 dims with channels divisible by "
                         f"upscale_factor**2 = {r * r}, got shape {tuple(x.shape)}")
    *lead, C, H, W = x.shape
    y = _sh.reshape(x, (*lead, C // (r * r), r, r, H, W))
    k = len(lead)
    y = _sh.permute(y, (*range(k), k, k + 3, k + 1, k + 4, k + 2))
    return _sh.reshape(y, (*lead, C // (r * r), H * r, W * r))


def pixel_unshuffle(input, downscale_factor: int) -> Tensor:
    """The inverse of `pixel_shuffle`: ``(*, C, H*r, W*r) -> (*, C*r*r, H, W)``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> x = tp.arange(16.0).reshape(1, 1, 4, 4)
    >>> bool((F.pixel_shuffle(F.pixel_unshuffle(x, 2), 2) == x).all())
    True
    """
    x, r = as_tensor_operand(input), int(downscale_factor)
    if x.ndim < 3 or r < 1 or x.shape[-1] % r or x.shape[-2] % r:
        raise ValueError(f"pixel_unshuffle: expected the last two dims divisible by downscale_factor = {r}, got "
                         f"shape {tuple(x.shape)}")
    *lead, C, H, W = x.shape
    y = _sh.reshape(x, (*lead, C, H // r, r, W // r, r))
    k = len(lead)
    y = _sh.permute(y, (*range(k), k, k + 2, k + 4, k + 1, k + 3))
    return _sh.reshape(y, (*lead, C * r * r, H // r, W // r))


# --- activations ---------------------------------------------------------------------------------
def glu(input, dim: int = -1) -> Tensor:
    """The gated linear unit: the first half of `dim` times the sigmoid of the second half.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.glu(tp.tensor([2.0, 0.0])).tolist()
    [1.0]
    """
    x = as_tensor_operand(input)
    if x.ndim == 0 or x.shape[dim] % 2:
        raise ValueError(f"glu: halving dimension {dim} must be even, got shape {tuple(x.shape)}")
    a, b = _sh.chunk(x, 2, dim)
    return ew.mul(a, ew.sigmoid(b))


def hardsigmoid(input, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.hardsigmoid(tp.tensor([-4.0, 0.0, 4.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    x = as_tensor_operand(input)
    out = ew.div(ew.clamp(ew.add(x, 3.0), 0.0, 6.0), 6.0)
    return x.copy_(out) if inplace else out


def hardswish(input, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.hardswish(tp.tensor([-4.0, 1.0, 4.0])).tolist()
    [-0.0, 0.6666666865348816, 4.0]
    """
    x = as_tensor_operand(input)
    out = ew.mul(x, ew.div(ew.clamp(ew.add(x, 3.0), 0.0, 6.0), 6.0))
    return x.copy_(out) if inplace else out


def _softplus(x: Tensor) -> Tensor:
    return ew.add(ew.clamp(x, min=0.0), ew.log1p(ew.exp(ew.neg(ew.abs(x)))))


def mish(input, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> round(F.mish(tp.tensor(1.0)).item(), 4)
    0.8651
    """
    x = as_tensor_operand(input)
    out = ew.mul(x, ew.tanh(_softplus(x)))
    return x.copy_(out) if inplace else out


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def selu(input, inplace: bool = False) -> Tensor:
    """``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with SELU's constants.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> round(F.selu(tp.tensor(1.0)).item(), 4)
    1.0507
    """
    x = as_tensor_operand(input)
    out = ew.mul(ew.where(ew.gt(x, 0.0), x, ew.mul(ew.expm1(ew.clamp(x, max=0.0)), _SELU_ALPHA)), _SELU_SCALE)
    return x.copy_(out) if inplace else out


def celu(input, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.celu(tp.tensor([2.0])).tolist()
    [2.0]
    """
    x = as_tensor_operand(input)
    out = ew.where(ew.gt(x, 0.0), x, ew.mul(ew.expm1(ew.div(ew.clamp(x, max=0.0), alpha)), alpha))
    return x.copy_(out) if inplace else out


def softsign(input) -> Tensor:
    """``x / (1 + |x|)``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.softsign(tp.tensor([1.0, -3.0])).tolist()
    [0.5, -0.75]
    """
    x = as_tensor_operand(input)
    return ew.div(x, ew.add(ew.abs(x), 1.0))


def tanhshrink(input) -> Tensor:
    """``x - tanh(x)``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.tanhshrink(tp.tensor([0.0])).tolist()
    [0.0]
    """
    x = as_tensor_operand(input)
    return ew.sub(x, ew.tanh(x))


def hardshrink(input, lambd: float = 0.5) -> Tensor:
    """x where ``|x| > lambd``, else 0.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.hardshrink(tp.tensor([0.3, -1.0])).tolist()
    [0.0, -1.0]
    """
    x = as_tensor_operand(input)
    return ew.where(ew.gt(ew.abs(x), lambd), x, 0.0)


def softshrink(input, lambd: float = 0.5) -> Tensor:
    """x moved toward 0 by `lambd` (0 inside [-lambd, lambd]).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.softshrink(tp.tensor([0.3, -1.0])).tolist()
    [0.0, -0.5]
    """
    x = as_tensor_operand(input)
    return ew.where(ew.gt(x, lambd), ew.sub(x, lambd), ew.where(ew.lt(x, -lambd), ew.add(x, lambd), 0.0))


def threshold(input, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where ``x > threshold``, else `value`.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.threshold(tp.tensor([0.5, 2.0]), 1.0, -1.0).tolist()
    [-1.0, 2.0]
    """
    x = as_tensor_operand(input)
    out = ew.where(ew.gt(x, threshold), x, value)
    return x.copy_(out) if inplace else out


def softmin(input, dim: int | None = None, dtype=None) -> Tensor:
    """``softmax(-x)`` along `dim`.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.softmin(tp.tensor([0.0, 0.0]), dim=0).tolist()
    [0.5, 0.5]
    """
    return softmax(ew.neg(as_tensor_operand(input)), dim, dtype)


def prelu(input, weight) -> Tensor:
    """x where positive, else ``weight * x``; a weight of C elements applies per channel (dim 1).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.prelu(tp.tensor([-2.0, 2.0]), tp.tensor([0.25])).tolist()
    [-0.5, 2.0]
    """
    x, w = as_tensor_operand(input), as_tensor_operand(weight)
    if w.numel() != 1:
        if x.ndim < 2 or x.shape[1] != w.numel():
            raise ValueError(f"prelu: weight of {w.numel()} elements needs an input with that many channels (dim 1), "
                             f"got shape {tuple(x.shape)}")
        w = _sh.reshape(w, (w.numel(),) + (1,) * (x.ndim - 2))
    else:
        w = _sh.reshape(w, ())
    return ew.where(ew.gt(x, 0.0), x, ew.mul(w, x))


# --- losses and distances ------------------------------------------------------------------------
def _pair(input, target, op: str):
    x, y = as_tensor_operand(input), as_tensor_operand(target)
    if tuple(x.shape) != tuple(y.shape):
        from ..ops._common import broadcast_shapes

        broadcast_shapes(tuple(x.shape), tuple(y.shape), op=op)
    return x, y


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (d = input - target).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.smooth_l1_loss(tp.tensor([0.5, 3.0]), tp.tensor([0.0, 0.0]), reduction="none").tolist()
    [0.125, 2.5]
    """
    if size_average is not None or reduce is not None:
        raise TypeError("smooth_l1_loss: size_average and reduce are deprecated; use reduction=")
    x, y = _pair(input, target, "smooth_l1_loss")
    d = ew.abs(ew.sub(x, y))
    if beta == 0:
        return _reduce_loss(d, reduction, "smooth_l1_loss")
    loss = ew.where(ew.lt(d, beta), ew.div(ew.mul(ew.mul(d, d), 0.5), beta), ew.sub(d, 0.5 * beta))
    return _reduce_loss(loss, reduction, "smooth_l1_loss")


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``; optional elementwise `weight`.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.huber_loss(tp.tensor([0.5, 3.0]), tp.tensor([0.0, 0.0]), reduction="none", delta=2.0).tolist()
    [0.125, 4.0]
    """
    x, y = _pair(input, target, "huber_loss")
    d = ew.abs(ew.sub(x, y))
    loss = ew.where(ew.lt(d, delta), ew.mul(ew.mul(d, d), 0.5), ew.mul(ew.sub(d, 0.5 * delta), delta))
    if weight is not None:
        loss = ew.mul(loss, weight)
    return _reduce_loss(loss, reduction, "huber_loss")


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
    """``target * (log(target) - input)`` with `input` log-probabilities (0 where target is 0);
    ``reduction="batchmean"`` divides the sum by the batch size (the mathematically right mean).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.kl_div(tp.tensor([0.5, 0.5]).log(), tp.tensor([0.5, 0.5]), reduction="sum").item()
    0.0
    """
    if size_average is not None or reduce is not None:
        raise TypeError("kl_div: size_average and reduce are deprecated; use reduction=")
    x, y = _pair(input, target, "kl_div")
    if log_target:
        loss = ew.mul(ew.exp(y), ew.sub(y, x))
    else:
        from ..ops.pointwise_extra import xlogy

        loss = ew.sub(xlogy(y, y), ew.mul(y, x))
    if reduction == "batchmean":
        return ew.div(_red.sum(loss), x.shape[0] if x.ndim else 1)
    return _reduce_loss(loss, reduction, "kl_div")


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / max(|x1| |x2|, eps)`` along `dim` (inputs broadcast).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.cosine_similarity(tp.tensor([[1.0, 0.0]]), tp.tensor([[1.0, 1.0]])).tolist()
    [0.7071067690849304]
    """
    a, b = as_tensor_operand(x1), as_tensor_operand(x2)
    dot = _red.sum(ew.mul(a, b), dim)
    na = _red.sum(ew.mul(a, a), dim)
    nb = _red.sum(ew.mul(b, b), dim)
    return ew.div(dot, ew.sqrt(ew.clamp(ew.mul(na, nb), min=eps * eps)))


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The p-norm of ``x1 - x2 + eps`` over the last dim.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> round(F.pairwise_distance(tp.tensor([[0.0, 0.0]]), tp.tensor([[3.0, 4.0]])).item(), 4)
    5.0
    """
    a, b = as_tensor_operand(x1), as_tensor_operand(x2)
    d = ew.add(ew.sub(a, b), eps)
    return _red.norm(d, p, -1 if d.ndim else None, keepdim=keepdim)


def _channel_dropout(input, p: float, training: bool, inplace: bool, spatial: int, op: str) -> Tensor:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    x = as_tensor_operand(input)
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(f"{op}: expected a {spatial + 1}-d or {spatial + 2}-d input, got shape {tuple(x.shape)}")
    if not training or p == 0.0:
        return x
    lead = tuple(x.shape[:-spatial])
    keep = ew.ge(rand(lead + (1,) * spatial, dtype=x.dtype), p)
    out = ew.mul(ew.where(keep, x, 0.0), 0.0 if p == 1.0 else 1.0 / (1.0 - p))
    return x.copy_(out) if inplace else out


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` / ``(C, L)`` with probability `p`, scaling the rest by ``1/(1-p)``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.dropout1d(tp.ones(2, 3), training=False).tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    return _channel_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, H, W)`` / ``(C, H, W)`` with probability `p` (rest scaled by ``1/(1-p)``).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> y = F.dropout2d(tp.ones(1, 8, 2, 2), 0.5)
    >>> sorted(set(y.flatten().tolist())) in ([0.0, 2.0], [2.0], [0.0])
    True
    """
    return _channel_dropout(input, p, training, inplace, 2, "dropout2d")


def gumbel_softmax(logits, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax distribution; ``hard=True`` returns one-hot samples whose gradient is the
    soft sample's (straight-through).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> y = F.gumbel_softmax(tp.zeros(2, 3), hard=True)
    >>> y.sum(-1).tolist()
    [1.0, 1.0]
    """
    from ..ops.reduction import argmax
    x = as_tensor_operand(logits)
    u = rand(tuple(x.shape), dtype=x.dtype)
    gumbels = ew.neg(ew.log(ew.neg(ew.log(ew.clamp(u, min=1e-20)))))
    y = softmax(ew.div(ew.add(x, gumbels), tau), dim)
    if not hard:
        return y
    d = dim % x.ndim
    index = argmax(y, d)
    hard_y = _sh.movedim(one_hot(index, x.shape[d]), -1, d)
    from ..ops._common import convert

    hard_y = convert(hard_y, y.dtype)
    return ew.add(ew.sub(hard_y, y.detach()), y)


def rms_norm(input, normalized_shape, weight=None, eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps)`` over the last ``len(normalized_shape)`` dims, times `weight`.

    `eps` defaults to the dtype's machine epsilon, as torch.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> [round(v, 4) for v in F.rms_norm(tp.tensor([[3.0, 4.0]]), (2,), eps=0.0)[0].tolist()]
    [0.8485, 1.1314]
    """
    x = as_tensor_operand(input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise ValueError(f"rms_norm: normalized_shape {list(shape)} does not match the trailing dims of the input "
                         f"of shape {tuple(x.shape)}")
    if eps is None:
        eps = float(np.finfo(x.dtype.np).eps)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    ms = _red.mean(ew.mul(x, x), dims, keepdim=True) if dims else ew.mul(x, x)
    out = ew.mul(x, ew.rsqrt(ew.add(ms, eps)))
    return out if weight is None else ew.mul(out, weight)

