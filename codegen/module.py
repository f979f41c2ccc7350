"""Assemble one LLVM module for a scheduled graph: a function per kernel and
one entry point ``int64 entry(PyArrayObject *inputs..., *outputs..., *arena)``
returning the status word (0: no run-time error).

The entry receives the numpy array objects themselves (ctypes `py_object`
arguments, so a call converts no pointers in Python) and reads each data
pointer from the array struct (`ARRAY_DATA_OFFSET`, checked at import). The
arguments are the graph inputs, then the graph outputs that kernels store,
then one arena (a uint8 array) for every intermediate buffer. Arena offsets are planned here
with liveness: a buffer is reused once no later kernel reads it (a kernel never
writes a buffer it also reads, so `noalias` on kernel arguments is sound).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from tensorplay.ir.core import Graph, Value
from . import irutil as u
from . import vecmath as vm
from .context import KernelContext
from .lower import LOWERINGS
from .schedule import Kernel

ALIGN = 64
TRIG = ("sin", "cos", "tan")  # primitives whose huge arguments take the slow path (`vecmath.fast_trig`)


def _array_data_offset() -> int:
    """Byte offset of `data` in numpy's PyArrayObject (right after PyObject_HEAD), verified."""
    import ctypes

    import numpy as np

    probe = np.zeros(3)
    off = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)
    if ctypes.c_void_p.from_address(id(probe) + off).value != probe.ctypes.data:
        raise RuntimeError("codegen: unexpected numpy array layout (data pointer not after PyObject_HEAD)")
    return off


ARRAY_DATA_OFFSET = _array_data_offset()
# LLVM prefers 256-bit vectors on AVX-512 CPUs by default; our kernels are long
# straight-line loops where 512-bit vectors win (see tools/bench).
VECTOR_WIDTH = 512


@dataclass
class BufferPlan:
    """Where each materialised value lives: ('in', i), ('out', j) or ('arena', byte offset)."""

    slots: dict[Value, tuple[str, int]] = field(default_factory=dict)
    out_values: list[Value] = field(default_factory=list)  # values stored to output slot j
    arena_bytes: int = 0


def _nbytes(v: Value) -> int:
    return max(v.type.size * v.dtype.itemsize, 1)


