"""Indexing: basic (ints, slices, None, Ellipsis) as views, integer-array and
boolean-mask indexing via `take`, plus `gather`, `index_select`, `one_hot`
and the out-of-place `index_add`/`scatter_add`."""
from __future__ import annotations

import builtins

import numpy as np

from tensorplay.ir import dtypes, get_primitive

from .._tensor import Tensor
from .._trace import bind
from ._common import ebind, as_tensor_operand, broadcast_shapes, broadcast_to_shape, constant, convert, normalize_dim
from ._table import op
from .shape import flatten, movedim, narrow, permute, reshape, select, slice_dim


_BASIC_KEYS = frozenset({int, slice, tuple})
_SLICE, _RESHAPE = get_primitive("slice"), get_primitive("reshape")


def _index_tensor(item, op: str = "index") -> Tensor:
    idx = item if isinstance(item, Tensor) else Tensor._wrap(np.asarray(item))
    if idx.dtype.is_floating_point:
        raise IndexError(f"{op}: tensors used as indices must be long, int or bool tensors, got {idx.dtype.name}")
    return idx


def normalize_index(idx: Tensor, n: int, op: str, dim: int, extent: int | None = None) -> Tensor:
    """Map negative indices into range; eager indices out of range raise IndexError.

    A traced index out of range becomes ``-max(extent, n)``: `extent` is the size of the flat
    tensor that a linear offset built from this index addresses (gather, multi-index), so the
    offset stays negative and the `take`/`index_add` reading it raises IndexError at the call."""
    if idx._trace is None:
        arr = idx._data
        if arr.size and (arr.min() < -n or arr.max() >= n):
            bad = arr[(arr < -n) | (arr >= n)].flat[0]
            raise IndexError(f"{op}: index {bad} is out of bounds for dimension {dim} with size {n}")
        return Tensor._wrap(np.where(arr < 0, arr + n, arr).astype(np.int64))
    idx = convert(idx, dtypes.int64)
    zero = constant(0, dtypes.int64, idx.shape, (idx,))
    size = constant(n, dtypes.int64, idx.shape, (idx,))
    idx = bind("select", bind("lt", idx, zero), bind("add", idx, size), idx)
    inside = bind("and", bind("ge", idx, zero), bind("lt", idx, size))
    return bind("select", inside, idx, constant(-max(extent or n, n, 1), dtypes.int64, idx.shape, (idx,)))


def _expand_key(key, ndim: int):
    if not isinstance(key, tuple):
        key = (key,)
    # a bool mask consumes as many dims as it has
    def consumed(k):
        if k is None or k is Ellipsis:
            return 0
        if isinstance(k, (Tensor, np.ndarray)) and _dtype_of(k) is dtypes.bool_:
            return max(k.ndim, 1) if k.ndim else 0
        return 1
    n = builtins.sum(consumed(k) for k in key)
    if builtins.sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim} (got {n})")
    if Ellipsis in [k for k in key if not isinstance(k, (Tensor, np.ndarray, list))]:
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - n) + key[i + 1:]
    else:
        key = key + (slice(None),) * (ndim - n)
    return key


def _dtype_of(k):
    if isinstance(k, Tensor):
        return k.dtype
    return dtypes.from_numpy(np.asarray(k).dtype) if np.asarray(k).dtype != object else None


def _mask_to_indices(mask, op: str):
    m = mask if isinstance(mask, Tensor) else Tensor._wrap(np.asarray(mask))
    arr = m._concrete(f"{op} with a boolean mask (its result shape depends on the data)")
    return [Tensor._wrap(i.astype(np.int64)) for i in np.nonzero(arr)]


