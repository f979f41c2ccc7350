"""Large full reductions split over threads, with the same bits for any thread count.

An executable whose only kernel reduces all axes of a large operand (``sum(f(x))`` with the
producers fused, `reduce_sum` / `reduce_prod` / `reduce_max` / `reduce_min`, float32/float64 or
integer) runs in two phases:

1. ``partial(inputs..., outputs..., arena, lo, hi)``: blocks ``lo <= j < hi`` of the operand, each
   of `REDUCE_BLOCK` consecutive elements (the last may be shorter), are reduced into one
   accumulator each (`Monoid.acc` dtype: float64 for float32 sums), stored to ``arena``;
2. ``finish(inputs..., outputs..., arena)``: the accumulators are combined in block order, one
   after the other, and the result stored.

The partition is fixed by the operand's size alone, every block runs the same code whichever
thread runs it, and the combine order is fixed, so the result does not depend on the thread count
(tests/codegen/test_thread_count.py); one thread runs phase 1 over all blocks in one call. Phase 1
never calls BLAS (a reduction kernel has no gemm), so the pool and OpenBLAS's threads never nest.
"""
from __future__ import annotations

from ._record import record

from llvmlite import ir

from tensorplay.ir import dtypes as dt
from tensorplay.ir.core import Graph
from . import irutil as u
from .context import Index, KernelContext
from .lower import LOWERINGS
from .module import ALIGN, ARRAY_DATA_OFFSET, BufferPlan, coded_nodes, emit_body
from .schedule import Kernel

REDUCE_BLOCK = 1 << 16  # elements per block: the fixed partition (never depends on the thread count)
REDUCE_SPLIT_MIN = 1 << 18  # smaller reductions run in one piece, as one loop
SPLIT_KINDS = ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min")


@record(frozen=True)
class ReductionSplit:
    """How an executable's one full-reduction kernel runs in blocks (see the module docstring)."""

    kernel: Kernel
    size: int  # elements reduced
    blocks: int
    acc_dtype: dt.DType
    partials_offset: int  # byte offset of the accumulators in the arena
    arena_bytes: int  # the whole arena: the plan's buffers, then the accumulators

    @property
    def partial_entry(self) -> str:
        return "partial"

    @property
    def finish_entry(self) -> str:
        return "finish"


