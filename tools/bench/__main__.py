"""Run the whole peer benchmark suite, one fresh process per script.

    python -m tensorplay.tools.bench [--quick] [--markdown] [--only mlp jacobians] [--threads 1|2|default]
                          [--json-dir DIR] [-- extra args for every script]

Scripts: see SCRIPTS below (tools/bench/README.md describes each). The full run takes
5-8 minutes on the 2-core development machine. Exit status 1 if any script reported
a failure (an implementation that raised or disagreed with its reference).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

SCRIPTS = ["bench_fused_elementwise", "bench_mlp", "bench_per_sample_grads", "bench_jacobians",
           "bench_plain_transforms", "bench_dispatch", "bench_trace", "bench_compile_time", "bench_optimizer_step",
           "bench_scan_compile", "bench_lstm", "bench_low_precision"]
# Scripts without the common options (--quick, --markdown), run on their own.
STANDALONE = ["bench_elementwise", "bench_disk_cache", "bench_scaleout", "bench_soak"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--only", nargs="+", default=None, help="script names, with or without the bench_ prefix")
    ap.add_argument("--threads", default=None, help="TP_BENCH_THREADS for every script (default: 1)")
    ap.add_argument("--json-dir", default=None, help="write one JSON result file per script here")
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="after --: passed to every script")
    args = ap.parse_args(argv)
    scripts = SCRIPTS if not args.only else [s if s.startswith("bench_") else f"bench_{s}" for s in args.only]
    env = dict(os.environ)
    if args.threads is not None:
        env["TP_BENCH_THREADS"] = args.threads
    extra = [a for a in args.rest if a != "--"]
    status = 0
    t_all = time.perf_counter()
    for name in scripts:
        cmd = [sys.executable, "-m", f"tensorplay.tools.bench.{name}", *extra]
        if args.quick:
            cmd.append("--quick")
        if args.markdown:
            cmd.append("--markdown")
        if args.json_dir:
            os.makedirs(args.json_dir, exist_ok=True)
            cmd += ["--json", os.path.join(args.json_dir, f"{name}.json")]
        t0 = time.perf_counter()
        rc = subprocess.call(cmd, cwd=ROOT, env=env)
        print(f"\n[{name}: exit {rc}, {time.perf_counter() - t0:.1f} s]\n", flush=True)
        status = status or (rc != 0)
    print(f"[all: {time.perf_counter() - t_all:.1f} s]")
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
