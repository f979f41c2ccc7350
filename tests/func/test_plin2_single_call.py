"""linearize's one-tangent `jvp_fn` fast path (round 12): `Executable.bound_call(prefix, single=True)`
returns the output array itself, or None for an argument that is not exactly of its input (the
jvp_fn then takes the general path). Values vs numpy in float64 and `jvp`; where the fast path is
taken and where it must not be; the residuals keep the linearization point's values."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import codegen
from tensorplay.func import _ad, jvp, linearize
from tests.tanh_mlp import mlp, mlp_jvp_np

RNG = np.random.default_rng(12)


def _t(a, dtype=np.float32):
    return tp.from_numpy(np.array(a, dtype=dtype))


def _exe(outputs=1):
    from tensorplay.ir import GraphBuilder, TensorType, float32

    b = GraphBuilder()
    w = b.add_input(TensorType((3,), float32))
    x = b.add_input(TensorType((3,), float32))
    outs = [b.mul(w, x), b.add(w, x)][:outputs]
    return codegen.compile_graph(b.build(outs))


def test_single_bound_call_returns_the_array_or_none():
    exe = _exe()
    w = np.array([1.0, 2.0, 3.0], np.float32)
    call = exe.bound_call((w,), single=True)
    x = np.array([0.5, -1.0, 4.0], np.float32)
    got = call(x)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, w * x)
    assert call(x) is not got  # a fresh buffer per call
    assert call(np.zeros(6, np.float32)[::2]) is None       # strided: not exactly the input
    assert call(x.astype(np.float64)) is None                # another dtype
    assert call(np.ones(4, np.float32)) is None              # another shape
    assert call(list(x)) is None                             # not an array
    np.testing.assert_array_equal(w, [1.0, 2.0, 3.0])
    # the list form still coerces such arguments (its general path)
    np.testing.assert_array_equal(exe.bound_call((w,))(np.zeros(6, np.float32)[::2])[0], [0.0, 0.0, 0.0])


def test_single_bound_call_needs_one_output_and_one_rest_input():
    w = np.ones(3, np.float32)
    assert _exe(2).bound_call((w,), single=True) is None      # two outputs
    assert _exe().bound_call((), single=True) is None         # two inputs left
    assert _exe().bound_call((w, w), single=True) is None     # none left


def _params(d):
    return [(_t(RNG.standard_normal((d, d)) / np.sqrt(d)), _t(0.1 * RNG.standard_normal(d))) for _ in range(2)]


@pytest.mark.parametrize("d", [1, 5, 256])
def test_fast_path_values_and_where_it_is_taken(d, monkeypatch):
    ps = _params(d)
    x_np = RNG.standard_normal(d).astype(np.float32)
    taken = []
    real = _ad._LinearPlan.bind_single
    monkeypatch.setattr(_ad._LinearPlan, "bind_single", lambda self, r: taken.append(1) or real(self, r))
    out, jvp_fn = linearize(lambda v: mlp(ps, v), _t(x_np))
    t_np = RNG.standard_normal(d).astype(np.float32)
    got = jvp_fn(_t(t_np))
    assert taken == [1] and got.__class__ is tp.Tensor and got.shape == (d,)
    want = mlp_jvp_np(ps, x_np, t_np)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    _, ref = jvp(lambda v: mlp(ps, v), (_t(x_np),), (_t(t_np),))
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    # must not be taken as is: a strided tangent goes the general way (same values), a float64
    # or misshapen one is an error naming linearize
    strided = tp.from_numpy(np.repeat(t_np, 2))[::2]
    np.testing.assert_allclose(jvp_fn(strided).numpy(), want, rtol=1e-4, atol=1e-5)
    with pytest.raises((TypeError, ValueError), match="linearize"):
        jvp_fn(_t(t_np, np.float64))
    with pytest.raises((TypeError, ValueError), match="linearize"):
        jvp_fn(_t(np.ones(d + 1)))
    with pytest.raises((TypeError, ValueError), match="linearize"):
        jvp_fn(_t(t_np), _t(t_np))
    assert taken == [1]  # bound once per linearization


def test_the_fast_path_keeps_the_linearization_point_after_in_place_writes():
    ps = _params(16)
    x_np = RNG.standard_normal(16).astype(np.float32)
    x = _t(x_np)
    saved = [(w.numpy().copy(), b.numpy().copy()) for w, b in ps]
    _, jvp_fn = linearize(lambda v: mlp(ps, v), x)
    t_np = RNG.standard_normal(16).astype(np.float32)
    before = jvp_fn(_t(t_np)).numpy().copy()
    x.add_(1.0)
    for w, _ in ps:
        w.mul_(-3.0)
    for _ in range(3):  # other linearizations of the same structure reuse the pooled buffers
        linearize(lambda v: mlp(ps, v), _t(RNG.standard_normal(16)))[1](_t(t_np))
    np.testing.assert_array_equal(jvp_fn(_t(t_np)).numpy(), before)
    ref_ps = [(_t(w), _t(b)) for w, b in saved]
    np.testing.assert_allclose(before, mlp_jvp_np(ref_ps, x_np, t_np), rtol=1e-4, atol=1e-5)


def test_a_traced_tangent_under_a_transform_is_not_the_fast_path():
    ps = _params(4)
    x = _t(RNG.standard_normal(4))
    _, jvp_fn = linearize(lambda v: mlp(ps, v), x)
    t = RNG.standard_normal((3, 4)).astype(np.float32)
    got = tp.func.vmap(jvp_fn)(_t(t))
    want = np.stack([jvp_fn(_t(r)).numpy() for r in t])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
