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

from ._record import record

from llvmlite import ir

from . import irutil as u
from . import jit

MR = 6  # rows of the register tile
NV = 2  # <8 x float> vectors per tile row
LANES = 8
NR = NV * LANES  # columns of the register tile

_F32 = u.F32
_VEC = ir.VectorType(_F32, LANES)


@record(frozen=True)
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


def target_avx512() -> bool:
    """Whether the JIT's target machine has AVX-512F: what decides the instructions emitted
    (`vpermi2ps` exists only there), as `host_avx512` decides the plan. They are apart so that a
    plan forced onto another host's path still emits code this host's LLVM can select.

    >>> target_avx512() == ("+avx512f" in jit.engine().features.split(","))
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
# points by symbol (`generic_symbol`: one per orientation, `generic_module_text`). The k loop
# advances explicit offsets (the machine-code generator runs without loop strength reduction,
# `jit.CODEGEN_OPTIONS`). One tile loop serves every tile (its code size is the compile time): the
# last row tile of m % mr rows reads its rows clamped to m - 1, a last column panel narrower than nr
# goes through a zero-padded panel copy, and a tile's vectors past row m or past n are stored to a
# scratch tile on the stack instead of C (a select per vector: one block of stores for every tile,
# where predicated stores took a block each). k runs in blocks of at most `GENERIC_PANEL_K` rows,
# outermost: a copied panel of B is a block's rows (on the stack, in L1 while the row tiles pass
# over it), and a later block's chains go on from the values the block before stored (the same
# bits). Sapphire Rapids, same process: 64x784 @ 784x256 with copied panels 165 -> 147 us,
# 1024x784 @ 784x256 2.78 -> 2.50 ms, 64x784 @ (256x784)^T 196 -> 158 us (OpenBLAS 230). The
# module is written as IR text (`_Text`), not built with llvmlite.ir. Every element is still one in-order fma chain over k from 0: the bits of
# the code above.
GENERIC_ARGS = ("m", "n", "k", "a", "a_rs", "a_cs", "b", "ldb", "c", "ldc", "flags")
GENERIC_COPY_PANEL = 1  # flags bit: copy an untransposed B's column panels contiguous
GENERIC_TRANS_B = 2  # flags bit of the shared function: B is given transposed (its `_nt` entry point sets it)
GENERIC_PANEL_K = 256  # rows of k per block: the stack panel (32 KiB for the 32-column tile)


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


def _transpose_masks(n: int) -> list[tuple[list[int], list[int]]]:
    """The (lo, hi) two-input shuffle masks of `_transpose_block`'s stages, for `n` lanes.

    >>> [len(m) for m in _transpose_masks(8)], _transpose_masks(2)
    ([2, 2, 2], [([0, 2], [1, 3])])
    """
    out, h = [], n // 2
    while h:
        out.append(([c if not c & h else n + c - h for c in range(n)], [n + c if c & h else c + h for c in range(n)]))
        h //= 2
    return out


class _Text:
    """A function body written as LLVM IR text, a line at a time: the generic gemm is emitted this
    way, not with `llvmlite.ir`, which took 7 ms (of the ~30 ms its module costs a cold process)
    to build and print its ~650 instructions; this takes ~0.5 ms."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append("  " + line)

    def block(self, label: str) -> None:
        self.lines.append(f"{label}:")

    def loop(self, name: str, count: str, pre: str, latch: str, start: str = "0") -> str:
        """``for (%name = start; %name < count; ++%name)``: the header (its back edge comes from
        block `latch`, which must branch to ``name.head``) and the body block, entered from `pre`;
        the loop leaves to ``name.exit``."""
        self(f"br label %{name}.head")
        self.block(f"{name}.head")
        self(f"%{name} = phi i64 [{start}, %{pre}], [%{name}.next, %{latch}]")
        self(f"%{name}.c = icmp slt i64 %{name}, {count}")
        self(f"br i1 %{name}.c, label %{name}.body, label %{name}.exit")
        self.block(f"{name}.body")
        return f"%{name}"

    def next(self, name: str) -> None:
        """The back edge of loop `name` (`loop`), then its exit block."""
        self(f"%{name}.next = add nuw nsw i64 %{name}, 1")
        self(f"br label %{name}.head")
        self.block(f"{name}.exit")


