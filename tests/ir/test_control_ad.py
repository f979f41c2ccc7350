"""AD of the control-flow primitives at the IR level: jvp, linearize + transpose (vjp), on graphs built by hand.

Oracles: float64 central finite differences, the VJP/JVP dot-product identity, and `jax` (jax.grad /
jax.jvp of lax.scan / lax.cond on the same numbers) when it is installed.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tensorplay.ir import GraphBuilder, Region, TensorType, float64, interpret
from tensorplay.ir.passes.jvp import jvp
from tensorplay.ir.passes.partial_eval import linearize
from tensorplay.ir.passes.reverse import grad_graph, split, vjp
from tensorplay.ir.prims.control_ad import WHILE_REVERSE_ERROR
from tensorplay.ir.verify import verify

F = float64
EPS = 1e-6


def T(*shape):
    return TensorType(tuple(shape), F)


# --- oracles -------------------------------------------------------------------------------------
def fd_grad(f, args, i):
    """Central finite differences of scalar f along every element of args[i]."""
    out = np.zeros_like(args[i])
    for idx in np.ndindex(args[i].shape):
        hi = [a.copy() for a in args]
        lo = [a.copy() for a in args]
        hi[i][idx] += EPS
        lo[i][idx] -= EPS
        out[idx] = (f(hi) - f(lo)) / (2 * EPS)
    return out


def value(graph):
    return lambda args: float(np.sum(interpret(graph, args)[0]))


def check_grad(graph, args, atol=1e-6):
    """grad_graph of a scalar graph against finite differences, all float inputs."""
    wrt = [a.dtype == np.float64 for a in args]
    g = grad_graph(graph, wrt, [1.0] + [None] * (len(graph.outputs) - 1), simplified=True)
    verify(g)
    got = interpret(g, args)[len(graph.outputs):]
    k = 0
    for i, w in enumerate(wrt):
        if w:
            np.testing.assert_allclose(got[k], fd_grad(value(graph), args, i), atol=atol, rtol=1e-6)
            k += 1
    return got


def check_jvp(graph, args, seed=1, atol=1e-6):
    """jvp of every output against finite differences along a random direction."""
    rng = np.random.default_rng(seed)
    wrt = [a.dtype == np.float64 for a in args]
    j = jvp(graph, wrt)
    verify(j.graph)
    ts = [rng.normal(size=a.shape) for a, w in zip(args, wrt) if w]
    outs = interpret(j.graph, list(args) + ts)
    it = iter(ts)
    dirs = [next(it) if w else np.zeros_like(a) for a, w in zip(args, wrt)]
    hi = interpret(graph, [a + EPS * d for a, d in zip(args, dirs)])
    lo = interpret(graph, [a - EPS * d for a, d in zip(args, dirs)])
    for k, (h, l) in enumerate(zip(hi, lo)):
        np.testing.assert_allclose(outs[len(graph.outputs) + k], (h - l) / (2 * EPS), atol=atol, rtol=1e-6)


def check_dot_identity(graph, args, seed=2):
    """<ct, J t> == <J^T ct, t> with the linear and the transposed graphs of one split."""
    rng = np.random.default_rng(seed)
    wrt = [a.dtype == np.float64 for a in args]
    lin = split(graph, wrt, transposed=False)
    back = vjp(graph, wrt)
    verify(lin.forward)
    verify(lin.second)
    verify(back.backward)
    n_out = len(graph.outputs)
    res = interpret(lin.forward, args)[n_out:]
    ts = [rng.normal(size=a.shape) for a, w in zip(args, wrt) if w]
    jt = interpret(lin.second, res + ts)
    cts = [rng.normal(size=o.shape) for o in graph.out_types]
    res_b = interpret(back.forward, args)[n_out:]
    jct = interpret(back.backward, res_b + cts)
    lhs = sum(float(np.sum(c * j)) for c, j in zip(cts, jt))
    rhs = sum(float(np.sum(g * t)) for g, t in zip(jct, ts))
    assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-9)


def check_all(graph, args):
    check_grad(graph, args)
    check_jvp(graph, args)
    check_dot_identity(graph, args)


# --- graphs --------------------------------------------------------------------------------------
def scan_graph(length=5, shape=(3,), reverse=False, scalar_out=True):
    """c' = sin(w * c + x), y = c' * c' * w; loss = sum(c_final) + sum(ys)."""
    bb = GraphBuilder("body")
    w, c, x = (bb.add_input(T(*shape)) for _ in range(3))
    nc = bb.sin(bb.add(bb.mul(w, c), x))
    body = Region(bb.build([nc, bb.mul(bb.mul(nc, nc), w)]))
    b = GraphBuilder("f")
    W, c0, xs = b.add_input(T(*shape)), b.add_input(T(*shape)), b.add_input(T(length, *shape))
    t = b.scan(W, c0, xs, body=body, num_consts=1, num_carry=1, length=length, reverse=reverse)
    cf, ys = b.tuple_get(t, index=0), b.tuple_get(t, index=1)
    if not scalar_out:
        return b.build([cf, ys])
    axes = tuple(range(len(shape)))
    return b.build([b.add(b.reduce_sum(cf, axes=axes), b.reduce_sum(ys, axes=(0,) + tuple(a + 1 for a in axes)))])


