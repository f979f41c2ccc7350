"""Layers and nn.functional against direct numpy reimplementations."""
import itertools
import math

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn as nn
import tensorplay.nn.functional as F

RNG = np.random.default_rng(0)


def T(a):
    return tp.tensor(np.asarray(a))


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.numpy() if hasattr(a, "numpy") else a), b, rtol=tol, atol=tol)


# --- convolution and pooling ----------------------------------------------------------------------
def conv_ref(x, w, b, stride, padding, dilation, groups):
    """Direct loop over output positions, channels and kernel offsets."""
    n_sp = x.ndim - 2
    stride, padding, dilation = ((v,) * n_sp if isinstance(v, int) else v for v in (stride, padding, dilation))
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    N, C = x.shape[:2]
    Cout, Cg = w.shape[:2]
    ks = w.shape[2:]
    out_sp = [(x.shape[2 + i] - dilation[i] * (ks[i] - 1) - 1) // stride[i] + 1 for i in range(n_sp)]
    out = np.zeros((N, Cout, *out_sp))
    per = Cout // groups
    for n in range(N):
        for o in range(Cout):
            g = o // per
            for pos in itertools.product(*(range(s) for s in out_sp)):
                acc = 0.0 if b is None else b[o]
                for c in range(Cg):
                    for k in itertools.product(*(range(s) for s in ks)):
                        idx = tuple(pos[i] * stride[i] + k[i] * dilation[i] for i in range(n_sp))
                        acc += x[(n, g * Cg + c) + idx] * w[(o, c) + k]
                out[(n, o) + pos] = acc
    return out


@pytest.mark.parametrize("stride,padding,dilation,groups,bias", [
    (1, 0, 1, 1, True), (2, 1, 1, 1, False), (1, 2, 2, 1, True), ((2, 1), (0, 1), (1, 2), 2, True),
    (1, 1, 1, 4, True),
])
def test_conv2d_vs_loop(stride, padding, dilation, groups, bias):
    x = RNG.standard_normal((2, 4, 7, 6))
    w = RNG.standard_normal((8, 4 // groups, 3, 2))
    b = RNG.standard_normal(8) if bias else None
    out = F.conv2d(T(x), T(w), None if b is None else T(b), stride, padding, dilation, groups)
    close(out, conv_ref(x, w, b, stride, padding, dilation, groups))


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 2, 1, 1), (1, 1, 3, 2), (3, 0, 2, 2)])
def test_conv1d_vs_loop(stride, padding, dilation, groups):
    x = RNG.standard_normal((3, 4, 11))
    w = RNG.standard_normal((6, 4 // groups, 3))
    b = RNG.standard_normal(6)
    close(F.conv1d(T(x), T(w), T(b), stride, padding, dilation, groups), conv_ref(x, w, b, stride, padding, dilation,
                                                                                  groups))


def test_conv_same_valid_and_unbatched():
    x = RNG.standard_normal((3, 8, 9))
    w = RNG.standard_normal((5, 3, 4, 3))
    same = F.conv2d(T(x), T(w), padding="same")
    assert same.shape == (5, 8, 9)
    # PyTorch pads (k-1)//2 on the left, the rest on the right
    ref = conv_ref(np.pad(x, [(0, 0), (1, 2), (1, 1)])[None], w, None, 1, 0, 1, 1)[0]
    close(same, ref)
    close(F.conv2d(T(x), T(w), padding="valid"), conv_ref(x[None], w, None, 1, 0, 1, 1)[0])


def test_conv_module_and_errors():
    conv = nn.Conv2d(4, 6, (3, 3), stride=2, padding=1, groups=2).double()
    x = RNG.standard_normal((2, 4, 9, 9))
    close(conv(T(x)), conv_ref(x, conv.weight.numpy(), conv.bias.numpy(), 2, 1, 1, 2))
    with pytest.raises(ValueError, match="to have 4 channels, but got 3"):
        conv(tp.zeros(1, 3, 9, 9, dtype=tp.float64))
    with pytest.raises(ValueError, match="Expected 3D \\(unbatched\\) or 4D"):
        conv(tp.zeros(9, 9, dtype=tp.float64))
    with pytest.raises(ValueError, match="Kernel size can't be greater"):
        F.conv2d(tp.zeros(1, 1, 2, 2), tp.zeros(1, 1, 3, 3))
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="divisible"):
        nn.Conv2d(3, 4, 3, groups=2)


def test_pooling_vs_numpy():
    x = RNG.standard_normal((2, 3, 6, 7))
    mp = F.max_pool2d(T(x), 2)
    ref = x[:, :, :6, :6].reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5))
    close(mp, ref)
    ap = F.avg_pool2d(T(x), (2, 3), stride=(2, 2))
    ref = np.stack([np.stack([x[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 3].mean(axis=(2, 3)) for j in range(3)], -1)
                    for i in range(3)], -2)
    close(ap, ref)
    padded = F.max_pool2d(T(x), 3, stride=1, padding=1)
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], constant_values=-np.inf)
    ref = np.stack([np.stack([xp[:, :, i:i + 3, j:j + 3].max(axis=(2, 3)) for j in range(7)], -1) for i in range(6)],
                   -2)
    close(padded, ref)
    assert nn.MaxPool2d(2)(tp.zeros(3, 4, 4)).shape == (3, 2, 2)
    close(F.max_pool1d(T(x[0]), 3), x[0][:, :, :6].reshape(3, 6, 2, 3).max(-1))


