"""A register-blocked float32 gemm generated in LLVM vector IR, for a loop of gemm calls that share
their lhs (vmap over stacked weights with a shared batch: the ensemble's first layer).

    C[i, j] = sum_k A[i, k] B[k, j]     (A shared by every call of the plan's loop nest)

- A is packed once per kernel call into MR-row panels (`Ap[i // MR][k][i % MR]`, rows past m are
  zeros), not once per gemm as OpenBLAS does.
- Each call packs its B into NR-column panels (`Bp[j // NR][k][j % NR]`) with one streaming pass;
  reading B in place (rows 512 bytes apart for n = 128) put a panel's k rows into 8 of the 64 L1
  sets, and the micro-kernel ran no faster than OpenBLAS.
- The micro-kernel keeps an MR x NR tile of C in MR * NV vector registers over the whole k loop
  (`Tile`; `choose_tile` picks it from the host's features and the shape at compile time):
  6 x 16 floats in `<8 x float>` (12 accumulators, 2 B vectors and 1 broadcast of the 16 ymm
  registers), or on an AVX-512 host 8 x 32 floats in `<16 x float>` (16 of the 32 zmm).

Rounding: every element is one chain of `llvm.fma` over k in order, starting from 0: the same
bits as the axpy-form loop nest (`dot.emit_dot_loops`) and the same whatever m, n, the tile (so
the host's vector width) or the call's position in the loop (position independent, unlike
OpenBLAS). `llvm.fma` is one instruction
only where the host has FMA, so `GemmPlan.generated_kernel` takes this path only there.

Measured (ctypes, same process, 80 interleaved samples, 2-core Zen 3, one thread; 2026-12-02,
tools/bench/README.md "Codegen runtime round 6 (crun)"): 10 gemms 64x784x128 with a shared A,
OpenBLAS sgemm 2.73 ms median, this kernel 2.23 ms (0.82x); a single 64x784x128 call 1.02x and
128^3 1.05x of OpenBLAS (no shared A to pack once: not taken).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from . import irutil as u
from . import jit

MR = 6  # rows of the register tile
NV = 2  # <8 x float> vectors per tile row
LANES = 8
NR = NV * LANES  # columns of the register tile

_F32 = u.F32
_VEC = ir.VectorType(_F32, LANES)


@dataclass(frozen=True)
class Tile:
    """A register tile of C: `mr` rows of `nv` vectors of `lanes` floats (`nr` = nv * lanes columns).

    >>> AVX2_TILE.nr, AVX512_TILE.nr, AVX512_TILE.mr * AVX512_TILE.nv
    (16, 32, 16)
    """
    mr: int
    nv: int
    lanes: int

    @property
    def nr(self) -> int:
        return self.nv * self.lanes

    @property
    def vec(self) -> ir.VectorType:
        return ir.VectorType(_F32, self.lanes)


# 6 x 16 floats in 256-bit registers: 12 accumulators, 2 B vectors and 1 broadcast of 16 ymm.
AVX2_TILE = Tile(MR, NV, LANES)
# 8 x 32 floats in 512-bit registers (16 accumulators of 32 zmm): per k step 2 B loads and 8
# broadcasts feed 16 FMAs of 16 lanes, against 8 loads per 12 FMAs of 8 lanes for AVX2_TILE.
# Zen 4, 10 x 64x784 @ 784x128 with the B pack (ctypes, same process, 2026-12-03): 1.36 ms
# against 1.50 ms; 6 x 32 and 16 x 16 floats ran at 1.45 / 1.36, 12 x 32 at 1.55.
AVX512_TILE = Tile(8, 2, 16)


def host_avx512() -> bool:
    """Whether the host has AVX-512F (512-bit vectors in registers; without it LLVM splits a
    `<16 x float>` into two halves and the wide tile has no point).

    >>> isinstance(host_avx512(), bool)
    True
    """
    return "+avx512f" in _host_features()


def choose_tile(m: int, n: int, avx512: bool | None = None) -> Tile:
    """The register tile for an m x n product that `GemmPlan.generated_kernel` takes (n a multiple
    of AVX2_TILE.nr, m >= 2 * AVX2_TILE.mr): the 512-bit tile on an AVX-512 host when n is a
    multiple of its 32 columns and m fills two of its row panels, else the 256-bit one. Every
    element is the same fma chain whatever the tile, so the choice cannot change a bit.

    >>> choose_tile(64, 128, avx512=True), choose_tile(64, 128, avx512=False)
    (Tile(mr=8, nv=2, lanes=16), Tile(mr=6, nv=2, lanes=8))
    >>> choose_tile(64, 48, avx512=True) == AVX2_TILE
    True
    """
    avx512 = host_avx512() if avx512 is None else avx512
    if avx512 and n % AVX512_TILE.nr == 0 and m >= 2 * AVX512_TILE.mr:
        return AVX512_TILE
    return AVX2_TILE


def _at(b: ir.IRBuilder, base: ir.Value, index: ir.Value) -> ir.Value:
    return b.gep(base, [index], inbounds=True, source_etype=_F32)


def splat(b: ir.IRBuilder, x: ir.Value, vt: ir.VectorType = _VEC) -> ir.Value:
    """The scalar `x` in every lane of a `vt`."""
    undef = ir.Constant(vt, ir.Undefined)
    one = b.insert_element(undef, x, u.i64(0))
    return b.shuffle_vector(one, undef, ir.Constant(ir.VectorType(ir.IntType(32), vt.count), None))  # zeroinitializer


def pack_lhs(b: ir.IRBuilder, a: ir.Value, ap: ir.Value, m: int, k: int, trans: bool, lda: int,
             tile: Tile = AVX2_TILE) -> None:
    """Ap[i // MR][kk][i % MR] = A[i, kk] (A row-major with leading dimension lda, or its
    transpose; MR = tile.mr); the rows of the last panel past m are zeros."""
    MR = tile.mr
    with u.for_range(b, m, "pa.i") as i:
        panel = u.iadd(b, u.imul(b, b.udiv(i, u.i64(MR)), MR * k), b.urem(i, u.i64(MR)))
        with u.for_range(b, k, "pa.k") as kk:
            src = u.iadd(b, u.imul(b, i, lda), kk) if not trans else u.iadd(b, u.imul(b, kk, lda), i)
            b.store(b.load(_at(b, a, src), typ=_F32), _at(b, ap, u.iadd(b, panel, u.imul(b, kk, MR))))
    padded = -(-m // MR) * MR
    if padded > m:
        with u.for_range(b, padded, "pa.z", start=m) as i:
            panel = u.iadd(b, u.imul(b, b.udiv(i, u.i64(MR)), MR * k), b.urem(i, u.i64(MR)))
            with u.for_range(b, k, "pa.zk") as kk:
                b.store(u.const(_F32, 0.0), _at(b, ap, u.iadd(b, panel, u.imul(b, kk, MR))))


def pack_rhs(b: ir.IRBuilder, bm: ir.Value, bp: ir.Value, k: int, n: int, ldb: int,
             tile: Tile = AVX2_TILE) -> None:
    """Bp[j // NR][kk][j % NR] = B[kk, j] (B row-major with leading dimension ldb, n a multiple of
    NR = tile.nr), read a row at a time: one streaming pass."""
    NV, LANES, NR, vt = tile.nv, tile.lanes, tile.nr, tile.vec
    with u.for_range(b, k, "pb.k") as kk:
        with u.for_range(b, n // LANES, "pb.v") as v:
            src = u.iadd(b, u.imul(b, kk, ldb), u.imul(b, v, LANES))
            x = b.load(_at(b, bm, src), typ=vt, align=4)
            dst = u.iadd(b, u.iadd(b, u.imul(b, b.udiv(v, u.i64(NV)), k * NR), u.imul(b, kk, NR)),
                         u.imul(b, b.urem(v, u.i64(NV)), LANES))
            b.store(x, _at(b, bp, dst), align=4)


def accumulating_loop(b: ir.IRBuilder, prefix: str, k: int, vt: ir.VectorType, count: int, step) -> list:
    """`count` vector accumulators of type `vt`, zero at first, carried over kk = 0 .. k-1 by
    ``step(kk, accs) -> new accs`` (emitted as the loop body): their phis, valid after the loop,
    where the builder is left."""
    zero = ir.Constant(vt, [0.0] * vt.count)
    pre = b.block
    head, body, done = (b.append_basic_block(f"{prefix}.{s}") for s in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    kk = b.phi(u.I64, name=f"{prefix}.k")
    kk.add_incoming(u.i64(0), pre)
    accs = [b.phi(vt, name=f"{prefix}.acc{t}") for t in range(count)]
    for acc in accs:
        acc.add_incoming(zero, pre)
    b.cbranch(b.icmp_unsigned("<", kk, u.i64(k)), body, done)
    b.position_at_end(body)
    new = step(kk, accs)
    kk.add_incoming(b.add(kk, u.i64(1), flags=("nuw", "nsw")), b.block)
    for acc, x in zip(accs, new):
        acc.add_incoming(x, b.block)
    b.branch(head)
    b.position_at_end(done)
    return accs


def _micro(b: ir.IRBuilder, ap: ir.Value, bp: ir.Value, c: ir.Value, mb: ir.Value, nb: ir.Value,
           m: int, k: int, ldc: int, tile: Tile = AVX2_TILE) -> None:
    """C[mb*MR : mb*MR+MR, nb*NR : nb*NR+NR] = the MR x NR tile over the whole k (rows < m stored)."""
    MR, NV, LANES, NR, vt = tile.mr, tile.nv, tile.lanes, tile.nr, tile.vec
    a_panel = _at(b, ap, u.imul(b, mb, MR * k))
    b_panel = _at(b, bp, u.imul(b, nb, NR * k))

    def step(kk, accs):
        row_b = u.imul(b, kk, NR)
        bv = [b.load(_at(b, b_panel, u.iadd(b, row_b, u.i64(v * LANES))), typ=vt, align=4) for v in range(NV)]
        row_a = u.imul(b, kk, MR)
        new = []
        for r in range(MR):
            a = splat(b, b.load(_at(b, a_panel, u.iadd(b, row_a, u.i64(r))), typ=_F32), vt)
            new += [vector_fma(b, a, bv[v], accs[r * NV + v]) for v in range(NV)]
        return new

    accs = accumulating_loop(b, "mk", k, vt, MR * NV, step)
    col = u.imul(b, nb, NR)
    for r in range(MR):
        row = u.iadd(b, u.imul(b, mb, MR), u.i64(r))

        def store_row(r=r, row=row):
            for v in range(NV):
                off = u.iadd(b, u.imul(b, row, ldc), u.iadd(b, col, u.i64(v * LANES)))
                b.store(accs[r * NV + v], _at(b, c, off), align=4)
        if m % MR == 0:
            store_row()
        else:
            with u.if_then(b, b.icmp_unsigned("<", row, u.i64(m))):
                store_row()


def emit_gemm_tiles(b: ir.IRBuilder, ap: ir.Value, bp: ir.Value, c: ir.Value, m: int, n: int, k: int,
                    ldc: int, tile: Tile = AVX2_TILE) -> None:
    """C (m x n, leading dimension ldc) = packed A @ packed B, one register tile at a time (A and B
    packed with the same `tile`); each NR-column panel of B (k * NR * 4 bytes) stays in L1/L2 while
    every row panel of A passes over it.

    A whole product, packing included (what `dot.emit_dot_generated` emits per gemm call):

    >>> import ctypes, numpy as np
    >>> from llvmlite import ir
    >>> mod = ir.Module("g"); mod.triple, mod.data_layout = jit.host_triple_and_layout()
    >>> fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [u.PTR] * 5), "g")
    >>> a, b_, c, ap, bp = fn.args
    >>> bld = ir.IRBuilder(fn.append_basic_block())
    >>> pack_lhs(bld, a, ap, 13, 3, False, 3); pack_rhs(bld, b_, bp, 3, 32, 32)
    >>> emit_gemm_tiles(bld, ap, bp, c, 13, 32, 3, 32); _ = bld.ret_void()
    >>> code = jit.compile_ir(str(mod), ["g"])  # keep it: its machine code lives as long as it does
    >>> run = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 5)(code.addresses["g"])
    >>> x = np.arange(39, dtype=np.float32).reshape(13, 3); w = np.ones((3, 32), np.float32)
    >>> out = np.empty((13, 32), np.float32)
    >>> bufs = [np.empty(lhs_panel_elements(13, 3), np.float32), np.empty(3 * 32, np.float32)]
    >>> run(x.ctypes.data, w.ctypes.data, out.ctypes.data, *(q.ctypes.data for q in bufs))
    >>> bool((out == x.sum(1, keepdims=True)).all())
    True
    """
    with u.for_range(b, n // tile.nr, "mk.nb", unroll=False) as nb:
        with u.for_range(b, -(-m // tile.mr), "mk.mb", unroll=False) as mb:
            _micro(b, ap, bp, c, mb, nb, m, k, ldc, tile)


# --- one product read in place (no packing): single gemm calls on AVX-512 hosts ----------------
# (`emit_gemm_inplace` is the per-shape form: m, n, k and the strides are constants. Graph code
# calls the shape-generic function below instead, `emit_generic_inplace`; this one is the reference
# it is tested against bit for bit, tests/codegen/test_generic_gemm.py.)
# A product of its own (the MLP's x @ W1, dW1 = x^T @ dh, ...) has nothing to pack once: packing
# both operands per call cost as much as it saved (within +-5 % of OpenBLAS). Read in place, with
# the column panel of B outer and the row tiles of A inner, the 8 x 32 tile beat OpenBLAS on the
# MLP's four untransposed shapes by 10-20 % (Zen 4, one thread, 2026-12-03; tools/bench/README.md
# "Round 11"): A's rows are broadcast from where they are (any strides: A^T costs nothing), each
# B panel (k rows of 128 bytes) stays in L2 while the row tiles pass over it, and C is written
# once (no beta pass, no copy routines). The bits are those of the packed kernel and the axpy loop
# nest: one in-order fma chain over k per element, whatever the tile.


def _strided_tile(b: ir.IRBuilder, a: ir.Value, a_strides: tuple[int, int], bm: ir.Value, ldb: int,
                  c: ir.Value, ldc: int, k: int, tile: Tile) -> None:
    """C[0:mr, 0:nr] = A[0:mr, :] @ B[:, 0:nr] held in tile.mr x tile.nv accumulators over k:
    A's (r, kk) at a + r*a_strides[0] + kk*a_strides[1], B's row kk at bm + kk*ldb (unit column
    stride), C's row r at c + r*ldc."""
    MR, NV, LANES, vt = tile.mr, tile.nv, tile.lanes, tile.vec
    a_rs, a_cs = a_strides
    rows = [_at(b, a, u.i64(r * a_rs)) for r in range(MR)]

    def step(kk, accs):
        row_b = _at(b, bm, u.imul(b, kk, ldb))
        bv = [b.load(_at(b, row_b, u.i64(v * LANES)), typ=vt, align=4) for v in range(NV)]
        col_a = u.imul(b, kk, a_cs)
        new = []
        for r in range(MR):
            x = splat(b, b.load(_at(b, rows[r], col_a), typ=_F32), vt)
            new += [vector_fma(b, x, bv[v], accs[r * NV + v]) for v in range(NV)]
        return new

    accs = accumulating_loop(b, "ip", k, vt, MR * NV, step)
    for r in range(MR):
        for v in range(NV):
            b.store(accs[r * NV + v], _at(b, c, u.i64(r * ldc + v * LANES)), align=4)