def cond_graph():
    """pred = p > 0; true: (sin(x) * w, exp(x)); false: (x * x, cos(w))."""
    tb = GraphBuilder("yes")
    x, w = tb.add_input(T(3)), tb.add_input(T(3))
    yes = Region(tb.build([tb.mul(tb.sin(x), w), tb.exp(x)]))
    fb = GraphBuilder("no")
    x, w = fb.add_input(T(3)), fb.add_input(T(3))
    no = Region(fb.build([fb.mul(x, x), fb.cos(w)]))
    b = GraphBuilder("f")
    p, x, w = b.add_input(T()), b.add_input(T(3)), b.add_input(T(3))
    c = b.cond(b.gt(p, b.const(0.0, (), F)), x, w, true=yes, false=no)
    s0 = b.reduce_sum(b.tuple_get(c, index=0), axes=(0,))
    s1 = b.reduce_sum(b.mul(b.tuple_get(c, index=1), x), axes=(0,))
    return b.build([b.add(s0, s1)])


def while_graph():
    """A counted loop: (i, x) -> (i + 1, sin(x) * w) while i < 3."""
    cb = GraphBuilder("cond")
    i, x = cb.add_input(T()), cb.add_input(T(3))
    cond = Region(cb.build([cb.lt(i, cb.const(3.0, (), F))]))
    bb = GraphBuilder("body")
    w, i, x = bb.add_input(T(3)), bb.add_input(T()), bb.add_input(T(3))
    body = Region(bb.build([bb.add(i, bb.const(1.0, (), F)), bb.mul(bb.sin(x), w)]))
    b = GraphBuilder("f")
    w, x = b.add_input(T(3)), b.add_input(T(3))
    t = b.while_loop(w, b.const(0.0, (), F), x, cond=cond, body=body, num_cond_consts=0, num_body_consts=1)
    return b.build([b.reduce_sum(b.tuple_get(t, index=1), axes=(0,))])


def rng_args(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s) for s in shapes]


# --- scan ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_grad_jvp_and_dot_identity(reverse):
    check_all(scan_graph(reverse=reverse), rng_args((3,), (3,), (5, 3)))


def test_scan_with_several_outputs_dot_identity():
    check_dot_identity(scan_graph(4, scalar_out=False), rng_args((3,), (3,), (4, 3)))
    check_jvp(scan_graph(4, scalar_out=False), rng_args((3,), (3,), (4, 3)))


@settings(max_examples=12, deadline=None)
@given(length=st.sampled_from([0, 1, 3]), shape=st.sampled_from([(), (1,), (2,)]), reverse=st.booleans())
def test_scan_grad_shapes(length, shape, reverse):
    check_grad(scan_graph(length, shape, reverse), rng_args(shape, shape, (length, *shape)))


