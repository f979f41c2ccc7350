"""Registry-driven checks of every primitive's differentiation rules, over the shared sample corpus.

For each sample of a differentiable primitive (run in float64):
- the JVP pass agrees with central finite differences;
- reverse mode (linearize + transpose) satisfies the dot-product identity <u, J v> = <J^T u, v>;
- forward-over-reverse (the JVP of the backward graph) agrees with finite differences of the
  backward graph: second derivatives, and proof that backward graphs are ordinary graphs.
Every pass output is run through the verifier.
"""
import numpy as np
import pytest

from tensorplay import ir
from tensorplay.ir import GraphBuilder, TensorType, dtypes as dt, inline, interpret
from tensorplay.ir.passes.jvp import jvp
from tensorplay.ir.passes.partial_eval import linearize
from tensorplay.ir.passes.reverse import vjp
from tensorplay.ir.passes.transpose import transpose
from tensorplay.ir.verify import verify
from tests.ad.ad_util import DIFF_SAMPLES, central_difference, diff_case, random_like, single_node_graph, vdot
from tests.prim_samples import ALL_SAMPLES, sample_id

DIFFERENTIABLE = [p for p in ir.all_primitives() if p.differentiable]
NON_DIFFERENTIABLE = [p for p in ir.all_primitives() if not p.differentiable]


# --- coverage --------------------------------------------------------------------------------------
def test_every_differentiable_primitive_has_a_jvp_rule():
    missing = [p.name for p in DIFFERENTIABLE if p.jvp is None]
    assert not missing, f"differentiable primitives without a JVP rule: {missing}"


def test_every_differentiable_primitive_is_checked_numerically():
    checked = {s.prim for s in DIFF_SAMPLES}
    missing = [p.name for p in DIFFERENTIABLE if p.name not in checked]
    assert not missing, f"differentiable primitives without a float sample to check: {missing}"


def test_every_primitive_in_a_linear_graph_has_a_transpose_rule():
    """The primitives JVP rules apply to tangents are exactly those reverse mode must transpose."""
    used, missing = set(), set()
    for s in DIFF_SAMPLES:
        g, _, wrt = diff_case(s)
        constant = set()  # nodes of constants only (masks from iota): computed forward, never transposed
        for n in linearize(g, wrt).linear.nodes:
            if not n.prim.random and all(v in constant for v in n.inputs):
                constant.add(n.out)
                continue
            used.add(n.prim.name)
            if n.prim.transpose is None and n.inputs:
                missing.add(n.prim.name)
    assert not missing, f"primitives applied to tangents without a transpose rule: {sorted(missing)}"
    assert {"add", "mul", "dot_general", "broadcast_in_dim", "reduce_sum", "select"} <= used


FLOAT_OPERAND_SAMPLES = {p.name: [s for s in ALL_SAMPLES
                                  if s.prim == p.name and any(a.dtype.kind == "f" for a in s.args)]
                         for p in NON_DIFFERENTIABLE}


@pytest.mark.parametrize("prim", [p for p in NON_DIFFERENTIABLE if FLOAT_OPERAND_SAMPLES[p.name]],
                         ids=lambda p: p.name)
def test_non_differentiable_primitives_give_symbolic_zero_tangents(prim):
    """(Primitives without float operands -- iota, full, random draws, logical ops -- never see a tangent.)"""
    s = FLOAT_OPERAND_SAMPLES[prim.name][0]
    g = single_node_graph(s.prim, list(s.args), dict(s.attrs))
    j = jvp(g, [a.dtype.kind == "f" for a in s.args])
    assert j.zero_outputs == [True]
    assert [n.prim.name for n in j.graph.nodes].count(prim.name) == 1


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "sign"])
def test_piecewise_constant_primitives_have_zero_derivative(name):
    b = GraphBuilder()
    x = b.add_input(TensorType((3,), dt.float64))
    j = jvp(b.build([b.emit(name, x)]), [True])
    assert j.zero_outputs == [True]


