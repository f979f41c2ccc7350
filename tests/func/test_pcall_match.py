"""The plain call's repeated-signature path (round 11): a chain's latest argument signature is
checked by its generated `match` instead of being keyed, and a signature's latest entry is taken
when the trace key is equal, without a cache lookup. Every test alternates calls that a too-loose
check would confuse and compares each result with numpy by hand (float64) or the uncached call."""
import gc

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import _pipeline, grad, jacfwd, jacrev, vmap

RNG = np.random.default_rng(1101)


def _t(a, dtype=np.float32):
    return tp.from_numpy(np.ascontiguousarray(a, dtype=dtype))


def _mlp_loss(x, ps):  # sum(tanh(x @ w + b)) over two layers
    for w, b in ps:
        x = tp.tanh(x @ w + b)
    return x.sum()


def _mlp_grad_x(x, ps):  # the float64 oracle of d _mlp_loss / dx
    acts = [np.asarray(x, np.float64)]
    pre = []
    for w, b in ps:
        z = acts[-1] @ w + b
        pre.append(z)
        acts.append(np.tanh(z))
    g = np.ones_like(acts[-1])
    for (w, _), z in zip(reversed(ps), reversed(pre)):
        g = (g * (1 - np.tanh(z) ** 2)) @ w.T
    return g


def _params(d, h):
    return [(RNG.standard_normal((d, h)) / np.sqrt(d), RNG.standard_normal(h)),
            (RNG.standard_normal((h, h)) / np.sqrt(h), RNG.standard_normal(h))]


def _tp_params(ps, container=list, dtype=np.float32):
    return container(tuple(_t(a, dtype) for a in layer) for layer in ps)


def test_matcher_accepts_its_signature_and_refuses_every_other():
    x, ps = tp.ones(3), [(tp.ones((3, 2)), tp.ones(2))]
    m = _pipeline._matcher((x, ps))
    same = (tp.zeros(3), [(tp.zeros((3, 2)), tp.zeros(2))])
    got = m(same)
    assert [a is b for a, b in zip(got, [same[0], same[1][0][0], same[1][0][1]])] == [True] * 3
    wide = tp.zeros((2, 3)).t()  # (3, 2), not C-contiguous
    refused = [
        (tp.zeros(4), [(tp.zeros((3, 2)), tp.zeros(2))]),            # shape
        (tp.zeros(3, dtype=tp.float64), [(tp.zeros((3, 2)), tp.zeros(2))]),  # dtype
        (tp.zeros(3), [(wide, tp.zeros(2))]),                          # strides
        (tp.zeros(3), ((tp.zeros((3, 2)), tp.zeros(2)),)),             # tuple for list
        (tp.zeros(3), [[tp.zeros((3, 2)), tp.zeros(2)]]),              # list for tuple
        (tp.zeros(3), [(tp.zeros((3, 2)), tp.zeros(2))] * 2),          # length
        (tp.zeros(3), [(tp.zeros((3, 2)), 2.0)]),                      # a non-tensor leaf
        (tp.zeros(3),),                                                # arity
        (tp.zeros(3), [(tp.zeros((3, 2)), tp.zeros(2))], None),
    ]
    for args in refused:
        assert m(args) is None, args
    d = _pipeline._matcher(({"w": tp.ones(2), "b": tp.ones(())},))
    assert len(d(({"w": tp.zeros(2), "b": tp.zeros(())},))) == 2
    assert d(({"b": tp.zeros(()), "w": tp.zeros(2)},)) is None  # insertion order is part of the key
    assert d(({"w": tp.zeros(2)},)) is None
    assert _pipeline._matcher((tp.ones(2), "static")) is None  # only all-tensor trees are matched
    many = tuple(tp.ones(1) for _ in range(_pipeline._MATCH_LEAVES + 1))
    assert _pipeline._matcher(many) is None


def test_matcher_handles_empty_zero_d_and_size_one_tensors():
    for shape in [(), (0,), (1,), (1, 1), (0, 3)]:
        m = _pipeline._matcher((tp.ones(shape),))
        assert m((tp.zeros(shape),)) is not None
        assert m((tp.zeros(shape + (1,)),)) is None


def test_matcher_refuses_traced_and_subclassed_tensors():
    m = _pipeline._matcher((tp.ones(2),))

    class Sub(tp.Tensor):
        pass

    sub = tp.ones(2)
    sub.__class__ = Sub
    assert m((sub,)) is None
    seen = []
    tp.compile(lambda x: seen.append(m((x,))) or x + 1)(tp.ones(2))
    assert seen == [None]


