"""Shape and layout ops: reshape/view, permute/transpose, squeeze/unsqueeze,
expand, flatten, cat/stack, split/chunk, flip, narrow/select, movedim, repeat."""
from __future__ import annotations

import builtins
from math import prod
from typing import Sequence

import numpy as np

from tensorplay.ir import get_primitive as _gp

from .. import _views
from .._tensor import Tensor
from ._common import (as_tensor_operand, broadcast_to_shape, convert, copy, ebind, normalize_dim,
                      normalize_dims, result_type, shape_of)
from ._table import op

_RESHAPE, _TRANSPOSE, _SLICE, _CONCAT = _gp("reshape"), _gp("transpose"), _gp("slice"), _gp("concatenate")
_BROADCAST, _REV, _TAKE = _gp("broadcast_in_dim"), _gp("rev"), _gp("take")


def _arg(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor_operand(x)


def _fresh(out: Tensor, *sources: Tensor) -> Tensor:
    """`out`, copied if it may share memory with a source (for ops that PyTorch defines as copying).

    Eagerly numpy knows; under a trace `out` shares storage exactly when it is a view (has a base),
    so a write into it would reach the source."""
    if out._trace is not None or any(s._trace is not None for s in sources):
        return copy(out) if out._base is not None else out
    # an empty result shares no memory, but may still be a read-only view (of an expanded source)
    if not out._data.flags.writeable or any(np.may_share_memory(out._data, s._data) for s in sources):
        return copy(out)
    return out


def _shape_arg(shape, op: str = "shape") -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer, Tensor)):
            raise TypeError(f"{op}: expected a sequence of ints, got {type(s).__name__} in {list(shape)}")
        out.append(int(s))
    return tuple(out)


def infer_shape(shape: Sequence[int], numel: int, op: str, src=None) -> tuple[int, ...]:
    """Resolve one -1 entry of `shape` against `numel` elements."""
    shape = tuple(shape)
    if shape.count(-1) > 1:
        raise ValueError(f"{op}: only one dimension can be inferred, got shape {list(shape)}")
    if any(s < -1 for s in shape):
        raise ValueError(f"{op}: invalid shape dimension in {list(shape)}")
    known = prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise ValueError(f"{op}: shape {list(shape)} is invalid for input of size {numel}"
                             + (f" (shape {tuple(src)})" if src is not None else ""))
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise ValueError(f"{op}: shape {list(shape)} is invalid for input of size {numel}"
                         + (f" (shape {tuple(src)})" if src is not None else ""))
    return shape


def reshape(input, *shape) -> Tensor:
    """The same elements in a new shape (one dim may be -1); a view when the layout allows."""
    x = _arg(input)
    old = shape_of(x)
    new = infer_shape(_shape_arg(shape, "reshape"), prod(old), "reshape", old)
    return x if new == tuple(old) else ebind(_RESHAPE, x, shape=new)


def view(input, *shape) -> Tensor:
    """Like `reshape` (our tensors always allow it)."""
    x = as_tensor_operand(input)
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        return convert(x, shape[0])  # view(dtype) is approximated by a value conversion
    return reshape(x, *shape)


