"""In-memory LRU cache of executables keyed by `Graph.structural_key()`, with a
counter of compilations (tests read it to check that equal graphs are not
recompiled)."""
from __future__ import annotations

import threading
from collections import OrderedDict

from ir.core import Graph
from .executable import Executable

MAX_ENTRIES = 512

_lock = threading.Lock()
_entries: "OrderedDict[tuple, Executable]" = OrderedDict()
_compiles = 0


def compile_graph(graph: Graph) -> Executable:
    """The executable for `graph`, compiled on first sight of its structure, then reused."""
    global _compiles
    key = graph.structural_key()
    with _lock:
        exe = _entries.get(key)
        if exe is not None:
            _entries.move_to_end(key)
            return exe
    exe = Executable(graph)
    with _lock:
        _compiles += 1
        _entries[key] = exe
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return exe


def compile_count() -> int:
    """How many graphs have been compiled (cache misses) since the process started."""
    return _compiles


def clear_cache() -> None:
    """Forget every cached executable (executables still referenced elsewhere keep working)."""
    with _lock:
        _entries.clear()
