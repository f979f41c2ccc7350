"""Benchmark: sin(x) * exp(-x*x) + tanh(x) on float32, compiled vs numpy eager.

    python -m tensorplay.tools.bench.bench_elementwise [--sizes 1e6 1e7] [--repeat 15]

Prints median (and min) times, the speed-up over numpy and the achieved
bandwidth (bytes read + written per second) next to a measured copy bandwidth
(`np.copyto` between two arrays of the same size) — the ceiling for a
memory-bound elementwise kernel. Large inputs run on TENSORPLAY_NUM_THREADS
threads (default: all cores); set it to 1 for single-thread figures.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from tensorplay import codegen
from tensorplay import ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType


def build_graph(n: int) -> ir.Graph:
    """The benchmark expression as an IR graph on a float32 vector of length n."""
    b = ir.GraphBuilder("bench_elementwise")
    x = b.add_input(TensorType((n,), dt.float32))
    y = b.add(b.mul(b.sin(x), b.exp(b.neg(b.mul(x, x)))), b.tanh(x))
    return b.build([y])


def numpy_eager(x: np.ndarray) -> np.ndarray:
    return np.sin(x) * np.exp(-x * x) + np.tanh(x)


def timings(fn, repeat: int) -> tuple[float, float]:
    """(median, min) wall time of `fn` over `repeat` runs after one warm-up run."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def run(n: int, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32) * 3
    t0 = time.perf_counter()
    exe = codegen.compile_graph(build_graph(n))
    compile_s = time.perf_counter() - t0
    got = exe(x)[0]
    want = numpy_eager(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    (t_jit, m_jit), (t_np, m_np) = timings(lambda: exe(x), repeat), timings(lambda: numpy_eager(x), repeat)
    dst = np.empty_like(x)
    t_copy, m_copy = timings(lambda: np.copyto(dst, x), repeat)
    moved = 2 * x.nbytes  # read x, write the result
    return {"n": n, "compile_ms": compile_s * 1e3, "jit_ms": t_jit * 1e3, "numpy_ms": t_np * 1e3,
            "jit_min_ms": m_jit * 1e3, "numpy_min_ms": m_np * 1e3, "threads": exe.stats["threads"],
            "speedup": t_np / t_jit, "jit_GBps": moved / t_jit / 1e9, "copy_GBps": moved / t_copy / 1e9,
            "copy_max_GBps": moved / m_copy / 1e9}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    print("median (min) of each; GB/s = (bytes read + written) / median time")
    print(f"{'n':>10} {'threads':>7} {'compile ms':>10} {'compiled ms':>15} {'numpy ms':>15} {'speed-up':>8} "
          f"{'GB/s':>6} {'copy GB/s':>11}")
    for n in args.sizes:
        r = run(int(n), args.repeat)
        print(f"{r['n']:>10} {r['threads']:>7} {r['compile_ms']:>10.1f} {r['jit_ms']:>7.2f} ({r['jit_min_ms']:>5.2f}) "
              f"{r['numpy_ms']:>7.2f} ({r['numpy_min_ms']:>5.2f}) {r['speedup']:>7.1f}x {r['jit_GBps']:>6.1f} "
              f"{r['copy_GBps']:>5.1f} ({r['copy_max_GBps']:>4.1f})")


if __name__ == "__main__":
    main()
