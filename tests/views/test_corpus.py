"""The aliasing corpus under every execution mode: results and caller-visible state must agree.

Oracles: numpy (always) and PyTorch (when importable). Modes: eager, `tp.compile`,
`vmap` (against a loop over samples), `vmap` inside `tp.compile`, `grad` (against
torch autograd), and `functionalize` (eager and compiled: same result, caller's
tensors bit-identical).
"""
import functools

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.func as tpf

from .corpus import PROGRAMS, inputs

try:
    import torch
except ImportError:  # pragma: no cover - torch is an optional oracle
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
ids = [p.name for p in PROGRAMS]


def _np(t):
    return np.asarray(t.detach().numpy() if torch is not None and isinstance(t, torch.Tensor) else t.numpy())


def run_tp(prog, fn=None):
    """(result, x after, y after) of running `prog` (or `fn`) on fresh tensorplay inputs."""
    x, y = (tp.tensor(a) for a in inputs())
    out = (fn or functools.partial(prog.fn, tp))(x, y)
    return _np(out), x.numpy(), y.numpy()


def expected(prog):
    x, y = inputs()
    out = prog.oracle(x, y)
    return np.asarray(out), x, y


def check(got, want, exact_state=True):
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12, err_msg="result")
    assert got[0].shape == want[0].shape
    cmp = np.testing.assert_array_equal if exact_state else functools.partial(np.testing.assert_allclose, rtol=1e-12)
    cmp(got[1], want[1], err_msg="x after the call")
    cmp(got[2], want[2], err_msg="y after the call")


@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_eager_matches_numpy(prog):
    check(run_tp(prog), expected(prog))


@needs_torch
@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_torch_agrees_with_numpy_oracle(prog):
    """The oracle itself is checked against PyTorch."""
    x, y = (torch.tensor(a) for a in inputs())
    out = prog.fn(torch, x, y)
    check((_np(out), x.numpy(), y.numpy()), expected(prog))


@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_compile_matches_eager(prog):
    check(run_tp(prog, tp.compile(functools.partial(prog.fn, tp))), expected(prog))


def test_compile_returns_the_callers_tensor_or_a_view_of_it():
    x = tp.zeros(3, 4)
    out = tp.compile(lambda x: x.add_(1))(x)
    assert out is x
    v = tp.compile(lambda x: x[1, 1:])(x)
    assert v._base is x
    v.fill_(5)
    assert x[1, 3].item() == 5


def _batched_inputs():
    x, y = inputs()
    return np.stack([x, 0.75 - x[::-1]]), np.stack([y, -y])


def _vmap_case(prog, wrap):
    xs, ys = (tp.tensor(a) for a in _batched_inputs())
    got = wrap(tpf.vmap(functools.partial(prog.fn, tp)))(xs, ys)
    lx, ly = (tp.tensor(a) for a in _batched_inputs())
    loop = tp.stack([prog.fn(tp, lx[i], ly[i]) for i in range(2)])
    check((_np(got), xs.numpy(), ys.numpy()), (_np(loop), lx.numpy(), ly.numpy()))


@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_vmap_matches_loop(prog):
    _vmap_case(prog, lambda f: f)


@pytest.mark.parametrize("prog", PROGRAMS[::3], ids=ids[::3])
def test_vmap_inside_compile_matches_loop(prog):
    _vmap_case(prog, tp.compile)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compile"])
@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_functionalize_leaves_arguments_untouched(prog, compiled):
    x, y = (tp.tensor(a) for a in inputs())
    views = [x[1], x.T, x[:, ::2], y[1:]]
    before = [t.numpy().copy() for t in (x, y, *views)]
    f = tpf.functionalize(functools.partial(prog.fn, tp))
    out = (tp.compile(f) if compiled else f)(x, y)
    for t, b in zip((x, y, *views), before):
        np.testing.assert_array_equal(t.numpy(), b)
        assert t.numpy().tobytes() == b.tobytes()  # bit-identical
    np.testing.assert_allclose(_np(out), expected(prog)[0], rtol=1e-12, atol=1e-12)


def _reference_gradient(prog):
    """d sum(prog(x, y)) / d(x, y): torch autograd, or central differences of the numpy oracle where
    torch's autograd refuses in-place writes (into the views `split`/`unbind` return)."""
    if torch is not None:
        tx, ty = (torch.tensor(a, requires_grad=True) for a in inputs())
        try:
            out = prog.fn(torch, tx.clone(), ty.clone()).sum()  # clones: torch forbids writes into leaves
        except RuntimeError:
            pass
        else:
            grads = torch.autograd.grad(out, (tx, ty), allow_unused=True)
            return [np.zeros(a.shape) if g is None else g.numpy() for g, a in zip(grads, inputs())], 1e-12
    base = inputs()
    grads = []
    for k in range(2):
        g = np.zeros(base[k].shape)
        for i in np.ndindex(*g.shape):
            plus, minus = [a.copy() for a in base], [a.copy() for a in base]
            plus[k][i] += 1e-6
            minus[k][i] -= 1e-6
            g[i] = (prog.oracle(*plus).sum() - prog.oracle(*minus).sum()) / 2e-6
        grads.append(g)
    return grads, 1e-6


@pytest.mark.parametrize("prog", [p for p in PROGRAMS if p.differentiable],
                         ids=[p.name for p in PROGRAMS if p.differentiable])
def test_grad_matches_reference_and_writes_back(prog):
    x, y = (tp.tensor(a) for a in inputs())
    gx, gy = tpf.grad(lambda x, y: prog.fn(tp, x, y).sum(), argnums=(0, 1))(x, y)
    want, tol = _reference_gradient(prog)
    for g, w in zip((gx, gy), want):
        np.testing.assert_allclose(g.numpy(), w, rtol=tol, atol=tol)
    _, x_after, y_after = expected(prog)
    np.testing.assert_array_equal(x.numpy(), x_after)   # the writes reached the caller, as in eager mode
    np.testing.assert_array_equal(y.numpy(), y_after)
