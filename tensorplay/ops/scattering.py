"""torch.scatter and torch.scatter_reduce, out of place.

Writers are grouped by the element they write: the flat target offsets are
sorted (`argsort`, stable, so writers keep their order within a group), and
each group is reduced by a segmented log-depth scan over the sorted writers
(`cumulative.scan` with a combine that restarts at every group start). The
last writer of a group carries the group's result, and `index_add` puts it in
place. For plain `scatter` that last writer wins, deterministically (PyTorch
leaves repeated indices unspecified). Everything is made of primitives, so the
ops work under every transform; gradients flow to the writers (and, with
``include_self``, the input elements) the result came from.

>>> import tensorplay as tp
>>> tp.scatter(tp.zeros(4), 0, tp.tensor([1, 3, 1]), tp.tensor([1.0, 2.0, 3.0])).tolist()
[0.0, 3.0, 0.0, 2.0]
"""
from __future__ import annotations

from tensorplay.ir import dtypes

from .._tensor import Tensor
from .._trace import bind
from ._common import as_tensor_operand, convert, dtype_of, normalize_dim, shape_of
from ._table import op

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _flat(t: Tensor) -> Tensor:
    return bind("reshape", t, shape=(t.numel(),))


def _full(value, dtype, n: int) -> Tensor:
    return bind("full", shape=(n,), dtype=dtype, value=value)


def _as_1d(t):
    return bind("reshape", t, shape=(1,)) if isinstance(t, Tensor) and not shape_of(t) else t


def _writers(op_name: str, input, dim, index, src):
    """(x, flat target offsets, flat written values) of ``op_name(input, dim, index, src)``."""
    from .indexing import _index_tensor, _linear_index, normalize_index
    from .shape import narrow

    x = as_tensor_operand(input)
    idx = _index_tensor(index, op_name)
    shape, ishape = shape_of(x), shape_of(idx)
    if len(ishape) != len(shape):
        raise RuntimeError(f"{op_name}: index {tuple(ishape)} must have as many dims as self {tuple(shape)}")
    d = normalize_dim(dim, len(shape), op_name)
    if not isinstance(src, Tensor):
        src = bind("full", shape=ishape, dtype=dtype_of(x), value=src)
    s = convert(src, dtype_of(x))
    sshape = shape_of(s)
    if len(sshape) != len(ishape) or any(a > b for a, b in zip(ishape, sshape)):
        raise RuntimeError(f"{op_name}: index {tuple(ishape)} must not be larger than src {tuple(sshape)}")
    for i, (a, b) in enumerate(zip(ishape, shape)):
        if i != d and a > b:
            raise RuntimeError(f"{op_name}: index {tuple(ishape)} must not be larger than self {tuple(shape)} "
                               f"outside dim {d}")
    for i in range(len(sshape)):
        if sshape[i] != ishape[i]:
            s = narrow(s, i, 0, ishape[i])
    idx = normalize_index(idx, shape[d], op_name, d, x.numel())
    return x, _flat(_linear_index(idx, d, shape)), _flat(s)


def _zero_dim(fn, input, dim, index, src, *args, **kwargs):
    """`fn` on a 0-d input: the same op on one-element 1-d operands, reshaped back."""
    from .shape import reshape

    x = as_tensor_operand(input)
    if dim not in (0, -1):
        raise IndexError(f"{fn.__name__}: dim {dim} is out of range for a 0-d tensor")
    return reshape(fn(_as_1d(x), 0, _as_1d(as_tensor_operand(index)), _as_1d(src), *args, **kwargs), ())


def _shift(t: Tensor, k: int, fill) -> Tensor:
    """`t` (1-d) moved k places: element i holds t[i - k] (k > 0) or t[i + |k|] (k < 0); gaps hold fill."""
    n = shape_of(t)[0]
    if k > 0:
        head = bind("slice", t, start_indices=(0,), limit_indices=(n - k,), strides=(1,))
        return bind("pad", head, low=(k,), high=(0,), interior=(0,), value=fill)
    tail = bind("slice", t, start_indices=(-k,), limit_indices=(n,), strides=(1,))
    return bind("pad", tail, low=(0,), high=(-k,), interior=(0,), value=fill)


def _grouped(lin: Tensor, vals: Tensor):
    """Writers sorted by target: (targets, values, group-start mask, group-end mask)."""
    from .indexing import take

    order = bind("argsort", lin, axis=0, descending=False)
    targets, values = take(lin, order), take(vals, order)
    starts = bind("ne", targets, _shift(targets, 1, -1))
    ends = bind("ne", targets, _shift(targets, -1, -1))
    return targets, values, starts, ends


def _combine(reduce: str):
    if reduce == "sum" or reduce == "mean":
        return "add"
    return {"prod": "mul", "amax": "max", "amin": "min"}[reduce]


def _segmented(values: Tensor, starts: Tensor, prim: str) -> Tensor:
    """Inclusive scan of `values` with `prim`, restarting at every group start."""
    from .cumulative import scan
    from .elementwise import logical_or

    def combine(earlier, later, has):
        (ve, fe), (vl, fl) = earlier, later
        fresh = logical_or(fl, bind("logical_not", has))
        return bind("select", fresh, vl, bind(prim, ve, vl)), logical_or(fl, fe)
    return scan([values, starts], [0, False], 0, combine, masked=True)[0]


