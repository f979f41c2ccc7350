"""The replay of a plain transform's last trace (`tensorplay._replay`).

A replayed call records nothing: it checks each op against the template and takes the template's
cache entry when the function returned the template's outputs. A wrong check would give the
template's result for another program, not an error, so every test changes the program between
calls (an op, an operand, the output, a value asked for, an exception, grad mode) and checks each
result against an oracle of its own (numpy by hand, float64 central differences, loop-and-stack),
and that the replay was really taken or really left."""
import gc
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tensorplay as tp
from tensorplay import _replay
from tensorplay.func import _pipeline, debug_unwrap, grad, jacfwd, jacrev, vmap
from tests.finite_diff import fd_grad

RNG = np.random.default_rng(14)
D = 5
W1 = RNG.standard_normal((D, D)) / np.sqrt(D)
B1 = RNG.standard_normal(D)
W2 = RNG.standard_normal((D, D)) / np.sqrt(D)
X = RNG.standard_normal(D)


def _t(a, dtype=np.float64):
    return tp.from_numpy(np.array(a, dtype))


def _mlp(x, w1, b1, w2):
    return tp.tanh(x @ w1 + b1) @ w2


def _mlp_jacobian(x, w1, b1, w2):
    """d/dx of tanh(x W1 + b1) W2, by hand: W1 diag(1 - tanh^2) W2, transposed to (out, in)."""
    h = np.tanh(x @ w1 + b1)
    return ((w1 * (1 - h * h)) @ w2).T


def _fd_jacobian(f, x, eps=1e-6):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        cols.append((f(x + e) - f(x - e)) / (2 * eps))
    return np.stack(cols, -1)


def test_repeated_jacobians_replay_and_match_the_closed_form(replays):
    args = [_t(a) for a in (X, W1, B1, W2)]
    want = _mlp_jacobian(X, W1, B1, W2)
    for transform in (jacfwd, jacrev):
        for _ in range(5):
            np.testing.assert_allclose(transform(_mlp)(*args).numpy(), want, rtol=1e-10, atol=1e-12)
    assert replays["replayed"] >= 6 and replays["left"] == 0


def test_new_argument_values_are_read_on_a_replayed_call(replays):
    f = jacrev(_mlp)
    w = _t(W1)
    for k in range(5):
        x = X + k
        np.testing.assert_allclose(f(_t(x), w, _t(B1), _t(W2)).numpy(), _mlp_jacobian(x, W1, B1, W2), rtol=1e-10, atol=1e-12)
    w.mul_(0.5)  # an argument updated in place: its new value, not a stale one
    np.testing.assert_allclose(f(_t(X), w, _t(B1), _t(W2)).numpy(), _mlp_jacobian(X, W1 * 0.5, B1, W2), rtol=1e-10, atol=1e-12)
    assert replays["replayed"] >= 3


ACT = {"fn": tp.tanh}


def _with_global_activation(x, w1, b1, w2):
    return ACT["fn"](x @ w1 + b1) @ w2


def test_a_changed_global_leaves_the_replay_at_that_op(replays):
    args = [_t(a) for a in (X, W1, B1, W2)]
    f = jacfwd(_with_global_activation)
    try:
        for _ in range(3):
            ACT["fn"] = tp.tanh
            np.testing.assert_allclose(f(*args).numpy(), _mlp_jacobian(X, W1, B1, W2), rtol=1e-10, atol=1e-12)
        ACT["fn"] = tp.sigmoid
        s = 1 / (1 + np.exp(-(X @ W1 + B1)))
        np.testing.assert_allclose(f(*args).numpy(), ((W1 * (s * (1 - s))) @ W2).T, rtol=1e-10, atol=1e-12)
        assert replays["left"] >= 1
        ACT["fn"] = tp.tanh  # and back: the other path again
        np.testing.assert_allclose(f(*args).numpy(), _mlp_jacobian(X, W1, B1, W2), rtol=1e-10, atol=1e-12)
    finally:
        ACT["fn"] = tp.tanh


