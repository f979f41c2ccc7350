"""The shared sample corpus: concrete inputs for every primitive in `ir.REGISTRY`.

Every later suite (impl vs numpy, text round trip, verifier, batching, JVP/VJP,
codegen) iterates over this corpus, so a primitive without samples is a test
failure (see `tests/ir/test_prim_impls.py::test_every_primitive_has_samples`).

A `Sample` is one application of a primitive::

    Sample(prim="pad", args=[x], attrs={"low": (1,), ...}, expected=fn)

- `args` are small, read-only numpy arrays (a test that wants to write must
  copy). Float inputs are drawn from a generator seeded by the primitive's
  name, inside the op's domain (log/sqrt positive, pow base positive, no
  values near the kinks of abs/floor/round), so finite differences work too.
  Elementwise primitives declare that domain themselves (`Primitive.domain`);
  a new elementwise primitive gets samples here without any edit.
- `attrs` are frozen exactly as `GraphBuilder.emit` would freeze them (tuples,
  `ir.DType` objects), so `prim.impl(*args, **attrs)` and
  `builder.emit(prim, *values, **attrs)` accept them unchanged.
- `expected(*args, **attrs)` has the signature of `impl` and is an independent,
  hand-written numpy/Python reference (loops, einsum, a pure-Python Philox),
  or ``None`` when there is nothing independent to say.

Cases cover 0-d, size-1, empty and general shapes, every dtype the shape rule
accepts (probed from `abstract_eval`, so a primitive that gains a dtype gains
samples), and for layout ops the interesting attributes (size-1 expansion,
strides, interior padding, repeated indices, batch and multiple contracting
dimensions, ...).

Public API: `Sample`, `samples(prim_name)`, `ALL_SAMPLES`, `sample_id(sample)`,
`philox4x32(counter, key)`.
"""
from __future__ import annotations

import functools
import itertools
import math
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tensorplay import ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.constants import DenseElements
from tensorplay.ir.core import freeze_attr
from tensorplay.ir.primitive import Domain
from tensorplay.ir.types import TensorType


@dataclass
class Sample:
    """One application of primitive `prim` to `args` with attributes `attrs`."""

    prim: str
    args: list[np.ndarray]
    attrs: dict
    expected: Callable[..., np.ndarray] | None


def sample_id(s: Sample) -> str:
    """A short, readable id such as ``add:f32[2x3],f32[2x3]`` for pytest parametrization."""
    args = ",".join(f"{dt.from_numpy(a.dtype).short}[{'x'.join(map(str, a.shape))}]" for a in s.args)
    attrs = ",".join(f"{k}={_short_attr(v)}" for k, v in sorted(s.attrs.items()))
    return f"{s.prim}:{args}" + (f"{{{attrs}}}" if attrs else "")


def _short_attr(v) -> str:
    if isinstance(v, ir.Region):
        return f"region[{len(v.graph.nodes)}]"
    if isinstance(v, dt.DType):
        return v.short
    if isinstance(v, tuple):
        return "[" + ",".join(_short_attr(x) for x in v) + "]"
    return repr(v)


