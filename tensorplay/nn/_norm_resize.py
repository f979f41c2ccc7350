"""Group and instance normalization, adaptive average pooling and interpolation: composites over tensor ops.

Re-exported by `tensorplay.nn.functional`; every function works under every transform
(indices and weights are constants computed from the static shapes).
"""
from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from .._trace import bind, transform_stack
from ..ops import elementwise as ew
from ..ops import indexing as _idx
from ..ops import reduction as _red
from ..ops import shape as _sh
from ..ops._common import as_tensor_operand, convert
from ..ops.creation import tensor


def _normalized(x: Tensor, axes, eps: float) -> Tensor:
    """(x - mean) / sqrt(var + eps) over `axes` (biased variance)."""
    mean = _red.mean(x, axes, keepdim=True)
    centered = ew.sub(x, mean)
    var = _red.mean(ew.mul(centered, centered), axes, keepdim=True)
    return ew.mul(centered, ew.rsqrt(ew.add(var, eps)))


def _affine(out: Tensor, weight, bias, ndim: int) -> Tensor:
    bshape = (-1,) + (1,) * (ndim - 2)
    if weight is not None:
        out = ew.mul(out, _sh.reshape(weight, bshape))
    if bias is not None:
        out = ew.add(out, _sh.reshape(bias, bshape))
    return out


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Normalize ``(N, C, *)`` input over groups of ``C // num_groups`` channels (and all spatial dims).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.group_norm(tp.tensor([[[1.0], [3.0], [5.0], [5.0]]]), 2).flatten()
    tensor([-1.0000,  1.0000,  0.0000,  0.0000])
    """
    x = as_tensor_operand(input)
    if x.ndim < 2:
        raise ValueError(f"group_norm: expected an input of at least 2 dims (N, C, ...), got shape {tuple(x.shape)}")
    n, c = x.shape[0], x.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise ValueError(f"group_norm: Expected number of channels in input ({c}) to be divisible by num_groups "
                         f"({num_groups})")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (c,):
            raise ValueError(f"group_norm: {name} should have shape ({c},), got {tuple(t.shape)}")
    grouped = _sh.reshape(x, (n, num_groups, -1))
    out = _sh.reshape(_normalized(grouped, (2,), eps), tuple(x.shape))
    return _affine(out, weight, bias, x.ndim)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of each sample of ``(N, C, *)`` input over its spatial dims.

    With `use_input_stats` the per-instance statistics are used and, when given, the running
    statistics are updated in place with their average over the batch (the variance with
    Bessel's correction), as torch; otherwise the running statistics are used.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.instance_norm(tp.tensor([[[1.0, 3.0]], [[2.0, 2.0]]]))
    tensor([[[-1.0000,  1.0000]],
    <BLANKLINE>
            [[ 0.0000,  0.0000]]])
    """
    x = as_tensor_operand(input)
    if x.ndim < 3:
        raise ValueError(f"instance_norm: expected an input of at least 3 dims (N, C, L...), got shape "
                         f"{tuple(x.shape)}")
    c = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and tuple(t.shape) != (c,):
            raise ValueError(f"instance_norm: {name} should have shape ({c},), got {tuple(t.shape)}")
    axes = tuple(range(2, x.ndim))
    bshape = (1, c) + (1,) * (x.ndim - 2)
    if use_input_stats:
        count = math.prod(x.shape[2:])
        if count <= 1:
            raise ValueError(f"instance_norm: Expected more than 1 spatial element when training, got input size "
                             f"{list(x.shape)}")
        out = _normalized(x, axes, eps)
        if running_mean is not None or running_var is not None:
            if "vmap" in transform_stack():
                raise RuntimeError("instance_norm: updating running statistics in place is ambiguous under vmap; "
                                   "use track_running_stats=False or eval()")
            mean = _red.mean(x, axes)
            var = _red.mean(ew.mul(ew.sub(x, _sh.reshape(mean, tuple(x.shape[:2]) + (1,) * len(axes))),
                                   ew.sub(x, _sh.reshape(mean, tuple(x.shape[:2]) + (1,) * len(axes)))), axes)
            for buf, stat in ((running_mean, mean), (running_var, ew.mul(var, count / (count - 1)))):
                if buf is not None:
                    batch = bind("stop_gradient", _red.mean(stat, 0))
                    buf.copy_(convert(ew.add(ew.mul(buf, 1.0 - momentum), ew.mul(batch, momentum)), buf.dtype))
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: running_mean and running_var must be given when use_input_stats=False")
        mean = _sh.reshape(convert(running_mean, x.dtype), bshape)
        var = _sh.reshape(convert(running_var, x.dtype), bshape)
        out = ew.mul(ew.sub(x, mean), ew.rsqrt(ew.add(var, eps)))
    return _affine(out, weight, bias, x.ndim)


