"""Strides and view layouts: which view primitives are views of which memory, as pure functions.

A *layout* is ``(shape, strides)`` with strides counted in elements. Eager tensors are
numpy arrays and have real strides; traced tensors have the strides they *would* have, so
that a traced `reshape` is a view exactly when numpy's reshape of the same layout is one
(`reshape_strides` is a port of numpy's rule). The shapes of view steps come from the
primitives' own type rules (`step_shape`), never from a second copy of them.

This module knows nothing about tensors or traces.

>>> from tensorplay._layout import contiguous_strides, layout_step
>>> contiguous_strides((2, 3))
(3, 1)
>>> layout_step(((2, 3), (3, 1)), "transpose", {"permutation": (1, 0)})
((3, 2), (1, 3))
>>> layout_step(((3, 2), (1, 3)), "reshape", {"shape": (6,)}) is None   # would copy, as numpy's does
True
"""
from __future__ import annotations

from math import prod
from typing import Sequence

import numpy as np

from tensorplay.ir import TensorType, dtypes
from tensorplay.ir.primitive import get_primitive

Layout = tuple  # (shape, strides), strides in elements

VIEW_PRIMS = frozenset({"reshape", "transpose", "slice", "broadcast_in_dim", "stop_gradient"})
"""Primitives whose eager result shares its operand's storage (when the layout allows, for reshape)."""


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """C-order strides of `shape`, in elements."""
    out, acc = [], 1
    for d in reversed(tuple(shape)):
        out.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(out))


def is_c_contiguous(shape, strides) -> bool:
    """numpy's (relaxed) C-contiguity: size-1 dims are ignored, empty arrays are contiguous."""
    if 0 in shape:
        return True
    expected = 1
    for d, s in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if d != 1:
            if s != expected:
                return False
            expected *= d
    return True


