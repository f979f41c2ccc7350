"""`Executable`: a compiled graph called with numpy arrays, returning numpy arrays.

Everything that does not depend on the argument values is computed once at
compile time: the expected input types, the output shapes and dtypes, the
ctypes pointer table and which outputs are fresh buffers, copies of an input,
or repeats of another output. A call checks the inputs, allocates the outputs
and one arena for all intermediates, fills the pointer table and makes one
ctypes call (which releases the GIL).
"""
from __future__ import annotations

import ctypes
import time
from typing import Sequence

import numpy as np

from ir.core import Graph
from ir.interpreter import check_arguments
from . import jit
from .module import BufferPlan, build_module
from .schedule import Kernel, schedule

_ENTRY_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class Executable:
    """A graph compiled to native code. Call it with one numpy array per graph input."""

    def __init__(self, graph: Graph):
        t0 = time.perf_counter()
        self.graph = graph
        self.name = graph.name
        kernels = schedule(graph)
        t1 = time.perf_counter()
        from .module import plan_buffers

        plan = plan_buffers(graph, kernels)
        prefix = f"tp{jit.next_module_id()}_{_sanitize(graph.name)}"
        triple, layout = jit.host_triple_and_layout()
        text, entry = build_module(graph, kernels, plan, prefix, triple, layout)
        t2 = time.perf_counter()
        self._jit = jit.compile_ir(text, [entry])
        self._kernels = kernels
        self._plan = plan
        self.stats = {"schedule_s": t1 - t0, "lower_s": t2 - t1,
                      "llvm_parse_s": self._jit.timings["parse"],
                      "llvm_opt_s": self._jit.timings["llvm_opt"],
                      "codegen_s": self._jit.timings["codegen"],
                      "total_s": time.perf_counter() - t0,
                      "kernels": len(kernels), "arena_bytes": plan.arena_bytes}
        self._entry = _ENTRY_TYPE(self._jit.addresses[entry])
        self._prepare(plan)

    # --- call path ----------------------------------------------------------------------------
    def _prepare(self, plan: BufferPlan) -> None:
        g = self.graph
        self._in_sig = [(v.type.shape, v.dtype.np) for v in g.inputs]
        self._n_in = len(g.inputs)
        self._alloc = [(v.type.shape, v.dtype.np) for v in plan.out_values]
        self._table_type = ctypes.c_void_p * (self._n_in + len(plan.out_values) + 1)
        self._arena_bytes = plan.arena_bytes
        # how to produce each graph output: ("slot", j) | ("input", i) | ("repeat", k)
        recipe = []
        first_pos: dict = {}
        inputs = {v: i for i, v in enumerate(g.inputs)}
        for pos, v in enumerate(g.outputs):
            if v in first_pos:
                recipe.append(("repeat", first_pos[v]))
            elif v in inputs:
                recipe.append(("input", inputs[v]))
            else:
                recipe.append(("slot", plan.slots[v][1]))
            first_pos.setdefault(v, pos)
        self._recipe = recipe
        self._simple = all(r == ("slot", i) for i, r in enumerate(recipe)) and len(recipe) == len(plan.out_values)

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        """Run the compiled graph; inputs must match `graph.in_types` exactly (TypeError otherwise)."""
        if len(arrays) != self._n_in:
            check_arguments(self.graph, arrays)
        ptrs = []
        args = []
        for a, (shape, dtype) in zip(arrays, self._in_sig):
            if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype:
                a = self._coerce(a, len(args))
            elif not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
            args.append(a)
            ptrs.append(a.ctypes.data)
        outs = [np.empty(shape, dtype) for shape, dtype in self._alloc]
        ptrs.extend(o.ctypes.data for o in outs)
        arena = np.empty(self._arena_bytes, np.uint8) if self._arena_bytes else None
        ptrs.append(arena.ctypes.data if arena is not None else None)
        self._entry(self._table_type(*ptrs))
        if self._simple:
            return outs
        result = []
        for kind, i in self._recipe:
            if kind == "slot":
                result.append(outs[i])
            elif kind == "input":
                result.append(args[i].copy())
            else:
                result.append(result[i].copy())
        return result

    def _coerce(self, a, i: int) -> np.ndarray:
        if not isinstance(a, np.ndarray):
            raise TypeError(f"@{self.name} input {i}: expected a numpy array, got {type(a).__name__}")
        shape, dtype = self._in_sig[i]
        if a.shape != shape or a.dtype != dtype:
            raise TypeError(f"@{self.name} input {i}: expected {self.graph.inputs[i].type}, got array of shape "
                            f"{a.shape} and dtype {a.dtype}")
        return np.ascontiguousarray(a)  # an ndarray subclass with the right type

    # --- introspection ------------------------------------------------------------------------
    @property
    def llvm_ir(self) -> str:
        """The optimised LLVM module (text)."""
        return self._jit.llvm_ir

    @property
    def asm(self) -> str:
        """Host assembly of the module."""
        return self._jit.asm()

    @property
    def kernels(self) -> list[dict]:
        """One entry per kernel: name, kind, loop domain, fused node names (in order)."""
        return [k.describe() for k in self._kernels]

    def __repr__(self) -> str:
        return f"<Executable @{self.name}: {len(self._kernels)} kernels>"


def _sanitize(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)[:32] or "f"
