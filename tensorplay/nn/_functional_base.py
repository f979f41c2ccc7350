"""The pieces of `tensorplay.nn.functional` that its private parts build on.

`functional` re-exports everything here; `_attention` (linear, dropout) and
`_functional_extra` (the convolution core, softmax, one_hot, loss reduction)
import it directly, so that no module of `tensorplay.nn` imports the facade
that re-exports it.

>>> import tensorplay as tp
>>> from tensorplay.nn import _functional_base as base
>>> base.linear(tp.ones(2, 3), tp.ones(4, 3)).shape
tensorplay.Size(2, 4)
"""
from __future__ import annotations

import itertools
from math import prod

from .._tensor import Tensor
from .._trace import bind
from ..ops import activation as _act
from ..ops import elementwise as ew
from ..ops import indexing as _idx
from ..ops import linalg as _la
from ..ops import reduction as _red
from ..ops import shape as _sh
from ..ops._common import as_tensor_operand, get_default_dtype
from ..ops.creation import rand


def _ntuple(value, n: int, name: str, op: str) -> tuple[int, ...]:
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            value = tuple(value) * n
        if len(value) != n:
            raise ValueError(f"{op}: expected {name} to be a single int or a tuple of {n} ints, got {value}")
        return tuple(int(v) for v in value)
    return (int(value),) * n


def _reduce_loss(loss: Tensor, reduction: str, op: str) -> Tensor:
    if reduction == "mean":
        return _red.mean(loss)
    if reduction == "sum":
        return _red.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: {reduction!r} is not a valid value for reduction (expected 'mean', 'sum' or 'none')")


def _same_dtype(op: str, **tensors) -> None:
    items = [(k, t) for k, t in tensors.items() if t is not None]
    first_name, first = items[0]
    for name, t in items[1:]:
        if t.dtype is not first.dtype:
            raise TypeError(f"{op}: {first_name} ({first.dtype.name}) and {name} ({t.dtype.name}) should have the "
                            f"same dtype")


def linear(input, weight, bias=None) -> Tensor:
    """``input @ weight.T + bias`` (weight is ``(out_features, in_features)``).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.linear(tp.ones(2, 3), tp.ones(4, 3), tp.zeros(4)).shape
    tensorplay.Size(2, 4)
    """
    x, w = as_tensor_operand(input), as_tensor_operand(weight)
    if w.ndim not in (1, 2):
        raise ValueError(f"linear: weight must be 1-D or 2-D, got shape {tuple(w.shape)}")
    if x.ndim == 0 or x.shape[-1] != w.shape[-1]:
        raise ValueError(f"linear: input of shape {tuple(x.shape)} does not match weight of shape {tuple(w.shape)} "
                         f"(mat1 and mat2 shapes cannot be multiplied)")
    _same_dtype("linear", input=x, weight=w, bias=bias)
    out = _la.matmul(x, _sh.t(w) if w.ndim == 2 else w)
    return out if bias is None else ew.add(out, bias)


def _pad_dims(x: Tensor, low, high, value) -> Tensor:
    if not any(low) and not any(high):
        return x
    v = float(value) if x.dtype.is_floating_point else int(value)
    return bind("pad", x, low=tuple(low), high=tuple(high), interior=(0,) * x.ndim, value=v)


def _windows(x: Tensor, kernel, stride, dilation, out_size) -> Tensor:
    """(N, C, *spatial) -> (N, C, K, *out): one strided slice per kernel offset, stacked on dim 2."""
    lead = tuple(x.shape[:2])
    parts = []
    for offset in itertools.product(*(range(k) for k in kernel)):
        starts = tuple(o * d for o, d in zip(offset, dilation))
        limits = tuple(s + (o - 1) * st + 1 for s, o, st in zip(starts, out_size, stride))
        part = bind("slice", x, start_indices=(0, 0) + starts, limit_indices=lead + limits,
                    strides=(1, 1) + tuple(stride))
        parts.append(bind("reshape", part, shape=lead + (1,) + tuple(out_size)))
    return parts[0] if len(parts) == 1 else _sh.cat(parts, 2)


