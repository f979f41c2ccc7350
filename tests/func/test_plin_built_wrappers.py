"""Transform wrappers kept on the function they wrap (`tensorplay.func._built`): a rebuilt
``grad(f)`` is the same wrapper and computes what a fresh build computes; anything that could
make two builds differ (other parameters, mutable in_dims, a decorator's copied ``__dict__``,
non-function callables) is built afresh."""
import functools
import gc
import weakref

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import grad, grad_and_value, hessian, jacfwd, jacrev, vmap
from tensorplay.func import _built

X = tp.tensor([1.0, 2.0, 3.0])


def cube_sum(x):
    return (x ** 3).sum()


def two_args(x, y):
    return (x * y * y).sum()


@pytest.mark.parametrize("build", [
    lambda f: grad(f), lambda f: grad(f, 0, True), lambda f: grad_and_value(f), lambda f: jacrev(f),
    lambda f: jacrev(f, chunk_size=2), lambda f: jacfwd(f), lambda f: hessian(f),
    lambda f: vmap(f), lambda f: vmap(f, in_dims=(0, None)), lambda f: vmap(grad(f), in_dims=(0, None))])
def test_a_rebuilt_wrapper_is_the_same_one(build):
    def f(x, *rest):
        return (x * x).sum()
    assert build(f) is build(f)


def test_different_parameters_are_different_wrappers_with_their_own_values():
    y = tp.tensor([2.0, 1.0, 0.5])
    g0, g1, g01 = grad(two_args, 0), grad(two_args, 1), grad(two_args, (0, 1))
    assert len({id(g0), id(g1), id(g01)}) == 3
    xn, yn = X.numpy(), y.numpy()
    np.testing.assert_allclose(g0(X, y).numpy(), yn * yn, rtol=1e-6)
    np.testing.assert_allclose(g1(X, y).numpy(), 2 * xn * yn, rtol=1e-6)
    a, b = g01(X, y)
    np.testing.assert_allclose(a.numpy(), yn * yn, rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), 2 * xn * yn, rtol=1e-6)
    assert grad(cube_sum) is not grad_and_value(cube_sum)
    assert jacrev(cube_sum) is not jacrev(cube_sum, chunk_size=1)
    assert jacfwd(cube_sum) is not jacfwd(cube_sum, randomness="same")
    assert vmap(cube_sum) is not vmap(cube_sum, out_dims=0, in_dims=(0,))


def test_bool_parameters_are_not_the_int_ones():
    """``argnums=False`` is an error and ``has_aux=1`` is not keyed as True: neither may reuse
    the wrapper of ``argnums=0`` / ``has_aux=True``."""
    def f(x):
        return (x * x).sum(), x
    good = grad(f, 0, True)
    good(X)
    with pytest.raises(Exception, match="argnums"):
        grad(f, False, True)(X)
    assert grad(f, 0, 1) is not good
    g, aux = grad(f, 0, 1)(X)  # still behaves as has_aux
    np.testing.assert_allclose(g.numpy(), 2 * X.numpy())
    assert grad(f, (0,), True) is not good


def test_the_cached_wrapper_sees_a_changed_global_and_closure():
    scale = [2.0]

    def f(x):
        return (x * scale[0]).sum()
    first = grad(f)(X).numpy()
    scale[0] = 5.0
    again = grad(f)
    assert again is grad(f)
    np.testing.assert_array_equal(first, np.full(3, 2.0, np.float32))
    np.testing.assert_array_equal(again(X).numpy(), np.full(3, 5.0, np.float32))


def test_mutable_in_dims_are_never_reused():
    x, y = tp.ones(3, 2), tp.arange(6.0).reshape(2, 3)
    dims = [0, None]
    a = vmap(lambda p, q: p.sum() + q.sum(), in_dims=dims)
    f = lambda p, q: p.sum() + q.sum()  # noqa: E731
    v = vmap(f, in_dims=dims)
    assert vmap(f, in_dims=dims) is not v
    np.testing.assert_allclose(v(x, y).numpy(), np.full(3, 2.0 + 15.0))
    dims[0], dims[1] = None, 1  # the list a first wrapper holds changes: a new build must not see the old one
    w = vmap(f, in_dims=[0, None])
    np.testing.assert_allclose(w(x, y).numpy(), np.full(3, 2.0 + 15.0))
    assert a is not None


def test_a_decorator_copying_the_dict_is_not_taken_for_the_function():
    def f(x):
        return (x * x).sum()
    g = grad(f)
    assert _built.ATTR in f.__dict__

    @functools.wraps(f)
    def doubled(x):
        return 2 * f(x)
    assert _built.ATTR in doubled.__dict__  # (functools.wraps copied it)
    gd = grad(doubled)
    assert gd is not g
    np.testing.assert_allclose(gd(X).numpy(), 4 * X.numpy())
    np.testing.assert_allclose(g(X).numpy(), 2 * X.numpy())
    assert grad(doubled) is gd


def test_vmap_wrappers_do_not_carry_the_cache_of_their_function():
    def f(x):
        return x * 2
    grad(lambda x: x.sum())  # (unrelated)
    vmap(f)
    v = vmap(grad(cube_sum))
    assert _built.ATTR not in v.__dict__ or v.__dict__[_built.ATTR][0] == id(v)
    np.testing.assert_allclose(v(tp.ones(2, 3)).numpy(), np.full((2, 3), 3.0))


def test_non_function_callables_are_built_afresh():
    class Call:
        def __call__(self, x):
            return (x * x).sum()
    c = Call()
    assert grad(c) is not grad(c)
    assert not hasattr(c, _built.ATTR)
    np.testing.assert_allclose(grad(c)(X).numpy(), 2 * X.numpy())


def test_errors_are_raised_on_every_build():
    with pytest.raises(Exception):
        vmap(cube_sum, randomness="bogus")
    with pytest.raises(Exception):
        vmap(cube_sum, randomness="bogus")
    with pytest.raises(Exception):
        jacrev(cube_sum, chunk_size=0)
    with pytest.raises(Exception):
        jacrev(cube_sum, chunk_size=0)


def test_function_and_wrappers_are_freed_together():
    big = tp.ones(1000)

    def make():
        def f(x):
            return (x * big).sum()
        vmap(grad(f))(tp.ones(2, 1000))
        jacrev(f)
        return weakref.ref(f)
    ref = make()
    gc.collect()
    assert ref() is None


def test_at_most_limit_wrappers_per_function():
    def f(x, *rest):
        return x.sum()
    for k in range(3 * _built.LIMIT):
        vmap(f, in_dims=(0,) + (None,) * k)
    assert len(f.__dict__[_built.ATTR][1]) <= _built.LIMIT
