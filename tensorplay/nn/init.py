"""`tensorplay.nn.init`: in-place initialisation of parameters, following `torch.nn.init`.

Random initialisers draw from tensorplay's global generator (`tp.manual_seed`
makes them reproducible) and write into the tensor with ``copy_``; each
returns the tensor.

>>> import tensorplay as tp
>>> from tensorplay import nn
>>> w = tp.empty(3, 5)
>>> nn.init.uniform_(w, -0.1, 0.1) is w
True
>>> bool((w.abs() <= 0.1).all())
True
"""
from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from ..ops.creation import full, rand, randn

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "zeros_", "ones_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_"]


def _fill(tensor: Tensor, values) -> Tensor:
    if values.dtype is not tensor.dtype:
        values = values.to(tensor.dtype)
    from ..autograd import no_grad

    with no_grad():  # initialising a parameter is not recorded (torch's init runs under no_grad)
        return tensor.copy_(values)


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for `nonlinearity` (PyTorch's table).

    >>> from tensorplay.nn.init import calculate_gain
    >>> round(calculate_gain("tanh"), 4)
    1.6667
    """
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out): ``size(1) * receptive field`` and ``size(0) * receptive field``."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with samples from U(a, b)."""
    return _fill(tensor, rand(tuple(tensor.shape), dtype=_float(tensor), generator=generator) * (b - a) + a)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with samples from N(mean, std^2)."""
    return _fill(tensor, randn(tuple(tensor.shape), dtype=_float(tensor), generator=generator) * std + mean)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill with N(mean, std^2) samples redrawn until they fall in [a, b]."""
    if a >= b:
        raise ValueError(f"trunc_normal_: a ({a}) must be below b ({b})")
    shape = tuple(tensor.shape)
    out = np.asarray(randn(shape, dtype=_float(tensor), generator=generator) * std + mean, dtype=np.float64)
    for _ in range(1000):
        bad = (out < a) | (out > b)
        if not bad.any():
            break
        redraw = np.asarray(randn(int(bad.sum()), dtype=_float(tensor), generator=generator) * std + mean,
                            dtype=np.float64)
        out[bad] = redraw
    return _fill(tensor, Tensor._wrap(np.clip(out, a, b).astype(tensor.dtype.np)))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`."""
    return _fill(tensor, full(tuple(tensor.shape), val, dtype=tensor.dtype))


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return constant_(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, Tensor._wrap(np.eye(*tensor.shape, dtype=tensor.dtype.np)))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a {3,4,5}-D conv weight so the convolution is the identity on each group's channels."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    out_per = sizes[0] // groups
    min_dim = min(out_per, sizes[1])
    arr = np.zeros(tuple(sizes), dtype=tensor.dtype.np)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min_dim):
            arr[(g * out_per + d, d) + centre] = 1
    return _fill(tensor, Tensor._wrap(arr))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator=generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator=generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """U(-bound, bound) with ``bound = gain * sqrt(3 / fan)`` (He et al.).

    ``kaiming_uniform_(w, a=math.sqrt(5))`` is the default initialisation of Linear and Conv weights:
    a bound of ``1 / sqrt(fan_in)``.
    """
    if 0 in tuple(tensor.shape):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """N(0, std^2) with ``std = gain / sqrt(fan)``."""
    if 0 in tuple(tensor.shape):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator=generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix (QR of a Gaussian draw), scaled by `gain`."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = np.asarray(randn(rows, cols, dtype=_float(tensor), generator=generator), dtype=np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, Tensor._wrap((gain * q).reshape(tuple(tensor.shape)).astype(tensor.dtype.np)))


def _float(tensor: Tensor):
    from ..ops._common import get_default_dtype

    return tensor.dtype if tensor.dtype.is_floating_point else get_default_dtype()


# PyTorch's deprecated non-underscore spellings
uniform, normal, constant = uniform_, normal_, constant_
xavier_uniform, xavier_normal = xavier_uniform_, xavier_normal_
kaiming_uniform, kaiming_normal = kaiming_uniform_, kaiming_normal_


def default_weight_and_bias_(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default for Linear and ConvNd: kaiming_uniform_(a=sqrt(5)) on the weight and
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) on the bias."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        if fan_in > 0:
            bound = 1 / math.sqrt(fan_in)
            uniform_(bias, -bound, bound)
