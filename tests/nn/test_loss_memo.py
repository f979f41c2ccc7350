"""cross_entropy / nll_loss under a trace replay their memoised nodes (`tensorplay.nn._traced_memo`).

A replayed call must emit exactly the graph the op layer emits (same structural key, same
printed graph), and every decision the losses take must be in the memo key: the options, the
default dtype, and whether the known targets are all in range and none ignored. Values are
checked against a float64 numpy oracle, alternating calls that a too-coarse key would confuse.
"""
import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay._trace import trace_function
from tensorplay.func import grad, vmap
from tensorplay.ir import TensorType, dtypes
from tensorplay import _traced_memo as TM
from tests.nn.test_losses_known_targets import _ce_oracle

RNG = np.random.default_rng(11)
N, C = 6, 5
LOGITS = RNG.standard_normal((N, C)).astype(np.float32)
CLEAN = np.array([0, 4, 2, 3, 1, 4])
IGNORED = np.array([0, 4, 2, -100, 1, 4])
BAD = np.array([0, 4, 7, 3, 1, 4])
WEIGHT = RNG.uniform(0.5, 2.0, C).astype(np.float32)

OPTIONS = [dict(), dict(reduction="sum"), dict(reduction="none"), dict(ignore_index=2), dict(label_smoothing=0.1),
           dict(ignore_index=4, reduction="sum")]


def _memo_size() -> int:
    return sum(len(m) for m in TM._MEMOS)


def _oracle_grad(x, t, **kw):
    """Central differences of the float64 oracle of sum(loss)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = 1e-6
        g[idx] = (np.sum(_ce_oracle(x + e, t, **kw)) - np.sum(_ce_oracle(x - e, t, **kw))) / 2e-6
    return g


@pytest.mark.parametrize("kw", OPTIONS)
@pytest.mark.parametrize("target", [CLEAN, IGNORED], ids=["clean", "ignored"])
def test_replay_is_the_op_layer_graph(kw, target):
    """The second trace (a memo hit, where the key allows one) is the first trace's graph exactly."""
    target = np.where(target == -100, kw.get("ignore_index", -100), target)
    x, t = tp.from_numpy(LOGITS), tp.from_numpy(target)
    f = lambda a, b: F.cross_entropy(a, b, **kw)  # noqa: E731
    TM.clear()
    first = trace_function(f, (x, t), transform="grad")
    second = trace_function(f, (x, t), transform="grad")
    assert first.structural_key() == second.structural_key()
    assert str(first.graph) == str(second.graph)


@pytest.mark.parametrize("kw", OPTIONS)
def test_alternating_targets_values_and_grads(kw):
    """Clean, ignored and out-of-range targets alternate: each call gets its own graph (the
    known-targets decision is in the key), the values and gradients match the oracle, and an
    out-of-range target raises every time."""
    TM.clear()
    x = tp.from_numpy(LOGITS)
    for _ in range(3):
        ignored = np.where(IGNORED == -100, kw.get("ignore_index", -100), IGNORED)
        for target in (CLEAN, ignored):
            t = tp.from_numpy(target)
            g = grad(lambda a: F.cross_entropy(a, t, **kw).sum())(x)
            np.testing.assert_allclose(g.numpy(), _oracle_grad(LOGITS.astype(np.float64), target, **kw),
                                       rtol=1e-3, atol=1e-4)
        if kw.get("ignore_index", -100) != 2:  # (BAD holds a 7)
            with pytest.raises(IndexError):
                grad(lambda a: F.cross_entropy(a, tp.from_numpy(BAD), **kw).sum())(x)
    if "ignore_index" not in kw:  # (a hit ignore index of a captured target is a captured array: not memoised)
        assert _memo_size() > 0  # the fast path was taken


