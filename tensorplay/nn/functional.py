"""`tensorplay.nn.functional`: the stateless operations behind the layers.

Every function here is a composite over tensorplay ops (no new primitives),
so vmap, grad, jvp and compile work on all of them. Convolution and pooling
gather their windows with a pad and one strided slice per kernel offset
(im2col), then contract with `einsum`/reduce.

>>> import tensorplay as tp
>>> import tensorplay.nn.functional as F
>>> F.relu(tp.tensor([-1.0, 2.0]))
tensor([0., 2.])
>>> F.cross_entropy(tp.zeros(2, 4), tp.tensor([0, 3]))
tensor(1.3863)
"""
from __future__ import annotations

import math
from math import prod

import numpy as np

from tensorplay.ir import dtypes, get_primitive

from .._tensor import Tensor
from .._trace import bind, known_array, transform_stack
from ..ops import activation as _act
from ..ops import elementwise as ew
from ..ops import indexing as _idx
from ..ops import linalg as _la
from ..ops import reduction as _red
from ..ops import shape as _sh
from ..ops._common import as_tensor_operand, constant, convert, ebind, filled, fixed, get_default_dtype, iota, widened
from ..ops.creation import rand
from .._state import STATE
from .._traced_memo import memo_composite
from ._functional_base import (_batched, _conv, _dropout_input, _ntuple, _out_size, _pad_dims, _reduce_loss,
                               _softmax_dim, _windows, dropout, linear, one_hot, softmax)

__all__ = [
    "linear", "bilinear", "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
    "batch_norm", "layer_norm", "dropout", "embedding", "one_hot", "relu", "relu6", "leaky_relu", "gelu", "silu",
    "elu", "softplus", "hardtanh", "tanh", "sigmoid", "logsigmoid", "softmax", "log_softmax", "mse_loss",
    "l1_loss", "nll_loss", "cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "pad",
    "normalize", "alpha_dropout", "group_norm", "instance_norm", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "interpolate", "upsample", "scaled_dot_product_attention",
]


# --- linear (`linear` is in _functional_base) ---------------------------------------------------
def bilinear(input1, input2, weight, bias=None) -> Tensor:
    """``x1^T A x2 + b`` for each output feature (weight is ``(out, in1, in2)``)."""
    out = _la.einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else ew.add(out, bias)


