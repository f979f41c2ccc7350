"""A generated matrix-vector product in its axpy form, for the cblas gemv calls `dot` would make
with a transposed row-major matrix (a row vector times a matrix: ``t @ W``, linearize's `jvp_fn`
of an MLP, vmap chunks of size 1):

    y[j] = sum_i x[i] M[i, j]     (M row-major `rows` x `cols`, leading dimension `ld`)

A block of up to `block_vectors` vectors of y (16 zmm on an AVX-512 host: 256 floats) is held in
registers over the whole i loop; each step broadcasts x[i] and fuses it with the block's part of
row i, so M is read once, row by row, in order (the hardware prefetcher's best case; the data
come from L2 for the 256 KB of a 256 x 256 float32 matrix, and the kernel runs at L2 bandwidth).
OpenBLAS's sgemv reads the same bytes but costs ~0.5 us more per call at 256 x 256 (its
interface, thread checks and edge handling); this kernel is also called with no stack of
arguments.

Rounding: every y[j] is one chain of `llvm.fma` over i in order from 0, the bits of the axpy-form
loop nest (`dot.emit_dot_loops`) and of the register tiles (`gemm_kernel`), whatever the block
or the host's vector width: unlike OpenBLAS, position independent.
"""
from __future__ import annotations

from llvmlite import ir

from . import gemm_kernel
from . import irutil as u


def lanes(ft: ir.Type, avx512: bool | None = None) -> int:
    """Lanes of the host's widest float vector of type `ft` (64 bytes with AVX-512F, else 32).

    >>> lanes(u.F32, avx512=True), lanes(u.F64, avx512=False)
    (16, 4)
    """
    avx512 = gemm_kernel.host_avx512() if avx512 is None else avx512
    return (64 if avx512 else 32) // u.type_bytes(ft)


def block_vectors(avx512: bool | None = None) -> int:
    """Accumulator vectors per column block: 16 of the 32 zmm registers, or 12 of the 16 ymm
    (the rest hold the broadcast; the matrix is read as memory operands of the fma).

    >>> block_vectors(avx512=True), block_vectors(avx512=False)
    (16, 12)
    """
    avx512 = gemm_kernel.host_avx512() if avx512 is None else avx512
    return 16 if avx512 else 12


# From this many matrix elements (a 128 x 256 matrix; the default BLAS range starts there for
# m = 1, `dot.BLAS_MIN_FLOPS`): measured at 256 x 256, where cblas's fixed cost is ~8 % of the call.
MIN_ELEMENTS = 1 << 15


def applies(ft: ir.Type, trans: bool, rows: int, cols: int, incy: int, host_fma: bool | None = None) -> bool:
    """Whether a gemv call (`dot.GemvCall`) runs as this kernel: float32 or float64 on a host with
    FMA (without it `llvm.fma` is a library call per lane), the axpy form (`trans`: y = M^T x with
    M row-major), y contiguous, `cols` a whole number of the host's vectors and at least
    `MIN_ELEMENTS` matrix elements. Shapes, dtype and host only, never timing; the other calls
    stay on cblas gemv.

    >>> applies(u.F32, True, 256, 256, 1, host_fma=True), applies(u.F32, False, 256, 256, 1, host_fma=True)
    (True, False)
    >>> applies(u.F32, True, 256, 250, 1, host_fma=True), applies(u.F32, True, 256, 256, 1, host_fma=False)
    (False, False)
    """
    host_fma = gemm_kernel.host_supported() if host_fma is None else host_fma
    return (host_fma and ft in (u.F32, u.F64) and trans and incy == 1 and cols > 0
            and cols % lanes(ft) == 0 and rows * cols >= MIN_ELEMENTS)


def emit_gemv(b: ir.IRBuilder, m: ir.Value, ld: int, x: ir.Value, incx: int, y: ir.Value,
              rows: int, cols: int, ft: ir.Type) -> None:
    """y[j] = sum_i x[i * incx] * m[i * ld + j] for j < cols (y contiguous), i < rows in order
    (`applies` holds). `m`, `x`, `y` are pointers to elements of type `ft`."""
    n_lanes = lanes(ft)
    vt = ir.VectorType(ft, n_lanes)
    es = u.type_bytes(ft)
    vectors = cols // n_lanes
    per = block_vectors()
    for first in range(0, vectors, per):
        count = min(per, vectors - first)
        col0 = first * n_lanes

        def step(i, accs, col0=col0, count=count):
            xi = b.load(b.gep(x, [u.imul(b, i, incx)], inbounds=True, source_etype=ft), typ=ft)
            xv = gemm_kernel.splat(b, xi, vt)
            row = u.iadd(b, u.imul(b, i, ld), u.i64(col0))
            return [gemm_kernel.vector_fma(b, xv, b.load(b.gep(m, [u.iadd(b, row, u.i64(v * n_lanes))], inbounds=True,
                                             source_etype=ft), typ=vt, align=es), acc)
                    for v, acc in enumerate(accs)]

        accs = gemm_kernel.accumulating_loop(b, "gemv", rows, vt, count, step)
        for v, acc in enumerate(accs):
            b.store(acc, b.gep(y, [u.i64(col0 + v * n_lanes)], inbounds=True, source_etype=ft), align=es)
