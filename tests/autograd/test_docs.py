"""The runnable examples in tensorplay.autograd's docstrings."""
import doctest
import importlib

import pytest

MODULES = ["tensorplay.autograd", "tensorplay.autograd.grad_mode", "tensorplay.autograd._tensor_api",
           "tensorplay.autograd._record", "tensorplay.autograd._engine"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
