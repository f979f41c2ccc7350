"""Scaling out vmap (issue 17): chunks on threads, on a dask cluster, and within a memory budget.

    python -m tensorplay.tools.bench.bench_scaleout [--quick] [--markdown] [--parts threads dask rss]
                                                    [--batch 1024] [--chunk 128] [--budget 16MB]
                                                    [--long-batch 16384]

1. threads: per-sample gradients of an MLP 32-128-128-10 (the torch.func tutorial's
   `vmap(grad(loss))`, as in bench_per_sample_grads), B=1024, `chunk_size=128` on a
   ThreadPoolExecutor of 1 and of 2 threads (ratios against 1 thread), next to the unchunked
   and the serial chunked map. Compiled code releases the GIL; each chunk's executable runs
   single-threaded (`codegen.executable.serial_calls`) and BLAS is pinned to one thread by the
   harness (TP_BENCH_THREADS=1), so two chunk threads use two cores and no more. Roofline rows:
   our streaming-store fill and numpy filling the map's output bytes, 1 and 2 threads. Notes:
   the GIL probe, the serial part from CPU times (Amdahl's bound), the roofline bound (best
   possible 2-thread map from the same run's rows), 1 vs 2 threads from on-CPU calls only
   (robust to load), 1 vs 2 threads when every result is kept (so that no map reuses the
   output memory of a dropped one), and the chunk kernels alone with streaming vs regular
   stores next to the fills, 1 vs 2 threads (on-CPU samples).
2. dask: the same chunks on a `LocalCluster(n_workers=2, processes=True, threads_per_worker=1)`
   (its executor made with `pure=False`) against a 2-thread pool, at chunk_size 128 and B/2, for
   the per-sample *parameter* gradients of (1), whose result (B x 22,026 floats = 90 MB) must
   travel back from the workers, and the per-sample *input* gradients of a deeper MLP
   32-256-256-256-1 (B x 32 floats back, compute-bound), also at B=16384 in chunks of B/2
   (chunks long enough for dask's fixed cost per map not to matter). Wall times, the
   calling process's CPU (with the scheduler), and the worker processes' CPU per map. Notes:
   the dask floor (a map of 2 no-op tasks: what dask alone costs per map) and the caller's
   cost of knowing the unbatched inputs by content.
3. rss: a 65,536-sample map (an MLP 64-256-256-10 forward per sample) with
   `chunk_size="auto", max_memory=BUDGET`, in a fresh subprocess per configuration: the peak
   RSS during a warm call above the RSS before it, minus the result the call returns, against
   the budget; the unchunked map for comparison. glibc's dynamic mmap threshold is pinned
   (MALLOC_MMAP_THRESHOLD_) so that freed arrays leave the process and the baseline is live
   data only.

Standalone: needs dask.distributed for part 2 (skipped with a note when absent).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402
from tensorplay.tools.bench import _models as M  # noqa: E402

from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402

from tensorplay.func import grad, vmap  # noqa: E402


# --- 1. threads ------------------------------------------------------------------------------------
def _workload(args, batch: int | None = None) -> SimpleNamespace:
    """The per-sample-gradient setup every part shares: MLP sizes, batch and chunk size (small
    with --quick), the tensorplay model functions, parameters and one batch (x, y)."""
    sizes = [3, 4, 2] if args.quick else [32, 128, 128, 10]
    batch = batch or (8 if args.quick else args.batch)
    T = M.tensorplay_fns()
    params = T.params(M.init_mlp(sizes))
    x, y = (T.array(a) for a in M.batch(batch, sizes[0], sizes[-1]))
    return SimpleNamespace(sizes=sizes, batch=batch, chunk=2 if args.quick else args.chunk, T=T, params=params,
                           x=x, y=y, psg=lambda **kw: vmap(grad(T.loss1), in_dims=(None, 0, 0), **kw))


def threads_suite(args) -> H.Suite:
    """The map on 1 and 2 threads, the serial chunks and the unchunked map, and in the same
    round-robin the write ceiling under them (roofline rows): our own streaming-store kernel
    (`_stream_fill`) and numpy filling a warm block of the map's output bytes, on 1 and on 2
    threads (the calling thread and a pool thread, as the map runs its chunks)."""
    w = _workload(args)
    one, two = ThreadPoolExecutor(1), ThreadPoolExecutor(2)
    on = {n: w.psg(chunk_size=w.chunk, executor=ex) for n, ex in ((1, one), (2, two))}
    serial, psg = w.psg(chunk_size=w.chunk), w.psg()
    call = (w.params, w.x, w.y)
    nbytes = sum(a.numpy().nbytes for a in _flat_tensors(on[1](*call)))
    block = _aligned_floats(nbytes // 4)
    block.fill(0.0)  # paged in, as the map's recycled output block is
    stream = _stream_fill()

    def fill(threads: int, fn):
        halves = _split_aligned(block, threads)
        pending = [two.submit(fn, h) for h in halves[1:]]
        fn(halves[0])
        for f in pending:
            f.result()

    mb = f"{nbytes / 1e6:.0f} MB"
    suite = H.Suite(f"per-sample gradients, MLP {'-'.join(map(str, w.sizes))}, B={w.batch}, chunk_size={w.chunk} "
                    f"(ratio to 1 thread; < 1 = faster); roofline rows: the map's {mb} of outputs written by a "
                    f"streaming-store fill (our kernel: vmovntps + sfence) and by numpy", ref="1 thread", rtol=0, atol=0)
    suite.run_case(f"B={w.batch}", [
        H.Impl("1 thread", lambda: on[1](*call)),
        H.Impl("2 threads", lambda: on[2](*call)),
        H.Impl("serial chunks", lambda: serial(*call)),
        H.Impl("unchunked", lambda: psg(*call), check=False,  # BLAS rounds per m (codegen.dot)
               note="gemm-sized products round per chunk size, so not compared bit for bit"),
        H.Impl(f"streaming fill of {mb}, 1 thread", lambda: fill(1, stream), check=False),
        H.Impl(f"streaming fill of {mb}, 2 threads", lambda: fill(2, stream), check=False),
        H.Impl(f"numpy fill of {mb}, 1 thread", lambda: fill(1, lambda a: a.fill(1.5)), check=False),
        H.Impl(f"numpy fill of {mb}, 2 threads", lambda: fill(2, lambda a: a.fill(1.5)), check=False),
    ], args)
    one.shutdown()
    two.shutdown()
    suite.output_bytes = nbytes
    return suite


def roofline_note(suite: H.Suite, serial_cpu: float) -> str:
    """What 2 threads can at best do for this map, from the same run's rows: the serial part S
    (the calling thread's own CPU per map, `serial_probe`), the chunks (the 1-thread map less
    S), which take at best half their time on 2 threads and never less than the streaming fill
    of the same bytes on 2 threads (the host's write ceiling). With S in series with the chunks
    the best 2-thread map is S + max(chunks / 2, 2-thread fill); with S overlapping them (the
    pool starts a repeated call's chunks while it traces) max((S + chunks) / 2, 2-thread fill,
    S). The note gives both, the ratios they allow against the 1-thread map, and the measured one."""
    t = {r.impl: r.timing.median for r in suite.rows if r.timing is not None}
    try:
        m1, m2 = t["1 thread"], t["2 threads"]
        w1, w2 = (next(v for k, v in t.items() if k.startswith("streaming fill") and k.endswith(s))
                  for s in ("1 thread", "2 threads"))
    except (KeyError, StopIteration):
        return "roofline: a row is missing (see the table)"
    s = min(serial_cpu, m1 / 2)  # (--quick: a map so small that the CPU probe and the wall times disagree)
    c1 = m1 - s
    best = s + max(c1 / 2, w2)
    overlapped = max((s + c1) / 2, w2, s)
    gb = suite.output_bytes / 1e9
    return (f"roofline (medians of the table, S from the serial probe): streaming fill {1e3 * w1:.2f} / "
            f"{1e3 * w2:.2f} ms on 1 / 2 threads ({gb / w1:.1f} / {gb / w2:.1f} GB/s, {w1 / w2:.2f}x); the 1-thread "
            f"map {1e3 * m1:.2f} ms = S {1e3 * s:.2f} + chunks {1e3 * c1:.2f} ms (chunks at {gb / c1:.1f} GB/s, "
            f"{w1 / c1:.0%} of the 1-thread fill's speed); best possible 2-thread map with S in series, "
            f"S + max(chunks / 2, 2-thread fill) = {1e3 * best:.2f} ms (at most **{m1 / best:.2f}x**), with S "
            f"overlapping the chunks max((S + chunks) / 2, 2-thread fill, S) = {1e3 * overlapped:.2f} ms (at most "
            f"**{m1 / overlapped:.2f}x**); target 1.7x; measured {1e3 * m2:.2f} ms = **{m1 / m2:.2f}x**")


def _aligned_floats(n: int) -> np.ndarray:
    """n float32s (rounded down to a multiple of 64), 64-byte aligned."""
    n = max(64, n - n % 64)
    raw = np.empty(n + 16, np.float32)
    start = (-raw.ctypes.data % 64) // 4
    return raw[start:start + n]


def _split_aligned(a: np.ndarray, parts: int) -> list[np.ndarray]:
    """`a` (64-byte aligned, a multiple of 64 elements) cut into `parts` pieces that are too."""
    step = -(-a.size // parts // 64) * 64
    return [a[k * step:(k + 1) * step] for k in range(parts) if a[k * step:(k + 1) * step].size]


_FILL: list = []  # (the JIT engine, which owns the code, and the ctypes function)


def _stream_fill():
    """Our own streaming-store kernel: ``fill(a)`` writes 1.5 into every element of a float32 array
    (64-byte aligned, a multiple of 32 elements) with 32-byte non-temporal vector stores
    (`vmovntps`, four per iteration), then `sfence`; the call releases the GIL (ctypes). What
    the map's streamed outputs cost the host's memory at best."""
    if not _FILL:
        import ctypes

        import llvmlite.binding as llvm
        from llvmlite import ir

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        f32, i64, i32 = ir.FloatType(), ir.IntType(64), ir.IntType(32)
        v8 = ir.VectorType(f32, 8)
        m = ir.Module("stream_fill")
        m.triple = llvm.get_process_triple()
        fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [f32.as_pointer(), i64, f32]), "stream_fill")
        p, n, value = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        vec = ir.Constant(v8, ir.Undefined)
        for k in range(8):
            vec = b.insert_element(vec, value, ir.Constant(i32, k))
        entry, loop, done = b.block, fn.append_basic_block("loop"), fn.append_basic_block("done")
        b.cbranch(b.icmp_signed(">", n, ir.Constant(i64, 0)), loop, done)
        b.position_at_end(loop)
        i = b.phi(i64)
        i.add_incoming(ir.Constant(i64, 0), entry)
        vp = b.bitcast(b.gep(p, [i]), v8.as_pointer())
        hint = m.add_metadata([ir.Constant(i32, 1)])
        for u in range(4):
            b.store(vec, b.gep(vp, [ir.Constant(i64, u)]), align=32).set_metadata("nontemporal", hint)
        nxt = b.add(i, ir.Constant(i64, 32))
        i.add_incoming(nxt, loop)
        b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
        b.position_at_end(done)
        b.call(ir.Function(m, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse.sfence"), [])
        b.ret_void()
        target = llvm.Target.from_default_triple().create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3)
        mod = llvm.parse_assembly(str(m))
        mod.verify()
        engine = llvm.create_mcjit_compiler(mod, target)
        engine.finalize_object()
        cfn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float)(
            engine.get_function_address("stream_fill"))
        _FILL.extend([engine, cfn])
    cfn = _FILL[1]

    def fill(a: np.ndarray) -> None:
        assert a.dtype == np.float32 and a.ctypes.data % 64 == 0 and a.size % 32 == 0
        cfn(a.ctypes.data, a.size, 1.5)

    return fill


def on_cpu_note(args) -> str:
    """1 vs 2 threads for the map itself, from on-CPU calls only: calls alternate between the
    1- and 2-thread maps for a fixed time, and a call counts when the calling thread was on a CPU
    for >= 93% of it (less the time it waited at the end for the pool thread's last chunk) and
    the pool thread for >= 95% of the span of its chunks. On a loaded machine the table's
    medians time the scheduler; these do not (on an idle one both agree)."""
    import statistics
    import threading
    import time

    from tensorplay.func import _chunks

    w = _workload(args)
    call = (w.params, w.x, w.y)
    rec: list = []
    run_here = _chunks.run_here

    def timed(*a):
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return run_here(*a)
        finally:
            rec.append((threading.get_ident(), t0, time.perf_counter(), time.thread_time() - c0))

    me = threading.get_ident()
    kept: dict[int, list[float]] = {1: [], 2: []}
    tries = 0
    with ThreadPoolExecutor(1) as one, ThreadPoolExecutor(2) as two:
        fs = {1: w.psg(chunk_size=w.chunk, executor=one), 2: w.psg(chunk_size=w.chunk, executor=two)}
        for f in fs.values():
            f(*call)
            f(*call)
        _chunks.run_here = timed
        try:
            stop = time.perf_counter() + (2.0 if args.quick else 20.0)
            while time.perf_counter() < stop:
                for n, f in fs.items():
                    tries += 1
                    rec.clear()
                    t0, c0 = time.perf_counter(), time.thread_time()
                    f(*call)
                    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
                    others = [r for r in rec if r[0] != me]
                    mine_end = max((r[2] for r in rec if r[0] == me), default=t0)
                    waited = max(0.0, max((r[2] for r in others), default=t0) - mine_end)
                    if (cpu + waited) < 0.93 * wall:
                        continue
                    if others and sum(r[3] for r in others) < 0.95 * (max(r[2] for r in others) - min(r[1] for r in others)):
                        continue
                    kept[n].append(wall)
        finally:
            _chunks.run_here = run_here
    if len(kept[1]) < 3 or len(kept[2]) < 3:
        return (f"on-CPU calls of the map: too few ({len(kept[1])} on 1 thread, {len(kept[2])} on 2, of {tries}): "
                f"the machine never left two cores free for a whole call")
    m1, m2 = statistics.median(kept[1]), statistics.median(kept[2])
    return (f"on-CPU calls of the map ({len(kept[1])} on 1 thread, {len(kept[2])} on 2, of {tries}): 1 thread "
            f"{1e3 * m1:.2f} ms, 2 threads {1e3 * m2:.2f} ms: **{m1 / m2:.2f}x**")


def fresh_memory_note(args) -> str:
    """1 vs 2 threads when every result is kept, so that each map writes memory fresh from the
    kernel (page faults and zeroing) instead of the block the previous, dropped, result used."""
    import statistics
    import time

    w = _workload(args)
    times: dict[int, list[float]] = {1: [], 2: []}
    with ThreadPoolExecutor(1) as one, ThreadPoolExecutor(2) as two:
        fs = {1: w.psg(chunk_size=w.chunk, executor=one), 2: w.psg(chunk_size=w.chunk, executor=two)}
        for n in (1, 2):
            fs[n](w.params, w.x, w.y)
        for _ in range(3 if args.quick else 9):
            for n in (1, 2):
                kept = [fs[n](w.params, w.x, w.y) for _ in range(2)]  # warm: the recycled block is in use
                t0, c0 = time.perf_counter(), time.process_time()
                kept.append(fs[n](w.params, w.x, w.y))
                times[n].append((time.perf_counter() - t0, time.process_time() - c0))
                del kept
    m = {n: (statistics.median(t for t, _ in v), statistics.median(c for _, c in v)) for n, v in times.items()}
    return (f"results kept (fresh output memory every map, median of {len(times[1])}): 1 thread {1e3 * m[1][0]:.2f} ms "
            f"(cpu {1e3 * m[1][1]:.2f}), 2 threads {1e3 * m[2][0]:.2f} ms (cpu {1e3 * m[2][1]:.2f}): "
            f"{m[1][0] / m[2][0]:.2f}x")


def stores_note(args) -> str:
    """The chunk kernels alone, into the map's 90 MB output block, on 1 and on 2 threads (each
    thread taking every other chunk), compiled with streaming (non-temporal) stores and with
    regular ones (`TENSORPLAY_STREAM_MIN_BYTES=off`), interleaved; and the VM's memory write
    bandwidth for reference: our streaming fill (`_stream_fill`) and numpy filling a block of
    the same size on 1 and 2 threads. Medians of the samples in which every thread was on a
    CPU all along (its thread CPU time >= 97% of its wall time) and the threads overlapped for
    >= 90% of the sample: on a loaded machine the other samples time the scheduler, not the
    memory (2 threads taking turns on one core look like no speed-up at all); `n` says how many
    samples were kept of how many (all of them, marked, when fewer than 3 qualify)."""
    import statistics
    import threading
    import time

    from tensorplay.codegen import irutil
    from tensorplay.codegen.executable import Executable, serial_calls
    from tensorplay.func import _chunks

    w = _workload(args)
    seen: list = []
    run_here = _chunks.run_here
    _chunks.run_here = lambda program, arrays, placement=None: (
        seen.append((program, [np.array(a) for a in arrays])), run_here(program, arrays, placement))[1]
    try:
        with ThreadPoolExecutor(1) as one:
            w.psg(chunk_size=w.chunk, executor=one)(w.params, w.x, w.y)
    finally:
        _chunks.run_here = run_here
    program, arrays = seen[0]
    graph = program.graph()
    before = os.environ.get("TENSORPLAY_STREAM_MIN_BYTES")
    exes = {}
    try:
        for name, value in (("streaming", before or ""), ("regular", "off")):
            os.environ["TENSORPLAY_STREAM_MIN_BYTES"] = value
            irutil.reset_streaming()
            exes[name] = Executable(graph)
    finally:
        if before is None:
            os.environ.pop("TENSORPLAY_STREAM_MIN_BYTES", None)
        else:
            os.environ["TENSORPLAY_STREAM_MIN_BYTES"] = before
        irutil.reset_streaming()
    n_chunks = max(1, w.batch // w.chunk)
    blocks = [np.zeros((n_chunks * v.type.shape[0],) + v.type.shape[1:], v.dtype.np) for v in graph.outputs]
    nbytes = sum(b.nbytes for b in blocks)
    fill = _aligned_floats(nbytes // 4)
    fill.fill(0.0)
    stream = _stream_fill()

    def timed(threads: int, work) -> tuple[float, bool]:
        spans: list = [None] * threads
        barrier = threading.Barrier(threads)

        def run(k):
            barrier.wait()
            t0, c0 = time.perf_counter(), time.thread_time()
            work(k, threads)
            spans[k] = (t0, time.perf_counter(), time.thread_time() - c0)

        ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        first, last = min(s[0] for s in spans), max(s[1] for s in spans)
        overlap = min(s[1] for s in spans) - max(s[0] for s in spans)
        on_cpu = all(c >= 0.97 * (e - s) for s, e, c in spans) and overlap >= 0.9 * (last - first)
        return last - first, on_cpu

    def chunks(exe):
        def work(k, threads):
            with serial_calls():
                for i in range(k, n_chunks, threads):
                    exe(*arrays, out=[b[i * w.chunk:(i + 1) * w.chunk] for b in blocks])
        return work

    def filler(k, threads):
        fill[k * -(-fill.size // threads):(k + 1) * -(-fill.size // threads)].fill(1.5)

    def streamer(k, threads):
        stream(_split_aligned(fill, threads)[k])

    cases = {(name, th): chunks(exe) for name, exe in exes.items() for th in (1, 2)}
    cases.update({("streaming fill", th): streamer for th in (1, 2)})
    cases.update({("numpy fill", th): filler for th in (1, 2)})
    times: dict = {key: [] for key in cases}
    for _ in range(3 if args.quick else 25):
        for (name, th), work in cases.items():
            times[(name, th)].append(timed(th, work))
    m, kept = {}, {}
    for key, v in times.items():
        good = [t for t, ok in v if ok]
        kept[key] = f"{len(good)}/{len(v)}" if len(good) >= 3 else f"all {len(v)}: fewer than 3 on-CPU"
        m[key] = statistics.median(good if len(good) >= 3 else [t for t, _ in v])
    parts = [f"{name} {1e3 * m[(name, 1)]:.2f} / {1e3 * m[(name, 2)]:.2f} ms ({m[(name, 1)] / m[(name, 2)]:.2f}x; "
             f"{nbytes / m[(name, 1)] / 1e9:.1f} / {nbytes / m[(name, 2)] / 1e9:.1f} GB/s; n {kept[(name, 1)]} / "
             f"{kept[(name, 2)]})" for name in ("streaming", "regular", "streaming fill", "numpy fill")]
    return (f"chunk kernels alone (on-CPU samples), {n_chunks} chunks into the {nbytes / 1e6:.0f} MB output block, "
            f"1 / 2 threads: " + "; ".join(parts))


def gil_probe(args) -> str:
    """Does a chunk's compiled call release the GIL? Two threads each run one chunk's executable
    (`run_chunk`, as an executor does) in a loop; the note says for how much of the time both
    calls were in flight at once, and how often a Python loop in the main thread ran meanwhile."""
    import threading
    import time

    from tensorplay.func import _chunks
    from tensorplay.func._vmap import _BATCHED

    w = _workload(args, batch=(2 if args.quick else args.chunk) * 2)
    chunk = w.chunk
    w.psg(chunk_size=chunk)(w.params, w.x, w.y)
    graph = next(g for key, g in _BATCHED._data.items() if key[2] == chunk)
    program = _chunks.ChunkProgram.of(graph)
    arrays = [np.random.default_rng(0).standard_normal(v.type.shape).astype(v.dtype.np) if v.dtype.np.kind == "f"
              else np.zeros(v.type.shape, v.dtype.np) for v in graph.inputs]
    calls = 5 if args.quick else 40
    spans: list[list[tuple[float, float]]] = [[], []]
    done = threading.Event()

    def worker(k: int) -> None:
        for _ in range(calls):
            t0 = time.perf_counter()
            _chunks.run_chunk(program, arrays)
            spans[k].append((t0, time.perf_counter()))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    ticks = 0
    for t in threads:
        t.start()
    watcher = threading.Thread(target=lambda: ([t.join() for t in threads], done.set()))
    watcher.start()
    while not done.is_set():
        ticks += 1
    both = sum(max(0.0, min(a1, b1) - max(a0, b0)) for a0, a1 in spans[0] for b0, b1 in spans[1])
    busy = sum(t1 - t0 for t1_list in spans for t0, t1 in t1_list)
    first, last = min(s[0] for sp in spans for s in sp), max(s[1] for sp in spans for s in sp)
    return (f"GIL probe: 2 threads x {calls} calls of one chunk's executable ({chunk} samples, "
            f"median {1e3 * sorted(t1 - t0 for t0, t1 in spans[0])[calls // 2]:.1f} ms): both in flight "
            f"{100 * both / (last - first):.0f}% of the {1e3 * (last - first):.0f} ms (calls busy {1e3 * busy:.0f} ms "
            f"in total); meanwhile the main thread ran {ticks} Python loop iterations")


def serial_probe(args) -> str:
    """Amdahl's law from CPU times, which a loaded machine does not distort as it does wall times:
    on a 1-thread pool, the calling thread's CPU time per map is the serial part S (tracing, the
    batched-graph lookup, submitting and collecting the chunks) and the chunk threads' CPU time is
    the parallel part P (the compiled chunks, writing the result); 2 threads can at best take
    S + P / 2. The note gives S, P and (S + P) / (S + P / 2), medians over the calls."""
    import statistics
    import threading
    import time

    from tensorplay.func import _chunks

    w = _workload(args)
    batch, chunk = w.batch, w.chunk
    inside: list[tuple[int, float]] = []  # (thread, CPU seconds) of each chunk run
    lock = threading.Lock()
    run_here = _chunks.run_here

    def timed(*a):
        t0 = time.thread_time()
        try:
            return run_here(*a)
        finally:
            with lock:
                inside.append((threading.get_ident(), time.thread_time() - t0))

    me = threading.get_ident()
    serial, parallel = [], []
    with ThreadPoolExecutor(1) as one:
        f = w.psg(chunk_size=chunk, executor=one)
        f(w.params, w.x, w.y)
        _chunks.run_here = timed
        try:
            for _ in range(3 if args.quick else 31):
                inside.clear()
                t0 = time.thread_time()
                f(w.params, w.x, w.y)
                total = time.thread_time() - t0
                serial.append(total - sum(t for who, t in inside if who == me))  # it runs chunks too
                parallel.append(sum(t for _, t in inside))
        finally:
            _chunks.run_here = run_here
    S, P = statistics.median(serial), statistics.median(parallel)
    serial_probe.last = S
    return (f"serial part (CPU, 1-thread pool, B={batch}, chunk_size={chunk}): the calling thread {1e3 * S:.2f} ms "
            f"per map besides the chunks it runs, the chunks {1e3 * P:.2f} ms; Amdahl bound for 2 threads "
            f"(S + P) / (S + P/2) = {(S + P) / (S + P / 2):.2f}x (no memory bound: see the roofline note)")


# --- 2. dask ---------------------------------------------------------------------------------------
def dask_suite(args) -> H.Suite | str:
    """Every row: wall (median / min), the calling process's CPU (`cpu ms`: for dask it hosts the
    LocalCluster's scheduler too) and the worker processes' CPU per map (asked of the workers with
    `client.run(time.process_time)` around a separate run of calls), their sum, and that sum
    against the thread pool's CPU (which is all in the calling process)."""
    try:
        import logging

        from distributed import Client, LocalCluster
    except ImportError:
        return "dask: dask.distributed is not installed (pip install tensorplay[distributed]); skipped"
    import time

    w = _workload(args)
    T, tp, chunk, batch = w.T, w.T.tp, w.chunk, w.batch
    deep = [3, 4, 1] if args.quick else [32, 256, 256, 256, 1]
    p_deep = T.params(M.init_mlp(deep, seed=2))
    long_batch = 16 if args.quick else args.long_batch
    x_long = T.array(M.batch(long_batch, deep[0], 1, seed=3)[0])

    def saliency(ps, v):  # per-sample input gradient of a scalar network output
        return tp.tanh(T.mlp(ps, v.unsqueeze(0))).sum()

    def input_grads(ex, n):
        return vmap(grad(saliency, argnums=1), in_dims=(None, 0), chunk_size=n, executor=ex)

    halves = lambda b: sorted({chunk, max(1, b // 2)})  # noqa: E731
    workloads = [  # (name, make(executor, chunk size), call arguments, chunk sizes)
        ("param grads", lambda ex, n: w.psg(chunk_size=n, executor=ex), (w.params, w.x, w.y), halves(batch)),
        ("input grads", input_grads, (p_deep, w.x), halves(batch)),
        (f"input grads B={long_batch}", input_grads, (p_deep, x_long), [max(1, long_batch // 2)]),
    ]
    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                           silence_logs=logging.CRITICAL)
    client = Client(cluster, timeout="120s")
    pool = ThreadPoolExecutor(2)
    workers_cpu: dict[tuple[str, str], float] = {}
    spent: dict[str, tuple[float, float, int]] = {}  # case -> workers' CPU seconds, wall seconds, calls

    def worker_seconds() -> float:
        return sum(client.run(time.process_time).values())

    caller_idle = [0.0]  # the calling process's CPU per second while nothing runs (scheduler, client loops)

    suite = H.Suite(f"dask LocalCluster (2 worker processes, 1 thread each) vs a 2-thread pool, B={batch} unless "
                    f"given (ratio to the thread pool)", ref="2 threads", rtol=0, atol=0)

    def fmt(case, impl, timing, total=False, ratio=False):
        wk = workers_cpu.get((case, impl), 0.0)
        if not (total or ratio):
            return f"{1e3 * wk:.4g}"
        mine = timing.cpu_median + wk
        if total:
            return f"{1e3 * mine:.4g}"
        ref = next((r for r in suite.rows if r.case == case and r.impl == suite.ref and r.timing), None)
        return f"{mine / (ref.timing.cpu_median + workers_cpu.get((case, ref.impl), 0.0)):.2f}x" if ref else "-"

    suite.extra = {"workers cpu ms": fmt, "caller + workers cpu ms": lambda *a: fmt(*a, total=True),
                   "total cpu vs ref": lambda *a: fmt(*a, ratio=True)}
    notes: list[str] = []
    try:
        dask_ex = client.get_executor(pure=False)  # pure=False: dask does not hash the arrays for task keys
        for name, make, call_args, sizes in workloads:
            for size in sizes:
                case = f"{name}, chunk_size={size}"
                fns = {"2 threads": lambda f=make(pool, size), a=call_args: f(*a),
                       "dask, 2 workers": lambda f=make(dask_ex, size), a=call_args: f(*a)}
                suite.run_case(case, [H.Impl(n, fn) for n, fn in fns.items()], args)
                calls = 2 if args.quick else 5
                before, t0 = worker_seconds(), time.perf_counter()
                for _ in range(calls):
                    fns["dask, 2 workers"]()
                spent[case] = (worker_seconds() - before, time.perf_counter() - t0, calls)
        before, c0, t0 = worker_seconds(), time.process_time(), time.perf_counter()
        time.sleep(0.5 if args.quick else 2.0)
        idle = max(0.0, (worker_seconds() - before) / (time.perf_counter() - t0))
        caller_idle[0] = (time.process_time() - c0) / (time.perf_counter() - t0)
        for case, (cpu, wall, calls) in spent.items():  # net of what idle workers spend meanwhile
            workers_cpu[(case, "dask, 2 workers")] = max(0.0, cpu - idle * wall) / calls
        suite.title += (f"; `workers cpu ms` is net of the {1e3 * idle:.1f} ms of CPU per second that the idle "
                        f"workers use (heartbeats, event loops); the calling process's idle dask threads use "
                        f"{1e3 * caller_idle[0]:.1f} ms per second (included in `cpu ms`)")
        notes.append(dask_floor_note(client, args, worker_seconds, idle))
        notes.append(hashing_note(workloads))
    finally:
        pool.shutdown()
        client.close()
        cluster.close()
    suite.notes = notes
    return suite


def dask_floor_note(client, args, worker_seconds, idle: float) -> str:
    """What dask itself costs per map of 2 tasks that do nothing (one `client.map`, one `gather`):
    the floor under any dask row of the table (its wall, the caller's CPU, the workers' CPU)."""
    import statistics
    import time

    def noop(i):
        return i

    for _ in range(3):
        client.gather(client.map(noop, range(2), pure=False))
    walls, cpus = [], []
    before, t0 = worker_seconds(), time.perf_counter()
    calls = 5 if args.quick else 21
    for _ in range(calls):
        w0, c0 = time.perf_counter(), time.process_time()
        client.gather(client.map(noop, range(2), pure=False))
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    workers = max(0.0, worker_seconds() - before - idle * (time.perf_counter() - t0)) / calls
    return (f"dask floor (2 no-op tasks: one client.map + one gather, median of {calls}): wall "
            f"{1e3 * statistics.median(walls):.1f} ms, caller cpu {1e3 * statistics.median(cpus):.1f} ms, workers cpu "
            f"{1e3 * workers:.1f} ms (net of idle)")


def hashing_note(workloads) -> str:
    """The caller's cost of knowing unbatched inputs by content (`_chunks._content_key`, BLAKE2b) per map."""
    import time

    from tensorplay.func import _chunks

    parts = []
    for name, _, call_args, _ in workloads[:2]:
        arrays = [t._data for t in _flat_tensors(call_args)
                  if _chunks._Scattered.MIN_BYTES <= t._data.nbytes <= _chunks._Scattered.MAX_HASHED_BYTES]
        t0 = time.thread_time()
        for _ in range(20):
            for a in arrays:
                _chunks._content_key(a)
        parts.append(f"{name}: {len(arrays)} arrays of {sum(a.nbytes for a in arrays) / 1e3:.0f} kB, "
                     f"{1e3 * (time.thread_time() - t0) / 20:.3f} ms")
    return "content hashing of the unbatched inputs per map (caller, thread CPU): " + "; ".join(parts)


def _flat_tensors(tree) -> list:
    from tensorplay import _pytree

    return [t for t in _pytree.tree_flatten(tree)[0] if hasattr(t, "_data")]


# --- 3. peak RSS in a subprocess -------------------------------------------------------------------
RSS_SIZES = (64, 256, 256, 10)


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def rss_child(budget: str, samples: int) -> dict:
    """One map in this (fresh) process: the peak RSS of a warm call above the RSS before it."""
    import gc

    T = M.tensorplay_fns()
    tp = T.tp
    params = T.params(M.init_mlp(list(RSS_SIZES)))
    x = T.array(np.random.default_rng(0).standard_normal((samples, RSS_SIZES[0])).astype(np.float32))

    def forward(v):
        return T.mlp(params, v.unsqueeze(0)).squeeze(0)

    kwargs = {} if budget == "none" else {"chunk_size": "auto", "max_memory": budget}
    f = vmap(forward, **kwargs)
    f(x)  # compiles (and, with "auto", sizes the chunks): not part of the measurement; the result is dropped
    gc.collect()
    base_kb = _status_kb("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:  # reset the peak (VmHWM) to the current RSS
        fh.write("5")
    out = f(x)
    peak_kb = _status_kb("VmHWM")
    from tensorplay.func import _chunks
    from tensorplay.func._vmap import _AUTO
    chunk = next(iter(_AUTO._data.values()), samples) if kwargs else samples
    return {"budget": budget, "budget_bytes": _chunks.parse_memory("bench", budget) if kwargs else None,
            "samples": samples, "chunk_size": chunk, "result_bytes": int(out.numpy().nbytes),
            "input_bytes": int(x.numpy().nbytes), "base_rss": base_kb * 1024, "peak_rss": peak_kb * 1024,
            "growth": (peak_kb - base_kb) * 1024, "tp": tp.__name__}


def rss_table(args) -> str:
    samples = 512 if args.quick else 65536
    budgets = ["2MB"] if args.quick else [args.budget, "64MB"]
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="131072")
    rows = []
    for budget in budgets + ["none"]:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--rss-child", budget, str(samples)],
                             env=env, capture_output=True, text=True, timeout=600)
        if out.returncode:
            return f"rss: the child failed:\n{out.stderr[-2000:]}"
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    mb = 1e6
    lines = [f"peak RSS of a {samples}-sample map, MLP {'-'.join(map(str, RSS_SIZES))} forward per sample "
             f"(input {rows[0]['input_bytes'] / mb:.1f} MB, result {rows[0]['result_bytes'] / mb:.1f} MB)", "",
             "| max_memory | chunk size | RSS before | peak during the call | working set (peak - before - result) "
             "| vs budget |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        work = r["growth"] - r["result_bytes"]
        ratio = f"{work / r['budget_bytes']:.2f}x" if r["budget_bytes"] else "-"
        lines.append(f"| {r['budget']} | {r['chunk_size']} | {r['base_rss'] / mb:.1f} MB | {r['peak_rss'] / mb:.1f} MB "
                     f"| {work / mb:.1f} MB | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--rss-child"]:
        print(json.dumps(rss_child(argv[1], int(argv[2]))))
        return 0
    ap = H.parser(__doc__.splitlines()[0], repeat=11)
    ap.add_argument("--parts", nargs="+", default=["threads", "dask", "rss"], choices=["threads", "dask", "rss"])
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--chunk", type=int, default=128)
    ap.add_argument("--budget", default="16MB")
    ap.add_argument("--long-batch", type=int, default=16384, help="batch of the long-chunk dask workload")
    args = H.parse(ap, argv)
    H.header("scaling out vmap: threads, dask, memory budgets", args)
    with open("/proc/loadavg") as f:
        print(f"# load average at start: {' '.join(f.read().split()[:3])} ({os.cpu_count()} cpus)")
    suites, notes = [], []
    if "threads" in args.parts:
        suites.append(threads_suite(args))
        notes.append(gil_probe(args))
        notes.append(serial_probe(args))
        notes.append(roofline_note(suites[-1], serial_probe.last))
        notes.append(on_cpu_note(args))
        notes.append(fresh_memory_note(args))
        notes.append(stores_note(args))
    if "dask" in args.parts:
        result = dask_suite(args)
        (suites if isinstance(result, H.Suite) else notes).append(result)
        notes.extend(getattr(result, "notes", []))
    if "rss" in args.parts:
        notes.append(rss_table(args))
    with open("/proc/loadavg") as f:
        notes.append(f"load average at the end: {' '.join(f.read().split()[:3])}")
    return H.report(suites, args, notes)


if __name__ == "__main__":
    sys.exit(main())