def _transpose_block(b: ir.IRBuilder, rows: list[ir.Value]) -> list[ir.Value]:
    """The transpose of the square block whose rows are the vectors `rows` (as many as lanes, a
    power of two): one stage of two-input shuffles per index bit, each swapping that bit between
    row and column."""
    n = len(rows)
    rows = list(rows)
    h = n // 2
    while h:
        lo = ir.Constant(ir.VectorType(u.I32, n), [c if not c & h else n + c - h for c in range(n)])
        hi = ir.Constant(ir.VectorType(u.I32, n), [n + c if c & h else c + h for c in range(n)])
        for r in range(n):
            if not r & h:
                x, y = rows[r], rows[r + h]
                rows[r], rows[r + h] = b.shuffle_vector(x, y, lo), b.shuffle_vector(x, y, hi)
        h //= 2
    return rows


def pack_transposed_panel(b: ir.IRBuilder, bt: ir.Value, ldt: int, panel: ir.Value, k: int, width: int,
                          lanes: int) -> None:
    """panel[kk * width + j] = Bt[j, kk] for j < width (a multiple of `lanes`), kk < k: the column
    panel of B = Bt^T, Bt row-major with rows ldt apart; lanes x lanes blocks transposed in
    registers, the last k % lanes columns one at a time."""
    vt = ir.VectorType(_F32, lanes)
    for jb in range(width // lanes):
        if k // lanes:
            with u.for_range(b, k // lanes, "tp.kb", unroll=False) as kb:
                k0 = u.imul(b, kb, lanes)
                rows = [b.load(_at(b, bt, u.iadd(b, u.i64((jb * lanes + r) * ldt), k0)), typ=vt, align=4)
                        for r in range(lanes)]
                for t, x in enumerate(_transpose_block(b, rows)):
                    at = u.iadd(b, u.imul(b, u.iadd(b, k0, u.i64(t)), width), u.i64(jb * lanes))
                    # (through a cast: an alloca'd panel is a typed float pointer in llvmlite)
                    b.store(x, b.bitcast(_at(b, panel, at), vt.as_pointer()), align=4)
        for kk in range(k // lanes * lanes, k):
            for j in range(jb * lanes, jb * lanes + lanes):
                x = b.load(_at(b, bt, u.i64(j * ldt + kk)), typ=_F32)
                b.store(x, _at(b, panel, u.i64(kk * width + j)))


def inplace_panel_elements(k: int, tile: Tile = None) -> int:
    """Floats of the column panel `emit_gemm_inplace` copies a transposed B into (k rows of the
    widest tile's columns unless `tile` is given).

    >>> inplace_panel_elements(256)
    8192
    """
    return k * (tile or AVX512_TILE).nr


def emit_gemm_inplace(b: ir.IRBuilder, a: ir.Value, a_strides: tuple[int, int], bm: ir.Value, ldb: int,
                      c: ir.Value, ldc: int, m: int, n: int, k: int, tile: Tile, trans_b: bool = False,
                      panel: ir.Value | None = None) -> None:
    """C (m x n, rows ldc apart) = A @ B with both operands read where they are: A's (i, kk) at
    a + i*a_strides[0] + kk*a_strides[1] (row-major or transposed), B row-major (k x n, rows ldb
    apart, unit column stride); m, k >= 1, n a multiple of tile.lanes. Column panels of tile.nr
    floats outer (a last narrower one of whole vectors), row tiles of tile.mr inner (a last one
    of m % mr rows). With a `panel` (`inplace_panel_elements`), each column panel of B is first
    copied there, contiguous: B's rows 1 KB apart (n = 256) put a panel's k rows in 8 of L1's 64
    sets. A transposed B (`trans_b`: B^T stored row-major, n x k, rows ldb apart) needs the panel:
    it is copied transposed in registers (`pack_transposed_panel`). The panel holds exact copies,
    so the bits do not depend on it.

    >>> import ctypes, numpy as np
    >>> from llvmlite import ir
    >>> mod = ir.Module("ip"); mod.triple, mod.data_layout = jit.host_triple_and_layout()
    >>> fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [u.PTR] * 3), "ip")
    >>> bld = ir.IRBuilder(fn.append_basic_block())
    >>> emit_gemm_inplace(bld, fn.args[0], (1, 13), fn.args[1], 48, fn.args[2], 48, 13, 48, 5, AVX2_TILE)
    >>> _ = bld.ret_void()
    >>> code = jit.compile_ir(str(mod), ["ip"])  # keep it: its machine code lives as long as it does
    >>> run = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3)(code.addresses["ip"])
    >>> x = np.arange(65, dtype=np.float32).reshape(5, 13); w = np.ones((5, 48), np.float32)
    >>> out = np.empty((13, 48), np.float32)
    >>> run(x.ctypes.data, w.ctypes.data, out.ctypes.data)  # x.T @ w, x read transposed
    >>> bool((out == x.T @ w).all())
    True
    """
    if n % tile.lanes:
        raise ValueError(f"emit_gemm_inplace: n = {n} is not a multiple of {tile.lanes} lanes")
    if trans_b and panel is None:
        raise ValueError("emit_gemm_inplace: a transposed B needs a panel")
    a_rs = a_strides[0]

    def column_block(j0: ir.Value, nv: int) -> None:
        t = Tile(tile.mr, nv, tile.lanes)
        cj = _at(b, c, j0)
        if trans_b:
            pack_transposed_panel(b, _at(b, bm, u.imul(b, j0, ldb)), ldb, panel, k, t.nr, t.lanes)
            bj, ldp = panel, t.nr
        elif panel is not None:  # B's rows ldb apart, copied contiguous (L1 set conflicts)
            src = _at(b, bm, j0)
            with u.for_range(b, k, "ip.pk") as kk:
                for v in range(nv):
                    x = b.load(_at(b, src, u.iadd(b, u.imul(b, kk, ldb), u.i64(v * t.lanes))), typ=t.vec, align=4)
                    at = u.iadd(b, u.imul(b, kk, t.nr), u.i64(v * t.lanes))
                    b.store(x, b.bitcast(_at(b, panel, at), t.vec.as_pointer()), align=4)
            bj, ldp = panel, t.nr
        else:
            bj, ldp = _at(b, bm, j0), ldb
        if m // t.mr:
            with u.for_range(b, m // t.mr, "ip.mb", unroll=False) as mb:
                i0 = u.imul(b, mb, t.mr)
                _strided_tile(b, _at(b, a, u.imul(b, i0, a_rs)), a_strides, bj, ldp,
                              _at(b, cj, u.imul(b, i0, ldc)), ldc, k, t)
        if m % t.mr:
            i0 = m // t.mr * t.mr
            _strided_tile(b, _at(b, a, u.i64(i0 * a_rs)), a_strides, bj, ldp, _at(b, cj, u.i64(i0 * ldc)), ldc, k,
                          Tile(m % t.mr, nv, tile.lanes))

    if n // tile.nr:
        with u.for_range(b, n // tile.nr, "ip.nb", unroll=False) as nb:
            column_block(u.imul(b, nb, tile.nr), tile.nv)
    if n % tile.nr:
        column_block(u.i64(n // tile.nr * tile.nr), n % tile.nr // tile.lanes)


def host_supported() -> bool:
    """Whether the host's vector unit runs the kernel as intended: 256-bit vectors and FMA (without
    FMA, `llvm.fma` is a library call per lane).

    >>> isinstance(host_supported(), bool)
    True
    """
    return {"+avx", "+fma"} <= _host_features()


def _host_features() -> set[str]:
    return set(jit.engine().features.split(","))


def lhs_panel_elements(m: int, k: int, tile: Tile = AVX2_TILE) -> int:
    """Floats of packed A: m rounded up to whole tile.mr-row panels, times k.

    >>> lhs_panel_elements(64, 784) == 66 * 784, lhs_panel_elements(64, 784, AVX512_TILE) == 64 * 784
    (True, True)
    """
    return -(-m // tile.mr) * tile.mr * k


# --- small products read in place (the loop nest's bits, register tiles) -------------------------
# A product below BLAS_MIN_FLOPS per call (vmap's batched layers: 8 x (32x64 @ 64x10)) ran as the
# axpy loop nest, which loads and stores each output element at every k (a store-to-load chain per
# element): ~2 GFLOP/s. Here every element is the same chain -- acc = 0, then acc = fma(a, b, acc)
# for k in order -- but held in a register over the whole k loop, with MR x NV vector accumulators
# per tile; A's elements are broadcast from their place (any strides) and B's rows loaded as vectors
# (unit column stride; packed first when it has none). The bits are the loop nest's, whatever the
# tile, m, n or the call's position, so the choice between the two needs no care (`dot.tile_plan`).
SMALL_MR = 6  # rows of a register tile (of 2 vectors: 12 accumulators + 2 B + 1 broadcast register)


def vector_lanes(ft: ir.Type) -> int:
    """Lanes of the 256-bit vector of float type `ft` (8 floats, 4 doubles).

    >>> vector_lanes(u.F32), vector_lanes(u.F64)
    (8, 4)
    """
    return 32 // u.type_bytes(ft)


def _vname(vt: ir.VectorType) -> str:
    return f"v{vt.count}{vt.element.intrinsic_name}"


def _masked_load(b: ir.IRBuilder, p: ir.Value, vt: ir.VectorType, lanes: int) -> ir.Value:
    """The first `lanes` elements at `p` in a vector of type `vt` (the others zero); reads nothing
    past them."""
    name = f"llvm.masked.load.{_vname(vt)}.p0"
    fn = b.module.globals.get(name) or ir.Function(
        b.module, ir.FunctionType(vt, [u.PTR, u.I32, ir.VectorType(u.I1, vt.count), vt]), name)
    mask = ir.Constant(ir.VectorType(u.I1, vt.count), [i < lanes for i in range(vt.count)])
    zero = ir.Constant(vt, [0.0] * vt.count)
    return b.call(fn, [p, ir.Constant(u.I32, u.type_bytes(vt.element)), mask, zero])


def _store_prefix(b: ir.IRBuilder, x: ir.Value, p: ir.Value, lanes: int) -> None:
    """Store the first `lanes` elements of vector `x` at `p` (plain stores of 4, 2, 1 elements;
    a masked store is microcoded on some cores)."""
    ft, es = x.type.element, u.type_bytes(x.type.element)
    if lanes == x.type.count:
        b.store(x, p, align=es)
        return
    at = 0
    for piece in (8, 4, 2, 1):
        if piece >= x.type.count or lanes - at < piece:
            continue
        dst = b.gep(p, [u.i64(at)], inbounds=True, source_etype=ft)
        if piece == 1:
            b.store(b.extract_element(x, ir.Constant(u.I32, at)), dst, align=es)
        else:
            part = b.shuffle_vector(x, ir.Constant(x.type, ir.Undefined),
                                    ir.Constant(ir.VectorType(u.I32, piece), list(range(at, at + piece))))
            b.store(part, dst, align=es)
        at += piece


def _small_tile(b: ir.IRBuilder, a: ir.Value, bm: ir.Value, c: ir.Value, k: int, a_strides, b_rs: int,
                ldc: int, rows: int, vecs: int, last: int, ft: ir.Type) -> None:
    """C[0:rows, 0:cols] = sum_kk A[r, kk] B[kk, 0:cols] for the tile whose corner is at `a` (row r
    at a + r*a_rs, column kk at + kk*a_cs), `bm` (row kk at bm + kk*b_rs, unit column stride) and
    `c` (row r at c + r*ldc): `rows` x `vecs` accumulators, the last vector holding `last` columns."""
    lanes = vector_lanes(ft)
    vt = ir.VectorType(ft, lanes)
    a_rs, a_cs = a_strides
    a_rows = [b.gep(a, [u.i64(r * a_rs)], inbounds=True, source_etype=ft) for r in range(rows)]

    def step(kk, accs):
        row_b = b.gep(bm, [u.imul(b, kk, b_rs)], inbounds=True, source_etype=ft)
        bv = []
        for v in range(vecs):
            p = b.gep(row_b, [u.i64(v * lanes)], inbounds=True, source_etype=ft)
            bv.append(_masked_load(b, p, vt, last) if v == vecs - 1 and last < lanes
                      else b.load(p, typ=vt, align=u.type_bytes(ft)))
        col_a = u.imul(b, kk, a_cs)
        new = []
        for r in range(rows):
            x = b.load(b.gep(a_rows[r], [col_a], inbounds=True, source_etype=ft), typ=ft)
            xv = splat(b, x, vt)
            new += [vector_fma(b, xv, bv[v], accs[r * vecs + v]) for v in range(vecs)]
        return new

    accs = accumulating_loop(b, "st", k, vt, rows * vecs, step)
    for r in range(rows):
        for v in range(vecs):
            p = b.gep(c, [u.i64(r * ldc + v * lanes)], inbounds=True, source_etype=ft)
            _store_prefix(b, accs[r * vecs + v], p, last if v == vecs - 1 else lanes)


def vector_fma(b: ir.IRBuilder, x: ir.Value, y: ir.Value, z: ir.Value) -> ir.Value:
    """x * y + z, one rounding (`llvm.fma` on vectors of any width and float type)."""
    name = f"llvm.fma.{_vname(x.type)}"
    fn = b.module.globals.get(name) or ir.Function(b.module, ir.FunctionType(x.type, [x.type] * 3), name)
    return b.call(fn, [x, y, z])


def small_tile_shape(m: int, n: int, ft: ir.Type) -> tuple[int, int]:
    """(rows, vectors) of the register tiles `emit_small_gemm` uses for an m x n product: 6 rows of
    2 vectors, or for fewer rows as many vectors as keep 12 accumulators busy (one row of 2 would be
    2 dependent fma chains, latency-bound), at most what n needs.

    >>> small_tile_shape(32, 10, u.F32), small_tile_shape(1, 64, u.F32), small_tile_shape(2, 500, u.F64)
    ((6, 2), (1, 8), (2, 6))
    """
    rows = min(m, SMALL_MR)
    return rows, max(1, min(max(2, 12 // rows), -(-n // vector_lanes(ft))))


def small_panel_elements(m: int, n: int, k: int, ft: ir.Type) -> int:
    """Elements of the scratch panel `emit_small_gemm` needs for a B with strided columns: k rows
    of one column block.

    >>> small_panel_elements(32, 10, 10, u.F32)
    160
    """
    return k * small_tile_shape(m, n, ft)[1] * vector_lanes(ft)


def emit_small_gemm(b: ir.IRBuilder, a: ir.Value, bm: ir.Value, c: ir.Value, m: int, n: int, k: int,
                    a_strides: tuple[int, int], b_strides: tuple[int, int], ldc: int, ft: ir.Type,
                    panel: ir.Value | None = None) -> None:
    """C (m x n, rows ldc apart, unit column stride) = A @ B with A's element (i, kk) at
    a + i*a_strides[0] + kk*a_strides[1] and B's (kk, j) at bm + kk*b_strides[0] + j*b_strides[1]
    (strides in elements, float type `ft`), m, n, k >= 1. Every element is one in-order chain of
    fma over k from 0, in register tiles of `small_tile_shape`. A B whose columns are strided
    (`b_strides[1]` != 1 and n > 1, e.g. B^T stored row-major) is copied one column block at a
    time to `panel` (`small_panel_elements`).

    >>> import ctypes, numpy as np
    >>> from llvmlite import ir
    >>> mod = ir.Module("s"); mod.triple, mod.data_layout = jit.host_triple_and_layout()
    >>> fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [u.PTR] * 4), "s")
    >>> bld = ir.IRBuilder(fn.append_basic_block())
    >>> x_, w_, c_, p_ = fn.args
    >>> emit_small_gemm(bld, x_, w_, c_, 7, 10, 3, (1, 7), (1, 3), 10, u.F32, p_); _ = bld.ret_void()
    >>> code = jit.compile_ir(str(mod), ["s"])
    >>> run = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)(code.addresses["s"])
    >>> x = np.arange(21, dtype=np.float32).reshape(3, 7); w = np.arange(30, dtype=np.float32).reshape(10, 3)
    >>> out, scratch = np.empty((7, 10), np.float32), np.empty(small_panel_elements(7, 10, 3, u.F32), np.float32)
    >>> run(x.ctypes.data, w.ctypes.data, out.ctypes.data, scratch.ctypes.data)  # x.T @ w.T, both read transposed
    >>> bool((out == x.T @ w.T).all())
    True
    """
    lanes = vector_lanes(ft)
    mr, nv = small_tile_shape(m, n, ft)
    nr = nv * lanes
    a_rs, a_cs = a_strides
    b_rs, b_cs = b_strides
    packed = n > 1 and b_cs != 1
    if packed and panel is None:
        raise ValueError("emit_small_gemm: a B with strided columns needs a panel")

    def at(p, off):
        return b.gep(p, [off], inbounds=True, source_etype=ft)

    def column_block(j0: ir.Value, width: int) -> None:  # columns [j0, j0 + width), every row
        vecs = -(-width // lanes)
        last = width - (vecs - 1) * lanes
        bj, cj, rs = at(bm, u.imul(b, j0, b_cs)), at(c, j0), b_rs
        if packed:  # panel[kk, j] = B[kk, j0 + j]: read along B's unit stride when it has one
            with u.for_range(b, width, "st.pj", unroll=False) as j:
                with u.for_range(b, k, "st.pk") as kk:
                    x = b.load(at(bj, u.iadd(b, u.imul(b, kk, b_rs), u.imul(b, j, b_cs))), typ=ft)
                    b.store(x, at(panel, u.iadd(b, u.imul(b, kk, nr), j)))
            bj, rs = panel, nr
        full = m // mr
        if full:
            with u.for_range(b, full, "st.mb", unroll=False) as mb:
                i0 = u.imul(b, mb, mr)
                _small_tile(b, at(a, u.imul(b, i0, a_rs)), bj, at(cj, u.imul(b, i0, ldc)), k, a_strides, rs,
                            ldc, mr, vecs, last, ft)
        if m % mr:
            i0 = full * mr
            _small_tile(b, at(a, u.i64(i0 * a_rs)), bj, at(cj, u.i64(i0 * ldc)), k, a_strides, rs, ldc,
                        m % mr, vecs, last, ft)

    if n // nr:
        with u.for_range(b, n // nr, "st.nb", unroll=False) as nb:
            column_block(u.imul(b, nb, nr), nr)
    if n % nr:
        column_block(u.i64(n // nr * nr), n % nr)


# --- the FMA roofline of the host (a benchmark's reference row) ----------------------------------
PEAK_ACCUMULATORS = 12  # independent FMA chains: enough to cover the FMA latency on 2 ports


def fma_peak_kernel(iters: int, accumulators: int = PEAK_ACCUMULATORS):
    """A generated kernel that runs `iters` steps of `accumulators` independent `<8 x float>` FMA
    chains in registers (acc = fma(x, y, acc), no loads or stores in the loop), then stores their
    sum to its argument's first 8 floats; it reads x and y from floats 0-7 and 8-15 of the same
    buffer. Its time is the host's FMA peak: 16 * accumulators * iters flops. Returns
    (run(pointer), flops, code) -- keep `code` alive while `run` is used.

    >>> import numpy as np
    >>> run, flops, code = fma_peak_kernel(1000, 4)
    >>> buf = np.ones(16, np.float32); run(buf.ctypes.data)
    >>> flops, buf[:8].tolist() == [4000.0] * 8
    (64000, True)
    """
    import ctypes
    mod = ir.Module("fma_peak")
    mod.triple, mod.data_layout = jit.host_triple_and_layout()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [u.PTR]), "fma_peak")
    b = ir.IRBuilder(fn.append_basic_block())
    x = b.load(fn.args[0], typ=_VEC, align=4)
    y = b.load(_at(b, fn.args[0], u.i64(LANES)), typ=_VEC, align=4)
    accs = accumulating_loop(b, "pk", iters, _VEC, accumulators,
                             lambda kk, accs: [vector_fma(b, x, y, a) for a in accs])
    total = accs[0]
    for acc in accs[1:]:
        total = b.fadd(total, acc)
    b.store(total, fn.args[0], align=4)
    b.ret_void()
    code = jit.compile_ir(str(mod), ["fma_peak"])
    run = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(code.addresses["fma_peak"])
    return run, 2 * LANES * accumulators * iters, code


# --- the in-place gemm as one shape-generic function per tile (compiled once per process) --------
# The in-place product above bakes m, n, k and the strides into each graph's code: ~28 ms of LLVM
# per distinct gemm. `emit_generic_inplace` emits the same loops as one function taking them at run
# time, `GENERIC_ARGS`, for both orientations of B (the flags bit `GENERIC_TRANS_B`: the two share
# the tile loop, and a cold process compiles one function, not two); `gemm_library` compiles its
# module once per process (or loads its object from the disk cache) and graph modules call its entry
# points by symbol (`generic_symbol`: one per orientation, `emit_generic_entries`). The k loop
# advances explicit offsets (the machine-code generator runs without loop strength reduction,
# `jit.CODEGEN_OPTIONS`). One tile loop serves every tile (its code size is the compile time): the
# last row tile of m % mr rows reads its rows clamped to m - 1, a last column panel narrower than nr
# goes through a zero-padded panel copy, and a tile that is not whole is stored through a scratch
# tile on the stack, its rows < m and vectors < n copied out by a loop (one block of stores instead
# of one per vector). A copied panel of B comes from the stack up to `GENERIC_PANEL_K` rows of k,
# else from malloc. Every element is still one in-order fma chain over k from 0: the bits of the
# code above.
GENERIC_ARGS = ("m", "n", "k", "a", "a_rs", "a_cs", "b", "ldb", "c", "ldc", "flags")
GENERIC_COPY_PANEL = 1  # flags bit: copy an untransposed B's column panels contiguous
GENERIC_TRANS_B = 2  # flags bit of the shared function: B is given transposed (`emit_generic_entries` sets it)
GENERIC_PANEL_K = 256  # rows of k of the stack panel (32 KiB for the 32-column tile)


def generic_symbol(tile: Tile, trans_b: bool) -> str:
    """The name graph modules call the generic in-place gemm of `tile` by, for B untransposed
    (``_nn``) or transposed (``_nt``): the entry points of `generic_module_text` (`gemm_library`).

    >>> generic_symbol(AVX512_TILE, False), generic_symbol(AVX2_TILE, True)
    ('tp_gemm_f32_8x32_nn', 'tp_gemm_f32_6x16_nt')
    """
    return f"{generic_core_symbol(tile)}_{'nt' if trans_b else 'nn'}"


def generic_core_symbol(tile: Tile) -> str:
    """The name of the function both entry points of `tile` call (`emit_generic_inplace`); also the
    name of their module.

    >>> generic_core_symbol(AVX512_TILE)
    'tp_gemm_f32_8x32'
    """
    return f"tp_gemm_f32_{tile.mr}x{tile.nr}"


def generic_function_type() -> ir.FunctionType:
    """The generic function's type: its `GENERIC_ARGS`, pointers and 64-bit integers.

    >>> str(generic_function_type())
    'void (i64, i64, i64, ptr, i64, i64, ptr, i64, ptr, i64, i64)'
    """
    t = {"a": u.PTR, "b": u.PTR, "c": u.PTR}
    return ir.FunctionType(u.VOID, [t.get(name, u.I64) for name in GENERIC_ARGS])


def _rt_tile(b: ir.IRBuilder, rows: list, a_cs: ir.Value, bm: ir.Value, ldb: ir.Value, k: ir.Value,
             tile: Tile, store) -> None:
    """sum over kk < k of A[r, kk] B[kk, 0:nr] for the tile's rows r, handed to ``store(accs)``
    (made after the k loop, so that what it computes does not hold registers over it): A's row r
    at `rows[r]`, its columns a_cs apart, B's row kk at bm + kk*ldb (unit column stride)."""
    MR, NV, LANES, vt = tile.mr, tile.nv, tile.lanes, tile.vec
    zero = ir.Constant(vt, None)  # zeroinitializer (shorter to print and parse)
    pre = b.block
    head, body, done = (b.append_basic_block(f"gk.{s}") for s in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    kk = b.phi(u.I64, name="gk.k")
    a_off = b.phi(u.I64, name="gk.aoff")
    b_row = b.phi(bm.type, name="gk.brow")
    accs = [b.phi(vt, name=f"gk.acc{t}") for t in range(MR * NV)]
    for phi, start in [(kk, u.i64(0)), (a_off, u.i64(0)), (b_row, bm)] + [(acc, zero) for acc in accs]:
        phi.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", kk, k), body, done)
    b.position_at_end(body)
    bv = [b.load(_at(b, b_row, u.i64(v * LANES)), typ=vt, align=4) for v in range(NV)]
    new = []
    for r in range(MR):
        x = splat(b, b.load(_at(b, rows[r], a_off), typ=_F32), vt)
        new += [vector_fma(b, x, bv[v], accs[r * NV + v]) for v in range(NV)]
    end = b.block
    kk.add_incoming(b.add(kk, u.i64(1), flags=("nuw", "nsw")), end)
    a_off.add_incoming(b.add(a_off, a_cs), end)
    b_row.add_incoming(_at(b, b_row, ldb), end)
    for acc, x in zip(accs, new):
        acc.add_incoming(x, end)
    b.branch(head)
    b.position_at_end(done)
    store(accs)


def _vstore(b: ir.IRBuilder, x: ir.Value, p: ir.Value) -> None:
    """Store vector `x` at float* `p` (through a cast: llvmlite types the pointer)."""
    b.store(x, b.bitcast(p, x.type.as_pointer()), align=4)


def _store_tile(b: ir.IRBuilder, accs: list, c0: ir.Value, ldc: ir.Value, rows: ir.Value, groups: ir.Value,
                scratch: ir.Value, tile: Tile) -> None:
    """Store the tile's accumulators at c0 (rows ldc apart): all of them when
    `rows` >= tile.mr and `groups` (vectors per row) == tile.nv, else the first min(rows, tile.mr)
    rows of `groups` vectors through `scratch` (tile.mr * tile.nr floats), by a loop."""
    MR, NV, LANES, NR, vt = tile.mr, tile.nv, tile.lanes, tile.nr, tile.vec
    full_rows = b.icmp_signed(">=", rows, u.i64(MR))
    whole = full_rows if NV == 1 else b.and_(full_rows, b.icmp_unsigned("==", groups, u.i64(NV)))
    with b.if_else(whole) as (then, otherwise):
        with then:
            row = c0
            for r in range(MR):
                if r:
                    row = _at(b, row, ldc)
                for v in range(NV):
                    _vstore(b, accs[r * NV + v], _at(b, row, u.i64(v * LANES)))
        with otherwise:
            for t, acc in enumerate(accs):
                _vstore(b, acc, _at(b, scratch, u.i64(t * LANES)))
            with u.for_range(b, b.select(full_rows, u.i64(MR), rows), "gk.sr") as r:
                row, kept = _at(b, c0, b.mul(r, ldc)), _at(b, scratch, u.imul(b, r, NR))
                with u.for_range(b, groups, "gk.sv") as v:
                    at = u.imul(b, v, LANES)
                    _vstore(b, b.load(_at(b, kept, at), typ=vt, align=4), _at(b, row, at))


def _permute2(b: ir.IRBuilder, x: ir.Value, index: ir.Value, y: ir.Value) -> ir.Value:
    """Lane i of the result = lane index[i] of x ++ y (AVX-512's vpermi2ps, one instruction)."""
    vt = x.type
    name = "llvm.x86.avx512.vpermi2var.ps.512"
    fn = b.module.globals.get(name) or ir.Function(b.module, ir.FunctionType(vt, [vt, index.type, vt]), name)
    return b.call(fn, [x, index, y])


def _transpose_masks(n: int) -> list[tuple[list[int], list[int]]]:
    """The (lo, hi) two-input shuffle masks of `_transpose_block`'s stages, for `n` lanes."""
    out, h = [], n // 2
    while h:
        out.append(([c if not c & h else n + c - h for c in range(n)], [n + c if c & h else c + h for c in range(n)]))
        h //= 2
    return out


def _load_transpose_masks(b: ir.IRBuilder, n: int) -> list[tuple[ir.Value, ir.Value]]:
    """`_transpose_masks(n)` as vectors loaded from a constant array of the module (``tp_gemm_tmasks``).

    Loaded rather than constant on purpose: the instruction selector sees a shuffle mask it cannot
    read, so it does not try to merge the transpose's four dependent stages of shuffles into fewer
    (a search over the chain: 12.6 of the 27 ms the generic module took to compile, the 64
    shuffles of a 16 x 16 block as constants or as vpermi2ps with constant masks; 0.5 ms loaded).
    It could not have merged them: each stage's pair of shuffles is already one instruction."""
    it = ir.VectorType(u.I32, n)
    masks = _transpose_masks(n)
    arr = ir.ArrayType(it, 2 * len(masks))
    g = b.module.globals.get("tp_gemm_tmasks")
    if g is None:
        g = ir.GlobalVariable(b.module, arr, "tp_gemm_tmasks")
        g.linkage, g.global_constant, g.align = "private", True, 64
        g.initializer = ir.Constant(arr, [ir.Constant(it, m) for pair in masks for m in pair])
    return [tuple(b.load(b.gep(g, [u.i64(0), u.i64(2 * s + j)], inbounds=True), typ=it, align=64) for j in (0, 1))
            for s in range(len(masks))]


def _transpose_block_permuted(b: ir.IRBuilder, rows: list[ir.Value], masks) -> list[ir.Value]:
    """`_transpose_block` of 16 rows of 16 floats in `_permute2` instructions (AVX-512 hosts), with
    the stages' masks `masks` (`_load_transpose_masks`)."""
    n = len(rows)
    rows = list(rows)
    h, stage = n // 2, 0
    while h:
        lo, hi = masks[stage]
        for r in range(n):
            if not r & h:
                x, y = rows[r], rows[r + h]
                rows[r], rows[r + h] = _permute2(b, x, lo, y), _permute2(b, x, hi, y)
        h //= 2
        stage += 1
    return rows


def _rt_transposed_panel(b: ir.IRBuilder, bt: ir.Value, ldt: ir.Value, panel: ir.Value, k: ir.Value,
                         groups: ir.Value, width: int, lanes: int) -> None:
    """panel[kk * width + j] = Bt[j, kk] for j < groups * lanes, kk < k (Bt's rows ldt apart):
    lanes x lanes blocks transposed in registers, the last k % lanes columns one element at a time
    (loops kept rolled: the function is compiled once, its size is its compile time). `panel` is
    a float*."""
    vt = ir.VectorType(_F32, lanes)
    if lanes == 16 and host_avx512():
        masks = _load_transpose_masks(b, lanes)
        transpose = lambda b, rows: _transpose_block_permuted(b, rows, masks)  # noqa: E731
    else:  # (a tile of 8 lanes, or 16 emulated in two halves: what the tests compile on AVX2 hosts)
        transpose = _transpose_block
    blocks = b.udiv(k, u.i64(lanes))
    with u.for_range(b, groups, "gt.jb") as jb:
        j0 = u.imul(b, jb, lanes)
        rows_at = [_at(b, bt, b.mul(u.iadd(b, j0, u.i64(r)), ldt)) for r in range(lanes)]
        with u.for_range(b, blocks, "gt.kb") as kb:
            k0 = u.imul(b, kb, lanes)
            rows = [b.load(_at(b, p, k0), typ=vt, align=4) for p in rows_at]
            to = _at(b, panel, u.iadd(b, u.imul(b, k0, width), j0))  # panel row k0, column j0
            for t, x in enumerate(transpose(b, rows)):
                _vstore(b, x, _at(b, to, u.i64(t * width)))
    with u.for_range(b, k, "gt.kr", start=u.imul(b, blocks, lanes)) as kk:
        with u.for_range(b, u.imul(b, groups, lanes), "gt.j") as j:
            x = b.load(_at(b, bt, u.iadd(b, b.mul(j, ldt), kk)), typ=_F32)
            b.store(x, _at(b, panel, u.iadd(b, u.imul(b, kk, width), j)))


def emit_generic_inplace(module: ir.Module, tile: Tile) -> ir.Function:
    """Define the generic in-place gemm `generic_core_symbol(tile)` in `module`: C (m x n, rows ldc
    apart) = A @ B, A's (i, kk) at a + i*a_rs + kk*a_cs, B row-major (k x n, rows ldb apart) or,
    with flags bit `GENERIC_TRANS_B`, B^T row-major (n x k, rows ldb apart); strides in elements,
    m, k >= 1, n a multiple of tile.lanes. Column panels of tile.nr floats outer, row tiles of
    tile.mr inner, all through one tile loop: a last panel narrower than nr is copied into a
    zero-padded panel, a last row tile reads its rows past m clamped to m - 1, and a tile that is
    not whole stores its rows < m and vectors < n through a scratch tile. An untransposed B's panel
    is copied contiguous first when flags has `GENERIC_COPY_PANEL` (and for the narrow panel); a
    transposed one always is (on the stack, or from malloc for a k longer than `GENERIC_PANEL_K`).
    The bits are those of `emit_gemm_inplace`. Graph code calls it through its entry points
    (`emit_generic_entries`).

    >>> import ctypes, numpy as np
    >>> from tensorplay.codegen import gemm_library  # (the process's copy: made once, kept mapped)
    >>> name = generic_symbol(AVX512_TILE, False)
    >>> run = ctypes.CFUNCTYPE(None, *[ctypes.c_int64] * 3, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
    ...                        ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
    ...     gemm_library.address(name))
    >>> x = np.arange(65, dtype=np.float32).reshape(5, 13); w = np.ones((5, 48), np.float32)
    >>> out = np.empty((13, 48), np.float32)
    >>> run(13, 48, 5, x.ctypes.data, 1, 13, w.ctypes.data, 48, out.ctypes.data, 48, 0)  # x.T @ w
    >>> bool((out == x.T @ w).all())
    True
    """
    MR, NV, LANES, NR = tile.mr, tile.nv, tile.lanes, tile.nr
    fn = ir.Function(module, generic_function_type(), generic_core_symbol(tile))
    fn.linkage = "internal"  # (called through the entry points only)
    for arg, name in zip(fn.args, GENERIC_ARGS):
        arg.name = name
    m, n, k, a, a_rs, a_cs, bm, ldb, c, ldc, flags = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    stack = b.alloca(_F32, size=u.i64(GENERIC_PANEL_K * NR), name="panel")
    stack.align = 64
    scratch = b.alloca(_F32, size=u.i64(MR * NR), name="scratch")
    scratch.align = 64
    fptr = _F32.as_pointer()  # every pointer as a float* (llvmlite types an alloca'd panel so)
    a, bm, c = (b.bitcast(p, fptr) for p in (a, bm, c))
    fits = b.icmp_signed("<=", k, u.i64(GENERIC_PANEL_K))
    n_full = b.udiv(n, u.i64(NR))
    groups_last = b.udiv(b.urem(n, u.i64(NR)), u.i64(LANES))  # vectors of a narrower last panel
    narrow = b.icmp_unsigned("!=", groups_last, u.i64(0))
    trans = b.icmp_unsigned("!=", b.and_(flags, u.i64(GENERIC_TRANS_B)), u.i64(0))
    asked = b.or_(trans, b.icmp_unsigned("!=", b.and_(flags, u.i64(GENERIC_COPY_PANEL)), u.i64(0)))
    malloc = ir.Function(module, ir.FunctionType(u.PTR, [u.I64]), "malloc")
    free = ir.Function(module, ir.FunctionType(u.VOID, [u.PTR]), "free")
    on_heap = b.and_(b.or_(asked, narrow), b.not_(fits))  # a panel copied, longer than the stack one
    heap = u.alloca_at_entry(b, u.PTR, "heap", ir.Constant(u.PTR, None))
    with u.if_then(b, on_heap):
        b.store(b.call(malloc, [u.imul(b, k, 4 * NR)]), heap)
    panel = b.select(fits, stack, b.bitcast(b.load(heap, typ=u.PTR), fptr))
    last_row = b.sub(m, u.i64(1))
    row_tiles = b.udiv(b.add(m, u.i64(MR - 1)), u.i64(MR))
    vt = tile.vec

    with u.for_range(b, b.add(n_full, b.zext(narrow, u.I64)), "gk.nb") as nb:
        j0 = u.imul(b, nb, NR)
        part = b.icmp_unsigned(">=", nb, n_full)  # the narrower last panel
        groups = b.select(part, groups_last, u.i64(NV))
        copy = b.or_(asked, part)
        with u.if_then(b, part):  # its columns past n are zeros in the panel (never stored)
            with u.for_range(b, u.imul(b, k, NV), "gk.z") as q:
                _vstore(b, ir.Constant(vt, None), _at(b, panel, u.imul(b, q, LANES)))
        with b.if_else(trans) as (transposed, untransposed):
            with transposed:
                _rt_transposed_panel(b, _at(b, bm, b.mul(j0, ldb)), ldb, panel, k, groups, NR, LANES)
            with untransposed:
                src = _at(b, bm, j0)
                with u.if_then(b, copy):
                    with u.for_range(b, k, "gk.pk") as kk:
                        row = _at(b, src, b.mul(kk, ldb))
                        with u.for_range(b, groups, "gk.pv") as v:
                            x = b.load(_at(b, row, u.imul(b, v, LANES)), typ=vt, align=4)
                            _vstore(b, x, _at(b, panel, u.iadd(b, u.imul(b, kk, NR), u.imul(b, v, LANES))))
        bj = b.select(copy, panel, _at(b, bm, j0))
        ldp = b.select(copy, u.i64(NR), ldb)
        cj = _at(b, c, j0)
        with u.for_range(b, row_tiles, "gk.mb") as mb:
            i0 = u.imul(b, mb, MR)
            rows = []
            for r in range(MR):
                i = u.iadd(b, i0, u.i64(r))
                rows.append(_at(b, a, b.mul(b.select(b.icmp_signed("<", i, m), i, last_row), a_rs)))
            _rt_tile(b, rows, a_cs, bj, ldp, k, tile,
                     lambda accs, i0=i0: _store_tile(b, accs, _at(b, cj, b.mul(i0, ldc)), ldc, b.sub(m, i0), groups,
                                                     scratch, tile))
    with u.if_then(b, on_heap):
        b.call(free, [b.load(heap, typ=u.PTR)])
    b.ret_void()
    return fn


def emit_generic_entries(module: ir.Module, tile: Tile, core: ir.Function) -> list[ir.Function]:
    """Define the entry points `generic_symbol(tile, False / True)` in `module`: `core`
    (`emit_generic_inplace`) with flags bit `GENERIC_TRANS_B` cleared / set, in a tail call."""
    out = []
    for trans_b in (False, True):
        fn = ir.Function(module, generic_function_type(), generic_symbol(tile, trans_b))
        for arg, name in zip(fn.args, GENERIC_ARGS):
            arg.name = name
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        *args, flags = fn.args
        flags = b.or_(flags, u.i64(GENERIC_TRANS_B)) if trans_b else b.and_(flags, u.i64(~GENERIC_TRANS_B))
        b.call(core, [*args, flags], tail=True)
        b.ret_void()
        out.append(fn)
    return out


def generic_module_text(tile: Tile) -> str:
    """The LLVM module (text) `generic_core_symbol(tile)`: the generic in-place gemm of `tile` and its
    two entry points, one per orientation of B. (Its loops carry no unroll hints: the O0 pipeline
    `gemm_library` compiles it with unrolls nothing.)"""
    mod = ir.Module(generic_core_symbol(tile))
    mod.triple, mod.data_layout = jit.host_triple_and_layout()
    emit_generic_entries(mod, tile, emit_generic_inplace(mod, tile))
    return str(mod)
