"""Benchmark: a second process's first call, served by the persistent object-code cache.

    python -m tensorplay.tools.bench.bench_disk_cache [--runs 3] [--openblas-threads N] [--ab]

Each run starts fresh Python processes on an empty cache directory: the first process compiles
`tp.compile(grad(mlp_loss))` (MLP 784-256-256-10, batch 64) cold and stores the object code;
the second process makes the same first call, which loads it (no LLVM). Reported per process:
the first call's wall time (trace + passes + schedule + [lowering + LLVM | cache load] + run),
the executable's phase split, and the ratio warm/cold (target: at most 0.2), and whether the cached
process linked with `codegen.object_loader` without importing llvmlite.binding. Process start-up
and `import tensorplay` are not part of the first call (its median is printed apart); the lazy
import of the backend is. The first execution includes OpenBLAS starting its threads (tens of ms
on a loaded machine, in both processes): `--openblas-threads 1` sets OPENBLAS_NUM_THREADS=1 in the
children to take it out.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, time
import numpy as np
t_import = time.perf_counter()
import tensorplay as tp
t_import = time.perf_counter() - t_import
import os
if os.environ.get("TENSORPLAY_BENCH_LLVMLITE_LINK"):  # the A/B row: link cached objects with llvmlite
    from tensorplay.codegen import object_loader
    def _refuse(*a, **k):
        raise object_loader.Unsupported("bench: llvmlite link")
    object_loader.load = _refuse
from tensorplay.func import grad
sizes = [784, 256, 256, 10]
rng = np.random.default_rng(0)
params = [(tp.tensor((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)),
           tp.tensor(np.zeros(b, np.float32))) for a, b in zip(sizes[:-1], sizes[1:])]
x = tp.tensor(rng.standard_normal((64, sizes[0])).astype(np.float32))
y = tp.tensor(rng.integers(0, sizes[-1], 64))

def loss(ps, x, y):
    h = x
    for i, (w, b) in enumerate(ps):
        h = h @ w + b
        if i < len(ps) - 1:
            h = tp.tanh(h)
    return tp.nn.functional.cross_entropy(h, y)

f = tp.compile(grad(loss))
t0, c0 = time.perf_counter(), time.process_time()
g = f(params, x, y)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
from tensorplay import codegen
st = codegen.compile_graph(f.get_graph(params, x, y).graph).stats
import sys
exe = codegen.compile_graph(f.get_graph(params, x, y).graph)
print(json.dumps({"wall": wall, "cpu": cpu, "stats": st, "import": t_import, "check": float(sum(float(a.sum()) for wb in g for a in wb)),
                  "llvmlite": "llvmlite.binding" in sys.modules, "linker": type(exe._jit).__name__}))
"""


def child(cache: str, openblas_threads: int | None = None, llvmlite_link: bool = False) -> dict:
    env = dict(os.environ, TENSORPLAY_CACHE_DIR=cache, TENSORPLAY_DISK_CACHE="1")
    env.pop("TENSORPLAY_BENCH_LLVMLITE_LINK", None)
    if llvmlite_link:
        env["TENSORPLAY_BENCH_LLVMLITE_LINK"] = "1"
    if openblas_threads:
        env["OPENBLAS_NUM_THREADS"] = str(openblas_threads)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--openblas-threads", type=int, default=None, help="OPENBLAS_NUM_THREADS of the children")
    ap.add_argument("--ab", action="store_true",
                    help="also a third process per run whose hit links with llvmlite (the loader turned off)")
    args = ap.parse_args(argv)
    cold, warm, cold_cpu, warm_cpu, rows, imports = [], [], [], [], [], []
    ab_wall, ab_cpu = [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="tensorplay-bench-cache-") as d:
            a, b = child(d, args.openblas_threads), child(d, args.openblas_threads)
            if args.ab:
                c = child(d, args.openblas_threads, llvmlite_link=True)
                ab_wall.append(c["wall"])
                ab_cpu.append(c["cpu"])
        imports += [a["import"], b["import"]]
        if a["stats"]["source"] != "compiled" or b["stats"]["source"] != "disk cache":
            print(f"unexpected sources: {a['stats']['source']}, {b['stats']['source']}")
            return 1
        if a["check"] != b["check"]:
            print("results differ between the cold and the cached process")
            return 1
        cold.append(a["wall"])
        warm.append(b["wall"])
        cold_cpu.append(a["cpu"])
        warm_cpu.append(b["cpu"])
        rows.append((a, b))
    mc, mw = statistics.median(cold), statistics.median(warm)
    print(f"first call of tp.compile(grad(mlp_loss)), medians of {args.runs} process pairs"
          + (f", OPENBLAS_NUM_THREADS={args.openblas_threads}" if args.openblas_threads else "") + ":")
    print(f"  import tensorplay (not in the first call): {statistics.median(imports) * 1e3:.1f} ms wall")
    cc, cw = statistics.median(cold_cpu), statistics.median(warm_cpu)
    print(f"  cold process  : {mc * 1e3:8.1f} ms wall, {cc * 1e3:8.1f} ms cpu")
    print(f"  cached process: {mw * 1e3:8.1f} ms wall, {cw * 1e3:8.1f} ms cpu   ratio {mw / mc:.2f} wall, "
          f"{cw / cc:.2f} cpu (target <= 0.20)")
    if args.ab:
        aw, ac = statistics.median(ab_wall), statistics.median(ab_cpu)
        print(f"  cached, llvmlite link: {aw * 1e3:8.1f} ms wall, {ac * 1e3:8.1f} ms cpu   ratio {aw / mc:.2f} wall, "
              f"{ac / cc:.2f} cpu (the A/B row: object_loader off)")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("  note: PYTHONDONTWRITEBYTECODE is set, so both processes compile every module's bytecode "
              "(the lazy backend import inflates both first calls; unset it for the figure)")
    a, b = rows[len(rows) // 2]
    print(f"  cached process: linked by {b['linker']}, llvmlite.binding imported: {b['llvmlite']}")
    for name, st in (("cold", a["stats"]), ("cached", b["stats"])):
        parts = ", ".join(f"{k[:-2]} {st[k] * 1e3:.1f}" for k in ("schedule_s", "plan_s", "lower_s", "llvm_opt_s",
                                                                "codegen_s", "link_s"))
        print(f"  {name:6s} executable: {st['total_s'] * 1e3:.1f} ms ({parts}); rest of the first call: "
              f"{(a if name == 'cold' else b)['wall'] * 1e3 - st['total_s'] * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
