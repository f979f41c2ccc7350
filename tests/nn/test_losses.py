"""cross_entropy / nll_loss as a one-hot pick: values and gradients vs torch (every option), the
gather-free graph, and bounds-checked targets eagerly, under plain transforms and compiled."""
import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.func import grad, vmap

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)
N, C = 6, 5
LOGITS = RNG.standard_normal((N, C))
TARGET = np.array([0, 4, 2, -100, 1, 4])  # one ignored entry
TARGET_OK = np.where(TARGET == -100, 3, TARGET)
WEIGHT = RNG.uniform(0.5, 2.0, C)
SPATIAL = RNG.standard_normal((3, C, 2, 4))
SPATIAL_T = RNG.integers(0, C, (3, 2, 4))

OPTIONS = [
    {},
    {"reduction": "sum"},
    {"reduction": "none"},
    {"weight": True},
    {"weight": True, "reduction": "none"},
    {"ignore_index": 2},
    {"label_smoothing": 0.2},
    {"label_smoothing": 0.2, "weight": True},
    {"label_smoothing": 0.3, "weight": True, "reduction": "sum"},
    {"label_smoothing": 0.1, "reduction": "none"},
]


def _kw(kw, lib):
    out = dict(kw)
    if out.pop("weight", False):
        out["weight"] = tp.tensor(WEIGHT) if lib == "tp" else torch.tensor(WEIGHT)
    return out


def _torch_value_and_grad(fn, x, *args, **kw):
    tx = torch.tensor(x, requires_grad=True)
    out = fn(tx, *args, **kw)
    out.sum().backward()
    return out.detach().numpy(), tx.grad.numpy()


