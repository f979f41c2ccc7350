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

import re
from ._record import Factory, record

from llvmlite import ir

from tensorplay.ir.core import Graph, Node, Value
from . import irutil as u
from . import vecmath as vm
from .context import KernelContext
from .jit import CHEAP_ATTRIBUTE
from .lower import LOWERINGS
from .lowerings.reduce import fix_loop_ids
from .schedule import Control, Kernel

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
# Fused elementwise loops over at most this many elements are optimised for size (`optimised_for_size`).
SMALL_KERNEL_ELEMENTS = 1 << 14
# Loops and reductions touching at most this many elements (weighted, see there) are optimised at
# `jit.CHEAP_SPEED_LEVEL` (`compiled_cheaply`).
CHEAP_KERNEL_ELEMENTS = 1 << 10
VECMATH_WEIGHT = 16
UNROLL_OUTER = False


@record
class Block:
    """The scratch of one control step, live only while it runs: named temporaries (`temps`:
    name -> offset in the block), then one arena shared by its regions (they never run at the same
    time and keep nothing in it between runs), each planned in `regions`."""

    offset: int = 0
    temps: dict[str, int] = Factory(dict)
    regions: dict[str, "BufferPlan"] = Factory(dict)
    region_base: int = 0
    size: int = 0


@record
class BufferPlan:
    """Where each materialised value lives: ('in', i), ('out', j) or ('arena', byte offset), and the
    block of every control step (by its position in the step list)."""

    slots: dict[Value, tuple[str, int]] = Factory(dict)
    out_values: list[Value] = Factory(list)  # values stored to output slot j
    arena_bytes: int = 0
    blocks: dict[int, Block] = Factory(dict)


def _nbytes(v: Value) -> int:
    return max(v.type.size * v.dtype.itemsize, 1)


def plan_buffers(graph: Graph, kernels: list[Kernel]) -> BufferPlan:
    """Assign a slot to every graph input and step output, and a block to every control step.

    Offsets are relative to the scope's arena; a region's arena lies inside its step's block."""
    plan = BufferPlan()
    for i, v in enumerate(graph.inputs):
        plan.slots[v] = ("in", i)
    graph_outs = set(graph.outputs)
    last_use: dict[Value, int] = {}
    for k_i, k in enumerate(kernels):
        for v in k.inputs:
            last_use[v] = k_i
    free: list[tuple[int, int]] = []  # (offset, size) blocks available for reuse
    live: list[tuple[int, int, int]] = []  # (last use, offset, size) of arena buffers
    top = 0

    def allocate(size: int) -> int:
        nonlocal top
        for j, (off, sz) in enumerate(free):
            if sz >= size:
                free[j] = (off + size, sz - size)
                return off
        top += size
        return top - size

    for k_i, k in enumerate(kernels):
        free.extend((off, sz) for end, off, sz in live if end < k_i)
        live = [b for b in live if b[0] >= k_i]
        free = _coalesce(free)
        for v in k.outputs:
            if v in graph_outs:
                plan.slots[v] = ("out", len(plan.out_values))
                plan.out_values.append(v)
                continue
            size = _aligned(_nbytes(v))
            plan.slots[v] = ("arena", allocate(size))
            live.append((last_use.get(v, k_i), plan.slots[v][1], size))
        if isinstance(k, Control):
            block = _plan_block(k)
            block.offset = allocate(block.size)
            plan.blocks[k_i] = block
            live.append((k_i, block.offset, block.size))  # free again after this step
    plan.arena_bytes = top
    return plan


