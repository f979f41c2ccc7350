"""dot_general: batched contraction, its own kernel over materialised operands.

Five implementations, chosen per node at compile time:

- **cblas gemm from numpy's own OpenBLAS** (float32/float64, and float16/bfloat16
  through float32 copies of the operands and result, 2*m*n*k >=
  `BLAS_MIN_FLOPS`, and a `GemmPlan` exists: each operand's free and contracted
  axes form a strided row-major matrix or its transpose, with any leading
  dimension; batch axes anywhere, and leading free axes that do not fit one
  matrix (vmap puts its axis there), become a loop of gemm calls at computed
  offsets). A call whose m or n is 1 (a mat-vec: linearize's `jvp_fn`, vmap
  chunks of size 1) is a cblas gemv instead: this OpenBLAS (0.3.31) takes ~4x
  longer for an m = 1 sgemm than for the same sgemv. The library numpy already
  loaded is made resolvable to the JIT; compiled code calls
  `scipy_cblas_sgemm64_`/`dgemm`/`sgemv`/`dgemv` directly. No new
  dependency and no Python on the hot path. Set TENSORPLAY_NO_BLAS=1 to disable.
- **the in-place gemm** (`GemmPlan.inplace_kernel`: one float32 product of >= 8.4 MFLOP on an
  AVX-512 host; ``TENSORPLAY_INPLACE_GEMM=0`` turns it off): a call of the shape-generic 8 x 32
  register-tile function `gemm_kernel.emit_generic_inplace`, compiled once per process or loaded
  from the disk cache (`gemm_library`) and linked by symbol, reading A and B where they are.
- **a generated register-blocked gemm** (`gemm_kernel`) for a plan that OpenBLAS
  would run as a loop of float32 calls sharing one lhs (vmap over stacked weights
  with a shared batch): the lhs is packed once instead of once per call, and
  every element is one fma chain over k (`GemmPlan.generated_kernel` has the
  rule: shapes, dtype and host FMA only).
- **register tiles** (`gemm_kernel.emit_small_gemm`, `tile_plan`) for float32/float64
  products below the BLAS range that the loop nest computes as one in-order fma chain per
  element (its axpy form, and its dot form with k loops of at most 4): the same chain, held in
  registers over k, with the loop nest's bits (vmap's batched layers, 8 x (32x64 @ 64x10): 162 ->
  6 us).
- **a generated loop nest** otherwise (integers, 16-bit floats, the dot form with a longer k loop,
  empty products, layouts gemm cannot express, numpy builds without a bundled OpenBLAS):
  `emit_dot_loops`.

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
change with m, and the BLAS/loops choice (and gemv for m = 1) itself depends on m. The
generated gemm kernel has the loop nest's axpy bits (position independent), but it
is chosen only inside the BLAS range, from m among other things. Products below
BLAS_MIN_FLOPS for the full batch are therefore chunk-invariant; larger ones agree to gemm's rounding only (set TENSORPLAY_NO_BLAS=1 for exactness).
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import os
from ._record import record
from math import prod

import numpy as np
from llvmlite import ir

from tensorplay.ir import dtypes as dt
from tensorplay.ir.core import Node
from tensorplay.ir.prims.linalg import free_axes
from . import gemm_kernel
from . import gemv_kernel
from . import irutil as u
from . import jit
from .context import Index, KernelContext

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

    A large graph output in the axpy form (`KernelContext.streamed`: vmap(grad)'s per-sample
    outer products) is computed row block by row block in L1 scratch and streamed out with
    non-temporal stores (`_axpy_streamed`), the same operations in the same order.
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

    # 16-bit floats accumulate in a float32 register (the axpy form would round every partial sum)
    dot_form = not rf or (rhs.ndim - 1) in rc or u.mem_type(out.dtype) is u.I16
    reassociate = jit.reassociation_is_per_element(kshape)
    width = ctx.streamed(out)
    if _streams(ctx, node):
        _axpy_streamed(ctx, node, width, operand_index, (lb, lf, lc), (rb, rf, rc), (bshape, mshape, nshape, kshape))
        return
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


STREAM_ROW_BYTES = 1 << 12  # the scratch rows of a streamed output: a few KiB, in L1


def _streams(ctx: KernelContext, node: Node) -> bool:
    """Whether the loop nest writes `node`'s output with non-temporal stores (`_axpy_streamed`): a
    large graph output no kernel reads, in the axpy form, with rows of at most STREAM_ROW_BYTES."""
    lhs, rhs = node.inputs
    out = node.out
    rc, rb = node.attrs["contract"][1], node.attrs["batch"][1]
    rf = free_axes(rhs.ndim, rc, rb)
    t = u.mem_type(out.dtype)
    dot_form = not rf or (rhs.ndim - 1) in rc or t is u.I16
    return (ctx.streamed(out) is not None and not dot_form and t is u.reg_type(out.dtype)
            and 0 < prod(rhs.shape[a] for a in rf) * u.type_bytes(t) <= STREAM_ROW_BYTES)


def _axpy_streamed(ctx: KernelContext, node: Node, width: int, operand_index, laxes, raxes, shapes) -> None:
    """The axpy form for a large output written once (`KernelContext.streamed`): rows of the
    output (one per batch and lhs free index) are computed in a stack scratch block of up to
    `STREAM_ROW_BYTES` -- zeroed, then ``fma(x, y, acc)`` for each k in order, exactly as the
    plain form does in the output -- and each block is copied out with non-temporal stores
    (`irutil.stream_copy`), so every output line is written once, in full, past the cache."""
    b = ctx.b
    lhs, rhs = node.inputs
    out = node.out
    bshape, mshape, nshape, kshape = shapes
    t = u.mem_type(out.dtype)
    n = prod(nshape)
    rows = prod(bshape) * prod(mshape)
    es = u.type_bytes(t)  # memory and register types are the same (floats, int32/64)
    per = max(1, STREAM_ROW_BYTES // (n * es))  # rows per scratch block
    fn = b.function
    with b.goto_block(fn.entry_basic_block):
        if fn.entry_basic_block.instructions:
            b.position_before(fn.entry_basic_block.instructions[0])
        scratch = b.alloca(t, size=u.i64(per * n), name="rows")
        scratch.align = width
    zero = u.const(t, 0)

    def cell(r_local, ni):
        at = u.iadd(b, u.imul(b, r_local, n), Index(nshape, dims=ni).linear(b))
        return b.gep(scratch, [at], inbounds=True, source_etype=t)

    def load(p):
        return b.load(p, typ=t, align=es)

    def store(p, x):
        b.store(x, p, align=es)

    blocks = -(-rows // per)
    with u.for_range(b, blocks, "blk", unroll=False) as blk:
        r0 = u.imul(b, blk, per)
        left = b.sub(u.i64(rows), r0)
        count = b.select(b.icmp_signed("<", left, u.i64(per)), left, u.i64(per))
        with u.for_range(b, count, "row", unroll=False) as rr:
            bm = Index(bshape + mshape, linear=b.add(r0, rr)).dims(b)
            bi, mi = bm[:len(bshape)], bm[len(bshape):]
            once = prod(kshape) == 1  # an outer product: fma(x, y, 0) stored once, nothing reloaded
            if not once:
                with u.loop_nest(b, nshape, "z") as ni:
                    store(cell(rr, ni), zero)
            with u.loop_nest(b, kshape, "k") as ki:
                x = ctx.load(lhs, operand_index(lhs, bi, mi, ki, *laxes))
                with u.loop_nest(b, nshape, "n") as ni:
                    y = ctx.load(rhs, operand_index(rhs, bi, ni, ki, *raxes))
                    p = cell(rr, ni)
                    store(p, _mul_add(b, zero if once else load(p), x, y, False))
        dst = b.gep(ctx.buffers[out], [u.imul(b, r0, n)], inbounds=True, source_etype=t)
        u.stream_copy(b, dst, scratch, u.imul(b, count, n), t, width)
    u.store_fence(b)


# --- BLAS ------------------------------------------------------------------------------------------
CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_TRANS = 101, 111, 112
BLAS_MIN_FLOPS = 2 * 32 ** 3  # below this a generated loop nest is as fast (see module docstring)
GENERATED_MAX_PANEL = 1 << 18  # floats of each packed operand of the generated gemm kernel (1 MB)
# The in-place kernel from this many flops (128^3, or the LSTM step's 32x128 @ 128x512); below,
# OpenBLAS ties or wins on Zen 4 (one thread, in place vs OpenBLAS: 64x128 @ 128x128 0.029 vs 0.027
# ms; 128^3 0.048 vs 0.049, 64x256 @ 256x256 0.084 vs 0.093, 64x784 @ 784x256 0.26 vs 0.31). On a
# Sapphire Rapids core (tp.compile calls, us): 128^3 26.9 vs 28.4, 32x128 @ (512x128)^T 26 vs 49,
# 32x512 @ 512x128 26.4 vs 35.3, 64x128 @ 128x128 14.8 vs 16.4; an LSTM step's products inside a
# scan (OpenBLAS repacks the weight on every step) took its loss+grad from 8.64 to 7.67 ms.
INPLACE_MIN_FLOPS = 1 << 22
# The in-place gemm is on by default where `GemmPlan.inplace_kernel` takes it (AVX-512 hosts);
# TENSORPLAY_INPLACE_GEMM=0 keeps every such product on OpenBLAS. Its code is one shape-generic
# function per tile (`gemm_library`: compiled once per process or loaded from the disk cache, called
# by symbol), not a kernel per shape: the per-shape kernels cost ~28 ms of LLVM each, which took the
# first call of the MLP loss+grad from 0.39x to 0.74x jax.jit's. The bits are the same either way.
INPLACE_GEMM_ENV = "TENSORPLAY_INPLACE_GEMM"


def inplace_gemm_enabled() -> bool:
    """Whether single float32 gemms may run as the generated in-place kernel (`GemmPlan.inplace_kernel`
    says where): yes unless ``TENSORPLAY_INPLACE_GEMM=0``, read when a graph is compiled (the
    disk-cache key has it too, `executable._disk_key`).

    >>> isinstance(inplace_gemm_enabled(), bool)
    True
    """
    return os.environ.get(INPLACE_GEMM_ENV, "").strip() != "0"


def inplace_tile() -> "gemm_kernel.Tile":
    """The register tile of the in-place gemm: the 8 x 32 one (the rule takes AVX-512 hosts only;
    tests force the other to check that the bits do not depend on it).

    >>> gemm_kernel.generic_symbol(inplace_tile(), False)
    'tp_gemm_f32_8x32_nn'
    """
    return gemm_kernel.AVX512_TILE


# The in-place gemm copies an untransposed B's column panel too (a block of k at a time, to the
# kernel's stack) when at least this many rows of A pass over it
# (Zen 4, same process, bits equal: x^T @ dh 784x64 @ 64x256 0.279 vs 0.304 ms; 256x64 @ 64x256
# 0.092 vs 0.092; 64x256 @ 256x256 0.093 vs 0.087; 1024x784 @ 784x256 0.91-0.94x vs 0.96-1.07x of
# OpenBLAS, round 12).
COPY_PANEL_MIN_ROWS = 256


@record(frozen=True)
class Blas:
    """A cblas gemm pair found in numpy's bundled OpenBLAS: symbol names and integer width."""

    sgemm: str
    dgemm: str
    int_bits: int
    sgemv: str = ""
    dgemv: str = ""


