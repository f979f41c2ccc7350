"""Soak: resident memory stays bounded over many compilations of distinct graphs.

Each round compiles a graph of a new structure (so the compile cache misses), runs it and
drops it. At the half-way point and at the end the compile cache is cleared and the resident
set measured: with JIT memory reclamation every dropped executable's machine code is freed,
so the resident set stops growing. The check compares the growth over the second half of
the rounds with `MAX_GROWTH_PER_COMPILE`.

>>> r = soak(rounds=8)
>>> r.rounds, r.rss_end > 0
(8, True)
"""
from __future__ import annotations

import gc
import os
from dataclasses import dataclass

MAX_GROWTH_PER_COMPILE = 4096  # bytes: far below one JIT module (code, data, LLVM objects: ~50 KB+)


def rss_bytes() -> int:
    """Current resident set size of this process (Linux /proc; peak RSS elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reclamation_supported() -> tuple[bool, str]:
    """Whether the codegen backend says it frees the machine code of dropped executables.

    Feature detection, not a version check: ``tensorplay.codegen.releases_jit_memory`` (a bool,
    or a function returning one) is how the backend announces it.
    """
    from tensorplay import codegen

    flag = getattr(codegen, "releases_jit_memory", None)
    if callable(flag):
        flag = flag()
    if flag:
        return True, "tensorplay.codegen.releases_jit_memory is set"
    return False, ("JIT memory reclamation is not available: tensorplay.codegen does not report "
                   "releases_jit_memory, so evicted executables keep their machine code")


@dataclass
class SoakResult:
    rounds: int
    rss_mid: int
    rss_end: int

    @property
    def growth_per_compile(self) -> float:
        return (self.rss_end - self.rss_mid) / max(1, self.rounds - self.rounds // 2)

    @property
    def bounded(self) -> bool:
        return self.growth_per_compile <= MAX_GROWTH_PER_COMPILE

    def line(self) -> str:
        return (f"soak: {self.rounds} compiles, RSS {self.rss_mid / 2**20:.1f} MiB at half-way, "
                f"{self.rss_end / 2**20:.1f} MiB at the end, {self.growth_per_compile:.0f} B per compile "
                f"(bound {MAX_GROWTH_PER_COMPILE} B): {'ok' if self.bounded else 'GROWING'}")


def _one(i: int) -> None:
    import tensorplay as tp

    x = tp.ones(4)
    scale = 1.0 + i * 1e-6  # a new constant: a new graph structure, so a new compilation
    f = tp.compile(lambda t: tp.tanh(t * scale).sum())
    f(x)


def soak(rounds: int = 1500) -> SoakResult:
    """Compile `rounds` distinct graphs; RSS at the half-way point and at the end.

    The on-disk cache is off while it runs: every round must go through LLVM (a disk-cache hit
    links stored object code instead, and reading entries grows the page cache share of RSS)."""
    import tensorplay as tp

    def settled() -> int:
        # measure without the in-memory caches (compiled code, traces, pass pipelines, which hold
        # entries up to their bounds): what is left is what was never freed
        tp.compiler.reset()
        gc.collect()
        return rss_bytes()

    before = os.environ.get("TENSORPLAY_DISK_CACHE")
    os.environ["TENSORPLAY_DISK_CACHE"] = "0"
    try:
        mid = 0
        for i in range(rounds):
            _one(i)
            if i == rounds // 2:
                mid = settled()
        end = settled()
    finally:
        if before is None:
            del os.environ["TENSORPLAY_DISK_CACHE"]
        else:
            os.environ["TENSORPLAY_DISK_CACHE"] = before
    return SoakResult(rounds, mid or end, end)