# --- padding and windows --------------------------------------------------------------------------
def pad(input, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad = (last_lo, last_hi, second_last_lo, ...)``.

    Modes: ``"constant"`` (`value`), ``"reflect"``, ``"replicate"`` and ``"circular"``; widths are
    non-negative.
    """
    x = as_tensor_operand(input)
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad: mode {mode!r} is not supported (use 'constant', 'reflect', 'replicate' or "
                                  f"'circular')")
    pad = tuple(int(p) for p in pad)
    if mode != "constant":
        from ._functional_extra import pad_mode

        return pad_mode(x, pad, mode)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(f"pad: padding length {len(pad)} must be even and at most 2 * ndim ({x.ndim})")
    if any(p < 0 for p in pad):
        raise NotImplementedError(f"pad: negative padding {list(pad)} is not supported")
    low, high = [0] * x.ndim, [0] * x.ndim
    for i in range(len(pad) // 2):
        low[x.ndim - 1 - i], high[x.ndim - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return _pad_dims(x, low, high, 0 if value is None else value)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
    """1-D cross-correlation of ``(N, C_in, L)`` (or unbatched ``(C_in, L)``) with ``(C_out, C_in/groups, k)``.

    `padding` is an int, a 1-tuple, ``"valid"`` or ``"same"``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.conv1d(tp.ones(1, 1, 5), tp.ones(1, 1, 3)).tolist()
    [[[3.0, 3.0, 3.0]]]
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
    """2-D cross-correlation of ``(N, C_in, H, W)`` (or ``(C_in, H, W)``) with ``(C_out, C_in/groups, kh, kw)``.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.conv2d(tp.ones(2, 3, 5, 5), tp.ones(4, 3, 3, 3), padding=1).shape
    tensorplay.Size(2, 4, 5, 5)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def _pool(input, kernel_size, stride, padding, dilation, ceil_mode, n: int, op: str, kind: str,
          count_include_pad: bool = True) -> Tensor:
    x = as_tensor_operand(input)
    x, unbatched = _batched(x, n, op)
    kernel = _ntuple(kernel_size, n, "kernel_size", op)
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and not stride) \
        else _ntuple(stride, n, "stride", op)
    pads = _ntuple(padding, n, "padding", op)
    dilation = _ntuple(dilation, n, "dilation", op)
    if ceil_mode:
        raise NotImplementedError(f"{op}: ceil_mode=True is not supported")
    if any(2 * p > k for p, k in zip(pads, kernel)):
        raise ValueError(f"{op}: pad should be at most half of effective kernel size, but got pad={pads}, "
                         f"kernel_size={kernel}")
    out_size = _out_size(x.shape[2:], pads, pads, kernel, stride, dilation, op, x.shape)
    if kind == "max":
        fill = float("-inf") if x.dtype.is_floating_point else int(np.iinfo(x.dtype.np).min)
        xp = _pad_dims(x, [0, 0] + list(pads), [0, 0] + list(pads), fill)
        out = _red.amax(_windows(xp, kernel, stride, dilation, out_size), 2)
    else:
        xp = _pad_dims(x, [0, 0] + list(pads), [0, 0] + list(pads), 0)
        total = _red.sum(_windows(xp, kernel, stride, dilation, out_size), 2)
        if count_include_pad or not any(pads):
            out = ew.div(total, float(prod(kernel)))
        else:
            ones = constant(1.0, x.dtype, (1, 1) + tuple(x.shape[2:]))
            ones = _pad_dims(ones, [0, 0] + list(pads), [0, 0] + list(pads), 0)
            count = _red.sum(_windows(ones, kernel, stride, dilation, out_size), 2)
            out = ew.div(total, count)
    return _sh.squeeze(out, 0) if unbatched else out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False) -> Tensor:
    """Maximum over sliding windows of the last dim."""
    return _pool(input, kernel_size, stride, padding, dilation, ceil_mode, 1, "max_pool1d", "max")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False) -> Tensor:
    """Maximum over sliding windows of the last two dims (stride defaults to the kernel size).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.max_pool2d(tp.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _pool(input, kernel_size, stride, padding, dilation, ceil_mode, 2, "max_pool2d", "max")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of the last dim."""
    return _pool(input, kernel_size, stride, padding, 1, ceil_mode, 1, "avg_pool1d", "avg", count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of the last two dims (stride defaults to the kernel size)."""
    return _pool(input, kernel_size, stride, padding, 1, ceil_mode, 2, "avg_pool2d", "avg", count_include_pad)


# --- normalization --------------------------------------------------------------------------------
def _check_no_vmap_update(op: str) -> None:
    stack = transform_stack()
    if "vmap" in stack:
        raise RuntimeError(
            f"{op}: batch norm in training mode updates its running statistics in place, which is ambiguous "
            f"under vmap (transform stack: {stack}): each sample or model would write the same buffer. Call "
            f"tensorplay.func.replace_all_batch_norm_modules_(model) (or batch_norm_without_running_stats(module)) "
            f"to normalize with batch statistics only, or put the module in eval() mode to use its running "
            f"statistics.")


def _update_running(buf: Tensor, stat: Tensor, momentum) -> None:
    keep = ew.sub(1.0, momentum) if isinstance(momentum, Tensor) else 1.0 - momentum
    new = ew.add(ew.mul(buf, keep), ew.mul(bind("stop_gradient", stat), momentum))
    buf.copy_(convert(new, buf.dtype))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum=0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) of ``(N, C, *)`` input.

    In training mode the batch statistics are used and, when given, `running_mean` and
    `running_var` are updated in place: ``running = (1 - momentum) * running + momentum * stat``
    (the variance with Bessel's correction). `momentum` may be a float or a 0-d tensor. In
    evaluation mode the running statistics are used.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> rm, rv = tp.zeros(2), tp.ones(2)
    >>> y = F.batch_norm(tp.tensor([[1.0, 2.0], [3.0, 6.0]]), rm, rv, training=True)
    >>> rm
    tensor([0.2000, 0.4000])
    """
    x = as_tensor_operand(input)
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected an input of at least 2 dims (N, C, ...), got shape {tuple(x.shape)}")
    C = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and tuple(t.shape) != (C,):
            raise ValueError(f"batch_norm: {name} should have shape ({C},) for input of shape {tuple(x.shape)}, "
                             f"got {tuple(t.shape)}")
    axes = (0,) + tuple(range(2, x.ndim))
    bshape = (1, C) + (1,) * (x.ndim - 2)
    if training:
        count = x.numel() // C if C else 0
        if count <= 1:
            raise ValueError(f"batch_norm: Expected more than 1 value per channel when training, got input size "
                             f"{list(x.shape)}")
        mean = _red.mean(x, axes)
        centered = ew.sub(x, _sh.reshape(mean, bshape))
        var = _red.mean(ew.mul(centered, centered), axes)
        if running_mean is not None or running_var is not None:
            _check_no_vmap_update("batch_norm")
            if momentum is None:
                raise ValueError("batch_norm: momentum must be a number or a 0-d tensor when running statistics "
                                 "are updated (BatchNorm modules turn momentum=None into a cumulative average)")
            if running_mean is not None:
                _update_running(running_mean, mean, momentum)
            if running_var is not None:
                _update_running(running_var, ew.mul(var, count / (count - 1)), momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var must be given when training=False")
        mean, var = convert(running_mean, x.dtype), convert(running_var, x.dtype)
        centered = ew.sub(x, _sh.reshape(mean, bshape))
    out = ew.mul(centered, _sh.reshape(ew.rsqrt(ew.add(var, eps)), bshape))
    if weight is not None:
        out = ew.mul(out, _sh.reshape(weight, bshape))
    if bias is not None:
        out = ew.add(out, _sh.reshape(bias, bshape))
    return out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing `normalized_shape` dims (biased variance), then scale and shift.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.layer_norm(tp.tensor([[1.0, 3.0]]), (2,))
    tensor([[-1.0000,  1.0000]])
    """
    x = as_tensor_operand(input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k:]) != shape:
        raise ValueError(f"layer_norm: Given normalized_shape={list(shape)}, expected input with shape "
                         f"[*, {', '.join(map(str, shape))}], but got input of size {list(x.shape)}")
    low, (x, weight, bias) = widened(x, weight, bias)
    if low is not None:  # 16-bit floats: computed in float32, rounded once (as torch's CPU kernel)
        return convert(layer_norm(x, normalized_shape, weight, bias, eps), low)
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = _red.mean(x, axes, keepdim=True)
    centered = ew.sub(x, mean)
    var = _red.mean(ew.mul(centered, centered), axes, keepdim=True)
    out = ew.mul(centered, ew.rsqrt(ew.add(var, eps)))
    if weight is not None:
        out = ew.mul(out, weight)
    if bias is not None:
        out = ew.add(out, bias)
    return out


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input / max(||input||_p, eps)`` along `dim`."""
    n = _red.norm(input, p, dim, keepdim=True)
    return ew.div(input, ew.clamp(n, min=eps))


# --- dropout and embedding ------------------------------------------------------------------------
_SELU_ALPHA_SCALE = 1.7580993408473766  # -alpha' of SELU: scale * alpha


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements take SELU's negative saturation value, then an affine
    map keeps mean 0 and variance 1 (torch's formula); identity when not training.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.alpha_dropout(tp.ones(3), 0.5, training=False)
    tensor([1., 1., 1.])
    """
    x = _dropout_input(input, p)
    if not training or p == 0.0 or x.numel() == 0:
        return x
    if p == 1.0:
        out = ew.mul(x, 0.0)
    else:
        dtype = x.dtype if x.dtype.is_floating_point else get_default_dtype()
        keep = convert(ew.ge(rand(tuple(x.shape), dtype=dtype), p), dtype)  # 1 with probability 1 - p
        alpha = _SELU_ALPHA_SCALE
        a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
        b = ew.add(ew.mul(ew.sub(keep, 1.0), alpha * a), alpha * a * p)
        out = ew.add(ew.mul(x, ew.mul(keep, a)), b)
    if inplace:
        return x.copy_(out)
    return out


def embedding(input, weight, padding_idx: int | None = None, max_norm=None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` at the integer indices `input`: shape ``input.shape + (embedding_dim,)``.

    The row at `padding_idx` receives no gradient.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.embedding(tp.tensor([[0, 2]]), tp.eye(3)).tolist()
    [[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]]
    """
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not supported")
    idx, w = as_tensor_operand(input), as_tensor_operand(weight)
    if idx.dtype.is_floating_point or idx.dtype.is_bool:
        raise TypeError(f"embedding: Expected tensor for argument #1 'indices' to have one of the following scalar "
                        f"types: Long, Int; but got {idx.dtype.name} instead")
    if w.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got {tuple(w.shape)}")
    num = w.shape[0]
    if idx._trace is None and idx.numel():
        arr = idx._data
        if arr.min() < 0 or arr.max() >= num:
            bad = arr[(arr < 0) | (arr >= num)].flat[0]
            raise IndexError(f"embedding: index {bad} is out of range for num_embeddings={num}")
    rows = _idx.index_select(w, 0, _sh.reshape(idx, (-1,)))
    rows = _sh.reshape(rows, tuple(idx.shape) + (w.shape[1],))
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ValueError(f"embedding: padding_idx {padding_idx} must be within num_embeddings={num}")
        padding_idx %= num
        is_pad = _sh.unsqueeze(ew.eq(idx, padding_idx), -1)
        rows = ew.where(is_pad, bind("stop_gradient", rows), rows)
    return rows


# --- activations ----------------------------------------------------------------------------------
def relu(input, inplace: bool = False) -> Tensor:
    """max(input, 0)."""
    out = ew.relu(input)
    return input.copy_(out) if inplace else out


def relu6(input, inplace: bool = False) -> Tensor:
    """min(max(input, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """clamp(input, min_val, max_val)."""
    out = ew.clamp(input, min_val, max_val)
    return input.copy_(out) if inplace else out


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """input where positive, else negative_slope * input."""
    x = as_tensor_operand(input)
    out = ew.where(ew.gt(x, 0), x, ew.mul(x, negative_slope))
    return x.copy_(out) if inplace else out


def gelu(input, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: ``x * Phi(x)`` (exact, with erf) or its tanh approximation.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.gelu(tp.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8413])
    """
    x = ew._float_operand(input, "gelu")
    low, (x,) = widened(x)
    if low is not None:  # 16-bit floats: computed in float32, rounded once (as torch's CPU kernel)
        return convert(gelu(x, approximate), low)
    if approximate == "none":
        return ew.mul(ew.mul(x, 0.5), ew.add(ew.erf(ew.mul(x, 1.0 / math.sqrt(2.0))), 1.0))
    if approximate == "tanh":
        inner = ew.mul(ew.add(x, ew.mul(ew.mul(ew.mul(x, x), x), 0.044715)), math.sqrt(2.0 / math.pi))
        return ew.mul(ew.mul(x, 0.5), ew.add(ew.tanh(inner), 1.0))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(input, inplace: bool = False) -> Tensor:
    """x * sigmoid(x)."""
    x = as_tensor_operand(input)
    out = ew.mul(x, ew.sigmoid(x))
    return x.copy_(out) if inplace else out


def elu(input, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where positive, else alpha * (exp(x) - 1)."""
    x = as_tensor_operand(input)
    out = ew.where(ew.gt(x, 0), x, ew.mul(ew.expm1(ew.minimum(x, 0.0)), alpha))
    return x.copy_(out) if inplace else out


def softplus(input, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, linear above `threshold`."""
    x = as_tensor_operand(input)
    bx = ew.mul(x, beta)
    soft = ew.div(ew.log1p(ew.exp(ew.minimum(bx, threshold))), beta)
    return ew.where(ew.gt(bx, threshold), x, soft)


def tanh(input) -> Tensor:
    return ew.tanh(input)


def sigmoid(input) -> Tensor:
    return ew.sigmoid(input)


def logsigmoid(input) -> Tensor:
    """log(sigmoid(x)), computed stably as ``-softplus(-x)``."""
    x = as_tensor_operand(input)
    return ew.neg(ew.add(ew.relu(ew.neg(x)), ew.log1p(ew.exp(ew.neg(ew.abs(x))))))


def log_softmax(input, dim: int | None = None, dtype=None) -> Tensor:
    """x - logsumexp(x) along `dim`."""
    x = as_tensor_operand(input)
    return _act.log_softmax(x, _softmax_dim(x.ndim) if dim is None else dim, dtype)


# --- losses ---------------------------------------------------------------------------------------
def mse_loss(input, target, reduction: str = "mean") -> Tensor:
    """Mean (or sum, or elementwise) squared error.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.mse_loss(tp.tensor([1.0, 2.0]), tp.tensor([1.0, 4.0]))
    tensor(2.)
    """
    d = ew.sub(input, target)
    return _reduce_loss(ew.mul(d, d), reduction, "mse_loss")


def l1_loss(input, target, reduction: str = "mean") -> Tensor:
    """Mean (or sum, or elementwise) absolute error."""
    return _reduce_loss(ew.abs(ew.sub(input, target)), reduction, "l1_loss")


def binary_cross_entropy(input, target, weight=None, reduction: str = "mean") -> Tensor:
    """-(t log p + (1 - t) log(1 - p)) for probabilities `input` (logs clamped at -100, as in PyTorch)."""
    p = as_tensor_operand(input)
    logp = ew.maximum(ew.log(p), -100.0)
    log1mp = ew.maximum(ew.log(ew.sub(1.0, p)), -100.0)
    loss = ew.neg(ew.add(ew.mul(target, logp), ew.mul(ew.sub(1.0, target), log1mp)))
    if weight is not None:
        loss = ew.mul(loss, weight)
    return _reduce_loss(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input, target, weight=None, reduction: str = "mean",
                                     pos_weight=None) -> Tensor:
    """Binary cross entropy of sigmoid(input), computed stably from the logits."""
    x = as_tensor_operand(input)
    log_sig = logsigmoid(x)
    log_one_minus = logsigmoid(ew.neg(x))
    pos = ew.mul(target, log_sig)
    if pos_weight is not None:
        pos = ew.mul(pos, pos_weight)
    loss = ew.neg(ew.add(pos, ew.mul(ew.sub(1.0, target), log_one_minus)))
    if weight is not None:
        loss = ew.mul(loss, weight)
    return _reduce_loss(loss, reduction, "binary_cross_entropy_with_logits")


def _class_targets(input: Tensor, target: Tensor, op: str):
    """Put input in (N, C, *) and target in (N, *) form; returns (input, target, unbatched)."""
    if input.ndim == 0:
        raise ValueError(f"{op}: input must have at least 1 dim (C,), got a 0-d tensor")
    unbatched = input.ndim == 1
    if unbatched:
        if target.ndim != 0:
            raise ValueError(f"{op}: for unbatched input of shape {tuple(input.shape)} the target must be 0-d, "
                             f"got shape {tuple(target.shape)}")
        input, target = _sh.unsqueeze(input, 0), _sh.unsqueeze(target, 0)
    expected = (input.shape[0],) + tuple(input.shape[2:])
    if tuple(target.shape) != expected:
        raise ValueError(f"{op}: Expected target of shape {expected} for input of shape {tuple(input.shape)}, "
                         f"got {tuple(target.shape)}")
    return input, target, unbatched


_SELECT, _TAKE, _BROADCAST, _STOP_GRADIENT = (get_primitive(n) for n in ("select", "take", "broadcast_in_dim",
                                                                         "stop_gradient"))


def _where0(cond: Tensor, x: Tensor) -> Tensor:
    """where(cond, x, 0) for `cond` of x's shape, the zero a `full` node (a fixed constant of the
    loss, not user data: no graph input under the plain transforms)."""
    return ebind(_SELECT, cond, x, filled(0, x.dtype, tuple(x.shape), (x, cond)))


def _in_range(arr, C: int, ignore_index: int) -> bool:
    """Are the class indices `arr` (known now, see `known_array`; None: not known) non-empty, all in
    [0, C) and none equal to `ignore_index`? Then the loss needs no valid mask and no bounds check.

    The verdict on a small array is memoised by the array's bytes (its values, whatever wrote
    them: a traced loss re-checks its targets on every call, and they seldom change).

    >>> _in_range(np.array([0, 2]), 3, -100), _in_range(np.array([0, 3]), 3, -100)
    (True, False)
    """
    if arr is None or not arr.size or not C:
        return False
    if arr.nbytes <= _IN_RANGE_BYTES:
        key = (arr.dtype, C, ignore_index, arr.tobytes())
        hit = _IN_RANGE.get(key)
        if hit is None:
            hit = _check_range(arr, C, ignore_index)
            if len(_IN_RANGE) >= _IN_RANGE_LIMIT:
                _IN_RANGE.clear()
            _IN_RANGE[key] = hit
        return hit
    return _check_range(arr, C, ignore_index)


_IN_RANGE: dict = {}  # (dtype, C, ignore_index, the targets' bytes) -> `_in_range`'s verdict
_IN_RANGE_BYTES = 4096
_IN_RANGE_LIMIT = 1024


def _check_range(arr, C: int, ignore_index: int) -> bool:
    u = _UNSIGNED.get(arr.dtype)  # viewed as unsigned, a negative index is huge: one reduction checks both ends
    if u is not None:
        if arr.view(u).max() >= C:
            return False
    elif (arr.dtype.kind != "u" and arr.min() < 0) or arr.max() >= C:
        return False
    return not 0 <= ignore_index < C or not (arr == ignore_index).any()


_UNSIGNED = {np.dtype(s): np.dtype(u) for s, u in (("int64", "uint64"), ("int32", "uint32"), ("int16", "uint16"),
                                                   ("int8", "uint8"))}


def _class_weights(x: Tensor, target: Tensor, weight, ignore_index: int, op: str, arr=None):
    """(valid mask, per-element class weight, 0 where ignored) for class indices `target` (N, *) of
    `x` (N, C, *); `arr` is the target's value when known now (`known_array`).

    The weight is read with a bounds-checked `take` of the class weights (ones without `weight`) at
    the target, so a target outside [0, C) that is not `ignore_index` raises IndexError: eagerly
    here, naming the target, and in compiled code through the executable's index error flag.

    When the targets are known to be all in range and none ignored (`_in_range`: eagerly, or under
    a plain transform, which re-traces every call so the graph may depend on it) the mask is None
    and so is the weight without `weight`: all ones, the loss then needs neither. The values, and
    their gradients, are the same.
    """
    C = x.shape[1]
    if target.dtype.is_floating_point or target.dtype.is_bool:
        raise TypeError(f"{op}: expected class indices of an integer dtype as target, got {target.dtype.name}")
    clean = _in_range(arr, C, ignore_index)
    if not clean and target._trace is None and target.numel():
        arr = target._data
        bad = arr[((arr < 0) | (arr >= C)) & (arr != ignore_index)]
        if bad.size:
            raise IndexError(f"{op}: Target {bad.flat[0]} is out of bounds (number of classes: {C})")
    if weight is None:
        if clean:
            return None, None
        w = filled(1.0, x.dtype, (C,), (x, target))
    else:
        w = as_tensor_operand(weight)
        if tuple(w.shape) != (C,):
            raise ValueError(f"{op}: weight should be a 1-D tensor of {C} class weights, got shape {tuple(w.shape)}")
        w = convert(w, x.dtype)
        if clean:
            return None, _sh.reshape(ebind(_TAKE, w, _sh.reshape(target, (-1,)), axis=0), tuple(target.shape))
    valid = ew.ne(target, ignore_index)
    safe = _where0(valid, target)
    if C == 0:  # no class to take from: every target is out of range (or ignored, or there are none)
        return valid, filled(0.0, x.dtype, tuple(target.shape), (x, target))
    wt = ebind(_TAKE, w, _sh.reshape(safe, (-1,)), axis=0)
    return valid, _where0(valid, _sh.reshape(wt, tuple(target.shape)))


def _known_targets(t: Tensor):
    """The class-index target's value when known now (see `known_array`), else None."""
    return None if t.dtype.is_floating_point else known_array(t)


def _pick_class(x: Tensor, target: Tensor) -> Tensor:
    """x[n, target[n, ...], ...] for x (N, C, *) and target (N, *), as a one-hot pick: the sum over
    C of where(class == target, x, 0). Gather-free, it fuses into one reduction, and its gradient
    is a select, not a scatter. A target outside [0, C) picks 0 (`_class_weights` reports it)."""
    shape = tuple(x.shape)
    classes = iota(shape, 1, dtypes.int64, (x, target))
    t = convert(target, dtypes.int64)
    t = ebind(_BROADCAST, t, shape=shape, broadcast_dimensions=(0,) + tuple(range(2, x.ndim)))
    hit = ew.eq(classes, t)
    return _red.sum(_where0(hit, x), 1)


def _count(loss: Tensor) -> Tensor:
    """The number of elements of `loss` as a 0-d tensor of its dtype (the sum of all-ones weights)."""
    return fixed(float(loss.numel()), loss.dtype, (), (loss,))


def _reduce_weighted(loss: Tensor, wt: Tensor, reduction: str, unbatched: bool, op: str) -> Tensor:
    if reduction == "none":
        return _sh.squeeze(loss, 0) if unbatched else loss
    if reduction == "sum":
        return _red.sum(loss)
    if reduction == "mean":  # wt None: every weight is 1, their sum the (exact) target count
        return ew.div(_red.sum(loss), _count(loss) if wt is None else _red.sum(wt))
    raise ValueError(f"{op}: {reduction!r} is not a valid value for reduction (expected 'mean', 'sum' or 'none')")


def _loss_key(x, t, weight, size_average, ignore_index, reduce, reduction, label_smoothing):
    """The memo key of a traced `cross_entropy` / `nll_loss` call (see `_traced_memo`), or None to
    trace it through the op layer: the options (exactly: classes and float bits), the default
    dtype, and the one decision taken from known values, whether the class-index targets are all
    in range and none ignored (`_in_range`). Deprecated or unusual arguments take the op layer."""
    if x.__class__ is not Tensor or t.__class__ is not Tensor or size_average is not None \
            or reduce is not None or (weight is not None and weight.__class__ is not Tensor) \
            or ignore_index.__class__ is not int or reduction.__class__ is not str:
        return None
    shape = x._data.shape if x._trace is None else x._value.type.shape
    if not shape:
        return None
    ls = label_smoothing
    if ls.__class__ is float:
        ls = ls.hex()
    elif ls.__class__ is not int:
        return None
    floating = (t._type() if t._trace is None else t._value.type).dtype.kind == "f"
    clean = False if floating else _in_range(known_array(t), shape[0 if len(shape) == 1 else 1], ignore_index)
    return (weight is None, ignore_index, reduction, ls, clean, get_default_dtype())


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean") -> Tensor:
    """Negative log likelihood of class indices `target` under log-probabilities `input` ``(N, C, *)`` or ``(C,)``.

    With ``reduction="mean"`` the sum is divided by the total weight of the non-ignored targets;
    a target outside ``[0, C)`` that is not `ignore_index` raises IndexError (also when traced or
    compiled: at the call).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.nll_loss(tp.tensor([[-1.0, -2.0], [-3.0, -4.0]]), tp.tensor([0, 1]))
    tensor(2.5000)
    """
    if STATE.stack:
        key = _loss_key(input, target, weight, size_average, ignore_index, reduce, reduction, 0.0)
        if key is not None:
            return _NLL_MEMO(key, (input, target) if weight is None else (input, target, weight), input, target,
                             weight, size_average, ignore_index, reduce, reduction)
    return _nll_loss(input, target, weight, size_average, ignore_index, reduce, reduction)


def _nll_loss(input, target, weight, size_average, ignore_index, reduce, reduction):
    if size_average is not None or reduce is not None:
        raise TypeError("nll_loss: size_average and reduce are deprecated; use reduction=")
    x, t = as_tensor_operand(input), as_tensor_operand(target)
    arr = _known_targets(t)
    x, t, unbatched = _class_targets(x, t, "nll_loss")
    valid, wt = _class_weights(x, t, weight, ignore_index, "nll_loss", arr)
    pick = _pick_class(x, t)
    loss = ew.neg(pick if wt is None else ew.mul(pick, wt))
    return _reduce_weighted(loss, wt, reduction, unbatched, "nll_loss")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits `input` ``(N, C, *)`` / ``(C,)`` and class indices or class probabilities.

    Class-index targets support `weight`, `ignore_index` and `label_smoothing`; probability
    targets (a float tensor of the input's shape) support `weight` and `label_smoothing`.
    For class indices the loss is ``logsumexp(x) - x[target]``, the pick taken as a one-hot
    sum (no gather: the graph fuses, and its gradient is a select); a target outside ``[0, C)``
    that is not `ignore_index` raises IndexError, also when traced or compiled.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> logits = tp.tensor([[2.0, 0.0, 0.0]])
    >>> F.cross_entropy(logits, tp.tensor([0]))
    tensor(0.2395)
    """
    stack = STATE.stack
    if stack:
        key = _loss_key(input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing)
        if key is not None:
            if weight is None:
                out = _CE_HIT(stack[-1], key, input, target)
                if out is not None:
                    return out
            return _CE_MEMO(key, (input, target) if weight is None else (input, target, weight), input, target,
                            weight, size_average, ignore_index, reduce, reduction, label_smoothing)
    return _cross_entropy(input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing)


def _cross_entropy(input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing):
    if size_average is not None or reduce is not None:
        raise TypeError("cross_entropy: size_average and reduce are deprecated; use reduction=")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    x, t = as_tensor_operand(input), as_tensor_operand(target)
    if x.ndim == 0:
        raise ValueError("cross_entropy: input must have at least 1 dim (C,), got a 0-d tensor")
    cdim = 0 if x.ndim == 1 else 1
    C = x.shape[cdim]
    wshape = (C,) + (1,) * (x.ndim - cdim - 1)
    if t.dtype.is_floating_point:
        if tuple(t.shape) != tuple(x.shape):
            raise ValueError(f"cross_entropy: probability targets must have the input's shape {tuple(x.shape)}, "
                             f"got {tuple(t.shape)}")
        logp = _act.log_softmax(x, cdim)
        if label_smoothing > 0:
            t = ew.add(ew.mul(t, 1.0 - label_smoothing), label_smoothing / C)
        terms = ew.mul(logp, t)
        if weight is not None:
            terms = ew.mul(terms, _sh.reshape(weight, wshape))
        loss = ew.neg(_red.sum(terms, cdim))
        if reduction == "mean":
            return ew.div(_red.sum(loss), float(max(x.numel() // C, 1))) if x.numel() else _red.sum(loss)
        return _reduce_loss(loss, reduction, "cross_entropy")
    arr = _known_targets(t)
    x, t, unbatched = _class_targets(x, t, "cross_entropy")
    valid, wt = _class_weights(x, t, weight, ignore_index, "cross_entropy", arr)
    x = x if x.dtype.is_floating_point else convert(x, get_default_dtype())
    # logsumexp(x) - x[t] = log(sum(exp(x - m))) - (x - m)[t], with m the (constant) row maximum
    m = ebind(_STOP_GRADIENT, _red.amax(x, 1, keepdim=True))
    shifted = ew.sub(x, m)
    lse = ew.log(_red.sum(ew.exp(shifted), 1))
    loss = ew.sub(lse, _pick_class(shifted, t))
    if wt is not None:
        loss = ew.mul(loss, wt)
    nll = _reduce_weighted(loss, wt, reduction, unbatched, "cross_entropy")
    if label_smoothing == 0.0:
        return nll
    # the uniform part: -sum_c w_c logp_c = sum_c w_c (lse - shifted_c), zero where ignored
    lp = ew.sub(shifted, _sh.unsqueeze(lse, 1))
    terms = lp if weight is None else ew.mul(lp, _sh.reshape(convert(as_tensor_operand(weight), x.dtype),
                                                            (C,) + (1,) * (x.ndim - 2)))
    smooth = ew.neg(_red.sum(terms, 1))
    if valid is not None:
        smooth = _where0(valid, smooth)
    if reduction == "none":
        smooth = _sh.squeeze(smooth, 0) if unbatched else smooth
    elif reduction == "sum":
        smooth = _red.sum(smooth)
    else:
        smooth = ew.div(_red.sum(smooth), _count(smooth) if wt is None else _red.sum(wt))
    return ew.add(ew.mul(nll, 1.0 - label_smoothing), ew.mul(smooth, label_smoothing / C))


_CE_MEMO = memo_composite(_cross_entropy)
_NLL_MEMO = memo_composite(_nll_loss)
_CE_HIT = _CE_MEMO.hit

from ._norm_resize import (adaptive_avg_pool1d, adaptive_avg_pool2d, group_norm, instance_norm,  # noqa: E402
                           interpolate)
from ._attention import scaled_dot_product_attention  # noqa: E402
from ._functional_extra import (conv_transpose1d, conv_transpose2d, pixel_shuffle, pixel_unshuffle, glu,  # noqa
                                hardsigmoid, hardswish, mish, selu, celu, softsign, tanhshrink, hardshrink,
                                softshrink, threshold, softmin, prelu, smooth_l1_loss, huber_loss, kl_div,
                                cosine_similarity, pairwise_distance, dropout1d, dropout2d, gumbel_softmax, rms_norm)


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None) -> Tensor:
    """`interpolate` under its old name (as torch's deprecated ``F.upsample``).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.upsample(tp.tensor([[[1.0, 2.0]]]), size=4).tolist()
    [[[1.0, 1.0, 2.0, 2.0]]]
    """
    return interpolate(input, size, scale_factor, mode, align_corners)