def _openblas_libraries():
    """(path, loaded library) for each OpenBLAS numpy bundles with itself."""
    root = os.path.dirname(np.__file__)
    patterns = [os.path.join(root, ".libs", "*openblas*"), os.path.join(root + ".libs", "*openblas*"),
                os.path.join(root, ".dylibs", "*openblas*")]
    for path in sorted(p for pat in patterns for p in glob.glob(pat)):
        try:
            yield path, ctypes.CDLL(path)
        except OSError:
            continue


@functools.lru_cache(maxsize=1)
def find_blas() -> Blas | None:
    """numpy's own OpenBLAS (wheel builds), made resolvable by the JIT; None if there is none."""
    if os.environ.get("TENSORPLAY_NO_BLAS"):
        return None
    candidates = [("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", 64), ("cblas_sgemm64_", "cblas_dgemm64_", 64),
                  ("scipy_cblas_sgemm", "scipy_cblas_dgemm", 32), ("cblas_sgemm", "cblas_dgemm", 32)]
    for path, lib in _openblas_libraries():
        for s_name, d_name, bits in candidates:
            if hasattr(lib, s_name) and hasattr(lib, d_name):
                sv, dv = s_name.replace("gemm", "gemv"), d_name.replace("gemm", "gemv")
                gemv = (sv, dv) if hasattr(lib, sv) and hasattr(lib, dv) else ("", "")
                jit.load_library(path, [s_name, d_name] + [g for g in gemv if g])
                return Blas(s_name, d_name, bits, *gemv)
    return None


