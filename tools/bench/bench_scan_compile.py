"""Benchmark: compile time and run time of a `tp.scan` over an MLP cell, 10 vs 1,000 steps.

    python -m tensorplay.tools.bench.bench_scan_compile [--samples 3] [--lengths 10 1000]

The cell: ``h = tanh(relu(h @ W1 + x @ U + b1) @ W2 + b2)``, y = h (batch 32, hidden 128,
input 64, float32), scanned over xs of shape (length, 32, 64); the parameters are captured.

Part 1, time to first result, per length: `tp.compile(f)` on a new function object after
`tp.compiler.reset()` (disk cache off), split into trace + passes, the codegen compile
(`Executable.stats["total_s"]`: schedule, lowering, LLVM O3, machine code) and the rest
(the run itself and the call path); `jax.jit` of the same `lax.scan` (trace + XLA compile +
run). A scan compiles to one LLVM loop, so the codegen compile time should not depend on the
length: the note after the table gives the ratio 1,000 steps / 10 steps (target: <= 2x).

Part 2, run time of the compiled scan (later calls): `tp.compile` against `jax.jit(lax.scan)`
and a numpy loop.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402

os.environ.setdefault("TENSORPLAY_DISK_CACHE", "0")  # first calls must compile
import numpy as np  # noqa: E402

import tensorplay as tp  # noqa: E402
from tensorplay import codegen  # noqa: E402


def params(batch: int, hidden: int, n_in: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
    return {"W1": w(hidden, hidden), "U": w(n_in, hidden), "b1": np.zeros(hidden, np.float32),
            "W2": w(hidden, hidden), "b2": np.full(hidden, 0.01, np.float32),
            "h0": np.zeros((batch, hidden), np.float32)}


def tp_scan_fn(p: dict):
    """A new function object scanning the MLP cell (its parameters captured as tensors)."""
    W1, U, b1, W2, b2 = (tp.tensor(p[k]) for k in ("W1", "U", "b1", "W2", "b2"))

    def f(h0, xs):
        def cell(h, x):
            h = tp.tanh(tp.relu(h @ W1 + x @ U + b1) @ W2 + b2)
            return h, h
        return tp.scan(cell, h0, xs)
    return f


def jax_scan_fn(jax, p: dict):
    jnp = jax.numpy
    W1, U, b1, W2, b2 = (jnp.asarray(p[k]) for k in ("W1", "U", "b1", "W2", "b2"))

    def f(h0, xs):
        def cell(h, x):
            h = jnp.tanh(jax.nn.relu(h @ W1 + x @ U + b1) @ W2 + b2)
            return h, h
        return jax.lax.scan(cell, h0, xs)
    return f


def numpy_scan(p: dict, h0: np.ndarray, xs: np.ndarray):
    h, ys = h0, np.empty((len(xs), *h0.shape), np.float32)
    for t, x in enumerate(xs):
        h = np.tanh(np.maximum(h @ p["W1"] + x @ p["U"] + p["b1"], 0) @ p["W2"] + p["b2"])
        ys[t] = h
    return h, ys


def _row(suite: H.Suite, case: str, impl: str, samples: list[float]) -> None:
    suite.rows.append(H.Row(case, impl, H.Timing(list(samples), 1, [float("nan")] * len(samples)), "ok"))


def first_calls(args, p, xs_of, lengths, jax) -> tuple[H.Suite, list[str]]:
    suite = H.Suite("time to first result: scan of an MLP cell", ref="tp.compile", unit="ms")
    compile_s: dict[int, list[float]] = {}
    for n in lengths:
        xs = xs_of(n)
        h0 = tp.tensor(p["h0"])
        xt = tp.tensor(xs)
        total, trace, comp, rest, jtotal = [], [], [], [], []
        for k in range(args.samples):
            tp.compiler.reset()
            f = tp.compile(tp_scan_fn(p))
            c0 = codegen.compile_count()
            t0 = time.perf_counter()
            out = f(h0, xt)
            wall = time.perf_counter() - t0
            if codegen.compile_count() == c0:
                suite.failures.append(f"length {n}: the first call did not compile (cache hit?)")
            st = codegen.compile_graph(f.get_graph(h0, xt).graph).stats  # the executable just made
            t1 = time.perf_counter()
            f(h0, xt)
            run = time.perf_counter() - t1
            total.append(wall)
            comp.append(st["total_s"])
            trace.append(max(wall - st["total_s"] - run, 0.0))
            rest.append(run)
            if jax is not None:
                jf = jax.jit(jax_scan_fn(jax, p))
                t0 = time.perf_counter()
                jout = jax.block_until_ready(jf(p["h0"], xs))
                jtotal.append(time.perf_counter() - t0)
                msg = H.compare(out, jout, 2e-3, 2e-5)
                if msg:
                    suite.failures.append(f"length {n}: tp.compile vs jax.jit: {msg}")
        case = f"length {n}"
        compile_s[n] = comp
        _row(suite, case, "tp.compile", total)
        _row(suite, case, "  tp: trace + passes", trace)
        _row(suite, case, "  tp: codegen compile (schedule, lower, LLVM)", comp)
        _row(suite, case, "  tp: run (a later call)", rest)
        if jtotal:
            _row(suite, case, "jax.jit", jtotal)
    notes = []
    if len(lengths) >= 2:
        lo, hi = min(lengths), max(lengths)
        ratio = statistics.median(compile_s[hi]) / statistics.median(compile_s[lo])
        notes.append(f"codegen compile time, {hi} steps / {lo} steps: {ratio:.2f}x (target <= 2x)")
    return suite, notes


def run_times(args, p, xs_of, lengths, jax) -> H.Suite:
    suite = H.Suite("run time: scan of an MLP cell (later calls)", ref="jax.jit" if jax else "numpy loop",
                    rtol=2e-3, atol=2e-5)
    for n in lengths:
        xs = xs_of(n)
        f = tp.compile(tp_scan_fn(p))
        h0, xt = tp.tensor(p["h0"]), tp.tensor(xs)
        impls = [H.Impl("tp.compile", lambda: f(h0, xt)),
                 H.Impl("numpy loop", lambda: numpy_scan(p, p["h0"], xs))]
        if jax is not None:
            jf = jax.jit(jax_scan_fn(jax, p))
            impls.append(H.Impl("jax.jit", lambda: jax.block_until_ready(jf(p["h0"], xs))))
        suite.run_case(f"length {n}", impls, args)
    return suite


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=15)
    ap.add_argument("--samples", type=int, default=3, help="first calls per length (part 1)")
    ap.add_argument("--lengths", type=int, nargs="+", default=None)
    ap.add_argument("--size", type=int, nargs=3, default=None, metavar=("BATCH", "HIDDEN", "INPUT"))
    args = H.parse(ap, argv)
    batch, hidden, n_in = args.size or ((2, 4, 3) if args.quick else (32, 128, 64))
    lengths = args.lengths or ([3, 30] if args.quick else [10, 1000])
    if args.quick:
        args.samples = 1
    H.header(f"scan of an MLP cell, batch {batch}, hidden {hidden}, input {n_in}, float32", args)
    jax = H.import_jax()
    p = params(batch, hidden, n_in)
    rng = np.random.default_rng(1)
    xs_all = rng.standard_normal((max(lengths), batch, n_in)).astype(np.float32)
    first, notes = first_calls(args, p, lambda n: xs_all[:n], lengths, jax)
    runs = run_times(args, p, lambda n: xs_all[:n], lengths, jax)
    return H.report([first, runs], args, notes)


if __name__ == "__main__":
    sys.exit(main())
