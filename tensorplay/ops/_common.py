"""Shared helpers of the tensor ops: argument normalisation, promotion, broadcasting.

The helpers read a tensor's shape and dtype through `shape_of` / `dtype_of`
(plain tuples and `DType`s, no `Size` objects) and dispatch eagerly through
`ebind`, which memoises the primitive's type check per operand signature: the
common eager path costs a dict lookup instead of building `TensorType`s.
"""
from __future__ import annotations

import builtins
from math import prod
from typing import Sequence

import numpy as np

from tensorplay.ir import dtypes, get_primitive as _gp
from tensorplay.ir.dtypes import DType
from tensorplay.ir.dtypes import has_low_float as _has_low_float

from .._args import get_default_dtype, normalize_dim, normalize_dims, scalar_dtype, set_default_dtype  # noqa: F401
from .._tensor import Tensor
from .._state import STATE as _STATE
from .._trace import _append_known, bind, bind_general, bind_prim
from ..compiler import register_reset
from ._data import to_array

_NP2DT = dtypes.BY_NUMPY  # the same dict: bfloat16 joins it when ml_dtypes is loaded
_SCALARS = (bool, int, float, np.number, np.bool_)


# --- cheap metadata ------------------------------------------------------------------------------
def shape_of(t: Tensor) -> tuple[int, ...]:
    """`t`'s shape as a plain tuple (no `Size` construction)."""
    return t._data.shape if t._trace is None else t._value.type.shape


def dtype_of(t: Tensor) -> DType:
    """`t`'s dtype without going through `dtypes.from_numpy`."""
    return _NP2DT[t._data.dtype] if t._trace is None else t._value.type.dtype


# --- eager dispatch with a memoised type check ---------------------------------------------------
_CHECKED: dict = {}
_CHECKED_LIMIT = 4096
_EAGER_WRAP: list = []
from ..autograd._record import ACTIVE as _AUTOGRAD, maybe_record as _record_op  # noqa: E402


def _eager_wrap():
    """How `bind` wraps an eager result: `_views.eager_result` (view bookkeeping), imported on first use."""
    if not _EAGER_WRAP:
        from .._views import eager_result

        _EAGER_WRAP.append(eager_result)
    return _EAGER_WRAP[0]


def ebind(prim, *operands, **attrs):
    """`bind(prim, *operands, **attrs)` with the same semantics, faster at top level.

    The eager path of `bind` runs the primitive's shape rule on freshly built `TensorType`s before
    the numpy impl. Shape rules are pure functions of (operand shapes, dtypes, attrs), so once a
    signature has passed we only run the impl (and wrap its result as `bind` does). Anything
    unusual -- an active trace, a random primitive, a traced operand, unhashable (list) attrs, a
    first-seen signature -- goes through `bind` itself.
    """
    stack = _STATE.stack
    if stack:
        out = _append_known(stack[-1], prim, operands, attrs)  # the common traced op, in one frame
        return bind_general(prim, operands, attrs) if out is None else out
    if prim.random:
        return bind_prim(prim, operands, attrs)
    arrays = [t._data for t in operands]
    try:  # traced operands have no _data (AttributeError); list attrs are unhashable (TypeError)
        key = (prim, tuple([(a.shape, a.dtype) for a in arrays]), tuple(attrs.items()) if attrs else None)
        impl = _CHECKED.get(key)
    except (AttributeError, TypeError):
        return bind_prim(prim, operands, attrs)
    if impl is None:
        out = bind_prim(prim, operands, attrs)  # type check (raises the usual errors) + impl
        if len(_CHECKED) >= _CHECKED_LIMIT:
            _CHECKED.clear()
        # the numpy function itself, unless a 16-bit float needs the float32 round trip (ir.dtypes.widen)
        _CHECKED[key] = prim.impl if _has_low_float(arrays, attrs) else prim.full_width_impl
        return out
    out = (_EAGER_WRAP[0] if _EAGER_WRAP else _eager_wrap())(prim, attrs, operands, impl(*arrays, **attrs))
    if _AUTOGRAD[0]:
        _record_op(prim, attrs, operands, out)  # attrs passed the hashable key above: frozen already
    return out


# --- promotion -----------------------------------------------------------------------------------
_CAT = {d: dtypes.category(d) for d in dtypes.KNOWN}