# --- adaptive pooling ------------------------------------------------------------------------------
def _sizes(output_size, n: int, spatial, op: str) -> tuple[int, ...]:
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * n
    if len(sizes) != n:
        raise ValueError(f"{op}: output_size must be an int or a tuple of {n}, got {output_size!r}")
    out = tuple(s if o is None else int(o) for o, s in zip(sizes, spatial))
    if any(o < 0 for o in out) or any(o == 0 and s for o, s in zip(out, spatial)):
        raise ValueError(f"{op}: output_size {output_size!r} must be positive")
    return out


def _adaptive_mean(x: Tensor, dim: int, out: int) -> Tensor:
    """Average bins ``[floor(i*L/out), ceil((i+1)*L/out))`` of dim `dim`, as torch's adaptive pooling."""
    size = x.shape[dim]
    if out == size:
        return x
    bins = []
    for i in range(out):
        start, end = (i * size) // out, -((-(i + 1) * size) // out)
        bins.append(_red.mean(_sh.narrow(x, dim, start, end - start), dim, keepdim=True))
    return _sh.cat(bins, dim)


def _adaptive_avg_pool(input, output_size, n: int, op: str) -> Tensor:
    x = as_tensor_operand(input)
    if x.ndim not in (n + 1, n + 2):
        raise ValueError(f"{op}: expected a {n + 1}-d or {n + 2}-d input, got shape {tuple(x.shape)}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating point input, got {x.dtype.name}")
    sizes = _sizes(output_size, n, tuple(x.shape[-n:]), op)
    for k, out in enumerate(sizes):
        x = _adaptive_mean(x, x.ndim - n + k, out)
    return x


def adaptive_avg_pool1d(input, output_size) -> Tensor:
    """Average pooling of ``(N, C, L)`` (or ``(C, L)``) input to length `output_size`, bins as torch's.

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.adaptive_avg_pool1d(tp.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]]), 2)
    tensor([[[2., 4.]]])
    """
    return _adaptive_avg_pool(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size) -> Tensor:
    """Average pooling of ``(N, C, H, W)`` (or ``(C, H, W)``) input to `output_size` (an int, a pair, None keeps).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.adaptive_avg_pool2d(tp.arange(16.0).reshape(1, 1, 4, 4), 1)
    tensor([[[[7.5000]]]])
    """
    return _adaptive_avg_pool(input, output_size, 2, "adaptive_avg_pool2d")