def _conv_padding(padding, kernel, dilation, stride, n: int, op: str):
    if isinstance(padding, str):
        if padding == "valid":
            return [0] * n, [0] * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            return [t // 2 for t in total], [t - t // 2 for t in total]
        raise ValueError(f"{op}: invalid padding string {padding!r}, should be one of 'valid' or 'same'")
    p = _ntuple(padding, n, "padding", op)
    if any(v < 0 for v in p):
        raise ValueError(f"{op}: negative padding is not supported, got {p}")
    return list(p), list(p)


def _batched(x: Tensor, n: int, op: str, what: str = "input"):
    if x.ndim == n + 1:
        return _sh.unsqueeze(x, 0), True
    if x.ndim == n + 2:
        return x, False
    raise ValueError(f"{op}: Expected {n + 1}D (unbatched) or {n + 2}D (batched) {what} to {op}, but got {what} "
                     f"of size: {list(x.shape)}")


def _out_size(spatial, lo, hi, kernel, stride, dilation, op: str, shape) -> tuple[int, ...]:
    out = []
    for L, a, b, k, s, d in zip(spatial, lo, hi, kernel, stride, dilation):
        span = d * (k - 1) + 1
        if L + a + b < span:
            raise ValueError(f"{op}: Calculated padded input size per channel: ({L + a + b}). Kernel size: "
                             f"({span}). Kernel size can't be greater than actual input size (input {list(shape)})")
        out.append((L + a + b - span) // s + 1)
    return tuple(out)


def _conv(input, weight, bias, stride, padding, dilation, groups: int, n: int, op: str) -> Tensor:
    x, w = as_tensor_operand(input), as_tensor_operand(weight)
    if w.ndim != n + 2:
        raise ValueError(f"{op}: expected weight of {n + 2} dims (out_channels, in_channels/groups, kernel...), "
                         f"got shape {tuple(w.shape)}")
    x, unbatched = _batched(x, n, op)
    _same_dtype(op, input=x, weight=w, bias=bias)
    N, C = x.shape[0], x.shape[1]
    Cout, Cg = w.shape[0], w.shape[1]
    kernel = tuple(w.shape[2:])
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{op}: non-positive groups is not supported, got {groups}")
    if Cout % groups:
        raise ValueError(f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                         f"but got weight of size {list(w.shape)} instead")
    if Cg * groups != C:
        raise ValueError(f"{op}: Given groups={groups}, weight of size {list(w.shape)}, expected input"
                         f"{list(x.shape)} to have {Cg * groups} channels, but got {C} channels instead")
    stride = _ntuple(stride, n, "stride", op)
    dilation = _ntuple(dilation, n, "dilation", op)
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation):
        raise ValueError(f"{op}: stride {stride} and dilation {dilation} must be positive")
    lo, hi = _conv_padding(padding, kernel, dilation, stride, n, op)
    out_size = _out_size(x.shape[2:], lo, hi, kernel, stride, dilation, op, x.shape)
    xp = _pad_dims(x, [0, 0] + lo, [0, 0] + hi, 0)
    cols = _windows(xp, kernel, stride, dilation, out_size)               # (N, C, K, *out)
    K, P = prod(kernel), prod(out_size)
    cols = _sh.reshape(cols, (N, groups, Cg * K, P))
    wg = _sh.reshape(w, (groups, Cout // groups, Cg * K))
    out = _la.einsum("gok,ngkp->ngop", wg, cols)
    out = _sh.reshape(out, (N, Cout) + out_size)
    if bias is not None:
        out = ew.add(out, _sh.reshape(bias, (Cout,) + (1,) * n))
    return _sh.squeeze(out, 0) if unbatched else out


def _dropout_input(input, p: float) -> Tensor:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return as_tensor_operand(input)


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability `p` and scale the rest by ``1 / (1 - p)``; identity when not training.

    The mask comes from `tensorplay.rand`, so under vmap it follows the `randomness` option.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.dropout(tp.ones(3), 0.5, training=False)
    tensor([1., 1., 1.])
    """
    x = _dropout_input(input, p)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        out = ew.mul(x, 0.0)
    else:
        dtype = x.dtype if x.dtype.is_floating_point else get_default_dtype()
        keep = ew.ge(rand(tuple(x.shape), dtype=dtype), p)
        out = ew.mul(ew.where(keep, x, 0.0), 1.0 / (1.0 - p))
    if inplace:
        return x.copy_(out)
    return out


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dim."""
    return _idx.one_hot(tensor, num_classes)


def _softmax_dim(ndim: int) -> int:
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim: int | None = None, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim` (PyTorch's legacy implicit dim when None)."""
    x = as_tensor_operand(input)
    return _act.softmax(x, _softmax_dim(x.ndim) if dim is None else dim, dtype)
