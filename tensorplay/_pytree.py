"""Pytrees: nested tuples, lists, dicts and namedtuples, flattened to leaves and back.

As in torch.utils._pytree, dict children are flattened in insertion order, and
containers come back with their type: dict, OrderedDict, defaultdict (with its
default factory), namedtuple.

>>> from collections import OrderedDict
>>> leaves, td = tree_flatten(OrderedDict(b=1, a=(2, 3)))
>>> leaves
[1, 2, 3]
>>> back = tree_unflatten(td, [10, 20, 30])
>>> type(back).__name__, list(back.items())
('OrderedDict', [('b', 10), ('a', (20, 30))])
"""
from __future__ import annotations

from collections import OrderedDict, defaultdict
from typing import Any, Callable


class TreeDef:
    """The structure of a pytree: a node kind, its metadata, and child structures.

    Immutable and hashable; the hash is computed once, and equality is by identity first
    (treedefs are dictionary keys on hot paths: `tp.compile`'s cache, structure checks).
    """

    __slots__ = ("kind", "meta", "children", "container", "num_leaves", "_hash", "_build")

    kind: str            # 'leaf', 'none', 'tuple', 'list', 'dict', 'namedtuple'
    meta: Any            # dict keys (tuple, insertion order) or namedtuple class
    children: tuple
    container: Any       # dicts: (dict | OrderedDict | defaultdict, default_factory or None); else None

    def __init__(self, kind: str, meta: Any = None, children: tuple = (), container: Any = None):
        sa = object.__setattr__
        sa(self, "kind", kind)
        sa(self, "meta", meta)
        sa(self, "children", children)
        sa(self, "container", container)
        sa(self, "num_leaves", 1 if kind == "leaf" else sum(c.num_leaves for c in children))
        sa(self, "_hash", hash((kind, meta, children, container)))
        sa(self, "_build", None)  # set by the first `tree_unflatten`

    def __setattr__(self, name, value):
        raise AttributeError(f"TreeDef is immutable (cannot set {name!r})")

    def __delattr__(self, name):
        raise AttributeError(f"TreeDef is immutable (cannot delete {name!r})")

    def __reduce__(self):
        return TreeDef, (self.kind, self.meta, self.children, self.container)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if other.__class__ is not TreeDef:
            return NotImplemented
        return (self._hash == other._hash and self.kind == other.kind and self.meta == other.meta
                and self.children == other.children and self.container == other.container)

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
            inner = "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.meta, self.children)) + "}"
            cls = self.container[0]
            return inner if cls is dict else f"{cls.__name__}({inner})"
        if self.kind == "list":
            return f"[{inner}]"
        return f"({inner})"


LEAF = TreeDef("leaf")
NONE = TreeDef("none")

# Interned treedefs: flattening the same structure again returns the same TreeDef object, so
# equality is identity and the unflatten function compiled for it (`_build`) is reused on the
# next call. Keyed by the children's identities (they are interned too); bounded.
_INTERNED: dict = {}
_INTERNED_LIMIT = 16384


def _node(kind: str, meta: Any, children: tuple, container: Any = None) -> TreeDef:
    """The interned TreeDef of a container node (equal to ``TreeDef(kind, meta, children, container)``)."""
    try:
        key = (kind, meta, container, *[id(c) for c in children])
        td = _INTERNED.get(key)
    except TypeError:  # an unhashable default factory or key: not interned
        return TreeDef(kind, meta, children, container)
    if td is None or td.children != children:  # a dead child's id reused: equal ids, other structure
        if len(_INTERNED) >= _INTERNED_LIMIT:
            _INTERNED.clear()
        td = _INTERNED[key] = TreeDef(kind, meta, children, container)
    return td


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


_PLAIN_DICT = (dict, None)
_LEAF_CLASSES: set = set()  # classes seen as leaves: neither None nor a tuple, list or dict (subclass)


