"""Deferred composite blocks (`tensorplay._deferred`): a `memo_composite` hit records one tape step
and one `Deferred` entry; its nodes are built only when read.

Checked: the hit's graph is the op layer's (printed graph) and the learning call, the hits and the
op layer share one structural key; every reader builds the blocks first (`builder.nodes`, a
concrete value of a block's result inside grad, an enclosing composite learning around nested
hits, the lazy graph on a pipeline-cache miss, vmap, tp.compile); and every cache-key component
of a block separates two traces that differ only in it (the composite's options, operand order,
a repeated operand, dtype, a different captured tensor of the same type). Values against float64
numpy oracles or finite differences; compile counts must not grow after the first calls.
"""
import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay import _deferred, _trace, _traced_memo as TM, codegen
from tensorplay.func import grad, vmap
from tests.finite_diff import fd_grad

RNG = np.random.default_rng(12)
N, C = 5, 4
LOGITS = RNG.standard_normal((N, C)).astype(np.float32)
TARGET = np.array([0, 3, 1, 2, 3])
V = RNG.standard_normal(6).astype(np.float32)
W = RNG.standard_normal(6).astype(np.float32)


def _ce(x, t):
    """float64 mean cross entropy (numpy)."""
    x = x.astype(np.float64)
    m = x.max(1, keepdims=True)
    lse = np.log(np.exp(x - m).sum(1)) + m[:, 0]
    return float(np.mean(lse - x[np.arange(len(t)), t]))


def _fd(f, x):
    return fd_grad(f, x.astype(np.float64))


# a composite of our own: scale * a - b, then exp (3-4 nodes, an op constant for the scale)
_AXPY = TM.memo_composite(lambda a, b, scale: tp.exp(a * scale - b))


def axpy(a, b, scale=2.0):
    return _AXPY(("axpy", scale), (a, b), a, b, scale)


def _deferred_entries(trace) -> int:
    return sum(n.__class__ is _deferred.Deferred for n in trace._nodes)


def test_a_hit_is_one_deferred_entry_and_its_graph_is_the_op_layers():
    x, t = tp.from_numpy(LOGITS), tp.from_numpy(TARGET)
    seen = []

    def f(a, b):
        out = tp.relu(F.cross_entropy(a, b) + a.sum())
        seen.append(_deferred_entries(_trace.current_trace()))
        return out

    TM.clear()
    learn = _trace.trace_function(f, (x, t), transform="grad")
    hits = [_trace.trace_function(f, (x, t), transform="grad") for _ in range(2)]
    assert seen[0] == 0 and seen[1] == seen[2] > 0   # the first call learns, the others defer
    op_layer = _trace.trace_function(lambda a, b: F._cross_entropy(a, b, None, None, -100, None, "mean", 0.0),
                                     (x, t), transform="grad")  # (the composite's own function: no memo)
    assert learn.structural_key() == hits[0].structural_key() == hits[1].structural_key()
    assert str(learn.graph) == str(hits[0].graph) == str(hits[1].graph)
    # the cross entropy's own nodes, as the op layer emits them, lead the hit's graph
    lines = str(op_layer.graph).splitlines()[1:-2]
    assert str(hits[0].graph).splitlines()[1:len(lines) + 1] == lines
    assert all(n.out.node is n and n.__class__ is not _deferred.Deferred for n in hits[0].graph.nodes)


def test_reading_builder_nodes_builds_the_blocks_with_their_ids():
    x, y = tp.from_numpy(V), tp.from_numpy(W)
    got = {}

    def f(a, b):
        out = axpy(a, b)
        tr = _trace.current_trace()
        got["deferred"] = _deferred_entries(tr)
        got["ids"] = [n.out.id for n in tr.builder.nodes]  # the reader: blocks built first
        got["after"] = _deferred_entries(tr)
        got["node"] = out._value.node  # (read here: a finished trace's values are unlinked)
        got["linked"] = got["node"].out is out._value
        return out.sum()

    TM.clear()
    for _ in range(3):
        _trace.trace_function(f, (x, y), transform="grad")
    assert got["deferred"] == 1 and got["after"] == 0
    assert got["ids"] == sorted(got["ids"]) and len(set(got["ids"])) == len(got["ids"])
    assert got["linked"] and got["node"].prim.name == "exp"