@pytest.mark.parametrize("kw", OPTIONS, ids=str)
def test_cross_entropy_value_and_grad_match_torch(kw):
    t = TARGET if kw.get("ignore_index") is None else np.where(TARGET == -100, 2, TARGET)
    ref, ref_g = _torch_value_and_grad(TF.cross_entropy, LOGITS, torch.tensor(t), **_kw(kw, "torch"))

    def f(x):
        return F.cross_entropy(x, tp.tensor(t), **_kw(kw, "tp")).sum()

    np.testing.assert_allclose(F.cross_entropy(tp.tensor(LOGITS), tp.tensor(t), **_kw(kw, "tp")).numpy(), ref,
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad(f)(tp.tensor(LOGITS)).numpy(), ref_g, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(tp.compile(grad(f))(tp.tensor(LOGITS)).numpy(), ref_g, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kw", [{}, {"weight": True}, {"reduction": "none"}, {"ignore_index": 4}], ids=str)
def test_nll_loss_value_and_grad_match_torch(kw):
    logp = np.log(np.exp(LOGITS) / np.exp(LOGITS).sum(1, keepdims=True))
    t = TARGET if kw.get("ignore_index") is None else np.where(TARGET == -100, 0, TARGET)
    ref, ref_g = _torch_value_and_grad(TF.nll_loss, logp, torch.tensor(t), **_kw(kw, "torch"))
    f = lambda x: F.nll_loss(x, tp.tensor(t), **_kw(kw, "tp")).sum()  # noqa: E731
    np.testing.assert_allclose(F.nll_loss(tp.tensor(logp), tp.tensor(t), **_kw(kw, "tp")).numpy(), ref, rtol=1e-10)
    np.testing.assert_allclose(grad(f)(tp.tensor(logp)).numpy(), ref_g, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_spatial_targets_and_unbatched_input(reduction):
    ref, ref_g = _torch_value_and_grad(TF.cross_entropy, SPATIAL, torch.tensor(SPATIAL_T), reduction=reduction,
                                       label_smoothing=0.1)
    f = lambda x: F.cross_entropy(x, tp.tensor(SPATIAL_T), reduction=reduction, label_smoothing=0.1)  # noqa: E731
    np.testing.assert_allclose(f(tp.tensor(SPATIAL)).numpy(), ref, rtol=1e-10)
    np.testing.assert_allclose(grad(lambda x: f(x).sum())(tp.tensor(SPATIAL)).numpy(), ref_g, rtol=1e-9, atol=1e-12)
    one = TF.cross_entropy(torch.tensor(LOGITS[1]), torch.tensor(3), reduction=reduction).numpy()
    np.testing.assert_allclose(F.cross_entropy(tp.tensor(LOGITS[1]), tp.tensor(3), reduction=reduction).numpy(), one,
                               rtol=1e-10)


def test_float32_logits_and_int32_targets():
    x = LOGITS.astype(np.float32)
    ref, ref_g = _torch_value_and_grad(TF.cross_entropy, x, torch.tensor(TARGET))
    t32 = tp.tensor(TARGET.astype(np.int32))
    out = tp.compile(lambda x: F.cross_entropy(x, t32))(tp.tensor(x))
    assert out.dtype is tp.float32
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(grad(lambda x: F.cross_entropy(x, t32))(tp.tensor(x)).numpy(), ref_g, rtol=1e-4,
                               atol=1e-6)


def test_per_sample_grads_under_vmap_match_a_loop():
    w = tp.tensor(RNG.standard_normal((3, C)))
    xs = tp.tensor(RNG.standard_normal((4, 3)))
    ys = tp.tensor(np.array([1, 0, 4, 2]))

    def loss(w, x, y):
        return F.cross_entropy((x @ w).unsqueeze(0), y.unsqueeze(0))

    batched = vmap(grad(loss), in_dims=(None, 0, 0))(w, xs, ys).numpy()
    for i in range(4):
        np.testing.assert_allclose(batched[i], grad(loss)(w, xs[i], ys[i]).numpy(), rtol=1e-12, atol=1e-14)


def test_the_grad_graph_has_no_gather_or_scatter():
    x, t = tp.tensor(LOGITS.astype(np.float32)), tp.tensor(TARGET_OK)
    g = tp.compile(grad(lambda x: F.cross_entropy(x, t))).get_graph(x).graph
    names = [n.prim.name for n in g.nodes]
    assert "index_add" not in names and "scatter_add" not in names
    # the only take reads the (C,) class weights at the targets: the bounds check, not the logits
    takes = [n for n in g.nodes if n.prim.name == "take"]
    assert len(takes) == 1 and takes[0].inputs[0].type.shape == (C,)


@pytest.mark.compiled_backend
@pytest.mark.parametrize("bad", [5, -1, 7])
def test_out_of_range_targets_raise_eagerly_traced_and_compiled(bad):
    x = tp.tensor(LOGITS)
    t = tp.tensor(np.array([0, 1, bad, 2, 3, 4]))
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        F.cross_entropy(x, t)
    with pytest.raises(IndexError, match="out of bounds|out of range"):
        grad(lambda x, t: F.cross_entropy(x, t))(x, t)
    f = tp.compile(lambda x, t: F.nll_loss(x, t))
    ok = tp.tensor(np.array([0, 1, 2, 2, 3, 4]))
    f(x, ok)
    with pytest.raises(IndexError, match="take: index out of range for axis 0 with size 5.* in compiled"):
        f(x, t)
    with pytest.raises(IndexError, match="out of range"):
        tp.compile(grad(lambda x, t: F.cross_entropy(x, t, weight=tp.tensor(WEIGHT))))(x, t)


def test_ignore_index_outside_the_class_range_is_not_an_error():
    x = tp.tensor(LOGITS)
    t = tp.tensor(np.array([0, 1, 9, 2, 3, 4]))
    ref = TF.cross_entropy(torch.tensor(LOGITS), torch.tensor(t.numpy()), ignore_index=9).numpy()
    out = tp.compile(lambda x, t: F.cross_entropy(x, t, ignore_index=9))(x, t)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)


@pytest.mark.compiled_backend
def test_compiled_matches_the_interpreter(monkeypatch):
    x, t = tp.tensor(LOGITS), tp.tensor(TARGET_OK)
    fn = lambda x: F.cross_entropy(x, t, weight=tp.tensor(WEIGHT), label_smoothing=0.1)  # noqa: E731
    monkeypatch.setenv("TENSORPLAY_BACKEND", "compiled")
    compiled = grad(fn)(x).numpy()
    monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")
    np.testing.assert_allclose(grad(fn)(x).numpy(), compiled, rtol=1e-12, atol=1e-14)


def test_bad_targets_and_options():
    x = tp.tensor(LOGITS)
    with pytest.raises(TypeError, match="integer dtype"):
        F.nll_loss(x, tp.tensor([True] * N))
    with pytest.raises(ValueError, match="weight should be a 1-D tensor of 5"):
        F.cross_entropy(x, tp.tensor(TARGET_OK), weight=tp.ones(4))
    with pytest.raises(ValueError, match="Expected target of shape"):
        F.cross_entropy(x, tp.tensor([0, 1]))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.nll_loss(x, tp.tensor(TARGET_OK), reduction="avg")
