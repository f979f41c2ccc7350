"""Shape and layout ops: reshape/view, permute/transpose, squeeze/unsqueeze,
expand, flatten, cat/stack, split/chunk, flip, narrow/select, movedim, repeat."""
from __future__ import annotations

import builtins
from math import prod
from typing import Sequence

from .._tensor import Tensor
from .._trace import bind
from ._common import as_tensor_operand, broadcast_to_shape, normalize_dim, normalize_dims, result_type, convert


def _shape_arg(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


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
    x = as_tensor_operand(input)
    new = infer_shape(_shape_arg(shape), x.numel(), "reshape", x.shape)
    return x if new == tuple(x.shape) else bind("reshape", x, shape=new)


def view(input, *shape) -> Tensor:
    """Like `reshape` (our tensors always allow it)."""
    x = as_tensor_operand(input)
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        return convert(x, shape[0])  # view(dtype) is approximated by a value conversion
    return reshape(x, *shape)


def flatten(input, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims start_dim..end_dim into one."""
    x = as_tensor_operand(input)
    if x.ndim == 0:
        return reshape(x, 1)
    s = normalize_dim(start_dim, x.ndim, "flatten")
    e = normalize_dim(end_dim, x.ndim, "flatten")
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    shape = x.shape[:s] + (prod(x.shape[s:e + 1]),) + x.shape[e + 1:]
    return reshape(x, shape)


def unflatten(input, dim: int, sizes) -> Tensor:
    """Split dim `dim` into `sizes`."""
    x = as_tensor_operand(input)
    d = normalize_dim(dim, x.ndim, "unflatten")
    sizes = infer_shape(tuple(sizes), x.shape[d], "unflatten")
    return reshape(x, x.shape[:d] + sizes + x.shape[d + 1:])


def permute(input, *dims) -> Tensor:
    """Reorder the dims: result dim i is input dim dims[i]."""
    x = as_tensor_operand(input)
    dims = _shape_arg(dims)
    if len(dims) != x.ndim:
        raise ValueError(f"permute: number of dims {len(dims)} does not match the tensor's {x.ndim} dims "
                         f"(shape {tuple(x.shape)})")
    perm = normalize_dims(dims, x.ndim, "permute")
    return x if perm == tuple(range(x.ndim)) else bind("transpose", x, permutation=perm)


def transpose(input, dim0: int, dim1: int) -> Tensor:
    """Swap two dims."""
    x = as_tensor_operand(input)
    if x.ndim == 0:
        return x
    a, b = normalize_dim(dim0, x.ndim, "transpose"), normalize_dim(dim1, x.ndim, "transpose")
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return permute(x, perm)


swapaxes = swapdims = transpose


def t(input) -> Tensor:
    """Transpose of a tensor with at most 2 dims."""
    x = as_tensor_operand(input)
    if x.ndim > 2:
        raise ValueError(f"t() expects a tensor with <= 2 dimensions, but got {x.ndim}D (shape {tuple(x.shape)})")
    return transpose(x, 0, 1) if x.ndim == 2 else x


def movedim(input, source, destination) -> Tensor:
    """Move dims `source` to positions `destination`."""
    x = as_tensor_operand(input)
    src = normalize_dims(source, x.ndim, "movedim")
    dst = normalize_dims(destination, x.ndim, "movedim")
    if len(src) != len(dst):
        raise ValueError("movedim: source and destination must have the same number of dims")
    order = [d for d in range(x.ndim) if d not in src]
    perm = [None] * x.ndim
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(order)
    perm = [p if p is not None else next(it) for p in perm]
    return permute(x, perm)


moveaxis = movedim


def squeeze(input, dim=None) -> Tensor:
    """Drop size-1 dims (all, or those in `dim`)."""
    x = as_tensor_operand(input)
    if dim is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    else:
        axes = [a for a in normalize_dims(dim, x.ndim, "squeeze") if x.ndim and x.shape[a] == 1]
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def unsqueeze(input, dim: int) -> Tensor:
    """Insert a size-1 dim at `dim`."""
    x = as_tensor_operand(input)
    d = normalize_dim(dim, x.ndim + 1, "unsqueeze")
    return bind("reshape", x, shape=x.shape[:d] + (1,) + x.shape[d:])


def expand(input, *sizes) -> Tensor:
    """Broadcast to `sizes` (-1 keeps a dim) without copying."""
    x = as_tensor_operand(input)
    sizes = _shape_arg(sizes)
    if len(sizes) < x.ndim:
        raise ValueError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
                         f"the number of dimensions in the tensor ({x.ndim})")
    lead = len(sizes) - x.ndim
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    if any(s < 0 for s in shape):
        raise ValueError(f"expand: -1 is not allowed in a leading, non-existing dimension ({list(sizes)})")
    return broadcast_to_shape(x, shape, "expand")


def broadcast_to(input, shape) -> Tensor:
    """Broadcast to `shape` with numpy rules."""
    return expand(input, tuple(shape))


def expand_as(input, other) -> Tensor:
    return expand(input, tuple(other.shape))


def broadcast_tensors(*tensors):
    """Broadcast all tensors to their common shape."""
    from ._common import broadcast_shapes

    ts = [as_tensor_operand(t) for t in tensors]
    shape = broadcast_shapes(*(tuple(t.shape) for t in ts), op="broadcast_tensors")
    return tuple(broadcast_to_shape(t, shape, "broadcast_tensors") for t in ts)


def cat(tensors, dim: int = 0) -> Tensor:
    """Concatenate along an existing dim (dtypes promote)."""
    ts = [as_tensor_operand(t) for t in tensors]
    if not ts:
        raise ValueError("cat: expected a non-empty list of tensors")
    # PyTorch skips 1-d empty tensors in cat
    nonempty = [t for t in ts if not (t.ndim == 1 and t.shape[0] == 0)] or ts[:1]
    dtype = result_type(*nonempty)
    ref = nonempty[0]
    if ref.ndim == 0:
        raise ValueError("cat: zero-dimensional tensor cannot be concatenated")
    d = normalize_dim(dim, ref.ndim, "cat")
    for t in nonempty[1:]:
        if t.ndim != ref.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, ref.shape)) if i != d):
            raise ValueError(f"cat: sizes of tensors must match except in dimension {d}; got shapes "
                             f"{[tuple(x.shape) for x in nonempty]}")
    ts = [convert(t, dtype) for t in nonempty]
    return ts[0] if len(ts) == 1 else bind("concatenate", *ts, axis=d)


concatenate = concat = cat


def stack(tensors, dim: int = 0) -> Tensor:
    """Join tensors of equal shape along a new dim."""
    ts = [as_tensor_operand(t) for t in tensors]
    if not ts:
        raise ValueError("stack: expected a non-empty list of tensors")
    shapes = {tuple(t.shape) for t in ts}
    if len(shapes) != 1:
        raise ValueError(f"stack: expects each tensor to be equal size, but got shapes {[tuple(t.shape) for t in ts]}")
    d = normalize_dim(dim, ts[0].ndim + 1, "stack")
    return cat([unsqueeze(t, d) for t in ts], d)


def hstack(tensors):
    ts = [as_tensor_operand(t) for t in tensors]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    ts = [as_tensor_operand(t) for t in tensors]
    return cat([t if t.ndim > 1 else reshape(t, 1, -1) for t in ts], 0)


def narrow(input, dim: int, start: int, length: int) -> Tensor:
    """Elements start..start+length of dim `dim` (a view)."""
    x = as_tensor_operand(input)
    d = normalize_dim(dim, x.ndim, "narrow")
    n = x.shape[d]
    if start < 0:
        start += n
    if not (0 <= start <= n and 0 <= length and start + length <= n):
        raise IndexError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({n}) "
                         f"of shape {tuple(x.shape)}")
    return slice_dim(x, d, start, start + length, 1)


def slice_dim(x: Tensor, d: int, start: int, stop: int, step: int) -> Tensor:
    """x[..., start:stop:step, ...] on dim d with normalised bounds."""
    if start == 0 and stop == x.shape[d] and step == 1:
        return x
    starts = [0] * x.ndim
    limits = list(x.shape)
    strides = [1] * x.ndim
    starts[d], limits[d], strides[d] = start, builtins.max(stop, start), step
    return bind("slice", x, start_indices=tuple(starts), limit_indices=tuple(limits), strides=tuple(strides))


def select(input, dim: int, index: int) -> Tensor:
    """The slice at `index` along `dim`, with that dim removed."""
    x = as_tensor_operand(input)
    d = normalize_dim(dim, x.ndim, "select")
    n = x.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select: index {index} is out of bounds for dimension {d} with size {n}")
    index %= n
    part = slice_dim(x, d, index, index + 1, 1)
    return bind("reshape", part, shape=x.shape[:d] + x.shape[d + 1:])


def split(tensor, split_size_or_sections, dim: int = 0):
    """Split into chunks of `split_size` (last may be smaller) or of the given section sizes."""
    x = as_tensor_operand(tensor)
    d = normalize_dim(dim, x.ndim, "split")
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and n:
            raise ValueError(f"split: split_size must be positive, got {step}")
        sizes = [builtins.min(step, n - i) for i in range(0, n, step)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise ValueError(f"split: sections {sizes} do not sum to the size {n} of dim {d} of {tuple(x.shape)}")
    out, start = [], 0
    for s in sizes:
        out.append(slice_dim(x, d, start, start + s, 1))
        start += s
    return tuple(out)


def chunk(input, chunks: int, dim: int = 0):
    """Split into `chunks` nearly equal pieces (the last may be smaller, as in PyTorch)."""
    x = as_tensor_operand(input)
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    d = normalize_dim(dim, x.ndim, "chunk")
    n = x.shape[d]
    size = -(-n // chunks) if n else 0
    return split(x, size if size else 1, d) if n else (x,)


def tensor_split(input, sections: int, dim: int = 0):
    """Split into `sections` pieces whose sizes differ by at most one."""
    x = as_tensor_operand(input)
    d = normalize_dim(dim, x.ndim, "tensor_split")
    n = x.shape[d]
    q, r = divmod(n, sections)
    return split(x, [q + 1] * r + [q] * (sections - r), d)


def unbind(input, dim: int = 0):
    """All slices along `dim`, with that dim removed."""
    x = as_tensor_operand(input)
    d = normalize_dim(dim, x.ndim, "unbind")
    return tuple(select(x, d, i) for i in range(x.shape[d]))


def flip(input, dims) -> Tensor:
    """Reverse the order of elements along `dims`."""
    x = as_tensor_operand(input)
    axes = normalize_dims(dims, x.ndim, "flip")
    return bind("rev", x, axes=axes) if axes and x.ndim else x


def roll(input, shifts, dims=None) -> Tensor:
    """Rotate elements along `dims` by `shifts`."""
    x = as_tensor_operand(input)
    if dims is None:
        return reshape(roll(flatten(x), shifts, 0), x.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    for s, d in zip(shifts, dims):
        d = normalize_dim(d, x.ndim, "roll")
        n = x.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            x = cat([slice_dim(x, d, n - s, n, 1), slice_dim(x, d, 0, n - s, 1)], d)
    return x


def repeat(input, *sizes) -> Tensor:
    """Tile the tensor `sizes[i]` times along each dim (like torch.Tensor.repeat)."""
    x = as_tensor_operand(input)
    sizes = _shape_arg(sizes)
    if len(sizes) < x.ndim:
        raise ValueError("repeat: number of repeat dims can not be smaller than number of tensor dims")
    x = reshape(x, (1,) * (len(sizes) - x.ndim) + tuple(x.shape))
    inter = []
    for r, d in zip(sizes, x.shape):
        inter += [r, d]
    y = bind("broadcast_in_dim", x, shape=tuple(inter), broadcast_dimensions=tuple(range(1, 2 * x.ndim, 2)))
    return reshape(y, tuple(r * d for r, d in zip(sizes, x.shape)))


def tile(input, dims) -> Tensor:
    x = as_tensor_operand(input)
    dims = tuple(dims)
    return repeat(x, (1,) * (x.ndim - len(dims)) + dims)


def repeat_interleave(input, repeats: int, dim=None) -> Tensor:
    """Repeat each element `repeats` times along `dim` (flattened when None)."""
    x = as_tensor_operand(input)
    if dim is None:
        x, dim = flatten(x), 0
    d = normalize_dim(dim, x.ndim, "repeat_interleave")
    shape = x.shape[:d + 1] + (repeats,) + x.shape[d + 1:]
    y = bind("broadcast_in_dim", x, shape=shape,
             broadcast_dimensions=tuple(i if i <= d else i + 1 for i in range(x.ndim)))
    return reshape(y, x.shape[:d] + (x.shape[d] * repeats,) + x.shape[d + 1:])


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, as a new last dim (a strided slice of the flattened plane)."""
    x = as_tensor_operand(input)
    a, b = normalize_dim(dim1, x.ndim, "diagonal"), normalize_dim(dim2, x.ndim, "diagonal")
    y = movedim(x, (a, b), (-2, -1))
    n, m = y.shape[-2], y.shape[-1]
    rows = builtins.max(0, builtins.min(n, m - offset) if offset >= 0 else builtins.min(n + offset, m))
    flat = reshape(y, y.shape[:-2] + (n * m,))
    start = offset if offset >= 0 else -offset * m
    if rows == 0:
        return slice_dim(flat, flat.ndim - 1, 0, 0, 1)
    return slice_dim(flat, flat.ndim - 1, start, start + (rows - 1) * (m + 1) + 1, m + 1)
