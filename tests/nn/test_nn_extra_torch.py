"""nn additions for issue 16 against torch (float64): transposed convolutions, padding modes, pixel shuffle,
activations, losses, distances, RMSNorm, channel dropout; gradients, vmap vs loop-and-stack."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn as nn
import tensorplay.nn.functional as F
from tensorplay.func import grad, vmap

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(0)


def arr(*shape):
    return RNG.standard_normal(shape)


def close(ours, theirs, tol=1e-10):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)


CONV_T = [  # (input shape, weight shape, kwargs)
    ((2, 3, 4, 5), (3, 2, 3, 3), {}),
    ((2, 3, 4, 5), (3, 2, 3, 2), dict(stride=2, padding=1, output_padding=1)),
    ((1, 4, 3, 3), (4, 1, 2, 2), dict(stride=(2, 1), groups=2, dilation=2)),
    ((4, 3, 3), (4, 2, 3, 3), dict(stride=3, padding=(2, 0))),  # unbatched
    ((1, 2, 3, 3), (2, 2, 1, 1), dict(padding=1)),  # padding beyond the kernel: cropped
]


@pytest.mark.parametrize("xs, ws, kw", CONV_T)
def test_conv_transpose2d_values_and_grads(xs, ws, kw):
    x, w, b = arr(*xs), arr(*ws), arr(ws[1] * kw.get("groups", 1))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ref = TF.conv_transpose2d(tx, tw, tb, **kw)
    close(F.conv_transpose2d(tp.tensor(x), tp.tensor(w), tp.tensor(b), **kw), ref)
    (ref ** 2).sum().backward()
    gx, gw = grad(lambda x, w: (F.conv_transpose2d(x, w, tp.tensor(b), **kw) ** 2).sum(), argnums=(0, 1))(
        tp.tensor(x), tp.tensor(w))
    close(gx, tx.grad, 1e-9)
    close(gw, tw.grad, 1e-9)


def test_conv_transpose1d_and_modules_match_torch():
    x, w = arr(2, 4, 6), arr(4, 3, 3)
    close(F.conv_transpose1d(tp.tensor(x), tp.tensor(w), stride=2, padding=1, output_padding=1),
          TF.conv_transpose1d(torch.tensor(x), torch.tensor(w), stride=2, padding=1, output_padding=1))
    for ours, theirs, shape in ((nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, dtype=tp.float64),
                                 torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1).double(), (2, 3, 5, 5)),
                                (nn.ConvTranspose1d(3, 4, 2, dtype=tp.float64),
                                 torch.nn.ConvTranspose1d(3, 4, 2).double(), (2, 3, 7))):
        assert tuple(ours.weight.shape) == tuple(theirs.weight.shape)
        ours.load_state_dict({k: tp.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
        x = arr(*shape)
        close(ours(tp.tensor(x)), theirs(torch.tensor(x)))


def test_conv_transpose2d_vmap_matches_loop_and_non_contiguous_input():
    w = tp.tensor(arr(3, 2, 3, 3))
    xs = tp.tensor(arr(4, 1, 3, 5, 5))
    f = lambda x: F.conv_transpose2d(x, w, stride=2)  # noqa: E731
    np.testing.assert_allclose(vmap(f)(xs).numpy(), tp.stack([f(xs[i]) for i in range(4)]).numpy(), rtol=1e-12)
    xt = arr(1, 3, 5, 5)
    nc = tp.tensor(xt).transpose(2, 3)
    close(f(nc), TF.conv_transpose2d(torch.tensor(xt).transpose(2, 3), torch.tensor(w.numpy()), stride=2))


def test_conv_transpose_errors():
    with pytest.raises(ValueError, match="output padding"):
        F.conv_transpose2d(tp.ones(1, 1, 2, 2), tp.ones(1, 1, 2, 2), output_padding=1)
    with pytest.raises(ValueError, match="channels"):
        F.conv_transpose2d(tp.ones(1, 2, 2, 2), tp.ones(3, 1, 2, 2))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", [(2, 1), (1, 2, 2, 0), (0, 0, 1, 1)])
def test_pad_modes_match_torch(mode, pad):
    x = arr(2, 3, 5) if len(pad) == 2 else arr(2, 3, 4, 5)  # torch's limits for non-constant modes
    close(F.pad(tp.tensor(x), pad, mode=mode), TF.pad(torch.tensor(x), pad, mode=mode))
    g = grad(lambda t: (F.pad(t, pad, mode=mode) ** 2).sum())(tp.tensor(x))
    tx = torch.tensor(x, requires_grad=True)
    (TF.pad(tx, pad, mode=mode) ** 2).sum().backward()
    close(g, tx.grad)


def test_padding_modules_and_errors():
    x = arr(1, 2, 3, 4)
    for ours, theirs in ((nn.ReflectionPad2d(2), torch.nn.ReflectionPad2d(2)),
                         (nn.ReplicationPad2d((1, 0, 2, 1)), torch.nn.ReplicationPad2d((1, 0, 2, 1))),
                         (nn.ZeroPad2d(1), torch.nn.ZeroPad2d(1))):
        close(ours(tp.tensor(x)), theirs(torch.tensor(x)))
    x3 = arr(2, 3, 4)
    for ours, theirs in ((nn.ConstantPad1d(2, 3.5), torch.nn.ConstantPad1d(2, 3.5)),
                         (nn.ReflectionPad1d((1, 2)), torch.nn.ReflectionPad1d((1, 2))),
                         (nn.CircularPad1d(2), torch.nn.CircularPad1d(2))):
        close(ours(tp.tensor(x3)), theirs(torch.tensor(x3)))
    with pytest.raises(ValueError, match="smaller than the dimension"):
        F.pad(tp.ones(1, 2, 2), (2, 2), mode="reflect")


def test_pixel_shuffle_round_trip_and_torch():
    x = arr(2, 8, 3, 4)
    close(F.pixel_shuffle(tp.tensor(x), 2), TF.pixel_shuffle(torch.tensor(x), 2))
    y = arr(1, 2, 4, 6)
    close(F.pixel_unshuffle(tp.tensor(y), 2), TF.pixel_unshuffle(torch.tensor(y), 2))
    close(nn.PixelShuffle(2)(nn.PixelUnshuffle(2)(tp.tensor(y))), torch.tensor(y))
    with pytest.raises(ValueError, match="divisible"):
        F.pixel_shuffle(tp.ones(1, 3, 2, 2), 2)


ACTS = [("glu", {}), ("hardsigmoid", {}), ("hardswish", {}), ("mish", {}), ("selu", {}), ("celu", dict(alpha=0.7)),
        ("softsign", {}), ("tanhshrink", {}), ("hardshrink", dict(lambd=0.3)), ("softshrink", dict(lambd=0.3)),
        ("threshold", dict(threshold=0.1, value=-2.0)), ("softmin", dict(dim=1))]


@pytest.mark.parametrize("name, kw", ACTS)
@pytest.mark.parametrize("shape", [(3, 4), (0, 4), (2, 6)])
def test_activations_match_torch(name, kw, shape):
    x = arr(*shape) * 3
    close(getattr(F, name)(tp.tensor(x), **kw), getattr(TF, name)(torch.tensor(x), **kw))


@pytest.mark.parametrize("name, kw", [a for a in ACTS if a[0] not in ("hardshrink", "softshrink", "threshold")])
def test_activation_grads_match_torch(name, kw):
    x = arr(3, 4) * 3
    tx = torch.tensor(x, requires_grad=True)
    getattr(TF, name)(tx, **kw).sum().backward()
    close(grad(lambda t: getattr(F, name)(t, **kw).sum())(tp.tensor(x)), tx.grad, 1e-6)  # torch: float32 constants


def test_activation_modules_and_prelu():
    x = arr(2, 4, 4)
    for ours, theirs in ((nn.GLU(1), torch.nn.GLU(1)), (nn.Mish(), torch.nn.Mish()),
                         (nn.SELU(), torch.nn.SELU()), (nn.Hardswish(), torch.nn.Hardswish()),
                         (nn.Softsign(), torch.nn.Softsign()), (nn.Threshold(0.2, 1.0), torch.nn.Threshold(0.2, 1.0)),
                         (nn.Softmin(-1), torch.nn.Softmin(-1))):
        close(ours(tp.tensor(x)), theirs(torch.tensor(x)), 1e-7)  # torch's hardswish/mish: float32 constants
    p, tpre = nn.PReLU(4, dtype=tp.float64), torch.nn.PReLU(4).double()
    with torch.no_grad():
        tpre.weight.copy_(torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64))
    p.weight.data.copy_(tp.tensor([0.1, 0.2, 0.3, 0.4], dtype=tp.float64))
    close(p(tp.tensor(x)), tpre(torch.tensor(x)))
    close(nn.PReLU(dtype=tp.float64)(tp.tensor(x)), torch.nn.PReLU().double()(torch.tensor(x)))
    # the learned slope's gradient, through backward
    out = p(tp.tensor(x)).sum()
    out.backward()
    tpre(torch.tensor(x)).sum().backward()
    close(p.weight.grad, tpre.weight.grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_match_torch(reduction):
    a, b = arr(4, 3), arr(4, 3)
    for kw in ({}, dict(beta=0.5), dict(beta=0.0)):
        close(F.smooth_l1_loss(tp.tensor(a), tp.tensor(b), reduction=reduction, **kw),
              TF.smooth_l1_loss(torch.tensor(a), torch.tensor(b), reduction=reduction, **kw))
    close(F.huber_loss(tp.tensor(a), tp.tensor(b), reduction=reduction, delta=0.7),
          TF.huber_loss(torch.tensor(a), torch.tensor(b), reduction=reduction, delta=0.7))
    logp = np.log(np.abs(a) / np.abs(a).sum(1, keepdims=True))
    q = np.abs(b) / np.abs(b).sum(1, keepdims=True)
    q[0, 0] = 0.0
    close(F.kl_div(tp.tensor(logp), tp.tensor(q), reduction=reduction),
          TF.kl_div(torch.tensor(logp), torch.tensor(q), reduction=reduction))
    close(F.kl_div(tp.tensor(logp), tp.tensor(np.log(q + 1e-3)), reduction=reduction, log_target=True),
          TF.kl_div(torch.tensor(logp), torch.tensor(np.log(q + 1e-3)), reduction=reduction, log_target=True))


def test_loss_modules_and_batchmean():
    a, b = arr(4, 3), np.abs(arr(4, 3))
    close(nn.SmoothL1Loss(beta=0.3)(tp.tensor(a), tp.tensor(b)), torch.nn.SmoothL1Loss(beta=0.3)(
        torch.tensor(a), torch.tensor(b)))
    close(nn.HuberLoss()(tp.tensor(a), tp.tensor(b)), torch.nn.HuberLoss()(torch.tensor(a), torch.tensor(b)))
    close(nn.KLDivLoss(reduction="batchmean")(tp.tensor(a), tp.tensor(b)),
          torch.nn.KLDivLoss(reduction="batchmean")(torch.tensor(a), torch.tensor(b)))


def test_distances_and_rms_norm_match_torch():
    a, b = arr(5, 4), arr(5, 4)
    close(F.cosine_similarity(tp.tensor(a), tp.tensor(b)), TF.cosine_similarity(torch.tensor(a), torch.tensor(b)))
    close(F.cosine_similarity(tp.tensor(a), tp.tensor(b[:1]), dim=-1),
          TF.cosine_similarity(torch.tensor(a), torch.tensor(b[:1]), dim=-1))
    for p in (1.0, 2.0, 3.0):
        close(F.pairwise_distance(tp.tensor(a), tp.tensor(b), p=p), TF.pairwise_distance(torch.tensor(a),
                                                                                        torch.tensor(b), p=p))
    close(nn.PairwiseDistance(keepdim=True)(tp.tensor(a), tp.tensor(b)),
          torch.nn.PairwiseDistance(keepdim=True)(torch.tensor(a), torch.tensor(b)))
    w = arr(4)
    close(F.rms_norm(tp.tensor(a), (4,), tp.tensor(w), eps=1e-6), TF.rms_norm(torch.tensor(a), (4,),
                                                                             torch.tensor(w), eps=1e-6))
    x3 = arr(2, 3, 4)
    close(F.rms_norm(tp.tensor(x3), (3, 4)), TF.rms_norm(torch.tensor(x3), (3, 4)))
    m, tm = nn.RMSNorm(4, dtype=tp.float64), torch.nn.RMSNorm(4).double()
    close(m(tp.tensor(a)), tm(torch.tensor(a)))


@pytest.mark.parametrize("fn, shape", [(F.dropout1d, (4, 16, 5)), (F.dropout2d, (4, 16, 3, 3))])
def test_channel_dropout_zeroes_whole_channels(fn, shape):
    tp.manual_seed(0)
    x = tp.ones(*shape)
    y = fn(x, 0.5).numpy()
    per_channel = y.reshape(shape[0], shape[1], -1)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert all(len(set(c.tolist())) == 1 for c in per_channel.reshape(-1, per_channel.shape[-1]))
    assert 0 < (per_channel[..., 0] == 0).mean() < 1
    assert np.array_equal(fn(x, 0.5, training=False).numpy(), x.numpy())
    assert np.array_equal(fn(x, 1.0).numpy(), np.zeros(shape))
    with pytest.raises(ValueError, match="probability"):
        fn(x, 1.5)
    drop = nn.Dropout2d(0.3) if fn is F.dropout2d else nn.Dropout1d(0.3)
    assert np.array_equal(drop.eval()(x).numpy(), x.numpy())


def test_gumbel_softmax_is_a_distribution_and_hard_is_one_hot_with_soft_grads():
    tp.manual_seed(1)
    logits = tp.tensor(arr(3, 5))
    y = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(y.sum(-1).numpy(), 1.0, rtol=1e-12)
    h = F.gumbel_softmax(logits, hard=True)
    assert sorted(np.unique(h.numpy()).tolist()) == [0.0, 1.0] and np.all(h.numpy().sum(-1) == 1)
