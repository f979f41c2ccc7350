"""Fixtures shared by the code generator's tests."""
import pytest

from tensorplay import codegen


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh, enabled disk cache in a temporary directory; in-memory caches cleared around the test."""
    d = tmp_path / "cache"
    monkeypatch.setenv("TENSORPLAY_CACHE_DIR", str(d))
    monkeypatch.delenv("TENSORPLAY_DISK_CACHE", raising=False)
    codegen.clear_cache()
    yield d
    codegen.clear_cache()