def _tile_text(t: _Text, tile: Tile) -> None:
    """The row tile at rows %i0 of the panel (%bj, rows %ldp apart): its rows' pointers into A
    (clamped to m - 1), the k loop of mr * nv fma chains, and the stores to C's rows < m and
    vectors < %groups, the others to %scratch (`emit_generic_inplace`)."""
    MR, NV, L, NR = tile.mr, tile.nv, tile.lanes, tile.nr
    vt = f"<{L} x float>"
    for r in range(MR):
        i = "%i0" if r == 0 else f"%i{r}"
        if r:
            t(f"%i{r} = add i64 %i0, {r}")
        t(f"%in{r} = icmp slt i64 {i}, %m")
        t(f"%ic{r} = select i1 %in{r}, i64 {i}, i64 %last_row")
        t(f"%ao{r} = mul i64 %ic{r}, %a_rs")
        t(f"%ar{r} = getelementptr inbounds float, ptr %a, i64 %ao{r}")
    # the first block of k starts every chain from 0, a later one from the value the block before
    # stored (exact: the chain goes on where it stopped)
    t("br i1 %first, label %kj, label %kl")
    t.block("kl")
    loaded = _tile_destinations(t, tile, ".l")
    for q, p in enumerate(loaded):
        t(f"%in.l{q} = load {vt}, ptr {p}, align 4")
    t("br label %kj")
    t.block("kj")
    for q in range(MR * NV):
        t(f"%start{q} = phi {vt} [zeroinitializer, %mb.body], [%in.l{q}, %kl]")
    t("br label %k.head")
    t.block("k.head")
    t("%kk = phi i64 [0, %kj], [%kk.next, %k.body]")
    t("%aoff = phi i64 [0, %kj], [%aoff.next, %k.body]")
    t("%brow = phi ptr [%bj, %kj], [%brow.next, %k.body]")
    for q in range(MR * NV):
        t(f"%acc{q} = phi {vt} [%start{q}, %kj], [%f{q}, %k.body]")
    t("%kk.c = icmp slt i64 %kk, %k")
    t("br i1 %kk.c, label %k.body, label %st")
    t.block("k.body")
    for v in range(NV):
        p = "%brow"
        if v:
            t(f"%bp{v} = getelementptr inbounds float, ptr %brow, i64 {v * L}")
            p = f"%bp{v}"
        t(f"%bv{v} = load {vt}, ptr {p}, align 4")
    for r in range(MR):
        t(f"%ap{r} = getelementptr inbounds float, ptr %ar{r}, i64 %aoff")
        t(f"%as{r} = load float, ptr %ap{r}, align 4")
        t(f"%ai{r} = insertelement {vt} undef, float %as{r}, i64 0")
        t(f"%ab{r} = shufflevector {vt} %ai{r}, {vt} undef, <{L} x i32> zeroinitializer")
        for v in range(NV):
            q = r * NV + v
            t(f"%f{q} = call {vt} @llvm.fma.v{L}f32({vt} %ab{r}, {vt} %bv{v}, {vt} %acc{q})")
    t("%kk.next = add nuw nsw i64 %kk, 1")
    t("%aoff.next = add i64 %aoff, %a_cs")
    t("%brow.next = getelementptr inbounds float, ptr %brow, i64 %ldp")
    t("br label %k.head")
    # the stores, made after the k loop so that their pointers do not hold registers over it: a
    # vector of a row past m or past the last panel's vectors goes to the scratch tile instead of C
    # (a select, not a branch: one block of stores for every tile)
    t.block("st")
    for q, p in enumerate(_tile_destinations(t, tile, "")):
        t(f"store {vt} %acc{q}, ptr {p}, align 4")
    t("br label %st.end")
    t.block("st.end")