def test_a_different_operand_or_output_is_not_replayed(replays):
    flags = {"swap": False, "out": 0}

    def f(x, w):
        a = x @ w
        b = x @ w if not flags["swap"] else a @ w  # same op, another operand
        c = a * b
        return (a, b, c)[flags["out"]]

    x, w = _t(X), _t(W1)
    jac = {  # d/dx of each output, by hand
        (False, 0): W1.T, (False, 2): (2 * (X @ W1))[:, None] * W1.T,
        (True, 1): (W1 @ W1).T,
        (True, 2): ((X @ W1) @ W1)[:, None] * W1.T + (X @ W1)[:, None] * (W1 @ W1).T}
    for swap, out in [(False, 0), (False, 0), (False, 0), (False, 2), (False, 2), (True, 2), (True, 2),
                      (True, 1), (False, 0)]:
        flags.update(swap=swap, out=out)
        np.testing.assert_allclose(jacrev(f)(x, w).numpy(), jac[swap, out], rtol=1e-10, atol=1e-12)
    assert replays["left"] >= 3 and replays["replayed"] >= 1


def test_only_the_second_operand_differs(replays):
    flags = {"b": True}

    def f(x):
        a, b = tp.tanh(x), tp.sigmoid(x)
        return a * (b if flags["b"] else a)

    x = _t(X)
    t, s = np.tanh(X), 1 / (1 + np.exp(-X))
    dt, ds = 1 - t * t, s * (1 - s)
    for use_b in (True, True, True, False, False, True, False):
        flags["b"] = use_b
        want = np.diag(dt * s + t * ds) if use_b else np.diag(2 * t * dt)
        np.testing.assert_allclose(jacfwd(f)(x).numpy(), want, rtol=1e-10, atol=1e-12)
    assert replays["left"] >= 2


def test_two_functions_of_one_signature_replay_each_their_own(replays):
    f = jacrev(lambda x, w: tp.tanh(x @ w))
    g = jacrev(lambda x, w: tp.sigmoid(x @ w))
    x, w = _t(X), _t(W1)
    y = X @ W1
    s = 1 / (1 + np.exp(-y))
    for _ in range(6):
        np.testing.assert_allclose(f(x, w).numpy(), (W1 * (1 - np.tanh(y) ** 2)).T, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g(x, w).numpy(), (W1 * (s * (1 - s))).T, rtol=1e-10, atol=1e-12)
    assert replays["replayed"] >= 8 and replays["left"] == 0