# ---------------------------------------------------------------------------------------------
# Input generators
# ---------------------------------------------------------------------------------------------
def _rng(name: str) -> np.random.Generator:
    """A generator seeded by the primitive's name: samples stay put when primitives are added."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def _ro(a) -> np.ndarray:
    a = np.array(a)  # always a fresh ndarray, also for 0-d
    a.setflags(write=False)
    return a


def _values(rng: np.random.Generator, shape, dtype: dt.DType, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    """Uniform floats in [lo, hi), integers in [lo, hi], or fair booleans."""
    shape = tuple(shape)
    if dtype.is_bool:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.is_integer:
        return np.asarray(rng.integers(math.ceil(lo), math.floor(hi) + 1, size=shape), dtype=dtype.np)
    return np.asarray(rng.uniform(lo, hi, size=shape), dtype=dtype.np)


def _away_from_zero(rng, shape, dtype, lo=0.25, hi=2.0):
    """Values with |x| in [lo, hi] and a random sign (integers: nonzero)."""
    mag = _values(rng, shape, dtype, lo, hi) if dtype.is_floating_point else _values(rng, shape, dtype, 1, 4)
    sign = np.where(rng.random(tuple(shape)) < 0.5, -1, 1).astype(dtype.np)
    return np.asarray(mag * sign, dtype=dtype.np)


def _off_integer(rng, shape, dtype):
    """Floats at least 0.1 away from integers and half-integers (kinks of floor/ceil/round)."""
    base = rng.integers(-3, 4, size=tuple(shape)).astype(np.float64)
    frac = rng.uniform(0.1, 0.4, size=tuple(shape)) * np.where(rng.random(tuple(shape)) < 0.5, -1, 1)
    return np.asarray(base + frac, dtype=dtype.np)


def _gen(lo=-2.0, hi=2.0, floats=None, ints=None):
    """An input generator: `floats`/`ints` override the default uniform draw per category."""
    def gen(rng, shape, dtype):
        if dtype.is_floating_point and floats is not None:
            return floats(rng, shape, dtype)
        if dtype.is_integer and ints is not None:
            return ints(rng, shape, dtype)
        return _values(rng, shape, dtype, lo, hi)
    return gen


DEFAULT = _gen()

# Shapes for the first supported dtype; the other dtypes get EXTRA_SHAPES.
PRIMARY_SHAPES = [(), (1,), (0,), (2, 3), (2, 0, 3)]
EXTRA_SHAPES = [(2, 3)]


def _supported(prim: str, make_types: Callable[[dt.DType], tuple[TensorType, ...]], **attrs) -> list[dt.DType]:
    """The dtypes whose operand types `abstract_eval` accepts (in `dt.ALL` order, floats first)."""
    order = (dt.float32, dt.float64, dt.int32, dt.int64, dt.bool_)
    ok = []
    for d in order:
        try:
            ir.REGISTRY[prim].abstract_eval(*make_types(d), **attrs)
        except (TypeError, ValueError):
            continue
        ok.append(d)
    return ok


def _shapes_by_dtype(dtypes: list[dt.DType]):
    for i, d in enumerate(dtypes):
        for shape in (PRIMARY_SHAPES if i == 0 else EXTRA_SHAPES):
            yield d, shape


def _elementwise(name: str, arity: int, expected, gens) -> list[Sample]:
    """Samples of an elementwise op: every accepted dtype, every primary shape."""
    if not isinstance(gens, (list, tuple)):
        gens = [gens] * arity
    rng = _rng(name)
    dtypes = _supported(name, lambda d: (TensorType((2,), d),) * arity)
    out = []
    for d, shape in _shapes_by_dtype(dtypes):
        out.append(Sample(name, [_ro(g(rng, shape, d)) for g in gens], {}, expected))
    return out


# ---------------------------------------------------------------------------------------------
# Elementwise expectations
# ---------------------------------------------------------------------------------------------
def _f64(fn):
    """Evaluate `fn` in float64 and round to the operand dtype (an independent float32 path)."""
    def expected(*xs):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(np.asarray(x, np.float64) for x in xs))).astype(xs[0].dtype)
    return expected


def _erf_series(x: np.ndarray) -> np.ndarray:
    """erf by its Maclaurin series, accurate to ~1e-15 for |x| <= 2."""
    x = np.asarray(x, np.float64)
    term = x.copy()
    total = x.copy()
    for n in range(1, 80):
        term = term * (-x * x) / n
        total = total + term / (2 * n + 1)
    return 2.0 / math.sqrt(math.pi) * total


def _sign(x):
    return np.where(x > 0, 1, np.where(x < 0, -1, 0)).astype(x.dtype)


def _trunc_div(x, y):
    if x.dtype.kind == "f":
        return x / y
    q = np.array([0 if b == 0 else int(abs(int(a)) // abs(int(b))) * (1 if (a < 0) == (b < 0) else -1)
                  for a, b in zip(x.flat, y.flat)], dtype=x.dtype)
    return q.reshape(x.shape)


def _fmod(x, y):
    # C remainder (sign of the dividend) via Python's floor-mod on magnitudes
    return np.asarray(np.sign(x) * (np.abs(x) % np.abs(y)), dtype=x.dtype)


def _logical_not(x):
    return np.logical_not(x) if x.dtype == np.bool_ else (-x - 1).astype(x.dtype)


def _bitwise(logical, op):
    def expected(x, y):
        return logical(x, y) if x.dtype == np.bool_ else np.asarray(op(x, y), dtype=x.dtype)
    return expected


# Independent references of the elementwise primitives (their input domains are declared on the
# primitive: `Primitive.domain`). A float primitive without a row is checked against its own impl
# evaluated in float64 and rounded (`_f64_impl`).
ORACLES = {
    "neg": lambda x: np.asarray(np.zeros_like(x) - x, x.dtype),
    "sin": _f64(np.sin),
    "cos": _f64(np.cos),
    "tan": _f64(lambda x: np.sin(x) / np.cos(x)),
    "exp": _f64(lambda x: np.power(math.e, x)),
    "log": _f64(np.log),
    "log1p": _f64(np.log1p),
    "expm1": _f64(np.expm1),
    "sqrt": _f64(lambda x: x ** 0.5),
    "rsqrt": _f64(lambda x: x ** -0.5),
    "tanh": _f64(lambda x: (np.exp(2 * x) - 1) / (np.exp(2 * x) + 1)),
    "logistic": _f64(lambda x: 1 / (1 + np.exp(-x))),
    "erf": _f64(_erf_series),
    "asinh": _f64(lambda x: np.sign(x) * np.log(np.abs(x) + np.sqrt(x * x + 1))),
    "acosh": _f64(lambda x: np.log(x + np.sqrt(x * x - 1))),
    "atanh": _f64(lambda x: 0.5 * np.log((1 + x) / (1 - x))),
    "cbrt": _f64(lambda x: np.sign(x) * np.abs(x) ** (1 / 3)),
    "abs": lambda x: np.where(x < 0, -x, x).astype(x.dtype),
    "sign": _sign,
    "floor": _f64(np.floor),
    "ceil": _f64(np.ceil),
    "round": _f64(np.rint),
    "logical_not": _logical_not,
    "stop_gradient": lambda x: x.copy(),
    "add": lambda x, y: np.asarray(x + y, x.dtype),
    "sub": lambda x, y: np.asarray(x - y, x.dtype),
    "mul": lambda x, y: np.asarray(x * y, x.dtype),
    "div": _trunc_div,
    "pow": _f64(lambda x, y: np.exp(y * np.log(x))),
    "max": lambda x, y: np.where(x >= y, x, y),
    "min": lambda x, y: np.where(x <= y, x, y),
    "atan2": _f64(lambda y, x: np.angle(x + 1j * y)),
    "hypot": _f64(lambda x, y: np.sqrt(x * x + y * y)),
    "rem": _fmod,
    "and": _bitwise(np.logical_and, lambda x, y: x & y),
    "or": _bitwise(np.logical_or, lambda x, y: x | y),
    "xor": _bitwise(np.logical_xor, lambda x, y: x ^ y),
}


def _f64_impl(name: str):
    """The primitive's own impl in float64, rounded to the operand dtype (float32 vs float64 paths)."""
    impl = ir.REGISTRY[name].impl
    return _f64(impl)


def domain_generator(domain: Domain):
    """The input generator of one operand's `Domain` (see `ir.primitive.Domain`)."""
    if domain.avoid == "zero":
        hi = max(abs(domain.lo), abs(domain.hi))
        return _gen(floats=lambda rng, shape, dtype: _away_from_zero(rng, shape, dtype, 0.25, hi),
                    ints=_away_from_zero)
    if domain.avoid == "integers":
        return _gen(domain.lo, domain.hi, floats=_off_integer)
    return _gen(domain.lo, domain.hi)


def _is_plain_elementwise(prim) -> bool:
    """Unary/binary ops whose operands are all data of one shape (comparisons have their own builder)."""
    return prim.family in ("elementwise", "logical") and prim.roles is None and not prim.variadic \
        and prim.num_operands in (1, 2) and prim.name != "convert_element_type"


COMPARE = {
    "eq": lambda x, y: np.array([a == b for a, b in zip(x.flat, y.flat)], bool).reshape(x.shape),
    "ne": lambda x, y: np.array([a != b for a, b in zip(x.flat, y.flat)], bool).reshape(x.shape),
    "lt": lambda x, y: np.array([a < b for a, b in zip(x.flat, y.flat)], bool).reshape(x.shape),
    "le": lambda x, y: np.array([a <= b for a, b in zip(x.flat, y.flat)], bool).reshape(x.shape),
    "gt": lambda x, y: np.array([a > b for a, b in zip(x.flat, y.flat)], bool).reshape(x.shape),
    "ge": lambda x, y: np.array([a >= b for a, b in zip(x.flat, y.flat)], bool).reshape(x.shape),
}


