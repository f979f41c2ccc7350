"""Benchmark 6: compile latency (time to first result) and the cached call path.

    python -m tensorplay.tools.bench.bench_compile_time [--samples 3]

Part 1, time to first result of the MLP 784-256-256-10 loss + gradient (batch 64):
  `tp.compile(grad(loss))` (trace + AD/simplify passes + schedule + lowering + LLVM O3 +
  machine code) against `jax.jit(jax.grad(loss))` (trace + lower + XLA compile) and the
  eager peers' first call (`torch.func.grad`, tensorplay's plain `grad`). Every sample
  uses a new function object and a batch size not seen before, so no cache answers
  (tensorplay's codegen cache is keyed by graph structure, jax's by function and shapes).
  The persistent object-code cache is off here (TENSORPLAY_DISK_CACHE=0, unless set) and
  every sample starts with `tp.compiler.reset()`, so each first call really compiles
  (`bench_disk_cache` measures the cached path).
  "cold" is the very first compile in the process (engine initialisation included, and the
  in-place gemm's shape-generic function, `codegen.gemm_library`: one module for both B
  orientations, compiled here since the disk cache is off, loaded from it in a normal process
  after the first; its CPU time counts, though it is made in a thread beside the graph's compile);
  the other rows are medians over `--samples` warm compiles, with tensorplay's time split
  by phase (from `Executable.stats`) and jax's from its AOT API (trace / lower / compile).

`--compile-threads 1,2` compiles each warm sample once per thread count (`codegen.jit.COMPILE_THREADS`:
LLVM compiles a graph's module as that many parts in parallel threads), interleaved, one row each;
the cold sample uses the first count. Default: the codegen's own count (TENSORPLAY_NUM_THREADS or
the cores).

Part 1b, the same for conv2d (3->16, 3x3, padding 1) + relu + max_pool2d(2) + sum, gradient
with respect to the weight and bias, batch 8 (then 9, 10, ...), 32x32 (target: at most 0.5 s).

Part 2, the cached call path on tiny inputs (second and later calls): `tp.compile(f)` on a
4-element vector and on a tiny MLP loss+grad (8 parameter leaves), against calling the
codegen `Executable` directly (the floor under tp.compile's Python wrapper), numpy and
torch eager, and `jax.jit` (whose dispatch path is C++).
"""
from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402
from tensorplay.tools.bench import _models as M  # noqa: E402

os.environ.setdefault("TENSORPLAY_DISK_CACHE", "0")  # first calls must compile (see the docstring)
import numpy as np  # noqa: E402

from tensorplay import codegen  # noqa: E402
from tensorplay.codegen import jit  # noqa: E402
from tensorplay.func import grad  # noqa: E402


def _timed(fn):
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def _threads(n: int) -> str:
    return f"[{n} compile thread{'s' if n > 1 else ''}]"


def _row(suite: H.Suite, case: str, impl: str, samples: list[float], cpu: list[float], note: str = "") -> None:
    suite.rows.append(H.Row(case, impl, H.Timing(list(samples), 1, list(cpu)), "ok", note))