def test_values_asked_for_while_replaying_are_the_call_s(replays, capsys):
    seen = []

    def f(x, w):
        y = x @ w
        print(y)  # (a value on demand: the replay becomes a trace here)
        seen.append(debug_unwrap(y).numpy().copy())
        return tp.tanh(y)

    w = _t(W1)
    for k in range(4):
        x = X + k
        h = np.tanh(x @ W1)
        np.testing.assert_allclose(jacfwd(f)(_t(x), w).numpy(), (W1 * (1 - h * h)).T, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(seen[-1], x @ W1, rtol=1e-12)
        assert capsys.readouterr().out == repr(_t(x @ W1)) + "\n"
    assert replays["left"] >= 2


def test_a_branch_on_a_value_takes_each_path(replays):
    def f(x, w):
        y = x @ w
        if float(debug_unwrap(y).sum()) > 0:
            return tp.tanh(y)
        return y * y

    w = _t(W1)
    for x in (X, -X, X, X, -X, -X, X):
        y = x @ W1
        want = (W1 * (1 - np.tanh(y) ** 2)).T if y.sum() > 0 else (W1 * 2 * y).T
        np.testing.assert_allclose(jacrev(f)(_t(x), w).numpy(), want, rtol=1e-10, atol=1e-12)


def test_an_exception_while_replaying_gives_the_template_back(replays):
    fail = {"now": False}

    def f(x, w):
        y = tp.tanh(x @ w)
        if fail["now"]:
            raise ValueError("user error")
        return y

    x, w = _t(X), _t(W1)
    want = (W1 * (1 - np.tanh(X @ W1) ** 2)).T
    for _ in range(3):
        np.testing.assert_allclose(jacfwd(f)(x, w).numpy(), want, rtol=1e-10, atol=1e-12)
    fail["now"] = True
    with pytest.raises(ValueError, match="user error"):
        jacfwd(f)(x, w)
    fail["now"] = False
    before = replays["replayed"]
    np.testing.assert_allclose(jacfwd(f)(x, w).numpy(), want, rtol=1e-10, atol=1e-12)
    assert replays["replayed"] == before + 1
    assert not tp._state.STATE.stack


@pytest.mark.parametrize("op", ["matmul", "sigmoid"])
def test_no_grad_inside_is_not_replayed_as_a_differentiated_op(replays, op):
    mode = {"off": False}

    def f(x, w):
        with tp.no_grad() if mode["off"] and op == "matmul" else tp.enable_grad():
            y = x @ w
        with tp.no_grad() if mode["off"] and op == "sigmoid" else tp.enable_grad():
            s = tp.sigmoid(x)
        return tp.tanh(y) + s

    x, w = _t(X), _t(W1)
    h, sg = np.tanh(X @ W1), 1 / (1 + np.exp(-X))
    for off in (False, False, False, True, False, True):
        mode["off"] = off
        dy = 0 if off and op == "matmul" else (W1 * (1 - h * h)).T
        ds = 0 if off and op == "sigmoid" else np.diag(sg * (1 - sg))
        np.testing.assert_allclose(jacrev(f)(x, w).numpy(), dy + ds, rtol=1e-10, atol=1e-12)
    assert replays["replayed"] >= 1


def test_a_transform_called_under_no_grad_differentiates_and_does_not_replay(replays):
    # torch.func semantics: a no_grad around the transform call is ignored by it. A replay starts
    # only with grad on (its ops do not check the mode), so these calls trace.
    def f(x, w):
        return tp.tanh(x @ w)

    x, w = _t(X), _t(W1)
    h = np.tanh(X @ W1)
    for _ in range(3):
        np.testing.assert_allclose(jacrev(f)(x, w).numpy(), (W1 * (1 - h * h)).T, rtol=1e-10, atol=1e-12)
    before = replays["replayed"]
    with tp.no_grad():
        for _ in range(3):
            np.testing.assert_allclose(jacrev(f)(x, w).numpy(), (W1 * (1 - h * h)).T, rtol=1e-10, atol=1e-12)
    assert replays["replayed"] == before
    jacrev(f)(x, w)
    assert replays["replayed"] >= before + 1  # (grad on again: the replays go on)


def test_a_tensor_that_escapes_a_replayed_call_is_a_leaked_tracer(replays):
    kept = []

    def f(x, w):
        y = x @ w
        kept.append(y)
        return tp.tanh(y)

    x, w = _t(X), _t(W1)
    for _ in range(4):
        jacfwd(f)(x, w)
    assert replays["replayed"] >= 1
    assert len({id(t) for t in kept}) == 4  # (a kept tensor is never handed out again)
    assert kept[-1].shape == (D,)
    with pytest.raises(tp._state.TracingError, match="leaked tracer"):
        kept[-1] + x
    with pytest.raises(tp._state.TracingError, match="leaked tracer"):
        tp.tanh(kept[-1])


def _call_tanh_of_matmul(f, calls: int) -> None:
    """`calls` calls of jacfwd(f) on (X, W1), each checked against d tanh(x W1) / dx by hand."""
    x, w = _t(X), _t(W1)
    want = (W1 * (1 - np.tanh(X @ W1) ** 2)).T
    for _ in range(calls):
        np.testing.assert_allclose(jacfwd(f)(x, w).numpy(), want, rtol=1e-10, atol=1e-12)


def test_replays_reuse_their_tensors_when_nothing_kept_them(replays):
    ids = []

    def f(x, w):
        y = x @ w
        ids.append((id(x), id(y)))  # (ids only: holding the tensors would stop the reuse)
        return tp.tanh(y)

    _call_tanh_of_matmul(f, 6)
    assert replays["replayed"] >= 3
    assert len(set(ids[-3:])) == 1


def test_a_replay_does_not_reuse_a_tensor_given_an_attribute_or_a_weak_reference(replays):
    refs, seen, calls = [], [], [0]

    def f(x, w):
        calls[0] += 1
        y = x @ w
        seen.append((getattr(y, "tag", None), any(r() is y for r in refs)))
        if calls[0] == 3:
            y.tag = "call 3"
        if calls[0] == 5:
            refs.append(weakref.ref(y))
        return tp.tanh(y)

    _call_tanh_of_matmul(f, 8)
    assert replays["replayed"] >= 5
    assert seen == [(None, False)] * 8


def test_a_replayed_call_whose_entry_was_evicted_compiles_again(replays):
    x, w = _t(X), _t(W1)
    f = jacfwd(lambda x, w: tp.tanh(x @ w))
    want = (W1 * (1 - np.tanh(X @ W1) ** 2)).T
    for _ in range(3):
        f(x, w)
    _pipeline._OUTERMOST.clear()  # (the signatures and their templates stay)
    np.testing.assert_allclose(f(x, w).numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f(x, w).numpy(), want, rtol=1e-10, atol=1e-12)
    assert replays["replayed"] >= 2


def test_replayed_calls_leave_nothing_for_the_cyclic_collector(replays):
    from tensorplay.ir.core import Node

    args = [_t(a) for a in (X, W1, B1, W2)]
    f = jacrev(_mlp)
    for _ in range(3):
        f(*args)
    gc.collect()
    gc.disable()
    try:
        before = sum(1 for o in gc.get_objects() if o.__class__ in (Node, _replay.Replaying))
        for _ in range(5):
            f(*args)
        assert sum(1 for o in gc.get_objects() if o.__class__ in (Node, _replay.Replaying)) <= before
    finally:
        gc.enable()
    assert replays["replayed"] >= 5


def test_vmap_of_a_jacobian_replays_per_sample(replays):
    xs = RNG.standard_normal((4, D))
    f = vmap(jacrev(_mlp), in_dims=(0, None, None, None))
    args = [_t(xs)] + [_t(a) for a in (W1, B1, W2)]
    want = np.stack([_mlp_jacobian(x, W1, B1, W2) for x in xs])
    for _ in range(4):
        np.testing.assert_allclose(f(*args).numpy(), want, rtol=1e-10, atol=1e-12)
    assert replays["replayed"] >= 1


def test_concurrent_threads_each_get_their_own_result():
    f = jacfwd(lambda x, w: tp.tanh(x @ w))
    w = _t(W1)
    f(_t(X), w)  # (compiled once, before the threads)
    errors = []

    def run(k):
        try:
            for i in range(30):
                x = X + k + i
                np.testing.assert_allclose(f(_t(x), w).numpy(), (W1 * (1 - np.tanh(x @ W1) ** 2)).T,
                                           rtol=1e-10, atol=1e-12)
        except Exception as e:  # (reported below)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def _relu_ce_loss(w, b, x, y):
    """Mean cross-entropy of relu(x w + b) (a broadcast add, relu and cross_entropy: composite blocks)."""
    return tp.nn.functional.cross_entropy(tp.relu(x @ w + b), y)


def _numpy_relu_ce(w, b, x, y):
    z = np.maximum(x @ w + b, 0)
    z = z - z.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return -logp[np.arange(len(y)), y].mean()


def test_composite_blocks_replay_and_read_each_call_s_labels(replays):
    """A loss of composite blocks (broadcast add, relu, cross_entropy) replays; the labels, which the
    loss reads as known values, are each call's, and labels that change the loss's graph (an
    ignored class) leave the replay."""
    rng = np.random.default_rng(3)
    w, b, x = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((6, 4))
    f = grad(_relu_ce_loss)
    for k in range(6):
        y = (np.arange(6) + k) % 3
        want = fd_grad(lambda w_: _numpy_relu_ce(w_, b, x, y), w)
        np.testing.assert_allclose(f(_t(w), _t(b), _t(x), tp.tensor(y.tolist())).numpy(), want, rtol=1e-6,
                                   atol=1e-8)
    assert replays["replayed"] >= 3 and replays["left"] == 0
    y = np.array([0, 1, 2, -100, 1, 0])  # an ignored target: another program (nll of the rest)
    keep = y != -100
    want = fd_grad(lambda w_: _numpy_relu_ce(w_, b, x[keep], y[keep]), w)
    np.testing.assert_allclose(f(_t(w), _t(b), _t(x), tp.tensor(y.tolist())).numpy(), want, rtol=1e-6, atol=1e-8)
    assert replays["left"] == 1


def test_leaving_after_composite_blocks_keys_the_trace_as_a_fresh_one(replays):
    """A replay left after blocks records them again as their hits do: switching between two
    programs that share a prefix of blocks compiles each once, and each result is its own."""
    flags = {"square": False}

    def loss(w, b, x):
        h = tp.relu(x @ w + b)
        g = h * h  # (a node reading a block's result, before the programs differ)
        return g.sum() if flags["square"] else tp.tanh(g).sum()

    rng = np.random.default_rng(4)
    w, b, x = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((5, 4))
    want = {False: fd_grad(lambda w_: np.tanh(np.maximum(x @ w_ + b, 0) ** 2).sum(), w),
            True: fd_grad(lambda w_: (np.maximum(x @ w_ + b, 0) ** 2).sum(), w)}
    f = grad(loss)
    before = _pipeline.stats()["outermost"][1]
    for square in (False, False, False, True, True, False, True, False, True, True):
        flags["square"] = square
        np.testing.assert_allclose(f(_t(w), _t(b), _t(x)).numpy(), want[square], rtol=1e-6, atol=1e-8)
    assert replays["left"] >= 4 and replays["replayed"] >= 1
    assert _pipeline.stats()["outermost"][1] - before == 2  # one entry per program: the left traces' keys are fresh ones'


@pytest.mark.parametrize("block", ["relu", "broadcast_operator", "broadcast_add"])
def test_a_block_on_another_operand_of_its_type_is_not_replayed(replays, block):
    """The same composite program on another tensor of the same type leaves the replay."""
    flags = {"first": True}
    apply = {"relu": lambda a, b: tp.relu(a if flags["first"] else b),
             "broadcast_operator": lambda a, b: (a if flags["first"] else b) + a.sum(),
             "broadcast_add": lambda a, b: tp.add(a.sum(), a if flags["first"] else b)}[block]
    by_hand = {"relu": lambda a, b: np.maximum(a if flags["first"] else b, 0),
               "broadcast_operator": lambda a, b: (a if flags["first"] else b) + a.sum(),
               "broadcast_add": lambda a, b: a.sum() + (a if flags["first"] else b)}[block]
    f = jacrev(lambda x, w: apply(x @ w, tp.tanh(x)))
    for first in (True, True, True, False, True, False):
        flags["first"] = first
        want = _fd_jacobian(lambda x: by_hand(x @ W1, np.tanh(x)), X)
        np.testing.assert_allclose(f(_t(X), _t(W1)).numpy(), want, rtol=1e-6, atol=1e-8)
    assert replays["left"] >= 2 and replays["replayed"] >= 1


_OPS = ["add", "mul", "sub", "matmul", "tanh", "sigmoid", "relu", "add_sum"]


def _program(ops, x, w):
    """A straight-line program over x and a square w; `ops` are (op, operand picks)."""
    vals = [x]
    for op, i, j in ops:
        a, b = vals[i % len(vals)], vals[j % len(vals)]
        vals.append({"add": lambda: a + b, "mul": lambda: a * b, "sub": lambda: a - b, "matmul": lambda: a @ w,
                     "tanh": lambda: tp.tanh(a), "sigmoid": lambda: tp.sigmoid(a), "relu": lambda: tp.relu(a),
                     "add_sum": lambda: a + b.sum()}[op]())  # (relu, a broadcast add: composite blocks)
    return vals[-1]


def _numpy_program(ops, x, w):
    vals = [x]
    for op, i, j in ops:
        a, b = vals[i % len(vals)], vals[j % len(vals)]
        vals.append({"add": lambda: a + b, "mul": lambda: a * b, "sub": lambda: a - b, "matmul": lambda: a @ w,
                     "tanh": lambda: np.tanh(a), "sigmoid": lambda: 1 / (1 + np.exp(-a)),
                     "relu": lambda: np.maximum(a, 0), "add_sum": lambda: a + b.sum()}[op]())
    return vals[-1]


@pytest.mark.parametrize("transform", [jacfwd, jacrev, grad], ids=["jacfwd", "jacrev", "grad"])
@pytest.mark.parametrize("first, then", [(tp.relu, tp.sigmoid), (tp.relu, tp.relu), (tp.relu, tp.tanh)],
                         ids=["relu-sigmoid-relu", "relu-relu-tanh", "relu-tanh-relu"])
def test_a_replay_left_right_after_a_composite_block_reads_its_result(replays, transform, first, then):
    """A template whose first op is a composite block (relu), left at the next op, which is called
    on that block's result: the block recorded again when leaving keeps the result Value the call's
    operand list was read from (found by the captured-weight program test: a KeyError on an
    undefined value in the traced graph)."""
    ops = {"second": then}

    def f(x):
        return ops["second"](first(x))

    def by_hand(x):
        h = np.maximum(x, 0)
        s = {tp.sigmoid: 1 / (1 + np.exp(-h)), tp.tanh: np.tanh(h), tp.relu: h}[ops["second"]]
        return s if transform is not grad else s.sum()

    other = first if then is not first else tp.tanh
    for second in (then, then, other, then, other, other):
        ops["second"] = second
        x = X + 0.1  # (no entry at relu's kink)
        got = (transform(lambda x: f(x).sum()) if transform is grad else transform(f))(_t(x))
        want = fd_grad(lambda x: by_hand(x), x) if transform is grad else _fd_jacobian(by_hand, x)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-8)
    assert replays["left"] >= 2


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(_OPS), st.integers(0, 9), st.integers(0, 9)),
                         min_size=1, max_size=6), min_size=1, max_size=3),
       st.lists(st.integers(0, 2), min_size=3, max_size=8), st.sampled_from(["jacfwd", "jacrev"]))
