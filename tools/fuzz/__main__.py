"""``python -m tensorplay.tools.fuzz``: run a fuzzing campaign (see `tools.fuzz`)."""
from __future__ import annotations

import argparse
import sys

from .campaign import run_campaign
from .known import KNOWN_FAILURES
from .ops import OPS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tensorplay.tools.fuzz",
                                description="Seeded random-program fuzzer: eager vs tp.compile vs the interpreter "
                                            "vs numpy, derivatives vs finite differences, vmap vs a loop.")
    p.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    p.add_argument("--programs", type=int, default=2000, help="number of programs (default 2000)")
    p.add_argument("--seconds", type=float, default=60.0, help="time budget; stops early when spent (default 60)")
    p.add_argument("--out", metavar="DIR", help="write a minimised reproducer per failure into DIR")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--exclude", default="", metavar="OP,OP", help="ops to leave out")
    p.add_argument("--include-known", action="store_true", help="also fuzz the ops of known failures")
    p.add_argument("--minimise-seconds", type=float, default=30.0, help="time per failure for minimising")
    p.add_argument("--soak", type=int, metavar="N", default=0,
                   help="instead: compile N distinct graphs and check that RSS stays bounded")
    p.add_argument("--require-reclamation", action="store_true",
                   help="with --soak: fail (not skip) when the backend lacks JIT memory reclamation")
    return p


def _soak(args) -> int:
    from .soak import reclamation_supported, soak

    supported, why = reclamation_supported()
    if not supported and not args.require_reclamation:
        print(f"soak: skipped: {why}")
        return 0
    result = soak(args.soak)
    print(result.line())
    return 0 if result.bounded else 1


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.soak:
        return _soak(args)
    exclude = frozenset(x.strip() for x in args.exclude.split(",") if x.strip())
    unknown = sorted(exclude - set(OPS))
    if unknown:
        print(f"fuzz: error: unknown op(s) in --exclude: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if not args.include_known:
        for name, k in KNOWN_FAILURES.items():
            print(f"fuzz: avoiding known failure {name} (reproducer tools/fuzz/{k.reproducer}): {k.bug}")

    def report(f):
        where = f" -> {f.path}" if f.path else ""
        print(f"fuzz: {f.kind.upper()} seed {f.seed} check {f.check}: {f.message.splitlines()[0][:300]}{where}",
              flush=True)

    summary = run_campaign(seed=args.seed, programs=args.programs, seconds=args.seconds, out=args.out,
                           jobs=args.jobs, include_known=args.include_known, exclude=exclude,
                           minimise_seconds=args.minimise_seconds, progress=report)
    print(f"{summary.line()} in {summary.seconds:.0f} s")
    return 1 if summary.mismatches or summary.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