def plan_buffers(graph: Graph, kernels: list[Kernel]) -> BufferPlan:
    """Assign a slot to every graph input and kernel output."""
    plan = BufferPlan()
    for i, v in enumerate(graph.inputs):
        plan.slots[v] = ("in", i)
    graph_outs = set(graph.outputs)
    last_use: dict[Value, int] = {}
    for k_i, k in enumerate(kernels):
        for v in k.inputs:
            last_use[v] = k_i
    free: list[tuple[int, int]] = []  # (offset, size) blocks available for reuse
    live: list[tuple[int, Value]] = []  # (last use, value) of arena buffers
    top = 0
    for k_i, k in enumerate(kernels):
        still = []
        for end, v in live:
            if end < k_i:
                free.append((plan.slots[v][1], _aligned(_nbytes(v))))
            else:
                still.append((end, v))
        live = still
        free = _coalesce(free)
        for v in k.outputs:
            if v in graph_outs:
                plan.slots[v] = ("out", len(plan.out_values))
                plan.out_values.append(v)
                continue
            size = _aligned(_nbytes(v))
            for j, (off, sz) in enumerate(free):
                if sz >= size:
                    plan.slots[v] = ("arena", off)
                    free[j] = (off + size, sz - size)
                    break
            else:
                plan.slots[v] = ("arena", top)
                top += size
            live.append((last_use.get(v, k_i), v))
    plan.arena_bytes = top
    return plan


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _coalesce(blocks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for off, sz in sorted(b for b in blocks if b[1] > 0):
        if out and out[-1][0] + out[-1][1] == off:
            out[-1] = (out[-1][0], out[-1][1] + sz)
        else:
            out.append((off, sz))
    return out


def splittable(kernels: list[Kernel]) -> int:
    """The common size of the kernels if every one is a flat loop over that many elements.

    Then element i of every kernel depends only on element i of the kernels
    before it, so the entry can run on any sub-range [start, stop) of the
    elements, and disjoint ranges can run on different threads."""
    sizes = {k.root.out.type.size for k in kernels}
    if not kernels or len(sizes) != 1 or not all(k.kind == "loop" and k.flat for k in kernels):
        return 0
    return sizes.pop()


def build_module(graph: Graph, kernels: list[Kernel], plan: BufferPlan, prefix: str,
                 triple: str, layout: str, ranged: bool = False) -> tuple[str, str]:
    """Emit the module's IR text; returns (ir text, entry symbol name).

    The entry returns the i64 status word (0, or the code of a node that read an index out of
    range: its position in `graph.nodes` + 1; see `context`). With `ranged` (only valid when
    `splittable(kernels)`), the entry and every kernel take two more i64 arguments, the element
    range [start, stop) to compute."""
    module = ir.Module(name=prefix)
    module.triple = triple
    module.data_layout = layout
    codes = {n: i + 1 for i, n in enumerate(graph.nodes)}
    fns = [_emit_kernel(module, k, f"{prefix}_{k.name}", ranged, codes) for k in kernels]

    entry_name = f"{prefix}_entry"
    n_args = len(graph.inputs) + len(plan.out_values) + (1 if plan.arena_bytes else 0)
    entry = ir.Function(module, ir.FunctionType(u.I64, [u.PTR] * n_args + [u.I64] * (2 if ranged else 0)),
                        entry_name)
    entry.attributes.add("nounwind")
    b = ir.IRBuilder(entry.append_basic_block("entry"))
    status = b.alloca(u.I64, name="status")
    b.store(u.i64(0), status)
    n_in = len(graph.inputs)

    def data(i: int) -> ir.Value:
        # argument i is a numpy array object: its data pointer is the first field after PyObject_HEAD
        p = b.gep(entry.args[i], [u.i64(ARRAY_DATA_OFFSET)], inbounds=True, source_etype=u.I8)
        return b.load(p, typ=u.PTR)

    arena = data(n_args - 1) if plan.arena_bytes else None
    ptrs: dict[Value, ir.Value] = {}

    def buffer(v: Value) -> ir.Value:
        if v not in ptrs:
            kind, i = plan.slots[v]
            if kind == "in":
                ptrs[v] = data(i)
            elif kind == "out":
                ptrs[v] = data(n_in + i)
            else:
                ptrs[v] = b.gep(arena, [u.i64(i)], inbounds=True, source_etype=u.I8)
        return ptrs[v]

    for k, fn in zip(kernels, fns):
        b.call(fn, [buffer(v) for v in k.inputs + k.outputs] + [status]
               + (list(entry.args[n_args:]) if ranged else []))
    b.ret(b.load(status, typ=u.I64))
    text = str(module)
    if VECTOR_WIDTH:
        # llvmlite only knows a fixed set of function attributes; this one is a string attribute
        text = text.replace(") nounwind\n", f') nounwind "prefer-vector-width"="{VECTOR_WIDTH}"\n')
        text = text.replace(") noinline nounwind\n", f') noinline nounwind "prefer-vector-width"="{VECTOR_WIDTH}"\n')
    return text, entry_name


def _emit_kernel(module: ir.Module, k: Kernel, name: str, ranged: bool, codes: dict) -> ir.Function:
    params = k.inputs + k.outputs
    fn = ir.Function(module, ir.FunctionType(u.VOID, [u.PTR] * (len(params) + 1) + [u.I64] * (2 if ranged else 0)),
                     name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    # kept out of line: one call per kernel costs nothing, while inlining every kernel into the
    # entry makes one huge function on which LLVM's optimiser is superlinear (deep graphs)
    fn.attributes.add("noinline")
    for a in fn.args[:len(params) + 1]:
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = KernelContext(b, k, dict(zip(params, fn.args)), status=fn.args[len(params)], codes=codes)
    bounds = fn.args[len(params) + 1:] if ranged else None

    def body() -> None:
        if k.kind == "loop":
            _emit_loop(ctx, k, bounds)
        else:
            LOWERINGS[k.kind].emit(ctx, k.root)
        ctx.forget()

    if any(n.prim.name in TRIG for n in k.nodes):
        # fast argument reduction first; the rare kernel that saw a huge argument runs again with
        # the exact one (idempotent: a kernel's outputs never alias its inputs; see `vecmath`)
        huge = u.alloca_at_entry(b, u.I1, "huge_trig_arg", init=u.const(u.I1, 0))
        with vm.fast_trig(huge):
            body()
        with u.if_then(b, b.load(huge, typ=u.I1)):
            ctx.clear_flags()
            body()
    else:
        body()
    ctx.finish()
    b.ret_void()
    return fn


def _emit_loop(ctx: KernelContext, k: Kernel, bounds=None) -> None:
    """The loop nest of a fused elementwise/layout kernel: compute and store each output element
    (only elements [start, stop) of a flat kernel when `bounds` = (start, stop) is given)."""
    from .context import Index

    b = ctx.b
    if k.flat:
        start, stop = bounds if bounds is not None else (0, u.i64(k.root.out.type.size))
        with u.for_range(b, stop, "i", start=start) as i:
            idx = Index(k.domain, linear=i)
            for v in k.outputs:
                ctx.store(v, idx, ctx.value(v, idx))
        return
    with u.loop_nest(b, k.domain, "d") as ivs:
        idx = Index(k.domain, dims=ivs)
        for v in k.outputs:
            ctx.store(v, idx, ctx.value(v, idx))