# OpenBLAS's cores that run its AVX-512 sgemm kernel (`openblas_get_corename`); on other cores of an
# AVX-512 host (Zen 4: "Zen", its Haswell kernel) the in-place gemm wins more often (`inplace_kernel`).
_AVX512_BLAS_CORES = ("skylakex", "cooperlake", "sapphirerapids")


@functools.lru_cache(maxsize=1)
def blas_runs_avx512() -> bool:
    """Whether numpy's OpenBLAS runs its AVX-512 kernels on this host (the core it reports).

    >>> isinstance(blas_runs_avx512(), bool)
    True
    """
    for _, lib in _openblas_libraries():
        for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename64_",
                     "openblas_get_corename"):
            get = getattr(lib, name, None)
            if get is not None:
                get.restype = ctypes.c_char_p
                core = (get() or b"").decode("ascii", "replace").lower()
                return core in _AVX512_BLAS_CORES
    return False


@record(frozen=True)
class GemmPlan:
    """A dot_general as a loop nest of strided row-major gemm calls (all sizes and strides in
    elements): `loops` = (extent, lhs stride, rhs stride, out stride) per loop axis; per call
    C[m, n] = sum_k A[m, k] B[k, n] with A, B possibly transposed and leading dimensions
    lda, ldb, ldc (rows of C are ldc apart, its columns contiguous)."""

    loops: tuple[tuple[int, int, int, int], ...]
    m: int
    n: int
    k: int
    trans_a: bool
    lda: int
    trans_b: bool
    ldb: int
    ldc: int

    def gemv(self) -> GemvCall | None:
        """The same call as one matrix-vector product when m or n is 1 (OpenBLAS's gemm is ~4x
        slower than its gemv for an m = 1 product), else None.

        >>> GemmPlan((), 1, 9, 10, False, 10, False, 9, 9).gemv()  # (1x10) @ (10x9)
        GemvCall(matrix=1, trans=True, rows=10, cols=9, ld=9, vector=0, incx=1, incy=1)
        """
        if self.n == 1:  # C[:, 0] = A @ B[:, 0]: A is the matrix, B's column the vector
            rows, cols = (self.k, self.m) if self.trans_a else (self.m, self.k)
            return GemvCall(0, self.trans_a, rows, cols, self.lda, 1, 1 if self.trans_b else self.ldb, self.ldc)
        if self.m == 1:  # C[0, :] = B^T @ A[0, :]: B is the matrix, A's row the vector
            rows, cols = (self.n, self.k) if self.trans_b else (self.k, self.n)
            return GemvCall(1, not self.trans_b, rows, cols, self.ldb, 0, self.lda if self.trans_a else 1, 1)
        return None

    def generated_kernel(self, dtype, host_fma: bool | None = None) -> bool:
        """Whether the calls run as the generated register-blocked kernel (`gemm_kernel`) rather
        than OpenBLAS: float32 on a host with FMA, two or more calls that all share the lhs (it is
        packed once; a single call is no faster than OpenBLAS), an untransposed rhs (a transposed
        one with a loop of calls does not arise from contiguous operands: its free axes merge into
        one gemm), n a multiple of the 256-bit tile's 16 columns, m >= 12, and both packed operands
        at most 1 MB (for either tile: the tile, chosen in `emit_dot_generated`, never changes the
        path). Shapes, dtype and host only: never timing.

        >>> ens = GemmPlan(((10, 0, 100352, 128),), 64, 128, 784, False, 784, False, 128, 1280)
        >>> ens.generated_kernel(dt.float32, host_fma=True), ens.generated_kernel(dt.float64, host_fma=True)
        (True, False)
        """
        host_fma = gemm_kernel.host_supported() if host_fma is None else host_fma
        calls = prod(e for e, *_ in self.loops)
        return (dtype is dt.float32 and host_fma and calls >= 2 and all(ls == 0 for _, ls, _, _ in self.loops)
                and not self.trans_b and self.n % gemm_kernel.NR == 0 and self.m >= 2 * gemm_kernel.MR
                and self.k * self.n <= GENERATED_MAX_PANEL
                and max(gemm_kernel.lhs_panel_elements(self.m, self.k, t)
                        for t in (gemm_kernel.AVX2_TILE, gemm_kernel.AVX512_TILE)) <= GENERATED_MAX_PANEL)

    def copies_b_panel(self) -> bool:
        """Whether the in-place kernel copies an untransposed B's column panels contiguous
        (`gemm_kernel.GENERIC_COPY_PANEL`): when at least `COPY_PANEL_MIN_ROWS` rows of A pass over
        each, or when k is longer than one block (`gemm_kernel.GENERIC_PANEL_K`): a block's copy
        stays in L1, while B read in place spans k rows ldb apart (64x784 @ 784x256, Sapphire
        Rapids, same process: 147 us copied against 165 in place; 64x256 @ 256x256 52 / 50).

        >>> GemmPlan((), 64, 256, 784, False, 784, False, 256, 256).copies_b_panel()
        True
        >>> GemmPlan((), 64, 256, 256, False, 256, False, 256, 256).copies_b_panel()
        False
        """
        return self.m >= COPY_PANEL_MIN_ROWS or self.k > gemm_kernel.GENERIC_PANEL_K

    def inplace_kernel(self, dtype, host_avx512: bool | None = None, blas_avx512: bool | None = None) -> bool:
        """Whether this single gemm call runs as the generated kernel reading both operands in
        place (`gemm_kernel.emit_gemm_inplace`) rather than OpenBLAS: float32 on an AVX-512 host
        with FMA (where it was measured faster: the MLP's x @ W1, x^T @ dh and dh @ W^T), one call
        (no loop), either orientation of B (a transposed one's column panel is copied, transposed,
        a block of k at a time: x @ W^T of 64x784 @ (256x784)^T ran 158 us against OpenBLAS's 230 on
        Sapphire Rapids), n a multiple of the 256-bit tile's 16 columns, m >= 8 rows (one
        512-bit tile), at least `INPLACE_MIN_FLOPS` and B at most 1 MB (its panels stay in L2), A
        too unless it is untransposed with m >= `COPY_PANEL_MIN_ROWS` (B's panels copied: the MLP's
        x @ W1 at B = 1024, 1024x784 @ 784x256, 0.91-0.94x OpenBLAS's Haswell kernel on Zen 4; a
        large A^T ran 1.13x) and OpenBLAS does not run its own AVX-512 kernel (`blas_runs_avx512`:
        on Sapphire Rapids that x @ W1 took 2.65 ms in place against 2.24 in OpenBLAS, while the
        products with A in L2 stay faster in place: 1024x256 @ 256x256 0.65 vs 0.71 ms).
        Shapes, dtype and host only: never timing.

        >>> GemmPlan((), 64, 256, 784, False, 784, False, 256, 256).inplace_kernel(dt.float32, host_avx512=True)
        True
        >>> GemmPlan((), 64, 256, 784, False, 784, False, 256, 256).inplace_kernel(dt.float32, host_avx512=False)
        False
        """
        if host_avx512 is None:
            host_avx512 = gemm_kernel.host_supported() and gemm_kernel.host_avx512()
        return (dtype is dt.float32 and host_avx512 and not self.loops
                and self.n % gemm_kernel.NR == 0 and self.m >= gemm_kernel.AVX512_TILE.mr
                and 2 * self.m * self.n * self.k >= INPLACE_MIN_FLOPS
                and self.k * self.n <= GENERATED_MAX_PANEL
                and (self.m * self.k <= GENERATED_MAX_PANEL
                     or not self.trans_a and self.m >= COPY_PANEL_MIN_ROWS
                     and not (blas_runs_avx512() if blas_avx512 is None else blas_avx512)))