def _plan_block(k: Control) -> Block:
    block = Block()
    used = [v is not None for v in k.elements]
    at = 0
    for name, nbytes in LOWERINGS[k.kind].temps(k.root, used).items():
        block.temps[name] = at
        at += _aligned(max(nbytes, 1))
    block.region_base = at
    block.regions = {name: plan_buffers(sc.graph, sc.steps) for name, sc in k.regions.items()}
    block.size = at + max((p.arena_bytes for p in block.regions.values()), default=0)
    return block


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
    elements, and disjoint ranges can run on different threads. A graph with a
    control step is never split: a loop carries values from one step to the
    next and a branch reads a whole predicate, so no element range stands alone."""
    if not kernels or not all(k.kind == "loop" and k.flat for k in kernels):
        return 0
    sizes = {k.root.out.type.size for k in kernels}
    return sizes.pop() if len(sizes) == 1 else 0


def coded_nodes(graph: Graph, kernels: list[Kernel], where: str = "") -> list[tuple[Node, str]]:
    """The nodes in error-code order, each with the region it sits in ("" for the graph itself,
    e.g. ``"scan body > cond true"``): code c (the status word) names entry c - 1 of this list.

    The graph's own nodes come first, at their positions, then each control step's regions
    (by attribute name), depth first."""
    out = [(n, where) for n in graph.nodes]
    for k in kernels:
        if isinstance(k, Control):
            for name, sc in k.regions.items():
                out += coded_nodes(sc.graph, sc.steps, f"{where} > {k.kind} {name}" if where else f"{k.kind} {name}")
    return out


def build_module(graph: Graph, kernels: list[Kernel], plan: BufferPlan, prefix: str,
                 triple: str, layout: str, ranged: bool = False, fastcall: bool = False) -> tuple[str, str]:
    """Emit the module's IR text; returns (ir text, entry symbol name).

    The entry returns the i64 status word (0, or the code of a node that read an index out of
    range: its position in `coded_nodes(graph, kernels)` + 1; see `context`). With `ranged` (only
    valid when `splittable(kernels)`), the entry and every kernel take two more i64 arguments, the
    element range [start, stop) to compute. With `fastcall` (unranged only), the module also
    defines the entry's METH_FASTCALL trampoline (`_emit_fastcall`, named `fastcall_name`)."""
    module = ir.Module(name=prefix)
    module.triple = triple
    module.data_layout = layout
    codes: dict[Node, int] = {}
    for i, (n, _) in enumerate(coded_nodes(graph, kernels)):
        codes.setdefault(n, i + 1)
    read = {v for k in kernels for v in k.inputs}
    fns = _emit_kernels(module, kernels, prefix, ranged, codes,
                        final=frozenset(v for v in graph.outputs if v not in read and v not in graph.inputs))

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
    # each graph output is stored to its slot once; repeats and inputs are the executable's copies
    out_arg = {}
    for j, v in enumerate(plan.out_values):
        out_arg.setdefault(graph.outputs.index(v), n_in + j)
    ins = _Lazy(data, range(n_in))
    outs = _Lazy(data, [out_arg.get(pos) for pos in range(len(graph.outputs))])
    builder = EntryBuilder(b, status, fns, list(entry.args[n_args:]) if ranged else [])
    builder.run(graph, kernels, plan, ins, outs, arena, copies=False)
    b.ret(b.load(status, typ=u.I64))
    if fastcall and not ranged:
        _emit_fastcall(module, entry, n_args, fastcall_name(entry_name))
    text = fix_loop_ids(str(module))
    if VECTOR_WIDTH:
        # llvmlite only knows a fixed set of function attributes; this one is a string attribute
        text = text.replace(") nounwind\n", f') nounwind "prefer-vector-width"="{VECTOR_WIDTH}"\n')
        text = text.replace(") noinline nounwind\n", f') noinline nounwind "prefer-vector-width"="{VECTOR_WIDTH}"\n')
        text = text.replace(") noinline nounwind optsize\n",
                            f') noinline nounwind optsize "prefer-vector-width"="{VECTOR_WIDTH}"\n')
    cheap = {f"{prefix}_{k.name}" for k in kernels if not isinstance(k, Control) and compiled_cheaply(k)}
    if cheap:
        text = _DEFINE_LINE.sub(lambda m: f"{m.group(0)} {CHEAP_ATTRIBUTE}" if m.group(1) in cheap else m.group(0), text)
    return text, entry_name


_DEFINE_LINE = re.compile(r'^define internal void @"([^"]+)"\(.*$', re.MULTILINE)


def fastcall_name(entry_name: str) -> str:
    """The symbol of the METH_FASTCALL trampoline of an unranged entry (`_emit_fastcall`).

    >>> fastcall_name("tp_f_entry")
    'tp_f_fastcall'
    """
    return entry_name[:-len("_entry")] + "_fastcall" if entry_name.endswith("_entry") else entry_name + "_fastcall"


