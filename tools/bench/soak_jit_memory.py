"""Soak: RSS over many distinct compiled graphs (target: +50 MB over 5,000).

    python -m tensorplay.tools.bench.soak_jit_memory [--graphs 5000] [--keep 16]

Compiles `--graphs` distinct small graphs (disk cache off), calls each once and keeps only
the last `--keep` in the in-memory cache, printing RSS every 500 graphs. A second phase loads
one object file `--graphs` times into fresh LLJITs and drops it (machine code alone).
"""
from __future__ import annotations

import argparse
import gc
import os
import sys

import numpy as np


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=5000)
    ap.add_argument("--keep", type=int, default=16)
    args = ap.parse_args(argv)
    os.environ["TENSORPLAY_DISK_CACHE"] = "0"
    from tensorplay import codegen, ir
    from tensorplay.codegen import jit
    from tensorplay.ir import dtypes as dt
    from tensorplay.ir.types import TensorType

    codegen.cache.MAX_ENTRIES = args.keep

    def graph(k: int) -> ir.Graph:
        b = ir.GraphBuilder(f"soak{k % 7}")
        x = b.add_input(TensorType((16 + k % 5,), dt.float32))
        y = b.add(b.mul(b.tanh(x), b.const(1.0 + k * 1e-3, x.shape)), x)
        return b.build([y, b.emit("reduce_sum", y, axes=(0,))])

    for k in range(100):  # warm-up
        g = graph(k)
        codegen.compile_graph(g)(np.ones(g.inputs[0].shape, np.float32))
    codegen.clear_cache()
    gc.collect()
    start = rss_mb()
    print(f"compile phase: start {start:.1f} MB")
    for k in range(args.graphs):
        g = graph(10_000 + k)
        codegen.compile_graph(g)(np.ones(g.inputs[0].shape, np.float32))
        if (k + 1) % 500 == 0:
            gc.collect()
            print(f"  {k + 1:6d} graphs: {rss_mb():.1f} MB (+{rss_mb() - start:.1f}; "
                  f"{(rss_mb() - start) * 1e3 / (k + 1):.1f} KB per graph)")
    exe = codegen.compile_graph(graph(0))
    obj, entry = exe._jit.object_code, next(iter(exe._jit.addresses))
    codegen.clear_cache()
    gc.collect()
    start = rss_mb()
    for _ in range(args.graphs):
        jit.link_object(obj, [entry]).release()
    gc.collect()
    print(f"load/free phase: {args.graphs} modules, +{rss_mb() - start:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
