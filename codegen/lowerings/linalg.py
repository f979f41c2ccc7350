"""Lowerings of the dense linear-algebra primitives: calls into LAPACKE (the row-major C
interface of LAPACK) in numpy's bundled OpenBLAS, found beside gemm (`codegen.dot.find_lapack`).

Each kernel loops over the leading (batch) axes. LAPACK overwrites its inputs, so every
matrix is first copied into a double-precision scratch buffer (from `malloc`; float32
operands are widened, and results rounded back, as the impl does);
the routine's results are then copied or post-processed into the output (R's lower part
zeroed, the sign and log|det| read off the LU factors). A routine that reports failure
(``info != 0``: a singular matrix for gesv, not positive-definite for potrf, no convergence)
flags the node, and the call raises LinAlgError. Without a LAPACK the lowering raises at
compile time, naming the primitive (there is no interpreter fallback).

    primitive     routine            scratch
    linalg_solve  gesv               A (n*n), pivots (n), B (n*k)
    cholesky      potrf ('L')        A (n*n)
    slogdet       getrf              A (n*n), pivots (n)
    qr            geqrf (+ orgqr)    A (m*n), tau (k), Q (m*k)
    eigh          syevd ('V', 'L')   A (n*n), eigenvalues (n)
    svd           gesdd ('S')        A (m*n), S (k), U (m*k), Vh (k*n)
"""
from __future__ import annotations

from math import prod

from llvmlite import ir

from tensorplay.ir.core import Node
from .. import irutil as u
from ..context import Index, KernelContext
from ..dot import find_lapack
from ..registry import Lowering, register

ROW_MAJOR = 101
I32 = ir.IntType(32)
I8 = ir.IntType(8)


class _Call:
    """Emission helpers for one kernel: scratch buffers, LAPACKE calls, element loops."""

    def __init__(self, ctx: KernelContext, node: Node):
        lapack = find_lapack()
        if lapack is None:
            raise NotImplementedError(f"codegen: {node.prim.name} needs LAPACK, and numpy has no bundled OpenBLAS "
                                      f"with LAPACKE here; run it with TENSORPLAY_BACKEND=interpreter")
        self.ctx, self.b, self.node, self.lapack = ctx, ctx.b, node, lapack
        self.int = ir.IntType(lapack.int_bits)
        self.mem = u.mem_type(node.inputs[0].dtype)  # the operands' and results' element type
        self.real = ir.DoubleType()  # LAPACK works in double precision (float32 operands are widened)
        self.letter = "d"
        self._buffers: list[ir.Value] = []

    def n(self, v: int) -> ir.Constant:
        return ir.Constant(self.int, v)

    def scratch(self, count: int, elem: ir.Type | None = None) -> ir.Value:
        elem = elem or self.real
        size = max(count, 1) * (elem.width // 8 if isinstance(elem, ir.IntType) else
                                (8 if elem == ir.DoubleType() else 4))
        fn = self.b.module.globals.get("malloc") or ir.Function(
            self.b.module, ir.FunctionType(ir.PointerType(I8), [u.I64]), "malloc")
        raw = self.b.call(fn, [u.i64(size)])
        self._buffers.append(raw)
        return self.b.bitcast(raw, ir.PointerType(elem))

    def free_all(self) -> None:
        fn = self.b.module.globals.get("free") or ir.Function(
            self.b.module, ir.FunctionType(ir.VoidType(), [ir.PointerType(I8)]), "free")
        for raw in self._buffers:
            self.b.call(fn, [raw])

    def call(self, routine: str, args: list[ir.Value]) -> ir.Value:
        """LAPACKE_<letter><routine>(ROW_MAJOR, *args) -> info; a nonzero info flags the node."""
        name = self.lapack.symbol(self.letter + routine)
        args = [ir.Constant(I32, ROW_MAJOR)] + args
        fn = self.b.module.globals.get(name) or ir.Function(
            self.b.module, ir.FunctionType(self.int, [a.type for a in args]), name)
        info = self.b.call(fn, args)
        self.ctx.checked_index(self.node, info, 1)  # flags info != 0 (LinAlgError at the call)
        return info

    def at(self, buf: ir.Value, i: ir.Value, elem: ir.Type | None = None) -> ir.Value:
        """Address of element `i` of a buffer of `elem`s (default: the matrices' element type)."""
        return self.b.gep(buf, [i], inbounds=True, source_etype=elem or self.real)

    def matrix(self, v, lead: list[ir.Value]) -> ir.Value:
        """Pointer to the first element of matrix `lead` of materialised value `v` (row-major)."""
        return self.ctx.pointer(v, Index(v.shape, dims=lead + [u.i64(0)] * (v.ndim - len(lead))))

    def convert(self, v: ir.Value, to: ir.Type) -> ir.Value:
        if v.type == to:
            return v
        return self.b.fpext(v, to) if to == ir.DoubleType() else self.b.fptrunc(v, to)

    def copy(self, dst: ir.Value, src: ir.Value, count: int, dst_t: ir.Type, src_t: ir.Type) -> None:
        with u.for_range(self.b, count, "cp") as i:
            v = self.b.load(self.at(src, i, src_t), typ=src_t)
            self.b.store(self.convert(v, dst_t), self.at(dst, i, dst_t))

    def load_in(self, dst: ir.Value, src: ir.Value, count: int) -> None:
        """Copy `count` operand elements at `src` into the double scratch `dst`."""
        self.copy(dst, src, count, self.real, self.mem)

    def store_out(self, dst: ir.Value, src: ir.Value, count: int) -> None:
        """Copy `count` doubles from scratch `src` into the result at `dst`."""
        self.copy(dst, src, count, self.mem, self.real)


