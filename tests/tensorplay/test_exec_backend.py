"""`_exec.backend()` follows TENSORPLAY_BACKEND as `os.environ` changes, value by value."""
import pytest

from tensorplay._exec import backend


@pytest.mark.parametrize("value, expected", [("interpreter", "interpreter"), (" Interpreter ", "interpreter"),
                                             ("compiled", "compiled"), ("llvm", "compiled"), ("", "compiled")])
def test_backend_reads_the_current_environment(monkeypatch, value, expected):
    monkeypatch.delenv("TENSORPLAY_BACKEND", raising=False)
    assert backend() == "compiled"
    monkeypatch.setenv("TENSORPLAY_BACKEND", value)
    assert backend() == expected
    assert backend() == expected  # the remembered parse
    monkeypatch.delenv("TENSORPLAY_BACKEND")
    assert backend() == "compiled"


def test_an_unknown_backend_is_an_error_each_time(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_BACKEND", "gpu")
    for _ in range(2):
        with pytest.raises(ValueError, match="TENSORPLAY_BACKEND='gpu'"):
            backend()
    monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")
    assert backend() == "interpreter"