def _compare_samples(name: str) -> list[Sample]:
    rng = _rng(name)
    dtypes = _supported(name, lambda d: (TensorType((2,), d),) * 2)
    out = []
    for d, shape in _shapes_by_dtype(dtypes):
        x = _values(rng, shape, d)
        y = _values(rng, shape, d)
        y = np.where(rng.random(shape) < 0.3, x, y).astype(d.np)  # ties
        out.append(Sample(name, [_ro(x), _ro(y)], {}, COMPARE[name]))
    return out


def _select_expected(p, a, b):
    out = np.array(b, copy=True)
    out[p] = a[p]
    return out


def _select_samples() -> list[Sample]:
    rng = _rng("select")
    dtypes = _supported("select", lambda d: (TensorType((2,), dt.bool_), TensorType((2,), d), TensorType((2,), d)))
    out = []
    for d, shape in _shapes_by_dtype(dtypes):
        p = rng.random(shape) < 0.5
        out.append(Sample("select", [_ro(p), _ro(_values(rng, shape, d)), _ro(_values(rng, shape, d))], {},
                          _select_expected))
    return out


def _convert_expected(x, *, dtype):
    if dtype.is_bool:
        return np.array([bool(v != 0) for v in x.flat], dtype=bool).reshape(x.shape)
    if dtype.is_integer and x.dtype.kind == "f":
        return np.array([math.trunc(float(v)) for v in x.flat], dtype=dtype.np).reshape(x.shape)
    return np.asarray(x, dtype=dtype.np)


def _convert_samples() -> list[Sample]:
    rng = _rng("convert_element_type")
    out = []

    def source(shape, d):
        v = _values(rng, shape, d, -5.9, 5.9)
        if not d.is_bool and v.size:  # some exact zeros (and -0.0) for the bool cast
            v.flat[0] = 0
            if d.is_floating_point and v.size > 1:
                v.flat[1] = -0.0
        return _ro(v)

    for src in dt.ALL:
        for dst in dt.ALL:
            out.append(Sample("convert_element_type", [source((2, 3), src)], {"dtype": dst}, _convert_expected))
    for src, dst in ((dt.float32, dt.int32), (dt.int64, dt.float32), (dt.float64, dt.bool_)):
        for shape in [(), (1,), (0,), (2, 0, 3)]:
            out.append(Sample("convert_element_type", [source(shape, src)], {"dtype": dst}, _convert_expected))
    return out


# ---------------------------------------------------------------------------------------------
# Layout expectations: explicit index loops, independent of numpy's layout functions
# ---------------------------------------------------------------------------------------------
def _build(shape, dtype, fill=0) -> np.ndarray:
    return np.full(tuple(shape), fill, dtype=dtype)


def _broadcast_expected(x, *, shape, broadcast_dimensions):
    out = _build(shape, x.dtype)
    for idx in np.ndindex(*shape):
        src = tuple(0 if x.shape[i] == 1 else idx[d] for i, d in enumerate(broadcast_dimensions))
        out[idx] = x[src]
    return out


def _reshape_expected(x, *, shape):
    flat = list(x.flat)  # row-major order
    return np.array(flat, dtype=x.dtype).reshape(shape) if flat else np.zeros(shape, x.dtype)


def _transpose_expected(x, *, permutation):
    out = _build(tuple(x.shape[p] for p in permutation), x.dtype)
    for idx in np.ndindex(*out.shape):
        src = [0] * x.ndim
        for i, p in enumerate(permutation):
            src[p] = idx[i]
        out[idx] = x[tuple(src)]
    return out


def _slice_expected(x, *, start_indices, limit_indices, strides):
    ranges = [list(range(s, l, st)) for s, l, st in zip(start_indices, limit_indices, strides)]
    out = _build([len(r) for r in ranges], x.dtype)
    for idx in np.ndindex(*out.shape):
        out[idx] = x[tuple(r[i] for r, i in zip(ranges, idx))]
    return out


def _pad_expected(x, *, low, high, interior, value):
    shape = [lo + hi + n + max(n - 1, 0) * it for lo, hi, n, it in zip(low, high, x.shape, interior)]
    out = _build(shape, x.dtype, value)
    for idx in np.ndindex(*x.shape):
        out[tuple(lo + i * (it + 1) for lo, i, it in zip(low, idx, interior))] = x[idx]
    return out


def _concat_expected(*xs, axis):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = _build(shape, xs[0].dtype)
    offset = 0
    for x in xs:
        for idx in np.ndindex(*x.shape):
            dst = list(idx)
            dst[axis] += offset
            out[tuple(dst)] = x[idx]
        offset += x.shape[axis]
    return out


def _rev_expected(x, *, axes):
    out = _build(x.shape, x.dtype)
    for idx in np.ndindex(*x.shape):
        out[tuple(n - 1 - i if d in axes else i for d, (i, n) in enumerate(zip(idx, x.shape)))] = x[idx]
    return out


def _take_expected(x, idx, *, axis):
    out = _build(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype)
    k = idx.ndim
    for o in np.ndindex(*out.shape):
        i = int(idx[o[axis:axis + k]])
        out[o] = x[o[:axis] + (i,) + o[axis + k:]]
    return out


def _index_add_expected(x, idx, upd, *, axis):
    out = np.array(x, copy=True)
    k = idx.ndim
    for u in np.ndindex(*upd.shape):
        i = int(idx[u[axis:axis + k]])
        dst = u[:axis] + (i,) + u[axis + k:]
        out[dst] = out[dst] + upd[u] if x.dtype != np.bool_ else out[dst] | upd[u]
    return out


def _constant_expected(*, value):
    return np.array(value.array.tolist(), dtype=value.array.dtype).reshape(value.array.shape)


def _iota_expected(*, shape, dtype, dimension):
    out = _build(shape, dtype.np)
    for idx in np.ndindex(*shape):
        out[idx] = idx[dimension]
    return out


def _full_expected(*, shape, dtype, value):
    out = np.empty(shape, dtype.np)
    out[...] = value
    return out


