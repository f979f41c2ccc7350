"""dot_general: batched contraction, its own kernel over materialised operands.

Two implementations, chosen per node at compile time:

- **cblas gemm from numpy's own OpenBLAS** (float32/float64, when every batch
  element is a plain row-major matrix or its transpose, and 2*m*n*k >=
  `BLAS_MIN_FLOPS`). The library numpy already loaded is made resolvable to
  the JIT with `llvm.load_library_permanently`; compiled code calls
  `scipy_cblas_sgemm64_`/`dgemm` directly, once per batch element. No new
  dependency and no Python on the hot path. Set TENSORPLAY_NO_BLAS=1 to disable.
- **a generated loop nest** otherwise (integers, small products, layouts gemm
  cannot express, numpy builds without a bundled OpenBLAS): `emit_dot_loops`.

Measured on the 2-core AVX-512 development machine (float32 square matmul,
best of 9, including the ~5 us Python call of an executable; numpy.matmul for
reference; the machine was shared, so take +-30%):

    n      loops            BLAS             numpy
    16     6.7 us           6.8 us           0.8 us
    32     8.3 us (8 GF/s)  7.9 us (8 GF/s)  1.4 us
    64     37 GF/s          44 GF/s          120 GF/s
    256    50 GF/s          211 GF/s         236 GF/s
    512    15 GF/s          257 GF/s         250 GF/s

The loop nest is competitive only while everything fits in L1/L2 (no cache
blocking); BLAS matches numpy for large products. Hence BLAS above
2*32^3 flops, loops below, where the call overhead dominates either way.

Position independence (vmap's chunk_size needs chunked == unchunked bit for bit,
and the vmap batch folds into m or the gemm batch): the loop nest gives every
output element the same bits whatever m, n and the batch size are (explicit
fused multiply-adds, no `contract` flags, see `_mul_add`;
tests/codegen/test_position_independence.py). The BLAS path is exempt:
OpenBLAS's blocking and edge kernels depend on m, so its bits per element
change with m, and the BLAS/loops choice itself depends on m. Products below
BLAS_MIN_FLOPS for the full batch are therefore chunk-invariant; larger ones agree to gemm's rounding only (set TENSORPLAY_NO_BLAS=1 for exactness).
"""
from __future__ import annotations

import ctypes
import functools
import glob
import os
from dataclasses import dataclass
from math import prod

import numpy as np
from llvmlite import ir

from tensorplay.ir.core import Node
from tensorplay.ir.prims.linalg import free_axes
from . import irutil as u
from . import jit
from .context import Index, KernelContext
from .lower import Lowering, _register

# Every output element must get the same bits whatever the loop trip counts (vmap's chunking relies
# on it: the batch folds into m). `contract` flags let the backend fuse a multiply-add or not, per
# DAG pattern, and it decides differently in a vectorised body and its scalar remainder: never
# used here. A fused multiply-add is an explicit intrinsic instead:
# - `llvm.fma` (one rounding, the same in vector and scalar code) in the axpy form, whose loops
#   run over output elements, and in the dot form when the k loop is short enough to be unrolled
#   away (then the loop over output elements is what LLVM vectorises, lane by lane);
# - `llvm.fmuladd` with `reassoc` for a dot-form k loop that survives unrolling: the only
#   multiply-add reduction LLVM's loop vectoriser accepts (with `llvm.fma` the 64x48 @ 48x40
#   product runs 8x slower), and there every output element runs the same k-loop code, whose
#   order depends on k alone; x86 with FMA lowers every fmuladd to an FMA, vector or scalar.
#   (`jit.reassociation_is_per_element`.)


def _intrinsic(b: ir.IRBuilder, name: str, args: list[ir.Value], fastmath=()) -> ir.Value:
    t = args[0].type
    full = f"{name}.{t.intrinsic_name}"
    fn = b.module.globals.get(full) or ir.Function(b.module, ir.FunctionType(t, [a.type for a in args]), full)
    return b.call(fn, args, fastmath=fastmath)


def _mul_add(b: ir.IRBuilder, acc: ir.Value, x: ir.Value, y: ir.Value, reassociate: bool) -> ir.Value:
    """acc + x*y, fused for floats; `reassociate` only for a register reduction over a k loop that
    LLVM vectorises (see above)."""
    if isinstance(x.type, ir.IntType):
        return b.add(acc, b.mul(x, y))
    if reassociate:
        return _intrinsic(b, "llvm.fmuladd", [x, y, acc], fastmath=("reassoc",))
    return _intrinsic(b, "llvm.fma", [x, y, acc])


