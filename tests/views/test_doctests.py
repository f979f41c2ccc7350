"""The examples in the docstrings of the views / in-place / functionalize / rearrange modules run."""
import doctest
import importlib

import pytest

MODULES = ["tensorplay._views", "tensorplay._layout", "tensorplay._state", "tensorplay._trace", "tensorplay._methods", "tensorplay.ops.scatter", "tensorplay.func._functionalize",
           "tensorplay.func._rearrange"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
