"""cross_entropy / nll_loss when the targets are known while tracing (`known_array`): eagerly and
under a plain transform, targets all in range and none ignored take a graph without the valid
mask, the bounds-checked `take` and the weight sum. Checked against a float64 numpy oracle and
finite differences (no torch needed), against the general graph, across cache entries (a clean
call and one with an ignored target must not share an executable), and that `tp.compile` never
takes the data-dependent graph."""
import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn.functional as F
import tensorplay.nn.functional as _F
from tensorplay._trace import known_array
from tensorplay.func import grad, jacrev, vmap
from tests.finite_diff import fd_grad

RNG = np.random.default_rng(7)
N, C = 6, 5
LOGITS = RNG.standard_normal((N, C))
CLEAN = np.array([0, 4, 2, 3, 1, 4])
IGNORED = np.array([0, 4, 2, -100, 1, 4])
WEIGHT = RNG.uniform(0.5, 2.0, C)


def _ce_oracle(x, t, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """torch's cross_entropy for class indices, in float64 numpy."""
    lp = x - x.max(1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
    w = np.ones(x.shape[1]) if weight is None else weight
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    wt = np.where(valid, w[safe], 0.0)
    nll = -lp[np.arange(len(t)), safe] * wt
    smooth = np.where(valid, -(lp * w).sum(1), 0.0)
    if reduction == "none":
        return (1 - label_smoothing) * nll + label_smoothing / x.shape[1] * smooth
    if reduction == "sum":
        return (1 - label_smoothing) * nll.sum() + label_smoothing / x.shape[1] * smooth.sum()
    return ((1 - label_smoothing) * nll.sum() + label_smoothing / x.shape[1] * smooth.sum()) / wt.sum()


OPTIONS = [{}, {"reduction": "sum"}, {"reduction": "none"}, {"weight": True}, {"label_smoothing": 0.2},
           {"label_smoothing": 0.3, "weight": True, "reduction": "sum"}, {"ignore_index": 2}]


def _kw(kw):
    out = dict(kw)
    if out.pop("weight", False):
        out["weight"] = WEIGHT
    return out


def _tp_kw(kw):
    out = _kw(kw)
    if "weight" in out:
        out["weight"] = tp.tensor(out["weight"])
    return out


@pytest.mark.parametrize("kw", OPTIONS, ids=str)
@pytest.mark.parametrize("targets", [CLEAN, IGNORED], ids=["clean", "ignored"])
def test_value_and_grad_vs_numpy_and_finite_differences(kw, targets):
    if "ignore_index" in kw:  # the ignored entry is the ignore_index, not -100 (which would be out of range)
        targets = np.where(targets == -100, kw["ignore_index"], targets)
    ref = _ce_oracle(LOGITS, targets, **_kw(kw))
    ref_g = fd_grad(lambda x: _ce_oracle(x, targets, **_kw(kw)).sum(), LOGITS)
    x, t = tp.tensor(LOGITS), tp.tensor(targets)
    np.testing.assert_allclose(F.cross_entropy(x, t, **_tp_kw(kw)).numpy(), ref, rtol=1e-12, atol=1e-14)
    g = grad(lambda x, t: F.cross_entropy(x, t, **_tp_kw(kw)).sum())(x, t)
    np.testing.assert_allclose(g.numpy(), ref_g, rtol=1e-7, atol=1e-9)
    # the targets as a capture of the plain transform (not an argument)
    g2 = grad(lambda x: F.cross_entropy(x, t, **_tp_kw(kw)).sum())(x)
    np.testing.assert_allclose(g2.numpy(), ref_g, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("kw", OPTIONS, ids=str)
def test_the_known_target_graph_equals_the_general_graph(kw, monkeypatch):
    x, t = tp.tensor(LOGITS.astype(np.float32)), tp.tensor(CLEAN)
    f = lambda x, t: F.cross_entropy(x, t, **_tp_kw(kw)).sum()  # noqa: E731
    fast_v, fast_g = F.cross_entropy(x, t, **_tp_kw(kw)).numpy(), grad(f)(x, t).numpy()
    monkeypatch.setattr(_F, "_in_range", lambda *a: False)
    np.testing.assert_allclose(F.cross_entropy(x, t, **_tp_kw(kw)).numpy(), fast_v, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grad(f)(x, t).numpy(), fast_g, rtol=1e-6, atol=1e-7)


def test_nll_loss_known_targets():
    logp = LOGITS - np.log(np.exp(LOGITS).sum(1, keepdims=True))
    for targets in (CLEAN, IGNORED):
        valid = targets != -100
        ref = -logp[np.arange(N), np.where(valid, targets, 0)][valid].mean()
        ref_g = fd_grad(lambda p: -p[np.arange(N), np.where(valid, targets, 0)][valid].mean(), logp)
        t = tp.tensor(targets)
        np.testing.assert_allclose(F.nll_loss(tp.tensor(logp), t).numpy(), ref, rtol=1e-12)
        np.testing.assert_allclose(grad(lambda p, t: F.nll_loss(p, t))(tp.tensor(logp), t).numpy(), ref_g,
                                   rtol=1e-7, atol=1e-9)


def test_the_clean_graph_is_small():
    x, t = tp.tensor(LOGITS.astype(np.float32)), tp.tensor(CLEAN)
    seen = {}

    def f(x, t):
        loss = F.cross_entropy(x, t)
        seen["nodes"] = [n.prim.name for n in tp._trace.current_trace().builder.nodes]
        return loss

    grad(f)(x, t)
    assert "take" not in seen["nodes"] and "ne" not in seen["nodes"]
    grad(f)(x, tp.tensor(IGNORED))
    assert "take" in seen["nodes"] and "ne" in seen["nodes"]


def test_alternating_clean_and_ignored_calls_do_not_share_an_entry():
    """One grad function called with clean and ignored targets in turn: each call traces its own
    branch; a wrong cache hit would give the other branch's (wrong) answer."""
    x = tp.tensor(LOGITS)
    g = grad(lambda x, t: F.cross_entropy(x, t))
    for _ in range(3):
        for targets in (CLEAN, IGNORED, np.array([-100] * 5 + [1]), np.array([1, 1, 1, 1, 1, 0])):
            ref_g = fd_grad(lambda x: _ce_oracle(x, targets), LOGITS)
            np.testing.assert_allclose(g(x, tp.tensor(targets)).numpy(), ref_g, rtol=1e-7, atol=1e-9)
    # the ignore_index value: clean for -100, an ignored target for 4
    for ii in (-100, 4, 0):
        ref_g = fd_grad(lambda x: _ce_oracle(x, CLEAN, ignore_index=ii), LOGITS)
        got = grad(lambda x, t: F.cross_entropy(x, t, ignore_index=ii))(x, tp.tensor(CLEAN))
        np.testing.assert_allclose(got.numpy(), ref_g, rtol=1e-7, atol=1e-9)


def test_a_target_updated_in_place_under_compile_is_seen():
    """`tp.compile` traces once with symbolic inputs: its graph must not depend on a captured
    target's values at trace time (here: clean, later one ignored entry)."""
    x = tp.tensor(LOGITS)
    t = tp.tensor(CLEAN.copy())
    f = tp.compile(grad(lambda x: F.cross_entropy(x, t)))
    np.testing.assert_allclose(f(x).numpy(), fd_grad(lambda x: _ce_oracle(x, CLEAN), LOGITS), rtol=1e-7, atol=1e-9)
    t[3] = -100
    np.testing.assert_allclose(f(x).numpy(), fd_grad(lambda x: _ce_oracle(x, IGNORED), LOGITS), rtol=1e-7,
                               atol=1e-9)


def test_out_of_range_targets_still_raise():
    x = tp.tensor(LOGITS)
    bad = tp.tensor(np.array([0, 1, 5, 2, 3, 4]))
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.cross_entropy(x, bad)
    with pytest.raises(IndexError, match="out of bounds|out of range"):
        grad(lambda x, t: F.cross_entropy(x, t))(x, bad)
    # and a clean call right after still works (no entry was poisoned)
    ref_g = fd_grad(lambda x: _ce_oracle(x, CLEAN), LOGITS)
    np.testing.assert_allclose(grad(lambda x, t: F.cross_entropy(x, t))(x, tp.tensor(CLEAN)).numpy(), ref_g,
                               rtol=1e-7, atol=1e-9)


def test_per_sample_targets_under_vmap_and_shared_targets():
    w = RNG.standard_normal((3, C))
    xs = RNG.standard_normal((4, 3))
    ys = np.array([1, 0, -100, 2])

    def loss(w, x, y):
        return F.cross_entropy(x @ w, y)

    def ref_loss(w, x, y):
        return _ce_oracle(x @ w, y)

    # per-sample (batched) targets: no value while tracing, the general graph
    per = vmap(grad(lambda w, x, y: loss(w, x.unsqueeze(0), y.unsqueeze(0))), in_dims=(None, 0, 0))(
        tp.tensor(w), tp.tensor(xs), tp.tensor(ys)).numpy()
    for i in range(4):
        one = grad(loss)(tp.tensor(w), tp.tensor(xs[i:i + 1]), tp.tensor(ys[i:i + 1])).numpy()
        np.testing.assert_allclose(per[i], one, rtol=1e-12, atol=1e-14)  # (nan for the ignored one: 0 / 0)
        if ys[i] == -100:
            continue
        ref = fd_grad(lambda w: ref_loss(w, xs[i:i + 1], ys[i:i + 1]), w)
        np.testing.assert_allclose(per[i], ref, rtol=1e-7, atol=1e-9)
    # an ensemble of weights with shared targets (known while tracing)
    ws = RNG.standard_normal((2, 3, C))
    for targets in (np.array([1, 0, 4, 2]), ys):
        got = vmap(grad(loss), in_dims=(0, None, None))(tp.tensor(ws), tp.tensor(xs), tp.tensor(targets)).numpy()
        for k in range(2):
            np.testing.assert_allclose(got[k], fd_grad(lambda w: ref_loss(w, xs, targets), ws[k]), rtol=1e-7,
                                       atol=1e-9)


def test_known_array():
    t = tp.tensor([3, 1])
    assert known_array(t).tolist() == [3, 1]
    seen = []

    def f(x, t):
        seen.append((known_array(t), known_array(x * 2), known_array(x[0:1])))
        return x.sum()

    grad(f)(tp.ones(2), t)
    assert seen[-1][0].tolist() == [3, 1] and seen[-1][1] is None and seen[-1][2] is None
    tp.compile(grad(f))(tp.ones(2), t)
    assert seen[-1] == (None, None, None)
    jacrev(lambda x: grad(f)(x, t))(tp.ones(2))  # nested plain transforms: the target is known
    assert seen[-1][0].tolist() == [3, 1]
    vmap(f, in_dims=(0, 0))(tp.ones((2, 2)), tp.tensor([[1, 2], [3, 4]]))
    assert seen[-1][0] is None  # batched: one value per sample

    def writes(x, t):
        t.add_(1)
        seen.append(known_array(t))
        return x.sum()

    u = tp.tensor([0, 1])
    grad(writes)(tp.ones(2), u)
    assert seen[-1] is None and u.tolist() == [1, 2]