def _basic(x: Tensor, key) -> Tensor | None:
    """x[key] for an int, a slice, or a tuple of them (at most one per dim): one slice node, and
    one reshape dropping the int-indexed dims. None for any other key (the general path)."""
    keys = key if key.__class__ is tuple else (key,)
    shape = x._data.shape if x._trace is None else x._value.type.shape
    if len(keys) > len(shape):
        return None
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    out_shape = []
    for d, k in enumerate(keys):
        n = shape[d]
        if k.__class__ is int:
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {n}")
            k %= n
            starts[d], limits[d] = k, k + 1
        elif k.__class__ is slice:
            if k.step is not None and k.step <= 0:
                if k.step == 0:
                    raise ValueError("slice step cannot be zero")
                raise ValueError("step must be greater than zero")
            start, stop, step = k.indices(n)
            stop = builtins.max(start, stop)
            starts[d], limits[d], strides[d] = start, stop, step
            out_shape.append(-(-(stop - start) // step))
        else:
            return None
    out_shape.extend(shape[len(keys):])
    out = x
    if starts != [0] * len(shape) or limits != list(shape) or strides != [1] * len(shape):
        out = ebind(_SLICE, x, start_indices=tuple(starts), limit_indices=tuple(limits), strides=tuple(strides))
    if len(out_shape) != len(shape):
        out = ebind(_RESHAPE, out, shape=tuple(out_shape))
    return out


def getitem(x: Tensor, key) -> Tensor:
    """x[key] with PyTorch/numpy semantics; basic indexing returns views."""
    if key.__class__ in _BASIC_KEYS:
        out = _basic(x, key)
        if out is not None:
            return out
    if isinstance(key, list) and not builtins.any(isinstance(k, (list, Tensor, slice)) or k is None
                                                  or k is Ellipsis for k in key):
        key = (key,)  # x[[0, 2]] is integer-array indexing
    elif isinstance(key, list):
        key = (key,)
    key = _expand_key(key, x.ndim)
    # boolean masks become integer index arrays (eager only)
    flat = []
    for k in key:
        if isinstance(k, (Tensor, np.ndarray)) and _dtype_of(k) is dtypes.bool_ and k.ndim > 0:
            flat.extend(_mask_to_indices(k, "indexing"))
        elif isinstance(k, (bool, np.bool_)):
            raise IndexError("indexing with a Python bool is not supported")
        else:
            flat.append(k)
    out = x
    dim = 0
    adv: list[tuple[int, Tensor]] = []
    for k in flat:
        if k is None:
            out = bind("reshape", out, shape=out.shape[:dim] + (1,) + out.shape[dim:])
            dim += 1
        elif isinstance(k, slice):
            n = out.shape[dim]
            start, stop, step = k.indices(n)
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero")
            out = slice_dim(out, dim, start, builtins.max(start, stop), step)
            dim += 1
        elif isinstance(k, (int, np.integer)) or (isinstance(k, Tensor) and k.ndim == 0 and not k.is_traced
                                                   and not k.dtype.is_floating_point and not k.dtype.is_bool):
            i = int(k)
            n = out.shape[dim]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {n}")
            out = select(out, dim, i)
        elif isinstance(k, (Tensor, list, np.ndarray)):
            adv.append((dim, _index_tensor(k)))
            dim += 1
        else:
            raise TypeError(f"invalid index of type {type(k).__name__}")
    return _advanced(out, adv) if adv else out


def _advanced(x: Tensor, adv: list[tuple[int, Tensor]]) -> Tensor:
    """Integer-array indexing of dims `adv` (numpy placement rules)."""
    dims = [d for d, _ in adv]
    idx = [normalize_index(t, x.shape[d], "index", d, x.numel()) for d, t in adv]
    bshape = broadcast_shapes(*(tuple(t.shape) for t in idx), op="index")
    idx = [broadcast_to_shape(t, bshape, "index") for t in idx]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    rest = [d for d in range(x.ndim) if d not in dims]
    moved = permute(x, dims + rest)
    if len(idx) == 1:
        lin = idx[0]
        flat = moved
    else:
        sizes = [x.shape[d] for d in dims]
        lin = None
        stride = 1
        for t, n in zip(reversed(idx), reversed(sizes)):
            term = t if stride == 1 else bind("mul", t, constant(stride, dtypes.int64, t.shape, (t,)))
            lin = term if lin is None else bind("add", lin, term)
            stride *= n
        flat = reshape(moved, (stride,) + tuple(x.shape[d] for d in rest))
    out = bind("take", flat, lin, axis=0)
    if adjacent and dims[0] != 0:
        nb = len(bshape)
        out = movedim(out, tuple(range(nb)), tuple(range(dims[0], dims[0] + nb)))
    return out


def index_select(input, dim: int, index) -> Tensor:
    """Entries of `input` at `index` (1-d) along `dim`."""
    x = as_tensor_operand(input)
    d = normalize_dim(dim, x.ndim, "index_select")
    idx = _index_tensor(index, "index_select")
    if idx.ndim > 1:
        raise ValueError(f"index_select: index must be 0-d or 1-d, got shape {tuple(idx.shape)}")
    return bind("take", x, normalize_index(idx, x.shape[d], "index_select", d), axis=d)


def take(input, index) -> Tensor:
    """Entries of the flattened `input` at `index`."""
    x = flatten(as_tensor_operand(input))
    return bind("take", x, normalize_index(_index_tensor(index, "take"), x.shape[0], "take", 0), axis=0)


def gather(input, dim: int, index) -> Tensor:
    """out[i][j] = input[index[i][j]][j] for dim=0 (and so on): torch.gather."""
    x = as_tensor_operand(input)
    idx = _index_tensor(index, "gather")
    d = normalize_dim(dim, x.ndim, "gather")
    if idx.ndim != x.ndim:
        raise ValueError(f"gather: index {tuple(idx.shape)} must have as many dims as input {tuple(x.shape)}")
    for i, (a, b) in enumerate(zip(idx.shape, x.shape)):
        if i != d and a > b:
            raise ValueError(f"gather: index shape {tuple(idx.shape)} exceeds input shape {tuple(x.shape)} "
                             f"at dim {i}")
    idx = normalize_index(idx, x.shape[d], "gather", d, x.numel())
    lin = _linear_index(idx, d, x.shape)
    return reshape(bind("take", flatten(x), flatten(lin), axis=0), tuple(idx.shape))


def _linear_index(idx: Tensor, d: int, shape) -> Tensor:
    """Flat offsets into a contiguous tensor of `shape` for `idx` along dim d, iota elsewhere."""
    lin = None
    stride = 1
    for axis in reversed(range(len(shape))):
        coord = idx if axis == d else bind("iota", shape=tuple(idx.shape), dtype=dtypes.int64, dimension=axis)
        term = coord if stride == 1 else bind("mul", coord, constant(stride, dtypes.int64, idx.shape, (idx,)))
        lin = term if lin is None else bind("add", lin, term)
        stride *= shape[axis]
    return lin


def scatter_add(input, dim: int, index, src) -> Tensor:
    """Out-of-place torch.scatter_add: out[index[i][j]][j] += src[i][j] for dim=0."""
    x = as_tensor_operand(input)
    idx = normalize_index(_index_tensor(index, "scatter_add"), x.shape[normalize_dim(dim, x.ndim, "scatter_add")],
                          "scatter_add", dim, x.numel())
    d = normalize_dim(dim, x.ndim, "scatter_add")
    s = as_tensor_operand(src)
    for i in range(s.ndim):
        if s.shape[i] != idx.shape[i]:
            s = narrow(s, i, 0, idx.shape[i])
    lin = _linear_index(idx, d, x.shape)
    out = bind("index_add", flatten(x), flatten(lin), flatten(convert(s, x.dtype)), axis=0)
    return reshape(out, tuple(x.shape))


def index_add(input, dim: int, index, source, *, alpha=1) -> Tensor:
    """Out-of-place torch.index_add: adds `source` slices at `index` along `dim`."""
    x = as_tensor_operand(input)
    d = normalize_dim(dim, x.ndim, "index_add")
    idx = normalize_index(_index_tensor(index, "index_add"), x.shape[d], "index_add", d)
    src = convert(as_tensor_operand(source), x.dtype)
    if alpha != 1:
        from .elementwise import mul

        src = mul(src, alpha)
    return bind("index_add", x, idx, src, axis=d)


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dim."""
    t = _index_tensor(tensor, "one_hot")
    if num_classes < 0:
        num_classes = int(t._concrete("one_hot without num_classes").max()) + 1
    classes = bind("iota", shape=tuple(t.shape) + (num_classes,), dtype=t.dtype, dimension=t.ndim)
    tb = bind("broadcast_in_dim", t, shape=tuple(t.shape) + (num_classes,), broadcast_dimensions=tuple(range(t.ndim)))
    return convert(bind("eq", tb, classes), dtypes.int64)


# === the op table: (name, Tensor method?, in-place method?) =========================================
for _name, _method, _inplace in (
    ("index_select", True, False), ("take", True, False), ("gather", True, False), ("scatter_add", True, True),
    ("index_add", True, True), ("one_hot", False, False),
):
    op(_name, globals()[_name], method=_method, inplace=_inplace)