def test_random_programs_switched_between_calls_match_finite_differences(programs, order, which):
    """Programs that share prefixes and differ anywhere, called in a random order through one
    transform object: every call's Jacobian is its own program's."""
    current = {"ops": programs[0]}
    f = {"jacfwd": jacfwd, "jacrev": jacrev}[which](lambda x, w: _program(current["ops"], x, w))
    w = W1 * 0.5
    for k in order:
        ops = programs[k % len(programs)]
        current["ops"] = ops
        want = _fd_jacobian(lambda x: _numpy_program(ops, x, w), X)
        np.testing.assert_allclose(f(_t(X), _t(w)).numpy(), want, rtol=1e-5, atol=1e-6)


def _closed_over(weights: dict):
    """The MLP of `_mlp` with its weights read from `weights` at each call (captures, not arguments)."""
    return lambda x: tp.tanh(x @ weights["w1"] + weights["b1"]) @ weights["w2"]


def test_captured_weights_replay_and_each_call_reads_their_values(replays):
    weights = {"w1": _t(W1), "b1": _t(B1), "w2": _t(W2)}
    for transform in (jacfwd, jacrev):
        f = transform(_closed_over(weights))
        for _ in range(4):
            np.testing.assert_allclose(f(_t(X)).numpy(), _mlp_jacobian(X, W1, B1, W2), rtol=1e-10, atol=1e-12)
    assert replays["replayed"] >= 4 and replays["left"] == 0
    weights["w1"].mul_(2.0)  # written in place between calls: the replay reads the new values
    np.testing.assert_allclose(f(_t(X)).numpy(), _mlp_jacobian(X, 2 * W1, B1, W2), rtol=1e-10, atol=1e-12)
    weights["w2"] = _t(W1)  # another tensor of the capture's type: replayed, with its values
    before = replays["replayed"]
    np.testing.assert_allclose(f(_t(X)).numpy(), _mlp_jacobian(X, 2 * W1, B1, W1), rtol=1e-10, atol=1e-12)
    assert replays["replayed"] == before + 1


