"""`tp.compiler`: control of the compiler's caches, as `torch.compiler` and `jax.clear_caches`.

`reset()` forgets every in-memory cache: compiled executables (`tensorplay.codegen`), and every
cache registered here with `register_reset` -- the traces of `tp.compile` functions, the pass
pipelines of the plain transforms. The next call of any function traces, runs its passes and
compiles again, so a first-call benchmark that calls `reset()` measures a cold compile. Machine
code is freed once nothing references its executable. The on-disk cache of object code is not
in memory and stays (its entries are still valid); `clear_disk_cache()` empties it, and
``TENSORPLAY_DISK_CACHE=0`` turns it off.

    >>> import tensorplay as tp
    >>> f = tp.compile(lambda x: x * 2)
    >>> _ = f(tp.ones(3))
    >>> tp.compiler.reset()
    >>> f(tp.ones(3))
    tensor([2., 2., 2.])
"""
from __future__ import annotations

import sys
import threading
from typing import Callable

__all__ = ["reset", "register_reset", "clear_disk_cache", "disk_cache_dir"]

_lock = threading.Lock()
_hooks: list[Callable[[], None]] = []


def register_reset(clear: Callable[[], None]) -> Callable[[], None]:
    """Have `reset()` call `clear()`: every in-memory cache of compiled state registers here.
    Returns `clear`, so it works as a decorator.

    >>> import tensorplay as tp
    >>> @tp.compiler.register_reset
    ... def forget(): pass
    """
    with _lock:
        if clear not in _hooks:
            _hooks.append(clear)
    return clear


def reset() -> None:
    """Clear every in-memory compiler cache (traces, pass pipelines, compiled code).

    >>> import tensorplay as tp
    >>> tp.compiler.reset()
    """
    codegen = sys.modules.get("tensorplay.codegen")  # not imported: it has compiled nothing
    if codegen is not None:
        codegen.clear_cache()
    _clear_pipeline_caches()
    with _lock:
        hooks = list(_hooks)
    for clear in hooks:
        clear()


def _clear_pipeline_caches() -> None:
    pipeline = sys.modules.get("tensorplay.func._pipeline")  # the plain transforms' pass pipelines
    if pipeline is not None and hasattr(pipeline, "clear"):
        pipeline.clear()
    rearrange = sys.modules.get("tensorplay.func._rearrange")  # parsed patterns
    for fn in vars(rearrange).values() if rearrange is not None else ():
        if callable(getattr(fn, "cache_clear", None)):
            fn.cache_clear()


def clear_disk_cache() -> None:
    """Delete every entry of the persistent object-code cache.

    >>> import tensorplay as tp
    >>> tp.compiler.clear_disk_cache()
    """
    from tensorplay.codegen import disk_cache

    disk_cache.clear()


def disk_cache_dir() -> str:
    """The directory of the persistent cache (``TENSORPLAY_CACHE_DIR``, else under ``XDG_CACHE_HOME``).

    >>> import tensorplay as tp
    >>> isinstance(tp.compiler.disk_cache_dir(), str)
    True
    """
    from tensorplay.codegen import disk_cache

    return disk_cache.directory()
