"""A fuzzing campaign: generate programs from a seed, run every check on each, minimise and
record the failures, and summarise.

>>> s = run_campaign(seed=0, programs=2, seconds=60, out=None, jobs=1)
>>> s.programs, s.mismatches, s.crashes
(2, 0, 0)
"""
from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass, field

from . import harness
from .known import KNOWN_FAILURES
from .minimize import minimise
from .program import FLOAT, Invalid, Program, generate
from .reproducer import write_reproducer

COMPILED_TRANSFORMS_EVERY = 10  # every 10th program also runs grad and vmap on the native backend


@dataclass
class Failure:
    """One failing check, minimised."""

    seed: int
    check: str
    kind: str            # "mismatch" or "crash"
    message: str
    program: Program
    path: str | None = None


@dataclass
class Summary:
    """What a campaign did."""

    programs: int = 0
    checks: int = 0
    mismatches: int = 0
    crashes: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)

    def line(self) -> str:
        return (f"fuzz: {self.programs} programs, {self.checks} checks, {self.mismatches} mismatches, "
                f"{self.crashes} crashes")

    def merge(self, other: "Summary") -> None:
        self.programs += other.programs
        self.checks += other.checks
        self.mismatches += other.mismatches
        self.crashes += other.crashes
        self.failures += other.failures


def checks_for(p: Program) -> list[str]:
    """The checks program `p` gets: value checks always, derivatives for float programs, and on
    every `COMPILED_TRANSFORMS_EVERY`-th program grad and vmap compiled natively too."""
    names = ["eager", "compiled", "interpreter", "vmap", "unchanged"]
    if p.kind == FLOAT:
        names[4:4] = ["grad", "jvp", "vjp"]
    if p.seed % COMPILED_TRANSFORMS_EVERY == 0:
        names += ["vmap:compiled"] + (["grad:compiled"] if p.kind == FLOAT else [])
    return names


def outcome(p: Program, check: str) -> tuple[str, str]:
    """("ok" | "mismatch" | "crash", message) of one check on `p`."""
    name, _, which = check.partition(":")
    case = p.case(**({"backend": which} if which else {}))
    program, numpy_program = p.functions()
    try:
        harness.run_check(name, case, program, numpy_program)
    except harness.Mismatch as e:
        return "mismatch", str(e)
    except Exception as e:  # noqa: BLE001 - any exception of tensorplay on a valid program is a crash
        return "crash", f"{type(e).__name__}: {e}"
    return "ok", ""


def _same_failure(kind: str, message: str):
    exc = message.split(":", 1)[0] if kind == "crash" else None

    def fails(q: Program, check: str) -> bool:
        k, m = outcome(q, check)
        return k == kind and (exc is None or m.split(":", 1)[0] == exc)

    return fails


def program_seed(campaign_seed: int, index: int) -> int:
    return campaign_seed * 1_000_003 + index


def _run_one(index: int, seed: int, out: str | None, exclude: frozenset, known: bool,
             minimise_s: float) -> Summary:
    s = Summary()
    try:
        p = generate(program_seed(seed, index), exclude=exclude, avoid_known=not known)
    except Invalid:
        return s
    s.programs = 1
    for check in checks_for(p):
        s.checks += 1
        kind, message = outcome(p, check)
        if kind == "ok":
            continue
        if kind == "mismatch":
            s.mismatches += 1
        else:
            s.crashes += 1
        fails = _same_failure(kind, message)
        small = minimise(p, lambda q: fails(q, check), seconds=minimise_s)
        message = outcome(small, check)[1] or message
        f = Failure(p.seed, check, kind, message, small)
        if out:
            f.path = write_reproducer(small, check, message, out)
        s.failures.append(f)
    return s


def _worker(job):
    index, seed, out, exclude, known, minimise_s, deadline = job
    if time.monotonic() > deadline:
        return None
    return _run_one(index, seed, out, exclude, known, minimise_s)


def run_campaign(*, seed: int = 0, programs: int = 2000, seconds: float = 60.0, out: str | None = None,
                 jobs: int = 1, include_known: bool = False, exclude: frozenset = frozenset(),
                 minimise_seconds: float = 30.0, progress=None) -> Summary:
    """Run up to `programs` programs (stopping after `seconds`) and return the `Summary`.

    `jobs` > 1 spreads programs over processes; results do not depend on it (each program's
    seed is fixed by the campaign seed and its index). Reproducers go into `out`.
    """
    start = time.monotonic()
    deadline = start + seconds
    total = Summary()
    jobs_list = [(i, seed, out, frozenset(exclude), include_known, minimise_seconds, deadline)
                 for i in range(programs)]
    if jobs <= 1:
        results = map(_worker, jobs_list)
        pool = None
    else:
        pool = multiprocessing.get_context("fork").Pool(jobs)
        results = pool.imap(_worker, jobs_list, chunksize=8)
    try:
        for r in results:
            if r is None:
                continue
            total.merge(r)
            if progress is not None:
                for f in r.failures:
                    progress(f)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
    total.seconds = time.monotonic() - start
    return total


__all__ = ["run_campaign", "Summary", "Failure", "checks_for", "outcome", "KNOWN_FAILURES"]