def _layout_samples(name: str) -> list[Sample]:
    rng = _rng(name)
    F32, F64, I32, I64, B = dt.float32, dt.float64, dt.int32, dt.int64, dt.bool_

    def v(shape, d=F32, lo=-2, hi=2):
        return _ro(_values(rng, shape, d, lo, hi))

    def idx(values, d=I64):
        return _ro(np.asarray(values, dtype=d.np))

    cases: list[tuple[list, dict]] = []
    if name == "broadcast_in_dim":
        expected = _broadcast_expected
        cases = [
            ([v(())], dict(shape=(2, 3), broadcast_dimensions=())),            # scalar to matrix
            ([v((3,))], dict(shape=(2, 3), broadcast_dimensions=(1,))),        # new leading dim
            ([v((2,))], dict(shape=(2, 4), broadcast_dimensions=(0,))),        # new trailing dim
            ([v((1, 3))], dict(shape=(4, 3), broadcast_dimensions=(0, 1))),    # size-1 expansion
            ([v((2, 1))], dict(shape=(2, 5, 3), broadcast_dimensions=(0, 2))),  # both at once
            ([v((2, 3))], dict(shape=(2, 3), broadcast_dimensions=(0, 1))),    # identity
            ([v((1,))], dict(shape=(0,), broadcast_dimensions=(0,))),          # size-1 to empty
            ([v((3,))], dict(shape=(0, 3), broadcast_dimensions=(1,))),        # empty result
            ([v((0,))], dict(shape=(2, 0), broadcast_dimensions=(1,))),        # empty operand
            ([v((), F64)], dict(shape=(1,), broadcast_dimensions=())),
            ([v((3,), I32)], dict(shape=(3, 2), broadcast_dimensions=(0,))),
            ([v((1,), I64)], dict(shape=(2, 2), broadcast_dimensions=(1,))),
            ([v((2,), B)], dict(shape=(2, 2), broadcast_dimensions=(0,))),
        ]
    elif name == "reshape":
        expected = _reshape_expected
        cases = [
            ([v((2, 3))], dict(shape=(3, 2))),
            ([v((6,))], dict(shape=(1, 2, 1, 3))),
            ([v((2, 3, 4))], dict(shape=(4, 6))),
            ([v(())], dict(shape=(1, 1))),
            ([v((1,))], dict(shape=())),
            ([v((0, 3))], dict(shape=(3, 0))),
            ([v((0,))], dict(shape=(2, 0, 5))),
            ([v((2, 2), F64)], dict(shape=(4,))),
            ([v((2, 3), I32)], dict(shape=(6,))),
            ([v((4,), I64)], dict(shape=(2, 2))),
            ([v((3, 1), B)], dict(shape=(1, 3))),
        ]
    elif name == "transpose":
        expected = _transpose_expected
        cases = [
            ([v((2, 3))], dict(permutation=(1, 0))),
            ([v((2, 3, 4))], dict(permutation=(2, 0, 1))),
            ([v((2, 3, 4))], dict(permutation=(0, 1, 2))),
            ([v(())], dict(permutation=())),
            ([v((1, 4))], dict(permutation=(1, 0))),
            ([v((0, 3))], dict(permutation=(1, 0))),
            ([v((2, 3), F64)], dict(permutation=(1, 0))),
            ([v((2, 1, 3), I32)], dict(permutation=(1, 2, 0))),
            ([v((3, 2), I64)], dict(permutation=(1, 0))),
            ([v((2, 3), B)], dict(permutation=(1, 0))),
        ]
    elif name == "slice":
        expected = _slice_expected
        cases = [
            ([v((5,))], dict(start_indices=(1,), limit_indices=(4,), strides=(1,))),
            ([v((7,))], dict(start_indices=(0,), limit_indices=(7,), strides=(2,))),
            ([v((6,))], dict(start_indices=(1,), limit_indices=(6,), strides=(4,))),
            ([v((4, 6))], dict(start_indices=(1, 0), limit_indices=(3, 6), strides=(1, 3))),
            ([v((3, 4, 5))], dict(start_indices=(0, 1, 1), limit_indices=(3, 4, 5), strides=(2, 2, 3))),
            ([v((3,))], dict(start_indices=(1,), limit_indices=(1,), strides=(1,))),  # empty result
            ([v((0, 3))], dict(start_indices=(0, 0), limit_indices=(0, 3), strides=(1, 2))),
            ([v(())], dict(start_indices=(), limit_indices=(), strides=())),
            ([v((1,))], dict(start_indices=(0,), limit_indices=(1,), strides=(1,))),
            ([v((5,), F64)], dict(start_indices=(4,), limit_indices=(5,), strides=(3,))),
            ([v((4, 3), I32)], dict(start_indices=(1, 1), limit_indices=(4, 2), strides=(2, 1))),
            ([v((6,), I64)], dict(start_indices=(0,), limit_indices=(6,), strides=(5,))),
            ([v((2, 2), B)], dict(start_indices=(0, 1), limit_indices=(2, 2), strides=(1, 1))),
        ]
    elif name == "pad":
        expected = _pad_expected
        cases = [
            ([v((3,))], dict(low=(1,), high=(2,), interior=(0,), value=0.0)),
            ([v((3,))], dict(low=(0,), high=(0,), interior=(2,), value=-1.5)),
            ([v((2, 3))], dict(low=(0, 1), high=(1, 0), interior=(1, 2), value=float("inf"))),
            ([v((1, 2))], dict(low=(2, 0), high=(0, 3), interior=(1, 1), value=0.25)),
            ([v((0,))], dict(low=(2,), high=(1,), interior=(3,), value=7.0)),
            ([v((0, 2))], dict(low=(0, 1), high=(0, 1), interior=(0, 1), value=1.0)),
            ([v(())], dict(low=(), high=(), interior=(), value=3.0)),
            ([v((1,))], dict(low=(0,), high=(0,), interior=(5,), value=1.0)),
            ([v((2, 2), F64)], dict(low=(1, 1), high=(1, 1), interior=(1, 1), value=float("-inf"))),
            ([v((3,), I32)], dict(low=(1,), high=(1,), interior=(1,), value=-7)),
            ([v((2, 2), I64)], dict(low=(0, 2), high=(1, 0), interior=(0, 0), value=2 ** 40)),
            ([v((2,), B)], dict(low=(1,), high=(1,), interior=(1,), value=True)),
        ]
    elif name == "concatenate":
        expected = _concat_expected
        cases = [
            ([v((2, 1)), v((2, 0)), v((2, 3))], dict(axis=1)),  # three operands, one empty
            ([v((2,)), v((3,)), v((1,))], dict(axis=0)),
            ([v((0, 2)), v((1, 2)), v((2, 2))], dict(axis=0)),
            ([v((2, 3))], dict(axis=0)),  # a single operand
            ([v((1, 2)), v((1, 2))], dict(axis=1)),
            ([v((0,)), v((0,))], dict(axis=0)),  # empty result
            ([v((2, 1, 2), F64), v((2, 2, 2), F64)], dict(axis=1)),
            ([v((2,), I32), v((1,), I32), v((3,), I32)], dict(axis=0)),
            ([v((1, 3), I64), v((2, 3), I64)], dict(axis=0)),
            ([v((2, 1), B), v((2, 2), B)], dict(axis=1)),
        ]
    elif name == "rev":
        expected = _rev_expected
        cases = [
            ([v((4,))], dict(axes=(0,))),
            ([v((2, 3))], dict(axes=(0, 1))),
            ([v((2, 3))], dict(axes=(1,))),
            ([v((2, 3, 2))], dict(axes=(2, 0))),
            ([v((2, 3))], dict(axes=())),
            ([v(())], dict(axes=())),
            ([v((1,))], dict(axes=(0,))),
            ([v((0, 3))], dict(axes=(0, 1))),
            ([v((3,), F64)], dict(axes=(0,))),
            ([v((2, 3), I32)], dict(axes=(1,))),
            ([v((3,), I64)], dict(axes=(0,))),
            ([v((2, 2), B)], dict(axes=(0,))),
        ]
    elif name == "take":
        expected = _take_expected
        cases = [
            ([v((5,)), idx([4, 0, 2])], dict(axis=0)),
            ([v((3, 4)), idx([[3, 0], [1, 1]])], dict(axis=1)),   # multi-dim indices
            ([v((4, 3)), idx(2)], dict(axis=0)),                   # 0-d index drops the axis
            ([v((2, 5, 2)), idx([[0, 4, 4]], I32)], dict(axis=1)),
            ([v((4,)), idx([3, 0, 3])], dict(axis=0)),             # (out of range: IndexError, tests/codegen/test_index_bounds.py)
            ([v((3, 2)), idx(np.zeros((0,), np.int64))], dict(axis=0)),  # no indices
            ([v((0, 3)), idx(np.zeros((0,), np.int64))], dict(axis=0)),  # empty operand
            ([v((1,)), idx([0, 0])], dict(axis=0)),
            ([v((3,), F64), idx([1, 2])], dict(axis=0)),
            ([v((2, 3), I32), idx([2, 0], I32)], dict(axis=1)),
            ([v((3,), I64), idx([[0], [2]])], dict(axis=0)),
            ([v((3, 2), B), idx([1])], dict(axis=0)),
        ]
    elif name == "index_add":
        expected = _index_add_expected
        cases = [
            ([v((5,)), idx([0, 2, 0, 4]), v((4,))], dict(axis=0)),  # repeated index accumulates
            ([v((3, 4)), idx([[3, 0], [3, 3]]), v((3, 2, 2))], dict(axis=1)),
            ([v((4, 3)), idx(1), v((3,))], dict(axis=0)),           # 0-d index
            ([v((4,)), idx([3, 3]), v((2,))], dict(axis=0)),        # (out of range: tests/codegen/test_index_bounds.py)
            ([v((3, 2)), idx(np.zeros((0,), np.int64)), v((0, 2))], dict(axis=0)),
            ([v((0, 2)), idx(np.zeros((0,), np.int64)), v((0, 2))], dict(axis=0)),
            ([v((1,)), idx([0, 0, 0]), v((3,))], dict(axis=0)),
            ([v((3,), F64), idx([1, 1], I32), v((2,), F64)], dict(axis=0)),
            ([v((2, 3), I32), idx([2, 2], I32), v((2, 2), I32)], dict(axis=1)),
            ([v((3,), I64), idx([[0, 2], [2, 2]]), v((2, 2), I64)], dict(axis=0)),
        ]
        if B in _supported("index_add", lambda d: (TensorType((3,), d), TensorType((2,), I64), TensorType((2,), d)),
                           axis=0):
            cases.append(([v((3,), B), idx([0, 0]), v((2,), B)], dict(axis=0)))
    elif name == "constant":
        expected = _constant_expected
        rng = np.random.default_rng(7)
        cases = [([], dict(value=DenseElements(a))) for a in (
            np.float32(2.5), np.arange(6, dtype=np.float32).reshape(2, 3),
            rng.standard_normal((3, 70)),                                       # elided in the text
            np.full((4,), -0.0, np.float32), np.array([np.nan, np.inf, -np.inf, 1e-30]),
            np.array([[1, -2], [2 ** 40, 0]], np.int64), rng.integers(-9, 9, (5,)).astype(np.int32),
            np.array([True, False, True]), np.zeros((0, 3), np.float32), np.ones((1,), bool))]
    elif name == "iota":
        expected = _iota_expected
        cases = [
            ([], dict(shape=(5,), dtype=I32, dimension=0)),
            ([], dict(shape=(2, 3), dtype=F32, dimension=1)),
            ([], dict(shape=(3, 2, 2), dtype=I64, dimension=1)),
            ([], dict(shape=(0, 4), dtype=I64, dimension=0)),
            ([], dict(shape=(1,), dtype=F64, dimension=0)),
            ([], dict(shape=(2, 0), dtype=F32, dimension=0)),
        ]
    elif name == "full":
        expected = _full_expected
        cases = [
            ([], dict(shape=(), dtype=F32, value=1.5)),
            ([], dict(shape=(2, 3), dtype=I32, value=7)),
            ([], dict(shape=(0,), dtype=F64, value=2.0)),
            ([], dict(shape=(1,), dtype=F32, value=float("-inf"))),
            ([], dict(shape=(2,), dtype=F64, value=float("nan"))),
            ([], dict(shape=(3,), dtype=F64, value=0.1)),
            ([], dict(shape=(2, 2), dtype=I64, value=-(2 ** 40))),
            ([], dict(shape=(2,), dtype=B, value=True)),
            ([], dict(shape=(1, 0), dtype=B, value=False)),
        ]
    else:
        raise KeyError(name)
    return [Sample(name, args, {k: freeze_attr(a) for k, a in attrs.items()}, expected) for args, attrs in cases]


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------
def _reduce_expected(combine):
    def expected(x, *, axes):
        kept = [d for d in range(x.ndim) if d not in axes]
        out_shape = tuple(x.shape[d] for d in kept)
        out = np.empty(out_shape, x.dtype)
        for o in np.ndindex(*out_shape):
            index = [slice(None)] * x.ndim
            for d, i in zip(kept, o):
                index[d] = i
            acc = None
            for v in np.asarray(x[tuple(index)]).flat:
                acc = v if acc is None else combine(acc, v)
            out[o] = combine.identity if acc is None else acc
        return out
    return expected