def reshape_strides(shape, strides, new_shape) -> tuple[int, ...] | None:
    """Strides viewing (shape, strides) as `new_shape`, or None when a copy is needed.

    A port of numpy's ``_attempt_nocopy_reshape`` (C order), so traced and eager
    reshapes agree on view-or-copy.
    """
    shape, strides, new_shape = tuple(shape), tuple(strides), tuple(new_shape)
    if shape == new_shape:
        return strides
    if prod(shape) == 0 or is_c_contiguous(shape, strides):
        return contiguous_strides(new_shape)
    old = [(d, s) for d, s in zip(shape, strides) if d != 1]
    odims, ostr = [d for d, _ in old], [s for _, s in old]
    ndims, nstr = list(new_shape), [0] * len(new_shape)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(ndims) and oi < len(odims):
        np_, op = ndims[ni], odims[oi]
        while np_ != op:
            if np_ < op:
                np_ *= ndims[nj]
                nj += 1
            else:
                op *= odims[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if ostr[ok] != odims[ok + 1] * ostr[ok + 1]:
                return None
        nstr[nj - 1] = ostr[oj - 1]
        for nk in range(nj - 1, ni, -1):
            nstr[nk - 1] = nstr[nk] * ndims[nk]
        ni, nj = nj, nj + 1
        oi, oj = oj, oj + 1
    last = nstr[ni - 1] if ni >= 1 else 1
    for nk in range(ni, len(ndims)):
        nstr[nk] = last
    return tuple(nstr)


def has_overlap(layout: Layout) -> bool:
    """Does some element of the layout alias another (an expanded dim)?"""
    return any(s == 0 and d > 1 for d, s in zip(*layout))


def array_layout(arr: np.ndarray) -> Layout:
    """The layout of a numpy array."""
    item = arr.itemsize or 1
    return tuple(arr.shape), tuple(s // item for s in arr.strides)


# --- macro view steps: views that no single primitive expresses ---------------------------------------
def diagonal_steps(shape: tuple, attrs: dict) -> tuple:
    """The primitive steps computing ``diagonal(offset, dim1, dim2)`` of a tensor of `shape`.

    As values they are exact; as a view they are not always expressible (the flattening
    reshape copies when the plane is strided), so the step keeps its own layout rule.
    """
    offset, a, b = attrs["offset"], attrs["dim1"], attrs["dim2"]
    rest = [d for d in range(len(shape)) if d not in (a, b)]
    perm = tuple(rest + [a, b])
    n, m = shape[a], shape[b]
    batch = tuple(shape[d] for d in rest)
    rows = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    start = offset if offset >= 0 else -offset * m
    stop = start + (rows - 1) * (m + 1) + 1 if rows else start
    steps = []
    if perm != tuple(range(len(shape))):
        steps.append(("transpose", {"permutation": perm}))
    steps.append(("reshape", {"shape": batch + (n * m,)}))
    k = len(batch)
    steps.append(("slice", {"start_indices": (0,) * k + (min(start, n * m),),
                            "limit_indices": batch + (min(stop, n * m),),
                            "strides": (1,) * k + (m + 1,)}))
    return tuple(steps)


def diagonal_eager(arr: np.ndarray, attrs: dict) -> np.ndarray:
    """A writable numpy view of the diagonal (np.diagonal's own view is read-only)."""
    offset, a, b = attrs["offset"], attrs["dim1"], attrs["dim2"]
    d = np.diagonal(arr, offset, a, b)
    key = [slice(None)] * arr.ndim
    key[a] = slice(max(-offset, 0), None)
    key[b] = slice(max(offset, 0), None)
    return np.lib.stride_tricks.as_strided(arr[tuple(key)], shape=d.shape, strides=d.strides)


MACROS = {"diagonal": diagonal_steps}  # name -> (shape, attrs) -> primitive steps


def expand_steps(shape: tuple, steps) -> tuple:
    """`steps` with every macro step replaced by its primitive steps."""
    out = []
    for name, attrs in steps:
        if name in MACROS:
            out.extend(MACROS[name](shape, attrs))
        else:
            out.append((name, attrs))
        shape = step_shape(shape, name, attrs)
    return tuple(out)


_ANY = dtypes.float32  # view primitives keep the dtype, so their shape rule does not depend on it


def step_shape(shape: tuple, name: str, attrs: dict) -> tuple:
    """The shape after one view step, from the primitive's `abstract_eval` (macros: step by step)."""
    if name in MACROS:
        for n, a in MACROS[name](tuple(shape), attrs):
            shape = step_shape(shape, n, a)
        return tuple(shape)
    return get_primitive(name).abstract_eval(TensorType(tuple(shape), _ANY), **attrs).shape


def _diagonal_layout(layout: Layout, attrs: dict) -> Layout:
    shape, strides = layout
    a, b = attrs["dim1"], attrs["dim2"]
    out = step_shape(shape, "diagonal", attrs)
    rest = [d for d in range(len(shape)) if d not in (a, b)]
    return out, tuple(strides[d] for d in rest) + (strides[a] + strides[b],)


def layout_step(layout: Layout, name: str, attrs: dict) -> Layout | None:
    """The layout after one view step (None: a reshape that has to copy)."""
    shape, strides = layout
    if name == "diagonal":
        return _diagonal_layout(layout, attrs)
    out = step_shape(shape, name, attrs)
    if name == "reshape":
        st = reshape_strides(shape, strides, out)
        return None if st is None else (out, st)
    if name == "transpose":
        return out, tuple(strides[p] for p in attrs["permutation"])
    if name == "slice":
        return out, tuple(s * k for s, k in zip(strides, attrs["strides"]))
    if name == "broadcast_in_dim":
        st = [0] * len(out)
        for i, d in enumerate(attrs["broadcast_dimensions"]):
            st[d] = strides[i] if shape[i] == out[d] else 0
        return out, tuple(st)
    return layout


def walk_layout(layout: Layout, steps):
    """Yield ``(step name, layout after it)`` along `steps`; a reshape that copies restarts contiguous."""
    for name, attrs in steps:
        nxt = layout_step(layout, name, attrs)
        if nxt is None:
            out = step_shape(layout[0], name, attrs)
            nxt = (out, contiguous_strides(out))
        layout = nxt
        yield name, layout


def view_layout(layout: Layout, steps) -> Layout:
    """The layout after all of `steps`."""
    for _, layout in walk_layout(layout, steps):
        pass
    return layout


def through_expand(layout: Layout, steps) -> bool:
    """Is a view taken through an expand that repeats elements? Eagerly such views are read-only
    (numpy marks every view of a broadcast read-only), so traced writes into them fail the same way."""
    return any(name == "broadcast_in_dim" and has_overlap(lay) for name, lay in walk_layout(layout, steps))