@pytest.mark.parametrize("change", ["shape", "dtype", "strides", "traced", "view"])
def test_a_capture_of_another_kind_leaves_the_replay(replays, change):
    weights = {"w1": _t(W1), "b1": _t(B1), "w2": _t(W2)}
    f = jacrev(_closed_over(weights))
    for _ in range(3):
        f(_t(X))
    w2 = {"shape": lambda: np.concatenate([W2, W2], 1), "dtype": lambda: W2, "strides": lambda: W2,
          "traced": lambda: W2, "view": lambda: W2}[change]()
    if change == "dtype":
        weights["w2"] = _t(w2, np.float32)
    elif change == "strides":
        weights["w2"] = tp.from_numpy(np.asfortranarray(w2))  # a root of other strides, same shape and values
        assert weights["w2"]._base is None and not weights["w2"]._data.flags.c_contiguous
    elif change == "view":
        weights["w2"] = _t(np.concatenate([W2, W2], 0))[:D]  # a view of a larger tensor
    else:
        weights["w2"] = _t(w2)
    if change == "traced":  # under a map, the closed-over weight is a batched tracer of the map's
        ws = np.stack([W2, W1])
        got = vmap(lambda w: jacrev(lambda x: tp.tanh(x @ weights["w1"] + weights["b1"]) @ w)(_t(X)))(_t(ws))
        for k in range(2):
            np.testing.assert_allclose(got[k].numpy(), _mlp_jacobian(X, W1, B1, ws[k]), rtol=1e-10, atol=1e-12)
        return
    if change == "dtype":  # the op's own error, as a fresh trace raises it (not the template's result)
        with pytest.raises(TypeError, match="matmul: expected both operands to have the same dtype"):
            f(_t(X))
        return
    want = _fd_jacobian(lambda x: np.tanh(x @ W1 + B1) @ w2, X)
    np.testing.assert_allclose(f(_t(X)).numpy(), want, rtol=1e-6, atol=1e-6)
    assert replays["left"] == 1