def test_nll_loss_replayed_with_weight_operand():
    """A weight passed as a traced argument is an operand of the memoised program: a changed
    weight changes the gradient."""
    TM.clear()
    lp = np.log(np.full((N, C), 1.0 / C, np.float32)) + LOGITS
    t = tp.from_numpy(IGNORED)
    for scale in (1.0, 2.0, 1.0, 3.0):
        w = WEIGHT * scale
        gw = grad(lambda w_: F.nll_loss(tp.from_numpy(lp), t, weight=w_, reduction="sum"))(tp.from_numpy(w))
        want = np.zeros(C)
        for n, c in enumerate(IGNORED):
            if c != -100:
                want[c] -= lp[n, c]
        np.testing.assert_allclose(gw.numpy(), want, rtol=1e-5, atol=1e-5)
        gx = grad(lambda a: F.cross_entropy(a, t, weight=tp.from_numpy(w)))(tp.from_numpy(LOGITS))
        np.testing.assert_allclose(gx.numpy(), _oracle_grad(LOGITS.astype(np.float64), IGNORED, weight=w),
                                   rtol=1e-3, atol=1e-4)


def test_per_sample_grads_replayed():
    """vmap(grad(loss of one example)): the target is batched (not known), the ignore index a
    scalar input of the trace; repeated calls replay it and keep the per-sample values."""
    TM.clear()
    W = RNG.standard_normal((4, C)).astype(np.float32)
    xs = RNG.standard_normal((N, 4)).astype(np.float32)

    def loss1(w, x, y):
        return F.cross_entropy((x @ w).unsqueeze(0), y.unsqueeze(0))

    for _ in range(3):
        g = vmap(grad(loss1), in_dims=(None, 0, 0))(tp.from_numpy(W), tp.from_numpy(xs), tp.from_numpy(CLEAN))
        for n in range(N):
            z = (xs[n] @ W).astype(np.float64)
            p = np.exp(z - z.max())
            p /= p.sum()
            p[CLEAN[n]] -= 1
            np.testing.assert_allclose(g.numpy()[n], np.outer(xs[n], p), rtol=1e-4, atol=1e-5)
    assert _memo_size() > 0


def test_default_dtype_is_in_the_key():
    """Integer logits are converted to the default dtype: a changed default is seen."""
    TM.clear()
    xi = tp.from_numpy(np.array([[2, 0, 1], [0, 3, 1]], np.int64))
    t = tp.from_numpy(np.array([0, 1]))
    before = tp.get_default_dtype()
    try:
        for d in (tp.float32, tp.float64, tp.float32):
            tp.set_default_dtype(d)
            out = trace_function(lambda a, b: F.cross_entropy(a, b), (xi, t), transform="grad")
            assert out.graph.outputs[0].type.dtype == (dtypes.float32 if d is tp.float32 else dtypes.float64)
    finally:
        tp.set_default_dtype(before)


def test_eager_and_compile_unchanged():
    """Eagerly nothing is memoised; under tp.compile the targets are not known (general graph)."""
    TM.clear()
    x, t = tp.from_numpy(LOGITS), tp.from_numpy(IGNORED)
    eager = F.cross_entropy(x, t)
    assert _memo_size() == 0
    np.testing.assert_allclose(eager.item(), _ce_oracle(LOGITS.astype(np.float64), IGNORED), rtol=1e-5)
    f = tp.compile(lambda a, b: F.cross_entropy(a, b))
    for _ in range(2):
        np.testing.assert_allclose(f(x, t).item(), eager.item(), rtol=1e-6)
    with pytest.raises(IndexError):
        f(x, tp.from_numpy(BAD))


def test_memo_composite_bad_input_still_raises():
    """A shape error is raised on every call (errors are never memoised)."""
    TM.clear()
    for _ in range(2):
        with pytest.raises(ValueError, match="cross_entropy"):
            grad(lambda a: F.cross_entropy(a, tp.from_numpy(np.array([0, 1]))))(tp.from_numpy(LOGITS))


def test_per_sample_types_replayed_graph():
    """The per-sample trace (types given, target unknown) replays to the op layer's graph."""
    TM.clear()
    types = [TensorType((1, C), dtypes.float32), TensorType((1,), dtypes.int64)]
    args = (tp.zeros(2, C), tp.zeros(2, dtype=tp.int64))
    f = lambda a, b: F.cross_entropy(a, b)  # noqa: E731
    first = trace_function(f, args, transform="vmap > grad", in_types=types)
    second = trace_function(f, args, transform="vmap > grad", in_types=types)
    assert first.structural_key() == second.structural_key() and str(first.graph) == str(second.graph)
    assert _memo_size() == 1