def test_scan_carry_tangent_becomes_nonzero_in_the_body():
    """Only the const is differentiated: the carry's tangent starts as a symbolic zero and the body
    makes it nonzero (the fixpoint instantiates it)."""
    g = scan_graph()
    args = rng_args((3,), (3,), (5, 3))
    j = jvp(g, [True, False, False])
    t = np.ones(3)
    got = interpret(j.graph, args + [t])[1]
    f = value(g)
    num = (f([args[0] + EPS * t, *args[1:]]) - f([args[0] - EPS * t, *args[1:]])) / (2 * EPS)
    assert float(got) == pytest.approx(num, rel=1e-6)
    gg = grad_graph(g, [True, False, False], [1.0], simplified=True)
    np.testing.assert_allclose(interpret(gg, args)[1], fd_grad(f, args, 0), atol=1e-6)


def test_scan_residuals_of_the_consts_alone_are_hoisted_out_of_the_loop():
    """y = tanh(W) * c: tanh(W) is a residual computed once before the loop, never stacked per step."""
    bb = GraphBuilder("body")
    w, c = bb.add_input(T(3)), bb.add_input(T(3))
    nc = bb.mul(bb.tanh(w), bb.sin(c))
    body = Region(bb.build([nc]))
    b = GraphBuilder("f")
    W, c0 = b.add_input(T(3)), b.add_input(T(3))
    t = b.scan(W, c0, body=body, num_consts=1, num_carry=1, length=50, reverse=False)
    g = b.build([b.reduce_sum(b.tuple_get(t, index=0), axes=(0,))])
    s = split(g, [True, True])
    scans = [n for n in s.forward.nodes if n.prim.name == "scan"]
    stacked = [e for n in scans for e in n.out.type.elements if e.shape[:1] == (50,)]
    # per step only sin(c) and cos(c) are saved; tanh(W) and its derivative are computed once, outside
    assert len(stacked) == 2, [str(e) for e in stacked]
    assert any(n.prim.name == "tanh" for n in s.forward.nodes)
    assert sum(r.shape == (3,) for r in s.forward.out_types[1:]) >= 1
    check_grad(g, rng_args((3,), (3,)))


def test_nested_scan_in_scan_and_cond_in_scan():
    """An inner scan (running sum of x * c) and a cond (by the sign of the carry) inside an outer body."""
    ib = GraphBuilder("inner")
    ic, ix = ib.add_input(T()), ib.add_input(T())
    inner = Region(ib.build([ib.add(ib.mul(ic, ib.const(0.5, (), F)), ib.sin(ix))]))
    yb = GraphBuilder("yes")
    a = yb.add_input(T())
    yes = Region(yb.build([yb.mul(a, a)]))
    nb = GraphBuilder("no")
    a = nb.add_input(T())
    no = Region(nb.build([nb.exp(a)]))
    ob = GraphBuilder("outer")
    c, x = ob.add_input(T()), ob.add_input(T(4))
    s = ob.tuple_get(ob.scan(c, x, body=inner, num_consts=0, num_carry=1, length=4, reverse=False), index=0)
    k = ob.tuple_get(ob.cond(ob.gt(s, ob.const(0.0, (), F)), s, true=yes, false=no), index=0)
    outer = Region(ob.build([ob.tanh(k), k]))
    b = GraphBuilder("f")
    c0, xs = b.add_input(T()), b.add_input(T(3, 4))
    t = b.scan(c0, xs, body=outer, num_consts=0, num_carry=1, length=3, reverse=False)
    g = b.build([b.add(b.tuple_get(t, index=0), b.reduce_sum(b.tuple_get(t, index=1), axes=(0,)))])
    check_all(g, [np.array(0.3), np.random.default_rng(5).normal(size=(3, 4))])


# --- cond ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1.0, -1.0])
def test_cond_grad_jvp_and_dot_identity(p):
    check_all(cond_graph(), [np.array(p), *rng_args((3,), (3,))])