@record(frozen=True)
class GemvCall:
    """One cblas gemv per point of a GemmPlan's loop nest: y = op(M) @ x with M the row-major
    `rows` x `cols` matrix of operand `matrix` (0 = lhs, 1 = rhs; leading dimension `ld`),
    transposed if `trans`, x read from operand `vector` with stride `incx`, y written to the
    output with stride `incy`."""

    matrix: int
    trans: bool
    rows: int
    cols: int
    ld: int
    vector: int
    incx: int
    incy: int


@record(frozen=True)
class Lapack:
    """LAPACKE (row-major C interface) in numpy's bundled OpenBLAS: where it is and its integer width."""

    path: str
    prefix: str
    suffix: str
    int_bits: int

    def symbol(self, routine: str) -> str:
        """The JIT-resolvable name of LAPACKE routine `routine` (e.g. ``dgesv``), loaded on first use."""
        name = f"{self.prefix}{routine}{self.suffix}"
        if name not in _LOADED:
            jit.load_library(self.path, [name])
            _LOADED.add(name)
        return name


_LOADED: set[str] = set()


@functools.lru_cache(maxsize=1)
def find_lapack() -> Lapack | None:
    """LAPACKE from numpy's own OpenBLAS (wheel builds), found like gemm (`find_blas`); None if absent."""
    candidates = [("scipy_LAPACKE_", "64_", 64), ("LAPACKE_", "64_", 64), ("scipy_LAPACKE_", "", 32),
                  ("LAPACKE_", "", 32)]
    for path, lib in _openblas_libraries():
        for prefix, suffix, bits in candidates:
            if hasattr(lib, f"{prefix}dgesv{suffix}"):
                return Lapack(path, prefix, suffix, bits)
    return None


