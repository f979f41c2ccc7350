"""The op table: one row per user-facing op gives its `tp.` function, its Tensor
method (and in-place ``name_`` method) and its export, so that adding an op is one row.

Op modules add rows with `op(...)`; `tensorplay/__init__.py` exports
`exports()` and `tensorplay/_methods.py` attaches `methods()` and
`inplace_methods()`. A row's method is its function unless the row names a
method of its own (``Tensor.view`` must return a view, ``tp.view`` need not);
a row with ``export=False`` is a Tensor method only (``Tensor.repeat``).

>>> from tensorplay.ops._table import TABLE
>>> import tensorplay as tp
>>> TABLE["sin"].fn is tp.sin, TABLE["sin"].method, TABLE["sin"].inplace
(True, True, True)
>>> TABLE["view"].method_fn is tp.Tensor.view, TABLE["repeat"].export
(True, False)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["Op", "TABLE", "op", "exports", "methods", "inplace_methods"]


@dataclass(frozen=True)
class Op:
    """One user-facing op: `tp.<name>`, and (flags) `Tensor.<name>` and `Tensor.<name>_`.

    `method` is True (the method is `fn`), False (no method) or the method itself when it differs
    from the function; `export` False leaves `tp.<name>` out (a method only)."""

    name: str
    fn: Callable
    method: bool | Callable = True
    inplace: bool = False
    export: bool = True

    @property
    def method_fn(self) -> Callable | None:
        """What ``Tensor.<name>`` is (None: no method)."""
        if self.method is True:
            return self.fn
        return self.method or None


TABLE: dict[str, Op] = {}


def op(name: str, fn: Callable, *, method: bool | Callable = True, inplace: bool = False,
       export: bool = True) -> Callable:
    """Add the row `name` (each name once) and return `fn`, for ``sin = op("sin", ...)``."""
    if name in TABLE:
        raise ValueError(f"op {name!r} is in the op table twice")
    TABLE[name] = Op(name, fn, method, inplace, export)
    return fn


def exports() -> dict[str, Callable]:
    """``tp.<name>`` for every exported row."""
    return {r.name: r.fn for r in TABLE.values() if r.export}


def methods() -> dict[str, Callable]:
    """``Tensor.<name>`` for the rows that are methods."""
    return {r.name: r.method_fn for r in TABLE.values() if r.method_fn is not None}


def inplace_methods() -> dict[str, Callable]:
    """``Tensor.<name>_`` (the out-of-place function; `_methods` writes the result back)."""
    return {r.name + "_": r.fn for r in TABLE.values() if r.inplace}