def _emit_fastcall(module: ir.Module, entry: ir.Function, n_args: int, name: str) -> None:
    """``PyObject *name(PyObject *self, PyObject *const *args, Py_ssize_t nargs)``: the entry as a
    CPython METH_FASTCALL function (`fastcall.builtin`). The vectorcall argument array is the array
    of object addresses the entry takes, so the arguments go to it as they come; a wrong count
    returns NULL (a SystemError) before anything runs; the GIL is released around the entry, as
    ctypes does; the status comes back as a Python int. The C API functions are external symbols
    (the process's), so the code is the same in every process and goes to the disk cache."""
    fn = ir.Function(module, ir.FunctionType(u.PTR, [u.PTR, u.PTR, u.I64]), name)
    _, args, nargs = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    go, bad = fn.append_basic_block("go"), fn.append_basic_block("bad")
    b.cbranch(b.icmp_signed("==", nargs, u.i64(n_args)), go, bad)
    b.position_at_end(bad)
    b.ret(ir.Constant(u.PTR, None))
    b.position_at_end(go)
    objs = [b.load(b.gep(args, [u.i64(i)], inbounds=True, source_etype=u.PTR), typ=u.PTR) for i in range(n_args)]

    def api(fname, ret, params):
        return module.globals.get(fname) or ir.Function(module, ir.FunctionType(ret, params), fname)
    save = b.call(api("PyEval_SaveThread", u.PTR, []), [])
    status = b.call(entry, objs)
    b.call(api("PyEval_RestoreThread", u.VOID, [u.PTR]), [save])
    b.ret(b.call(api("PyLong_FromLongLong", u.PTR, [u.I64]), [status]))


class _Lazy:
    """Pointers made on first use (`make(arg)` for each of `args`; a None arg gives None), so that
    the entry loads only the data pointers its kernels use, in the order they use them."""

    def __init__(self, make, args):
        self._make = make
        self._args = list(args)
        self._made: dict[int, ir.Value] = {}

    def __len__(self) -> int:
        return len(self._args)

    def wanted(self, i: int) -> bool:
        return self._args[i] is not None

    def __getitem__(self, i: int) -> ir.Value | None:
        if self._args[i] is None:
            return None
        if i not in self._made:
            self._made[i] = self._make(self._args[i])
        return self._made[i]


def _wanted(outs, pos: int) -> bool:
    return outs.wanted(pos) if isinstance(outs, _Lazy) else outs[pos] is not None


def _emit_kernels(module: ir.Module, kernels: list[Kernel], prefix: str, ranged: bool,
                  codes: dict, top: bool = True, fns: dict | None = None,
                  final: frozenset = frozenset()) -> dict[int, ir.Function]:
    """One function per kernel of this scope and, under each control step, of its regions
    (named by their path: ``k3_scan_body_k0_add``); keyed by the kernel's id. `top`: this scope
    runs once per call (a region's kernels may run many times: never optimised for size). `final`:
    the graph outputs no kernel reads (`KernelContext.streamed`; a region's values are never final)."""
    fns = {} if fns is None else fns
    for k in kernels:
        if isinstance(k, Control):
            for name, sc in k.regions.items():
                _emit_kernels(module, sc.steps, f"{prefix}_{k.name}_{name}", False, codes, False, fns)
        elif id(k) not in fns:  # a region several control steps share is scheduled once: emit it once
            fns[id(k)] = _emit_kernel(module, k, f"{prefix}_{k.name}", ranged, codes, top and optimised_for_size(k),
                                      final)
    return fns


