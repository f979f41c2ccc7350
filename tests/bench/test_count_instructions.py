"""The instruction-count A/B tool (`tools/bench/count_instructions.py`)."""
import shutil

import pytest

from tensorplay.tools.bench import count_instructions as ci


def test_without_valgrind_it_says_so_and_counts_nothing(monkeypatch, capsys):
    monkeypatch.setattr(ci.shutil, "which", lambda name: None)
    assert ci.main(["jacfwd", "--quick"]) == 0
    assert "valgrind is not installed" in capsys.readouterr().out


def test_bad_arguments_are_refused():
    with pytest.raises(SystemExit):
        ci.main(["jacfwd", "--calls", "0"])
    with pytest.raises(SystemExit):
        ci.main(["no_such_workload"])


def test_the_counted_process_is_pinned_and_uncached():
    env = ci.child_env()
    assert env["PYTHONHASHSEED"] == "0" and env["TENSORPLAY_DISK_CACHE"] == "0"
    assert env["TENSORPLAY_NUM_THREADS"] == "1" and "AVX512F" in env["NPY_DISABLE_CPU_FEATURES"]


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_counts_are_positive_and_a_plain_call_costs_more_than_its_compiled_form():
    import sys

    plain = ci.count(sys.executable, "hessian", "plain", 5, quick=True)
    compiled = ci.count(sys.executable, "hessian", "compile", 5, quick=True)
    assert plain > compiled > 0