def flatten(input, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims start_dim..end_dim into one."""
    x = _arg(input)
    shape = tuple(shape_of(x))
    if not shape:
        normalize_dim(start_dim, 0, "flatten")
        normalize_dim(end_dim, 0, "flatten")
        return reshape(x, 1)
    s = normalize_dim(start_dim, len(shape), "flatten")
    e = normalize_dim(end_dim, len(shape), "flatten")
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} (shape {shape})")
    return reshape(x, shape[:s] + (prod(shape[s:e + 1]),) + shape[e + 1:])


def unflatten(input, dim: int, sizes) -> Tensor:
    """Split dim `dim` into `sizes`."""
    x = _arg(input)
    shape = tuple(shape_of(x))
    d = normalize_dim(dim, len(shape), "unflatten")
    sizes = infer_shape(_shape_arg((tuple(sizes),), "unflatten"), shape[d], "unflatten", shape)
    return reshape(x, shape[:d] + sizes + shape[d + 1:])


def permute(input, *dims) -> Tensor:
    """Reorder the dims: result dim i is input dim dims[i]."""
    x = _arg(input)
    dims = _shape_arg(dims, "permute")
    nd = len(shape_of(x))
    if len(dims) != nd:
        raise ValueError(f"permute: number of dims {len(dims)} does not match the tensor's {nd} dims "
                         f"(shape {tuple(shape_of(x))})")
    perm = normalize_dims(dims, nd, "permute")
    return x if perm == tuple(range(nd)) else ebind(_TRANSPOSE, x, permutation=perm)


def transpose(input, dim0: int, dim1: int) -> Tensor:
    """Swap two dims."""
    x = _arg(input)
    nd = len(shape_of(x))
    a, b = normalize_dim(dim0, nd, "transpose"), normalize_dim(dim1, nd, "transpose")
    if nd == 0:
        return x
    perm = list(range(nd))
    perm[a], perm[b] = perm[b], perm[a]
    return permute(x, perm)


swapaxes = swapdims = transpose


def t(input) -> Tensor:
    """Transpose of a tensor with at most 2 dims."""
    x = _arg(input)
    nd = len(shape_of(x))
    if nd > 2:
        raise ValueError(f"t() expects a tensor with <= 2 dimensions, but got {nd}D (shape {tuple(shape_of(x))})")
    return transpose(x, 0, 1) if nd == 2 else x


def movedim(input, source, destination) -> Tensor:
    """Move dims `source` to positions `destination`."""
    x = _arg(input)
    nd = len(shape_of(x))
    src = normalize_dims(source, nd, "movedim")
    dst = normalize_dims(destination, nd, "movedim")
    if len(src) != len(dst):
        raise ValueError(f"movedim: source {list(src)} and destination {list(dst)} must have the same number "
                         f"of dims")
    if nd == 0:
        return x
    order = [d for d in range(nd) if d not in src]
    perm = [None] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(order)
    perm = [p if p is not None else next(it) for p in perm]
    return permute(x, perm)


moveaxis = movedim


def squeeze(input, dim=None) -> Tensor:
    """Drop size-1 dims (all, or those in `dim`)."""
    x = _arg(input)
    shape = shape_of(x)
    if dim is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        axes = [a for a in normalize_dims(dim, len(shape), "squeeze") if shape and shape[a] == 1]
    return reshape(x, tuple(d for i, d in enumerate(shape) if i not in axes))


def unsqueeze(input, dim: int) -> Tensor:
    """Insert a size-1 dim at `dim`."""
    x = _arg(input)
    shape = tuple(shape_of(x))
    d = normalize_dim(dim, len(shape) + 1, "unsqueeze")
    return ebind(_RESHAPE, x, shape=shape[:d] + (1,) + shape[d:])


def expand(input, *sizes) -> Tensor:
    """Broadcast to `sizes` (-1 keeps a dim) without copying."""
    x = _arg(input)
    xs = shape_of(x)
    sizes = _shape_arg(sizes, "expand")
    if len(sizes) < len(xs):
        raise ValueError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
                         f"the number of dimensions in the tensor ({len(xs)}, shape {tuple(xs)})")
    lead = len(sizes) - len(xs)
    shape = tuple(xs[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    if any(s < 0 for s in shape):
        raise ValueError(f"expand: -1 is not allowed in a leading, non-existing dimension ({list(sizes)})")
    return broadcast_to_shape(x, shape, "expand")


def broadcast_to(input, shape) -> Tensor:
    """Broadcast to `shape` with numpy rules."""
    return expand(input, tuple(shape))


def expand_as(input, other) -> Tensor:
    """`input` expanded to `other`'s shape (``Tensor.expand_as``)."""
    return expand(input, tuple(other.shape))


def broadcast_tensors(*tensors):
    """Broadcast all tensors to their common shape."""
    from ._common import broadcast_shapes

    ts = [as_tensor_operand(t) for t in tensors]
    shape = broadcast_shapes(*(tuple(t.shape) for t in ts), op="broadcast_tensors")
    return tuple(broadcast_to_shape(t, shape, "broadcast_tensors") for t in ts)


def cat(tensors, dim: int = 0) -> Tensor:
    """Concatenate along an existing dim (dtypes promote)."""
    if isinstance(tensors, Tensor):
        raise TypeError("cat: expected a sequence of tensors, got a single Tensor")
    ts = [_arg(t) for t in tensors]
    if not ts:
        raise ValueError("cat: expected a non-empty list of tensors")
    dtype = result_type(*[t for t in ts if shape_of(t)] or ts)  # promotion over every input
    # PyTorch skips 1-d empty tensors in cat
    nonempty = [t for t in ts if tuple(shape_of(t)) != (0,)] or ts[:1]
    if any(not shape_of(t) for t in ts):
        raise ValueError(f"cat: zero-dimensional tensor cannot be concatenated (shapes "
                         f"{[tuple(shape_of(x)) for x in ts]})")
    ref = shape_of(nonempty[0])
    d = normalize_dim(dim, len(ref), "cat")
    for t in nonempty[1:]:
        s = shape_of(t)
        if len(s) != len(ref) or any(a != b for i, (a, b) in enumerate(zip(s, ref)) if i != d):
            raise ValueError(f"cat: sizes of tensors must match except in dimension {d}; got shapes "
                             f"{[tuple(shape_of(x)) for x in ts]}")
    ts = [convert(t, dtype) for t in nonempty]
    if len(ts) == 1:
        return copy(ts[0]) if ts[0] is nonempty[0] else ts[0]
    return ebind(_CONCAT, *ts, axis=d)


concatenate = concat = cat


def stack(tensors, dim: int = 0) -> Tensor:
    """Join tensors of equal shape along a new dim."""
    if isinstance(tensors, Tensor):
        raise TypeError("stack: expected a sequence of tensors, got a single Tensor")
    ts = [_arg(t) for t in tensors]
    if not ts:
        raise ValueError("stack: expected a non-empty list of tensors")
    shapes = {tuple(shape_of(t)) for t in ts}
    if len(shapes) != 1:
        raise ValueError(f"stack: expects each tensor to be equal size, but got shapes "
                         f"{[tuple(shape_of(t)) for t in ts]}")
    d = normalize_dim(dim, len(shape_of(ts[0])) + 1, "stack")
    return cat([unsqueeze(t, d) for t in ts], d)


def hstack(tensors):
    """Concatenate along dim 1 (dim 0 for 1-d tensors); 0-d tensors count as 1-d."""
    ts = [_arg(t) for t in tensors]
    if not ts:
        raise ValueError("hstack: expected a non-empty list of tensors")
    ts = [reshape(t, 1) if not shape_of(t) else t for t in ts]
    return cat(ts, 0 if len(shape_of(ts[0])) == 1 else 1)


def vstack(tensors):
    """Concatenate along dim 0 after viewing 0-d and 1-d tensors as rows."""
    ts = [_arg(t) for t in tensors]
    if not ts:
        raise ValueError("vstack: expected a non-empty list of tensors")
    return cat([t if len(shape_of(t)) > 1 else reshape(t, 1, -1) for t in ts], 0)


def narrow(input, dim: int, start: int, length: int) -> Tensor:
    """Elements start..start+length of dim `dim` (a view)."""
    x = _arg(input)
    shape = shape_of(x)
    if not shape:
        raise IndexError("narrow: cannot be applied to a 0-dim tensor")
    d = normalize_dim(dim, len(shape), "narrow")
    start, length = int(start), int(length)
    n = shape[d]
    if start < 0:
        start += n
    if not (0 <= start <= n and 0 <= length and start + length <= n):
        raise IndexError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({n}) "
                         f"of shape {tuple(shape)}")
    return slice_dim(x, d, start, start + length, 1)