def first_call(args, sizes, batch0, jax, torch) -> H.Suite:
    suite = H.Suite("time to first result: MLP loss + grad", ref="jax.jit(grad)", unit="ms")
    P = M.init_mlp(sizes)
    T = M.tensorplay_fns()
    tp = T.tp
    tparams = T.params(P)
    phases = {"trace + passes": []}  # then one row per phase of Executable.stats["phases"]
    counts = args.compile_threads
    tp_total, tp_cpu = {n: [] for n in counts}, {n: [] for n in counts}
    j_total, j_cpu, j_phase = [], [], {"trace": [], "lower": [], "compile": []}
    tp_plain, tp_plain_cpu, to_first, to_first_cpu = [], [], [], []
    if jax is not None:
        J = M.jax_fns(jax)
        jparams = J.params(P)
    if torch is not None:
        TO = M.torch_fns(torch)
        toparams = TO.params(P)
    # sample 0 is the cold one (first compile in the process); batch sizes never repeat
    for k in range(args.samples + 1):
        n = batch0 + k
        x, y = M.batch(n, sizes[0], sizes[-1], seed=k)
        xt, yt = T.array(x), T.array(y)

        for threads in counts[:1] if k == 0 else counts:
            jit.COMPILE_THREADS = threads

            def tp_loss(ps, xx, yy):  # a new function object per sample
                return T.loss(ps, xx, yy)
            tp.compiler.reset()
            f = tp.compile(grad(tp_loss))
            c0 = codegen.compile_count()
            out, wall, cpu = _timed(lambda: f(tparams, xt, yt))
            if codegen.compile_count() == c0:
                suite.failures.append(f"tp.compile first call for batch {n} did not compile (cache hit?)")
            closed = f.get_graph(tparams, xt, yt)
            st = codegen.compile_graph(closed.graph).stats  # cache hit: the executable compiled above
            if k == 0:
                from tensorplay.codegen import gemm_library  # the in-place gemm's module, made once

                _row(suite, "cold (1st in process)", f"tp.compile(grad) {_threads(threads)}", [wall], [cpu],
                     f"{st['llvm_parts']} LLVM parts, {gemm_library.compiled()} generic gemm modules compiled")
            else:
                tp_total[threads].append(wall)
                tp_cpu[threads].append(cpu)
                if threads == counts[-1]:
                    phases["trace + passes"].append(wall - st["total_s"])
                    for name, seconds in st["phases"].items():
                        phases.setdefault(name, []).append(seconds)
        g = grad(tp_loss)
        _, wall, cpu = _timed(lambda: g(tparams, xt, yt))
        if k:
            tp_plain.append(wall)
            tp_plain_cpu.append(cpu)
        if jax is not None:
            xj, yj = J.array(x), J.array(y)

            def j_loss(ps, xx, yy):
                return J.loss(ps, xx, yy)
            jf = jax.jit(jax.grad(j_loss))
            jout, wall, cpu = _timed(lambda: jax.block_until_ready(jf(jparams, xj, yj)))
            if k == 0:
                _row(suite, "cold (1st in process)", "jax.jit(grad)", [wall], [cpu])
            else:
                j_total.append(wall)
                j_cpu.append(cpu)
                jf2 = jax.jit(jax.grad(lambda ps, xx, yy: J.loss(ps, xx, yy)))
                t0 = time.perf_counter()
                traced = jf2.trace(jparams, xj, yj)
                t1 = time.perf_counter()
                lowered = traced.lower()
                t2 = time.perf_counter()
                lowered.compile()
                t3 = time.perf_counter()
                j_phase["trace"].append(t1 - t0)
                j_phase["lower"].append(t2 - t1)
                j_phase["compile"].append(t3 - t2)
            msg = H.compare(out, jout, 2e-3, 2e-6)
            if msg:
                suite.failures.append(f"first call, batch {n}: tp.compile(grad) vs jax.jit(grad): {msg}")
        if torch is not None:
            xto, yto = torch.from_numpy(x), torch.from_numpy(y)
            tg = torch.func.grad(lambda ps, xx, yy: TO.loss(ps, xx, yy))
            _, wall, cpu = _timed(lambda: tg(toparams, xto, yto))
            if k:
                to_first.append(wall)
                to_first_cpu.append(cpu)
    case = "warm (new fn + shape)"
    for threads in counts:
        _row(suite, case, f"tp.compile(grad) {_threads(threads)}", tp_total[threads], tp_cpu[threads])
    for name, vals in phases.items():
        _row(suite, case, f"  tp {_threads(counts[-1])}: {name}", vals, [float("nan")])
    if jax is not None:
        _row(suite, case, "jax.jit(grad)", j_total, j_cpu)
        for name, vals in j_phase.items():
            _row(suite, case, f"  jax AOT: {name}", vals, [float("nan")])
    _row(suite, case, "tp grad (plain), 1st call", tp_plain, tp_plain_cpu, "trace+passes+compile")
    if torch is not None:
        _row(suite, case, "torch.func.grad, 1st call", to_first, to_first_cpu, "eager")
    return suite


def cached_calls(args, jax, torch) -> H.Suite:
    suite = H.Suite("cached call path, tiny inputs", ref="jax.jit", unit="us", rtol=1e-5, atol=1e-6)
    T = M.tensorplay_fns()
    tp = T.tp
    # (a) one 4-element input
    x = np.arange(4, dtype=np.float32)
    xt = tp.from_numpy(x)
    f = tp.compile(lambda v: v * 2 + 1)
    f(xt)
    exe = codegen.compile_graph(f.get_graph(xt).graph)
    impls = [H.Impl("numpy", lambda: x * 2 + 1),
             H.Impl("tp.compile", lambda: f(xt)),
             H.Impl("codegen Executable", lambda: exe(x)[0], note="no Tensor wrapper")]
    if jax is not None:
        xj = jax.numpy.asarray(x)
        jf = jax.jit(lambda v: v * 2 + 1)
        impls.append(H.Impl("jax.jit", lambda: jf(xj).block_until_ready()))
    if torch is not None:
        xto = torch.from_numpy(x)
        impls.append(H.Impl("torch eager", lambda: xto * 2 + 1))
    suite.run_case("x*2+1, 4 elements", impls, args)
    # (b) tiny MLP loss + grad: 6 parameter tensors + x + y
    sizes = [3, 2, 2] if args.quick else [4, 8, 8, 2]
    P = M.init_mlp(sizes)
    xb, yb = M.batch(2, sizes[0], sizes[-1])
    tps, xbt, ybt = T.params(P), T.array(xb), T.array(yb)
    g = tp.compile(grad(T.loss))
    g(tps, xbt, ybt)
    closed = g.get_graph(tps, xbt, ybt)
    gexe = codegen.compile_graph(closed.graph)
    arrays = [t._data for t in [*[a for wb in tps for a in wb], xbt, ybt] + closed.capture_tensors()]
    impls = [H.Impl("tp.compile(grad)", lambda: g(tps, xbt, ybt)),
             H.Impl("codegen Executable", lambda: gexe(*arrays), check=False, note="flat outputs")]
    if jax is not None:
        J = M.jax_fns(jax)
        jps, xj, yj = J.params(P), J.array(xb), J.array(yb)
        jg = jax.jit(jax.grad(J.loss))
        impls.append(H.Impl("jax.jit", lambda: jax.block_until_ready(jg(jps, xj, yj))))
    if torch is not None:
        TO = M.torch_fns(torch)
        tops, xto, yto = TO.params(P), torch.from_numpy(xb), torch.from_numpy(yb)
        tg = torch.func.grad(TO.loss)
        impls.append(H.Impl("torch.func.grad", lambda: tg(tops, xto, yto)))
    suite.run_case(f"MLP {'-'.join(map(str, sizes))} loss+grad, batch 2", impls, args, rtol=1e-4, atol=1e-6)
    return suite


