"""tensorplay's llvmlite backend: compile an IR graph to vectorised native code.

    exe = codegen.compile_graph(graph)      # cached by graph structure
    outs = exe(*arrays)                     # numpy in, numpy out

Pipeline: `schedule` (fuse nodes into kernels) -> `lowerings/*` (one lowering
per primitive, in the `registry`; `vecmath` for transcendentals) -> `module` (one
LLVM module, one entry function) -> `jit` (O3 + vectorisers, object code, one
ORC LLJIT per module) -> `executable`; `cache` (in memory) and `disk_cache`
(object code shared by processes) in front. Set TENSORPLAY_DEBUG=1 to print each compilation's kernels and
timings, =2 to also print the optimised LLVM IR.
"""
from .cache import clear_cache, compile_count, compile_graph
from .executable import Executable
from .lower import LOWERINGS

__all__ = ["compile_graph", "compile_count", "clear_cache", "Executable", "LOWERINGS"]