def _tile_destinations(t: _Text, tile: Tile, tag: str) -> list[str]:
    """The pointers of the row tile's mr * nv vectors in C (rows %i0 + r of the panel at %cj), named
    with `tag`: a vector of a row past m or past the panel's %groups vectors points into %scratch
    instead (a select, not a branch: one block of loads or stores for every tile)."""
    MR, NV, L = tile.mr, tile.nv, tile.lanes
    t(f"%rows{tag} = sub i64 %m, %i0")
    t(f"%c0o{tag} = mul i64 %i0, %ldc")
    t(f"%c0{tag} = getelementptr inbounds float, ptr %cj, i64 %c0o{tag}")
    for v in range(1, NV):
        t(f"%wide{tag}{v} = icmp ugt i64 %groups, {v}")
    out = []
    for r in range(MR):
        row = f"%c0{tag}" if r == 0 else f"%cr{tag}{r}"
        if r:  # (not inbounds: past the last row it points past C, and is not stored to)
            t(f"%cr{tag}{r} = getelementptr float, ptr {f'%c0{tag}' if r == 1 else f'%cr{tag}{r - 1}'}, i64 %ldc")
            t(f"%keep{tag}{r} = icmp sgt i64 %rows{tag}, {r}")
        for v in range(NV):
            q = r * NV + v
            p = row
            if v:
                t(f"%cp{tag}{q} = getelementptr float, ptr {row}, i64 {v * L}")
                p = f"%cp{tag}{q}"
            cond = None if r == 0 else f"%keep{tag}{r}"
            if v:
                if cond:
                    t(f"%kw{tag}{q} = and i1 {cond}, %wide{tag}{v}")
                    cond = f"%kw{tag}{q}"
                else:
                    cond = f"%wide{tag}{v}"
            if cond:
                t(f"%sp{tag}{q} = getelementptr inbounds float, ptr %scratch, i64 {q * L}")
                t(f"%dst{tag}{q} = select i1 {cond}, ptr {p}, ptr %sp{tag}{q}")
                p = f"%dst{tag}{q}"
            out.append(p)
    return out


def _transposed_panel_text(t: _Text, tile: Tile, permute: bool) -> None:
    """panel[kk * nr + j] = Bt[j, kk] for j < %groups * lanes, kk < k, Bt = B^T's rows of this
    panel (rows ldb apart): lanes x lanes blocks transposed in registers (`_transpose_block`'s
    stages of shuffles), the last k % lanes columns one element at a time.

    With `permute` (16 lanes, AVX-512), the second and fourth stages are vpermi2ps whose masks are
    loaded from a constant array of the module (``tp_gemm_tmasks``), on purpose: given four
    dependent stages of constant shuffles, the instruction selector tries to merge them into
    fewer (a search over the chain that cannot succeed, each stage being one instruction per
    output already), 12.6 of the 27 ms the module took to compile; a permute it cannot read between
    two constant stages stops the search. The constant stages become vinsertf64x4 / vshuff64x2 and
    vunpck{l,h}pd, cheaper than permutes: all four as loaded permutes ran dh2 W2^T 1.4-2.3 % slower
    than the constant shuffles' code (Zen 4), this mix 0.98-1.00x."""
    L, NR = tile.lanes, tile.nr
    vt, it = f"<{L} x float>", f"<{L} x i32>"
    masks = _transpose_masks(L)
    t("%tbo = mul i64 %j0, %ldb")
    t("%bt = getelementptr inbounds float, ptr %b, i64 %tbo")
    if permute:
        for s in range(2 * len(masks)):
            if s // 2 % 2:  # (the permuted stages' masks)
                t(f"%tmp{s} = getelementptr inbounds [{2 * len(masks)} x {it}], ptr @tp_gemm_tmasks, i64 0, i64 {s}")
                t(f"%tm{s} = load {it}, ptr %tmp{s}, align 64")
    t(f"%blocks = udiv i64 %k, {L}")
    t.loop("jb", "%groups", "t.pre", "kb.exit")
    t(f"%jb0 = mul nuw nsw i64 %jb, {L}")
    t("%jo = mul i64 %jb0, %ldb")
    t("%rp0 = getelementptr inbounds float, ptr %bt, i64 %jo")
    for r in range(1, L):  # Bt's rows jb0 + r, ldb apart
        t(f"%rp{r} = getelementptr inbounds float, ptr %rp{r - 1}, i64 %ldb")
    t.loop("kb", "%blocks", "jb.body", "kb.body")
    t(f"%k0 = mul nuw nsw i64 %kb, {L}")
    rows = []
    for r in range(L):
        t(f"%lp{r} = getelementptr inbounds float, ptr %rp{r}, i64 %k0")
        t(f"%x0_{r} = load {vt}, ptr %lp{r}, align 4")
        rows.append(f"%x0_{r}")
    for stage, (lo, hi) in enumerate(masks):
        h = L >> (stage + 1)
        out = list(rows)
        for r in range(L):
            if not r & h:
                x, y = rows[r], rows[r + h]
                for dst, s, mask in ((r, 2 * stage, lo), (r + h, 2 * stage + 1, hi)):
                    name = f"%x{stage + 1}_{dst}"
                    if permute and stage % 2:
                        t(f"{name} = call {vt} @llvm.x86.avx512.vpermi2var.ps.512({vt} {x}, {it} %tm{s}, {vt} {y})")
                    else:
                        t(f"{name} = shufflevector {vt} {x}, {vt} {y}, {it} <{', '.join(f'i32 {c}' for c in mask)}>")
                    out[dst] = name
        rows = out
    t(f"%to.a = mul nuw nsw i64 %k0, {NR}")
    t("%to.b = add i64 %to.a, %jb0")
    t("%to = getelementptr inbounds float, ptr %pan, i64 %to.b")
    for r, x in enumerate(rows):
        t(f"%tp{r} = getelementptr inbounds float, ptr %to, i64 {r * NR}")
        t(f"store {vt} {x}, ptr %tp{r}, align 4")
    t.next("kb")
    t.next("jb")
    t(f"%kr0 = mul nuw nsw i64 %blocks, {L}")
    t(f"%jn = mul nuw nsw i64 %groups, {L}")
    t.loop("kr", "%k", "jb.exit", "j.exit", start="%kr0")
    t.loop("j", "%jn", "kr.body", "j.body")
    t("%j.o = mul i64 %j, %ldb")
    t("%j.k = add i64 %j.o, %kr")
    t("%j.p = getelementptr inbounds float, ptr %bt, i64 %j.k")
    t("%j.x = load float, ptr %j.p, align 4")
    t(f"%j.d0 = mul nuw nsw i64 %kr, {NR}")
    t("%j.d = add i64 %j.d0, %j")
    t("%j.q = getelementptr inbounds float, ptr %pan, i64 %j.d")
    t("store float %j.x, ptr %j.q, align 4")
    t.next("j")
    t.next("kr")
    t("br label %tile.pre")


