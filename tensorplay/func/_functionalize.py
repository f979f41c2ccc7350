"""`functionalize`: run a function that writes into its arguments without touching the caller's tensors.

Mutations never reach a graph in this engine: tracing functionalizes views and
in-place writes as it goes (`tensorplay._views`), so every traced graph is
functional, and writes into arguments come back as extra outputs that call sites
store into the caller's tensors. `functionalize` is the other half: it hands the
function private copies of its tensor arguments, so those writes land in the
copies and the caller's tensors (and any views onto them) stay bit-identical.
Under a transform a copy costs nothing (a new handle on the same SSA value).
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from .. import _pytree, _views
from .._tensor import Tensor
from .._trace import apply_steps

__all__ = ["functionalize"]

_MODES = ("mutations", "mutations_and_views")


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """Returns a version of `func` that leaves its arguments untouched.

    `func` may write into its inputs in place; the wrapper hands it private copies
    instead, so the caller's tensors -- and any views onto them -- come back exactly
    as they went in, while the returned value is what `func` returned.

    - ``remove="mutations"`` copies every tensor argument, keeping the aliasing the
      arguments arrived with among the copies: if one argument is a view of another,
      its copy is the same view of the other's copy, so `func` behaves as it would
      on the originals.
    - ``remove="mutations_and_views"`` additionally detaches the copies from that
      aliasing: every argument gets storage of its own, so a write through one
      argument cannot reach another.

    Tensors that `func` reaches other than through its arguments (globals, module
    state) are not copied. Any other `remove` raises ValueError.

    >>> import tensorplay
    >>> from tensorplay.func import functionalize
    >>> def f(x):
    ...     x.add_(1)
    ...     return x
    >>> x = tensorplay.zeros(3)
    >>> out = functionalize(f)(x)
    >>> x  # unchanged
    tensor([0., 0., 0.])
    >>> out
    tensor([1., 1., 1.])
    >>> def g(a, b):          # b is a view of a: with remove="mutations" the copies alias too
    ...     b.mul_(10)
    ...     return a.clone()
    >>> base = tensorplay.ones(2, 2)
    >>> functionalize(g)(base, base[0])
    tensor([[10., 10.],
            [ 1.,  1.]])
    >>> functionalize(g, remove="mutations_and_views")(base, base[0])
    tensor([[1., 1.],
            [1., 1.]])
    >>> base
    tensor([[1., 1.],
            [1., 1.]])
    """
    if not callable(func):
        raise TypeError(f"functionalize: func must be callable, got {type(func).__name__}")
    if remove not in _MODES:
        raise ValueError(f"functionalize: remove must be 'mutations' or 'mutations_and_views', got {remove!r}")
    keep_aliasing = remove == "mutations"

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        leaves, tree = _pytree.tree_flatten((args, kwargs))
        positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]
        copies = private_copies([leaves[i] for i in positions], keep_aliasing)
        for i, c in zip(positions, copies):
            leaves[i] = c
        fargs, fkwargs = _pytree.tree_unflatten(tree, leaves)
        return func(*fargs, **fkwargs)

    return wrapped


def private_copies(tensors: list[Tensor], keep_aliasing: bool = True) -> list[Tensor]:
    """Copies of `tensors` owning fresh storage; with `keep_aliasing`, copies of aliased
    tensors alias each other the same way: one copy per storage, the views re-derived on it
    (so an expanded argument stays expanded and read-only).

    >>> import tensorplay as tp
    >>> x = tp.arange(4.0)
    >>> a, b = private_copies([x, x[1:3]])
    >>> b.fill_(0); a
    tensor([0., 0.])
    tensor([0., 0., 0., 3.])
    >>> x
    tensor([0., 1., 2., 3.])
    """
    if not keep_aliasing:
        return [t.clone() for t in tensors]
    out: list = [None] * len(tensors)
    roots: dict[int, Tensor] = {}
    plain = []  # eager tensors without a known base: aliasing only numpy knows about
    bases = {id(t._base) for t in tensors if t._base is not None}
    for i, t in enumerate(tensors):
        if t._base is None and id(t) not in bases and _views.owner(t) is None:
            plain.append(i)
            continue
        root = t if t._base is None else t._base
        copy = roots.get(id(root))
        if copy is None:
            copy = roots[id(root)] = root.clone()
        out[i] = _replay(copy, t._steps)
    for i, c in zip(plain, _numpy_copies([tensors[i]._data for i in plain])):
        out[i] = Tensor._wrap(c)
    return out


def _replay(t: Tensor, steps) -> Tensor:
    return apply_steps(t, steps)


def _owner_array(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _numpy_copies(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Copies of `arrays`; arrays sharing an owning buffer get views of one copy of it, at the same offsets."""
    groups: dict[int, list[int]] = {}
    for i, a in enumerate(arrays):
        groups.setdefault(id(_owner_array(a)), []).append(i)
    out: list = [None] * len(arrays)
    for members in groups.values():
        owner = _owner_array(arrays[members[0]])
        if len(members) == 1 or not (owner.flags.c_contiguous or owner.flags.f_contiguous):
            for i in members:
                out[i] = np.array(arrays[i], order="C", copy=True)
            continue
        fresh = np.empty_like(owner, order="K")
        fresh[...] = owner
        raw = fresh.ravel(order="K").view(np.uint8)
        start = owner.__array_interface__["data"][0]
        for i in members:
            a = arrays[i]
            offset = a.__array_interface__["data"][0] - start
            out[i] = np.ndarray(a.shape, a.dtype, buffer=raw, offset=offset, strides=a.strides)
            out[i].flags.writeable = a.flags.writeable  # an expanded argument stays unwritable
    return out