def test_alternating_signatures_give_each_call_its_own_values():
    d, h = 3, 4
    ps64 = _params(d, h)
    g = grad(_mlp_loss)
    for _ in range(3):
        for dtype in (np.float32, np.float64):
            for container in (list, tuple):
                x = RNG.standard_normal(d)
                ps = _tp_params(ps64, container, dtype)
                out = g(_t(x, dtype), ps)
                assert out.dtype == (tp.float32 if dtype == np.float32 else tp.float64)
                tol = 1e-4 if dtype == np.float32 else 1e-10
                np.testing.assert_allclose(out.numpy(), _mlp_grad_x(x, ps64), rtol=tol, atol=tol)
        # a non-contiguous x of the same shape: refused by the matcher, keyed by its layout
        base = RNG.standard_normal((d, 2))
        xs = _t(base)[:, 1]
        np.testing.assert_allclose(g(xs, _tp_params(ps64)).numpy(), _mlp_grad_x(base[:, 1], ps64),
                                   rtol=1e-4, atol=1e-5)
        # another width: another signature; then the first again
        ps5 = _params(5, h)
        x5 = RNG.standard_normal(5)
        np.testing.assert_allclose(g(_t(x5), _tp_params(ps5)).numpy(), _mlp_grad_x(x5, ps5), rtol=1e-4, atol=1e-5)


SCALE = 2.0


def _scaled(x):
    return (x * x * SCALE).sum()


def test_a_changed_global_is_not_the_latest_entry():
    global SCALE
    x = RNG.standard_normal(4)
    try:
        for _ in range(2):
            for SCALE in (2.0, -1.5, 2.0, 0.25):
                np.testing.assert_allclose(grad(_scaled)(_t(x)).numpy(), 2 * SCALE * x, rtol=1e-5, atol=1e-6)
    finally:
        SCALE = 2.0


def test_an_in_place_updated_capture_and_new_arguments_are_read_at_every_call():
    w = _t(RNG.standard_normal((3, 3)))
    f = jacrev(lambda x: tp.tanh(w @ x))
    for _ in range(4):
        x = RNG.standard_normal(3)
        wn = w.numpy().astype(np.float64)
        expect = (1 - np.tanh(wn @ x) ** 2)[:, None] * wn
        np.testing.assert_allclose(f(_t(x)).numpy(), expect, rtol=1e-4, atol=1e-5)
        w.mul_(1.5)


def test_a_repeated_call_counts_as_a_hit_and_branches_are_separate_entries():
    def f(x):
        return (x * x).sum() if float(x.sum()) > 0 else (x * x * x).sum()

    g = grad(f)
    x = RNG.standard_normal(3)
    pos, neg = np.abs(x) + 0.1, -np.abs(x) - 0.1
    g(_t(pos))
    hits = _pipeline.stats()["outermost"][0]
    for _ in range(3):
        np.testing.assert_allclose(g(_t(pos)).numpy(), 2 * pos, rtol=1e-5)
        np.testing.assert_allclose(g(_t(neg)).numpy(), 3 * neg ** 2, rtol=1e-5)
    assert _pipeline.stats()["outermost"][0] >= hits + 5


def test_an_entry_dropped_by_the_lru_is_freed_and_rebuilt(monkeypatch):
    monkeypatch.setattr(_pipeline._OUTERMOST, "maxsize", 1)
    x = RNG.standard_normal(3)
    jf = jacfwd(lambda v: v * v)
    np.testing.assert_allclose(jf(_t(x)).numpy(), np.diag(2 * x), rtol=1e-5)
    sig = _pipeline._PLANS[jf._tp_chain[0]].last
    assert sig is not None and sig.last is not None
    entry_ref = sig.last[1]
    assert entry_ref() is not None
    other = jacrev(lambda v: v.sum() * v)  # another chain's entry evicts the first one
    np.testing.assert_allclose(other(_t(x)).numpy(), np.eye(3) * x.sum() + x[:, None], rtol=1e-5)
    gc.collect()
    assert entry_ref() is None  # the signature's weak reference kept nothing alive
    misses = _pipeline.stats()["outermost"][1]
    np.testing.assert_allclose(jf(_t(x)).numpy(), np.diag(2 * x), rtol=1e-5)
    assert _pipeline.stats()["outermost"][1] == misses + 1


def test_vmap_of_grad_takes_the_repeated_path_with_its_per_sample_types():
    k, d = 4, 3
    ws = RNG.standard_normal((k, d))
    f = vmap(grad(lambda w, x: (tp.tanh(w * x)).sum()), in_dims=(0, None))
    for _ in range(3):
        x = RNG.standard_normal(d)
        expect = (1 - np.tanh(ws * x) ** 2) * x
        np.testing.assert_allclose(f(_t(ws), _t(x)).numpy(), expect, rtol=1e-4, atol=1e-5)
        # another batch size: another signature, its own per-sample types
        np.testing.assert_allclose(f(_t(ws[:2]), _t(x)).numpy(), expect[:2], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="vmap"):
        f(_t(ws), _t(RNG.standard_normal(d + 1)))