def emit_dot_loops(ctx: KernelContext, node: Node) -> None:
    """Generated loop nest. Two orders, chosen statically by operand layout:

    - *axpy* (`out[b, m, :] += lhs[b, m, k] * rhs[b, k, :]`): the inner loop runs
      over the rhs free axes, contiguous in `out` and (usually) in `rhs`;
    - *dot* (`out[b, m, n] = sum_k lhs[b, m, k] * rhs[b, n, k]`): used when the
      rhs has no free axes or its innermost axis is contracted; the sum is a
      register accumulator that LLVM vectorises (reassociated).
    """
    b = ctx.b
    lhs, rhs = node.inputs
    out = node.out
    (lc, rc), (lb, rb) = node.attrs["contract"], node.attrs["batch"]
    lf, rf = free_axes(lhs.ndim, lc, lb), free_axes(rhs.ndim, rc, rb)
    bshape = tuple(lhs.shape[a] for a in lb)
    mshape = tuple(lhs.shape[a] for a in lf)
    nshape = tuple(rhs.shape[a] for a in rf)
    kshape = tuple(lhs.shape[a] for a in lc)
    zero = u.const(u.reg_type(out.dtype), 0)

    def operand_index(v, batch, free, contract, bax, fax, cax):
        dims = [None] * v.ndim
        for axes, ivs in ((bax, batch), (fax, free), (cax, contract)):
            for a, iv in zip(axes, ivs):
                dims[a] = iv
        return Index(v.shape, dims=dims)

    dot_form = not rf or (rhs.ndim - 1) in rc
    reassociate = jit.reassociation_is_per_element(kshape)
    with u.loop_nest(b, bshape + mshape, "bm") as bm:
        bi, mi = bm[:len(bshape)], bm[len(bshape):]
        if dot_form:
            with u.loop_nest(b, nshape, "n") as ni:
                slot = u.alloca_at_entry(b, zero.type, "acc")
                b.store(zero, slot)
                with u.loop_nest(b, kshape, "k") as ki:
                    x = ctx.load(lhs, operand_index(lhs, bi, mi, ki, lb, lf, lc))
                    y = ctx.load(rhs, operand_index(rhs, bi, ni, ki, rb, rf, rc))
                    b.store(_mul_add(b, b.load(slot, typ=zero.type), x, y, reassociate), slot)
                ctx.store(out, Index(out.shape, dims=bi + mi + ni), b.load(slot, typ=zero.type))
        else:
            with u.loop_nest(b, nshape, "z") as ni:
                ctx.store(out, Index(out.shape, dims=bi + mi + ni), zero)
            with u.loop_nest(b, kshape, "k") as ki:
                x = ctx.load(lhs, operand_index(lhs, bi, mi, ki, lb, lf, lc))
                with u.loop_nest(b, nshape, "n") as ni:
                    y = ctx.load(rhs, operand_index(rhs, bi, ni, ki, rb, rf, rc))
                    o = Index(out.shape, dims=bi + mi + ni)
                    ctx.store(out, o, _mul_add(b, ctx.load(out, o), x, y, False))


# --- BLAS ------------------------------------------------------------------------------------------
CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_TRANS = 101, 111, 112
BLAS_MIN_FLOPS = 2 * 32 ** 3  # below this a generated loop nest is as fast (see module docstring)


@dataclass(frozen=True)
class Blas:
    """A cblas gemm pair found in numpy's bundled OpenBLAS: symbol names and integer width."""

    sgemm: str
    dgemm: str
    int_bits: int


@functools.lru_cache(maxsize=1)
def find_blas() -> Blas | None:
    """numpy's own OpenBLAS (wheel builds), made resolvable by the JIT; None if there is none."""
    if os.environ.get("TENSORPLAY_NO_BLAS"):
        return None
    root = os.path.dirname(np.__file__)
    patterns = [os.path.join(root, ".libs", "*openblas*"), os.path.join(root + ".libs", "*openblas*"),
                os.path.join(root, ".dylibs", "*openblas*")]
    candidates = [("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", 64), ("cblas_sgemm64_", "cblas_dgemm64_", 64),
                  ("scipy_cblas_sgemm", "scipy_cblas_dgemm", 32), ("cblas_sgemm", "cblas_dgemm", 32)]
    for path in sorted(p for pat in patterns for p in glob.glob(pat)):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for s_name, d_name, bits in candidates:
            if hasattr(lib, s_name) and hasattr(lib, d_name):
                jit.load_library(path, [s_name, d_name])
                return Blas(s_name, d_name, bits)
    return None


