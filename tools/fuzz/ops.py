"""The fuzzer's op table: each entry is one ``tp.`` op (or a small guarded use of it) with its
numpy twin, where it is valid, how smooth it is and how many ulps it may cost.

Templates are Python expressions: ``{0}``, ``{1}`` are operands, ``{w}`` an extra weight
input the op brings along, ``{d}`` a (negative) dimension, ``{base}`` the program's base
shape. Domains are guarded inside the template (``log(x*x + 0.5)``, ``exp(3*tanh(x))``) so
that values stay finite whatever the operands are.

`kink` (numpy, on float64 operand values) gives the smallest distance of the operands to a
point where the op is not differentiable or not continuous; the generator keeps such ops only
where that distance is comfortable, so float rounding and finite differences never straddle
a kink.

>>> OPS["sin"].tp.format("a0")
'tp.sin(a0)'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

FLOAT, INT = "f", "i"


def _min_abs(x) -> float:
    x = np.asarray(x)
    return float(np.abs(x).min()) if x.size else np.inf


def _gap(a, b) -> float:
    return _min_abs(np.asarray(a) - np.asarray(b))


def _to_int(x) -> float:
    return _min_abs(np.asarray(x) - np.round(x))


def _to_half(x) -> float:
    return _min_abs(np.asarray(x) - np.floor(x) - 0.5)


def _top_gap(x, d) -> float:
    """Smallest gap between the two largest entries along `d` (ties make max non-differentiable)."""
    x = np.asarray(x)
    if x.ndim == 0 or x.shape[d] < 2 or x.size == 0:
        return np.inf
    s = np.sort(x, axis=d)
    return _min_abs(np.take(s, -1, axis=d) - np.take(s, -2, axis=d))


def _bottom_gap(x, d) -> float:
    return _top_gap(-np.asarray(x), d)


def _row_norm(x, d) -> float:
    x = np.asarray(x)
    if x.ndim == 0 or x.shape[d] == 0:
        return np.inf
    return _min_abs(np.sqrt(np.sum(x * x, axis=d)))


def _row_spread(x, d) -> float:
    x = np.asarray(x)
    if x.ndim == 0 or x.shape[d] == 0:
        return np.inf
    return _min_abs(np.std(x, axis=d))


@dataclass(frozen=True)
class Op:
    """One fuzzable op: its tensorplay and numpy templates and where it applies."""

    name: str
    arity: int
    tp: str
    np: str
    kinds: tuple[str, ...] = (FLOAT,)
    ulp: float = 1.0                      # error in ulps of the result, beyond its operands' errors
    kink: Callable | None = None          # distance to a non-smooth point (see module docstring)
    dim: bool = False                     # takes a dimension {d}
    nonempty: bool = False                # the reduced dimension {d} must be non-empty
    weight: bool = False                  # brings a square weight input {w} (last dim x last dim)
    min_ndim: int = 0
    same_shape: bool = False              # operands must broadcast to operand 0's shape (in-place)
    reduces: bool = False                 # error grows with the reduced length
    tags: frozenset = field(default_factory=frozenset)


def _op(name, arity, tp, np_, **kw) -> Op:
    return Op(name, arity, tp, np_, **kw)


_B = (FLOAT, INT)
_TABLE = [
    # --- unary, smooth, with guarded domains -------------------------------------------------
    _op("sin", 1, "tp.sin({0})", "np.sin({0})", ulp=2),
    _op("cos_method", 1, "{0}.cos()", "np.cos({0})", ulp=2),
    _op("tan", 1, "tp.tan(tp.tanh({0}))", "np.tan(np.tanh({0}))", ulp=6),
    _op("tanh", 1, "tp.tanh({0})", "np.tanh({0})", ulp=3),
    _op("sigmoid", 1, "tp.sigmoid({0})", "1 / (1 + np.exp(-{0}))", ulp=3),
    _op("exp", 1, "tp.exp(3 * tp.tanh({0}))", "np.exp(3 * np.tanh({0}))", ulp=6),
    _op("expm1", 1, "tp.expm1(tp.tanh({0}))", "np.expm1(np.tanh({0}))", ulp=6),
    _op("log", 1, "tp.log({0} * {0} + 0.5)", "np.log({0} * {0} + 0.5)", ulp=4),
    _op("log1p", 1, "tp.log1p({0} * {0})", "np.log1p({0} * {0})", ulp=4),
    _op("sqrt", 1, "tp.sqrt({0} * {0} + 0.25)", "np.sqrt({0} * {0} + 0.25)", ulp=3),
    _op("rsqrt", 1, "tp.rsqrt({0} * {0} + 0.25)", "1 / np.sqrt({0} * {0} + 0.25)", ulp=4),
    _op("reciprocal", 1, "tp.reciprocal({0} * {0} + 0.5)", "1 / ({0} * {0} + 0.5)", ulp=3),
    _op("erf", 1, "tp.erf({0})", "np.vectorize(__import__('math').erf, otypes=[float])({0})", ulp=3),
    _op("pow_scalar", 1, "tp.pow({0} * {0} + 0.5, 1.5)", "np.power({0} * {0} + 0.5, 1.5)", ulp=6),
    _op("square", 1, "tp.square({0})", "np.square({0})"),
    _op("neg", 1, "-{0}", "-{0}", kinds=_B),
    _op("scale", 1, "{0} * 0.5 + 0.25", "{0} * 0.5 + 0.25"),
    # --- unary, non-smooth ---------------------------------------------------------------------
    _op("abs", 1, "tp.abs({0})", "np.abs({0})", kinds=_B, kink=_min_abs),
    _op("relu", 1, "tp.relu({0})", "np.maximum({0}, 0)", kink=_min_abs),
    _op("sign", 1, "tp.sign({0})", "np.sign({0})", kinds=_B, kink=_min_abs),
    _op("floor", 1, "tp.floor({0} * 2)", "np.floor({0} * 2)", kink=lambda x: _to_int(2 * np.asarray(x))),
    _op("ceil", 1, "tp.ceil({0} * 2)", "np.ceil({0} * 2)", kink=lambda x: _to_int(2 * np.asarray(x))),
    _op("round", 1, "tp.round({0} * 2)", "np_round({0} * 2)", kink=lambda x: _to_half(2 * np.asarray(x))),
    _op("clamp", 1, "tp.clamp({0}, -1.0, 1.0)", "np.clip({0}, -1.0, 1.0)",
        kink=lambda x: min(_min_abs(np.asarray(x) - 1), _min_abs(np.asarray(x) + 1))),
    # --- binary, broadcasting --------------------------------------------------------------------
    _op("add", 2, "{0} + {1}", "{0} + {1}", kinds=_B),
    _op("sub", 2, "tp.sub({0}, {1})", "{0} - {1}", kinds=_B),
    _op("mul", 2, "{0} * {1}", "{0} * {1}", kinds=_B),
    _op("div", 2, "{0} / ({1} * {1} + 0.5)", "{0} / ({1} * {1} + 0.5)", ulp=2),
    _op("atan2", 2, "tp.atan2({0}, {1} * {1} + 0.5)", "np.arctan2({0}, {1} * {1} + 0.5)", ulp=4),
    _op("pow", 2, "tp.pow({0} * {0} + 0.5, tp.tanh({1}))", "np.power({0} * {0} + 0.5, np.tanh({1}))", ulp=6),
    _op("lerp", 2, "tp.lerp({0}, {1}, 0.25)", "{0} + 0.25 * ({1} - {0})", ulp=2),
    _op("addcmul", 2, "tp.addcmul({0}, {0}, {1}, value=0.5)", "{0} + 0.5 * {0} * {1}", ulp=2),
    _op("maximum", 2, "tp.maximum({0}, {1})", "np.maximum({0}, {1})", kinds=_B, kink=_gap),
    _op("minimum", 2, "tp.minimum({0}, {1})", "np.minimum({0}, {1})", kinds=_B, kink=_gap),
    _op("where", 2, "tp.where({0} > {1}, {0}, {1} * 2)", "np.where({0} > {1}, {0}, {1} * 2)", kinds=_B, kink=_gap),
    _op("gt_cast", 2, "({0} > {1}).to({0}.dtype)", "({0} > {1}).astype({0}.dtype)", kinds=_B, kink=_gap),
    _op("floor_divide", 2, "tp.floor_divide({0}, tp.abs({1}) + 1)", "np_floor_divide({0}, np.abs({1}) + 1)",
        kinds=(INT,)),
    _op("remainder", 2, "tp.remainder({0}, tp.abs({1}) + 1)", "np.remainder({0}, np.abs({1}) + 1)", kinds=(INT,)),
    _op("bitwise_and", 2, "tp.bitwise_and({0}, {1})", "np.bitwise_and({0}, {1})", kinds=(INT,)),
    _op("bitwise_xor", 2, "{0} ^ {1}", "np.bitwise_xor({0}, {1})", kinds=(INT,)),
    _op("stack_sum", 2, "tp.stack(tp.broadcast_tensors({0}, {1})).sum(0)", "{0} + {1}", kinds=_B),
    # --- in place on a private copy (functionalization) -----------------------------------------
    _op("iadd_clone", 2, "{0}.clone().add_({1})", "{0} + {1}", kinds=_B, same_shape=True),
    _op("imul_slice", 1, "_imul_first({0})", "_np_imul_first({0})", min_ndim=1, kinds=_B),
    # --- reductions over a dimension (kept, so shapes stay compatible) --------------------------
    _op("sum", 1, "tp.sum({0}, dim={d}, keepdim=True)", "np.sum({0}, axis={d}, keepdims=True)", kinds=_B,
        dim=True, reduces=True),
    _op("sum_all", 1, "{0}.sum()", "np.sum({0})", kinds=_B, reduces=True),
    _op("mean", 1, "{0}.mean({d}, keepdim=True)", "np.mean({0}, axis={d}, keepdims=True)", dim=True,
        nonempty=True, reduces=True),
    _op("prod", 1, "tp.prod(tp.tanh({0}) + 1.5, dim={d}, keepdim=True)",
        "np.prod(np.tanh({0}) + 1.5, axis={d}, keepdims=True)", dim=True, reduces=True, ulp=4),
    _op("amax", 1, "tp.amax({0}, dim={d}, keepdim=True)", "np.max({0}, axis={d}, keepdims=True)", kinds=_B,
        dim=True, nonempty=True, kink=lambda x, d=-1: _top_gap(x, d)),
    _op("amin", 1, "tp.amin({0}, dim={d}, keepdim=True)", "np.min({0}, axis={d}, keepdims=True)", kinds=_B,
        dim=True, nonempty=True, kink=lambda x, d=-1: _bottom_gap(x, d)),
    _op("logsumexp", 1, "tp.logsumexp({0}, {d}, keepdim=True)", "np_logsumexp({0}, {d})", dim=True,
        nonempty=True, reduces=True, ulp=4),
    _op("softmax", 1, "tp.softmax({0}, {d})", "np_softmax({0}, {d})", dim=True, nonempty=True, reduces=True,
        ulp=4),
    _op("log_softmax", 1, "tp.log_softmax({0}, dim={d})", "np_log_softmax({0}, {d})", dim=True, nonempty=True,
        reduces=True, ulp=4),
    _op("var", 1, "tp.var({0}, dim={d}, keepdim=True, correction=0)", "np.var({0}, axis={d}, keepdims=True)",
        dim=True, nonempty=True, reduces=True, ulp=4),
    _op("std", 1, "{0}.std({d}, keepdim=True, correction=0)", "np.std({0}, axis={d}, keepdims=True)", dim=True,
        nonempty=True, reduces=True, ulp=4, kink=lambda x, d=-1: _row_spread(x, d)),
    _op("norm", 1, "tp.norm({0}, dim={d}, keepdim=True)", "np.sqrt(np.sum({0} * {0}, axis={d}, keepdims=True))",
        dim=True, reduces=True, ulp=3, kink=lambda x, d=-1: _row_norm(x, d)),
    _op("cumsum", 1, "tp.cumsum({0}, {d})", "np.cumsum({0}, axis={d})", kinds=_B, dim=True, reduces=True),
    # --- layout: views and copies that keep the shape ---------------------------------------------
    _op("flip", 1, "tp.flip({0}, ({d},))", "np.flip({0}, {d})", kinds=_B, dim=True),
    _op("roll", 1, "tp.roll({0}, 1, {d})", "np.roll({0}, 1, {d})", kinds=_B, dim=True),
    _op("transpose_twice", 1, "(({0}).transpose(-1, -2) * 2).transpose(-1, -2)", "{0} * 2", kinds=_B, min_ndim=2),
    _op("reshape_round", 1, "{0}.reshape(-1).reshape({0}.shape)", "{0}", kinds=_B),
    _op("unsqueeze_squeeze", 1, "{0}.unsqueeze(0).squeeze(0)", "{0}", kinds=_B),
    _op("expand_base", 1, "{0}.expand({base})", "np.broadcast_to({0}, {base})", kinds=_B),
    _op("slice_step", 1, "tp.cat([{0}[..., ::2], {0}[..., 1::2]], -1)",
        "np.concatenate([{0}[..., ::2], {0}[..., 1::2]], -1)", kinds=_B, min_ndim=1),
    # --- contractions with a square weight ---------------------------------------------------------
    _op("matmul", 1, "{0} @ {w}", "{0} @ {w}", weight=True, min_ndim=1, reduces=True),
    _op("einsum", 1, "tp.einsum('...j,jk->...k', {0}, {w})", "np.einsum('...j,jk->...k', {0}, {w})",
        weight=True, min_ndim=1, reduces=True),
]

OPS: dict[str, Op] = {op.name: op for op in _TABLE}

# Helpers the templates call: defined in the generated program module (tensorplay and numpy twins).
PROGRAM_HELPERS = '''
def _imul_first(x):
    y = x.clone()
    y[..., :1].mul_(2)
    return y


def _np_imul_first(x):
    y = np.array(x, copy=True)
    y[..., :1] *= 2
    return y
'''
