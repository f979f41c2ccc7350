"""vecmath error bounds, end to end through compiled graphs.

Each function runs over wide input ranges (uniform near the interesting
region, log-uniform magnitudes across the exponent range, both signs) plus edge
values (0, -0, +-inf, nan, subnormals, the largest finite value, 1, -1), and is
compared with a higher-precision reference: float64 numpy for float32 results,
x87 long double numpy (or mpmath for erf) for float64 results. The error is
measured in ulp of the result and must stay within `vecmath.ULP_BOUNDS`.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay import ir
from tensorplay.codegen import vecmath
from codegen_testutil import ulp_distance
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

LD = np.longdouble
HAVE_LONG_DOUBLE = np.finfo(LD).nmant >= 63
N = 20000

EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-45, -1e-45, 1e-40, 5e-324,
                  1e-310, -1e-310, 1e-30, 100.0, -100.0, 3.4028234663852886e38, -3.4028234663852886e38,
                  1.7976931348623157e308, -1.7976931348623157e308, 88.72, 89.0, 709.7, 710.0, -745.0, -103.0])


def _uniform(lo, hi):
    return lambda rng: rng.uniform(lo, hi, N)


def _wide(lo_exp, hi_exp):
    """Log-uniform magnitudes 2^lo_exp .. 2^hi_exp with random signs."""
    return lambda rng: 2.0 ** rng.uniform(lo_exp, hi_exp, N) * rng.choice([-1.0, 1.0], N)


def _edges(rng):
    return EDGES


def _ints(rng):
    return np.round(rng.uniform(-9, 9, N))


def _pairs(values):
    """Every pair of edge values, as two aligned columns."""
    a, b = np.meshgrid(values, values)
    return a.ravel(), b.ravel()


UNARY = {
    "exp": [_uniform(-5, 5), _uniform(-110, 90), _wide(-60, 10), _edges],
    "expm1": [_uniform(-1, 1), _uniform(-110, 90), _wide(-60, 10), _edges],
    "log": [_uniform(0, 10), _wide(-1074, 1024), _edges],
    "log1p": [_uniform(-1, 1), _wide(-60, 60), _wide(-1074, 1024), _edges],
    "sin": [_uniform(-10, 10), _wide(-60, 49), _edges],
    "cos": [_uniform(-10, 10), _wide(-60, 49), _edges],
    "tan": [_uniform(-10, 10), _wide(-60, 49), _edges],
    "tanh": [_uniform(-10, 10), _wide(-60, 6), _edges],
    "logistic": [_uniform(-30, 30), _wide(-60, 10), _edges],
    "erf": [_uniform(-7, 7), _wide(-60, 4), _edges],
    "asinh": [_uniform(-5, 5), _wide(-1074, 1024), _edges],
    "acosh": [_uniform(1, 10), lambda rng: 1 + 2.0 ** rng.uniform(-50, 0, N), _wide(0, 1024), _edges],
    "atanh": [_uniform(-1, 1), lambda rng: 1 - 2.0 ** rng.uniform(-50, -1, N), _wide(-1074, 0), _edges],
    "cbrt": [_uniform(-10, 10), _wide(-1074, 1024), _edges],
}
BINARY = {  # (first operand generators, second operand generators), aligned
    "pow": ([_uniform(0, 5), _wide(-30, 30), _uniform(-10, 10)], [_uniform(-10, 10), _uniform(-50, 50), _ints]),
    "atan2": ([_uniform(-5, 5), _wide(-100, 100), _wide(-1074, 1023)], [_uniform(-5, 5), _wide(-100, 100),
                                                                          _wide(-1074, 1023)]),
    "hypot": ([_uniform(-5, 5), _wide(-1074, 1023), _wide(-100, 100)], [_uniform(-5, 5), _wide(-1074, 1023),
                                                                          _wide(-30, 30)]),
}


def _default_ranges(name: str):
    """Input ranges for a function the tables above do not list: its primitive's sample domain,
    a log-uniform sweep of magnitudes, and the edge values."""
    lo, hi = ir.REGISTRY[name].domain[0].lo, ir.REGISTRY[name].domain[0].hi
    return [_uniform(lo, hi), _wide(-60, 60), _edges]


for _name in vecmath.ULP_BOUNDS:  # every stated bound is measured, listed above or not
    if _name not in UNARY and _name not in BINARY:
        if ir.REGISTRY[_name].num_operands == 1:
            UNARY[_name] = _default_ranges(_name)
        else:
            BINARY[_name] = ([r for r in _default_ranges(_name)[:2]], [r for r in _default_ranges(_name)[:2]])


def _reference(name: str, args: list[np.ndarray], dtype: dt.DType) -> np.ndarray:
    """The function in more precision than `dtype` (float64 for float32, long double for float64)."""
    hi = np.float64 if dtype is dt.float32 else LD
    a = [x.astype(hi) for x in args]
    with np.errstate(all="ignore"):
        if name == "erf":
            if dtype is dt.float32:
                return np.array([math.erf(v) for v in a[0]])
            mp = pytest.importorskip("mpmath")
            mp.mp.dps = 30
            return np.array([LD(str(mp.erf(mp.mpf(float(v))))) if np.isfinite(v) else math.erf(v)
                             for v in args[0]], dtype=LD)
        if name == "logistic":
            return 1 / (1 + np.exp(-a[0]))
        fn = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "sin": np.sin, "cos": np.cos,
              "tan": np.tan, "tanh": np.tanh, "pow": np.power, "atan2": np.arctan2, "asinh": np.arcsinh,
              "acosh": np.arccosh, "atanh": np.arctanh, "cbrt": np.cbrt, "hypot": np.hypot}.get(name)
        if fn is None:  # a function without a listed reference: its numpy impl in more precision
            return ir.REGISTRY[name].impl(*a)
        return fn(*a)


def _ulp_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in ulp of the result's type; NaN/NaN, equal values and equal infinities give 0."""
    with np.errstate(all="ignore"):
        rounded = want.astype(got.dtype)
        err = np.abs(got.astype(want.dtype) - want) / np.spacing(np.abs(rounded)).astype(want.dtype)
    same = (np.isnan(got) & np.isnan(want)) | (got.astype(want.dtype) == want) | (np.isinf(rounded) & (got == rounded))
    return np.where(same, 0.0, np.where(np.isnan(err), np.inf, err)).astype(np.float64)