# --- normalization ---------------------------------------------------------------------------------
def test_batchnorm_training_and_running_stats():
    bn = nn.BatchNorm2d(3, momentum=0.2).double()
    with tp.no_grad():  # parameters require grad: in-place writes go under no_grad, as in torch
        bn.weight.copy_(T(RNG.standard_normal(3)))
        bn.bias.copy_(T(RNG.standard_normal(3)))
    rm, rv = np.zeros(3), np.ones(3)
    for step in range(3):
        x = RNG.standard_normal((4, 3, 5, 2)) * 2 + 1
        out = bn(T(x))
        mean = x.mean(axis=(0, 2, 3))
        var = x.var(axis=(0, 2, 3))
        ref = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
        ref = ref * bn.weight.numpy()[None, :, None, None] + bn.bias.numpy()[None, :, None, None]
        close(out, ref, 1e-9)
        n = x.size / 3
        rm = 0.8 * rm + 0.2 * mean
        rv = 0.8 * rv + 0.2 * var * n / (n - 1)
        close(bn.running_mean, rm)
        close(bn.running_var, rv)
        assert int(bn.num_batches_tracked) == step + 1
    bn.eval()
    x = RNG.standard_normal((2, 3, 5, 2))
    ref = (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5)
    ref = ref * bn.weight.numpy()[None, :, None, None] + bn.bias.numpy()[None, :, None, None]
    close(bn(T(x)), ref, 1e-9)
    close(bn.running_mean, rm)  # eval does not update
    assert int(bn.num_batches_tracked) == 3


def test_batchnorm_cumulative_average_and_options():
    bn = nn.BatchNorm1d(2, momentum=None).double()
    xs = [RNG.standard_normal((5, 2)) for _ in range(4)]
    for x in xs:
        bn(T(x))
    close(bn.running_mean, np.mean([x.mean(0) for x in xs], axis=0))
    close(bn.running_var, np.mean([x.var(0, ddof=1) for x in xs], axis=0))
    # 3-d input (N, C, L)
    bn3 = nn.BatchNorm1d(2, affine=False).double()
    x = RNG.standard_normal((3, 2, 4))
    ref = (x - x.mean(axis=(0, 2))[None, :, None]) / np.sqrt(x.var(axis=(0, 2))[None, :, None] + 1e-5)
    close(bn3(T(x)), ref, 1e-9)
    assert list(bn3.named_parameters()) == []
    # no running stats: batch statistics in eval mode too
    free = nn.BatchNorm1d(2, track_running_stats=False).double().eval()
    x = RNG.standard_normal((6, 2))
    close(free(T(x)), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), 1e-9)
    assert list(free.named_buffers()) == []
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(2)(tp.zeros(2, 2, 2, 2))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(2)(tp.zeros(2, 2))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(2)(tp.zeros(1, 2))


def test_layernorm():
    x = RNG.standard_normal((3, 4, 5))
    ln = nn.LayerNorm((4, 5)).double()
    with tp.no_grad():
        ln.weight.copy_(T(RNG.standard_normal((4, 5))))
        ln.bias.copy_(T(RNG.standard_normal((4, 5))))
    mu = x.mean(axis=(1, 2), keepdims=True)
    var = x.var(axis=(1, 2), keepdims=True)
    close(ln(T(x)), (x - mu) / np.sqrt(var + 1e-5) * ln.weight.numpy() + ln.bias.numpy(), 1e-9)
    plain = nn.LayerNorm(5, elementwise_affine=False, eps=1e-3)
    assert list(plain.parameters()) == []
    x32 = x.astype(np.float32)
    ref = (x32 - x32.mean(-1, keepdims=True)) / np.sqrt(x32.var(-1, keepdims=True) + 1e-3)
    close(plain(T(x32)), ref, 1e-5)
    with pytest.raises(ValueError, match="normalized_shape"):
        ln(tp.zeros(3, 5, 4, dtype=tp.float64))