def _strides(shape) -> list[int]:
    out, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        out[i] = acc
        acc *= shape[i]
    return out


def _group(shape, strides, axes) -> tuple[int, int] | None:
    """(size, stride) when `axes`, in this order, address one uniformly strided dimension."""
    axes = [a for a in axes if shape[a] != 1]
    if not axes:
        return 1, 1
    for a, b in zip(axes, axes[1:]):
        if strides[a] != strides[b] * shape[b]:
            return None
    return prod(shape[a] for a in axes), strides[axes[-1]]


def _matrix(rows: tuple[int, int], cols: tuple[int, int]) -> tuple[bool, int] | None:
    """(transposed, leading dimension) of a row-major gemm operand with these (size, stride)
    rows and columns, or None when neither orientation has unit stride."""
    (r, rs), (c, cs) = rows, cols
    if c == 1 or cs == 1:
        if r == 1 or rs >= c:
            return False, max(rs if r > 1 else c, c, 1)
    if r == 1 or rs == 1:
        if c == 1 or cs >= r:
            return True, max(cs if c > 1 else r, r, 1)
    return None


def blas_plan(node: Node) -> GemmPlan | None:
    """How `node` runs as strided gemm calls, or None (integers, small products, no BLAS,
    layouts with no unit-stride orientation). Batch axes, and leading free axes whose
    operand does not form one strided matrix with them, become loops around the calls."""
    lhs, rhs = node.inputs
    out = node.out
    if not lhs.dtype.is_floating_point or find_blas() is None:
        return None
    (lc, rc), (lb, rb) = node.attrs["contract"], node.attrs["batch"]
    lf, rf = free_axes(lhs.ndim, lc, lb), free_axes(rhs.ndim, rc, rb)
    m = prod(lhs.shape[a] for a in lf)
    n = prod(rhs.shape[a] for a in rf)
    k = prod(lhs.shape[a] for a in lc)
    if min(m, n, k) == 0 or 2 * m * n * k < BLAS_MIN_FLOPS:
        return None
    ls, rs, os_, loops, lf, rf, lf_out, rf_out = _peel_free_axes(lhs, rhs, out, lb, rb, lf, rf, False)
    rows_a, cols_a = _group(lhs.shape, ls, lf), _group(lhs.shape, ls, lc)
    rows_b, cols_b = _group(rhs.shape, rs, rc), _group(rhs.shape, rs, rf)
    rows_c, cols_c = _group(out.shape, os_, lf_out), _group(out.shape, os_, rf_out)
    if None in (rows_a, cols_a, rows_b, cols_b, rows_c, cols_c):
        return None
    a_layout, b_layout = _matrix(rows_a, cols_a), _matrix(rows_b, cols_b)
    c_layout = _matrix(rows_c, cols_c)
    if a_layout is None or b_layout is None or c_layout is None or c_layout[0]:
        return None
    m, n, k = rows_a[0], cols_b[0], cols_a[0]
    return GemmPlan(tuple(loops), m, n, k, a_layout[0], a_layout[1], b_layout[0], b_layout[1], c_layout[1])


def _peel_free_axes(lhs, rhs, out, lb, rb, lf, rf, group_out: bool):
    """(strides of lhs / rhs / out, the loops over batch axes and peeled free axes, the free axes
    left on each side and their output axes): leading free axes are peeled into loops until the
    rest of each side forms one strided group (and, with `group_out`, the output's share too)."""
    ls, rs, os_ = _strides(lhs.shape), _strides(rhs.shape), _strides(out.shape)
    nb = len(lb)
    loops = [(lhs.shape[a], ls[a], rs[b], os_[i]) for i, (a, b) in enumerate(zip(lb, rb))]
    lf, rf = list(lf), list(rf)
    lf_out = list(range(nb, nb + len(lf)))
    rf_out = list(range(nb + len(lf), out.ndim))
    while lf and (_group(lhs.shape, ls, lf) is None or group_out and _group(out.shape, os_, lf_out) is None):
        a, o = lf.pop(0), lf_out.pop(0)
        loops.append((lhs.shape[a], ls[a], 0, os_[o]))
    while rf and (_group(rhs.shape, rs, rf) is None or group_out and _group(out.shape, os_, rf_out) is None):
        a, o = rf.pop(0), rf_out.pop(0)
        loops.append((rhs.shape[a], 0, rs[a], os_[o]))
    return ls, rs, os_, loops, lf, rf, lf_out, rf_out