def slice_dim(x: Tensor, d: int, start: int, stop: int, step: int) -> Tensor:
    """x[..., start:stop:step, ...] on dim d with normalised bounds."""
    shape = shape_of(x)
    if start == 0 and stop == shape[d] and step == 1:
        return x
    nd = len(shape)
    starts = [0] * nd
    limits = list(shape)
    strides = [1] * nd
    starts[d], limits[d], strides[d] = start, builtins.max(stop, start), step
    return ebind(_SLICE, x, start_indices=tuple(starts), limit_indices=tuple(limits), strides=tuple(strides))


def select(input, dim: int, index: int) -> Tensor:
    """The slice at `index` along `dim`, with that dim removed."""
    x = _arg(input)
    shape = tuple(shape_of(x))
    if not shape:
        raise IndexError("select: cannot be applied to a 0-dim tensor")
    d = normalize_dim(dim, len(shape), "select")
    n = shape[d]
    index = int(index)
    if not -n <= index < n:
        raise IndexError(f"select: index {index} is out of bounds for dimension {d} with size {n}")
    index %= n
    part = slice_dim(x, d, index, index + 1, 1)
    return ebind(_RESHAPE, part, shape=shape[:d] + shape[d + 1:])


def split(tensor, split_size_or_sections, dim: int = 0):
    """Split into chunks of `split_size` (last may be smaller) or of the given section sizes."""
    x = _arg(tensor)
    shape = tuple(shape_of(x))
    if not shape:
        raise ValueError("split: cannot split a 0-dim tensor")
    d = normalize_dim(dim, len(shape), "split")
    n = shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step < 0 or (step == 0 and n):
            raise ValueError(f"split: split_size must be positive, got {step} (shape {shape}, dim {d})")
        sizes = [builtins.min(step, n - i) for i in range(0, n, step)] if n else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if any(s < 0 for s in sizes) or builtins.sum(sizes) != n:
            raise ValueError(f"split: sections {sizes} do not sum to the size {n} of dim {d} of {shape}")
    out, start = [], 0
    for s in sizes:
        out.append(slice_dim(x, d, start, start + s, 1))
        start += s
    return tuple(out)