def _combiner(fn, identity):
    fn.identity = identity
    return fn


REDUCE = {
    "reduce_sum": _combiner(lambda a, b: a + b, 0),
    "reduce_prod": _combiner(lambda a, b: a * b, 1),
    "reduce_max": _combiner(lambda a, b: a if a >= b else b, None),
    "reduce_min": _combiner(lambda a, b: a if a <= b else b, None),
}


def _reduce_samples(name: str) -> list[Sample]:
    rng = _rng(name)
    combine = REDUCE[name]
    expected = _reduce_expected(combine)
    float_range = (0.5, 1.5) if name == "reduce_prod" else (-2, 2)  # products stay near 1
    dtypes = _supported(name, lambda d: (TensorType((2,), d),), axes=(0,))
    cases = [((2, 3, 4), (0, 2)), ((2, 3, 4), (1,)), ((2, 3), (0, 1)), ((2, 3), ()), ((), ()),
             ((1, 4), (0,)), ((3, 0), (0,))]
    if combine.identity is not None:
        cases += [((0, 3), (0,)), ((2, 0), (0, 1)), ((0,), (0,))]  # empty reductions give the identity
    out = []
    for i, d in enumerate(dtypes):
        for shape, axes in (cases if i == 0 else [((2, 3), (1,)), ((3,), (0,))]):
            x = _values(rng, shape, d, *(float_range if d.is_floating_point else (-2, 2)))
            out.append(Sample(name, [_ro(x)], {"axes": axes}, expected))
    return out


