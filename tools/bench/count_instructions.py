"""Instructions per call of a plain-transform workload, counted by valgrind (an A/B that noise cannot move).

    python -m tensorplay.tools.bench.count_instructions jacfwd hessian [--impl plain compile] [--quick]
                                                        [--calls 300] [--python OTHER_PYTHON]

On a shared or virtual machine the time of a 30 us call swings 1.3-2x between runs, so a change of a
few percent to the plain call path cannot be seen in `bench_plain_transforms`. This counts the
instructions instead: each (workload, implementation) runs in its own process under
``valgrind --tool=callgrind``, and only the code inside one `functools.reduce` loop of `--calls`
calls is collected (``--toggle-collect=functools_reduce``), after a warm-up that fills every cache.
Counts are repeatable to a few hundred instructions. `--python` runs another checkout's
interpreter (its own editable install) on the same workloads, for an A/B in one command.

The workloads are `bench_plain_transforms`'s (`--quick` takes its small sizes, where the executable
is a small share and the call path dominates). valgrind's CPU has no AVX-512: numpy and OpenBLAS are
told to keep to AVX2, and the disk cache is off (an object compiled for the host could not run).
Without valgrind the script says so and exits 0.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

_NO_AVX512 = "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR AVX512_KNL AVX512_KNM"
_COLLECTED = re.compile(r"Collected : (\d+)")
IMPLEMENTATIONS = ("plain", "compile")


def child_env() -> dict:
    """The environment of a counted process: fixed hashing, one thread, AVX2 numpy and OpenBLAS, no disk cache."""
    env = dict(os.environ, PYTHONHASHSEED="0", TENSORPLAY_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               OPENBLAS_CORETYPE="Haswell", NPY_DISABLE_CPU_FEATURES=_NO_AVX512, TENSORPLAY_DISK_CACHE="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def parse_collected(text: str) -> int | None:
    """The instruction count callgrind printed at exit (``==pid== Collected : N``), or None.

    >>> parse_collected("==12== Events    : Ir\\n==12== Collected : 4242\\n")
    4242
    """
    found = _COLLECTED.findall(text)
    return int(found[-1]) if found else None


# The counted process, as a -c program (so that another checkout's interpreter needs only
# bench_plain_transforms): build the workload, warm it up, then the calls inside one
# `functools.reduce`, the only code callgrind collects.
_CHILD = """
import functools, sys
from types import SimpleNamespace
from tensorplay.tools.bench import bench_plain_transforms as plain
workload, impl, calls, quick = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
thunks = plain.Workloads(SimpleNamespace(quick=quick), None, None).case(workload)
fn = thunks[1] if impl == "plain" else thunks[2]
for _ in range(50):
    fn()
functools.reduce(lambda acc, _: fn(), range(calls), None)
"""


def count(python: str, workload: str, impl: str, calls: int, quick: bool) -> float:
    """Instructions per call of `impl` of `workload`, run by interpreter `python` under callgrind."""
    cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=functools_reduce", "--callgrind-out-file=/dev/null",
           python, "-c", _CHILD, workload, impl, str(calls), "1" if quick else "0"]
    done = subprocess.run(cmd, env=child_env(), capture_output=True, text=True, cwd=os.getcwd())
    total = parse_collected(done.stderr)
    if done.returncode != 0 or total is None:
        raise RuntimeError(f"count_instructions: {workload}/{impl} failed (exit {done.returncode}):\n"
                           f"{done.stderr[-2000:]}")
    return total / calls


def main(argv: list[str] | None = None) -> int:
    from tensorplay.tools.bench.bench_plain_transforms import WORKLOADS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="+", choices=WORKLOADS)
    ap.add_argument("--impl", nargs="+", default=["plain"], choices=IMPLEMENTATIONS)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--quick", action="store_true", help="bench_plain_transforms' small sizes")
    ap.add_argument("--python", default=None, help="also count with this interpreter (another checkout), for an A/B")
    args = ap.parse_args(argv)
    if args.calls < 1:
        ap.error("--calls must be at least 1")
    if shutil.which("valgrind") is None:
        print("count_instructions: valgrind is not installed here; nothing counted")
        return 0
    pythons = [sys.executable] + ([args.python] if args.python else [])
    print(f"instructions per call (callgrind, {args.calls} calls{', --quick sizes' if args.quick else ''})")
    for workload in args.workloads:
        for impl in args.impl:
            counts = [count(py, workload, impl, args.calls, args.quick) for py in pythons]
            row = f"{workload:12} {impl:8} " + "  ".join(f"{c:12,.0f}" for c in counts)
            if len(counts) == 2:
                row += f"  {counts[0] / counts[1]:.3f}x of {args.python}"
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