def chunk(input, chunks: int, dim: int = 0):
    """Split into `chunks` nearly equal pieces (the last may be smaller, as in PyTorch)."""
    x = _arg(input)
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    shape = shape_of(x)
    if not shape:
        raise ValueError("chunk: cannot chunk a 0-dim tensor")
    d = normalize_dim(dim, len(shape), "chunk")
    n = shape[d]
    if n == 0:  # PyTorch returns `chunks` empty pieces
        return split(x, [0] * chunks, d)
    return split(x, -(-n // chunks), d)


def tensor_split(input, indices_or_sections, dim: int = 0):
    """Split into `sections` pieces whose sizes differ by at most one, or at the given indices."""
    x = _arg(input)
    shape = shape_of(x)
    if not shape:
        raise ValueError("tensor_split: expected at least a 1-dimensional tensor")
    d = normalize_dim(dim, len(shape), "tensor_split")
    n = shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        ios = ios.item() if len(shape_of(ios)) == 0 else ios.tolist()
    if isinstance(ios, (int, np.integer)):
        sections = int(ios)
        if sections <= 0:
            raise ValueError(f"tensor_split: number of sections must be larger than 0, got {sections}")
        q, r = divmod(n, sections)
        return split(x, [q + 1] * r + [q] * (sections - r), d)
    out, prev = [], 0
    for i in [int(i) for i in ios] + [n]:  # input[prev:i] with Python's slicing rules
        lo, hi = (builtins.min(builtins.max(v + n if v < 0 else v, 0), n) for v in (prev, i))
        out.append(slice_dim(x, d, lo, builtins.max(lo, hi), 1))
        prev = i
    return tuple(out)


def unbind(input, dim: int = 0):
    """All slices along `dim`, with that dim removed."""
    x = _arg(input)
    shape = shape_of(x)
    if not shape:
        raise ValueError("unbind: dimension specified as 0 but tensor has no dimensions")
    d = normalize_dim(dim, len(shape), "unbind")
    return tuple(select(x, d, i) for i in range(shape[d]))


def flip(input, dims) -> Tensor:
    """Reverse the order of elements along `dims`."""
    x = _arg(input)
    axes = normalize_dims(dims, len(shape_of(x)), "flip")
    if not axes:
        return copy(x)
    return _fresh(ebind(_REV, x, axes=tuple(sorted(axes))), x)


def roll(input, shifts, dims=None) -> Tensor:
    """Rotate elements along `dims` by `shifts`."""
    x = _arg(input)
    shape = tuple(shape_of(x))
    shifts = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise ValueError(f"roll: shifts {list(shifts)} need matching dims when dims is None")
        return reshape(roll(flatten(x), shifts, 0), shape)
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if len(shifts) != len(dims):
        raise ValueError(f"roll: shifts and dimensions must align, got shifts {list(shifts)} and dims {list(dims)}")
    src = x
    for s, d in zip(shifts, dims):
        d = normalize_dim(d, len(shape), "roll")
        if not shape:
            continue
        n = shape[d]
        if n == 0:
            continue
        s = int(s) % n
        if s:
            x = ebind(_CONCAT, slice_dim(x, d, n - s, n, 1), slice_dim(x, d, 0, n - s, 1), axis=d)
    return copy(x) if x is src else x


def repeat(input, *sizes) -> Tensor:
    """Tile the tensor `sizes[i]` times along each dim (like torch.Tensor.repeat)."""
    src = _arg(input)
    xs = tuple(shape_of(src))
    sizes = _shape_arg(sizes, "repeat")
    if len(sizes) < len(xs):
        raise ValueError(f"repeat: number of repeat dims ({len(sizes)}) can not be smaller than number of tensor "
                         f"dims ({len(xs)}, shape {xs})")
    if any(r < 0 for r in sizes):
        raise ValueError(f"repeat: repeats must be non-negative, got {list(sizes)}")
    full = (1,) * (len(sizes) - len(xs)) + xs
    x = reshape(src, full)
    inter = []
    for r, d in zip(sizes, full):
        inter += [r, d]
    y = ebind(_BROADCAST, x, shape=tuple(inter), broadcast_dimensions=tuple(range(1, 2 * len(full), 2)))
    return _fresh(reshape(y, tuple(r * d for r, d in zip(sizes, full))), src)


def tile(input, dims) -> Tensor:
    """`input` repeated `dims[i]` times along each dim; missing leading dims count as 1 (like torch.tile)."""
    x = _arg(input)
    dims = _shape_arg((tuple(dims) if not isinstance(dims, (int, np.integer)) else (dims,),), "tile")
    return repeat(x, (1,) * (len(shape_of(x)) - len(dims)) + dims)


def repeat_interleave(input, repeats, dim=None, *, output_size=None) -> Tensor:
    """Repeat each element `repeats` times along `dim` (flattened when None); `repeats` may be an int
    or a 1-d tensor/list of per-element counts (concrete values: the result shape depends on them)."""
    src = _arg(input)
    x = src
    if dim is None:
        x, dim = flatten(x), 0
    xs = tuple(shape_of(x))
    d = normalize_dim(dim, len(xs), "repeat_interleave")
    if not xs:
        x, xs = reshape(x, 1), (1,)
    if isinstance(repeats, (Tensor, list, tuple, np.ndarray)):
        r = np.asarray(repeats._concrete("repeat_interleave with tensor repeats") if isinstance(repeats, Tensor)
                       else repeats)
        if r.dtype.kind not in "iub":
            raise TypeError(f"repeat_interleave: repeats must be integers, got dtype {r.dtype}")
        if r.ndim > 1:
            raise ValueError(f"repeat_interleave: repeats must be 0-d or 1-d, got shape {r.shape}")
        if r.size == 1:
            repeats = int(r.reshape(()))
        else:
            if r.shape[0] != xs[d]:
                raise ValueError(f"repeat_interleave: repeats of shape {r.shape} must match dim {d} of input "
                                 f"shape {xs}")
            if (r < 0).any():
                raise ValueError("repeat_interleave: repeats can not be negative")
            idx = np.repeat(np.arange(xs[d], dtype=np.int64), r.astype(np.int64))
            return ebind(_TAKE, x, Tensor._wrap(idx), axis=d)
    repeats = int(repeats)
    if repeats < 0:
        raise ValueError(f"repeat_interleave: repeats can not be negative, got {repeats}")
    shape = xs[:d + 1] + (repeats,) + xs[d + 1:]
    y = ebind(_BROADCAST, x, shape=shape, broadcast_dimensions=tuple(i if i <= d else i + 1 for i in range(len(xs))))
    return _fresh(reshape(y, xs[:d] + (xs[d] * repeats,) + xs[d + 1:]), src)


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, as a new last dim: a strided slice of the merged plane.

    When the two dims are adjacent (any 2-d tensor, or the usual (-2, -1) of a batch) the plane is
    merged by a reshape and the result is a view of a contiguous input, as in PyTorch.
    """
    x = _arg(input)
    shape = tuple(shape_of(x))
    nd = len(shape)
    if nd < 2:
        raise ValueError(f"diagonal: expected a tensor with at least 2 dims, got shape {shape}")
    a, b = normalize_dim(dim1, nd, "diagonal"), normalize_dim(dim2, nd, "diagonal")
    if a == b:
        raise ValueError(f"diagonal: dimensions cannot be identical {dim1}, {dim2} (shape {shape})")
    if a > b:  # diagonal(x, k, a, b) == diagonal(x, -k, b, a)
        a, b, offset = b, a, -offset
    if b != a + 1:
        x = movedim(x, (a, b), (-2, -1))
        shape = tuple(shape_of(x))
        a, b = nd - 2, nd - 1
    n, m = shape[a], shape[b]
    rows = builtins.max(0, builtins.min(n, m - offset) if offset >= 0 else builtins.min(n + offset, m))
    flat = reshape(x, shape[:a] + (n * m,) + shape[b + 1:])
    start = offset if offset >= 0 else -offset * m
    if rows == 0:
        diag = slice_dim(flat, a, 0, 0, 1)
    else:
        diag = slice_dim(flat, a, start, start + (rows - 1) * (m + 1) + 1, m + 1)
    return movedim(diag, a, -1)


# === Tensor methods that differ from their functions ================================================
def view_method(self, *shape) -> Tensor:
    """``Tensor.view``: a view with a new shape; RuntimeError when the strides do not allow one (use reshape).

    >>> import tensorplay as tp
    >>> x = tp.zeros(2, 3)
    >>> x.view(3, 2)._base is x
    True
    """
    out = view(self, *shape)
    empty = out.numel() == 0  # no elements, so any strides do (as torch)
    if out is not self and out.dtype is self.dtype and not empty and not _views.is_view_of(out, self):
        raise RuntimeError(f"view size is not compatible with input tensor's size and stride (at least one "
                           f"dimension spans across two contiguous subspaces): viewing shape {tuple(self.shape)} "
                           f"as {tuple(out.shape)}. Use .reshape(...) instead.")
    return out


def view_as(self, other) -> Tensor:
    """``Tensor.view_as``: a view of `self` with `other`'s shape."""
    return view_method(self, tuple(other.shape))


def reshape_as(self, other) -> Tensor:
    """``Tensor.reshape_as``: `self` reshaped to `other`'s shape."""
    return reshape(self, tuple(other.shape))


def diagonal_method(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``Tensor.diagonal``: the diagonal of the (dim1, dim2) planes as a new last dim, always a view (as torch).

    >>> import tensorplay as tp
    >>> x = tp.arange(4.0).reshape(2, 2)
    >>> x.diagonal(), x.diagonal()._base is x
    (tensor([0., 3.]), True)
    """
    a, b = normalize_dim(dim1, self.ndim, "diagonal"), normalize_dim(dim2, self.ndim, "diagonal")
    if a == b:
        raise ValueError(f"diagonal: dimensions cannot be identical {dim1}, {dim2}")
    return _views.make_diagonal(self, int(offset), a, b)


# === the op table ===================================================================================
# (name, Tensor method: True (the function), False, or the method itself): each row is a `tp.` function
# and, as flagged, `Tensor.<name>` (tensorplay/ops/_table.py). Rows with export=False are methods only.
for _name, _method in (
    ("reshape", True), ("view", view_method), ("flatten", True), ("unflatten", True), ("permute", True),
    ("transpose", True), ("swapaxes", True), ("swapdims", False), ("t", True), ("movedim", True),
    ("moveaxis", False), ("squeeze", True), ("unsqueeze", True), ("expand", True), ("broadcast_to", True),
    ("broadcast_tensors", False), ("cat", False), ("concat", False), ("concatenate", False), ("stack", False),
    ("hstack", False), ("vstack", False), ("narrow", True), ("select", True), ("split", True), ("chunk", True),
    ("tensor_split", True), ("unbind", True), ("flip", True), ("roll", True), ("repeat_interleave", True),
    ("tile", True), ("diagonal", diagonal_method),
):
    op(_name, globals()[_name], method=_method)
for _name in ("expand_as", "repeat", "view_as", "reshape_as"):
    op(_name, globals()[_name], export=False)
