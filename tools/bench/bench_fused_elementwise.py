"""Benchmark 1: fused elementwise `sin(x) * exp(-x*x) + tanh(x)` on float32 vectors.

    python -m tensorplay.tools.bench.bench_fused_elementwise [--sizes 1e6 1e7] [--torch-compile]

tensorplay eager (one numpy call per op) and `tp.compile` (one fused, vectorised LLVM
loop; with the default TP_BENCH_THREADS=1 an extra row runs the same compiled graph with
the codegen's thread split enabled, everything else staying on one thread) against numpy, `jax.jit` (XLA fusion) and torch eager;
`--torch-compile` adds `torch.compile` (inductor; its first compilation takes ~50 s
here, so it is opt-in). The extra column is the achieved bandwidth: 8 bytes per
element (read x, write the result) per second.

A "tp executable, fresh outputs" row runs the same compiled graph with output recycling off
(`codegen.recycle`: a fresh `np.empty` output per call, with its page faults), the comparison for
the recycled outputs of `tp.compile`'s row in the same run.

A second table times the same expression summed to a scalar (one fused reduction kernel), with
the same rows: its "N threads" row runs the reduction's fixed blocks on the codegen's pool
(`codegen.threads`; bit-identical to one thread).
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402

import numpy as np  # noqa: E402

import tensorplay as tp  # noqa: E402


def expr_np(x):
    return np.sin(x) * np.exp(-x * x) + np.tanh(x)


def expr_tp(x):
    return tp.sin(x) * tp.exp(-x * x) + tp.tanh(x)


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=21)
    ap.add_argument("--sizes", type=float, nargs="+", default=None)
    ap.add_argument("--torch-compile", action="store_true", help="also time torch.compile (slow first call)")
    args = H.parse(ap, argv)
    sizes = [int(s) for s in (args.sizes or ([1e4] if args.quick else [1e6, 1e7]))]
    H.header("fused elementwise sin(x)*exp(-x*x)+tanh(x), float32", args)
    jax, torch = H.import_jax(), H.import_torch()

    suite = H.Suite("sin(x)*exp(-x*x)+tanh(x), float32 vector", ref="jax.jit", check_ref="numpy",
                    rtol=1e-5, atol=2e-6)
    sizes_of = {}
    suite.extra["GB/s"] = lambda case, impl, t: f"{8 * sizes_of[case] / t.median / 1e9:.2f}"
    compiled = tp.compile(expr_tp)
    summed = H.Suite("sum(sin(x)*exp(-x*x)+tanh(x)), float32 vector -> scalar", ref="jax.jit", check_ref="numpy",
                     rtol=1e-4, atol=1e-3)
    compiled_sum = tp.compile(lambda x: expr_tp(x).sum())
    for n in sizes:
        case = f"n={n:.0e}".replace("e+0", "e")
        sizes_of[case] = n
        x = (np.random.default_rng(0).standard_normal(n) * 3).astype(np.float32)
        xt = tp.from_numpy(x)
        impls = [H.Impl("numpy", lambda: expr_np(x)),
                 H.Impl("tp eager", lambda: expr_tp(xt)),
                 H.Impl("tp.compile", lambda: compiled(xt))]
        simpls = [H.Impl("numpy", lambda: expr_np(x).sum(dtype=np.float64).astype(np.float32)),
                  H.Impl("tp eager", lambda: expr_tp(xt).sum()),
                  H.Impl("tp.compile", lambda: compiled_sum(xt))]
        impls.append(_fresh_outputs(compiled, xt, x))
        threads = min(os.cpu_count() or 1, 8)
        if threads > 1 and H.THREADS == 1:  # the same graphs compiled with the codegen's thread split on
            impls.append(_threaded(compiled, xt, x, threads))
            simpls.append(_threaded(compiled_sum, xt, x, threads))
        if jax is not None:
            import jax.numpy as jnp
            jf = jax.jit(lambda v: jnp.sin(v) * jnp.exp(-v * v) + jnp.tanh(v))
            jsum = jax.jit(lambda v: (jnp.sin(v) * jnp.exp(-v * v) + jnp.tanh(v)).sum())
            xj = jax.device_put(x)
            impls.append(H.Impl("jax.jit", lambda: jf(xj).block_until_ready()))
            simpls.append(H.Impl("jax.jit", lambda: jsum(xj).block_until_ready()))
        if torch is not None:
            xtorch = torch.from_numpy(x)

            def torch_eager():
                with torch.inference_mode():
                    return torch.sin(xtorch) * torch.exp(-xtorch * xtorch) + torch.tanh(xtorch)
            impls.append(H.Impl("torch eager", torch_eager))
            simpls.append(H.Impl("torch eager", lambda: torch_eager().sum()))
            if args.torch_compile:
                tf = torch.compile(lambda v: torch.sin(v) * torch.exp(-v * v) + torch.tanh(v))
                impls.append(H.Impl("torch.compile", lambda: tf(xtorch)))
        suite.run_case(case, impls, args)
        summed.run_case(case, simpls, args)
    return H.report([suite, summed], args)


def _threaded(compiled, xt, x, threads: int) -> H.Impl:
    """The graph `compiled` runs for `xt`, compiled again with the codegen's pool of `threads`."""
    import tensorplay.codegen.executable as ce
    graph = compiled.get_graph(xt).graph  # traced and compiled (cached) with the pinned thread count
    saved, ce._THREADS = ce._THREADS, threads
    try:
        exe_mt = ce.Executable(graph)  # bypasses the cache on purpose
        ce._pool()  # the codegen's worker pool is sized on first use
    finally:
        ce._THREADS = saved
    return H.Impl(f"tp executable, {threads} threads", lambda: exe_mt(x)[0], note="others pinned to 1")


def _fresh_outputs(compiled, xt, x) -> H.Impl:
    """The graph `compiled` runs for `xt`, compiled again with output recycling off."""
    import tensorplay.codegen.executable as ce
    from tensorplay.codegen import recycle
    graph = compiled.get_graph(xt).graph
    saved, recycle.MIN_BYTES = recycle.MIN_BYTES, 1 << 62
    try:
        exe = ce.Executable(graph)  # bypasses the cache on purpose
    finally:
        recycle.MIN_BYTES = saved
    return H.Impl("tp executable, fresh outputs", lambda: exe(x)[0], note="no recycled buffers")


if __name__ == "__main__":
    sys.exit(main())
