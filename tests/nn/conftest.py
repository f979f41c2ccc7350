"""tests/nn run their graphs on the reference interpreter (TENSORPLAY_BACKEND=interpreter).

These tests check the semantics of the layers and module utilities; compiling
every small graph they trace with the llvmlite backend multiplied the suite's
time about five-fold (compiled-vs-interpreter agreement is tested by the
codegen suite). Tests marked ``compiled_backend`` keep the environment's
backend, and the scripts in tests/examples run on it too. Setting TENSORPLAY_BACKEND
explicitly (e.g. =compiled) runs the whole directory on that backend.
"""
import os

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "compiled_backend: run with the environment's (default: compiled) backend")


@pytest.fixture(autouse=True)
def _interpreter_backend(request, monkeypatch):
    if request.node.get_closest_marker("compiled_backend") is None and not os.environ.get("TENSORPLAY_BACKEND"):
        monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")
    yield
