"""`functionalize`: the caller's tensors and their views come back bit-identical; the result is
what the function returned; `remove` selects whether aliasing among arguments is kept."""
import subprocess
import sys

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.func as tpf
from tensorplay.func import functionalize



def test_spec_example_prints_unchanged_input():
    code = (
        "import tensorplay\n"
        "from tensorplay.func import functionalize\n"
        "def f(x):\n"
        "    x.add_(1)\n"
        "    return x\n"
        "x = tensorplay.zeros(3)\n"
        "out = functionalize(f)(x)\n"
        "print(repr(x))\n"
        "print(repr(out))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["tensor([0., 0., 0.])", "tensor([1., 1., 1.])"]


def _bump_through_views(a, b):
    a[0].add_(1)
    b.mul_(2)
    a.T[1].fill_(-1)
    return a * 1, b * 1


def test_arguments_and_their_views_are_bit_identical():
    x = tp.tensor(np.linspace(-1, 1, 12).reshape(3, 4))
    views = [x[1:], x.T, x[:, ::2], x.diagonal(), x.view(12)]
    before = [v.numpy().tobytes() for v in [x, *views]]
    a, b = functionalize(_bump_through_views)(x, x[2])
    assert [v.numpy().tobytes() for v in [x, *views]] == before
    ea, eb = _bump_through_views(*(lambda c: (c, c[2]))(x.clone()))
    np.testing.assert_array_equal(a.numpy(), ea.numpy())
    np.testing.assert_array_equal(b.numpy(), eb.numpy())


def test_returned_value_is_what_func_returned():
    def f(x, y):
        x.add_(y)
        return x, {"y": y, "n": 3}

    x, y = tp.zeros(2), tp.ones(2)
    out, extra = functionalize(f)(x, y)
    assert out.tolist() == [1, 1] and extra["y"].tolist() == [1, 1] and extra["n"] == 3
    assert x.tolist() == [0, 0]


def test_remove_modes_differ_only_in_aliasing_between_arguments():
    def f(a, b):
        b.fill_(7)        # b is a view of a: does the write reach a?
        return a.clone()

    base = tp.zeros(2, 3)
    kept = functionalize(f, remove="mutations")(base, base[1])
    detached = functionalize(f, remove="mutations_and_views")(base, base[1])
    np.testing.assert_array_equal(kept.numpy(), [[0, 0, 0], [7, 7, 7]])
    np.testing.assert_array_equal(detached.numpy(), np.zeros((2, 3)))
    assert base.sum().item() == 0
    # arguments sharing memory only through numpy (no tensorplay view relation) keep it as well
    arr = np.zeros(6)
    x, y = tp.from_numpy(arr), tp.from_numpy(arr[3:])
    assert functionalize(lambda x, y: (y.fill_(1), x * 1)[1])(x, y).tolist() == [0, 0, 0, 1, 1, 1]
    assert arr.sum() == 0


def test_invalid_remove_raises_value_error():
    for bad in ("views", "", None, "MUTATIONS"):
        with pytest.raises(ValueError, match="remove must be 'mutations' or 'mutations_and_views'"):
            functionalize(lambda x: x, remove=bad)


def test_expanded_arguments_stay_read_only():
    x = tp.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element"):
        functionalize(lambda t: t.add_(1))(x)


def test_under_compile_is_free_of_side_effects_and_of_write_backs():
    f = tp.compile(functionalize(lambda x: (x[0].add_(1), x.sum())[1]))
    x = tp.zeros(2, 2)
    assert f(x).item() == 2 and f(x).item() == 2
    assert x.sum().item() == 0
    assert f.get_graph(x).mutated == []


def test_under_vmap():
    xs = tp.zeros(3, 2)
    out = tpf.vmap(functionalize(lambda x: x.add_(1) * 2))(xs)
    np.testing.assert_array_equal(out.numpy(), np.full((3, 2), 2.0))
    assert xs.sum().item() == 0


def test_under_grad():
    def bump(x):
        x.add_(1)
        return x * 2

    x = tp.ones(3)
    np.testing.assert_array_equal(tpf.grad(lambda x: functionalize(bump)(x).sum())(x).numpy(), [2, 2, 2])
    assert x.tolist() == [1, 1, 1]