def emit_generic_inplace(tile: Tile, avx512: bool | None = None) -> str:
    """The text of the generic in-place gemm `generic_core_symbol(tile)` (internal; graph code calls
    its entry points, `generic_module_text`): C (m x n, rows ldc apart) = A @ B, A's (i, kk) at
    a + i*a_rs + kk*a_cs, B row-major (k x n, rows ldb apart) or, with flags bit
    `GENERIC_TRANS_B`, B^T row-major (n x k, rows ldb apart); strides in elements, m, k >= 1, n a
    multiple of tile.lanes. Column panels of tile.nr floats outer, row tiles of tile.mr inner, all
    through one tile loop: a last panel narrower than nr is copied into a zero-padded panel, a
    last row tile reads its rows past m clamped to m - 1, and a tile's vectors past row m or past
    n are stored to a scratch tile instead of C. All of it per block of at most
    `GENERIC_PANEL_K` rows of k (equal blocks, the outermost loop), the accumulators of every
    block after the first loaded from where the block before stored them. An untransposed B's
    panel is copied contiguous first when flags has `GENERIC_COPY_PANEL` (and for the narrow
    panel); a transposed one always is (a block's rows, on the stack), its 16-lane blocks
    transposed by AVX-512 permutes on an AVX-512 target (`avx512`, by default `target_avx512`). The bits are those of `emit_gemm_inplace`.

    >>> text = emit_generic_inplace(AVX512_TILE, avx512=False)
    >>> text.startswith('define internal void @"tp_gemm_f32_8x32"('), "vpermi2var" in text
    (True, False)
    """
    MR, NV, L, NR = tile.mr, tile.nv, tile.lanes, tile.nr
    vt = f"<{L} x float>"
    permute = L == 16 and (target_avx512() if avx512 is None else avx512)
    # a, b and k name the current block of k in the body (`_tile_text`, the panel copies)
    whole = {"a": "a.all", "b": "b.all", "k": "k.all"}
    args = ", ".join(f"{'ptr' if name in 'abc' else 'i64'} %{whole.get(name, name)}" for name in GENERIC_ARGS)
    t = _Text()
    t.lines.append(f'define internal void @"{generic_core_symbol(tile)}"({args})\n{{')
    t.block("entry")
    t(f"%pan = alloca float, i64 {GENERIC_PANEL_K * NR}, align 64")
    t(f"%scratch = alloca float, i64 {MR * NR}, align 64")
    t(f"%n_full = udiv i64 %n, {NR}")
    t(f"%n_rem = urem i64 %n, {NR}")
    t(f"%groups_last = udiv i64 %n_rem, {L}")  # vectors of a narrower last panel
    t("%narrow = icmp ne i64 %groups_last, 0")
    t(f"%tb = and i64 %flags, {GENERIC_TRANS_B}")
    t("%trans = icmp ne i64 %tb, 0")
    t(f"%cb = and i64 %flags, {GENERIC_COPY_PANEL}")
    t("%cf = icmp ne i64 %cb, 0")
    t("%asked = or i1 %trans, %cf")
    t("%last_row = sub i64 %m, 1")
    t(f"%m_up = add i64 %m, {MR - 1}")
    t(f"%row_tiles = udiv i64 %m_up, {MR}")
    t("%nz = zext i1 %narrow to i64")
    t("%panels = add i64 %n_full, %nz")
    t(f"%k_up = add i64 %k.all, {GENERIC_PANEL_K - 1}")
    t(f"%k_blocks = udiv i64 %k_up, {GENERIC_PANEL_K}")
    t("%k_step.up = add i64 %k.all, %k_blocks")  # blocks of equal length (the last one shorter)
    t("%k_step.up1 = sub i64 %k_step.up, 1")
    t("%k_step = udiv i64 %k_step.up1, %k_blocks")
    # blocks of k outer: the k0-th block's rows of A's columns and B's rows (A at a + k0*a_cs, B at
    # b + k0*ldb, or B^T at b + k0) are a product of `GENERIC_PANEL_K` rows at most, whose copied
    # panel (32 KiB for the 32-column tile) stays in L1 while the row tiles pass over it
    t.loop("kq", "%k_blocks", "entry", "nb.exit")
    t("%kq0 = mul nuw nsw i64 %kq, %k_step")
    t("%k_left = sub i64 %k.all, %kq0")
    t("%k_short = icmp slt i64 %k_left, %k_step")
    t("%k = select i1 %k_short, i64 %k_left, i64 %k_step")
    t("%first = icmp eq i64 %kq, 0")
    t("%a.o = mul i64 %kq0, %a_cs")
    t("%a = getelementptr inbounds float, ptr %a.all, i64 %a.o")
    t("%b.ro = mul i64 %kq0, %ldb")
    t("%b.o = select i1 %trans, i64 %kq0, i64 %b.ro")
    t("%b = getelementptr inbounds float, ptr %b.all, i64 %b.o")
    t.loop("nb", "%panels", "kq.body", "mb.exit")
    t(f"%j0 = mul nuw nsw i64 %nb, {NR}")
    t("%part = icmp uge i64 %nb, %n_full")  # the narrower last panel
    t(f"%groups = select i1 %part, i64 %groups_last, i64 {NV}")
    t("%copy = or i1 %asked, %part")
    t("br i1 %part, label %z.pre, label %prep")
    t.block("z.pre")  # its columns past n are zeros in the panel (never stored)
    t(f"%zn = mul i64 %k, {NV}")
    t.loop("z", "%zn", "z.pre", "z.body")
    t(f"%z.o = mul nuw nsw i64 %z, {L}")
    t("%z.p = getelementptr inbounds float, ptr %pan, i64 %z.o")
    t(f"store {vt} zeroinitializer, ptr %z.p, align 4")
    t.next("z")
    t("br label %prep")
    t.block("prep")
    t("br i1 %trans, label %t.pre, label %u.pre")
    t.block("t.pre")
    _transposed_panel_text(t, tile, permute)
    t.block("u.pre")
    t("%src = getelementptr inbounds float, ptr %b, i64 %j0")
    t("br i1 %copy, label %pk.pre, label %tile.pre")
    t.block("pk.pre")
    t.loop("pk", "%k", "pk.pre", "pv.exit")
    t("%pk.o = mul i64 %pk, %ldb")
    t("%pk.row = getelementptr inbounds float, ptr %src, i64 %pk.o")
    t(f"%pk.d = mul nuw nsw i64 %pk, {NR}")
    t("%pk.to = getelementptr inbounds float, ptr %pan, i64 %pk.d")
    t.loop("pv", "%groups", "pk.body", "pv.body")
    t(f"%pv.at = mul nuw nsw i64 %pv, {L}")
    t("%pv.src = getelementptr inbounds float, ptr %pk.row, i64 %pv.at")
    t(f"%pv.x = load {vt}, ptr %pv.src, align 4")
    t("%pv.dst = getelementptr inbounds float, ptr %pk.to, i64 %pv.at")
    t(f"store {vt} %pv.x, ptr %pv.dst, align 4")
    t.next("pv")
    t.next("pk")
    t("br label %tile.pre")
    t.block("tile.pre")
    t("%bj0 = getelementptr inbounds float, ptr %b, i64 %j0")
    t("%bj = select i1 %copy, ptr %pan, ptr %bj0")
    t(f"%ldp = select i1 %copy, i64 {NR}, i64 %ldb")
    t("%cj = getelementptr inbounds float, ptr %c, i64 %j0")
    t.loop("mb", "%row_tiles", "tile.pre", "st.end")
    t(f"%i0 = mul nuw nsw i64 %mb, {MR}")
    _tile_text(t, tile)
    t.next("mb")
    t.next("nb")
    t.next("kq")
    t("ret void")
    t.lines.append("}")
    return "\n".join(t.lines) + "\n"