# --- activations -----------------------------------------------------------------------------------
def test_activations():
    x = RNG.standard_normal(50) * 3
    erf = np.vectorize(math.erf)
    close(F.gelu(T(x)), 0.5 * x * (1 + erf(x / math.sqrt(2))))
    close(nn.GELU("tanh")(T(x)), 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))))
    close(nn.ReLU()(T(x)), np.maximum(x, 0))
    close(nn.Tanh()(T(x)), np.tanh(x))
    close(nn.Sigmoid()(T(x)), 1 / (1 + np.exp(-x)))
    close(nn.LeakyReLU(0.2)(T(x)), np.where(x > 0, x, 0.2 * x))
    close(nn.SiLU()(T(x)), x / (1 + np.exp(-x)))
    close(nn.ELU()(T(x)), np.where(x > 0, x, np.expm1(x)))
    close(nn.Softplus()(T(x)), np.log1p(np.exp(x)))
    close(nn.LogSigmoid()(T(x)), -np.log1p(np.exp(-x)))
    close(nn.ReLU6()(T(x)), np.clip(x, 0, 6))
    m = RNG.standard_normal((3, 4))
    e = np.exp(m - m.max(1, keepdims=True))
    close(nn.Softmax(dim=1)(T(m)), e / e.sum(1, keepdims=True))
    close(nn.LogSoftmax(dim=1)(T(m)), np.log(e / e.sum(1, keepdims=True)))
    close(F.softmax(T(m)), e / e.sum(1, keepdims=True))          # implicit dim=1 for 2-d
    e0 = np.exp(m - m.max(0, keepdims=True))
    close(F.softmax(T(m), 0), e0 / e0.sum(0, keepdims=True))


def test_relu_inplace():
    x = tp.tensor([-1.0, 2.0])
    out = nn.ReLU(inplace=True)(x)
    assert out is x and x.tolist() == [0.0, 2.0]


# --- linear, embedding, flatten, dropout -------------------------------------------------------------
def test_linear():
    lin = nn.Linear(4, 3).double()
    x = RNG.standard_normal((2, 5, 4))
    close(lin(T(x)), x @ lin.weight.numpy().T + lin.bias.numpy())
    close(lin(T(x[0, 0])), x[0, 0] @ lin.weight.numpy().T + lin.bias.numpy())
    nb = nn.Linear(4, 3, bias=False)
    assert nb.bias is None and [n for n, _ in nb.named_parameters()] == ["weight"]
    with pytest.raises(ValueError, match="cannot be multiplied"):
        lin(tp.zeros(2, 5, dtype=tp.float64))
    bil = nn.Bilinear(2, 3, 4).double()
    a, b = RNG.standard_normal((5, 2)), RNG.standard_normal((5, 3))
    close(bil(T(a), T(b)), np.einsum("ni,oij,nj->no", a, bil.weight.numpy(), b) + bil.bias.numpy())


def test_embedding():
    emb = nn.Embedding(6, 3, padding_idx=2)
    assert emb.weight[2].tolist() == [0.0, 0.0, 0.0]
    idx = np.array([[0, 5, 2], [1, 1, 4]])
    np.testing.assert_array_equal(emb(T(idx)).numpy(), emb.weight.numpy()[idx])
    assert emb(T(np.array(3))).shape == (3,)
    with pytest.raises(IndexError, match="out of range"):
        emb(tp.tensor([6]))
    with pytest.raises(TypeError, match="indices"):
        emb(tp.tensor([1.0]))
    pre = nn.Embedding.from_pretrained(tp.eye(3))
    assert pre(tp.tensor([1])).tolist() == [[0.0, 1.0, 0.0]] and not pre.weight.requires_grad


def test_flatten():
    x = tp.zeros(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (3, 1))(tp.zeros(2, 3)).shape == (2, 3, 1)


def test_dropout_statistics():
    tp.manual_seed(1)
    x = tp.ones(200, 500)
    drop = nn.Dropout(0.3)
    out = drop(x).numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    assert abs(out.mean() - 1.0) < 0.02  # unbiased
    out2 = drop(x).numpy()
    assert (out2 != out).any()  # fresh mask per call
    drop.eval()
    assert drop(x) is x
    assert (F.dropout(x, 1.0).numpy() == 0).all()
    assert F.dropout(x, 0.0) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)
    tp.manual_seed(7)
    a = F.dropout(x, 0.5).numpy()
    tp.manual_seed(7)
    np.testing.assert_array_equal(a, F.dropout(x, 0.5).numpy())


