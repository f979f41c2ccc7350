"""The examples in the docstrings of the tools modules run and print what they say."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["tensorplay.tools.fuzz", "tensorplay.tools.fuzz.ops", "tensorplay.tools.fuzz.program",
           "tensorplay.tools.fuzz.harness", "tensorplay.tools.fuzz.minimize", "tensorplay.tools.fuzz.reproducer",
           "tensorplay.tools.fuzz.campaign", "tensorplay.tools.fuzz.known", "tensorplay.tools.fuzz.soak",
           "tensorplay.tools.viz", "tensorplay.tools.cli_specs", "tensorplay.tools.op_table",
           "tensorplay.ir.constants", "tensorplay.ir.core"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch):
    monkeypatch.delenv("TENSORPLAY_BACKEND", raising=False)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} docstring examples failed"
