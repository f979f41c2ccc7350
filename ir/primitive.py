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
- ``partial_eval(ctx, operands, unknowns, **attrs) -> [(unknown, Value), ...] | None``:
  for primitives that carry regions, the split of one node with some unknown operands
  into a known node (which may also emit residuals) and an unknown node; one entry per
  result element (see `ir.passes.partial_eval`). Without it (or when it returns None)
  the whole node goes to the unknown side.

Results of `TupleType` (control flow) have structured tangents and cotangents: a tuple
with one entry (a `Value` or ``None``) per element, or ``None`` when all are zero.

Besides its rules, a primitive carries what the rest of the system needs to
know about it, so that nothing keeps a list of names:

- ``family``: ``elementwise``, ``compare``, ``logical``, ``layout``,
  ``indexing``, ``constant``, ``reduction``, ``contraction``, ``random`` or
  ``control`` (primitives carrying regions, and the tuples they return)
  (drawings, docs, and the family-wide folding and batching helpers);
- ``roles``: what each operand is: ``data`` (carries the element type),
  ``pred`` (a boolean mask), ``index`` (integer positions) or ``tuple`` (a
  tuple value; test samples give its elements, packed with ``make_tuple``);
- ``fold(consts, operands, attrs, out) -> scalar | None``: the value of the
  node when every operand is a constant fill (``consts``: their Python
  scalars); used by `simplify`;
- ``domain``: one `Domain` per operand, where samples for the tests are
  drawn (inside it the op is smooth, so finite differences work too);
- ``doc``: one line in our words (``docs/ir.md`` and ``tensorplay-ir list prims``);
- ``examples() -> [(args, attrs, expected), ...]``: concrete applications for the
  registry-driven tests, for primitives whose attributes the generic sample
  builders cannot draw (regions): numpy `args`, frozen `attrs`, and an
  independent numpy reference `expected(*args, **attrs)` (or None).

Codegen lowerings live in `codegen/` keyed by primitive name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .dtypes import UNCHANGED_FAMILIES, widen
from .types import TensorType

REGISTRY: dict[str, "Primitive"] = {}

FAMILIES = ("elementwise", "compare", "logical", "layout", "indexing", "constant", "reduction", "contraction",
            "random", "control")
ROLES = ("data", "pred", "index", "tuple")


@dataclass(frozen=True)
class Domain:
    """Where test samples of one operand are drawn: floats uniform in [lo, hi), integers in
    [ceil(lo), floor(hi)]; ``avoid`` keeps floats away from a kink: ``"zero"`` (|x| >= 0.25,
    integers nonzero) or ``"integers"`` (0.1 away from integers and half-integers).

    >>> Domain(0.1, 4.0)
    Domain(lo=0.1, hi=4.0, avoid=None)
    """

    lo: float = -2.0
    hi: float = 2.0
    avoid: str | None = None

    def __post_init__(self):
        if not self.lo < self.hi:
            raise ValueError(f"Domain: lo={self.lo} must be below hi={self.hi}")
        if self.avoid not in (None, "zero", "integers"):
            raise ValueError(f"Domain: avoid must be None, 'zero' or 'integers', got {self.avoid!r}")


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
                 partial_eval: Callable | None = None,
                 differentiable: bool = True, random: bool = False, variadic: bool = False,
                 num_operands: int | None = None, doc: str = "", family: str | None = None,
                 roles: tuple[str, ...] | None = None, fold: Callable | None = None,
                 domain: "Domain | tuple[Domain, ...] | None" = None, examples: Callable | None = None):
        if family is not None and family not in FAMILIES:
            raise ValueError(f"primitive {name!r}: family must be one of {FAMILIES}, got {family!r}")
        if roles is not None and not set(roles) <= set(ROLES):
            raise ValueError(f"primitive {name!r}: operand roles must be among {ROLES}, got {roles!r}")
        self.name = name
        self.abstract_eval = abstract_eval
        # `impl` as called everywhere: 16-bit float operands computed in float32 (`ir.dtypes.widen`);
        # `full_width_impl` is the numpy function itself (the eager fast path, for other dtypes).
        self.impl = impl if family in UNCHANGED_FAMILIES else widen(impl)
        self.full_width_impl = impl
        self.jvp = jvp
        self.transpose = transpose
        self.batch = batch
        self.partial_eval = partial_eval
        # A non-differentiable primitive has zero tangents everywhere (comparisons, argmax, iota, ...).
        self.differentiable = differentiable
        self.random = random
        self.variadic = variadic
        self.num_operands = num_operands
        self.doc = doc
        self.family = family
        self.roles = roles
        self.fold = fold
        if isinstance(domain, Domain) and num_operands:
            domain = (domain,) * num_operands
        self.domain = domain
        self.examples = examples

    def data_dtype(self, operands):
        """The element type of the op: that of its first ``data`` operand (`operands` have ``dtype``)."""
        if self.roles is None:
            return operands[0].dtype
        return operands[self.roles.index("data")].dtype

    def role(self, i: int) -> str:
        """The role of operand `i` (``data`` unless declared otherwise)."""
        if self.roles is None or i >= len(self.roles):
            return "data"
        return self.roles[i]

    def def_jvp(self, fn):
        self.jvp = fn
        return fn

    def def_transpose(self, fn):
        self.transpose = fn
        return fn

    def def_batch(self, fn):
        self.batch = fn
        return fn

    def def_partial_eval(self, fn):
        self.partial_eval = fn
        return fn

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


def register(prim: Primitive) -> Primitive:
    if prim.name in REGISTRY:
        raise ValueError(f"primitive {prim.name!r} registered twice")
    REGISTRY[prim.name] = prim
    return prim


def get_primitive(name: str) -> Primitive:
    """The registered primitive `name` (the registry is filled when `tensorplay.ir` is imported)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown primitive {name!r}") from None


def all_primitives() -> list[Primitive]:
    """Every registered primitive, in declaration order."""
    return list(REGISTRY.values())