def result_type(*operands, op: str | None = None) -> DType:
    """PyTorch's type promotion: dimensioned tensors, then 0-d tensors, then Python scalars."""
    dim = zero = None
    scalar_cat = -1
    for o in operands:
        if isinstance(o, Tensor):
            if o._trace is None:
                d, nd = _NP2DT[o._data.dtype], o._data.ndim
            else:
                d, nd = o._value.type.dtype, len(o._value.type.shape)
            if nd:
                dim = d if dim is None or dim is d else dtypes.promote(dim, d)
            else:
                zero = d if zero is None or zero is d else dtypes.promote(zero, d)
        else:
            try:
                cat = _CAT[scalar_dtype(o)]
            except TypeError:
                where = f"{op}: " if op else ""
                raise TypeError(f"{where}unsupported operand type {type(o).__name__} (expected a tensor or a "
                                f"Python number)") from None
            if cat > scalar_cat:
                scalar_cat = cat
    res = dim
    if zero is not None and (res is None or _CAT[zero] > _CAT[res]):
        res = zero
    if scalar_cat >= 0 and (res is None or scalar_cat > _CAT[res]):
        res = (dtypes.bool_, dtypes.int64, get_default_dtype())[scalar_cat]
    return res


def broadcast_shapes(*shapes, op: str = "broadcast") -> tuple[int, ...]:
    """The broadcast of `shapes` under numpy/PyTorch rules, or a ValueError naming `op`.

    >>> broadcast_shapes((64, 1), (10,))
    (64, 10)
    """
    try:
        hit = _BROADCASTS.get(shapes)
    except TypeError:  # an unhashable shape (a list): the rule below
        hit = None
    if hit is not None:
        return hit
    out = tuple([int(d) for d in _broadcast_rule(shapes, op)])
    if len(_BROADCASTS) >= 4096:
        _BROADCASTS.clear()
    try:
        _BROADCASTS[shapes] = out
    except TypeError:
        pass
    return out


_BROADCASTS: dict = {}  # shapes -> their broadcast (only shapes that broadcast are stored)
register_reset(_BROADCASTS.clear)


def _broadcast_rule(shapes, op: str) -> tuple[int, ...]:
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            d = s[i] if -i <= len(s) else 1
            if d != 1:
                if size not in (1, d):
                    raise ValueError(f"{op}: shapes {', '.join(str(tuple(x)) for x in shapes)} are not "
                                     f"broadcastable (dimension {i + ndim} has sizes {size} and {d})")
                size = d
        out.append(size)
    return tuple(out)


# --- constants, conversion, broadcasting ----------------------------------------------------------
def _top_trace(like):
    top = None
    for t in like:
        if isinstance(t, Tensor) and t._trace is not None and (top is None or t._trace.level > top.level):
            top = t._trace
    return top


def constant(value, dtype: DType, shape: Sequence[int] = (), like: Sequence = ()) -> Tensor:
    """A tensor filled with `value` (an operand's Python scalar): concrete unless one of `like` is
    traced. Under a plain transform the scalar is a graph input (`Trace.scalar_input`), under
    `tp.compile` a `full` node. Concrete: a fresh small array, or a read-only broadcast view."""
    top = _top_trace(like)
    shape = tuple(shape)
    if top is not None:
        if top.concrete:  # a plain transform: the scalar is data, an input, so the graph does not change with it
            return top.scalar_input(_py(value, dtype), dtype, shape)
        return top.emit(_FULL, (), {"shape": shape, "dtype": dtype, "value": _py(value, dtype)})
    if prod(shape) <= 4096:
        arr = np.empty(shape, dtype.np)
        arr.fill(value)
    else:
        arr = np.broadcast_to(np.array(value, dtype=dtype.np), shape)
    return Tensor._wrap(arr)


def fixed(value, dtype: DType, shape: Sequence[int] = (), like: Sequence = ()) -> Tensor:
    """A constant of an op's own definition (relu's 0, a mean's element count), not a user's scalar:
    a `full` node when one of `like` is traced, under a plain transform too (no graph input to
    pass at every call; the value cannot change without the graph changing), one per distinct
    value and shape in a trace (`Trace.fixed`), else as `constant`. Never hand it to the user:
    it may be shared.

    >>> fixed(0.0, dtypes.float32, (2,)).tolist()
    [0.0, 0.0]
    """
    top = _top_trace(like)
    if top is not None:
        return top.fixed(tuple(shape), dtype, _py(value, dtype))
    return constant(value, dtype, shape)


def filled(value, dtype: DType, shape: Sequence[int] = (), like: Sequence = ()) -> Tensor:
    """Like `constant`, but always a fresh, writable tensor (for results handed to the user)."""
    top = _top_trace(like)
    attrs = {"shape": tuple(shape), "dtype": dtype, "value": _py(value, dtype)}
    if top is not None:
        return top.emit(_FULL, (), attrs)
    return ebind(_FULL, **attrs)