def dict_container(d: dict) -> tuple:
    """How a dict node is rebuilt: (its class, its default factory); other dict subclasses count as dict."""
    cls = d.__class__
    if cls is dict:
        return _PLAIN_DICT
    if isinstance(d, defaultdict):
        return (defaultdict, d.default_factory)
    if isinstance(d, OrderedDict):
        return (OrderedDict, None)
    return _PLAIN_DICT


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeDef]:
    """Flatten `tree` into (leaves, treedef); dict children come in insertion order, as in torch."""
    leaves: list = []
    append = leaves.append
    leaf_classes = _LEAF_CLASSES

    def go(x) -> TreeDef:
        if is_leaf is not None and is_leaf(x):
            append(x)
            return LEAF
        cls = x.__class__
        if cls in leaf_classes:
            append(x)
            return LEAF
        if cls is tuple:
            return _node("tuple", None, tuple([go(c) for c in x]))
        if cls is list:
            return _node("list", None, tuple([go(c) for c in x]))
        if cls is dict:
            return _node("dict", tuple(x), tuple([go(c) for c in x.values()]), _PLAIN_DICT)
        if x is None:
            return NONE
        if isinstance(x, tuple):
            if hasattr(cls, "_fields"):
                return _node("namedtuple", cls, tuple([go(c) for c in x]))
            return _node("tuple", None, tuple([go(c) for c in x]))
        if isinstance(x, list):
            return _node("list", None, tuple([go(c) for c in x]))
        if isinstance(x, dict):
            return _node("dict", tuple(x), tuple([go(x[k]) for k in x]), dict_container(x))
        leaf_classes.add(cls)
        append(x)
        return LEAF

    return leaves, go(tree)


def tree_unflatten(treedef: TreeDef, leaves) -> Any:
    """Rebuild a pytree of structure `treedef` from `leaves` (in flatten order).

    >>> leaves, td = tree_flatten(([1, 2], {"a": 3}))
    >>> tree_unflatten(td, [10, 20, 30])
    ([10, 20], {'a': 30})
    """
    build = treedef._build
    if build is None:  # generated once per treedef (interned: once per structure)
        build = _generated(treedef)
        object.__setattr__(treedef, "_build", build)
    if leaves.__class__ is not list and leaves.__class__ is not tuple:
        leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree_unflatten: structure {treedef} takes {treedef.num_leaves} leaves, "
                         f"got {len(leaves)}")
    return build(leaves)


_MAX_GENERATED_DEPTH = 40     # deeper or larger trees are rebuilt by closures (Python's parser nests
_MAX_GENERATED_LEAVES = 2000  # only so deep, and a huge expression costs more to compile than it saves)


def _generated(td: TreeDef) -> Callable:
    """A function taking the list of leaves and returning the tree of structure `td`: one Python
    expression indexing the list (``lambda l: ((l[0], [l[1], l[2]]), {})``), compiled once."""
    if _depth(td) > _MAX_GENERATED_DEPTH or td.num_leaves > _MAX_GENERATED_LEAVES:
        build = _builder(td)
        return lambda leaves: build(iter(leaves))
    names: dict = {}
    counter = iter(range(td.num_leaves))

    def name(obj) -> str:  # a namespace entry for a class, default factory or key tuple
        n = f"_c{len(names)}"
        names[n] = obj
        return n

    def expr(t: TreeDef) -> str:
        kind = t.kind
        if kind == "leaf":
            return f"l[{next(counter)}]"
        if kind == "none":
            return "None"
        kids = [expr(c) for c in t.children]
        if kind == "tuple":
            return "(" + "".join(k + ", " for k in kids) + ")"
        if kind == "list":
            return "[" + ", ".join(kids) + "]"
        if kind == "dict":
            cls, factory = t.container
            if cls is dict:
                return "{" + ", ".join(f"{name(k)}: {v}" for k, v in zip(t.meta, kids)) + "}"
            pairs = "zip(" + name(t.meta) + ", (" + "".join(k + ", " for k in kids) + "))"
            if cls is defaultdict:
                return f"{name(defaultdict)}({name(factory)}, {pairs})"
            return f"{name(cls)}({pairs})"
        return f"{name(t.meta)}(" + ", ".join(kids) + ")"  # namedtuple

    return eval("lambda l: " + expr(td), names)  # noqa: S307 -- text built above from the treedef only


def _depth(td: TreeDef) -> int:
    return 1 + max((_depth(c) for c in td.children), default=0) if td.children else 1


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
        cls, factory = td.container
        if cls is defaultdict:
            return lambda it: defaultdict(factory, zip(keys, [k(it) for k in kids]))
        return lambda it: cls(zip(keys, [k(it) for k in kids]))
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
            for k in t:
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
        return f"dict with keys {list(x)}"
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__} of length {len(x)}"
    return type(x).__name__
