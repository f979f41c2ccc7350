"""Smoke test of the peer benchmark suite (tools/bench): every script runs on tiny sizes.

Each script's `main(["--quick", ...])` runs in this process (importing numpy, jax and torch
once, not once per script), checks that every implementation agrees with its reference
and prints its table; a non-zero return means an implementation raised or disagreed. jax
and torch are optional: a script leaves out a peer that is not importable, so this passes
without them (as in CI) and exercises their code paths where they are installed. Timings
are not asserted.
"""
from __future__ import annotations

import importlib
import time

import pytest

SCRIPTS = ["bench_fused_elementwise", "bench_mlp", "bench_per_sample_grads", "bench_jacobians",
           "bench_dispatch", "bench_compile_time"]
_elapsed: dict[str, float] = {}


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_runs_quick(name, capsys):
    module = importlib.import_module(f"tools.bench.{name}")
    t0 = time.perf_counter()
    status = module.main(["--quick", "--sample-ms", "0.5"])
    _elapsed[name] = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert status == 0, f"{name} --quick reported failures:\n{out}"
    assert "==" in out and "QUICK" in out  # printed its header and at least one table


def test_run_all_lists_every_script():
    from tools.bench.__main__ import SCRIPTS as run_all

    assert run_all == SCRIPTS
