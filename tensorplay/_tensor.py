"""`Tensor` and `Size`: the user-facing array type.

A Tensor is either concrete (backed by a numpy array, possibly a view sharing
storage with another tensor, as in PyTorch) or symbolic (a value of an active
trace). Operations live in `tensorplay.ops`; the methods are attached in
`tensorplay._methods`.
"""
from __future__ import annotations

from math import prod

import numpy as np

from tensorplay.ir import TensorType, dtypes
from tensorplay.ir.dtypes import DType

from ._state import STATE as _STATE, TracingError


class Size(tuple):
    """The shape of a tensor: a tuple of ints, printed as ``tensorplay.Size(2, 3)``."""

    def __new__(cls, dims=()):
        return super().__new__(cls, (int(d) for d in dims))

    def __repr__(self) -> str:
        return f"tensorplay.Size({', '.join(str(d) for d in self)})"

    __str__ = __repr__

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return prod(self)

    def __getitem__(self, key):
        out = _tuple_getitem(self, key)
        return _tuple_new(Size, out) if isinstance(key, slice) else out  # our items are ints already


_tuple_new = tuple.__new__
_tuple_getitem = tuple.__getitem__
_SIZES: dict = {}  # shape tuple -> its Size (Sizes are immutable, so they are shared); see Tensor.shape
_SIZES_LIMIT = 4096


def _size_of(shape: tuple) -> "Size":
    """`Size(shape)`, memoised: built once per distinct shape (equal tuples give equal Sizes)."""
    s = _SIZES.get(shape)
    if s is None:
        s = Size(shape)
        if len(_SIZES) >= _SIZES_LIMIT:
            _SIZES.clear()
        _SIZES[shape] = s
    return s