def reduction_split(graph: Graph, kernels: list[Kernel], plan: BufferPlan) -> ReductionSplit | None:
    """The block split of `graph`, or None unless its only kernel is a large full reduction whose
    operand is read by linear index (every fused producer is elementwise or a flat layout op).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> from tensorplay.codegen.schedule import schedule
    >>> from tensorplay.codegen.module import plan_buffers
    >>> b = GraphBuilder(); x = b.add_input(TensorType((1 << 20,), float32))
    >>> g = b.build([b.emit("reduce_sum", b.sin(x), axes=(0,))]); ks = schedule(g)
    >>> reduction_split(g, ks, plan_buffers(g, ks)).blocks
    16
    """
    from .lowerings.reduce import MONOIDS

    if len(kernels) != 1:
        return None
    k = kernels[0]
    root = k.root
    if k.kind not in SPLIT_KINDS or type(k) is not Kernel:
        return None
    x = root.inputs[0]
    if sorted(root.attrs["axes"]) != list(range(x.ndim)) or x.type.size < REDUCE_SPLIT_MIN:
        return None
    if not (x.dtype.is_floating_point and x.dtype.itemsize >= 4) and x.dtype.kind not in ("i", "u"):
        return None  # 16-bit floats and bools keep their own reduction code
    if any(not LOWERINGS[n.prim.name].linear(n) for n in k.nodes if n is not root):
        return None
    if k.outputs != [root.out] or root.out not in graph.outputs or any(v not in graph.inputs for v in k.inputs):
        return None
    acc = MONOIDS[root.prim.name].acc(x.dtype)
    blocks = -(-x.type.size // REDUCE_BLOCK)
    offset = (plan.arena_bytes + ALIGN - 1) // ALIGN * ALIGN
    return ReductionSplit(k, x.type.size, blocks, acc, offset, offset + blocks * acc.itemsize)


def build_split_module(graph: Graph, split: ReductionSplit, plan: BufferPlan, prefix: str,
                       triple: str, layout: str) -> tuple[str, str, str]:
    """The module of a split reduction: (ir text, partial entry name, finish entry name).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> from tensorplay.codegen.schedule import schedule
    >>> from tensorplay.codegen.module import plan_buffers
    >>> b = GraphBuilder(); x = b.add_input(TensorType((1 << 20,), float32))
    >>> g = b.build([b.emit("reduce_max", x, axes=(0,))]); ks = schedule(g); plan = plan_buffers(g, ks)
    >>> build_split_module(g, reduction_split(g, ks, plan), plan, "tp_doc", "", "")[1:]
    ('tp_doc_partial', 'tp_doc_finish')
    """
    from .lowerings.elementwise import convert
    from .lowerings.reduce import MONOIDS, fix_loop_ids, hint_vector_width, widening_lanes

    module = ir.Module(name=prefix)
    module.triple = triple
    module.data_layout = layout
    codes = {}
    for i, (n, _) in enumerate(coded_nodes(graph, [split.kernel])):
        codes.setdefault(n, i + 1)
    k, root = split.kernel, split.kernel.root
    x, out = root.inputs[0], root.out
    monoid = MONOIDS[root.prim.name]
    acc_t = u.reg_type(split.acc_dtype)
    n_in = len(graph.inputs)
    n_args = n_in + len(plan.out_values) + 1

    # phase 1: one kernel function, blocks [lo, hi)
    kfn = ir.Function(module, ir.FunctionType(u.VOID, [u.PTR] * (len(k.inputs) + 2) + [u.I64, u.I64]),
                      f"{prefix}_{k.name}_blocks")
    kfn.linkage = "internal"
    kfn.attributes.add("nounwind")
    kfn.attributes.add("noinline")
    for a in kfn.args[:len(k.inputs) + 2]:
        a.add_attribute("noalias")
    b = ir.IRBuilder(kfn.append_basic_block("entry"))
    partials, status, lo, hi = kfn.args[len(k.inputs):]
    ctx = KernelContext(b, k, dict(zip(k.inputs, kfn.args)), status=status, codes=codes)
    flags = ("reassoc",) if x.dtype.is_floating_point else ()

    def body() -> None:
        with u.for_range(b, hi, "blk", start=lo) as j:
            start = b.mul(j, u.i64(REDUCE_BLOCK))
            stop = b.add(start, u.i64(REDUCE_BLOCK))
            stop = b.select(b.icmp_signed("<", stop, u.i64(split.size)), stop, u.i64(split.size))
            slot = u.alloca_at_entry(b, acc_t, "acc")
            b.store(u.const(acc_t, monoid.identity(split.acc_dtype)), slot)
            with u.for_range(b, stop, "i", start=start) as i:
                v = convert(b, ctx.value(x, Index(x.shape, linear=i)), x.dtype, split.acc_dtype)
                b.store(monoid.combine(b, b.load(slot, typ=acc_t), v, split.acc_dtype, flags), slot)
                ctx.forget()
                latch = b.block
            if flags:
                hint_vector_width(latch, widening_lanes(x.dtype, split.acc_dtype))
            b.store(b.load(slot, typ=acc_t), b.gep(partials, [j], inbounds=True, source_etype=acc_t))
        ctx.forget()

    emit_body(b, ctx, k, body)
    ctx.finish()
    b.ret_void()

    def entry(name: str, ranged: bool):
        fn = ir.Function(module, ir.FunctionType(u.I64, [u.PTR] * n_args + [u.I64] * (2 if ranged else 0)),
                         f"{prefix}_{name}")
        fn.attributes.add("nounwind")
        eb = ir.IRBuilder(fn.append_basic_block("entry"))

        def data(i: int) -> ir.Value:
            p = eb.gep(fn.args[i], [u.i64(ARRAY_DATA_OFFSET)], inbounds=True, source_etype=u.I8)
            return eb.load(p, typ=u.PTR)

        acc_base = eb.gep(data(n_args - 1), [u.i64(split.partials_offset)], inbounds=True, source_etype=u.I8)
        return fn, eb, data, acc_base

    fn, eb, data, acc_base = entry(split.partial_entry, True)
    st = eb.alloca(u.I64, name="status")
    eb.store(u.i64(0), st)
    eb.call(kfn, [data(graph.inputs.index(v)) for v in k.inputs] + [acc_base, st, fn.args[n_args], fn.args[n_args + 1]])
    eb.ret(eb.load(st, typ=u.I64))

    # phase 2: combine the accumulators in block order (no reassociation), store the result
    fn, eb, data, acc_base = entry(split.finish_entry, False)
    slot = eb.alloca(acc_t, name="acc")
    eb.store(u.const(acc_t, monoid.identity(split.acc_dtype)), slot)
    with u.for_range(eb, split.blocks, "blk") as j:
        part = eb.load(eb.gep(acc_base, [j], inbounds=True, source_etype=acc_t), typ=acc_t)
        eb.store(monoid.combine(eb, eb.load(slot, typ=acc_t), part, split.acc_dtype, ()), slot)
    res = convert(eb, eb.load(slot, typ=acc_t), split.acc_dtype, out.dtype)
    out_ptr = data(n_in + plan.out_values.index(out))
    eb.store(res, out_ptr, align=out.dtype.itemsize)
    eb.ret(u.i64(0))
    return fix_loop_ids(str(module)), f"{prefix}_{split.partial_entry}", f"{prefix}_{split.finish_entry}"
