"""The vmap suite runs on the reference interpreter unless TENSORPLAY_BACKEND is set explicitly.

vmap is a graph pass; the interpreter is the oracle for it. The compiled
backend is exercised by running the suite with ``TENSORPLAY_BACKEND=compiled``.
"""
import os

import pytest


@pytest.fixture(autouse=True)
def _vmap_backend(monkeypatch):
    if not os.environ.get("TENSORPLAY_BACKEND"):
        monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")
    yield
