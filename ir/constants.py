"""Constant tensors in the IR: `DenseElements`, the attribute of the `constant` primitive.

A traced function's captured tensors are graph inputs (so that a new value of a captured
tensor never forces a new compile). A graph that must stand on its own -- a dumped file that
`tensorplay-ir run` executes -- carries them as `constant` nodes instead: `bind_constants`
turns chosen inputs into constants.

In the text format a small constant prints its elements, as MLIR does::

    %0 = tp.constant {value = dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>

one with all elements equal prints one (``dense<0.5> : tensor<64xf32>``), and a large one is
elided to a content hash, ``dense_resource<c_3b1f...> : tensor<512x512xf32>``, whose elements
live in a side file (`resources` collects them; ``.npz``, written and read by the CLI).
"""
from __future__ import annotations

import hashlib
from typing import Mapping, Sequence

import numpy as np

from . import dtypes as dt
from .types import TensorType

__all__ = ["DenseElements", "ELIDE_ABOVE", "resources", "dense_text", "parse_dense"]

# Constants with more elements than this (and not a splat) print as a dense_resource.
ELIDE_ABOVE = 64


class DenseElements:
    """The elements of a constant tensor: an immutable, C-contiguous array, hashed and compared
    by content (so equal constants are equal attributes: CSE and the caches see them as one).

    >>> c = DenseElements(np.arange(3, dtype=np.float32))
    >>> c.type, c == DenseElements([0.0, 1.0, 2.0], dt.float32), c.resource_name[:2]
    (tensor<3xf32>, True, 'c_')
    """

    __slots__ = ("array", "type", "_digest")

    def __init__(self, array, dtype: dt.DType | None = None):
        a = np.array(array, dtype=None if dtype is None else dtype.np, order="C", copy=True)
        ir_dtype = dt.from_numpy(a.dtype)
        a.setflags(write=False)
        self.array = a
        self.type = TensorType(tuple(int(n) for n in a.shape), ir_dtype)
        self._digest = hashlib.sha256(a.dtype.str.encode() + repr(a.shape).encode() + a.tobytes()).hexdigest()

    @property
    def resource_name(self) -> str:
        """The name of the elided form: ``c_`` and 20 hex digits of the content hash."""
        return "c_" + self._digest[:20]

    @property
    def is_splat(self) -> bool:
        """All elements equal (bitwise for floats, so -0.0 and NaN payloads are kept)."""
        flat = self.array.reshape(-1)
        return flat.size > 0 and bool((flat.view(np.uint8).reshape(flat.size, -1)
                                       == flat[:1].view(np.uint8)).all())

    def __eq__(self, other) -> bool:
        return isinstance(other, DenseElements) and other._digest == self._digest

    def __hash__(self) -> int:
        return hash(self._digest)

    def __repr__(self) -> str:
        return f"DenseElements({self.type}, {self.resource_name})"


def _element_text(x) -> str:
    if isinstance(x, (bool, np.bool_)):
        return "true" if x else "false"
    if isinstance(x, (float, np.floating)):
        return repr(float(x))  # shortest repr that reads back to the same float (nan, inf included)
    return str(int(x))


def _nested_text(a: np.ndarray) -> str:
    if a.ndim == 0:
        return _element_text(a[()])
    return "[" + ", ".join(_nested_text(a[i]) for i in range(a.shape[0])) + "]"


def dense_text(c: DenseElements) -> str:
    """The attribute text of `c` (``dense<...> : tensor<...>`` or ``dense_resource<name> : ...``)."""
    if c.is_splat and c.array.size > 1:
        body = _element_text(c.array.reshape(-1)[0])
    elif c.array.size > ELIDE_ABOVE:
        return f"dense_resource<{c.resource_name}> : {c.type}"
    else:
        body = _nested_text(c.array)
    return f"dense<{body}> : {c.type}"


def parse_dense(body: str, t: TensorType, resource: str | None = None,
                resource_table: Mapping[str, np.ndarray] | None = None) -> DenseElements:
    """The constant of type `t` written as ``dense<body>`` (or ``dense_resource<resource>``).

    Raises ValueError naming what is wrong: a malformed literal, a shape or element count that
    differs from `t`, or a resource missing from `resource_table`.
    """
    if resource is not None:
        if resource_table is None or resource not in resource_table:
            raise ValueError(f"constant dense_resource<{resource}> : {t} needs its elements: give the side file "
                             f"(.npz) that was written with this IR")
        a = np.asarray(resource_table[resource])
        if tuple(a.shape) != t.shape or dt.from_numpy(a.dtype) is not t.dtype:
            raise ValueError(f"resource {resource} holds {a.dtype}{list(a.shape)}, the IR declares {t}")
        c = DenseElements(a)
        if c.resource_name != resource:
            raise ValueError(f"resource {resource} does not match its content hash ({c.resource_name}): "
                             f"the side file belongs to another IR file")
        return c
    values = _read_nested(body)
    a = np.array(values, dtype=t.dtype.np) if not (isinstance(values, list) and not values) \
        else np.zeros((0,), t.dtype.np)
    if a.ndim == 0 and t.shape:
        a = np.full(t.shape, a, dtype=t.dtype.np)  # a splat
    elif a.size == 0 and _count(t.shape) == 0:
        a = a.reshape(t.shape)
    if tuple(a.shape) != t.shape:
        raise ValueError(f"dense<{body}> has shape {list(a.shape)}, its type says {t}")
    return DenseElements(a, t.dtype)


def _count(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


_WORDS = {"true": True, "false": False, "nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def _read_nested(text: str):
    """Nested lists of numbers / true / false / nan / inf, as `dense_text` prints them."""
    pos = 0

    def skip():
        nonlocal pos
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1

    def item():
        nonlocal pos
        skip()
        if pos < len(text) and text[pos] == "[":
            pos += 1
            items = []
            skip()
            if pos < len(text) and text[pos] == "]":
                pos += 1
                return items
            while True:
                items.append(item())
                skip()
                if pos < len(text) and text[pos] == ",":
                    pos += 1
                    continue
                if pos < len(text) and text[pos] == "]":
                    pos += 1
                    return items
                raise ValueError(f"dense<{text}>: expected ',' or ']' at offset {pos}")
        start = pos
        while pos < len(text) and text[pos] not in ",] \t\r\n":
            pos += 1
        word = text[start:pos]
        if word in _WORDS:
            return _WORDS[word]
        try:
            return int(word)
        except ValueError:
            pass
        try:
            return float(word)
        except ValueError:
            raise ValueError(f"dense<{text}>: {word!r} is not a number, true/false, nan or inf") from None

    value = item()
    skip()
    if pos != len(text):
        raise ValueError(f"dense<{text}>: unexpected text at offset {pos}")
    return value


def resources(graphs: Sequence) -> dict[str, np.ndarray]:
    """The elided constants of `graphs` (and of graphs nested in their attributes), by resource name."""
    out: dict[str, np.ndarray] = {}
    stack = list(graphs)
    while stack:
        g = stack.pop()
        for n in g.nodes:
            for a in n.attrs.values():
                if isinstance(a, DenseElements) and dense_text(a).startswith("dense_resource"):
                    out[a.resource_name] = a.array
                inner = getattr(a, "graph", None)  # a region's subgraph
                if inner is not None and hasattr(inner, "nodes"):
                    stack.append(inner)
    return out