def _blas_layout(v_ndim: int, batch, free, contract) -> tuple[bool, bool] | None:
    """(usable, transposed) if the operand is stored as [batch..., free..., contract...] or
    [batch..., contract..., free...] in row-major order; None otherwise."""
    order = tuple(range(v_ndim))
    if tuple(batch) + tuple(free) + tuple(contract) == order:
        return False
    if tuple(batch) + tuple(contract) + tuple(free) == order:
        return True
    return None


def blas_plan(node: Node) -> tuple[bool, bool] | None:
    """(transpose lhs, transpose rhs) when `node` can be a sequence of gemm calls, else None."""
    lhs, rhs = node.inputs
    if not lhs.dtype.is_floating_point or find_blas() is None:
        return None
    (lc, rc), (lb, rb) = node.attrs["contract"], node.attrs["batch"]
    lf, rf = free_axes(lhs.ndim, lc, lb), free_axes(rhs.ndim, rc, rb)
    m = prod(lhs.shape[a] for a in lf)
    n = prod(rhs.shape[a] for a in rf)
    k = prod(lhs.shape[a] for a in lc)
    if min(m, n, k) == 0 or 2 * m * n * k < BLAS_MIN_FLOPS:
        return None
    ta = _blas_layout(lhs.ndim, lb, lf, lc)
    tb = _blas_layout(rhs.ndim, rb, rc, rf)
    if ta is None or tb is None:
        return None
    return ta, tb


def emit_dot_blas(ctx: KernelContext, node: Node, ta: bool, tb: bool) -> None:
    """One cblas gemm per batch element (C = A @ B, row-major, beta = 0)."""
    b = ctx.b
    blas = find_blas()
    lhs, rhs = node.inputs
    out = node.out
    (lc, rc), (lb, rb) = node.attrs["contract"], node.attrs["batch"]
    lf, rf = free_axes(lhs.ndim, lc, lb), free_axes(rhs.ndim, rc, rb)
    bsize = prod(lhs.shape[a] for a in lb)
    m = prod(lhs.shape[a] for a in lf)
    n = prod(rhs.shape[a] for a in rf)
    k = prod(lhs.shape[a] for a in lc)
    ft = u.reg_type(out.dtype)
    it = ir.IntType(blas.int_bits)
    name = blas.dgemm if ft == u.F64 else blas.sgemm
    fn = b.module.globals.get(name)
    if fn is None:
        fnty = ir.FunctionType(u.VOID, [u.I32, u.I32, u.I32, it, it, it, ft, u.PTR, it, u.PTR, it, ft, u.PTR, it])
        fn = ir.Function(b.module, fnty, name)

    def c(v):
        return ir.Constant(it, v)

    esize = out.dtype.itemsize
    with u.for_range(b, u.i64(bsize), "batch") as bi:
        def at(v, elems):
            return b.gep(ctx.buffers[v], [b.mul(bi, u.i64(elems * esize))], inbounds=True, source_etype=u.I8)
        b.call(fn, [ir.Constant(u.I32, CBLAS_ROW_MAJOR), ir.Constant(u.I32, CBLAS_TRANS if ta else CBLAS_NO_TRANS),
                    ir.Constant(u.I32, CBLAS_TRANS if tb else CBLAS_NO_TRANS), c(m), c(n), c(k), u.const(ft, 1.0),
                    at(lhs, m * k), c(m if ta else k), at(rhs, k * n), c(k if tb else n), u.const(ft, 0.0),
                    at(out, m * n), c(n)])


def emit_dot(ctx: KernelContext, node: Node) -> None:
    plan = blas_plan(node)
    if plan is not None:
        emit_dot_blas(ctx, node, *plan)
    else:
        emit_dot_loops(ctx, node)


_register("dot_general", Lowering("kernel", emit_dot))
