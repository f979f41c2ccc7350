"""Every vmap / chunk_vmap / debug_unwrap example of the spec (shared/spec), run as written."""
from __future__ import annotations

import contextlib
import doctest
import io

import pytest

import tensorplay


def _needs(*names):
    """The helpers an example uses must exist (a missing one fails the test)."""
    import tensorplay.func as func
    import tensorplay.nn  # noqa: F401

    for name in names:
        getattr(func, name)


def test_overview_ensemble_example():
    _needs("functional_call", "stack_module_state", "vmap")
    # --- verbatim from func-api-overview.md ---------------------------------------------------
    import tensorplay as tp
    import tensorplay.nn as nn
    from tensorplay.func import functional_call, stack_module_state, vmap

    models = [nn.Linear(3, 3) for _ in range(4)]
    stacked_params, stacked_buffers = stack_module_state(models)
    x = tp.randn(5, 3)

    def call_one(params, buffers, x):
        return functional_call(models[0], (params, buffers), (x,))

    ensemble_out = vmap(call_one, in_dims=(0, 0, None))(
        stacked_params, stacked_buffers, x
    )
    assert ensemble_out.shape == (4, 5, 3)
    # --- and the values are each model's own output -------------------------------------------
    for i, m in enumerate(models):
        expected = m(x).numpy()
        got = ensemble_out[i].numpy()
        assert abs(got - expected).max() < 1e-5


def test_overview_debug_unwrap_example():
    out_buf = io.StringIO()
    with contextlib.redirect_stdout(out_buf):
        # --- verbatim from func-api-overview.md -----------------------------------------------
        import tensorplay as tp
        from tensorplay.func import debug_unwrap, vmap

        def f(x):
            print(debug_unwrap(x).shape)   # the per-sample tensor, e.g. (3,)
            return x * 2

        out = vmap(f)(tp.randn(2, 3))
        assert out.shape == (2, 3)
    assert out_buf.getvalue().strip() == "tensorplay.Size(3)"


REFERENCE_VMAP = """
>>> def dot(x, y):
...     return (x * y).sum()
>>> x, y = tensorplay.randn(4, 3), tensorplay.randn(4, 3)
>>> vmap(dot)(x, y).shape
tensorplay.Size(4)
"""

REFERENCE_STACK_MODULE_STATE = """
>>> params, buffers = stack_module_state(models)
>>> def call(p, b, x):
...     return functional_call(base_model, (p, b), (x,))
>>> vmap(call)(params, buffers, batched_x).shape
tensorplay.Size(4, 2)
"""


def _run_doctest(text: str, globs: dict) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, globs, "spec", "func-api-reference.txt", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    out = io.StringIO()
    runner.run(test, out=out.write)
    assert runner.failures == 0, out.getvalue()


def test_reference_vmap_example():
    from tensorplay.func import vmap

    _run_doctest(REFERENCE_VMAP, {"tensorplay": tensorplay, "vmap": vmap})


def test_reference_stack_module_state_example():
    _needs("functional_call", "stack_module_state")
    from tensorplay.func import functional_call, stack_module_state, vmap

    # the example's free names: an ensemble, a base model of the same class, a batch of inputs
    models = [tensorplay.nn.Linear(3, 2) for _ in range(4)]
    _run_doctest(REFERENCE_STACK_MODULE_STATE, {
        "tensorplay": tensorplay, "vmap": vmap, "stack_module_state": stack_module_state,
        "functional_call": functional_call, "models": models, "base_model": models[0],
        "batched_x": tensorplay.randn(4, 3)})


def test_public_docstring_examples():
    """The docstrings of vmap, chunk_vmap, debug_unwrap and the batching pass are executable."""
    from tensorplay.ir.passes import batching
    import tensorplay.func._debug
    import tensorplay.func._vmap

    for mod in (tensorplay.func._vmap, tensorplay.func._debug, batching):
        result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, mod.__name__
        assert result.attempted > 0, mod.__name__
