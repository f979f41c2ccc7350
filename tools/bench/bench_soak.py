"""Soak benchmark: memory kept per compiled graph, now and in the previous state of `codegen.jit`.

    python -m tensorplay.tools.bench.bench_soak [--graphs 1000] [--runs 1] [--keep 16] [--link-only]
        [--variants previous,current]

Each measurement is a fresh process that compiles `--graphs` distinct small graphs (disk cache
off, the in-memory cache bounded to `--keep`), calls each once and drops it, after 100 graphs of
warm-up. It reports per graph: RSS growth, heap still in use (glibc `mallinfo2`: what was
allocated and never freed, free of allocator page caching) and wall time per compile.

"previous" re-creates the state before the fix in the same build (monkeypatched): llvmlite's
pass managers are never deleted (its `ModulePassManager._dispose` is shadowed, see `codegen.jit`)
and modules are parsed into the global LLVMContext. "current" is the code as it is. The two
alternate, `--runs` times each. `--link-only` instead loads one object file `--graphs` times
into fresh LLJITs and releases it (machine code alone).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import ctypes, gc, json, os, sys, time
os.environ["TENSORPLAY_DISK_CACHE"] = "0"
import numpy as np
import llvmlite.binding as llvm
from tensorplay import codegen, ir
from tensorplay.codegen import jit
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

variant, graphs, keep, link_only = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
if variant == "previous":
    class _global_parse:
        def __init__(self, text): self.text = text
        def __enter__(self):
            self.module = llvm.parse_assembly(self.text)
            return self.module
        def __exit__(self, *exc): self.module.close()
    jit._parsed = _global_parse
    jit._dispose_pass_manager = lambda pm: pm.close()  # what llvmlite does on its own: nothing
codegen.cache.MAX_ENTRIES = keep

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
def heap():
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
def graph(k):
    b = ir.GraphBuilder(f"soak{k % 7}")
    x = b.add_input(TensorType((16 + k % 5,), dt.float32))
    y = b.add(b.mul(b.tanh(x), b.const(1.0 + k * 1e-3, x.shape)), x)
    return b.build([y, b.emit("reduce_sum", y, axes=(0,))])
def compile_one(k):
    g = graph(k)
    codegen.compile_graph(g)(np.ones(g.inputs[0].shape, np.float32))
if link_only:
    exe = codegen.compile_graph(graph(0))
    obj, entry = exe._jit.objects, next(iter(exe._jit.addresses))
    step = lambda k: jit.link_object(obj, [entry]).release()
else:
    step = compile_one
for k in range(100):
    step(k)
codegen.clear_cache(); gc.collect()
r0, h0, t0 = rss(), heap(), time.perf_counter()
for k in range(graphs):
    step(10_000 + k)
codegen.clear_cache(); gc.collect()
print(json.dumps({"rss": (rss() - r0) / graphs, "heap": (heap() - h0) / graphs,
                  "ms": (time.perf_counter() - t0) / graphs * 1e3, "rss_end_mb": rss() / 2**20}))
"""


def child(variant: str, args) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, variant, str(args.graphs), str(args.keep),
                          "1" if args.link_only else "0"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--keep", type=int, default=16)
    ap.add_argument("--link-only", action="store_true")
    ap.add_argument("--variants", default="previous,current",
                    help="comma-separated, of previous and current (e.g. only current for a long soak)")
    args = ap.parse_args(argv)
    results = {v: [] for v in ("previous", "current") if v in args.variants.split(",")}
    if not results:
        ap.error("--variants: name previous, current or both")
    for _ in range(args.runs):
        for variant in results:  # interleaved
            results[variant].append(child(variant, args))
    what = "link + release of one object file" if args.link_only else "distinct graphs compiled and dropped"
    print(f"{args.graphs} {what}, medians of {args.runs} process(es) each:")
    print(f"  {'variant':10s} {'RSS B/graph':>12s} {'heap B/graph':>13s} {'ms/compile':>11s}")
    med = {v: {k: statistics.median(r[k] for r in rs) for k in ("rss", "heap", "ms")} for v, rs in results.items()}
    for v, m in med.items():
        print(f"  {v:10s} {m['rss']:12.0f} {m['heap']:13.0f} {m['ms']:11.1f}")
    p, c = med.get("previous"), med.get("current")
    if p and c and p["heap"] > 0:
        print(f"  current/previous: heap kept {c['heap'] / p['heap']:.3f}x, time per compile {c['ms'] / p['ms']:.2f}x")
    if c:
        print(f"  current over {args.graphs} graphs: +{c['rss'] * args.graphs / 1e6:.1f} MB RSS; projected over "
              f"5,000 graphs: +{c['rss'] * 5000 / 1e6:.1f} MB (target +50 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
