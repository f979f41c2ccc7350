"""What the host offers the code generator: its thread count, its cache sizes and the
streaming-store threshold derived from them.

Kept free of llvmlite so that a disk-cache hit (`codegen.executable`) can read them without
importing the code generator.
"""
from __future__ import annotations

import glob
import os


def cache_bytes(level: int) -> int | None:
    """Size of one core's level-`level` data or unified cache as the host reports it, or None.

    >>> size = cache_bytes(2)
    >>> size is None or size > 0
    True
    """
    for d in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        try:
            with open(os.path.join(d, "level")) as f:
                lvl = int(f.read())
            with open(os.path.join(d, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(d, "size")) as f:
                size = f.read().strip()
        except (OSError, ValueError):
            continue
        if lvl == level and kind in ("Data", "Unified"):
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:].upper(), 1)
            digits = size[:-1] if size[-1:].isalpha() else size
            if digits.isdigit() and int(digits) > 0:
                return int(digits) * scale
    name = f"SC_LEVEL{level}_{'D' if level == 1 else ''}CACHE_SIZE"
    try:
        size = os.sysconf(name) if name in os.sysconf_names else 0
    except (OSError, ValueError):
        size = 0
    return size if size > 0 else None


def stream_min_bytes() -> int | None:
    """Graph outputs of at least this many bytes get non-temporal stores (None: never).

    One core's L2 size, or ``TENSORPLAY_STREAM_MIN_BYTES`` (a number of bytes, or ``off``).

    >>> lo = stream_min_bytes()
    >>> lo is None or lo > 0
    True
    """
    env = os.environ.get("TENSORPLAY_STREAM_MIN_BYTES", "").strip().lower()
    if env in ("off", "none", "no"):
        return None
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"TENSORPLAY_STREAM_MIN_BYTES must be a number of bytes or 'off', "
                             f"got {env!r}") from None
    return cache_bytes(2)


def default_threads() -> int:
    """Threads the codegen uses, to run kernels and to compile: TENSORPLAY_NUM_THREADS, else the CPU
    count (at most 8); 1 on one core.

    >>> default_threads() >= 1
    True
    """
    return max(1, int(os.environ.get("TENSORPLAY_NUM_THREADS", 0) or min(os.cpu_count() or 1, 8)))