# --- losses ---------------------------------------------------------------------------------------
def log_softmax_np(x, axis):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def ce_ref(x, y, weight=None, ignore_index=-100, reduction="mean", ls=0.0):
    """Cross entropy with class indices on (N, C, *) logits, as documented by PyTorch."""
    C = x.shape[1]
    logp = log_softmax_np(x, 1)
    w = np.ones(C) if weight is None else weight
    valid = y != ignore_index
    ys = np.where(valid, y, 0)
    picked = np.take_along_axis(logp, ys[:, None], 1)[:, 0]
    wt = w[ys] * valid
    nll = -picked * wt
    smooth = -(logp * w.reshape((C,) + (1,) * (x.ndim - 2))).sum(1) * valid
    if reduction == "none":
        return (1 - ls) * nll + ls / C * smooth
    if reduction == "sum":
        return (1 - ls) * nll.sum() + ls / C * smooth.sum()
    return (1 - ls) * nll.sum() / wt.sum() + ls / C * smooth.sum() / wt.sum()


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_cross_entropy_class_indices(weighted, reduction, ls):
    x = RNG.standard_normal((6, 4))
    y = np.array([0, 3, 1, -100, 2, 3])
    w = RNG.uniform(0.5, 2, 4) if weighted else None
    out = F.cross_entropy(T(x), T(y), None if w is None else T(w), reduction=reduction, label_smoothing=ls)
    close(out, ce_ref(x, y, w, reduction=reduction, ls=ls))
    mod = nn.CrossEntropyLoss(weight=None if w is None else T(w), reduction=reduction, label_smoothing=ls)
    close(mod(T(x), T(y)), ce_ref(x, y, w, reduction=reduction, ls=ls))


def test_cross_entropy_spatial_unbatched_and_probabilities():
    x = RNG.standard_normal((2, 3, 4, 5))
    y = RNG.integers(0, 3, (2, 4, 5))
    close(F.cross_entropy(T(x), T(y)), ce_ref(x, y))
    close(F.cross_entropy(T(x), T(y), reduction="none"), ce_ref(x, y, reduction="none"))
    v = RNG.standard_normal(5)
    close(F.cross_entropy(T(v), T(np.array(2))), -log_softmax_np(v, 0)[2])
    p = RNG.dirichlet(np.ones(4), 6)
    z = RNG.standard_normal((6, 4))
    close(F.cross_entropy(T(z), T(p)), -(log_softmax_np(z, 1) * p).sum(1).mean())
    ps = p * 0.9 + 0.1 / 4
    close(F.cross_entropy(T(z), T(p), label_smoothing=0.1, reduction="sum"), -(log_softmax_np(z, 1) * ps).sum())
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(T(z), tp.tensor([0, 1, 2, 3, 4, 0]))
    with pytest.raises(ValueError, match="Expected target of shape"):
        F.cross_entropy(T(z), tp.tensor([0, 1]))


def test_nll_mse_l1_bce():
    x = RNG.standard_normal((5, 3))
    lp = log_softmax_np(x, 1)
    y = np.array([0, 2, 1, 1, 0])
    close(F.nll_loss(T(lp), T(y)), -lp[np.arange(5), y].mean())
    close(nn.NLLLoss(reduction="sum")(T(lp), T(y)), -lp[np.arange(5), y].sum())
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    close(nn.MSELoss()(T(a), T(b)), ((a - b) ** 2).mean())
    close(nn.MSELoss(reduction="sum")(T(a), T(b)), ((a - b) ** 2).sum())
    close(F.mse_loss(T(a), T(b), reduction="none"), (a - b) ** 2)
    close(nn.L1Loss()(T(a), T(b)), np.abs(a - b).mean())
    t = RNG.uniform(0, 1, (4, 3))
    s = 1 / (1 + np.exp(-a))
    bce = -(t * np.log(s) + (1 - t) * np.log(1 - s)).mean()
    close(nn.BCEWithLogitsLoss()(T(a), T(t)), bce)
    close(nn.BCELoss()(T(s), T(t)), bce)
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")


# --- property: conv2d over random geometries -----------------------------------------------------------
from hypothesis import given, strategies as st  # noqa: E402


@given(st.data())
def test_conv2d_random_geometry_vs_loop(data):
    groups = data.draw(st.sampled_from([1, 2]))
    cin = groups * data.draw(st.integers(1, 2))
    cout = groups * data.draw(st.integers(1, 2))
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    stride = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    dilation = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)))
    padding = (data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2)))
    h = data.draw(st.integers(dilation[0] * (kh - 1) + 1, 7))
    w = data.draw(st.integers(dilation[1] * (kw - 1) + 1, 7))
    seed = data.draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, cin, h, w))
    wt = rng.standard_normal((cout, cin // groups, kh, kw))
    b = rng.standard_normal(cout)
    out = F.conv2d(T(x), T(wt), T(b), stride, padding, dilation, groups)
    close(out, conv_ref(x, wt, b, stride, padding, dilation, groups))
