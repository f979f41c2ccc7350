"""`rearrange`: einops-style reshaping and permutation by naming the axes.

A pattern is parsed once into a small immutable `Pattern` (cached); for each input
rank and set of given axis lengths it becomes a `Recipe` (cached), and for each
input shape a plan of at most three tensor ops (cached): a reshape splitting the
input axes into elementary axes, a permutation of those, and a reshape composing
the output axes. The ops are ordinary tensor ops, so `rearrange` returns a view
when the layout allows (as `reshape` does) and works under every transform.

Grammar (per side of ``->``): names (Python identifiers, not starting or ending
with ``_``), parenthesised groups of them (one tensor axis composed of several
elementary axes; no nesting), ``...`` (any number of axes, once per side; inside
parentheses only on the right), and the unit axes ``1`` and ``()``.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from math import prod

from .._tensor import Tensor

__all__ = ["rearrange", "RearrangeError"]

_ELLIPSIS = "..."
_TOKEN = re.compile(r"\.\.\.|…|[()]|[^\s()]+")


class RearrangeError(ValueError):
    """A malformed pattern, or a pattern that does not fit the tensor; the message quotes the pattern."""


def _error(pattern: str, message: str, shape=None) -> RearrangeError:
    where = f" for input of shape {tuple(shape)}" if shape is not None else ""
    return RearrangeError(f'rearrange: {message} in pattern "{pattern}"{where}')


# --- parsing -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Side:
    """One side of a pattern: a tuple of groups, each a tuple of axis names (``...`` included).

    `bare[i]` is True when group i was written without parentheses (a single name or ``...``);
    a unit axis (``1`` or ``()``) is an empty parenthesised group.
    """

    groups: tuple[tuple[str, ...], ...]
    bare: tuple[bool, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for g in self.groups for n in g if n != _ELLIPSIS)

    @property
    def has_ellipsis(self) -> bool:
        return any(_ELLIPSIS in g for g in self.groups)


@dataclass(frozen=True)
class Pattern:
    """A parsed ``left -> right`` pattern, validated for names (but not for any shape)."""

    text: str
    left: Side
    right: Side


def _parse_side(pattern: str, text: str, which: str) -> Side:
    groups: list[tuple[str, ...]] = []
    bare: list[bool] = []
    current: list[str] | None = None
    for tok in _TOKEN.findall(text):
        if tok == "(":
            if current is not None:
                raise _error(pattern, f"nested parentheses on the {which} side")
            current = []
        elif tok == ")":
            if current is None:
                raise _error(pattern, f"unmatched ')' on the {which} side")
            groups.append(tuple(current))
            bare.append(False)
            current = None
        else:
            name = _ELLIPSIS if tok in (_ELLIPSIS, "…") else _check_name(pattern, tok)
            if name == "1":
                if current is None:
                    groups.append(())
                    bare.append(False)
                continue
            if current is not None:
                current.append(name)
            else:
                groups.append((name,))
                bare.append(True)
    if current is not None:
        raise _error(pattern, f"unmatched '(' on the {which} side")
    side = Side(tuple(groups), tuple(bare))
    flat = [n for g in side.groups for n in g]
    if flat.count(_ELLIPSIS) > 1:
        raise _error(pattern, f"'...' appears more than once on the {which} side")
    dup = sorted({n for n in flat if n != _ELLIPSIS and flat.count(n) > 1})
    if dup:
        raise _error(pattern, f"axis {', '.join(map(repr, dup))} repeated on the {which} side")
    return side


def _check_name(pattern: str, tok: str) -> str:
    if tok.isdigit():
        if int(tok) != 1:
            raise _error(pattern, f"anonymous axis {tok} is not supported (only the unit axis 1 is; name the axis "
                                  f"and give its length as a keyword instead)")
        return "1"
    if not tok.isidentifier():
        raise _error(pattern, f"invalid axis name {tok!r} (axis names are Python identifiers, '...', '1' or '()')")
    if tok.startswith("_") or tok.endswith("_"):
        raise _error(pattern, f"axis name {tok!r} must not start or end with an underscore")
    return tok


@functools.lru_cache(maxsize=512)
def parse_pattern(pattern: str) -> Pattern:
    """Parse and validate `pattern` (cached).

    >>> parse_pattern("b (h w) -> b h w").left
    Side(groups=(('b',), ('h', 'w')), bare=(True, False))
    """
    if not isinstance(pattern, str):
        raise TypeError(f"rearrange: pattern must be a string, got {type(pattern).__name__}")
    if pattern.count("->") != 1:
        raise _error(pattern, "expected exactly one '->' separating the input and output axes")
    lhs, rhs = pattern.split("->")
    left, right = _parse_side(pattern, lhs, "left"), _parse_side(pattern, rhs, "right")
    for g, b in zip(left.groups, left.bare):
        if _ELLIPSIS in g and not b:
            raise _error(pattern, "'...' inside parentheses is only allowed on the right side")
    if left.has_ellipsis != right.has_ellipsis:
        side = "left" if left.has_ellipsis else "right"
        raise _error(pattern, f"'...' appears on the {side} side only (it must be on both or neither)")
    only = sorted(set(left.names) ^ set(right.names))
    if only:
        raise _error(pattern, f"axis {', '.join(map(repr, only))} appears on one side only (names must be on both "
                              f"sides)")
    return Pattern(pattern, left, right)


# --- recipes (per rank) and plans (per shape) ----------------------------------------------------
@dataclass(frozen=True)
class Recipe:
    """`pattern` specialised to an input rank: elementary axes, their grouping and their permutation."""

    pattern: str
    inputs: tuple[tuple[str, ...], ...]    # per input axis, the elementary axes composing it
    outputs: tuple[tuple[str, ...], ...]   # per output axis, the elementary axes composing it
    elementary: tuple[str, ...]            # elementary axes in input order
    permutation: tuple[int, ...]           # output order of the elementary axes


def _expand(side: Side, n_ellipsis: int) -> tuple[tuple[str, ...], ...]:
    dots = tuple(f"...{i}" for i in range(n_ellipsis))
    out: list[tuple[str, ...]] = []
    for g, b in zip(side.groups, side.bare):
        if _ELLIPSIS not in g:
            out.append(g)
        elif b:
            out.extend((d,) for d in dots)
        else:
            i = g.index(_ELLIPSIS)
            out.append(g[:i] + dots + g[i + 1:])
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def make_recipe(pattern: str, ndim: int, axes_names: tuple[str, ...] = ()) -> Recipe:
    """The recipe for `pattern` on a rank-`ndim` input with lengths given for `axes_names` (cached)."""
    p = parse_pattern(pattern)
    for name in axes_names:
        if name not in p.left.names:
            raise _error(pattern, f"axis length given for {name!r}, which is not an axis of the pattern")
    fixed = len(p.left.groups) - p.left.has_ellipsis
    if p.left.has_ellipsis:
        if ndim < fixed:
            raise _error(pattern, f"wrong number of dimensions: expected at least {fixed}, got a {ndim}-d tensor")
    elif ndim != fixed:
        raise _error(pattern, f"wrong number of dimensions: expected {fixed}, got a {ndim}-d tensor")
    n_dots = ndim - fixed if p.left.has_ellipsis else 0
    inputs, outputs = _expand(p.left, n_dots), _expand(p.right, n_dots)
    elementary = tuple(n for g in inputs for n in g)
    index = {n: i for i, n in enumerate(elementary)}
    permutation = tuple(index[n] for g in outputs for n in g)
    return Recipe(pattern, inputs, outputs, elementary, permutation)


@functools.lru_cache(maxsize=4096)
def make_plan(recipe: Recipe, shape: tuple[int, ...], lengths: tuple[tuple[str, int], ...] = ()):
    """(elementary shape, permutation or None, output shape) for an input of `shape` (cached)."""
    known = dict(lengths)
    pattern = recipe.pattern
    for size, group in zip(shape, recipe.inputs):
        if not group:
            if size != 1:
                raise _error(pattern, f"an axis of length {size} is matched by a unit axis ('1' or '()')", shape)
            continue
        unknown = [n for n in group if n not in known]
        if len(unknown) > 1:
            raise _error(pattern, f"cannot infer the lengths of {', '.join(map(repr, unknown))} in "
                                  f"({' '.join(group)}): give all but one as keywords", shape)
        part = prod(known[n] for n in group if n in known)
        if unknown:
            if part == 0 or size % part:
                raise _error(pattern, f"cannot divide an axis of length {size} into ({' '.join(group)}) with "
                                      f"known lengths of product {part}", shape)
            known[unknown[0]] = size // part
        elif part != size:
            what = f"{group[0]}={part}" if len(group) == 1 else f"({' '.join(group)}) of product {part}"
            raise _error(pattern, f"an axis of length {size} does not match {what}", shape)
    elementary = tuple(known[n] for n in recipe.elementary)
    perm = recipe.permutation if recipe.permutation != tuple(range(len(elementary))) else None
    out_shape = tuple(prod(known[n] for n in g) for g in recipe.outputs)
    return elementary, perm, out_shape


# --- the op --------------------------------------------------------------------------------------
def rearrange(tensor, pattern: str, **axes_lengths) -> Tensor:
    """Reshapes and permutes `tensor` according to `pattern`.

    `pattern` is ``"<input axes> -> <output axes>"``: names bind by position on the
    left and select by name on the right; parentheses group axes (compose on the
    right, decompose on the left); ``...`` matches any number of axes; ``1`` and
    ``()`` are axes of length 1. `axes_lengths` give the lengths of axes that an
    input axis is split into when they cannot be inferred. A list or tuple of
    tensors is stacked along a new leading axis first. The result is a view of the
    input whenever `reshape` would give one. Errors are `RearrangeError`, a
    ValueError quoting the pattern.

    >>> import tensorplay
    >>> from tensorplay.func import rearrange
    >>> x = tensorplay.randn(2, 3, 4)
    >>> rearrange(x, "b h w -> b w h").shape
    tensorplay.Size(2, 4, 3)
    >>> rearrange(x, "b h w -> b (h w)").shape
    tensorplay.Size(2, 12)
    >>> rearrange(x, "(b1 b2) h w -> b1 b2 h w", b1=1).shape
    tensorplay.Size(1, 2, 3, 4)
    >>> rearrange([x, x, x], "n b ... -> b n (...)").shape
    tensorplay.Size(2, 3, 12)
    >>> rearrange(tensorplay.arange(6).reshape(2, 3), "h w -> (w h)")
    tensor([0, 3, 1, 4, 2, 5])
    """
    from .._methods import sh  # the shape ops (reshape, permute, stack)
    from ..ops._common import as_tensor_operand

    if not isinstance(pattern, str):
        raise TypeError(f"rearrange: pattern must be a string, got {type(pattern).__name__}")
    if isinstance(tensor, (list, tuple)):
        if not tensor:
            raise _error(pattern, "cannot stack an empty list of tensors")
        x = sh.stack([as_tensor_operand(t) for t in tensor], 0)
    else:
        x = as_tensor_operand(tensor)
    for name, n in axes_lengths.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise _error(pattern, f"the length of axis {name!r} must be a non-negative int, got {n!r}")
    recipe = make_recipe(pattern, x.ndim, tuple(sorted(axes_lengths)))
    elementary, perm, out_shape = make_plan(recipe, tuple(x.shape), tuple(sorted(axes_lengths.items())))
    if elementary != tuple(x.shape):
        x = sh.reshape(x, elementary)
    if perm is not None:
        x = sh.permute(x, perm)
    if out_shape != tuple(x.shape):
        x = sh.reshape(x, out_shape)
    return x
