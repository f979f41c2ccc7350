"""Writing through a view, functionally: the value of a storage after a write into one of its views.

A traced view is its root's value seen through view steps (`tensorplay._layout`); a write
into the view must produce the root's new value. `scatter` inverts the steps one by one: a
`reshape` is reshaped back, a `transpose` permuted back, a `slice` becomes a `concatenate`
of the untouched ends around the new piece (or `pad` + `select` for strided slices), and a
non-repeating `broadcast_in_dim` is a reshape. Only IR nodes are built; no tensors.

>>> from tensorplay.ir import GraphBuilder, TensorType, float32
>>> b = GraphBuilder()
>>> base, new = b.add_input(TensorType((4,), float32)), b.add_input(TensorType((2,), float32))
>>> out = scatter(b, base, [("slice", {"start_indices": (1,), "limit_indices": (3,), "strides": (1,)})], new)
>>> [n.prim.name for n in b.nodes], out.shape
(['slice', 'slice', 'concatenate'], (4,))
"""
from __future__ import annotations

from tensorplay.ir import TensorType, Value, dtypes

from ._layout import expand_steps, step_shape


def scatter(b, base: Value, steps, new: Value) -> Value:
    """The value of `base` after writing `new` into its view `steps` (the view's inverse, step by step)."""
    if not steps:
        return new
    steps = expand_steps(base.shape, steps)
    # operand values are needed only below a slice (to keep the elements it does not cover)
    last_slice = max((i for i, (name, _) in enumerate(steps) if name == "slice"), default=-1)
    types, vals = [base.type], [base]
    for i, (name, attrs) in enumerate(steps[:-1]):
        if i < last_slice:
            vals.append(b.emit(name, vals[-1], **attrs))
            types.append(vals[-1].type)
        else:
            types.append(TensorType(step_shape(types[-1].shape, name, attrs), types[-1].dtype))
    cur = new
    for i in range(len(steps) - 1, -1, -1):
        name, attrs = steps[i]
        cur = _INVERSE[name](b, types[i], vals[i] if i < len(vals) else None, cur, attrs)
    return cur


def _inv_reshape(b, src: TensorType, src_val, cur: Value, attrs) -> Value:
    return cur if cur.shape == src.shape else b.reshape(cur, shape=src.shape)


def _inv_transpose(b, src, src_val, cur, attrs):
    perm = attrs["permutation"]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return b.transpose(cur, permutation=tuple(inv))


def _inv_slice(b, src, src_val, cur, attrs):
    starts, limits, strides = attrs["start_indices"], attrs["limit_indices"], attrs["strides"]
    if cur.type.size == 0:
        return src_val
    cut = [d for d in range(len(src.shape)) if cur.shape[d] != src.shape[d]]
    if not cut:
        return cur
    if len(cut) == 1 and strides[cut[0]] == 1:  # one contiguous range: concatenate the untouched ends around it
        d = cut[0]
        lo, hi = starts[d], starts[d] + cur.shape[d]
        pieces = []
        if lo > 0:
            pieces.append(_slice_dim(b, src_val, d, 0, lo))
        pieces.append(cur)
        if hi < src.shape[d]:
            pieces.append(_slice_dim(b, src_val, d, hi, src.shape[d]))
        return pieces[0] if len(pieces) == 1 else b.concatenate(*pieces, axis=d)
    low, high, interior = [], [], []
    for d in range(len(src.shape)):
        n, st = cur.shape[d], strides[d]
        low.append(starts[d])
        interior.append(st - 1)
        high.append(src.shape[d] - starts[d] - (n - 1) * st - 1)
    pad = dict(low=tuple(low), high=tuple(high), interior=tuple(interior))
    mask = b.pad(b.const(True, cur.shape, dtypes.bool_), value=False, **pad)
    zero = False if cur.dtype.is_bool else 0 if cur.dtype.is_integer else 0.0
    return b.select(mask, b.pad(cur, value=zero, **pad), src_val)


def _slice_dim(b, v: Value, d: int, start: int, stop: int) -> Value:
    starts, limits = [0] * v.ndim, list(v.shape)
    starts[d], limits[d] = start, stop
    return b.slice(v, start_indices=tuple(starts), limit_indices=tuple(limits), strides=(1,) * v.ndim)


def _inv_broadcast(b, src, src_val, cur, attrs):
    # only broadcasts that repeat nothing are ever written through (has_overlap guards the others)
    return cur if cur.shape == src.shape else b.reshape(cur, shape=src.shape)


_INVERSE = {
    "reshape": _inv_reshape,              # reshape back
    "transpose": _inv_transpose,          # the inverse permutation
    "slice": _inv_slice,                  # concatenate, or pad + select
    "broadcast_in_dim": _inv_broadcast,   # (non-repeating) reshape back
    "stop_gradient": lambda b, src, src_val, cur, attrs: cur,  # detach()/.data alias the same storage
}
