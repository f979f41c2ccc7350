"""Pytrees: nested tuples, lists, dicts and namedtuples, flattened to leaves and back."""
from __future__ import annotations

from typing import Any, Callable


class TreeDef:
    """The structure of a pytree: a node kind, its metadata, and child structures.

    Immutable and hashable; the hash is computed once, and equality is by identity first
    (treedefs are dictionary keys on hot paths: `tp.compile`'s cache, structure checks).
    """

    __slots__ = ("kind", "meta", "children", "num_leaves", "_hash", "_build")

    kind: str            # 'leaf', 'none', 'tuple', 'list', 'dict', 'namedtuple'
    meta: Any            # dict keys (tuple) or namedtuple class
    children: tuple

    def __init__(self, kind: str, meta: Any = None, children: tuple = ()):
        sa = object.__setattr__
        sa(self, "kind", kind)
        sa(self, "meta", meta)
        sa(self, "children", children)
        sa(self, "num_leaves", 1 if kind == "leaf" else sum(c.num_leaves for c in children))
        sa(self, "_hash", hash((kind, meta, children)))
        sa(self, "_build", None)  # set by the first `tree_unflatten`

    def __setattr__(self, name, value):
        raise AttributeError(f"TreeDef is immutable (cannot set {name!r})")

    def __delattr__(self, name):
        raise AttributeError(f"TreeDef is immutable (cannot delete {name!r})")

    def __reduce__(self):
        return TreeDef, (self.kind, self.meta, self.children)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if other.__class__ is not TreeDef:
            return NotImplemented
        return (self._hash == other._hash and self.kind == other.kind and self.meta == other.meta
                and self.children == other.children)

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(repr, self.children))
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.meta, self.children))
            return "{" + inner + "}"
        if self.kind == "list":
            return f"[{inner}]"
        return f"({inner})"


LEAF = TreeDef("leaf")
NONE = TreeDef("none")


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeDef]:
    """Flatten `tree` into (leaves, treedef); dict children are ordered by sorted key."""
    leaves: list = []
    append = leaves.append

    def go(x) -> TreeDef:
        if is_leaf is not None and is_leaf(x):
            append(x)
            return LEAF
        cls = x.__class__
        if cls is tuple:
            return TreeDef("tuple", None, tuple([go(c) for c in x]))
        if cls is list:
            return TreeDef("list", None, tuple([go(c) for c in x]))
        if cls is dict:
            keys = tuple(sorted(x, key=_key_order))
            return TreeDef("dict", keys, tuple([go(x[k]) for k in keys]))
        if x is None:
            return NONE
        if isinstance(x, tuple):
            if hasattr(cls, "_fields"):
                return TreeDef("namedtuple", cls, tuple([go(c) for c in x]))
            return TreeDef("tuple", None, tuple([go(c) for c in x]))
        if isinstance(x, list):
            return TreeDef("list", None, tuple([go(c) for c in x]))
        if isinstance(x, dict):
            keys = tuple(sorted(x, key=_key_order))
            return TreeDef("dict", keys, tuple([go(x[k]) for k in keys]))
        append(x)
        return LEAF

    return leaves, go(tree)


def _key_order(k):
    return (type(k).__name__, k) if not isinstance(k, str) else ("", k)


def tree_unflatten(treedef: TreeDef, leaves) -> Any:
    """Rebuild a pytree of structure `treedef` from `leaves` (in flatten order)."""
    build = treedef._build
    if build is None:  # compiled once per treedef: a tree of closures, each rebuilding one node
        build = _builder(treedef)
        object.__setattr__(treedef, "_build", build)
    it = iter(leaves)
    out = build(it)
    rest = list(it)
    if rest:
        raise ValueError(f"tree_unflatten: {len(rest)} leaves left over for structure {treedef}")
    return out


def _builder(td: TreeDef) -> Callable:
    """A function taking an iterator of leaves and returning the tree of structure `td`."""
    kind = td.kind
    if kind == "leaf":
        return next
    if kind == "none":
        return lambda it: None
    kids = [_builder(c) for c in td.children]
    if kind == "tuple":
        return lambda it: tuple([k(it) for k in kids])
    if kind == "list":
        return lambda it: [k(it) for k in kids]
    if kind == "dict":
        keys = td.meta
        return lambda it: dict(zip(keys, [k(it) for k in kids]))
    cls = td.meta
    return lambda it: cls(*[k(it) for k in kids])


def tree_map(fn: Callable, tree: Any, *rest: Any, is_leaf=None) -> Any:
    """Apply `fn` leafwise over `tree` (and trees of the same structure in `rest`)."""
    leaves, td = tree_flatten(tree, is_leaf)
    others = [tree_flatten(r, is_leaf) for r in rest]
    for ls, otd in others:
        if otd != td:
            raise ValueError(f"tree_map: structures differ: {td} vs {otd}")
    return tree_unflatten(td, [fn(*xs) for xs in zip(leaves, *(o[0] for o in others))])


def broadcast_prefix(prefix: Any, tree: Any, what: str = "in_dims") -> list:
    """Expand `prefix` (a pytree that is a prefix of `tree`'s structure) to one entry per leaf of `tree`.

    A leaf of `prefix` (including None) applies to the whole subtree under it.
    """
    out: list = []

    def go(p, t, path):
        if p is None or not isinstance(p, (tuple, list, dict)):
            out.extend([p] * tree_flatten(t)[1].num_leaves)
            return
        if isinstance(p, dict):
            if not isinstance(t, dict) or set(p) != set(t):
                raise ValueError(f"{what}{path}: structure {_describe(p)} does not match the argument {_describe(t)}")
            for k in sorted(t, key=_key_order):
                go(p[k], t[k], f"{path}[{k!r}]")
            return
        if not isinstance(t, (tuple, list)) or len(p) != len(t):
            raise ValueError(f"{what}{path}: structure {_describe(p)} does not match the argument {_describe(t)}")
        for i, (pp, tt) in enumerate(zip(p, t)):
            go(pp, tt, f"{path}[{i}]")

    go(prefix, tree, "")
    return out


def _describe(x) -> str:
    if isinstance(x, dict):
        return f"dict with keys {sorted(x, key=_key_order)}"
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__} of length {len(x)}"
    return type(x).__name__