def _written(lin: Tensor, n: int) -> Tensor:
    hits = bind("index_add", _full(0, dtypes.int64, n), lin, _full(1, dtypes.int64, shape_of(lin)[0]), axis=0)
    return hits, bind("gt", hits, _full(0, dtypes.int64, n))


def _place(x: Tensor, targets: Tensor, values: Tensor, ends: Tensor, written: Tensor) -> Tensor:
    """`x` with each written element replaced by the value its group's last writer carries."""
    n = x.numel()
    d = dtype_of(x)
    acc = dtypes.int64 if d.is_bool else d
    zero = bind("full", shape=shape_of(values), dtype=acc, value=0)
    placed = bind("index_add", _full(0, acc, n), targets, bind("select", ends, convert(values, acc), zero), axis=0)
    out = bind("select", written, convert(placed, d), _flat(x))
    return bind("reshape", out, shape=shape_of(x))


def scatter_reduce(input, dim: int, index, src, reduce: str, *, include_self: bool = True) -> Tensor:
    """`input` with the elements of `src` reduced into the places `index` names along `dim`:
    out[index[i][j]][j] = reduce(out[...], src[i][j]) for dim=0, with `reduce` one of "sum", "prod",
    "mean", "amax", "amin". With ``include_self=False`` a written element starts from the writers
    alone; elements no one writes keep their value. Integer "mean" rounds down.

    >>> import tensorplay as tp
    >>> x = tp.tensor([1.0, 2.0, 3.0])
    >>> tp.scatter_reduce(x, 0, tp.tensor([0, 0, 2]), tp.tensor([5.0, 4.0, 1.0]), "amax").tolist()
    [5.0, 2.0, 3.0]
    >>> tp.scatter_reduce(x, 0, tp.tensor([0, 0, 2]), tp.tensor([5.0, 4.0, 1.0]), "mean",
    ...                   include_self=False).tolist()
    [4.5, 2.0, 1.0]
    """
    if reduce not in REDUCTIONS:
        raise RuntimeError(f"scatter_reduce: reduce must be one of {', '.join(REDUCTIONS)}, got {reduce!r}")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce: src must be a tensor, got {type(src).__name__}")
    if not shape_of(as_tensor_operand(input)):
        return _zero_dim(scatter_reduce, input, dim, index, src, reduce, include_self=include_self)
    x, lin, vals = _writers("scatter_reduce", input, dim, index, src)
    n = x.numel()
    hits, written = _written(lin, n)
    if include_self:
        lin = bind("concatenate", bind("iota", shape=(n,), dtype=dtypes.int64, dimension=0), lin, axis=0)
        vals = bind("concatenate", _flat(x), vals, axis=0)
    if shape_of(lin)[0] == 0:
        return bind("reshape", _flat(x), shape=shape_of(x))
    targets, values, starts, ends = _grouped(lin, vals)
    reduced = _segmented(values, starts, _combine(reduce))
    out = _place(x, targets, reduced, ends, written)
    if reduce != "mean":
        return out
    from .elementwise import div, floor_divide

    count = hits if not include_self else bind("add", hits, _full(1, dtypes.int64, n))
    count = bind("reshape", bind("select", written, count, _full(1, dtypes.int64, n)), shape=shape_of(x))
    if dtype_of(x).is_floating_point:
        return div(out, convert(count, dtype_of(x)))
    return convert(floor_divide(out, count), dtype_of(x))


def scatter(input, dim: int, index, src=None, *, value=None, reduce: str | None = None) -> Tensor:
    """`input` with `src` (a tensor, or the scalar `value`) written at `index` along `dim`:
    out[index[i][j]][j] = src[i][j] for dim=0. Of repeated indices, the last writer (in index
    order) wins. ``reduce='add'`` or ``'multiply'`` combines with the old values instead.

    >>> import tensorplay as tp
    >>> tp.scatter(tp.zeros(2, 3), 1, tp.tensor([[2], [0]]), value=7.0).tolist()
    [[0.0, 0.0, 7.0], [7.0, 0.0, 0.0]]
    """
    if (src is None) == (value is None):
        raise TypeError("scatter: give exactly one of src and value")
    source = src if src is not None else value
    if reduce is not None:
        names = {"add": "sum", "multiply": "prod"}
        if reduce not in names:
            raise RuntimeError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
        if not isinstance(source, Tensor):
            x = as_tensor_operand(input)
            source = bind("full", shape=shape_of(as_tensor_operand(index)), dtype=dtype_of(x), value=source)
        return scatter_reduce(input, dim, index, source, names[reduce], include_self=True)
    if not shape_of(as_tensor_operand(input)):
        return _zero_dim(scatter, input, dim, index, source)
    x, lin, vals = _writers("scatter", input, dim, index, source)
    if shape_of(lin)[0] == 0:
        return bind("reshape", _flat(x), shape=shape_of(x))
    _, written = _written(lin, x.numel())
    targets, values, _, ends = _grouped(lin, vals)
    return _place(x, targets, values, ends, written)


# === the op table ===================================================================================
op("scatter", scatter, method=True, inplace=True)
op("scatter_reduce", scatter_reduce, method=True, inplace=True)
