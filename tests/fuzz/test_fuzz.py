"""The random-program fuzzer: a tiny campaign finds nothing, a planted bug is found, minimised
and written as a standalone reproducer that fails until the bug is gone."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest

from tensorplay.tools.fuzz import campaign, ops, program, run_campaign
from tensorplay.tools.fuzz.minimize import minimise
from tensorplay.tools.fuzz.reproducer import write_reproducer
from tensorplay.tools.fuzz.soak import reclamation_supported, soak


def test_tiny_campaign_is_clean():
    s = run_campaign(seed=7, programs=50, seconds=600)
    assert s.programs == 50
    assert s.checks >= 5 * s.programs
    assert (s.mismatches, s.crashes) == (0, 0), [f"{f.check}: {f.message}\n{f.program.source()}" for f in s.failures]


def test_generation_is_deterministic_and_covers_the_shapes():
    a, b = program.generate(123), program.generate(123)
    assert a.source() == b.source()
    assert all(np.array_equal(x.data, y.data) and x.layout == y.layout for x, y in zip(a.inputs, b.inputs))
    progs = [program.generate(s) for s in range(300)]
    shapes = {i.data.shape for p in progs for i in p.inputs}
    assert () in shapes and any(0 in s for s in shapes) and any(1 in s for s in shapes)
    assert {i.layout for p in progs for i in p.inputs} == {"contig", "transposed", "strided", "expanded"}
    assert {p.dtype for p in progs} == {"float32", "float64", "int32", "int64"}
    used = {op for p in progs for op in p.ops()}
    assert len(used) > 0.9 * len(ops.OPS)


def test_every_value_stays_in_the_domain():
    for s in range(100):
        values = program.evaluate(program.generate(s))
        for v in values.values():
            assert np.all(np.isfinite(v))


def test_tolerance_depends_on_dtype_and_ops_only():
    p = program.generate(5)
    f32 = program.tolerance(p, program.evaluate(p))
    assert f32 == program.tolerance(p, program.evaluate(p))
    wide = dataclasses.replace(p, dtype="float64",
                               inputs=tuple(dataclasses.replace(i, data=i.data.astype("float64")) for i in p.inputs))
    if p.kind == "f":
        assert program.tolerance(wide, program.evaluate(wide)) < f32 or p.dtype == "float64"


@pytest.fixture
def planted_sin(monkeypatch):
    """numpy's twin of sin is off by 1e-2: every program using sin must be caught."""
    wrong = dataclasses.replace(ops.OPS["sin"], np="np.sin({0}) + 1e-2")
    monkeypatch.setitem(ops.OPS, "sin", wrong)
    return wrong


def _program_with_sin_among_others() -> program.Program:
    for seed in range(2000):
        p = program.generate(seed)
        if p.kind == "f" and "sin" in p.ops() and len(p.steps) >= 4 and p.ops()[-1] != "sin" \
                and campaign.outcome(p, "eager")[0] == "mismatch":  # sin reaches an output
            return p
    raise AssertionError("no program with sin")


def test_planted_mismatch_is_found_minimised_and_reproduced(planted_sin, tmp_path):
    p = _program_with_sin_among_others()
    kind, message = campaign.outcome(p, "eager")
    assert "eager vs numpy" in message
    small = minimise(p, lambda q: campaign.outcome(q, "eager")[0] == "mismatch")
    assert small.ops() == ["sin"]
    path = write_reproducer(small, "eager", message, str(tmp_path))
    run = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "MISMATCH" in run.stdout, run.stdout + run.stderr


def test_campaign_reports_and_writes_planted_failures(planted_sin, tmp_path):
    s = campaign.Summary()
    for i in range(300):
        p = program.generate(campaign.program_seed(3, i))
        if "sin" in p.ops() and campaign.outcome(p, "eager")[0] == "mismatch":
            s = run_campaign(seed=3, programs=i + 1, seconds=600, out=str(tmp_path), minimise_seconds=20)
            break
    assert s.mismatches >= 1
    assert all(f.path and os.path.exists(f.path) for f in s.failures)
    assert any(f.program.ops() == ["sin"] for f in s.failures if f.check == "eager")


def test_reproducer_of_a_passing_check_exits_zero(tmp_path):
    p = program.generate(11)
    path = write_reproducer(p, "compiled", "none", str(tmp_path))
    run = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "passes" in run.stdout


def test_command_line_summary_and_exit_status(tmp_path):
    run = subprocess.run([sys.executable, "-m", "tensorplay.tools.fuzz", "--programs", "4", "--seconds", "300",
                          "--seed", "2", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "fuzz: 4 programs, " in run.stdout and ", 0 mismatches, 0 crashes" in run.stdout
    bad = subprocess.run([sys.executable, "-m", "tensorplay.tools.fuzz", "--exclude", "banana"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "banana" in bad.stderr


def test_known_failure_reproducers_are_standalone_scripts():
    folder = os.path.join(os.path.dirname(campaign.__file__), "known_failures")
    from tensorplay.tools.fuzz.known import KNOWN_FAILURES

    for k in KNOWN_FAILURES.values():
        path = os.path.join(os.path.dirname(folder), k.reproducer)
        with open(path, encoding="utf-8") as f:
            compile(f.read(), path, "exec")


def test_soak_rss_stays_bounded():
    supported, why = reclamation_supported()
    if not supported:
        pytest.skip(why)
    result = soak(1500)
    assert result.bounded, result.line()