def kernel(prepare, one):
    """A kernel lowering: `prepare(call, node)` allocates the scratch buffers (once), then
    `one(call, node, buffers, lead)` handles the matrix at leading indices `lead`."""
    def emit(ctx: KernelContext, node: Node) -> None:
        if prod(node.out.shape) == 0:
            return
        call = _Call(ctx, node)
        buffers = prepare(call, node)
        with u.loop_nest(ctx.b, node.inputs[0].shape[:-2], "mat") as lead:
            one(call, node, buffers, list(lead))
            ctx.forget()
        call.free_all()
    return Lowering("kernel", emit)


def _char(c: str) -> ir.Constant:
    return ir.Constant(I8, ord(c))


# --- solve -----------------------------------------------------------------------------------------
def _solve_scratch(c: _Call, node: Node):
    n, k = node.inputs[1].shape[-2:]
    return c.scratch(n * n), c.scratch(n, c.int), c.scratch(n * k)


def _solve(c: _Call, node: Node, bufs, lead) -> None:
    (a, rhs), (sa, piv, sb) = node.inputs, bufs
    n, k = rhs.shape[-2:]
    c.load_in(sa, c.matrix(a, lead), n * n)
    c.load_in(sb, c.matrix(rhs, lead), n * k)
    c.call("gesv", [c.n(n), c.n(k), sa, c.n(n), piv, sb, c.n(k)])
    c.store_out(c.matrix(node.out, lead), sb, n * k)


register("linalg_solve", kernel(_solve_scratch, _solve))


# --- cholesky --------------------------------------------------------------------------------------
def _cholesky(c: _Call, node: Node, bufs, lead) -> None:
    (a,), (sa,) = node.inputs, bufs
    n = a.shape[-1]
    c.load_in(sa, c.matrix(a, lead), n * n)
    c.call("potrf", [_char("L"), c.n(n), sa, c.n(n)])
    b = c.b
    zero = ir.Constant(c.real, 0.0)
    with u.for_range(b, n, "row") as i:  # potrf leaves the strict upper triangle as it was
        with u.for_range(b, n, "col", start=b.add(i, u.i64(1))) as j:
            b.store(zero, c.at(sa, b.add(b.mul(i, u.i64(n)), j)))
    c.store_out(c.matrix(node.out, lead), sa, n * n)


register("cholesky", kernel(lambda c, node: (c.scratch(node.inputs[0].shape[-1] ** 2),), _cholesky))


# --- slogdet ---------------------------------------------------------------------------------------
def _slogdet(c: _Call, node: Node, bufs, lead) -> None:
    (a,), (sa, piv) = node.inputs, bufs
    n = a.shape[-1]
    b = c.b
    t = c.real
    sign = u.alloca_at_entry(b, t, "sign")
    logabs = u.alloca_at_entry(b, t, "logabs")
    b.store(ir.Constant(t, 1.0), sign)
    b.store(ir.Constant(t, 0.0), logabs)
    if n:
        c.load_in(sa, c.matrix(a, lead), n * n)
        c.ctx.checked_index(c.node, u.i64(0), 1)  # getrf's info > 0 (a zero pivot) is not a failure here
        name = c.lapack.symbol(c.letter + "getrf")
        args = [ir.Constant(I32, ROW_MAJOR), c.n(n), c.n(n), sa, c.n(n), piv]
        fn = b.module.globals.get(name) or ir.Function(b.module, ir.FunctionType(c.int, [x.type for x in args]),
                                                       name)
        b.call(fn, args)
        with u.for_range(b, n, "piv") as i:
            d = b.load(c.at(sa, b.mul(i, u.i64(n + 1))), typ=t)
            p = b.load(c.at(piv, i, c.int), typ=c.int)
            swapped = b.icmp_signed("!=", p, b.trunc(b.add(i, u.i64(1)), c.int) if c.int.width < 64
                                    else b.add(i, u.i64(1)))
            one, minus, zero = ir.Constant(t, 1.0), ir.Constant(t, -1.0), ir.Constant(t, 0.0)
            sd = b.select(b.fcmp_ordered(">", d, zero), one,
                          b.select(b.fcmp_ordered("<", d, zero), minus,
                                   b.select(b.fcmp_unordered("uno", d, d), d, zero)))
            sd = b.select(swapped, b.fneg(sd), sd)
            b.store(b.fmul(b.load(sign, typ=t), sd), sign)
            b.store(b.fadd(b.load(logabs, typ=t), u.intrinsic(b, "llvm.log", [u.intrinsic(b, "llvm.fabs", [d])])),
                    logabs)
    result = sign if node.attrs["part"] == "sign" else logabs
    c.ctx.store(node.out, Index(node.out.shape, dims=lead), c.convert(b.load(result, typ=t), c.mem))