def iota(shape: Sequence[int], dimension: int, dtype: DType, like: Sequence = ()) -> Tensor:
    """0, 1, 2, ... along `dimension`, broadcast to `shape`: a graph node when one of `like` is
    traced (so it fuses into its consumers instead of becoming a captured input), else concrete.

    >>> iota((2, 3), 1, dtypes.int64).tolist()
    [[0, 1, 2], [0, 1, 2]]
    """
    attrs = {"shape": tuple(shape), "dtype": dtype, "dimension": dimension}
    top = _top_trace(like)
    if top is not None:
        return top.emit(_IOTA, (), attrs)
    return ebind(_IOTA, **attrs)


def _py(value, dtype: DType):
    if dtype.is_bool:
        return bool(value)
    if dtype.is_integer:
        return int(value)
    return float(value)


def convert(t: Tensor, dtype: DType) -> Tensor:
    if dtype.__class__ is not DType:  # numpy dtypes, dtype names (see tensorplay._device)
        from .._device import as_dtype

        dtype = as_dtype(dtype, "dtype")
    return t if dtype_of(t) is dtype else ebind(_CONVERT, t, dtype=dtype)


def widened(*tensors):
    """The 16-bit float dtype of the first tensor if it is one (else None), and the tensors as
    float32 (None and non-16-bit tensors unchanged): composites that torch's CPU kernels compute in
    float32 with one rounding at the end (softmax, layer_norm, gelu) call this, then `convert` back.

    >>> import tensorplay as tp
    >>> low, (x,) = widened(tp.ones(2, dtype=tp.float16))
    >>> low, x.dtype
    (tensorplay.float16, tensorplay.float32)
    """
    first = tensors[0]
    low = dtype_of(first) if isinstance(first, Tensor) and dtypes.is_low_float(dtype_of(first)) else None
    if low is None:
        return None, tensors
    return low, tuple(t if not isinstance(t, Tensor) or not dtypes.is_low_float(dtype_of(t))
                      else ebind(_CONVERT, t, dtype=dtypes.float32) for t in tensors)


def copy(t: Tensor) -> Tensor:
    """A copy of `t` that does not share storage (for ops that PyTorch defines as copying)."""
    return ebind(_CONVERT, t, dtype=dtype_of(t))


def broadcast_to_shape(t: Tensor, shape: tuple[int, ...], op: str = "expand") -> Tensor:
    """`t` broadcast to `shape` (numpy rules) with a broadcast_in_dim, or `t` when already that shape."""
    shape = tuple(shape)
    tshape = shape_of(t)
    if tshape == shape:
        return t
    if len(tshape) > len(shape):
        raise ValueError(f"{op}: cannot broadcast shape {tshape} to {shape}")
    lead = len(shape) - len(tshape)
    for i, d in enumerate(tshape):
        if d not in (1, shape[lead + i]):
            raise ValueError(f"{op}: cannot broadcast shape {tshape} to {shape}")
    return ebind(_BROADCAST, t, shape=shape, broadcast_dimensions=tuple(range(lead, len(shape))))


def as_tensor_operand(x, dtype: DType | None = None) -> Tensor:
    """`x` as a Tensor: tensors pass through, numbers and arrays become concrete tensors."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _SCALARS):
        return Tensor._wrap(np.array(x, dtype=(dtype or scalar_dtype(x)).np))
    return Tensor._wrap(to_array(x, dtype))


def prepare(operands, op: str, dtype: DType | None = None):
    """Promote and broadcast `operands` (tensors or Python scalars) to a common dtype and shape."""
    if dtype is None:
        dtype = result_type(*operands, op=op)
    shape = None
    same = True
    for o in operands:
        if isinstance(o, Tensor):
            s = shape_of(o)
            if shape is None:
                shape = s
            elif s != shape:
                same = False
    if shape is None:
        shape = ()
    elif not same:
        shape = broadcast_shapes(*(shape_of(o) for o in operands if isinstance(o, Tensor)), op=op)
    out = []
    for o in operands:
        if isinstance(o, Tensor):
            if dtype_of(o) is not dtype:
                o = ebind(_CONVERT, o, dtype=dtype)
            out.append(o if same else broadcast_to_shape(o, shape, op))
        elif isinstance(o, _SCALARS):
            out.append(constant(o, dtype, shape, operands))
        else:
            raise TypeError(f"{op}: unsupported operand type {type(o).__name__}")
    return out


_FULL = _gp("full")
_IOTA = _gp("iota")
_CONVERT = _gp("convert_element_type")
_BROADCAST = _gp("broadcast_in_dim")
