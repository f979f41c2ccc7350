"""Smoke test of the peer benchmark suite (tools/bench): every script runs on tiny sizes.

Each script's `main(["--quick", ...])` runs in this process, checks that every
implementation agrees with its reference and prints its table; a non-zero return means an
implementation raised or disagreed. Timings are not asserted.

The peers (jax, torch) are left out with `--no-peers` -- the same code path as a peer that
is not importable, which is the CI case -- because importing them and compiling ~40 XLA
programs triples the run time. Set TP_BENCH_SMOKE_PEERS=1 to include them where they are
installed (about 10 s of CPU instead of 3).
"""
from __future__ import annotations

import importlib
import os

import pytest

SCRIPTS = ["bench_fused_elementwise", "bench_mlp", "bench_per_sample_grads", "bench_jacobians",
           "bench_plain_transforms", "bench_dispatch", "bench_compile_time"]


@pytest.fixture(autouse=True)
def _leave_threads_alone(monkeypatch):
    """The harness pins every library to one thread (environment variables at import, codegen's
    thread count): not wanted inside a test session, where later tests and their subprocesses
    would inherit it. TP_BENCH_THREADS=default turns that off; the codegen setting is restored."""
    monkeypatch.setenv("TP_BENCH_THREADS", "default")
    import tensorplay.codegen.executable as ce

    monkeypatch.setattr(ce, "_THREADS", ce._THREADS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_runs_quick(name, capsys):
    module = importlib.import_module(f"tensorplay.tools.bench.{name}")
    argv = ["--quick", "--sample-ms", "0.5"]
    if os.environ.get("TP_BENCH_SMOKE_PEERS", "") in ("", "0"):
        argv.append("--no-peers")
    status = module.main(argv)
    out = capsys.readouterr().out
    assert status == 0, f"{name} --quick reported failures:\n{out}"
    assert "==" in out and "QUICK" in out  # printed its header and at least one table


def test_run_all_lists_every_script():
    from tensorplay.tools.bench.__main__ import SCRIPTS as run_all

    assert run_all == SCRIPTS