class Tensor:
    """A multi-dimensional array with PyTorch's semantics (see the package docstring).

    >>> import tensorplay as tp
    >>> tp.zeros(3)
    tensor([0., 0., 0.])
    """

    __slots__ = ("_data", "_trace", "_value", "__weakref__", "__dict__")
    __array_priority__ = 1000  # numpy defers to our operators

    # View bookkeeping (see `tensorplay._views`); instances set these only when they are views.
    _base = None   # the tensor owning the storage this tensor views (None: not a view), as torch's ._base
    _steps = ()    # the view primitives, as (name, attrs) pairs, that derive this tensor from `_base`
    _stamp = 0     # traced roots: bumped on every in-place write; traced views: the root stamp they reflect
    _meta = False  # a meta tensor (``to("meta")``): shape and dtype only, see `tensorplay._meta`

    # `Tensor(...)` reads its arguments with `ops.creation.legacy_constructor_array`, which
    # `tensorplay._methods` attaches here (the ops import this module, so it cannot import them).
    _legacy_array = None

    def __init__(self, *args, dtype=None, device=None):
        # as torch.Tensor(...): Tensor(*sizes), Tensor(Size), Tensor(data) in the default float dtype
        self._data, self._trace, self._value = self._legacy_array(args, dtype, device), None, None
        if _STATE.stack:
            _note_local(self)

    # --- construction ---------------------------------------------------------------------------
    @classmethod
    def _wrap(cls, array: np.ndarray) -> "Tensor":
        t = object.__new__(Tensor)
        if not isinstance(array, np.ndarray):
            array = np.asarray(array)
        if array.dtype not in _SUPPORTED_NP:
            array = array.astype(dtypes.from_numpy(array.dtype).np)
        t._data, t._trace, t._value = array, None, None
        if _STATE.stack:
            _note_local(t)
        return t

    @classmethod
    def _symbolic(cls, trace, value) -> "Tensor":
        """A tensor of `trace` standing for the SSA `value` (for a view: its value when last synced,
        see `Trace.lift`; the type never changes)."""
        t = object.__new__(Tensor)
        t._data, t._trace, t._value = None, trace, value
        return t

    def _type(self) -> TensorType:
        if self._trace is not None:
            return self._value.type
        data = self._data
        return TensorType._trusted(data.shape, dtypes.from_numpy(data.dtype))  # numpy shapes are valid

    @property
    def is_traced(self) -> bool:
        """True for a symbolic tensor inside a transform or `tp.compile`."""
        return self._trace is not None

    # --- metadata -------------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return _size_of(self._value.type.shape if self._trace is not None else self._data.shape)

    def size(self, dim: int | None = None):
        """The shape, or the length of dimension `dim`."""
        if dim is None:
            return self.shape
        from ._args import normalize_dim

        return self.shape[normalize_dim(dim, self.ndim, "size")]

    @property
    def dtype(self) -> DType:
        return self._value.type.dtype if self._trace is not None else dtypes.from_numpy(self._data.dtype)

    @property
    def ndim(self) -> int:
        return len(self._value.type.shape if self._trace is not None else self._data.shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return prod(self.shape)

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def device(self):
        """``tp.device('cpu')``: tensorplay tensors live on the CPU (it compares equal to ``'cpu'``);
        ``device('meta')`` for a meta tensor."""
        from ._device import CPU, META

        return META if self._meta else CPU

    @property
    def is_meta(self) -> bool:
        """True for a meta tensor (shape and dtype, no data), as ``t.to("meta")`` makes."""
        return self._meta

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # --- conversion to Python / numpy -----------------------------------------------------------
    def _concrete(self, what: str) -> np.ndarray:
        """The value as a numpy array, for `what` (a conversion that needs one).

        Concrete tensors return their storage. A traced tensor's value is computed on demand
        when the outermost transform was called with concrete tensors (`Trace.concrete_array`);
        under `tp.compile`, or for a value batched under vmap, that raises a TracingError naming
        the transform. A concrete tensor written in place under an active trace is read through
        that trace (its numpy storage is stale until the write-back).
        """
        trace = self._trace
        if trace is not None:
            return trace.concrete_array(self, what)
        if self._meta:
            raise RuntimeError(f"{what}: a meta tensor (shape {tuple(self.shape)}) has no data to read")
        stack = _STATE.stack
        if stack:
            for tr in reversed(stack):
                if tr.wrote_storage_of(self):
                    return tr.concrete_array(self, what)
        return self._data

    def numpy(self) -> np.ndarray:
        """The underlying numpy array (shares memory, as torch's .numpy() does; a copy of the computed
        value for a traced tensor)."""
        arr = self._concrete(".numpy()")
        return arr if arr is self._data else np.array(arr, copy=True)

    def __array__(self, dtype=None, copy=None):
        arr = self._concrete("np.asarray(tensor)")
        if arr is not self._data:
            arr = np.array(arr, copy=True)
        return arr.astype(dtype) if dtype is not None else arr

    def item(self):
        """The value of a one-element tensor as a Python number (under a transform: a constant)."""
        return self._item_for(".item()", ValueError)

    def tolist(self):
        return self._concrete(".tolist()").tolist()

    def __bool__(self) -> bool:
        arr = self._concrete("bool(tensor)")
        if arr.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous "
                               f"(shape {tuple(arr.shape)})")
        return bool(arr.reshape(()))

    def __float__(self) -> float:
        return float(self._item_for("float(tensor)"))

    def __int__(self) -> int:
        return int(self._item_for("int(tensor)"))

    def __index__(self) -> int:
        if self.dtype.is_floating_point:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._item_for("operator.index(tensor)"))

    def _item_for(self, what: str, error=ValueError):
        arr = self._concrete(what)
        if arr.size != 1:
            raise error(f"{what}: only one-element tensors can be converted to Python scalars, "
                        f"got shape {tuple(arr.shape)}")
        return arr.reshape(()).item()

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        from ._repr import tensor_repr

        if self._meta:  # as torch prints one
            return f"tensor(..., device='meta', size={tuple(self.shape)})"
        return tensor_repr(self, _value_if_known(self))

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            arr = _value_if_known(self)
            if arr is not None:
                return format(arr.reshape(()).item(), spec)
        return repr(self)

    def __reduce__(self):
        return (_rebuild, (self._concrete("pickle"),))


def _rebuild(arr):
    return Tensor._wrap(arr)


def _note_local(t: Tensor) -> None:
    """Record a concrete tensor created while tracing as local to every active trace (see `_views.owner`)."""
    for trace in _STATE.stack:
        trace.views.mine("locals").add(id(t))


def _value_if_known(t: Tensor) -> np.ndarray | None:
    """`t`'s value when it can be had (concrete, or computable under a transform), else None."""
    try:
        return t._concrete("repr")
    except TracingError:
        return None


_SUPPORTED_NP = dtypes.BY_NUMPY  # keys: the numpy dtypes (bfloat16 once ml_dtypes is loaded)
