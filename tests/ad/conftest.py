"""tests/ad run on the reference interpreter unless a test is marked `compiled` (the llvmlite
backend is exercised by tests/codegen; here it would only add compile time). Set
TENSORPLAY_BACKEND explicitly (e.g. =compiled) to run every test of this directory on that backend."""
import os

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "compiled: run with the default (compiled) backend")


@pytest.fixture(autouse=True)
def _interpreter_backend(request, monkeypatch):
    if request.node.get_closest_marker("compiled") is None and not os.environ.get("TENSORPLAY_BACKEND"):
        monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")
