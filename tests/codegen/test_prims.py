"""Registry-driven: every primitive, on every sample of the shared corpus (every
dtype it supports, 0-d / size-1 / empty / general shapes), compiled == the
reference interpreter — exactly for ints and bools, within a stated ULP bound
for floats."""
from __future__ import annotations

import math

import numpy as np
import pytest

import codegen
import ir
from codegen import vecmath
from codegen_testutil import assert_close, assert_sum_close, single_node_graph
from prim_samples import ALL_SAMPLES, sample_id

# ULP bounds of compiled vs numpy for float results, per primitive (default 0: exact). For
# vecmath functions: our bound against the true value (codegen/vecmath.py) plus 3 ulp for
# numpy's own error (its SIMD float32 kernels and libm are not correctly rounded either).
ULP = {name: math.ceil(max(bounds)) + 3 for name, bounds in vecmath.ULP_BOUNDS.items()}
ULP["random_normal"] = 2  # Box-Muller with our float64 log/cos (codegen/philox.py)
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
