"""Recycled output buffers: large arrays an executable returned, reused once nobody else holds them.

A fresh output of tens of MB costs page faults and the kernel's zeroing of every page on its first
write (~30 % of a 1e7-element fused elementwise call), because the allocator gives such blocks back
to the OS when they are freed. So the executables keep the large output buffers they make
(`give`); a later call of any executable that needs a buffer of the same shape and dtype (`take`)
reuses one that only this pool references -- the caller dropped the Tensor / array, and no view
(its `.base`), memoryview, buffer export, DLPack capsule, ctypes object or weak reference is left:
each of those holds a reference or is a weak reference, which the check counts. A buffer someone
still holds is never handed out; it stays tracked, so that it is reused once dropped (``x = f(x)``
in a loop alternates between two buffers).

Bounded: at most `PER_SHAPE` buffers tracked per (shape, dtype) and `MAX_BYTES` in all, oldest
dropped first; only buffers of at least `MIN_BYTES` (smaller ones come from malloc's free lists
without faults). `clear()` forgets them all (`tp.compiler.reset()` calls it through
`cache.clear_cache`). Thread-safe: the check and the removal happen under one lock, and a buffer
nobody references cannot gain a reference meanwhile (only the pool can reach it).

>>> import numpy as np
>>> a = take((1 << 19,), np.dtype(np.float32)); give(a); addr = a.ctypes.data
>>> del a
>>> take((1 << 19,), np.dtype(np.float32)).ctypes.data == addr
True
>>> clear()
"""
from __future__ import annotations

import os
import threading
from sys import getrefcount
from weakref import getweakrefcount

import numpy as np

MIN_BYTES = 1 << 20  # smaller outputs are not pooled
MAX_BYTES = 256 << 20  # process-wide bound of the tracked buffers' bytes
PER_SHAPE = 2  # buffers tracked per (shape, dtype)

_lock = threading.Lock()
_items: list[np.ndarray] = []  # tracked buffers, oldest first
_bytes = 0


def take(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A C-contiguous writeable array of `shape` and `dtype` that nobody else references: a tracked
    buffer when one is free (it leaves the pool until given back), else a new one (`np.empty`).

    >>> take((2, 3), np.dtype(np.float64)).shape
    (2, 3)
    """
    global _bytes
    with _lock:
        a = _find(_items, shape, dtype, _FREE_REFS)
        if a is not None:
            _bytes -= a.nbytes
            return a
    return np.empty(shape, dtype)


def _find(items: list, shape, dtype, free_refs: int | None):
    """Remove and return the newest buffer of `items` of `shape` and `dtype` that only `items`
    references (reference count `free_refs`), or None. With `free_refs` None: the count the loop
    sees for the last item (the calibration: the same code, so the same references held)."""
    for i in range(len(items) - 1, -1, -1):
        a = items[i]
        n = getrefcount(a)
        if free_refs is None:
            return n
        # the shape, dtype and flags are checked again: a holder may have changed them in place
        # (`a.shape = ...`, `a.dtype = ...`, `a.flags.writeable = False`) before dropping it
        if (n == free_refs and a.shape == shape and a.dtype == dtype and not getweakrefcount(a)
                and a.flags.writeable and a.flags.c_contiguous):
            del items[i]
            return a
    return None


def give(a: np.ndarray) -> None:
    """Track `a` (an array `take` returned, now in use as an output) for reuse once it is dropped;
    arrays below `MIN_BYTES` are not tracked.

    >>> before = tracked_bytes(); give(np.empty(4)); tracked_bytes() == before
    True
    """
    global _bytes
    if a.nbytes < MIN_BYTES:
        return
    with _lock:
        shape, dtype = a.shape, a.dtype
        same = [i for i, b in enumerate(_items) if b.shape == shape and b.dtype == dtype]
        if len(same) >= PER_SHAPE:  # the oldest of this shape is no longer tracked
            _bytes -= _items.pop(same[0]).nbytes
        _items.append(a)
        _bytes += a.nbytes
        while _bytes > MAX_BYTES and _items:
            _bytes -= _items.pop(0).nbytes


def clear() -> None:
    """Forget every tracked buffer (those nobody holds are freed).

    >>> clear(); tracked_bytes()
    0
    """
    global _bytes
    with _lock:
        _items.clear()
        _bytes = 0


def tracked_bytes() -> int:
    """Bytes of the buffers tracked now (held by callers or free).

    >>> tracked_bytes() <= MAX_BYTES
    True
    """
    return _bytes


def _after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_after_fork)
_FREE_REFS = _find([np.empty(0)], (), None, None)
