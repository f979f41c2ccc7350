"""The attention, normalization, resizing and clipping layers against torch with the same weights.

Forward values, the input gradient (tensorplay.func.grad vs torch autograd), vmap against
loop-and-stack and tp.compile against eager. Skipped when torch is not installed.
"""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tensorplay as tp  # noqa: E402
import tensorplay.nn as nn  # noqa: E402
import tensorplay.nn.functional as F  # noqa: E402
from tensorplay.func import functional_call, grad, vmap  # noqa: E402

from torch_oracle_util import check, copy_from_torch, torch_float64  # noqa: E402,F401  (autouse fixture)

RNG = np.random.default_rng(0)


def both(shape):
    arr = RNG.standard_normal(shape)
    return tp.tensor(arr), torch.tensor(arr, requires_grad=True)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def check_module(make, shape, tol=1e-9, train=False, transforms=True):
    """Forward and input gradient against torch; vmap and compile against eager.

    Attention modules are called as self-attention, ``m(x, x, x)``, and compared on their output."""
    tm = make(torch.nn)
    m = copy_from_torch(make(nn).double(), tm)
    for mod in (tm, m):
        mod.train(train)
    attention = isinstance(m, nn.MultiheadAttention)

    def call(mod, v):
        return _first(mod(v, v, v) if attention else mod(v))

    x, tx = both(shape)
    out, tout = call(m, x), call(tm, tx)
    check(out, tout, tol)
    w = RNG.standard_normal(tuple(tout.shape))
    (tout * torch.tensor(w)).sum().backward()
    g = grad(lambda v: call(m, v).mul(tp.tensor(w)).sum())(x)
    check(g, tx.grad, tol * 10)
    if not transforms:
        return
    stacked = tp.stack([x, x * 2])
    batched = vmap(lambda v: call(m, v))(stacked)
    loop = tp.stack([call(m, stacked[i]) for i in range(2)])
    np.testing.assert_allclose(batched.numpy(), loop.numpy(), rtol=1e-10, atol=1e-10)
    compiled = tp.compile(lambda v: call(m, v))(x)
    np.testing.assert_allclose(compiled.numpy(), out.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("make, shape", [
    (lambda m: m.GroupNorm(2, 6), (3, 6, 5)),
    (lambda m: m.GroupNorm(3, 6, eps=1e-3), (2, 6, 3, 4)),
    (lambda m: m.GroupNorm(1, 4, affine=False), (2, 4)),
    (lambda m: m.InstanceNorm1d(3), (2, 3, 7)),
    (lambda m: m.InstanceNorm1d(3, affine=True), (3, 7)),
    (lambda m: m.InstanceNorm2d(4, affine=True), (2, 4, 3, 5)),
    (lambda m: m.AdaptiveAvgPool1d(3), (2, 4, 10)),
    (lambda m: m.AdaptiveAvgPool1d(4), (3, 7)),
    (lambda m: m.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 5)),
    (lambda m: m.AdaptiveAvgPool2d(1), (2, 3, 4, 4)),
    (lambda m: m.AdaptiveAvgPool2d((None, 3)), (1, 2, 4, 8)),
    (lambda m: m.Upsample(scale_factor=2), (1, 2, 3, 4)),
    (lambda m: m.Upsample(size=(5, 7), mode="nearest"), (1, 2, 3, 4)),
    (lambda m: m.Upsample(size=(5, 7), mode="bilinear"), (2, 2, 3, 4)),
    (lambda m: m.Upsample(size=(2, 3), mode="bilinear"), (2, 2, 5, 7)),
    (lambda m: m.Upsample(scale_factor=1.7, mode="bilinear", align_corners=True), (1, 3, 4, 5)),
    (lambda m: m.Upsample(scale_factor=(2.5, 0.6), mode="bilinear"), (1, 1, 4, 5)),
    (lambda m: m.Upsample(size=9, mode="linear"), (2, 3, 4)),
    (lambda m: m.Upsample(scale_factor=3, mode="linear", align_corners=True), (2, 3, 4)),
    (lambda m: m.Upsample(size=(3, 4, 5), mode="trilinear"), (1, 1, 2, 3, 2)),
    (lambda m: m.Upsample(scale_factor=1.5, mode="nearest-exact"), (1, 2, 5, 3)),
    (lambda m: m.MultiheadAttention(8, 2), (5, 3, 8)),
    (lambda m: m.MultiheadAttention(6, 3, batch_first=True, bias=False), (2, 4, 6)),
    (lambda m: m.MultiheadAttention(4, 1), (6, 4)),
    (lambda m: m.TransformerEncoderLayer(8, 2, 16), (5, 2, 8)),
    (lambda m: m.TransformerEncoderLayer(8, 4, 12, activation="gelu", norm_first=True, batch_first=True),
     (2, 5, 8)),
])
def test_modules_match_torch(make, shape):
    check_module(make, shape)