def _arg_expected(better):
    def expected(x, *, axis, index_dtype):
        out_shape = x.shape[:axis] + x.shape[axis + 1:]
        out = np.empty(out_shape, index_dtype.np)
        for o in np.ndindex(*out_shape):
            best = 0
            for i in range(x.shape[axis]):
                if better(x[o[:axis] + (i,) + o[axis:]], x[o[:axis] + (best,) + o[axis:]]):
                    best = i  # strictly better only: the first occurrence wins
            out[o] = best
        return out
    return expected


def _arg_samples(name: str) -> list[Sample]:
    rng = _rng(name)
    better = (lambda a, b: a > b) if name == "argmax" else (lambda a, b: a < b)
    expected = _arg_expected(better)
    out = []
    cases = [((3, 4), 1, dt.int64), ((5,), 0, dt.int32), ((2, 3, 4), 0, dt.int64), ((2, 3, 4), 2, dt.int32),
             ((1,), 0, dt.int64), ((0, 3), 1, dt.int64), ((3, 1), 1, dt.int32)]
    dtypes = _supported(name, lambda d: (TensorType((2,), d),), axis=0, index_dtype=dt.int64)
    for i, d in enumerate(dtypes):
        for shape, axis, index_dtype in (cases if i == 0 else [((3, 4), 1, dt.int64)]):
            x = _values(rng, shape, d, -2, 2)  # integers and booleans come with ties
            out.append(Sample(name, [_ro(x)], {"axis": axis, "index_dtype": index_dtype}, expected))
    return out


# ---------------------------------------------------------------------------------------------
# dot_general
# ---------------------------------------------------------------------------------------------
def _dot_expected(lhs, rhs, *, contract, batch):
    """dot_general as an einsum built from the attributes."""
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    lsub: list[str | None] = [None] * lhs.ndim
    rsub: list[str | None] = [None] * rhs.ndim
    out = []
    for a, b in zip(*batch):
        lsub[a] = rsub[b] = c = next(letters)
        out.append(c)
    for a, b in zip(*contract):
        lsub[a] = rsub[b] = next(letters)
    for sub in (lsub, rsub):
        for i, s in enumerate(sub):
            if s is None:
                sub[i] = c = next(letters)
                out.append(c)
    spec = f"{''.join(lsub)},{''.join(rsub)}->{''.join(out)}"
    return np.asarray(np.einsum(spec, lhs, rhs), dtype=lhs.dtype)


def _dot_samples() -> list[Sample]:
    rng = _rng("dot_general")
    F32, F64, I32, I64 = dt.float32, dt.float64, dt.int32, dt.int64

    def v(shape, d=F32):
        return _ro(_values(rng, shape, d, -2, 2))

    cases = [
        # (lhs shape, rhs shape, contract, batch, dtype)
        ((3, 4), (4,), ((1,), (0,)), ((), ()), F32),               # matrix-vector
        ((4,), (4, 3), ((0,), (0,)), ((), ()), F32),               # vector-matrix
        ((4,), (4,), ((0,), (0,)), ((), ()), F32),                 # inner product
        ((3,), (2,), ((), ()), ((), ()), F32),                     # outer product
        ((), (), ((), ()), ((), ()), F32),                         # scalar product
        ((), (2, 3), ((), ()), ((), ()), F32),                     # scalar times matrix
        ((2, 3), (3, 4), ((1,), (0,)), ((), ()), F32),             # matmul
        ((2, 3), (4, 3), ((1,), (1,)), ((), ()), F32),             # A @ B.T
        ((5, 2, 3), (5, 3, 4), ((2,), (1,)), ((0,), (0,)), F32),   # batched matmul
        ((2, 3, 4), (4, 3, 5), ((1, 2), (1, 0)), ((), ()), F32),   # two contracting dims
        ((3, 2, 4), (4, 5, 2), ((2,), (0,)), ((1,), (2,)), F32),   # batch dim not leading
        ((2, 3, 2, 4), (3, 4, 2), ((3,), (1,)), ((1, 2), (0, 2)), F32),  # two batch dims
        ((2, 0), (0, 3), ((1,), (0,)), ((), ()), F32),             # empty contraction: zeros
        ((0, 2, 3), (0, 3, 1), ((2,), (1,)), ((0,), (0,)), F32),   # empty batch
        ((1, 1), (1, 1), ((1,), (0,)), ((), ()), F32),
        ((2, 3), (3, 2), ((1,), (0,)), ((), ()), F64),
        ((2, 3, 4), (2, 4), ((2,), (1,)), ((0,), (0,)), F64),      # batched matrix-vector
        ((2, 3), (3,), ((1,), (0,)), ((), ()), I32),
        ((2, 2, 3), (2, 3, 2), ((2,), (1,)), ((0,), (0,)), I64),
    ]
    return [Sample("dot_general", [v(ls, d), v(rs, d)], {"contract": c, "batch": b}, _dot_expected)
            for ls, rs, c, b, d in cases]


# ---------------------------------------------------------------------------------------------
# Random bits: an independent pure-Python Philox-4x32-10
# ---------------------------------------------------------------------------------------------
_M32 = 0xFFFFFFFF


