"""tensorplay's llvmlite backend: compile an IR graph to vectorised native code.

    exe = codegen.compile_graph(graph)      # cached by graph structure
    outs = exe(*arrays)                     # numpy in, numpy out

Pipeline: `schedule` (fuse nodes into kernels) -> `lowerings/*` (one lowering
per primitive, in the `registry`; `vecmath` for transcendentals) -> `module` (one
LLVM module, one entry function) -> `jit` (O3 + vectorisers, object code, one
ORC LLJIT per module) -> `executable`; `cache` (in memory) and `disk_cache`
(object code shared by processes) in front. Set TENSORPLAY_DEBUG=1 to print each compilation's kernels and
timings, =2 to also print the optimised LLVM IR.

`releases_jit_memory` is the gate of the RSS soak of `tools.fuzz`. Dropping an executable now gives
its memory back (its LLJIT, its LLVM module and context, and the pass pipeline: see `jit`; ~1.5 KB
per compile stays inside llvmlite), and the soak passes when run on its own (`python -m
tensorplay.tools.fuzz --soak 1500`: ~270 B per compile). Under pytest the same soak still grows by
~9-11 KB per compile, for a reason not yet found (not warnings, pytest's plugins, hypothesis or the
disk cache), so the gate stays closed until that is understood.
"""
from .cache import clear_cache, compile_count, compile_graph
from .executable import Executable
from .lower import LOWERINGS

releases_jit_memory = False

__all__ = ["releases_jit_memory", "compile_graph", "compile_count", "clear_cache", "Executable", "LOWERINGS"]