def emit_dot_blas(ctx: KernelContext, node: Node, plan: GemmPlan) -> None:
    """One cblas gemm per point of the plan's loop nest (C = A @ B, row-major, beta = 0), or one
    gemv when m or n is 1 (`GemmPlan.gemv`)."""
    if plan.generated_kernel(node.out.dtype):
        emit_dot_generated(ctx, node, plan)
        return
    if inplace_gemm_enabled() and plan.inplace_kernel(node.out.dtype):
        emit_dot_inplace(ctx, node, plan)
        return
    b = ctx.b
    blas = find_blas()
    lhs, rhs = node.inputs
    out = node.out
    ft = u.reg_type(out.dtype)
    it = ir.IntType(blas.int_bits)
    gemv = plan.gemv() if blas.sgemv else None
    low = u.mem_type(out.dtype) is u.I16
    if gemv is not None and not low and gemv_kernel.applies(ft, gemv.trans, gemv.rows, gemv.cols, gemv.incy):
        _emit_gemv_generated(ctx, node, plan, gemv)
        return
    if gemv is None:
        name = blas.dgemm if ft == u.F64 else blas.sgemm
        params = [u.I32, u.I32, u.I32, it, it, it, ft, u.PTR, it, u.PTR, it, ft, u.PTR, it]
    else:
        name = blas.dgemv if ft == u.F64 else blas.sgemv
        params = [u.I32, u.I32, it, it, ft, u.PTR, it, u.PTR, it, ft, u.PTR, it]
    fn = b.module.globals.get(name) or ir.Function(b.module, ir.FunctionType(u.VOID, params), name)

    def c(v):
        return ir.Constant(it, v)

    esize = out.dtype.itemsize
    base = {v: ctx.buffers[v] for v in (lhs, rhs, out)}
    if low:  # a 16-bit float: sgemm on float32 copies (exact), then one rounding per output element
        esize = 4
        base = {v: _malloc(b, 4 * v.type.size) for v in (lhs, rhs, out)}
        for v in (lhs, rhs):
            with u.for_range(b, u.i64(v.type.size), "widen") as i:
                b.store(ctx.load(v, Index(v.shape, linear=i)), b.gep(base[v], [i], inbounds=True, source_etype=u.F32))
    with u.loop_nest(b, tuple(e for e, *_ in plan.loops), "gemm") as ivs:
        def at(v, which):
            off = u.i64(0)
            for iv, loop in zip(ivs, plan.loops):
                off = u.iadd(b, off, u.imul(b, iv, loop[which] * esize))
            return b.gep(base[v], [off], inbounds=True, source_etype=u.I8)
        if gemv is not None:
            ops = ((lhs, 1), (rhs, 2))
            b.call(fn, [ir.Constant(u.I32, CBLAS_ROW_MAJOR),
                        ir.Constant(u.I32, CBLAS_TRANS if gemv.trans else CBLAS_NO_TRANS),
                        c(gemv.rows), c(gemv.cols), u.const(ft, 1.0), at(*ops[gemv.matrix]), c(gemv.ld),
                        at(*ops[gemv.vector]), c(gemv.incx), u.const(ft, 0.0), at(out, 3), c(gemv.incy)])
        else:
            b.call(fn, [ir.Constant(u.I32, CBLAS_ROW_MAJOR),
                        ir.Constant(u.I32, CBLAS_TRANS if plan.trans_a else CBLAS_NO_TRANS),
                        ir.Constant(u.I32, CBLAS_TRANS if plan.trans_b else CBLAS_NO_TRANS),
                        c(plan.m), c(plan.n), c(plan.k), u.const(ft, 1.0), at(lhs, 1), c(plan.lda),
                        at(rhs, 2), c(plan.ldb), u.const(ft, 0.0), at(out, 3), c(plan.ldc)])
    if low:
        with u.for_range(b, u.i64(out.type.size), "narrow") as i:
            x = b.load(b.gep(base[out], [i], inbounds=True, source_etype=u.F32), typ=u.F32)
            ctx.store(out, Index(out.shape, linear=i), x)
        for v in (lhs, rhs, out):
            _free(b, base[v])


def _emit_gemv_generated(ctx: KernelContext, node: Node, plan: GemmPlan, gemv: GemvCall) -> None:
    """The plan's gemv calls (axpy form, `gemv_kernel.applies`) as the generated kernel, one per
    point of the loop nest at the offsets the cblas call would get."""
    b = ctx.b
    lhs, rhs = node.inputs
    out = node.out
    ft = u.reg_type(out.dtype)
    esize = out.dtype.itemsize
    ops = ((lhs, 1), (rhs, 2))
    with u.loop_nest(b, tuple(e for e, *_ in plan.loops), "gemv") as ivs:
        def at(v, which):
            off = u.i64(0)
            for iv, loop in zip(ivs, plan.loops):
                off = u.iadd(b, off, u.imul(b, iv, loop[which] * esize))
            return b.gep(ctx.buffers[v], [off], inbounds=True, source_etype=u.I8)
        gemv_kernel.emit_gemv(b, at(*ops[gemv.matrix]), gemv.ld, at(*ops[gemv.vector]), gemv.incx,
                              at(out, 3), gemv.rows, gemv.cols, ft)