class EntryBuilder:
    """Emits the body of the entry function: the kernel calls of a scope in order, the control
    flow of its control steps (their lowerings, `lowerings/control.py`), and copies.

    Every buffer is a pointer in the entry: an input, an output or an arena offset of its scope
    (`run`). A region's inputs and outputs are whatever pointers its control step binds (a carry's
    current or next buffer, an xs slice at the step's offset, ...), so a loop body reads and
    writes in place: nothing is copied but what must be (`run`'s fix-ups)."""

    def __init__(self, b: ir.IRBuilder, status: ir.Value, fns: dict[int, ir.Function], ranges: list):
        self.b = b
        self.status = status
        self._fns = fns
        self._ranges = ranges

    def run(self, graph: Graph, kernels: list[Kernel], plan: BufferPlan, ins: list[ir.Value],
            outs: list[ir.Value | None], base: ir.Value | None, copies: bool = True) -> None:
        """Emit one scope: `ins[i]` holds graph input i, `outs[j]` receives graph output j (None:
        not wanted), `base` is the scope's arena. With `copies`, an output that is an input, or
        that repeats an earlier output, is copied to its pointer after the steps."""
        b = self.b
        first: dict[Value, int] = {}
        for pos, v in enumerate(graph.outputs):
            if _wanted(outs, pos):
                first.setdefault(v, pos)
        ptrs: dict[Value, ir.Value] = {}

        def buffer(v: Value) -> ir.Value:
            if v not in ptrs:
                kind, i = plan.slots[v]
                if kind == "in":
                    ptrs[v] = ins[i]
                elif kind == "arena":
                    ptrs[v] = self.at(base, i)
                elif plan.out_values[i] in first:
                    ptrs[v] = outs[first[plan.out_values[i]]]
                else:  # a control lowering passes None only for outputs that are inputs
                    raise AssertionError(f"codegen: no buffer for output {v} of @{graph.name}")
            return ptrs[v]

        for k_i, k in enumerate(kernels):
            if isinstance(k, Control):
                block = plan.blocks[k_i]
                site = ControlSite(self, k, block, [buffer(v) for v in k.root.inputs],
                                   [None if v is None else buffer(v) for v in k.elements],
                                   self.at(base, block.offset))
                LOWERINGS[k.kind].emit(self, site)
            else:
                b.call(self._fns[id(k)], [buffer(v) for v in k.inputs + k.outputs] + [self.status] + self._ranges)
        if not copies:
            return
        inputs = {v: i for i, v in enumerate(graph.inputs)}
        for pos, v in enumerate(graph.outputs):
            if not _wanted(outs, pos):
                continue
            if v in inputs:
                self.copy(outs[pos], ins[inputs[v]], v.type)
            elif first[v] != pos:
                self.copy(outs[pos], outs[first[v]], v.type)

    def at(self, base: ir.Value, offset: int | ir.Value) -> ir.Value:
        """`base` + `offset` bytes (None in a scope without arena, where nothing reads it)."""
        if base is None:
            return None
        offset = u.i64(offset) if isinstance(offset, int) else offset
        return self.b.gep(base, [offset], inbounds=True, source_etype=u.I8)

    def copy(self, dst: ir.Value, src: ir.Value, t) -> None:
        """Copy one tensor of type `t` from `src` to `dst` (distinct buffers)."""
        nbytes = t.size * t.dtype.itemsize
        if nbytes:
            _memcpy(self.b, dst, src, u.i64(nbytes))

    def failed(self) -> ir.Value:
        """i1: a kernel has set the status word (an index out of range)."""
        return self.b.icmp_unsigned("!=", self.b.load(self.status, typ=u.I64), u.i64(0))


@record
class ControlSite:
    """What a control lowering sees of its step: the operand pointers (in operand order), one
    pointer per element of the result (None: unused), its scratch (`temp`), and `region` to emit
    one of its regions on given pointers."""

    entry: EntryBuilder
    step: Control
    block: Block
    operands: list[ir.Value]
    results: list[ir.Value | None]
    block_base: ir.Value

    @property
    def node(self) -> Node:
        return self.step.root

    def temp(self, name: str) -> ir.Value:
        """The scratch buffer `name` the lowering asked for (`Lowering.temps`)."""
        return self.entry.at(self.block_base, self.block.temps[name])

    def region(self, name: str, ins: list[ir.Value], outs: list[ir.Value | None]) -> None:
        """Emit region `name` reading `ins` and writing `outs` (None: an output not wanted)."""
        sc = self.step.regions[name]
        base = self.entry.at(self.block_base, self.block.region_base)
        self.entry.run(sc.graph, sc.steps, self.block.regions[name], ins, outs, base)


def _memcpy(b: ir.IRBuilder, dst: ir.Value, src: ir.Value, nbytes: ir.Value) -> None:
    name = "llvm.memcpy.p0.p0.i64"
    fn = b.module.globals.get(name) or ir.Function(b.module, ir.FunctionType(u.VOID, [u.PTR, u.PTR, u.I64, u.I1]),
                                                   name)
    b.call(fn, [dst, src, nbytes, u.const(u.I1, 0)])


def optimised_for_size(k: Kernel) -> bool:
    """Whether kernel `k` is compiled with LLVM's `optsize` (no unrolling, no vector epilogues or
    runtime checks): a fused elementwise/layout loop over at most `SMALL_KERNEL_ELEMENTS` elements,
    run once per call (not inside a loop region), where fully unrolled and interleaved vector code
    would save a few microseconds per call but costs LLVM time at every compile. Only such loops: each element is computed by the same instructions whatever LLVM
    does to the loop (no reassociation across elements), so the results do not change; a
    reduction's accumulation order would.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> from tensorplay.codegen.schedule import schedule
    >>> b = GraphBuilder(); x = b.add_input(TensorType((8,), float32))
    >>> [optimised_for_size(k) for k in schedule(b.build([b.exp(x), b.emit("reduce_sum", x, axes=(0,))]))]
    [True, False]
    """
    if k.kind != "loop":
        return False
    size = 1
    for d in k.domain:
        size *= d
    return size <= SMALL_KERNEL_ELEMENTS