def _slogdet_scratch(c: _Call, node: Node):
    n = node.inputs[0].shape[-1]
    return c.scratch(n * n), c.scratch(n, c.int)


register("slogdet", kernel(_slogdet_scratch, _slogdet))


# --- qr --------------------------------------------------------------------------------------------
def _qr_scratch(c: _Call, node: Node):
    m, n = node.inputs[0].shape[-2:]
    k = min(m, n)
    return c.scratch(m * n), c.scratch(k), c.scratch(m * k)


def _qr(c: _Call, node: Node, bufs, lead) -> None:
    (a,), (sa, tau, sq) = node.inputs, bufs
    m, n = a.shape[-2:]
    k = min(m, n)
    b = c.b
    c.load_in(sa, c.matrix(a, lead), m * n)
    c.call("geqrf", [c.n(m), c.n(n), sa, c.n(n), tau])
    out = c.matrix(node.out, lead)
    zero = ir.Constant(c.real, 0.0)
    if node.attrs["part"] == "r":  # the upper triangle of the first k rows
        with u.for_range(b, k, "row") as i:
            with u.for_range(b, n, "col") as j:
                v = b.load(c.at(sa, b.add(b.mul(i, u.i64(n)), j)), typ=c.real)
                v = b.select(b.icmp_signed(">=", j, i), v, zero)
                b.store(c.convert(v, c.mem), c.at(out, b.add(b.mul(i, u.i64(n)), j), c.mem))
        return
    with u.for_range(b, m, "row") as i:  # the reflectors of the first k columns, then Q from them
        with u.for_range(b, k, "col") as j:
            v = b.load(c.at(sa, b.add(b.mul(i, u.i64(n)), j)), typ=c.real)
            b.store(v, c.at(sq, b.add(b.mul(i, u.i64(k)), j)))
    c.call("orgqr", [c.n(m), c.n(k), c.n(k), sq, c.n(k), tau])
    c.store_out(out, sq, m * k)


register("qr", kernel(_qr_scratch, _qr))


# --- eigh ------------------------------------------------------------------------------------------
def _eigh_scratch(c: _Call, node: Node):
    n = node.inputs[0].shape[-1]
    return c.scratch(n * n), c.scratch(n)


def _eigh(c: _Call, node: Node, bufs, lead) -> None:
    (a,), (sa, w) = node.inputs, bufs
    n = a.shape[-1]
    c.load_in(sa, c.matrix(a, lead), n * n)
    c.call("syevd", [_char("V"), _char("L"), c.n(n), sa, c.n(n), w])
    out = c.matrix(node.out, lead)
    if node.attrs["part"] == "eigenvalues":
        c.store_out(out, w, n)
    else:
        c.store_out(out, sa, n * n)


register("eigh", kernel(_eigh_scratch, _eigh))


# --- svd -------------------------------------------------------------------------------------------
def _svd_scratch(c: _Call, node: Node):
    m, n = node.inputs[0].shape[-2:]
    k = min(m, n)
    return c.scratch(m * n), c.scratch(k), c.scratch(m * k), c.scratch(k * n)


def _svd(c: _Call, node: Node, bufs, lead) -> None:
    (a,), (sa, s, su, svt) = node.inputs, bufs
    m, n = a.shape[-2:]
    k = min(m, n)
    c.load_in(sa, c.matrix(a, lead), m * n)
    c.call("gesdd", [_char("S"), c.n(m), c.n(n), sa, c.n(n), s, su, c.n(k), svt, c.n(n)])
    src, count = {"u": (su, m * k), "s": (s, k), "vh": (svt, k * n)}[node.attrs["part"]]
    c.store_out(c.matrix(node.out, lead), src, count)


register("svd", kernel(_svd_scratch, _svd))