@pytest.mark.parametrize("branch", [1.0, -1.0])
def test_a_concrete_value_of_a_deferred_result_inside_grad(branch):
    x = tp.from_numpy(LOGITS * branch)
    t = tp.from_numpy(TARGET)
    values = []

    def f(a):
        loss = F.cross_entropy(a, t)
        v = loss.item()  # the block's result read while tracing: its nodes are built and evaluated
        values.append(v)
        return loss * 3.0 if v > 1.0 else loss * loss

    TM.clear()
    want_v = _ce(LOGITS * branch, TARGET)
    want_g = _fd(lambda z: 3 * _ce(z, TARGET) if want_v > 1.0 else _ce(z, TARGET) ** 2, LOGITS * branch)
    for _ in range(3):
        g = grad(f)(x)
        np.testing.assert_allclose(g.numpy(), want_g, rtol=2e-4, atol=1e-6)
    np.testing.assert_allclose(values, [want_v] * 3, rtol=1e-5)


def test_debug_unwrap_and_bool_of_a_deferred_relu_inside_grad():
    x = tp.from_numpy(V)
    shown = []

    def f(a):
        r = tp.relu(a + a)  # two composites (add, relu): deferred after the first call
        shown.append(tp.func.debug_unwrap(r).numpy().copy())
        return r.sum() if bool((r > 0).any()) else a.sum()

    TM.clear()
    for _ in range(3):
        g = grad(f)(x)
        np.testing.assert_allclose(g.numpy(), 2.0 * (V > 0), rtol=1e-6)
    for s in shown:
        np.testing.assert_allclose(s, np.maximum(2 * V, 0), rtol=1e-6)