def _run(name: str, dtype: dt.DType, args: list[np.ndarray]) -> np.ndarray:
    b = ir.GraphBuilder(name)
    vals = [b.add_input(TensorType(a.shape, dtype)) for a in args]
    return codegen.compile_graph(b.build([b.emit(name, *vals)]))(*args)[0]


def _check(name: str, dtype: dt.DType, args: list[np.ndarray]) -> None:
    if dtype is dt.float64 and not HAVE_LONG_DOUBLE:
        pytest.skip("needs an 80-bit long double reference")
    got = _run(name, dtype, args)
    want = _reference(name, args, dtype)
    if name in ("sin", "cos", "tan"):  # beyond the documented domain the result is nan
        outside = np.abs(args[0].astype(np.float64)) >= vecmath.TRIG_LIMIT
        assert np.isnan(got[outside]).all()
        want = np.where(outside, np.nan, want)
    err = _ulp_error(got, want)
    bound = vecmath.ULP_BOUNDS[name][dtype is dt.float64]
    i = int(np.argmax(err))
    assert err[i] <= bound, (f"{name} {dtype.name}: {err[i]:.3g} ulp > {bound} at "
                             f"{[a[i] for a in args]}: got {got[i]!r}, want {want[i]!r}")


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64], ids=lambda d: d.short)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_error_bound(name, dtype):
    rng = np.random.default_rng(1234)
    with np.errstate(all="ignore"):
        x = np.concatenate([g(rng) for g in UNARY[name]]).astype(dtype.np)
    _check(name, dtype, [x])


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64], ids=lambda d: d.short)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_error_bound(name, dtype):
    rng = np.random.default_rng(1234)
    first, second = BINARY[name]
    with np.errstate(all="ignore"):
        x = np.concatenate([g(rng) for g in first]).astype(dtype.np)
        y = np.concatenate([g(rng) for g in second]).astype(dtype.np)
        ex, ey = _pairs(EDGES.astype(dtype.np))
    _check(name, dtype, [np.concatenate([x, ex]), np.concatenate([y, ey])])


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64], ids=lambda d: d.short)
@pytest.mark.parametrize("name", sorted(set(UNARY) | set(BINARY)))
def test_special_values_match_numpy(name, dtype):
    """At the IEEE edge values the result is what numpy gives (nan where nan, inf where inf, signed zeros)."""
    with np.errstate(all="ignore"):
        e = EDGES.astype(dtype.np)
    args = list(_pairs(e)) if name in BINARY else [e]
    got = _run(name, dtype, args)
    with np.errstate(all="ignore"):
        want = ir.REGISTRY[name].impl(*args)
        if name == "logistic":  # the impl's 0.5*(1+tanh(x/2)) flushes the far left tail to 0
            want = _reference(name, args, dtype).astype(dtype.np)
    if name in ("sin", "cos", "tan"):
        keep = np.abs(args[0].astype(np.float64)) < vecmath.TRIG_LIMIT
        got, want = got[keep], want[keep]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    special = np.isinf(want) | (want == 0)
    np.testing.assert_array_equal(got[special], want[special])
    np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))
    assert ulp_distance(got, want).max(initial=0) <= 8  # the rest is covered by the bounds above


def test_every_stated_bound_is_measured():
    """A bound nobody measures is a claim, not a bound: every lowering's `ulp` is a vecmath bound
    that the error-bound tests above run."""
    stated = {name for name, low in codegen.LOWERINGS.items() if low.ulp is not None}
    assert stated == set(vecmath.ULP_BOUNDS), f"lowerings and vecmath disagree: {stated ^ set(vecmath.ULP_BOUNDS)}"
    unmeasured = stated - set(UNARY) - set(BINARY)
    assert not unmeasured, f"stated ULP bounds without an error-bound test: {sorted(unmeasured)}"
    for name in stated:
        assert codegen.LOWERINGS[name].ulp == vecmath.ULP_BOUNDS[name], name


def _docstring_table() -> dict[str, tuple[float, float]]:
    """The error table of `codegen/vecmath.py`'s docstring: function name -> (float32, float64)."""
    lines = vecmath.__doc__.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("=========")]
    out = {}
    for line in lines[rules[1] + 1:rules[2]]:
        names, f32, f64 = line[:10].strip(), line[48:57].strip(), line[57:].strip()
        if not names:
            continue  # a continuation line of the method column
        f32 = float(f32.split()[0])
        for name in names.split(","):
            out[name.strip()] = (f32, float(f64))
    return out


def test_docstring_table_matches_the_bounds():
    table = _docstring_table()
    assert set(table) == set(vecmath.ULP_BOUNDS), f"docstring table vs @bound: {set(table) ^ set(vecmath.ULP_BOUNDS)}"
    for name, bounds in vecmath.ULP_BOUNDS.items():
        assert table[name] == tuple(float(b) for b in bounds), f"{name}: table {table[name]} vs @bound {bounds}"