def emit_dot_generated(ctx: KernelContext, node: Node, plan: GemmPlan) -> None:
    """The plan's gemm calls as the generated kernel (`gemm_kernel`): the shared lhs packed once,
    then per point of the loop nest the rhs packed and the register tiles computed, in the tile
    the host and shape choose (`gemm_kernel.choose_tile`)."""
    b = ctx.b
    lhs, rhs = node.inputs
    out = node.out
    tile = gemm_kernel.choose_tile(plan.m, plan.n)
    ap = _malloc(b, 4 * gemm_kernel.lhs_panel_elements(plan.m, plan.k, tile))
    bp = _malloc(b, 4 * plan.k * plan.n)
    gemm_kernel.pack_lhs(b, ctx.buffers[lhs], ap, plan.m, plan.k, plan.trans_a, plan.lda, tile)
    with u.loop_nest(b, tuple(e for e, *_ in plan.loops), "gemm", unroll_outer=False) as ivs:
        def at(v, which):
            off = u.i64(0)
            for iv, loop in zip(ivs, plan.loops):
                off = u.iadd(b, off, u.imul(b, iv, loop[which] * 4))
            return b.gep(ctx.buffers[v], [off], inbounds=True, source_etype=u.I8)
        gemm_kernel.pack_rhs(b, at(rhs, 2), bp, plan.k, plan.n, plan.ldb, tile)
        gemm_kernel.emit_gemm_tiles(b, ap, bp, at(out, 3), plan.m, plan.n, plan.k, plan.ldc, tile)
    _free(b, bp)
    _free(b, ap)


def emit_dot_inplace(ctx: KernelContext, node: Node, plan: GemmPlan) -> None:
    """The plan's single gemm call as a call of the generic in-place kernel
    (`gemm_kernel.emit_generic_inplace`, by symbol: `gemm_library`) over the operands where they
    are, in `inplace_tile`; B's column panel is copied to the kernel's stack when m >=
    `COPY_PANEL_MIN_ROWS` or k spans several blocks (`GemmPlan.copies_b_panel`; a transposed B's
    always is)."""
    from . import gemm_library

    b = ctx.b
    lhs, rhs = node.inputs
    tile = inplace_tile()
    name = gemm_kernel.generic_symbol(tile, plan.trans_b)
    gemm_library.prefetch(name)  # made once per process, beside this module's compile; linked by name
    fn = b.module.globals.get(name) or ir.Function(b.module, gemm_kernel.generic_function_type(), name)
    a_rs, a_cs = (1, plan.lda) if plan.trans_a else (plan.lda, 1)
    flags = gemm_kernel.GENERIC_COPY_PANEL if plan.copies_b_panel() else 0
    args = {"m": plan.m, "n": plan.n, "k": plan.k, "a": ctx.buffers[lhs], "a_rs": a_rs, "a_cs": a_cs,
            "b": ctx.buffers[rhs], "ldb": plan.ldb, "c": ctx.buffers[node.out], "ldc": plan.ldc, "flags": flags}
    b.call(fn, [u.i64(v) if isinstance(v, int) else v for v in (args[a] for a in gemm_kernel.GENERIC_ARGS)])


def _malloc(b: ir.IRBuilder, nbytes: int) -> ir.Value:
    """A heap block of `nbytes` (libc malloc; freed with `_free` before the kernel returns)."""
    fn = b.module.globals.get("malloc") or ir.Function(b.module, ir.FunctionType(u.PTR, [u.I64]), "malloc")
    return b.call(fn, [u.i64(max(nbytes, 1))])


def _free(b: ir.IRBuilder, p: ir.Value) -> None:
    fn = b.module.globals.get("free") or ir.Function(b.module, ir.FunctionType(u.VOID, [u.PTR]), "free")
    b.call(fn, [p])


# --- small products: register tiles with the loop nest's bits ------------------------------------
PANEL_STACK_BYTES = 1 << 15  # a strided B's panel (`gemm_kernel.small_panel_elements`) on the stack up to this


@record(frozen=True)
class TilePlan:
    """A dot_general below the BLAS range as a loop nest of small products run as register tiles
    (`gemm_kernel.emit_small_gemm`); strides in elements. `loops` = (extent, lhs stride, rhs stride,
    out stride) per loop axis; per point C[i, j] = sum_kk A[i, kk] B[kk, j] with A's (i, kk) at
    i*a_rs + kk*a_cs, B's (kk, j) at kk*b_rs + j*b_cs and C's (i, j) at i*ldc + j."""

    loops: tuple[tuple[int, int, int, int], ...]
    m: int
    n: int
    k: int
    a_rs: int
    a_cs: int
    b_rs: int
    b_cs: int
    ldc: int


