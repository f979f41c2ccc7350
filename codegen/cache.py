"""In-memory LRU cache of executables keyed by `Graph.structural_key()`, with a
counter of compilations (tests read it to check that equal graphs are not
recompiled); `tensorplay.compiler.reset()` clears it with the caches above codegen.
Evicted executables free their machine code once nothing else references them.
Misses go through the disk cache (`disk_cache`) before compiling."""
from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict

from tensorplay.ir.core import Graph
from . import recycle
from .executable import Executable

MAX_ENTRIES = 512
DEBUG = int(os.environ.get("TENSORPLAY_DEBUG", "0") or 0)  # 1: kernels and timings, 2: + optimised IR

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
    if DEBUG:
        _report(exe)
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
    """Forget every cached executable (executables still referenced elsewhere keep working) and the
    recycled output buffers (`recycle`)."""
    with _lock:
        _entries.clear()
    recycle.clear()


def _report(exe: Executable) -> None:
    out = sys.stderr
    st = exe.stats
    print(f"[tensorplay codegen] @{exe.name}: {st['kernels']} kernels, {st['total_s'] * 1e3:.1f} ms "
          f"({st['source']}: schedule {st['schedule_s'] * 1e3:.1f}, lower {st['lower_s'] * 1e3:.1f}, "
          f"llvm opt {st['llvm_opt_s'] * 1e3:.1f}, codegen {st['codegen_s'] * 1e3:.1f}, "
          f"link {st['link_s'] * 1e3:.1f}), arena {st['arena_bytes']} B", file=out)
    for k in exe.kernels:
        print(f"  {k['name']}: {k['kind']} over {k['domain']}{' (flat)' if k['flat'] else ''}: "
              f"{' '.join(k['nodes'])}", file=out)
    if DEBUG >= 2:
        print(exe.llvm_ir, file=out)
