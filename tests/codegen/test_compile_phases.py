"""Compile phases: `Executable.stats["phases"]` times every phase of a compilation, in order, and
`tensorplay-ir dump --stats` shows them. No timing thresholds: only that each phase is there, is
non-negative, that they add up to no more than the total, that a disk-cache hit skips LLVM, and
that the older per-phase keys agree with the table."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np

from tensorplay import codegen, ir
from tensorplay.codegen.executable import _PhaseClock
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

LLVM_PHASES = ("llvm_ir", "llvm_parse", "llvm_opt", "codegen")


def _graph(scale: float) -> ir.Graph:
    b = ir.GraphBuilder("phases")
    x = b.add_input(TensorType((9,), dt.float32))
    y = b.mul(b.exp(x), b.const(scale, (9,)))
    return b.build([y, b.emit("reduce_sum", y, axes=(0,))])


def _check_consistent(st: dict) -> None:
    phases = st["phases"]
    assert list(phases) == list(_PhaseClock.PHASES)
    assert all(v >= 0.0 for v in phases.values())
    assert sum(phases.values()) <= st["total_s"] * (1 + 1e-9)
    assert st["schedule_s"] == phases["schedule"] and st["lower_s"] == phases["llvm_ir"]
    assert st["llvm_opt_s"] == phases["llvm_opt"] and st["codegen_s"] == phases["codegen"]
    assert st["link_s"] == phases["link"] and st["llvm_parse_s"] == phases["llvm_parse"]


def test_a_cold_compile_times_every_llvm_phase(cache_dir):
    exe = codegen.compile_graph(_graph(1.25))
    st = exe.stats
    _check_consistent(st)
    assert st["source"] == "compiled"
    assert all(st["phases"][p] > 0.0 for p in (*LLVM_PHASES, "schedule", "link", "cache_store"))


def test_a_disk_cache_hit_skips_llvm(cache_dir):
    x = np.linspace(-1, 1, 9).astype(np.float32)
    want = codegen.compile_graph(_graph(1.5))(x)
    codegen.clear_cache()
    exe = codegen.compile_graph(_graph(1.5))
    st = exe.stats
    _check_consistent(st)
    assert st["source"] == "disk cache"
    assert all(st["phases"][p] == 0.0 for p in (*LLVM_PHASES, "cache_store"))
    assert st["phases"]["link"] > 0.0 and st["phases"]["cache_lookup"] > 0.0
    for a, b in zip(exe(x), want):
        np.testing.assert_array_equal(a, b)


def test_without_the_disk_cache_nothing_is_looked_up_or_stored(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    st = codegen.Executable(_graph(1.75)).stats
    _check_consistent(st)
    assert st["phases"]["cache_store"] == 0.0 and st["phases"]["llvm_opt"] > 0.0


def test_dump_stats_shows_the_phase_table(tmp_path, cache_dir):
    src = tmp_path / "f.tpir"
    src.write_text("func @f(%x: tensor<8xf32>) -> tensor<8xf32> {\n  %0 = tp.exp %x : tensor<8xf32>\n  return %0\n}\n")
    p = subprocess.run([sys.executable, "-m", "tensorplay.tools.cli", "dump", str(src), "--stats"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    stats = p.stdout.split("// -----// stats //----- //", 1)[1]
    shares = []
    for label in ("fusion/scheduling", "buffer planning", "disk cache lookup", "LLVM IR build",
                  "LLVM parse+verify", "LLVM optimisation", "machine code", "JIT link", "disk cache store",
                  "call setup"):
        m = re.search(rf"^\s+{re.escape(label)}\s+[\d.]+ ms\s+([\d.]+)%$", stats, re.MULTILINE)
        assert m, f"no row for {label!r} in\n{stats}"
        shares.append(float(m.group(1)))
    assert re.search(r"^\s+total\s+[\d.]+ ms\s+100\.0%$", stats, re.MULTILINE)
    assert sum(shares) <= 100.0 + 0.1 * len(shares)  # rounding of each row
    assert "(compiled)" in stats or "(disk cache)" in stats