def test_a_strided_capture_takes_the_executables_general_call():
    base = RNG.standard_normal((3, 3))
    wt = _t(base).t()  # a transposed view: its array is not C-contiguous
    f = jacrev(lambda x: tp.tanh(wt @ x))
    for _ in range(3):
        x = RNG.standard_normal(3)
        w = base.T
        np.testing.assert_allclose(f(_t(x)).numpy(), (1 - np.tanh(w @ x) ** 2)[:, None] * w, rtol=1e-4, atol=1e-5)


def _power(k):
    def f(x):
        y = x
        for _ in range(k - 1):
            y = y * x
        return y.sum()

    return f


def test_a_hot_entry_keeps_its_place_in_the_lru_while_others_come_and_go(monkeypatch):
    monkeypatch.setattr(_pipeline._OUTERMOST, "maxsize", 2)
    hot = grad(_power(2))
    x, xh = RNG.standard_normal(3), RNG.standard_normal(4)  # (the hot call has a signature of its own)
    np.testing.assert_allclose(hot(_t(xh)).numpy(), 2 * xh, rtol=1e-5)
    hot_entry = _pipeline._OUTERMOST._last
    for k in range(3, 9):  # each a new trace structure: a miss that evicts the least recently used entry
        misses = _pipeline.stats()["outermost"][1]
        np.testing.assert_allclose(grad(_power(k))(_t(x)).numpy(), k * x ** (k - 1), rtol=1e-4)
        np.testing.assert_allclose(hot(_t(xh)).numpy(), 2 * xh, rtol=1e-5)
        assert _pipeline.stats()["outermost"][1] == misses + 1
        # the hot entry was never evicted: every call of it counted as a use
        assert any(e is hot_entry for e in _pipeline._OUTERMOST._data.values())


def test_matcher_keeps_the_keys_of_every_dict_apart():
    t = tp.ones(2)
    for sig in [({}, {"a": t}), ({"a": t}, {}), ({"a": {}}, {"a": t}), ([{}], {"b": t})]:
        m = _pipeline._matcher(sig)
        assert m(sig) is not None
        assert m(tuple(reversed(sig))) is None, sig
    assert _pipeline._matcher(({}, {}))(({}, {})) == []
    m = _pipeline._matcher(({}, {"a": t}))
    assert m(({"a": t}, {"a": t})) is None


def test_dict_arguments_alternating_with_an_empty_dict_are_not_confused():
    def f(a, b):  # d/db["w"] = 2 b["w"] + the sum of a's values; d/da[k] = b["w"]
        total = (b["w"] * b["w"]).sum()
        for v in a.values():
            total = total + (v * b["w"]).sum()
        return total

    g = grad(f, argnums=1)
    w, v = RNG.standard_normal(3), RNG.standard_normal(3)
    for _ in range(3):
        np.testing.assert_allclose(g({}, {"w": _t(w)})["w"].numpy(), 2 * w, rtol=1e-5)
        np.testing.assert_allclose(g({"w": _t(v)}, {"w": _t(w)})["w"].numpy(), 2 * w + v, rtol=1e-5, atol=1e-6)
        ga = grad(f, argnums=0)({"w": _t(v)}, {"w": _t(w)})
        np.testing.assert_allclose(ga["w"].numpy(), w, rtol=1e-6)


class _Opaque:  # a non-tensor aux output that cannot be hashed (so it cannot key an entry)
    __hash__ = None

    def __init__(self, k):
        self.k = k


def test_an_unhashable_aux_output_is_served_uncached_at_every_call():
    g = grad(lambda x, k: ((x * x * k).sum(), _Opaque(k)), has_aux=True)
    x = RNG.standard_normal(3)
    for k in (1.0, 2.0, 1.0, 3.0):
        got, aux = g(_t(x), k)
        np.testing.assert_allclose(got.numpy(), 2 * k * x, rtol=1e-5)
        assert isinstance(aux, _Opaque) and aux.k == k


def test_the_benchmarks_phase_split_runs(monkeypatch, capsys):
    monkeypatch.setenv("TP_BENCH_THREADS", "default")  # (as the bench smoke test: leave the threads alone)
    import tensorplay.codegen.executable as ce
    from tensorplay.tools.bench import bench_plain_transforms as B

    monkeypatch.setattr(ce, "_THREADS", ce._THREADS)
    status = B.main(["--quick", "--no-peers", "--phases", "--sample-ms", "0.2", "--only", "ensemble", "jacrev",
                     "linearize"])
    out = capsys.readouterr().out
    assert status == 0, out
    split = out.split("== phases of the plain call")[1]
    assert split.count("plain call ") == 2 and "bare executable" in split and "residual copies" in split