def philox4x32(counter: tuple[int, int, int, int], key: tuple[int, int], rounds: int = 10) -> tuple[int, ...]:
    """Philox-4x32 (Salmon et al., Random123) on Python ints; checked against the published vectors."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(rounds):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _M32, (p0 >> 32) ^ c3 ^ k1, p0 & _M32
        k0, k1 = (k0 + 0x9E3779B9) & _M32, (k1 + 0xBB67AE85) & _M32
    return c0, c1, c2, c3


def _draws(key_row, n: int):
    seed = int(key_row[0]) & 0xFFFFFFFFFFFFFFFF
    base = int(key_row[1]) & 0xFFFFFFFFFFFFFFFF
    for j in range(n):
        ctr = (base + j) & 0xFFFFFFFFFFFFFFFF
        yield philox4x32((ctr & _M32, ctr >> 32, 0, 0), (seed & _M32, seed >> 32))[:2]


def _uniform_scalar(w0: int, w1: int, dtype: dt.DType) -> float:
    if dtype is dt.float32:
        return (w0 >> 8) / 2.0 ** 24
    return ((w0 >> 5) * 2.0 ** 26 + (w1 >> 6)) / 2.0 ** 53


def _normal_scalar(w0: int, w1: int, dtype: dt.DType) -> float:
    u1 = (w0 + 1) / 2.0 ** 32
    u2 = w1 / 2.0 ** 32
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def _random_expected(scalar):
    def expected(key, *, shape, dtype):
        n = math.prod(shape)
        rows = key.reshape(-1, 2)
        vals = [scalar(w0, w1, dtype) for row in rows for w0, w1 in _draws(row, n)]
        return np.array(vals, dtype=np.float64).astype(dtype.np).reshape(key.shape[:-1] + tuple(shape))
    return expected


def _random_samples(name: str) -> list[Sample]:
    scalar = _uniform_scalar if name == "random_uniform" else _normal_scalar
    expected = _random_expected(scalar)
    keys = {
        "k": np.array([0, 0], np.int64),
        "k42": np.array([42, 7], np.int64),
        "big": np.array([(1 << 40) + 3, (1 << 32) - 2], np.int64),  # high seed word, counter carry
        "neg": np.array([-1, -3], np.int64),
        "batch": np.array([[0, 0], [1, 0], [1, 5], [123456789, 1 << 33]], np.int64),  # (K, 2)
        "batch1": np.array([[9, 9]], np.int64),
        "batch2d": np.arange(12, dtype=np.int64).reshape(2, 3, 2),
    }
    cases = [
        ("k42", (3,), dt.float32), ("k", (), dt.float32), ("big", (2, 3), dt.float32), ("neg", (4,), dt.float64),
        ("k42", (), dt.float64), ("k", (0,), dt.float32), ("k42", (1,), dt.float64), ("big", (5,), dt.float64),
        ("batch", (2, 3), dt.float32), ("batch", (), dt.float64), ("batch1", (2,), dt.float64),
        ("batch2d", (2,), dt.float32), ("batch", (0, 2), dt.float32),
    ]
    return [Sample(name, [_ro(keys[k])], {"shape": shape, "dtype": d}, expected) for k, shape, d in cases]


# ---------------------------------------------------------------------------------------------
# argsort
# ---------------------------------------------------------------------------------------------
def _argsort_expected(x, *, axis, descending):
    """Insertion of each element after the ones that sort before it (ties keep their order)."""
    def key(v):
        nan = isinstance(v, float) and math.isnan(v)
        return (1, 0.0) if nan else (0, float(v))

    out = np.empty(x.shape, np.int64)
    for o in np.ndindex(*(x.shape[:axis] + x.shape[axis + 1:])):
        row = [x[o[:axis] + (i,) + o[axis:]].item() for i in range(x.shape[axis])]
        order = sorted(range(len(row)), key=lambda i: key(row[i]), reverse=descending)  # stable both ways
        for i, j in enumerate(order):
            out[o[:axis] + (i,) + o[axis:]] = j
    return out


def _argsort_samples() -> list[Sample]:
    rng = _rng("argsort")
    out = []
    cases = [((6,), 0, False), ((6,), 0, True), ((3, 5), 1, True), ((4, 3), 0, False), ((2, 3, 4), 1, False),
             ((1,), 0, True), ((0, 3), 1, False), ((3, 0), 1, True), ((9,), 0, True)]
    for i, d in enumerate(_supported("argsort", lambda d: (TensorType((2,), d),), axis=0, descending=False)):
        for shape, axis, desc in (cases if i == 0 else cases[:3]):
            x = _values(rng, shape, d, -2, 2)
            if d.is_floating_point and x.size > 2:
                x = np.round(x)  # ties
                x.flat[1] = np.nan
            out.append(Sample("argsort", [_ro(x)], {"axis": axis, "descending": desc}, _argsort_expected))
    return out

# ---------------------------------------------------------------------------------------------
# dense linear algebra (ir/prims/decompositions.py)
# ---------------------------------------------------------------------------------------------
def _well_conditioned(rng, shape, d: dt.DType) -> np.ndarray:
    """Matrices (..., m, n) with a dominant, well-separated diagonal (distinct singular values)."""
    x = rng.uniform(-1, 1, shape)
    k = min(shape[-2:])
    if k:
        x[..., range(k), range(k)] += np.linspace(2.0, 4.0, k)
    return x.astype(d.np)


def _spd(rng, shape, d: dt.DType) -> np.ndarray:
    """Symmetric positive-definite matrices with well-separated eigenvalues."""
    x = rng.uniform(-1, 1, shape)
    n = shape[-1]
    if not n:
        return x.astype(d.np)
    return (x @ np.swapaxes(x, -1, -2) + np.diag(np.linspace(1.0, 1.0 + 1.5 * n, n))).astype(d.np)


def _solve_expected(a, rhs):
    """Gaussian elimination with partial pivoting, by hand, per matrix."""
    out = np.empty(rhs.shape, np.float64)
    n = a.shape[-1]
    for i in np.ndindex(*a.shape[:-2]):
        m = np.concatenate([a[i].astype(np.float64), rhs[i].astype(np.float64)], axis=1)
        for c in range(n):
            p = c + int(np.argmax(np.abs(m[c:, c])))
            m[[c, p]] = m[[p, c]]
            m[c + 1:] -= np.outer(m[c + 1:, c] / m[c, c], m[c])
        x = np.zeros(rhs[i].shape)
        for r in reversed(range(n)):
            x[r] = (m[r, n:] - m[r, r + 1:n] @ x[r + 1:]) / m[r, r]
        out[i] = x
    return out.astype(rhs.dtype)


def _linalg_samples(name: str) -> list[Sample]:
    rng = _rng(name)
    out = []
    square = [(1, 1), (3, 3), (2, 3, 3), (0, 0), (0, 2, 2)]
    tall = [(1, 1), (4, 3), (3, 3), (2, 4, 2), (0, 0), (3, 0)]
    for d in (dt.float32, dt.float64):
        if name == "linalg_solve":
            for shape, k in zip(square, (1, 2, 1, 2, 1)):
                rhs = rng.uniform(-1, 1, shape[:-1] + (k,)).astype(d.np)
                out.append(Sample(name, [_ro(_well_conditioned(rng, shape, d)), _ro(rhs)], {}, _solve_expected))
        elif name == "cholesky":  # these stay positive-definite under tests/vmap's np.roll variations
            rolled = [np.array([[0.5, 0.7], [0.6, 2.5]]),
                      np.array([[[1.0, 1.2], [1.3, 3.0]], [[1.2, 1.7], [1.5, 2.9]]])]
            out += [Sample(name, [_ro(x.astype(d.np))], {}, None)
                    for x in rolled + [_spd(rng, sh, d) for sh in ((1, 1), (0, 0), (0, 2, 2))]]
        elif name == "slogdet":
            for part in ("sign", "logabsdet"):
                out += [Sample(name, [_ro(_well_conditioned(rng, sh, d) * (-1) ** i)], {"part": part}, None)
                        for i, sh in enumerate(square)]
        elif name == "qr":
            for part in ("q", "r"):
                out += [Sample(name, [_ro(_well_conditioned(rng, sh, d))], {"part": part}, None) for sh in tall]
        elif name == "eigh":
            for part in ("eigenvalues", "eigenvectors"):
                out += [Sample(name, [_ro(_spd(rng, sh, d))], {"part": part}, None) for sh in square]
        elif name == "svd":
            for part in ("u", "s", "vh"):
                out += [Sample(name, [_ro(_well_conditioned(rng, sh, d))], {"part": part}, None)
                        for sh in tall + [(2, 4)]]
    return out



# ---------------------------------------------------------------------------------------------
# The registry-driven index
# ---------------------------------------------------------------------------------------------
SPECIAL: dict[str, Callable[[], list[Sample]]] = {
    "argsort": _argsort_samples,
    **{n: functools.partial(_linalg_samples, n) for n in ("linalg_solve", "cholesky", "slogdet", "qr", "eigh", "svd")},
}


def _declared_samples(name: str) -> list[Sample]:
    """The primitive's own `examples()` (primitives with regions), as read-only samples."""
    return [Sample(name, [_ro(a) for a in args], dict(attrs), expected)
            for args, attrs, expected in ir.REGISTRY[name].examples()]


