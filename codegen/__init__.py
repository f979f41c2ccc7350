"""tensorplay's llvmlite backend: compile an IR graph to vectorised native code.

    exe = codegen.compile_graph(graph)      # cached by graph structure
    outs = exe(*arrays)                     # numpy in, numpy out

Pipeline: `schedule` (fuse nodes into kernels) -> `lowerings/*` (one lowering
per primitive, in the `registry`; `vecmath` for transcendentals) -> `module` (one
LLVM module, one entry function) -> `jit` (O2 + vectorisers, object code, one
ORC LLJIT per module) -> `executable`; `cache` (in memory) and `disk_cache`
(object code shared by processes) in front; a disk-cache hit imports only `executable`,
`disk_cache` and `object_loader` (our own ELF linker), not llvmlite, the scheduler, the
lowerings or vecmath. Set
TENSORPLAY_DEBUG=1 to print each compilation's kernels and timings, =2 to also print the
optimised LLVM IR.

`releases_jit_memory` (True) is the gate of the RSS soak of `tools.fuzz`. Dropping or evicting an
executable gives its memory back at once: its LLJIT, its LLVM module and context, and the pass
pipeline (see `jit`). An executable keeps a graph object of its own, never the caller's (which
carries the caller's runner: `tensorplay._exec`), so no reference cycle defers the release to the
cyclic collector; under pytest that deferral let hundreds of dead LLJITs pile up between full
collections and fragmented the heap (the soak grew ~10 KB per compile there, ~50 B alone). What
stays is ~1.5 KB per compile inside llvmlite (`jit`), well inside the soak's 4 KB bound.
"""
from .cache import clear_cache, compile_count, compile_graph
from .executable import Executable

releases_jit_memory = True


def __getattr__(name: str):
    # The lowering table (and with it llvmlite.ir, vecmath and every lowering) is imported on first
    # use: a disk-cache hit never needs it.
    if name == "LOWERINGS":
        from .lower import LOWERINGS

        return LOWERINGS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["releases_jit_memory", "compile_graph", "compile_count", "clear_cache", "Executable", "LOWERINGS"]
