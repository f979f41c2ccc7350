"""tensorplay's llvmlite backend: compile an IR graph to vectorised native code.

    exe = codegen.compile_graph(graph)      # cached by graph structure
    outs = exe(*arrays)                     # numpy in, numpy out

Pipeline: `schedule` (fuse nodes into kernels) -> `lowerings/*` (one lowering
per primitive, in the `registry`; `vecmath` for transcendentals) -> `module` (one
LLVM module, one entry function) -> `jit` (O3 + vectorisers, object code, one
ORC LLJIT per module) -> `executable`; `cache` (in memory) and `disk_cache`
(object code shared by processes) in front. Set TENSORPLAY_DEBUG=1 to print each compilation's kernels and
timings, =2 to also print the optimised LLVM IR.

`releases_jit_memory` says that dropping an executable gives its memory back: its machine code
(its own LLJIT), its LLVM module and context, and the pass pipeline that optimised it (see `jit`);
what a compile keeps for good is ~1.5 KB inside llvmlite. The soak test of `tools.fuzz` reads it.
"""
from .cache import clear_cache, compile_count, compile_graph
from .executable import Executable
from .lower import LOWERINGS

releases_jit_memory = True

__all__ = ["releases_jit_memory", "compile_graph", "compile_count", "clear_cache", "Executable", "LOWERINGS"]