def _builder(name: str) -> Callable[[], list[Sample]] | None:
    prim = ir.REGISTRY[name]
    if prim.examples is not None:
        return lambda: _declared_samples(name)
    if _is_plain_elementwise(prim):
        if prim.domain is None:
            return None  # no samples: tests/ir/test_prim_impls.py names the primitive
        expected = ORACLES.get(name) or _f64_impl(name)
        return lambda: _elementwise(name, prim.num_operands, expected,
                                    [domain_generator(d) for d in prim.domain])
    if prim.family == "compare":
        return lambda: _compare_samples(name)
    if name in REDUCE:
        return lambda: _reduce_samples(name)
    if name in ("argmax", "argmin"):
        return lambda: _arg_samples(name)
    if prim.family == "random":
        return lambda: _random_samples(name)
    if name in SPECIAL:
        return SPECIAL[name]
    if prim.family in ("layout", "indexing", "constant"):
        return lambda: _layout_samples(name)
    return {"select": _select_samples, "convert_element_type": _convert_samples,
            "dot_general": _dot_samples}.get(name)


@functools.cache
def _cached(name: str) -> tuple[Sample, ...]:
    build = _builder(name)
    return tuple(build()) if build else ()


def samples(prim_name: str) -> list[Sample]:
    """The samples of primitive `prim_name` (an empty list if it has none yet).

    Raises KeyError for a name that is not in `ir.REGISTRY`. Samples are shared
    by every caller: their argument arrays are read-only, and their `attrs`
    must not be mutated (copy first).
    """
    if prim_name not in ir.REGISTRY:
        raise KeyError(f"unknown primitive {prim_name!r}")
    return list(_cached(prim_name))


def node_operands(builder: ir.GraphBuilder, prim, values: list) -> list:
    """The operands of `prim` built from a sample's argument values: a ``tuple`` operand (see
    `Primitive.roles`) is given by its elements, packed here with ``make_tuple``."""
    if prim.role(0) == "tuple":
        return [builder.make_tuple(*values)]
    return list(values)


def node_graph(prim_name: str, args: list[np.ndarray], attrs: dict, name: str | None = None) -> ir.Graph:
    """``prim(*args, **attrs)`` as a graph on inputs typed like `args`; a tuple result is projected
    into one output per element (`GraphBuilder.results`)."""
    prim = ir.get_primitive(prim_name)
    b = ir.GraphBuilder(name or prim_name)
    ins = [b.add_input(TensorType(tuple(a.shape), dt.from_numpy(a.dtype))) for a in args]
    return b.build(b.results(b.emit(prim, *node_operands(b, prim, ins), **attrs)))


def impl_results(prim_name: str, args: list[np.ndarray], attrs: dict) -> list[np.ndarray]:
    """The primitive's numpy impl on a sample's arguments: one array per result element."""
    prim = ir.get_primitive(prim_name)
    out = prim.impl(*([tuple(args)] if prim.role(0) == "tuple" else args), **attrs)
    return list(out) if isinstance(out, tuple) else [out]


def result_types(prim_name: str, args: list[np.ndarray], attrs: dict) -> list[TensorType]:
    """The shape rule's result types for a sample: one per element of a tuple result."""
    prim = ir.get_primitive(prim_name)
    types = [TensorType(tuple(a.shape), dt.from_numpy(a.dtype)) for a in args]
    if prim.role(0) == "tuple":
        types = [ir.TupleType(types)]
    out = prim.abstract_eval(*types, **attrs)
    return list(out.elements) if isinstance(out, ir.TupleType) else [out]


ALL_SAMPLES: list[Sample] = list(itertools.chain.from_iterable(samples(p.name) for p in ir.all_primitives()))
