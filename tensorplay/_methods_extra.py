"""Tensor methods torch programs use beyond the op table: ``type_as``, ``detach_``, ``is_cuda``/``is_cpu``,
``stride``, ``sum_to_size``, ``new_zeros``/``new_full``/... with torch's full signatures, and
``tp.multinomial`` (a random draw over the op layer).

>>> import tensorplay as tp
>>> x = tp.ones(2, 3)
>>> x.type_as(tp.tensor([1])).dtype, x.stride(), x.is_cuda
(tensorplay.int64, (3, 1), False)
>>> x.sum_to_size(1, 3).tolist()
[[2.0, 2.0, 2.0]]
"""
from __future__ import annotations

from ._tensor import Tensor

__all__ = ["attach", "multinomial"]


def type_as(self, other) -> Tensor:
    """This tensor in `other`'s dtype (itself when already so)."""
    return self if self.dtype is other.dtype else self.to(other.dtype)


def detach_(self) -> Tensor:
    """Detach in place: this tensor stops requiring grad and forgets its history; returns it.

    >>> import tensorplay as tp
    >>> y = tp.ones(2, requires_grad=True) * 2
    >>> y.detach_().requires_grad, y.grad_fn is None
    (False, True)
    """
    if self._base is not None and self._base.__dict__.get("_rg"):
        raise RuntimeError("Can't detach views in-place. Use detach() instead.")
    d = self.__dict__
    d.pop("_ag", None)
    d["_rg"] = False
    return self


def stride(self, dim: int | None = None):
    """The step in elements between neighbours along each dim (a C-order layout for traced tensors)."""
    from .ops._common import normalize_dim

    if self._trace is None and not self._meta:
        size = self._data.itemsize
        strides = tuple(s // size for s in self._data.strides)
    else:
        strides, acc = [], 1
        for n in reversed(tuple(self.shape)):
            strides.append(acc)
            acc *= max(n, 1)
        strides = tuple(reversed(strides))
    return strides if dim is None else strides[normalize_dim(dim, self.ndim, "stride")]


def sum_to_size(self, *size) -> Tensor:
    """Sum this tensor down to `size` (which must broadcast to this tensor's shape).

    >>> import tensorplay as tp
    >>> tp.ones(2, 3).sum_to_size(3).tolist()
    [2.0, 2.0, 2.0]
    """
    from .ops import reduction as red, shape as sh

    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    own = tuple(self.shape)
    lead = len(own) - len(shape)
    if lead < 0 or any(s not in (1, o) for s, o in zip(shape, own[lead:])):
        raise RuntimeError(f"size {list(shape)} is not expandable to size {list(own)}")
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and own[lead + i] != 1)
    out = red.sum(self, axes, keepdim=True) if axes else self
    return sh.reshape(out, shape)


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None) -> Tensor:
    """Draw `num_samples` category indices (int64) per row of non-negative weights `input` (1-d or 2-d).

    Without replacement the draw is the top `num_samples` of ``log(w) + Gumbel noise`` (each category
    at most once); with replacement each sample inverts the cumulative weights at a uniform number.
    The randomness comes from `tp.rand`, so `tp.manual_seed` makes it repeatable.

    >>> import tensorplay as tp
    >>> _ = tp.manual_seed(0)
    >>> tp.multinomial(tp.tensor([0.0, 1.0, 0.0]), 2, replacement=True).tolist()
    [1, 1]
    >>> sorted(tp.multinomial(tp.tensor([1.0, 1.0, 1.0]), 3).tolist())
    [0, 1, 2]
    """
    from tensorplay.ir import dtypes

    from .ops import cumulative, elementwise as ew, reduction as red, shape as sh, sorting
    from .ops._common import as_tensor_operand, convert
    from .ops.creation import rand

    w = input if isinstance(input, Tensor) else as_tensor_operand(input)
    if w.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape {tuple(w.shape)}")
    if not w.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got {w.dtype.name}")
    rows = w if w.ndim == 2 else sh.unsqueeze(w, 0)
    n_cat = rows.shape[1]
    k = int(num_samples)
    if k <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples, got {k}")
    if not replacement and k > n_cat:
        raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
                           f"replacement ({k} > {n_cat})")
    if not w.is_traced:
        if bool((w < 0).any()) or not bool(ew.isfinite(w).all()):
            raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
        if bool((red.sum(rows, 1) <= 0).any()):
            raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    if replacement:
        cdf = cumulative.cumsum(rows, 1)
        total = sh.narrow(cdf, 1, n_cat - 1, 1)
        u = ew.mul(rand((rows.shape[0], k), dtype=rows.dtype, generator=generator), total)
        # the first category whose cumulative weight exceeds u (zero-weight categories are never picked)
        idx = red.sum(convert(ew.le(sh.unsqueeze(cdf, 1), sh.unsqueeze(u, 2)), dtypes.int64), 2)
        idx = ew.clamp(idx, max=n_cat - 1)
    else:
        u = ew.clamp(rand(tuple(rows.shape), dtype=rows.dtype, generator=generator), min=1e-30)
        keys = ew.where(ew.gt(rows, 0.0), ew.sub(ew.log(rows), ew.log(ew.neg(ew.log(u)))), float("-inf"))
        idx = sorting.topk(keys, k, 1).indices
    return idx if w.ndim == 2 else sh.squeeze(idx, 0)