def test_a_replay_left_after_a_capture_keys_the_trace_as_a_fresh_one(replays):
    """Leaving after the replay took a capture lifts it where a fresh trace would: switching
    between two programs sharing that prefix compiles each once."""
    flags = {"tanh": True}
    w = _t(W1)

    def f(x):
        h = x @ w
        return tp.tanh(h) if flags["tanh"] else tp.sigmoid(h)

    before = _pipeline.stats()["outermost"][1]
    for t in (True, True, True, False, False, True, False):
        flags["tanh"] = t
        s = 1 / (1 + np.exp(-(X @ W1)))
        want = ((1 - np.tanh(X @ W1) ** 2) if t else s * (1 - s))[:, None] * W1.T
        np.testing.assert_allclose(jacfwd(f)(_t(X)).numpy(), want, rtol=1e-10, atol=1e-12)
    assert replays["left"] >= 2 and replays["replayed"] >= 1
    assert _pipeline.stats()["outermost"][1] - before == 2


def test_the_same_tensor_as_argument_and_capture(replays):
    """A captured tensor passed as the argument too: two inputs of one array, the gradient only
    through the argument."""
    w = _t(W1)
    f = grad(lambda v: (v * w).sum() + (v @ w).sum())
    for _ in range(4):
        np.testing.assert_allclose(f(w).numpy(), W1 + np.outer(np.ones(D), W1.sum(1)), rtol=1e-10, atol=1e-12)
    assert replays["replayed"] >= 1 and replays["left"] == 0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(_OPS), st.integers(0, 9), st.integers(0, 9)),
                         min_size=1, max_size=6), min_size=1, max_size=3),
       st.lists(st.integers(0, 2), min_size=3, max_size=8), st.sampled_from(["jacfwd", "jacrev"]))