def tile_plan(node: Node, plan_blas: bool = True) -> TilePlan | None:
    """How `node` runs as register tiles, or None (it stays on the loop nest, or on BLAS).

    The tiles compute every element as one in-order chain of fma over k from 0 (float32 and
    float64). They are taken only where the loop nest computes that same chain -- its axpy form,
    and its dot form whose k loops are unrolled away (`jit.reassociation_is_per_element`) -- so
    the results are bit-identical and the choice may depend on any extent (vmap's chunks need none
    of the care BLAS needs). The loop nest's other dot form (the rhs contracted on its innermost
    axis, a k loop vectorised with reassociation: other bits) is kept: as tiles it would need its
    B transposed into a panel, measured 1.4-3.2x slower for one to four rows (x @ W^T of a single
    example), and a choice by row count would make the bits depend on vmap's chunk size.

    Axes are grouped as for BLAS: leading free axes that do not form one strided dimension with
    the rest are looped over, and so are the batch axes.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((32, 8, 64), float32))
    >>> w = b.add_input(TensorType((8, 64, 10), float32))
    >>> g = b.build([b.dot_general(x, w, batch=((1,), (0,)), contract=((2,), (1,)))])
    >>> tile_plan(g.nodes[0])  # 8 products 32x64 @ 64x10, the lhs rows 512 apart
    TilePlan(loops=((8, 64, 640, 320),), m=32, n=10, k=64, a_rs=512, a_cs=1, b_rs=10, b_cs=1, ldc=10)
    """
    lhs, rhs = node.inputs
    out = node.out
    if out.dtype not in (dt.float32, dt.float64) or lhs.dtype is not out.dtype or rhs.dtype is not out.dtype:
        return None
    if plan_blas and blas_plan(node) is not None:
        return None
    (lc, rc), (lb, rb) = node.attrs["contract"], node.attrs["batch"]
    lf, rf = free_axes(lhs.ndim, lc, lb), free_axes(rhs.ndim, rc, rb)
    kshape = tuple(lhs.shape[a] for a in lc)
    if (not rf or (rhs.ndim - 1) in rc) and jit.reassociation_is_per_element(kshape):
        return None  # the loop nest's reassociated dot products, kept (see above)
    if min(out.type.size, prod(kshape)) == 0:
        return None
    ls, rs, os_, loops, lf, rf, lf_out, rf_out = _peel_free_axes(lhs, rhs, out, lb, rb, lf, rf, True)
    groups = (_group(lhs.shape, ls, lf), _group(lhs.shape, ls, lc), _group(rhs.shape, rs, rc),
              _group(rhs.shape, rs, rf), _group(out.shape, os_, lf_out), _group(out.shape, os_, rf_out))
    if None in groups:
        return None  # contracted axes that are not one strided dimension
    (m, a_rs), (k, a_cs), (_, b_rs), (n, b_cs), (_, ldc), (_, c_cs) = groups
    assert n == 1 or c_cs == 1, "the rhs free axes of a row-major output are its innermost"
    return TilePlan(tuple(loops), m, n, k, a_rs, a_cs, b_rs, b_cs if n > 1 else 1, ldc)


def emit_dot_tiles(ctx: KernelContext, node: Node, plan: TilePlan) -> None:
    """One `gemm_kernel.emit_small_gemm` per point of the plan's loop nest, with a scratch panel for
    a B whose columns are strided (on the stack, or from malloc when large). A 5x3 @ 3x7 product
    compiles to it:

    >>> import numpy as np
    >>> from tensorplay import codegen
    >>> from tensorplay.ir import GraphBuilder, TensorType, float64
    >>> b = GraphBuilder(); x = b.add_input(TensorType((5, 3), float64))
    >>> w = b.add_input(TensorType((3, 7), float64))
    >>> exe = codegen.compile_graph(b.build([b.dot_general(x, w, batch=((), ()), contract=((1,), (0,)))]))
    >>> xs, ws = np.arange(15.0).reshape(5, 3), np.arange(21.0).reshape(3, 7)
    >>> bool((exe(xs, ws)[0] == xs @ ws).all())
    True
    """
    b = ctx.b
    lhs, rhs = node.inputs
    out = node.out
    ft = u.reg_type(out.dtype)
    es = out.dtype.itemsize
    panel = heap = None
    if plan.n > 1 and plan.b_cs != 1:
        size = gemm_kernel.small_panel_elements(plan.m, plan.n, plan.k, ft)
        if size * es <= PANEL_STACK_BYTES:
            with b.goto_block(b.function.entry_basic_block):
                if b.function.entry_basic_block.instructions:
                    b.position_before(b.function.entry_basic_block.instructions[0])
                panel = b.alloca(ft, size=u.i64(size), name="panel")
                panel.align = 32
        else:
            panel = heap = _malloc(b, size * es)
    with contextlib.ExitStack() as stack:
        ivs = [stack.enter_context(u.for_range(b, e, f"tl{i}", unroll=False)) for i, (e, *_) in enumerate(plan.loops)]

        def at(v, which):
            off = u.i64(0)
            for iv, loop in zip(ivs, plan.loops):
                off = u.iadd(b, off, u.imul(b, iv, loop[which] * es))
            return b.gep(ctx.buffers[v], [off], inbounds=True, source_etype=u.I8)
        gemm_kernel.emit_small_gemm(b, at(lhs, 1), at(rhs, 2), at(out, 3), plan.m, plan.n, plan.k,
                                    (plan.a_rs, plan.a_cs), (plan.b_rs, plan.b_cs), plan.ldc, ft, panel)
    if heap is not None:
        _free(b, heap)


def emit_dot(ctx: KernelContext, node: Node) -> None:
    plan = blas_plan(node)
    if plan is not None:
        emit_dot_blas(ctx, node, plan)
        return
    tiles = tile_plan(node, plan_blas=False)
    if tiles is not None and not _streams(ctx, node):
        emit_dot_tiles(ctx, node, tiles)
    else:
        emit_dot_loops(ctx, node)

