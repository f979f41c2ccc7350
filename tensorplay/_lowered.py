"""`Lowered`: the stages of one signature of a `tp.compile` function, as `jax.jit(f).lower(*args)`
shows them -- the traced graph, its text, the LLVM IR, the host assembly and the kernels."""
from __future__ import annotations

from tensorplay.ir import Graph
from ._trace import ClosedGraph

__all__ = ["Lowered"]


class Lowered:
    """One traced signature of a compiled function and the code it compiles to.

    >>> import tensorplay as tp
    >>> f = tp.compile(lambda x: tp.sin(x) * 2)
    >>> low = f.lower(tp.ones(8))
    >>> [n.prim.name for n in low.graph.nodes]
    ['sin', 'full', 'mul']
    >>> low.as_text().splitlines()[0]
    'func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {'
    >>> len(low.kernels), "define" in low.llvm_ir
    (1, True)

    - `graph`: the traced `ir.Graph` (its inputs: the flat tensor arguments, then the captured
      tensors, which the calls pass at their current values);
    - `as_text()`: the IR text, captured tensors printed as constants (it runs on its own, e.g.
      through ``tensorplay-ir run``);
    - `compile()`: the executable the calls run (compiled on first use, shared with the calls
      through the compile cache); `llvm_ir`, `asm`, `kernels` describe it.
    """

    def __init__(self, closed: ClosedGraph, where: str):
        self.closed = closed
        self._where = where

    @property
    def graph(self) -> Graph:
        return self.closed.graph

    def as_text(self) -> str:
        """The IR text of the graph, with the captured tensors as constants."""
        return str(self.closed.self_contained_graph())

    def compile(self):
        """The `Executable` of this signature (native code; ``TENSORPLAY_BACKEND=interpreter`` is an error)."""
        from ._exec import backend, runner

        if backend() != "compiled":
            raise RuntimeError(f"{self._where}.lower(...): the compiled stages need the compiled backend, but "
                               f"TENSORPLAY_BACKEND selects the interpreter")
        return runner(self.closed.graph)[0]

    @property
    def llvm_ir(self) -> str:
        """The optimised LLVM module (text)."""
        return self.compile().llvm_ir

    @property
    def asm(self) -> str:
        """The host assembly."""
        return self.compile().asm

    @property
    def kernels(self) -> list[dict]:
        """One entry per fused kernel (name, kind, loop domain, fused nodes; see `Executable.kernels`)."""
        return self.compile().kernels

    def __repr__(self) -> str:
        g = self.graph
        return f"<Lowered {self._where}: {len(g.inputs)} inputs, {len(g.nodes)} nodes, {len(g.outputs)} outputs>"
