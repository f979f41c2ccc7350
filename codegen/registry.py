"""The lowering registry: one `Lowering` per primitive, keyed by primitive name.

A lowering has one of five kinds, each with one frozen signature:

- ``expr``: ``emit(ctx, node, idx) -> ir.Value`` returns the element of
  ``node.out`` at `idx` (an `Index`), asking ``ctx.value(operand, index)`` for
  operand elements. Elementwise math, select, convert and every layout op are
  expressions, so the scheduler can fuse chains of them into one loop nest.
- ``kernel``: ``emit(ctx, node) -> None`` emits a whole loop nest storing
  ``node.out`` (reductions, arg-reductions, dot_general, index_add).
- ``control``: ``emit(entry, site) -> None`` emits control flow in the entry
  function (a branch for ``cond``, a loop for ``while_loop`` and ``scan``)
  around the kernels of the node's regions; ``temps(node, used) -> {name:
  bytes}`` names the scratch buffers it needs besides its results
  (`lowerings/control.py`, `module.EntryBuilder`).
- ``alias``: no code; the result shares a buffer (``tuple_get`` names an
  element of a control node's result; ``make_tuple`` is folded before
  scheduling, `schedule.normalize`).
- ``inline``: replaced before scheduling by the region that ``inline(node) ->
  (graph, operands)`` names (custom-derivative calls and ``checkpoint`` run
  their primal function), so it fuses with its neighbours.

A floating-point lowering that is not exact states its error bound `ulp`
(float32, float64): max error in ulp of the result against the correctly
rounded value. `tests/codegen/test_vecmath.py` measures every stated bound.

Lowerings are declared in `codegen/lowerings/*` with `@lowering` (or
`register` for a prepared `Lowering`); this module imports nothing else of
the backend, so every other module may import it.

>>> from tensorplay.codegen.registry import LOWERINGS
>>> import tensorplay.codegen.lower  # fills the table
>>> LOWERINGS["sin"].kind, LOWERINGS["reduce_sum"].kind
('expr', 'kernel')
"""
from __future__ import annotations

from ._record import record
from typing import Callable

from tensorplay.ir.core import Node

__all__ = ["Lowering", "LOWERINGS", "lowering", "register", "always"]


def always(node: Node) -> bool:
    """A `Lowering` predicate that holds for every node (e.g. `linear` of an elementwise op).

    >>> always(None), never(None)
    (True, False)
    """
    return True


def never(node: Node) -> bool:
    """A `Lowering` predicate that holds for no node."""
    return False


KINDS = ("expr", "kernel", "control", "alias", "inline")


@record(frozen=True)
class Lowering:
    """How one primitive is compiled (see the module docstring for the `kind`s)."""

    kind: str
    emit: Callable | None  # None for the `alias` and `inline` kinds, which emit no code
    elementwise: bool = False  # expr whose operands are read at the output index itself
    cheap: bool = True  # expr: recomputing it per use costs a few instructions
    linear: Callable[[Node], bool] = never  # expr: needs only the linear output index
    expands: Callable[[Node], bool] = never  # expr: evaluates an operand more often than its size
    fuses_producers: bool = False  # kernel: operands are evaluated as fused expressions
    ulp: tuple[float, float] | None = None  # error bound (float32, float64); None: exact
    temps: Callable | None = None  # control: (node, used elements) -> {scratch name: bytes}
    inline: Callable | None = None  # inline: node -> (region graph, its operands)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Lowering kind must be one of {KINDS}, got {self.kind!r}")
        if (self.kind == "control") != (self.temps is not None):
            raise ValueError("a control lowering (and only it) states its scratch buffers (`temps`)")
        if (self.kind == "inline") != (self.inline is not None):
            raise ValueError("an inline lowering (and only it) names the region it inlines (`inline`)")


LOWERINGS: dict[str, Lowering] = {}


def register(name: str, low: Lowering) -> Lowering:
    """Enter `low` as the lowering of primitive `name` (each primitive is lowered once)."""
    if name in LOWERINGS:
        raise ValueError(f"primitive {name!r} has two lowerings")
    LOWERINGS[name] = low
    return low


def lowering(name: str, kind: str = "expr", **traits) -> Callable[[Callable], Callable]:
    """Decorator: register the decorated emitter as the `kind` lowering of primitive `name`.

    >>> @lowering("my_identity_example")
    ... def _identity(ctx, node, idx):
    ...     return ctx.value(node.inputs[0], idx)
    >>> LOWERINGS.pop("my_identity_example").kind
    'expr'
    """
    def deco(emit: Callable) -> Callable:
        register(name, Lowering(kind, emit, **traits))
        return emit
    return deco