# --- interpolation -------------------------------------------------------------------------------
_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _output_sizes(x: Tensor, n: int, size, scale_factor, recompute: bool | None):
    """(output sizes, per-dim scales in torch's sense: the factor mapping output to input coordinates or None)."""
    spatial = tuple(x.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: only one of size or scale_factor should be defined")
    if size is not None:
        sizes = tuple(size) if isinstance(size, (tuple, list)) else (size,) * n
        if len(sizes) != n:
            raise ValueError(f"interpolate: size shape must match input shape. Input is {n}D, size is {len(sizes)}")
        return tuple(int(s) for s in sizes), (None,) * n
    scales = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * n
    if len(scales) != n:
        raise ValueError(f"interpolate: scale_factor shape must match input shape. Input is {n}D, scale_factor "
                         f"is {len(scales)}")
    sizes = tuple(int(math.floor(s * f)) for s, f in zip(spatial, scales))
    return sizes, (None,) * n if recompute else tuple(float(f) for f in scales)


def _scale(in_size: int, out_size: int, scale, align_corners: bool) -> float:
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _nearest_index(in_size: int, out_size: int, scale, exact: bool) -> np.ndarray:
    s = np.float32(_scale(in_size, out_size, scale, False))
    dst = np.arange(out_size, dtype=np.float32)
    src = np.floor((dst + np.float32(0.5)) * s) if exact else np.floor(dst * s)
    return np.minimum(src.astype(np.int64), in_size - 1)


def _linear_weights(in_size: int, out_size: int, scale, align_corners: bool, ftype):
    """(i0, i1, lambda0, lambda1) per output index, as torch's area_pixel_compute_source_index and
    guard_index_and_lambda, in the input's float type (torch's opmath type on CPU)."""
    if in_size == out_size:
        i = np.arange(out_size)
        return i, i, np.ones(out_size, ftype), np.zeros(out_size, ftype)
    s = ftype(_scale(in_size, out_size, scale, align_corners))
    dst = np.arange(out_size, dtype=ftype)
    src = dst * s if align_corners else np.maximum(s * (dst + ftype(0.5)) - ftype(0.5), ftype(0))
    i0 = np.minimum(src.astype(np.int64), in_size - 1)
    lam1 = np.clip(src - i0.astype(ftype), ftype(0), ftype(1)).astype(ftype)
    i1 = i0 + (i0 < in_size - 1)
    return i0, i1, (ftype(1) - lam1).astype(ftype), lam1


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resize the spatial dims of ``(N, C, *spatial)`` input, as torch's ``F.interpolate``.

    Modes: ``nearest``, ``nearest-exact``, ``linear`` (3-d input), ``bilinear`` (4-d),
    ``trilinear`` (5-d), each with torch's source-index rule (``align_corners`` for the
    linear modes), and ``area`` (adaptive average pooling).

    >>> import tensorplay as tp
    >>> import tensorplay.nn.functional as F
    >>> F.interpolate(tp.tensor([[[1.0, 2.0]]]), scale_factor=2)
    tensor([[[1., 1., 2., 2.]]])
    >>> F.interpolate(tp.tensor([[[1.0, 2.0]]]), size=3, mode="linear", align_corners=True)
    tensor([[[1.0000, 1.5000, 2.0000]]])
    """
    x = as_tensor_operand(input)
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if x.ndim < 3:
        raise ValueError(f"interpolate: expected an input of at least 3 dims (N, C, *spatial), got shape "
                         f"{tuple(x.shape)}")
    n = x.ndim - 2
    linear = mode in _LINEAR_MODES
    if linear and _LINEAR_MODES[mode] != n:
        raise ValueError(f"interpolate: mode {mode!r} expects a {_LINEAR_MODES[mode] + 2}-d input, got "
                         f"{x.ndim}-d input")
    if mode not in ("nearest", "nearest-exact", "area") and not linear:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (supported: nearest, nearest-exact, "
                                  f"linear, bilinear, trilinear, area)")
    if align_corners is not None and not linear:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if not x.dtype.is_floating_point:
        raise TypeError(f"interpolate: expected a floating point input, got {x.dtype.name}")
    sizes, scales = _output_sizes(x, n, size, scale_factor, recompute_scale_factor)
    if any(s <= 0 for s in sizes):
        raise ValueError(f"interpolate: output size {list(sizes)} must be positive (input {tuple(x.shape)})")
    if mode == "area":
        return _adaptive_avg_pool(x, sizes, n, "interpolate")
    for k, (out, scale) in enumerate(zip(sizes, scales)):
        dim, in_size = 2 + k, x.shape[2 + k]
        if not linear:
            index = _nearest_index(in_size, out, scale, mode == "nearest-exact")
            x = _idx.index_select(x, dim, tensor(index))
            continue
        i0, i1, lam0, lam1 = _linear_weights(in_size, out, scale, bool(align_corners), x.dtype.np.type)
        bshape = (out,) + (1,) * (x.ndim - dim - 1)
        lam0, lam1 = _sh.reshape(tensor(lam0), bshape), _sh.reshape(tensor(lam1), bshape)
        x = ew.add(ew.mul(_idx.index_select(x, dim, tensor(i0)), lam0),
                   ew.mul(_idx.index_select(x, dim, tensor(i1)), lam1))
    return x
