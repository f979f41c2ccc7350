"""Every script in examples/ runs to completion (each asserts its own results) within a time budget."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py"))
BUDGET_SECONDS = 60


def test_examples_are_found():
    assert {"per_sample_grads.py", "ensembling.py", "jacobians_hessians.py", "train_mlp.py", "train_scan.py",
            "rk4_ode.py"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs(name):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=3 * BUDGET_SECONDS)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
    assert elapsed < BUDGET_SECONDS, f"{name} took {elapsed:.1f}s (budget {BUDGET_SECONDS}s)"