def test_random_programs_on_a_captured_weight_match_finite_differences(programs, order, which):
    """As above, with the square weight closed over (a capture), changed in place between calls."""
    current = {"ops": programs[0]}
    w = _t(W1 * 0.5)
    f = {"jacfwd": jacfwd, "jacrev": jacrev}[which](lambda x: _program(current["ops"], x, w))
    for n, k in enumerate(order):
        ops = programs[k % len(programs)]
        current["ops"] = ops
        w.copy_(_t(W1 * (0.5 + 0.1 * n)))
        want = _fd_jacobian(lambda x: _numpy_program(ops, x, W1 * (0.5 + 0.1 * n)), X)
        np.testing.assert_allclose(f(_t(X)).numpy(), want, rtol=1e-5, atol=1e-6)


def test_a_captured_bias_broadcast_over_a_batch_replays_as_its_block(replays):
    """``h + b`` with `b` captured and broadcast: the op memo's composite block, on a capture."""
    w, b = _t(W1), _t(B1)
    xs = RNG.standard_normal((3, D))
    f = grad(lambda x: tp.tanh(x @ w + b).sum())
    for scale in (1.0, 1.0, 1.0, 2.0):
        b.copy_(_t(B1 * scale))
        want = fd_grad(lambda x: np.tanh(x @ W1 + B1 * scale).sum(), xs)
        np.testing.assert_allclose(f(_t(xs)).numpy(), want, rtol=1e-6, atol=1e-8)
    assert replays["replayed"] >= 2 and replays["left"] == 0
