"""The runnable examples in the docstrings of the differentiation passes and API."""
import doctest
import importlib

import pytest

MODULES = ["tensorplay.ir.passes.jvp", "tensorplay.ir.passes.partial_eval", "tensorplay.ir.passes.transpose", "tensorplay.ir.passes.reverse",
           "tensorplay.ir.passes.simplify", "tensorplay.func._pipeline", "tensorplay._exec",
           "tensorplay.func._ad"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_every_public_function_has_an_example():
    missing = []
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if callable(obj) and not isinstance(obj, type) and ">>>" not in (obj.__doc__ or ""):
                missing.append(f"{name}.{attr}")
    assert not missing, f"public functions without a runnable example: {missing}"