def test_instance_norm_running_stats_match_torch():
    tm = torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.3)
    m = copy_from_torch(nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.3).double(), tm)
    for _ in range(3):
        x, tx = both((4, 3, 2, 5))
        check(m(x), tm(tx))
    check(m.running_mean, tm.running_mean)
    check(m.running_var, tm.running_var)
    m.eval()
    tm.eval()
    x, tx = both((2, 3, 2, 5))
    check(m(x), tm(tx))


def test_interpolate_functional_options_match_torch():
    x, tx = both((1, 2, 6, 5))
    cases = [dict(size=(4, 4), mode="area"), dict(scale_factor=0.5, mode="bilinear", recompute_scale_factor=True),
             dict(scale_factor=1.3, mode="nearest"), dict(scale_factor=2.0, mode="nearest", recompute_scale_factor=True),
             dict(size=(1, 1), mode="bilinear", align_corners=True), dict(size=(6, 5), mode="bilinear")]
    for kw in cases:
        check(F.interpolate(x, **kw), torch.nn.functional.interpolate(tx, **kw), 1e-12)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="expects a 3-d input"):
        F.interpolate(x, size=3, mode="linear")
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.interpolate(x, size=3, mode="bicubic")
    with pytest.raises(ValueError, match="align_corners"):
        F.interpolate(x, size=3, align_corners=True)


@pytest.mark.parametrize("kw", [
    {}, {"is_causal": True}, {"scale": 0.3}, {"mask": "bool"}, {"mask": "float"}, {"gqa": True},
])
def test_scaled_dot_product_attention_matches_torch(kw):
    q, tq = both((2, 4, 5, 3))
    kv_heads = 2 if kw.get("gqa") else 4
    k, tk = both((2, kv_heads, 6, 3))
    v, tv = both((2, kv_heads, 6, 2))
    args = dict(is_causal=kw.get("is_causal", False), scale=kw.get("scale"))
    if kw.get("gqa"):
        args["enable_gqa"] = True
    mask = tmask = None
    if kw.get("mask") == "bool":
        arr = RNG.random((5, 6)) > 0.3
        arr[:, 0] = True
        mask, tmask = tp.tensor(arr), torch.tensor(arr)
    elif kw.get("mask") == "float":
        arr = RNG.standard_normal((2, 1, 5, 6))
        mask, tmask = tp.tensor(arr), torch.tensor(arr)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **args)
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask, **args)
    check(out, tout, 1e-12)
    tout.sum().backward()
    g = grad(lambda a: F.scaled_dot_product_attention(a, k, v, attn_mask=mask, **args).sum())(q)
    check(g, tq.grad, 1e-10)
    with pytest.raises(RuntimeError, match="is_causal"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=tp.ones(5, 6), is_causal=True)


@pytest.mark.parametrize("opts", [
    dict(), dict(average_attn_weights=False), dict(masks=True), dict(kv_dims=True), dict(unbatched=True),
])
def test_multihead_attention_options_match_torch(opts):
    E, H, L, S, N = 6, 2, 4, 5, 3
    kw = dict(kdim=3, vdim=4) if opts.get("kv_dims") else {}
    tm = torch.nn.MultiheadAttention(E, H, batch_first=True, **kw)
    m = copy_from_torch(nn.MultiheadAttention(E, H, batch_first=True, **kw).double(), tm)
    lead = () if opts.get("unbatched") else (N,)
    q, tq = both(lead + (L, E))
    k, tk = both(lead + (S, kw.get("kdim", E)))
    v, tv = both(lead + (S, kw.get("vdim", E)))
    call = dict(average_attn_weights=opts.get("average_attn_weights", True))
    tcall = dict(call)
    if opts.get("masks"):
        am = RNG.random((L, S)) > 0.7
        am[:, 0] = False
        kpm = np.zeros((N, S), dtype=bool)
        kpm[0, -2:] = True
        call.update(attn_mask=tp.tensor(am), key_padding_mask=tp.tensor(kpm))
        tcall.update(attn_mask=torch.tensor(am), key_padding_mask=torch.tensor(kpm))
    out, w = m(q, k, v, **call)
    tout, tw = tm(tq, tk, tv, **tcall)
    check(out, tout)
    check(w, tw)
    out2, none = m(q, k, v, need_weights=False, **{k_: v_ for k_, v_ in call.items() if k_ != "average_attn_weights"})
    assert none is None
    check(out2, tout)


def test_multihead_attention_parameter_names_and_init_match_torch():
    tm = torch.nn.MultiheadAttention(8, 2, kdim=3, vdim=5)
    m = nn.MultiheadAttention(8, 2, kdim=3, vdim=5)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [tuple(p.shape) for p in m.parameters()] == [tuple(p.shape) for p in tm.parameters()]
    m2 = nn.MultiheadAttention(8, 2)
    bound = math.sqrt(6 / (8 + 24))
    assert float(m2.in_proj_weight.abs().max()) <= bound and float(m2.in_proj_bias.abs().max()) == 0.0
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(7, 2)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        m2(tp.ones(2, 8), tp.ones(2, 8), tp.ones(2, 8), is_causal=True)


