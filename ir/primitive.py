"""The primitive registry: one `Primitive` per op, carrying all of its rules.

Rule signatures are fixed here; passes add information through `ctx`, never
through a second registry.

- ``abstract_eval(*in_types, **attrs) -> TensorType``: the shape/dtype rule.
- ``impl(*arrays, **attrs) -> np.ndarray``: numpy execution (eager and interpreter).
- ``jvp(ctx, primals, tangents, **attrs) -> (primal_out, tangent_out | None)``:
  `ctx` is a `GraphBuilder`; a tangent of ``None`` is a symbolic zero.
- ``transpose(ctx, ct, operands, **attrs) -> list[Value | None]``: for linear
  primitives; operands that are linear inputs are `UndefinedPrimal` markers.
- ``batch(ctx, values, dims, **attrs) -> (Value, dim | None)``: `dims[i]` is the
  batch axis of `values[i]` or ``None``; `ctx` is a builder that also knows
  `axis_size` (and, for random primitives, `randomness`).

Codegen lowerings live in `codegen/` keyed by primitive name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .types import TensorType

REGISTRY: dict[str, "Primitive"] = {}


@dataclass(frozen=True)
class UndefinedPrimal:
    """Marks a linear operand whose cotangent the transpose rule must produce."""

    type: TensorType

    @property
    def shape(self):
        return self.type.shape

    @property
    def dtype(self):
        return self.type.dtype


class Primitive:
    """A primitive operation and all of its rules (see the module docstring)."""

    def __init__(self, name: str, abstract_eval: Callable[..., TensorType], impl: Callable[..., Any], *,
                 jvp: Callable | None = None, transpose: Callable | None = None, batch: Callable | None = None,
                 differentiable: bool = True, random: bool = False, variadic: bool = False,
                 num_operands: int | None = None, doc: str = ""):
        self.name = name
        self.abstract_eval = abstract_eval
        self.impl = impl
        self.jvp = jvp
        self.transpose = transpose
        self.batch = batch
        # A non-differentiable primitive has zero tangents everywhere (comparisons, argmax, iota, ...).
        self.differentiable = differentiable
        self.random = random
        self.variadic = variadic
        self.num_operands = num_operands
        self.doc = doc

    def def_jvp(self, fn):
        self.jvp = fn
        return fn

    def def_transpose(self, fn):
        self.transpose = fn
        return fn

    def def_batch(self, fn):
        self.batch = fn
        return fn

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


def register(prim: Primitive) -> Primitive:
    if prim.name in REGISTRY:
        raise ValueError(f"primitive {prim.name!r} registered twice")
    REGISTRY[prim.name] = prim
    return prim


def get_primitive(name: str) -> Primitive:
    _ensure_loaded()
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown primitive {name!r}") from None


def all_primitives() -> list[Primitive]:
    _ensure_loaded()
    return list(REGISTRY.values())


def _ensure_loaded() -> None:
    from . import prims  # noqa: F401  (declares every primitive on import)