def test_cond_branches_share_residual_slots_of_equal_type():
    s = split(cond_graph(), [False, True, True])
    (known,) = [n for n in s.forward.nodes if n.prim.name == "cond"]
    # true saves cos(x), sin(x), w (for sin(x) * w) and exp(x); false saves x and sin(w): all of one type,
    # so the 2 outputs are followed by max(4, 2) shared residual slots, not 4 + 2
    assert len(known.out.type.elements) == 2 + 4


# --- while_loop ----------------------------------------------------------------------------------
def test_while_loop_forward_mode_and_linearize():
    g = while_graph()
    args = rng_args((3,), (3,))
    check_jvp(g, args)
    lin = split(g, [True, True], transposed=False)
    ts = rng_args((3,), (3,), seed=4)
    res = interpret(lin.forward, args)[1:]
    j = jvp(g, [True, True])
    np.testing.assert_allclose(interpret(lin.second, res + ts)[0], interpret(j.graph, args + ts)[1], rtol=1e-12)


def test_while_loop_reverse_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="while_loop") as e:
        grad_graph(while_graph(), [True, True], [1.0])
    assert "fori_loop" in str(e.value) and "scan" in str(e.value)
    assert str(e.value) == WHILE_REVERSE_ERROR


def test_while_loop_without_tangents_in_the_carry_is_fine_in_reverse_mode():
    """Differentiating only what the loop does not touch: the loop stays on the known side."""
    g0 = while_graph()
    b = GraphBuilder("f")
    w, x, z = b.add_input(T(3)), b.add_input(T(3)), b.add_input(T(3))
    (loop,) = [n for n in g0.nodes if n.prim.name == "while_loop"]
    t = b.while_loop(w, b.const(0.0, (), F), x, **loop.attrs)
    out = b.add(b.reduce_sum(b.tuple_get(t, index=1), axes=(0,)), b.reduce_sum(b.sin(z), axes=(0,)))
    g = b.build([out])
    gg = grad_graph(g, [False, False, True], [1.0], simplified=True)
    args = rng_args((3,), (3,), (3,))
    np.testing.assert_allclose(interpret(gg, args)[1], np.cos(args[2]), rtol=1e-12)


# --- against jax ---------------------------------------------------------------------------------
@pytest.fixture
def jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_grad_matches_jax(jax, reverse):
    jnp, lax = jax.numpy, jax.lax

    def f(w, c0, xs):
        def body(c, x):
            nc = jnp.sin(w * c + x)
            return nc, nc * nc * w
        cf, ys = lax.scan(body, c0, xs, reverse=reverse)
        return jnp.sum(cf) + jnp.sum(ys)

    args = rng_args((3,), (3,), (6, 3))
    gg = grad_graph(scan_graph(6, reverse=reverse), [True] * 3, [1.0], simplified=True)
    ours = interpret(gg, args)[1:]
    theirs = jax.grad(f, argnums=(0, 1, 2))(*args)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-10, atol=1e-12)


def test_cond_grad_and_jvp_match_jax(jax):
    jnp, lax = jax.numpy, jax.lax

    def f(p, x, w):
        a, b = lax.cond(p > 0, lambda x, w: (jnp.sin(x) * w, jnp.exp(x)), lambda x, w: (x * x, jnp.cos(w)), x, w)
        return jnp.sum(a) + jnp.sum(b * x)

    g = cond_graph()
    for p in (1.0, -1.0):
        args = [np.array(p), *rng_args((3,), (3,))]
        ours = interpret(grad_graph(g, [False, True, True], [1.0], simplified=True), args)[1:]
        theirs = jax.grad(f, argnums=(1, 2))(*args)
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, np.asarray(b), rtol=1e-10)
        ts = rng_args((3,), (3,), seed=9)
        ours_t = interpret(jvp(g, [False, True, True]).graph, args + ts)[1]
        _, theirs_t = jax.jvp(lambda x, w: f(args[0], x, w), (args[1], args[2]), tuple(ts))
        np.testing.assert_allclose(ours_t, np.asarray(theirs_t), rtol=1e-10)
