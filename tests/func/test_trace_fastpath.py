"""The traced op fast path (`_trace._append_known`), the plain-output finish and the tape key.

A plain call re-traces the user's function and looks its key up in the pipeline cache, so a key
that let two different graphs share an executable would give a wrong result, not an error. Every
test alternates programs that differ in one thing (an op's attributes, dtypes, shapes, constants,
captures, the order of ops, views and in-place writes, random draws) and checks each result
against numpy, on repeated calls, so a wrong cache hit fails."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import _trace
from tensorplay.func import grad, jacrev, vmap
from tensorplay.ir import get_primitive

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((4, 3)).astype(np.float32)
V = RNG.standard_normal(4).astype(np.float32)


def _alternate(cases, rounds: int = 3):
    """Call every (fn, want) pair in turn, `rounds` times: each result must equal its own oracle."""
    for _ in range(rounds):
        for name, fn, want in cases:
            got = fn()
            np.testing.assert_allclose(np.asarray(got.numpy(), np.float64), want, rtol=1e-5, atol=1e-6,
                                       err_msg=name)


def test_same_ops_different_attributes():
    x = tp.from_numpy(A)
    cases = [
        ("sum dim 0", lambda: grad(lambda x: (x.sum(0) ** 2).sum())(x),
         np.broadcast_to(2 * A.sum(0), A.shape)),
        ("sum dim 1", lambda: grad(lambda x: (x.sum(1) ** 2).sum())(x),
         np.broadcast_to(2 * A.sum(1)[:, None], A.shape)),
        ("sum dims [0, 1] (a list)", lambda: grad(lambda x: (x.sum(dim=[0, 1]) ** 2))(x),
         np.full(A.shape, 2 * A.sum())),
        ("x @ x.T", lambda: grad(lambda x: (x @ x.T).sum())(x), 2 * np.ones((3, 3)) @ A),
        ("x.T @ x", lambda: grad(lambda x: (x.T @ x).sum())(x), 2 * A @ np.ones((4, 4))),
    ]
    _alternate(cases)


def test_same_ops_different_dtypes_and_shapes():
    def f(x):
        return (tp.tanh(x) * x).sum()

    def df(a):
        t = np.tanh(a.astype(np.float64))
        return t + a * (1 - t * t)

    cases = []
    for a in (V, V.astype(np.float64), A, A[:1], np.zeros((0,), np.float32), np.float32(0.5) * np.ones(())):
        x = tp.from_numpy(np.ascontiguousarray(a))
        cases.append((f"{a.dtype}{list(a.shape)}", lambda x=x: grad(f)(x), df(a)))
    _alternate(cases)
    dt = {np.dtype(c.numpy().dtype) for _, c, _ in [(0, fn(), 0) for _, fn, _ in cases]}
    assert dt == {np.dtype(np.float32), np.dtype(np.float64)}


def test_different_constants_and_captures():
    x = tp.from_numpy(V)
    w1, w2 = tp.from_numpy(B[:, 0].copy()), tp.from_numpy(B[:, 1].copy())
    cases = []
    for c in (2.0, 3.0, -0.0, 0.0):
        cases.append((f"x * {c}", lambda c=c: grad(lambda x: (x * c * x).sum())(x), 2 * c * V))
    for name, w, wn in (("w1", w1, B[:, 0]), ("w2", w2, B[:, 1])):
        cases.append((f"capture {name}", lambda w=w: grad(lambda x: (x * w * x).sum())(x), 2 * wn * V))
    _alternate(cases)


def test_same_ops_in_a_different_order_or_wiring():
    x, y = tp.from_numpy(V), tp.from_numpy(B[:, 2].copy())
    yn = B[:, 2]
    cases = [
        ("(x + y) * y", lambda: grad(lambda x, y: ((x + y) * y).sum())(x, y), yn),
        ("(x * y) + y", lambda: grad(lambda x, y: ((x * y) + y).sum())(x, y), yn),
        ("(x + y) * x", lambda: grad(lambda x, y: ((x + y) * x).sum())(x, y), 2 * V + yn),
        ("(x + x) * y", lambda: grad(lambda x, y: ((x + x) * y).sum())(x, y), 2 * yn),
        ("(y + x) * x, argnums=1", lambda: grad(lambda x, y: ((y + x) * x).sum(), argnums=1)(x, y), V),
    ]
    _alternate(cases)


def test_views_and_in_place_writes_next_to_plain_programs():
    def plain(x):
        return (x * x).sum()

    def through_a_view(x):
        return (x[1:] * x[1:]).sum()

    def written(x):
        y = x * 1.0
        y[0:2].mul_(3.0)
        return (y * y).sum()

    def identity_out(x):
        return x

    cases = [
        ("plain", lambda: grad(plain)(tp.from_numpy(V)), 2 * V),
        ("view", lambda: grad(through_a_view)(tp.from_numpy(V)), np.r_[0.0, 2 * V[1:]]),
        ("in-place", lambda: grad(written)(tp.from_numpy(V)), 2 * V * np.r_[9.0, 9.0, 1.0, 1.0]),
        ("identity jacobian", lambda: jacrev(identity_out)(tp.from_numpy(V)), np.eye(4)),
        ("view jacobian", lambda: jacrev(lambda x: x[1:])(tp.from_numpy(V)), np.eye(4)[1:]),
    ]
    _alternate(cases)


def test_an_argument_written_in_place_reaches_the_caller_every_call():
    def f(x):
        x.mul_(2.0)
        return (x * x).sum()

    for k in range(3):
        x = tp.from_numpy(V.copy())
        g = grad(f)(x)
        np.testing.assert_allclose(x.numpy(), 2 * V, rtol=1e-6, err_msg=f"call {k}")
        np.testing.assert_allclose(g.numpy(), 8 * V, rtol=1e-5, err_msg=f"call {k}")


def test_random_draws_stay_fresh():
    x = tp.from_numpy(V)
    f = lambda x: (x * tp.rand(4)).sum()  # noqa: E731
    g = [grad(f)(x).numpy() for _ in range(4)]
    assert len({a.tobytes() for a in g}) == 4
    for a in g:
        assert ((a >= 0) & (a < 1)).all()


def test_no_grad_inside_a_plain_transform_stops_the_gradient():
    def f(x):
        with tp.no_grad():
            y = x * x  # a constant for differentiation
        return (y * x).sum()

    for _ in range(3):
        np.testing.assert_allclose(grad(f)(tp.from_numpy(V)).numpy(), V * V, rtol=1e-6)
        np.testing.assert_allclose(grad(lambda x: (x * x * x).sum())(tp.from_numpy(V)).numpy(), 3 * V * V,
                                   rtol=1e-5)


def test_vmap_of_the_fast_path_matches_numpy():
    xb = tp.from_numpy(A)
    for _ in range(2):
        got = vmap(grad(lambda x: (tp.tanh(x) * x).sum()))(xb).numpy()
        t = np.tanh(A.astype(np.float64))
        np.testing.assert_allclose(got, t + A * (1 - t * t), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attr", [[0], (0,), tp.Size([0])], ids=["list", "tuple", "Size"])
def test_unfrozen_attributes_are_frozen_on_every_path(attr):
    """A list or a tuple subclass given as an attribute must reach the node as a plain tuple, on
    the first call (memo miss) and on later ones (memo hit)."""
    prim = get_primitive("reduce_sum")
    for _ in range(3):
        closed = _trace.trace_function(lambda x: _trace.bind_prim(prim, (x * 2,), {"axes": attr}),
                                       (tp.from_numpy(A),))
        node = closed.graph.nodes[-1]
        assert node.prim is prim and node.attrs["axes"].__class__ is tuple and node.attrs["axes"] == (0,)
        np.testing.assert_allclose(_trace.call_graph(closed.graph, [tp.from_numpy(A)])[0].numpy(),
                                   2 * A.sum(0), rtol=1e-6)


def test_bad_shapes_raise_on_every_call():
    x, y = tp.from_numpy(V), tp.from_numpy(A)
    for _ in range(3):
        with pytest.raises(ValueError, match="matmul"):
            grad(lambda x, y: (x @ y).sum())(x, y)
        with pytest.raises((ValueError, TypeError), match="add|broadcast"):
            grad(lambda x, y: (x + y).sum())(tp.from_numpy(V[:3].copy()), y)
        np.testing.assert_allclose(grad(lambda x: (y @ x).sum())(x).numpy(), A.sum(0), rtol=1e-5)


def test_structural_key_is_equal_for_equal_programs_and_differs_otherwise():
    x = tp.from_numpy(V)
    k = lambda fn, *a: _trace.trace_function(fn, a).structural_key()  # noqa: E731
    assert k(lambda a: tp.tanh(a * a), x) == k(lambda b: tp.tanh(b * b), tp.from_numpy(V + 1))
    keys = {k(lambda a: tp.tanh(a * a), x), k(lambda a: tp.tanh(a + a), x), k(lambda a: tp.sin(a * a), x),
            k(lambda a: tp.tanh(a * a), tp.from_numpy(A)), k(lambda a: tp.tanh(a * a), x.double()),
            k(lambda a, b: a * b, x, x), k(lambda a, b: b * a, x, x), k(lambda a, b: a * a, x, x),
            k(lambda a: a.sum(0), tp.from_numpy(A)), k(lambda a: a.sum(1), tp.from_numpy(A))}
    assert len(keys) == 10


def test_memoised_operators_alternate_with_their_other_forms():
    """`x + y`, `w @ x`, `tanh(x)` replay their one node from the op memo; broadcasting, promotion,
    int inputs (a conversion first), numpy and scalar operands trace several nodes or take the op
    layer: alternating them must give each its own result."""
    x, w = tp.from_numpy(V), tp.from_numpy(B.T.copy())  # w: (3, 4)
    xi = tp.tensor([1, 2, 3, 4])
    cases = [
        ("x + x", lambda: jacrev(lambda x: x + x)(x), 2 * np.eye(4)),
        ("x + row", lambda: jacrev(lambda x: (x + w).sum(0))(x), 3 * np.eye(4)),
        ("w @ x", lambda: jacrev(lambda x: w @ x)(x), B.T),
        ("x @ w.T", lambda: jacrev(lambda x: x @ w.T)(x), B.T),
        ("tanh(x)", lambda: jacrev(tp.tanh)(x), np.diag(1 - np.tanh(V.astype(np.float64)) ** 2)),
        ("tanh(input=x)", lambda: jacrev(lambda x: tp.tanh(input=x))(x),
         np.diag(1 - np.tanh(V.astype(np.float64)) ** 2)),
        ("x.__add__(other=x)", lambda: jacrev(lambda x: x.__add__(other=x))(x), 2 * np.eye(4)),
        ("x.tanh() * x", lambda: grad(lambda x: (x.tanh() * x).sum())(x),
         np.tanh(V) + V * (1 - np.tanh(V) ** 2)),
        ("x - x * x", lambda: grad(lambda x: (x - x * x).sum())(x), 1 - 2 * V),
        ("x / (x + 2)", lambda: grad(lambda x: (x / (x + 2.0)).sum())(x), 2 / (V + 2) ** 2),
        ("x * numpy", lambda: grad(lambda x: (x * np.float32(3.0)).sum())(x), np.full(4, 3.0)),
        ("tanh of an int tensor, times x", lambda: grad(lambda x: (tp.tanh(xi) * x).sum())(x),
         np.tanh(np.arange(1, 5, dtype=np.float64))),
    ]
    _alternate(cases)


def test_memoised_operators_under_no_grad_and_on_views():
    x = tp.from_numpy(V)

    def f(x):
        with tp.no_grad():
            c = x * x
        return (c * x + x[1:].tanh().sum()).sum()

    t = np.tanh(V[1:].astype(np.float64))
    want = V * V + np.r_[0.0, 4 * (1 - t * t)]
    for _ in range(3):
        np.testing.assert_allclose(grad(f)(x).numpy(), want, rtol=1e-5, atol=1e-6)


def test_memoised_operators_raise_on_every_call():
    a, b = tp.from_numpy(A), tp.from_numpy(A)
    for _ in range(3):
        with pytest.raises(ValueError, match="matmul"):
            grad(lambda a: (a @ b).sum())(a)
        with pytest.raises(TypeError):
            grad(lambda a: (a @ a.double()).sum())(a)


def test_the_op_memo_is_used_and_reset_clears_it(monkeypatch):
    import tensorplay.ops.elementwise as ew

    x = tp.from_numpy(V)
    grad(lambda x: tp.tanh(x * x).sum())(x)
    assert any(_trace._OP_MEMOS), "a traced tanh / mul left no memo entry"

    def op_layer(*args, **kwargs):
        raise AssertionError("the op layer ran on a memo hit")

    monkeypatch.setattr(ew, "ebind", op_layer)  # what tanh's op layer calls
    closed = _trace.trace_function(lambda x: tp.tanh(x), (x,), transform="grad")
    assert [n.prim.name for n in closed.graph.nodes] == ["tanh"]
    tp.compiler.reset()
    assert not any(_trace._OP_MEMOS)
    with pytest.raises(AssertionError, match="op layer"):  # after the reset the op layer runs again
        _trace.trace_function(lambda x: tp.tanh(x), (x,), transform="grad")
    monkeypatch.undo()
    np.testing.assert_allclose(grad(lambda x: tp.tanh(x).sum())(x).numpy(), 1 - np.tanh(V) ** 2, rtol=1e-5)


def test_memoised_scalar_operators_alternate_with_promotions_and_compile():
    """`x * 2.0` replays its node with the scalar as the trace's input; an int tensor times a float
    (promotion), a half tensor times a float (taken in float32, as torch), signed zeros, int
    scalars and `tp.compile` (a `full` node) take the op layer: each keeps its own value."""
    x = tp.from_numpy(V)
    xi = tp.tensor([1, 2, 3, 4])
    xh = tp.from_numpy(V).half()
    f = lambda x, s: (x * s + s - x / s).sum()  # noqa: E731
    cases = []
    for s in (2.0, 3, -0.5, 0.25):
        cases.append((f"x * {s!r}", lambda s=s: grad(f)(x, s), np.full(4, s - 1 / s)))
        cases.append((f"compile x * {s!r}", lambda s=s: tp.compile(grad(f))(x, s), np.full(4, s - 1 / s)))
    cases.append(("int tensor * 2.5", lambda: grad(lambda x: (x * (xi * 2.5)).sum())(x), 2.5 * np.arange(1, 5)))
    cases.append(("int tensor * 2", lambda: grad(lambda x: (x * (xi * 2)).sum())(x), 2.0 * np.arange(1, 5)))
    h = (np.float16(V) * np.float32(0.1)).astype(np.float16)  # float32(0.1) * half, rounded once
    cases.append(("half * 0.1", lambda: grad(lambda x: (x * (xh * 0.1).float()).sum())(x), h.astype(np.float64)))
    _alternate(cases)
    for v in (0.0, -0.0, 0.0):
        got = jacrev(lambda x: x * v)(x).numpy()
        assert np.signbit(got[0, 0]) == np.signbit(v) and not got[0, 1]


def test_arguments_of_every_layout_alternate():
    """Arguments of one shape and dtype in different layouts (C-contiguous, transposed, a strided
    slice, a broadcast view with zero strides) and 0-d / size-1 / empty arguments: the argument
    memo only takes exact C strides, everything else the general path."""
    base = RNG.standard_normal((4, 4)).astype(np.float32)
    w = RNG.standard_normal(16).astype(np.float32)
    wt = tp.from_numpy(w)
    layouts = {
        "contiguous": base.copy(),
        "transposed": base.T,
        "strided": np.ascontiguousarray(np.repeat(base, 2, axis=1))[:, ::2],
        "broadcast": np.broadcast_to(base[0], (4, 4)),
    }

    def f(x):
        return (x.reshape(-1) * wt).sum() + (x * x).sum()

    cases = []
    for name, arr in layouts.items():
        t = tp.from_numpy(arr) if arr.flags.writeable else tp.from_numpy(arr.copy())[:, :]
        if name == "broadcast":
            t = tp.from_numpy(base[0].copy()).expand(4, 4)
        dense = np.ascontiguousarray(t.numpy()).astype(np.float64)
        cases.append((name, lambda t=t: grad(f)(t), w.reshape(4, 4) + 2 * dense))
    for shape in ((), (1,), (0,), (1, 1)):
        a = np.full(shape, 1.5, np.float32)
        cases.append((f"shape {shape}", lambda a=a: grad(lambda x: (x * x).sum())(tp.from_numpy(a)), 2 * a))
    _alternate(cases)


def test_a_finished_trace_is_freed_by_reference_counting():
    """The ClosedGraph of a trace holds its graph unlinked (no node <-> value cycles) and the trace
    drops its own tensors: once the ClosedGraph is gone, everything is freed without the cyclic
    collector. Reading `graph` links it again, and it is the graph traced."""
    import gc
    import weakref

    from tensorplay.ir.core import Node

    x = tp.from_numpy(V)
    traces = []

    def f(x):
        traces.append(weakref.ref(_trace.current_trace()))
        return tp.tanh(x * 2.0) + x

    def nodes_alive() -> int:
        return sum(1 for o in gc.get_objects() if o.__class__ is Node)

    gc.collect()
    gc.disable()
    try:
        closed = _trace.trace_function(f, (x,), transform="grad")
        key = closed.structural_key()
        n = len(closed.__dict__["_unlinked"])
        before = nodes_alive()
        del closed
        assert traces[0]() is None, "the trace was not freed by reference counting"
        assert nodes_alive() <= before - n, "the trace's nodes were not freed by reference counting"
    finally:
        gc.enable()
    closed = _trace.trace_function(f, (x,), transform="grad")
    assert closed.structural_key() == key
    g = closed.graph
    assert all(n.out.node is n for n in g.nodes) and [n.prim.name for n in g.nodes][-2:] == ["tanh", "add"]
    assert closed.structural_key() == key
    np.testing.assert_allclose(_trace.call_graph(g, [x] + closed.capture_tensors())[0].numpy(),
                               np.tanh(V * 2) + V, rtol=1e-6)


def _maybe_take_ids_in_between(monkeypatch, yes: bool) -> None:
    """Make every Trace take one more value id after its base (as another thread might), both a
    fresh one and one a replay becomes when it leaves its template (both begin with `_begin`)."""
    if yes:
        begin = _trace.Trace._begin

        def begin_then_take_an_id(self, *args, **kwargs):
            begin(self, *args, **kwargs)
            next(_trace._value_ids)

        monkeypatch.setattr(_trace.Trace, "_begin", begin_then_take_an_id)


@pytest.mark.parametrize("ids_taken_in_between", [False, True])
def test_argument_values_on_demand_on_the_signature_path(monkeypatch, ids_taken_in_between):
    # The pipeline cache's call path numbers the arguments base+1..n and finds their caller tensors
    # by position; when another thread took ids in between, it records them one by one instead.
    _maybe_take_ids_in_between(monkeypatch, ids_taken_in_between)
    seen = []

    def f(x, ws):
        seen.append((x.sum().item(), [w.tolist() for w in ws], x._trace.arg_sources is not None))
        return (x * ws[0] * ws[1]).sum()

    x, ws = tp.tensor([1.0, 2.0]), [tp.tensor([3.0, 4.0]), tp.tensor([5.0, 6.0])]
    for _ in range(3):  # the first call learns the signature, the next ones take its known types
        np.testing.assert_allclose(grad(f)(x, ws).numpy(), [15.0, 24.0])
    assert seen == [(3.0, [[3.0, 4.0], [5.0, 6.0]], not ids_taken_in_between)] * 3


@pytest.mark.parametrize("ids_taken_in_between", [False, True])
def test_mapped_and_unmapped_arguments_on_the_signature_path(monkeypatch, ids_taken_in_between):
    # vmap(grad(f)) traces f on per-sample types known from the signature: an unmapped argument
    # has its value, a mapped one has none (one per sample), on every call.
    _maybe_take_ids_in_between(monkeypatch, ids_taken_in_between)

    def f(x, w):
        scale = 2.0 if w.sum() > 0 else -1.0  # w is not mapped: Python may branch on it
        return (scale * x * w).sum()

    def g(x, w):
        return x.sum() if x.sum() > 0 else -x.sum()  # x is mapped: no single value

    xs = tp.from_numpy(RNG.standard_normal((4, 3)).astype(np.float32))
    for w, scale in ((tp.tensor([1.0, 2.0, 3.0]), 2.0), (tp.tensor([-1.0, -2.0, -3.0]), -1.0)) * 2:
        got = vmap(grad(f), in_dims=(0, None))(xs, w)
        np.testing.assert_allclose(got.numpy(), np.broadcast_to(scale * w.numpy(), (4, 3)), rtol=1e-6)
        with pytest.raises(tp.TracingError, match=r"vmap\(in_dims=\(0, None\)\).*per sample"):
            vmap(grad(g), in_dims=(0, None))(xs, w)


@pytest.mark.parametrize("make,batch", [(grad, False), (jacrev, False), (lambda f: vmap(grad(f)), True)])
def test_a_cache_hit_frees_its_trace_by_reference_counting(make, batch):
    """A plain call that hits the pipeline cache builds no ClosedGraph (`trace_keyed`): it breaks
    the trace's cycles itself, so nothing waits for the cyclic collector."""
    import gc
    import weakref

    from tensorplay.ir.core import Node

    traces = []

    def f(x):
        traces.append(weakref.ref(_trace.current_trace()))
        return (tp.tanh(x * 2.0) + x).sum()

    x = tp.from_numpy(np.stack([V, V]) if batch else V)
    fn = make(f)
    fn(x), fn(x)  # the first call fills the cache
    gc.collect()
    gc.disable()
    try:
        before = sum(1 for o in gc.get_objects() if o.__class__ is Node)
        for _ in range(5):
            fn(x)
        assert all(t() is None for t in traces[-5:]), "a hit's trace was not freed by reference counting"
        assert sum(1 for o in gc.get_objects() if o.__class__ is Node) <= before
    finally:
        gc.enable()
