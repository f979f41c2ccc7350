"""Registry-driven: every primitive, on every sample of the shared corpus (every
dtype it supports, 0-d / size-1 / empty / general shapes), compiled == the
reference interpreter — exactly for ints and bools, within a stated ULP bound
for floats."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay import ir
from codegen_testutil import assert_close, assert_sum_close, single_node_graph
from prim_samples import ALL_SAMPLES, Sample, sample_id
from tensorplay.ir import dtypes as dt

# ULP bounds of compiled vs numpy for float results, per primitive (default 0: exact). For
# vecmath functions: our bound against the true value (codegen/vecmath.py) plus 3 ulp for
# numpy's own error (its SIMD float32 kernels and libm are not correctly rounded either).
ULP = {name: math.ceil(max(low.ulp)) + 3 for name, low in codegen.LOWERINGS.items() if low.ulp is not None}
SUMS = {"reduce_sum", "reduce_prod", "dot_general"}


def test_every_primitive_has_a_lowering():
    missing = sorted(set(ir.REGISTRY) - set(codegen.LOWERINGS))
    assert not missing, f"primitives without a codegen lowering: {missing}"
    assert not set(codegen.LOWERINGS) - set(ir.REGISTRY), "lowerings for unknown primitives"


def test_every_primitive_has_samples():
    assert {s.prim for s in ALL_SAMPLES} == set(ir.REGISTRY)


def _check(s, got, want):
    what = sample_id(s)
    if s.prim == "logistic":  # the reference 0.5*(1+tanh(x/2)) cancels: compare absolutely
        np.testing.assert_allclose(got, want, rtol=0, atol=4 * np.finfo(want.dtype).eps, err_msg=what)
        return
    if s.prim in SUMS and want.dtype.kind == "f":
        x = s.args[0]
        if s.prim == "dot_general":
            scale = ir.interpret(single_node_graph(s.prim, [np.abs(a) for a in s.args], s.attrs),
                                 [np.abs(a) for a in s.args])[0]
            n = max(int(np.prod([x.shape[a] for a in s.attrs["contract"][0]])), 1)
        else:
            scale = np.abs(want) if s.prim == "reduce_prod" else \
                np.sum(np.abs(x), axis=tuple(s.attrs["axes"])).astype(x.dtype)
            n = max(int(np.prod([x.shape[a] for a in s.attrs["axes"]])), 1)
        assert_sum_close(got, want, scale, n, what)
    else:
        assert_close(got, want, ULP.get(s.prim, 0), what)


@pytest.mark.parametrize("s", ALL_SAMPLES, ids=sample_id)
def test_compiled_matches_interpreter(s):
    g = single_node_graph(s.prim, s.args, s.attrs)
    want = ir.interpret(g, s.args)[0]
    got = codegen.compile_graph(g)(*s.args)[0]
    _check(s, got, np.asarray(want))


# --- extra cases: integer and float edge semantics, vector-loop remainders -------------------------
def _extra_samples() -> list[Sample]:
    i32, i64 = np.iinfo(np.int32), np.iinfo(np.int64)
    out = []
    for t, info in ((np.int32, i32), (np.int64, i64)):
        x = np.array([info.min, info.min, 7, -7, 7, -7, 0, info.max, 5], t)
        y = np.array([-1, 0, 2, 2, -2, -2, 0, -1, 0], t)
        out += [Sample(p, [x, y], {}, None) for p in ("div", "rem", "mul", "add", "sub", "max", "min")]
        out += [Sample(p, [x], {}, None) for p in ("neg", "abs", "sign", "logical_not")]
    special = [np.nan, np.inf, -np.inf, 3e9, -3e9, 2.5, -2.5, 1e19, -1e19, 2147483647.7, -2147483648.5, -0.9, 0.0]
    for src in (np.float32, np.float64):
        x = np.array(special, src)
        for d in dt.ALL:
            out.append(Sample("convert_element_type", [x], {"dtype": d}, None))
        y = np.array([np.nan, 1.0, np.inf, -0.0, 0.0, np.nan, 2.5, 1e19, 0.0, 1.0, -1.0, np.nan, -0.0], src)
        out += [Sample(p, [x, y], {}, None) for p in ("max", "min", "eq", "ne", "lt", "le", "gt", "ge", "rem", "pow")]
        big = np.random.default_rng(0).standard_normal(1027).astype(src)  # vector loop + remainder
        out += [Sample(p, [big], {}, None) for p in ("sin", "exp", "tanh", "abs", "round", "floor")]
        out.append(Sample("reduce_sum", [big.reshape(13, 79)], {"axes": (1,)}, None))
        out.append(Sample("reduce_sum", [big.reshape(13, 79)], {"axes": (0,)}, None))
        out.append(Sample("argmax", [np.array([[1, np.nan, 3, np.nan], [2, 2, 1, 2]], src)],
                          {"axis": 1, "index_dtype": dt.int64}, None))
        out.append(Sample("argmin", [np.array([[1, 0, 0, -np.inf], [2, 2, 1, 1]], src).T],
                          {"axis": 0, "index_dtype": dt.int32}, None))
    for it in (np.int32, np.int64):
        idx = np.array([[0, 0], [3, 3]], it)  # out of range: tests/codegen/test_index_bounds.py
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        out.append(Sample("take", [x, idx], {"axis": 1}, None))
        upd = np.ones((3, 2, 2), np.float32)
        out.append(Sample("index_add", [x, idx, upd], {"axis": 1}, None))
        bx = np.zeros((4, 2), np.bool_)
        out.append(Sample("index_add", [bx, np.array([1, 1, 3], it), np.array([[1, 0]] * 3, np.bool_)],
                          {"axis": 0}, None))
    return out


EXTRA = _extra_samples()


@pytest.mark.parametrize("s", EXTRA, ids=sample_id)
def test_edge_semantics_match_interpreter(s):
    g = single_node_graph(s.prim, s.args, s.attrs)
    with np.errstate(all="ignore"):
        want = ir.interpret(g, s.args)[0]
    got = codegen.compile_graph(g)(*s.args)[0]
    _check(s, got, np.asarray(want))