def test_transformer_encoder_layer_with_masks_matches_torch():
    tm = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
    m = copy_from_torch(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).double(), tm).eval()
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    x, tx = both((2, 5, 8))
    causal = np.triu(np.ones((5, 5), dtype=bool), 1)
    kpm = np.array([[False] * 5, [False, False, False, True, True]])
    with torch.no_grad():
        want = tm(tx, src_mask=torch.tensor(causal), src_key_padding_mask=torch.tensor(kpm), is_causal=True)
    got = m(x, src_mask=tp.tensor(causal), src_key_padding_mask=tp.tensor(kpm), is_causal=True)
    check(got, want)
    enc, tenc = nn.TransformerEncoder(m, 2).eval(), torch.nn.TransformerEncoder(tm, 2, enable_nested_tensor=False)
    copy_from_torch(enc.double(), tenc.eval())
    with torch.no_grad():
        check(enc(x), tenc(tx))


def test_transformer_layer_dropout_draws_in_train_mode_only():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.5)
    x = tp.randn(3, 2, 4)
    a, b = layer(x), layer(x)
    assert not np.allclose(a.numpy(), b.numpy())
    assert np.allclose(layer.eval()(x).numpy(), layer(x).numpy())


def test_alpha_dropout_keeps_mean_and_variance_and_matches_torchs_affine_map():
    tp.manual_seed(0)
    x = tp.randn(200_000, dtype=tp.float64)
    y = F.alpha_dropout(x, 0.2, training=True)
    assert abs(float(y.mean())) < 0.01 and abs(float(y.var()) - 1.0) < 0.02
    alpha, p = 1.7580993408473766, 0.2
    a = (1 / ((alpha ** 2 * p + 1) * (1 - p))) ** 0.5
    dropped_value = -alpha * a + alpha * a * p
    yv, xv = y.numpy(), x.numpy()
    kept = np.isclose(yv, xv * a + alpha * a * p)
    assert np.all(kept | np.isclose(yv, dropped_value))
    assert abs((~kept).mean() - p) < 0.005
    assert nn.AlphaDropout(0.3).eval()(x) is x
    torch.manual_seed(0)
    ty = torch.nn.functional.alpha_dropout(torch.tensor(xv), 0.2, training=True).numpy()
    assert np.all(np.isclose(ty, xv * a + alpha * a * p) | np.isclose(ty, dropped_value))


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    shapes = [(3, 2), (4,), ()]
    arrays = [RNG.standard_normal(s) for s in shapes]
    grads = [RNG.standard_normal(s) * 3 for s in shapes]
    ours = [tp.tensor(a) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    for p, t, g in zip(ours, theirs, grads):
        p.grad, t.grad = tp.tensor(g), torch.tensor(g)
    total = nn.utils.clip_grad_norm_(ours, 0.5, norm_type=norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs, 0.5, norm_type=norm_type)
    check(total, ttotal, 1e-12)
    for p, t in zip(ours, theirs):
        check(p.grad, t.grad, 1e-12)
    nn.utils.clip_grad_value_(ours, 0.1)
    torch.nn.utils.clip_grad_value_(theirs, 0.1)
    for p, t in zip(ours, theirs):
        check(p.grad, t.grad, 0)


def test_clip_grad_norm_errors_and_skips():
    w, untouched = tp.zeros(2), tp.ones(2)
    w.grad = tp.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([w, untouched], 1.0, error_if_nonfinite=True)
    assert "grad" not in untouched.__dict__
    assert nn.utils.clip_grad_norm_([tp.zeros(1)], 1.0).item() == 0.0


def test_parameters_to_vector_round_trip_matches_torch():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    ours = copy_from_torch(nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1)).double(), model)
    vec = nn.utils.parameters_to_vector(ours.parameters())
    check(vec, torch.nn.utils.parameters_to_vector(model.parameters()), 0)
    new = tp.arange(float(vec.shape[0]), dtype=tp.float64)
    nn.utils.vector_to_parameters(new, ours.parameters())
    torch.nn.utils.vector_to_parameters(torch.tensor(new.numpy()), model.parameters())
    for a, b in zip(ours.parameters(), model.parameters()):
        check(a, b, 0)
    with pytest.raises(ValueError, match="elements"):
        nn.utils.vector_to_parameters(tp.zeros(3), ours.parameters())


def test_group_norm_and_interpolate_under_grad_of_parameters():
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.GroupNorm(2, 4), nn.Upsample(scale_factor=2,
                                                                                          mode="bilinear"),
                          nn.AdaptiveAvgPool2d(1))
    params = dict(model.named_parameters())
    x = tp.randn(3, 2, 5, 5, dtype=tp.float32)
    g = grad(lambda p: functional_call(model, p, (x,)).sum())(params)
    assert list(g) == list(params)
    eps = 1e-3
    w = params["1.weight"]
    for i in range(4):
        bump = tp.zeros(4)
        bump[i] = eps
        hi = functional_call(model, {**params, "1.weight": w + bump}, (x,)).sum().item()
        lo = functional_call(model, {**params, "1.weight": w - bump}, (x,)).sum().item()
        assert abs((hi - lo) / (2 * eps) - g["1.weight"][i].item()) < 2e-2