def generic_module_text(tile: Tile, avx512: bool | None = None) -> str:
    """The LLVM module (text) `generic_core_symbol(tile)`: the generic in-place gemm of `tile`
    (`emit_generic_inplace`) and its two entry points `generic_symbol(tile, False / True)`, which
    call it with flags bit `GENERIC_TRANS_B` cleared / set (a tail call). (Its loops carry no
    unroll hints: the O0 pipeline `gemm_library` compiles it with unrolls nothing.)

    >>> import ctypes, numpy as np
    >>> from tensorplay.codegen import gemm_library  # (the process's copy: made once, kept mapped)
    >>> run = ctypes.CFUNCTYPE(None, *[ctypes.c_int64] * 3, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
    ...                        ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
    ...     gemm_library.address(generic_symbol(AVX512_TILE, False)))
    >>> x = np.arange(65, dtype=np.float32).reshape(5, 13); w = np.ones((5, 48), np.float32)
    >>> out = np.empty((13, 48), np.float32)
    >>> run(13, 48, 5, x.ctypes.data, 1, 13, w.ctypes.data, 48, out.ctypes.data, 48, 0)  # x.T @ w
    >>> bool((out == x.T @ w).all())
    True
    """
    L = tile.lanes
    core = generic_core_symbol(tile)
    body = emit_generic_inplace(tile, avx512)
    triple, layout = jit.host_triple_and_layout()
    params = ", ".join(f"{'ptr' if name in 'abc' else 'i64'} %{name}" for name in GENERIC_ARGS)
    args = ", ".join(f"{'ptr' if name in 'abc' else 'i64'} %{name}" for name in GENERIC_ARGS[:-1])
    out = [f'; ModuleID = "{core}"', f'target triple = "{triple}"', f'target datalayout = "{layout}"', ""]
    if "tp_gemm_tmasks" in body:
        masks = [m for pair in _transpose_masks(L) for m in pair]
        vecs = ", ".join(f"<{L} x i32> <{', '.join(f'i32 {c}' for c in m)}>" for m in masks)
        out.append(f"@tp_gemm_tmasks = private unnamed_addr constant [{len(masks)} x <{L} x i32>] [{vecs}], align 64")
    out.append(body)
    for trans_b in (False, True):
        flags = f"or i64 %flags, {GENERIC_TRANS_B}" if trans_b else f"and i64 %flags, {~GENERIC_TRANS_B}"
        out.append(f'define void @"{generic_symbol(tile, trans_b)}"({params})\n{{\nentry:\n  %f = {flags}\n'
                   f'  tail call void @"{core}"({args}, i64 %f)\n  ret void\n}}\n')
    out += [f"declare <{L} x float> @llvm.fma.v{L}f32(<{L} x float>, <{L} x float>, <{L} x float>)"]
    if "vpermi2var" in body:
        out.append(f"declare <{L} x float> @llvm.x86.avx512.vpermi2var.ps.512(<{L} x float>, <{L} x i32>, <{L} x float>)")
    return "\n".join(out) + "\n"
