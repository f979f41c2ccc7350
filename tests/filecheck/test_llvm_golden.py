"""Golden LLVM IR: the exact module text the backend emits for a few representative kernels.

Each `llvm/NAME.tpir` is compiled up to LLVM IR *before* any optimisation (scheduling, buffer
planning, lowering) and compared with `llvm/NAME.ll`. That text depends only on tensorplay and the
graph, never on the host: the triple and data layout are fixed here (the executable stamps the
host's), and host optimisation (O3, vectorisation for the host CPU) runs later, on a copy. A
refactor of the lowerings therefore shows up as a diff of these files. dot_general is left out:
whether it calls a BLAS depends on the libraries the host has.

Set ``TENSORPLAY_UPDATE_GOLDEN=1`` to rewrite the `.ll` files from the current output (then review
the diff).
"""
from __future__ import annotations

import glob
import os

import pytest

from tensorplay.codegen.module import build_module, plan_buffers
from tensorplay.codegen.schedule import schedule
from tensorplay.ir.text import parse_graph

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llvm")
SOURCES = sorted(glob.glob(os.path.join(HERE, "*.tpir")))
UPDATE = os.environ.get("TENSORPLAY_UPDATE_GOLDEN") == "1"
TRIPLE = "x86_64-unknown-linux-gnu"
LAYOUT = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"


def unoptimised_ir(source: str) -> str:
    """The LLVM module text of the graph in `source` (IR text), before any optimisation."""
    graph = parse_graph(source)
    kernels = schedule(graph)
    text, _ = build_module(graph, kernels, plan_buffers(graph, kernels), "golden", TRIPLE, LAYOUT)
    return text


def test_there_are_golden_kernels():
    assert len(SOURCES) >= 4


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: os.path.basename(p)[:-5])
def test_llvm_ir_matches_golden(path):
    with open(path, encoding="utf-8") as f:
        got = unoptimised_ir(f.read())
    golden = path[:-5] + ".ll"
    if UPDATE or not os.path.exists(golden):
        with open(golden, "w", encoding="utf-8") as f:
            f.write(got)
        if not UPDATE:
            pytest.fail(f"{golden} did not exist: written now, review and commit it")
        return
    with open(golden, encoding="utf-8") as f:
        want = f.read()
    assert got == want, (f"LLVM IR for {os.path.basename(path)} changed; if intended, rerun with "
                         f"TENSORPLAY_UPDATE_GOLDEN=1 and review the diff of {os.path.basename(golden)}")


def test_the_text_does_not_depend_on_the_module_id():
    """Compiling twice gives the same text (no counters or addresses leak into it)."""
    with open(SOURCES[0], encoding="utf-8") as f:
        src = f.read()
    assert unoptimised_ir(src) == unoptimised_ir(src)