def _elements(v: Value) -> int:
    n = 1
    for d in v.type.shape:
        n *= d
    return n


def compiled_cheaply(k: Kernel) -> bool:
    """Whether kernel `k` is optimised at `jit.CHEAP_SPEED_LEVEL` (LLVM's O1: no vectorisers, no
    unrolling) rather than `jit.SPEED_LEVEL`: a loop or reduction kernel, run once per call, whose
    largest value's elements, times 1 + `VECMATH_WEIGHT` per vecmath function it evaluates (exp,
    tanh, ...: tens of instructions per element), are at most `CHEAP_KERNEL_ELEMENTS`. Vectorising
    such a loop would save well under a microsecond per call, and costs the vectorisers' analysis
    and the larger machine code at every compile (MLP 784-256-256-10 loss+grad: its 64- and
    640-element kernels are 10-16 of the module's ~70-80 ms of LLVM). Each element's reduction is
    accumulated in one order whatever the level, so results do not depend on the element's position
    (`jit.reassociation_is_per_element`).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> from tensorplay.codegen.schedule import schedule
    >>> b = GraphBuilder(); x = b.add_input(TensorType((8, 4), float32)); y = b.add_input(TensorType((64, 32), float32))
    >>> g = b.build([b.add(x, x), b.exp(y), b.emit("reduce_sum", x, axes=(0,)), b.add(y, y), b.exp(x)])
    >>> [compiled_cheaply(k) for k in schedule(g)]
    [True, False, True, False, True]
    """
    if k.kind != "loop":
        low = LOWERINGS.get(k.kind)
        if low is None or not low.fuses_producers:  # dot_general, sort, linalg, control, ...: their own code
            return False
    elements = max(_elements(v) for v in (*k.inputs, *k.outputs, *(n.out for n in k.nodes)))
    weight = 1 + VECMATH_WEIGHT * sum(n.prim.name in vm.FUNCTIONS for n in k.nodes)
    return elements * weight <= CHEAP_KERNEL_ELEMENTS


def _emit_kernel(module: ir.Module, k: Kernel, name: str, ranged: bool, codes: dict,
                 small: bool = False, final: frozenset = frozenset()) -> ir.Function:
    params = k.inputs + k.outputs
    fn = ir.Function(module, ir.FunctionType(u.VOID, [u.PTR] * (len(params) + 1) + [u.I64] * (2 if ranged else 0)),
                     name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    # kept out of line: one call per kernel costs nothing, while inlining every kernel into the
    # entry makes one huge function on which LLVM's optimiser is superlinear (deep graphs)
    fn.attributes.add("noinline")
    if small:
        fn.attributes.add("optsize")
    for a in fn.args[:len(params) + 1]:
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = KernelContext(b, k, dict(zip(params, fn.args)), status=fn.args[len(params)], codes=codes,
                        final=final)
    bounds = fn.args[len(params) + 1:] if ranged else None

    def body() -> None:
        if k.kind == "loop":
            _emit_loop(ctx, k, bounds)
        else:
            LOWERINGS[k.kind].emit(ctx, k.root)
        ctx.forget()

    emit_body(b, ctx, k, body)
    ctx.finish()
    b.ret_void()
    return fn


def emit_body(b: ir.IRBuilder, ctx: KernelContext, k: Kernel, body) -> None:
    """Emit kernel `k`'s loops (`body()`) once; or, when `k` evaluates sin/cos/tan, first with the
    fast argument reduction and, in the rare call that saw a huge argument, again with the exact
    one (idempotent: a kernel's outputs never alias its inputs; see `vecmath`)."""
    if not any(n.prim.name in TRIG for n in k.nodes):
        body()
        return
    huge = u.alloca_at_entry(b, u.I1, "huge_trig_arg", init=u.const(u.I1, 0))
    with vm.fast_trig(huge):
        body()
    with u.if_then(b, b.load(huge, typ=u.I1)):
        ctx.clear_flags()
        body()


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
    for start, stop in k.boxes or [((0,) * len(k.domain), k.domain)]:  # pieces: see schedule.Kernel.boxes
        with u.loop_nest(b, stop, "d", start=start, unroll_outer=UNROLL_OUTER) as ivs:
            idx = Index(k.domain, dims=ivs, ranges=tuple(zip(start, stop)))
            for v in k.outputs:
                ctx.store(v, idx, ctx.value(v, idx))