def test_nested_composites_learn_around_deferred_hits():
    outer = TM.memo_composite(lambda a, b: tp.relu(axpy(a, b) + b))  # hits of axpy, add, relu inside
    x, y = tp.from_numpy(V), tp.from_numpy(W)

    def f(a, b):
        return outer(("outer",), (a, b), a, b).sum()

    TM.clear()
    _trace.trace_function(lambda a, b: axpy(a, b).sum() + tp.relu(a + b).sum(), (x, y), transform="grad")  # inner memos warm
    keys, graphs = [], []
    for _ in range(3):
        closed = _trace.trace_function(f, (x, y), transform="grad")
        keys.append(closed.structural_key())
        graphs.append(str(closed.graph))
    assert keys[0] == keys[1] == keys[2] and graphs[0] == graphs[1] == graphs[2]
    want = lambda a, b: np.maximum(np.exp(2 * a - b) + b, 0).sum()  # noqa: E731
    for _ in range(3):
        ga, gb = grad(f, argnums=(0, 1))(x, y)
        np.testing.assert_allclose(ga.numpy(), _fd(lambda a: want(a, W.astype(np.float64)), V), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(gb.numpy(), _fd(lambda b: want(V.astype(np.float64), b), W), rtol=1e-4, atol=1e-6)


def test_the_graph_on_a_pipeline_miss_is_built_from_the_blocks_and_compiles_once():
    x, t = tp.from_numpy(LOGITS), tp.from_numpy(TARGET)
    TM.clear()
    _trace.trace_function(lambda a, b: F.cross_entropy(tp.relu(a + a), b), (x, t), transform="grad")  # memos warm
    g = grad(lambda a, b: F.cross_entropy(tp.relu(a + a), b))  # its first trace is all hits: a miss on blocks
    want = _fd(lambda z: _ce(np.maximum(2 * z, 0), TARGET), LOGITS)
    np.testing.assert_allclose(g(x, t).numpy(), want, rtol=2e-4, atol=1e-6)
    c0 = codegen.compile_count()
    for _ in range(5):
        np.testing.assert_allclose(g(x, t).numpy(), want, rtol=2e-4, atol=1e-6)
    assert codegen.compile_count() == c0


def test_the_learning_call_and_the_hits_share_one_entry():
    x, t = tp.from_numpy(LOGITS), tp.from_numpy(TARGET)
    TM.clear()
    g = grad(lambda a, b: F.cross_entropy(tp.relu(a @ a.T + 1.0) @ a, b))
    first = g(x, t).numpy()
    c0 = codegen.compile_count()
    for _ in range(4):
        np.testing.assert_array_equal(g(x, t).numpy(), first)
    assert codegen.compile_count() == c0


def test_under_vmap_an_ensemble_matches_loop_and_stack():
    ws = tp.from_numpy(RNG.standard_normal((3, C, C)).astype(np.float32))
    bs = tp.from_numpy(RNG.standard_normal((3, C)).astype(np.float32))
    x, t = tp.from_numpy(LOGITS), tp.from_numpy(TARGET)

    def loss(w, b):
        return F.cross_entropy(tp.relu(x @ w + b) @ w, t)

    TM.clear()
    want = [grad(loss, argnums=(0, 1))(ws[i], bs[i]) for i in range(3)]
    for _ in range(3):
        gw, gb = vmap(grad(loss, argnums=(0, 1)))(ws, bs)
        np.testing.assert_allclose(gw.numpy(), np.stack([w.numpy() for w, _ in want]), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gb.numpy(), np.stack([b.numpy() for _, b in want]), rtol=1e-5, atol=1e-6)
    w0 = ws[0].numpy().astype(np.float64)
    b0 = bs[0].numpy().astype(np.float64)
    fd = _fd(lambda b: _ce(np.maximum(LOGITS @ w0 + b, 0) @ w0, TARGET), b0)
    np.testing.assert_allclose(gb.numpy()[0], fd, rtol=2e-4, atol=1e-6)


def test_under_tp_compile():
    x, t = tp.from_numpy(LOGITS), tp.from_numpy(TARGET)
    f = lambda a, b: F.cross_entropy(tp.relu(a + a), b) + axpy(a, a).sum()  # noqa: E731
    TM.clear()
    _trace.trace_function(f, (x, t), transform="grad")  # memos warm: the compiled trace is all hits
    cf = tp.compile(f)
    want = _ce(np.maximum(2 * LOGITS, 0), TARGET) + np.exp(LOGITS.astype(np.float64)).sum()
    for _ in range(3):
        np.testing.assert_allclose(cf(x, t).item(), want, rtol=1e-5)
    np.testing.assert_allclose(f(x, t).item(), want, rtol=1e-5)


# --- every key component separates two traces that differ only in it ----------------------------
def _keys(fns, args):
    TM.clear()
    first = [_trace.trace_function(f, args, transform="grad").structural_key() for f in fns]
    again = [_trace.trace_function(f, args, transform="grad").structural_key() for f in fns]
    return first, again


def test_block_options_operand_order_and_repeats_are_in_the_key():
    x, y = tp.from_numpy(V), tp.from_numpy(W)
    fns = [lambda a, b: axpy(a, b).sum(), lambda a, b: axpy(a, b, 3.0).sum(), lambda a, b: axpy(b, a).sum(),
           lambda a, b: axpy(a, a).sum(), lambda a, b: axpy(b, b).sum()]
    first, again = _keys(fns, (x, y))
    assert first == again and len(set(again)) == len(fns)
    wants = [lambda a, b: np.exp(2 * a - b), lambda a, b: np.exp(3 * a - b), lambda a, b: np.exp(2 * b - a),
             lambda a, b: np.exp(a), lambda a, b: np.exp(b)]
    for _ in range(2):  # alternating: a shared entry would give another's value
        for f, want in zip(fns, wants):
            g = grad(f, argnums=(0, 1))(x, y)
            a64, b64 = V.astype(np.float64), W.astype(np.float64)
            np.testing.assert_allclose(g[0].numpy(), _fd(lambda a: want(a, b64).sum(), V), rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(g[1].numpy(), _fd(lambda b: want(a64, b).sum(), W), rtol=1e-4, atol=1e-6)


def test_cross_entropy_options_are_in_the_key():
    x, t = tp.from_numpy(LOGITS), tp.from_numpy(TARGET)
    fns = [lambda a, b: F.cross_entropy(a, b), lambda a, b: F.cross_entropy(a, b, reduction="sum"),
           lambda a, b: F.cross_entropy(a, b, label_smoothing=0.25)]
    first, again = _keys(fns, (x, t))
    assert first == again and len(set(again)) == 3
    g_mean = _fd(lambda z: _ce(z, TARGET), LOGITS)
    for _ in range(2):
        np.testing.assert_allclose(grad(fns[0])(x, t).numpy(), g_mean, rtol=2e-4, atol=1e-6)
        np.testing.assert_allclose(grad(fns[1])(x, t).numpy(), N * g_mean, rtol=2e-4, atol=1e-6)


def test_dtype_is_in_the_key():
    f = lambda a, b: axpy(a, b).sum()  # noqa: E731
    TM.clear()
    k32 = [_trace.trace_function(f, (tp.from_numpy(V), tp.from_numpy(W)), transform="grad").structural_key()
           for _ in range(2)]
    k64 = [_trace.trace_function(f, (tp.from_numpy(V.astype(np.float64)), tp.from_numpy(W.astype(np.float64))),
                                 transform="grad").structural_key() for _ in range(2)]
    assert k32[0] == k32[1] and k64[0] == k64[1] and k32[0] != k64[0]
    for arr in (V, V.astype(np.float64)):
        g = grad(f)(tp.from_numpy(arr), tp.from_numpy(W.astype(arr.dtype)))
        assert g.dtype == tp.from_numpy(arr).dtype
        np.testing.assert_allclose(g.numpy(), 2 * np.exp(2 * V.astype(np.float64) - W), rtol=1e-5)


def test_a_different_captured_tensor_of_the_same_type_is_seen():
    w1, w2 = tp.from_numpy(W.copy()), tp.from_numpy(-2 * W)
    current = {"w": w1}
    g = grad(lambda a: axpy(a, current["w"]).sum())  # the capture is an operand of the block
    x = tp.from_numpy(V)
    TM.clear()
    for _ in range(2):
        for w in (w1, w2):
            current["w"] = w
            np.testing.assert_allclose(g(x).numpy(), 2 * np.exp(2 * V.astype(np.float64) - w.numpy()), rtol=1e-5)
    w1.mul_(0.5)  # in place: seen on the next call
    current["w"] = w1
    np.testing.assert_allclose(g(x).numpy(), 2 * np.exp(2 * V.astype(np.float64) - 0.5 * W), rtol=1e-5)


# --- cross_entropy's class-range verdict, memoised by the targets' bytes -------------------------
@pytest.mark.parametrize("write", ["tensor", "numpy alias"])
def test_a_target_changed_in_place_is_checked_again(write):
    x = tp.from_numpy(LOGITS)
    arr = TARGET.copy()
    t = tp.from_numpy(arr)
    g = grad(lambda a, b: F.cross_entropy(a, b))
    want = _fd(lambda z: _ce(z, TARGET), LOGITS)
    for _ in range(2):
        np.testing.assert_allclose(g(x, t).numpy(), want, rtol=2e-4, atol=1e-6)
    if write == "tensor":
        t[2] = C  # out of range, written through the tensor
    else:
        arr[2] = C  # ... through the numpy array the tensor shares
    for _ in range(2):
        with pytest.raises(IndexError, match="out of (bounds|range)"):
            g(x, t)
    arr2 = TARGET.copy()
    arr2[1] = -100  # the default ignore_index: a valid mask now, not the clean graph
    t2 = tp.from_numpy(arr2)
    keep = np.arange(N) != 1
    want2 = _fd(lambda z: _ce(z[keep], TARGET[keep]) * keep.sum() / keep.sum(), LOGITS)
    np.testing.assert_allclose(g(x, t2).numpy(), want2, rtol=2e-4, atol=1e-6)
    t[2] = 1  # back in range: the clean verdict again
    want3 = _fd(lambda z: _ce(z, np.where(np.arange(N) == 2, 1, TARGET)), LOGITS)
    np.testing.assert_allclose(g(x, t).numpy(), want3, rtol=2e-4, atol=1e-6)


# --- the op memo's negative entry: types that trace to several nodes run the op layer ------------
def test_an_op_of_several_nodes_is_remembered_as_such_and_stays_correct():
    b = tp.from_numpy(W[:C].copy())
    TM.clear()
    _trace.clear_memos()
    g = grad(lambda a, c: ((a + c) * (a + a)).sum(), argnums=(0, 1))  # a + c broadcasts: not one node
    for k in range(3):
        xs = LOGITS * (k + 1)
        ga, gc = g(tp.from_numpy(xs), b)
        np.testing.assert_allclose(ga.numpy(), 4 * xs + 2 * W[:C], rtol=1e-5)
        np.testing.assert_allclose(gc.numpy(), (2 * xs).sum(0), rtol=1e-5)
    entries = [e for m in _trace._OP_MEMOS for e in m.values()]
    # the broadcasting add: the program of the composite block `ops.elementwise.add` appended (optrace)
    assert any(e[4] == _trace._PROGRAM for e in entries if e is not _trace._SKIP)
    assert any(e is not _trace._SKIP and not e[4] and e[0].name == "add" for e in entries)  # a + a: one node