def conv_first_call(args) -> H.Suite:
    """First call of `tp.compile(grad(conv loss))`, cold and over new batch sizes (Part 1b)."""
    import tensorplay as tp

    F = tp.nn.functional
    suite = H.Suite("time to first result: conv2d + relu + max_pool2d grad", ref="tp.compile(grad)", unit="ms")
    rng = np.random.default_rng(0)
    w = tp.tensor(rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.2)
    b = tp.tensor(np.zeros(16, np.float32))
    counts = args.compile_threads
    walls, cpus, phases = {n: [] for n in counts}, {n: [] for n in counts}, {}
    batch0, hw = (2, 8) if args.quick else (8, 32)
    for k in range(args.samples + 1):
        x = tp.tensor(rng.standard_normal((batch0 + k, 3, hw, hw)).astype(np.float32))
        for threads in counts[:1] if k == 0 else counts:
            jit.COMPILE_THREADS = threads

            def loss(w, b, x):  # a new function object per sample
                return F.max_pool2d(F.relu(F.conv2d(x, w, b, padding=1)), 2).sum()
            tp.compiler.reset()
            f = tp.compile(grad(loss, argnums=(0, 1)))
            out, wall, cpu = _timed(lambda: f(w, b, x))
            ref = grad(loss, argnums=(0, 1))(w, b, x)
            msg = H.compare([o.numpy() for o in out], [r.numpy() for r in ref], 2e-4, 2e-5)
            if msg:
                suite.failures.append(f"conv grad, batch {batch0 + k}: tp.compile vs plain grad: {msg}")
            st = codegen.compile_graph(f.get_graph(w, b, x).graph).stats
            if k == 0:
                _row(suite, "cold (1st in process)", f"tp.compile(grad) {_threads(threads)}", [wall], [cpu],
                     f"{st['nodes']} nodes, {st['kernels']} kernels, {st['llvm_parts']} LLVM parts")
                continue
            walls[threads].append(wall)
            cpus[threads].append(cpu)
            if threads == counts[-1]:
                for name, seconds in st["phases"].items():
                    phases.setdefault(name, []).append(seconds)
    case = "warm (new fn + shape)"
    for threads in counts:
        _row(suite, case, f"tp.compile(grad) {_threads(threads)}", walls[threads], cpus[threads], "target <= 500 ms")
    for name, vals in phases.items():
        if any(vals):
            _row(suite, case, f"  tp {_threads(counts[-1])}: {name}", vals, [float("nan")])
    return suite


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=15)
    ap.add_argument("--samples", type=int, default=None, help="warm first-call samples (default 5)")
    ap.add_argument("--compile-threads", default=str(jit.COMPILE_THREADS),
                    help="comma-separated LLVM compile thread counts to compare (default: the codegen's own)")
    args = H.parse(ap, argv)
    args.compile_threads = [max(1, int(n)) for n in args.compile_threads.split(",")]
    if args.samples is None:
        args.samples = 1 if args.quick else 5
    sizes = [3, 3, 2] if args.quick else [784, 256, 256, 10]
    H.header("compile latency and cached call overhead", args)
    jax, torch = H.import_jax(), H.import_torch()
    s1 = first_call(args, sizes, 3 if args.quick else 64, jax, torch)
    s1b = conv_first_call(args)
    s2 = cached_calls(args, jax, torch)
    notes = ["part 1 rows are single first calls (median over samples for the warm rows); indented rows "
             "are phases of the row above; 'trace + passes' = first call minus codegen time (so it also "
             "holds the first execution, well under 1 ms here)."]
    return H.report([s1, s1b, s2], args, notes)


if __name__ == "__main__":
    sys.exit(main())