def _new(self, make, dtype, device, requires_grad: bool, op: str) -> Tensor:
    from ._device import check_device

    check_device(device, op)
    out = make(dtype or self.dtype)
    return out.requires_grad_(True) if requires_grad else out


def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False, layout=None,
              pin_memory: bool = False) -> Tensor:
    """Zeros of `size`, in this tensor's dtype unless `dtype` is given.

    >>> import tensorplay as tp
    >>> tp.ones(1, dtype=tp.float64).new_zeros(2).dtype
    tensorplay.float64
    """
    from .ops.creation import zeros

    return _new(self, lambda d: zeros(*size, dtype=d), dtype, device, requires_grad, "new_zeros")


def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False, layout=None,
             pin_memory: bool = False) -> Tensor:
    """Ones of `size`, in this tensor's dtype unless `dtype` is given."""
    from .ops.creation import ones

    return _new(self, lambda d: ones(*size, dtype=d), dtype, device, requires_grad, "new_ones")


def new_empty(self, *size, dtype=None, device=None, requires_grad: bool = False, layout=None,
              pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of `size` (zeros here), in this tensor's dtype unless `dtype` is given."""
    return new_zeros(self, *size, dtype=dtype, device=device, requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False, layout=None,
             pin_memory: bool = False) -> Tensor:
    """`fill_value` everywhere in a tensor of `size`, in this tensor's dtype unless `dtype` is given.

    >>> import tensorplay as tp
    >>> tp.zeros(1).new_full((2,), 7).tolist()
    [7.0, 7.0]
    """
    from .ops.creation import full

    return _new(self, lambda d: full(size, fill_value, dtype=d), dtype, device, requires_grad, "new_full")


def new_tensor(self, data, dtype=None, device=None, requires_grad: bool = False, layout=None,
               pin_memory: bool = False) -> Tensor:
    """A new tensor from `data` (copied), in this tensor's dtype unless `dtype` is given."""
    from .ops.creation import tensor

    return _new(self, lambda d: tensor(data, dtype=d), dtype, device, requires_grad, "new_tensor")


def attach() -> None:
    """Add the methods to `Tensor` (called by `tensorplay._methods`)."""
    Tensor.type_as = type_as
    Tensor.detach_ = detach_
    Tensor.stride = stride
    Tensor.sum_to_size = sum_to_size
    Tensor.multinomial = multinomial
    for fn in (new_zeros, new_ones, new_empty, new_full, new_tensor):  # with torch's device/requires_grad
        setattr(Tensor, fn.__name__, fn)
    Tensor.is_cuda = property(lambda self: False, doc="False: tensorplay tensors live on the CPU.")
    Tensor.is_cpu = property(lambda self: not self._meta, doc="True unless a meta tensor.")