@pytest.mark.parametrize("to", [dt.int32, dt.int64, dt.bool_])
def test_convert_to_integer_or_bool_has_zero_tangent(to):
    b = GraphBuilder()
    x = b.add_input(TensorType((3,), dt.float32))
    j = jvp(b.build([b.convert_element_type(x, dtype=to)]), [True])
    assert j.zero_outputs == [True]


# --- numerical checks ------------------------------------------------------------------------------
# reverse mode through while_loop is an error by design (its trip count is unknown when tracing)
REVERSE_SAMPLES = [s for s in DIFF_SAMPLES if s.prim != "while_loop"]


@pytest.mark.parametrize("s", DIFF_SAMPLES, ids=sample_id)
def test_jvp_matches_central_differences(s):
    g, args, wrt = diff_case(s)
    j = jvp(g, wrt)
    verify(j.graph)
    tangents = random_like(np.random.default_rng(0), args, wrt)
    primal, tangent = interpret(j.graph, args + tangents)
    np.testing.assert_allclose(primal, interpret(g, args)[0], rtol=0, atol=0)
    (fd,) = central_difference(g, args, wrt, tangents)
    np.testing.assert_allclose(tangent, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("s", REVERSE_SAMPLES, ids=sample_id)
def test_vjp_satisfies_the_dot_product_identity(s):
    g, args, wrt = diff_case(s)
    lin = linearize(g, wrt)
    back = transpose(lin.linear, [False] * lin.num_residuals + [True] * sum(wrt))
    for graph in (lin.primal, lin.linear, back):
        verify(graph)
    rng = np.random.default_rng(1)
    v = random_like(rng, args, wrt)
    u = rng.standard_normal(g.outputs[0].shape)
    out_and_res = interpret(lin.primal, args)
    residuals = out_and_res[1:]
    (jv,) = interpret(lin.linear, residuals + v)
    jtu = interpret(back, residuals + [u])
    assert [c.shape for c in jtu] == [t.shape for t in v]
    np.testing.assert_allclose(vdot([u], [jv]), vdot(jtu, v), rtol=1e-10, atol=1e-10)


def _backward_as_graph(g, wrt):
    """(x, u) -> J(x)^T u as one graph."""
    parts = vjp(g, wrt)
    b = GraphBuilder("pullback")
    xs = [b.add_input(v.type) for v in g.inputs]
    u = b.add_input(g.outputs[0].type)
    fwd = inline(b, parts.forward, xs)
    return b.build(inline(b, parts.backward, fwd[1:] + [u]))


@pytest.mark.parametrize("s", REVERSE_SAMPLES, ids=sample_id)
def test_second_derivatives_forward_over_reverse(s):
    g, args, wrt = diff_case(s)
    pullback = _backward_as_graph(g, wrt)
    verify(pullback)
    j = jvp(pullback, wrt + [False])
    verify(j.graph)
    rng = np.random.default_rng(2)
    u = rng.standard_normal(g.outputs[0].shape)
    tangents = random_like(rng, args, wrt)
    outs = interpret(j.graph, args + [u] + tangents)
    second = outs[len(pullback.outputs):]
    fd = central_difference(pullback, args + [u], wrt + [False], tangents)
    for got, want in zip(second, fd):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("s", [s for s in DIFF_SAMPLES if any(a.dtype == np.float32 for a in s.args)][::3],
                         ids=sample_id)
def test_rules_keep_float32_types(s):
    """In the sample's own precision, every pass output type-checks (the verifier re-derives types)."""
    g = single_node_graph(s.prim, list(s.args), dict(s.attrs))
    wrt = [a.dtype.kind == "f" for a in s.args]
    parts = vjp(g, wrt)
    for graph in (jvp(g, wrt).graph, parts.forward, parts.backward):
        verify(graph)
