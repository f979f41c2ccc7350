"""Benchmark 2: MLP 784-256-256-10 (ReLU) forward, mean cross-entropy loss + gradient, and an ensemble.

    python -m tensorplay.tools.bench.bench_mlp [--batches 64 1024] [--only forward grad ensemble]

forward: numpy, tensorplay eager, `tp.compile`, `jax.jit`, torch eager (inference mode).
loss+grad (gradient w.r.t. all six parameter tensors):
  `tp grad` (the plain transform: re-traces and re-runs the AD pass every call, reuses
  the compiled code), `tp.compile(grad(loss))`, `jax.jit(jax.grad(loss))`,
  `torch.func.grad(loss)` and classic torch autograd (`loss.backward()`).
ensemble (issue 15): the forward of 10 MLPs 784-128-10 (ReLU) on one batch of 64, as
  `vmap(mlp, in_dims=(0, None))` over parameters stacked along a new leading axis:
  numpy by hand (a loop over the 10 models, the reference column), `tp.compile(vmap)`,
  `jax.jit(jax.vmap)`, `torch.func.vmap` (inference mode).
  A second table, the roofline: the first layer alone (10 products 64x784x128 with a shared x)
  as numpy's loop of OpenBLAS sgemms and as `tp.compile(vmap(x @ w))`, against a generated
  kernel of independent register FMAs doing the same flops (`gemm_kernel.fma_peak_kernel`: the
  core's FMA peak); both tables give GFLOP/s and the fraction of that peak.
`--ab-gemm` adds two rows to forward and loss+grad: the compiled graph as two `codegen.Executable`s
  called directly, one built as tensorplay builds it (the in-place gemm where the rule takes it) and
  one with TENSORPLAY_INPLACE_GEMM=0 (every product on OpenBLAS): a same-process A/B of the gemm path.
products (issue 12's compiled MLP loss+grad, B=64): its eight dot_generals one at a time, each
  compiled alone as tensorplay compiles it inside the grad (`codegen.compile_graph` of the one
  node, called with `out=`: the path the rule picks, the generated in-place gemm or OpenBLAS)
  against numpy's `matmul(..., out=)` on the same operands (OpenBLAS); GFLOP/s and the fraction of
  the FMA peak (`gemm_kernel.fma_peak_kernel`, timed in the same run). Not part of the default run.
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402
from tensorplay.tools.bench import _models as M  # noqa: E402

import numpy as np  # noqa: E402

from tensorplay.func import grad, vmap  # noqa: E402

PARTS = ("forward", "grad", "ensemble", "products")


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=21)
    ap.add_argument("--batches", type=int, nargs="+", default=None)
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="layer widths (default 784 256 256 10)")
    ap.add_argument("--only", nargs="+", choices=PARTS, default=PARTS[:3],
                    help="tables to run (default: forward grad ensemble)")
    ap.add_argument("--ab-gemm", action="store_true",
                    help="add executable rows with and without the in-place gemm (same process)")
    args = H.parse(ap, argv)
    batches = args.batches or ([2] if args.quick else [64, 1024])
    sizes = args.sizes or ([3, 2, 2] if args.quick else [784, 256, 256, 10])
    H.header(f"MLP {'-'.join(map(str, sizes))} ReLU, float32", args)
    jax, torch = H.import_jax(), H.import_torch()
    P = M.init_mlp(sizes)
    T = M.tensorplay_fns()
    tp = T.tp
    tparams = T.params(P)
    fwd_c = tp.compile(T.mlp)
    grad_c = tp.compile(grad(T.loss))
    grad_plain = grad(T.loss)
    if jax is not None:
        J = M.jax_fns(jax)
        jparams = J.params(P)
        jfwd = jax.jit(J.mlp)
        jgrad = jax.jit(jax.grad(J.loss))
    if torch is not None:
        TO = M.torch_fns(torch)
        tparams_t = TO.params(P)
        tparams_ag = TO.params(P, requires_grad=True)
        tgrad = torch.func.grad(TO.loss)

    fwd = H.Suite("forward", ref="jax.jit", check_ref="numpy", rtol=1e-3, atol=1e-4)
    bwd = H.Suite("loss + grad", ref="jax.jit", rtol=2e-3, atol=2e-6)
    for n in batches:
        case = f"batch {n}"
        x, y = M.batch(n, sizes[0], sizes[-1])
        xt, yt = T.array(x), T.array(y)
        impls = [H.Impl("numpy", lambda: M.numpy_mlp(P, x)),
                 H.Impl("tp eager", lambda: T.mlp(tparams, xt)),
                 H.Impl("tp.compile", lambda: fwd_c(tparams, xt))]
        gimpls = [H.Impl("tp grad (plain)", lambda: grad_plain(tparams, xt, yt)),
                  H.Impl("tp.compile(grad)", lambda: grad_c(tparams, xt, yt))]
        if jax is not None:
            xj, yj = J.array(x), J.array(y)
            impls.append(H.Impl("jax.jit", lambda: jfwd(jparams, xj).block_until_ready()))
            gimpls.append(H.Impl("jax.jit(grad)", lambda: jax.block_until_ready(jgrad(jparams, xj, yj))))
        if torch is not None:
            xto, yto = torch.from_numpy(x), torch.from_numpy(y)

            def torch_fwd():
                with torch.inference_mode():
                    return TO.mlp(tparams_t, xto)

            def torch_autograd():
                for w, b in tparams_ag:
                    w.grad = b.grad = None
                TO.loss(tparams_ag, xto, yto).backward()
                return [(w.grad, b.grad) for w, b in tparams_ag]

            impls.append(H.Impl("torch eager", torch_fwd))
            gimpls.append(H.Impl("torch.func.grad", lambda: tgrad(tparams_t, xto, yto)))
            gimpls.append(H.Impl("torch autograd", torch_autograd))
        if args.ab_gemm:
            impls += _gemm_ab(fwd_c.lower(tparams, xt).graph, [w for p in P for w in p] + [x])
            gimpls += _gemm_ab(grad_c.lower(tparams, xt, yt).graph, [w for p in P for w in p] + [x, y])
        if "forward" in args.only:
            fwd.run_case(case, impls, args)
        bwd.ref = "jax.jit(grad)"
        if "grad" in args.only:
            bwd.run_case(case, gimpls, args)
    suites = [s for s, part in ((fwd, "forward"), (bwd, "grad")) if part in args.only]
    if "ensemble" in args.only:
        suites.extend(ensemble(args, jax, torch))
    if "products" in args.only:
        suites.append(products(args, sizes))
    return H.report(suites, args)


def _gemm_ab(graph, flat) -> list:
    """Rows for `graph` as an executable with the in-place gemm (the default) and one without it
    (TENSORPLAY_INPLACE_GEMM=0), both built here (not from the compile caches) and called directly."""
    from tensorplay.codegen import dot
    from tensorplay.codegen.executable import Executable

    flat = [np.ascontiguousarray(a) for a in flat]
    saved = {k: os.environ.get(k) for k in (dot.INPLACE_GEMM_ENV, "TENSORPLAY_DISK_CACHE")}
    rows = []
    try:
        os.environ["TENSORPLAY_DISK_CACHE"] = "0"
        for label, value in (("in-place gemm", "1"), ("OpenBLAS", "0")):
            os.environ[dot.INPLACE_GEMM_ENV] = value
            exe = Executable(graph)
            rows.append(H.Impl(f"executable, {label}", lambda exe=exe: exe(*flat)))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return rows


PEAK_IMPL = "FMA peak, same flops (roofline)"


def _flops_columns(flops: int, peak_suite: H.Suite) -> dict:
    """Extra table columns: GFLOP/s of a row doing `flops`, and its fraction of the FMA peak row."""
    def peak_s():
        return next((r.timing.median for r in peak_suite.rows if r.impl == PEAK_IMPL and r.timing), None)

    def gflops(case, impl, t):
        return f"{flops / t.median / 1e9:.1f}"

    def of_peak(case, impl, t):
        p = peak_s()
        return f"{p / t.median:.0%}" if p else "--"
    return {"GFLOP/s": gflops, "of FMA peak": of_peak}


def roofline(args, x: np.ndarray, w1: np.ndarray, T) -> H.Suite:
    """The ensemble's first layer alone (x @ w1[i] for every model) against the FMA peak."""
    from tensorplay.codegen import gemm_kernel

    k, d, h = w1.shape
    flops = 2 * x.shape[0] * d * h * k
    per_step = 2 * gemm_kernel.LANES * gemm_kernel.PEAK_ACCUMULATORS
    run, peak_flops, code = gemm_kernel.fma_peak_kernel(max(1, round(flops / per_step)))
    buf = np.full(16, 0.5, np.float32)
    out = np.empty((k, x.shape[0], h), np.float32)

    def blas():
        for i in range(k):
            np.matmul(x, w1[i], out=out[i])
        return out

    layer = T.tp.compile(vmap(lambda w, v: v @ w, in_dims=(0, None)))
    wt, xt = T.array(w1), T.array(x)

    def peak():
        run(buf.ctypes.data)
        return code  # keeps the machine code alive as long as the closure

    impls = [H.Impl("OpenBLAS sgemm loop (numpy)", blas),
             H.Impl("tp.compile(vmap(x @ w))", lambda: layer(wt, xt)),
             H.Impl(PEAK_IMPL, peak, check=False)]
    tile = gemm_kernel.choose_tile(x.shape[0], h) if gemm_kernel.host_supported() else None
    tile = f"{tile.mr}x{tile.nr} floats in {32 * tile.lanes}-bit registers" if tile else "none (no FMA)"
    suite = H.Suite(f"roofline: first layer alone, {k} x ({x.shape[0]}x{d} @ {d}x{h}), one thread, "
                    f"generated gemm tile {tile}",
                    ref="OpenBLAS sgemm loop (numpy)", rtol=1e-3, atol=1e-4)
    suite.extra = _flops_columns(flops, suite)
    suite.run_case(f"{flops / 1e6:.4g} MFLOP (peak kernel {peak_flops / 1e6:.4g})", impls, args)
    return suite


def products(args, sizes: list[int]) -> H.Suite:
    """The dot_generals of the MLP's loss+grad (batch 64, or 2 with --quick), each compiled alone,
    against numpy's matmul on the same operands and the FMA peak for its flops."""
    from tensorplay import codegen, ir
    from tensorplay.codegen import gemm_kernel
    from tensorplay.ir import dtypes as dt
    from tensorplay.ir.types import TensorType

    n = 2 if args.quick else 64
    rng = np.random.default_rng(3)
    mm, ta, tb = ((1,), (0,)), ((0,), (0,)), ((1,), (1,))
    cases = []  # (name, lhs shape, rhs shape, contract): forward, then each layer's dW and dh
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        cases.append((f"fwd h{i} @ W{i + 1} ({n}x{a} @ {a}x{b})", (n, a), (a, b), mm))
    for i in range(len(sizes) - 1, 0, -1):
        a, b = sizes[i - 1], sizes[i]
        cases.append((f"dW{i} = h{i - 1}^T @ d{i} ({a}x{n} @ {n}x{b})", (n, a), (n, b), ta))
        if i > 1:
            cases.append((f"dh{i - 1} = d{i} @ W{i}^T ({n}x{b} @ {b}x{a})", (n, b), (a, b), tb))
    per_step = 2 * gemm_kernel.LANES * gemm_kernel.PEAK_ACCUMULATORS
    run, peak_flops, code = gemm_kernel.fma_peak_kernel(1 << 16)
    buf = np.full(16, 0.5, np.float32)
    peak = H.measure({"peak": lambda: (run(buf.ctypes.data), code)}, repeat=args.repeat, warmup=args.warmup,
                     sample_s=args.sample_s)["peak"]
    peak_gflops = peak_flops / peak.median / 1e9
    flops: dict[str, int] = {}
    suite = H.Suite(f"the MLP {'-'.join(map(str, sizes))} loss+grad's products one at a time (FMA peak "
                    f"{peak_gflops:.1f} GFLOP/s, {per_step} flops per step)", ref="numpy matmul (OpenBLAS)",
                    rtol=1e-4, atol=1e-3)
    suite.extra = {"GFLOP/s": lambda case, impl, t: f"{flops[case] / t.median / 1e9:.1f}",
                   "of FMA peak": lambda case, impl, t: f"{flops[case] / t.median / 1e9 / peak_gflops:.0%}"}
    for name, ls, rs, contract in cases:
        b = ir.GraphBuilder("product")
        x, y = b.add_input(TensorType(ls, dt.float32)), b.add_input(TensorType(rs, dt.float32))
        g = b.build([b.dot_general(x, y, contract=contract, batch=((), ()))])
        exe = codegen.compile_graph(g)
        xa = rng.standard_normal(ls).astype(np.float32)
        ya = rng.standard_normal(rs).astype(np.float32)
        out = np.empty(g.outputs[0].type.shape, np.float32)
        xo = xa.T if contract == ta else xa
        yo = ya.T if contract == tb else ya
        kind = "+".join(k["kind"] for k in exe.kernels)
        flops[name] = 2 * out.size * (xa.shape[0] if contract == ta else xa.shape[1])
        suite.run_case(name, [H.Impl("numpy matmul (OpenBLAS)", lambda: np.matmul(xo, yo, out=np.empty_like(out))),
                              H.Impl(f"tp compiled {kind}", lambda exe=exe, xa=xa, ya=ya, out=out: exe(xa, ya, out=[out])[0])],
                       args)
    return suite


def ensemble(args, jax, torch) -> list[H.Suite]:
    """The forward of k MLPs on one shared batch, vmapped over their stacked parameters, and the
    roofline of its first layer."""
    sizes, k, n = ([3, 4, 2], 2, 3) if args.quick else ([784, 128, 10], 10, 64)
    models = [M.init_mlp(sizes, seed=s) for s in range(k)]
    stacked = [(np.stack([p[i][0] for p in models]), np.stack([p[i][1] for p in models]))
               for i in range(len(sizes) - 1)]
    x, _ = M.batch(n, sizes[0], sizes[-1])
    T = M.tensorplay_fns()
    ps, xt = T.params(stacked), T.array(x)
    roof = roofline(args, x, stacked[0][0], T)
    ens_c = T.tp.compile(vmap(T.mlp, in_dims=(0, None)))
    impls = [H.Impl("numpy (loop over models)", lambda: np.stack([M.numpy_mlp(p, x) for p in models])),
             H.Impl("tp.compile(vmap)", lambda: ens_c(ps, xt))]
    if jax is not None:
        J = M.jax_fns(jax)
        jps, xj = J.params(stacked), J.array(x)
        jens = jax.jit(jax.vmap(J.mlp, in_axes=(0, None)))
        impls.append(H.Impl("jax.jit(vmap)", lambda: jens(jps, xj).block_until_ready()))
    if torch is not None:
        TO = M.torch_fns(torch)
        tps, xto = TO.params(stacked), torch.from_numpy(x)
        tens = torch.func.vmap(TO.mlp, in_dims=(0, None))

        def torch_ens():
            with torch.inference_mode():
                return tens(tps, xto)

        impls.append(H.Impl("torch.func.vmap", torch_ens))
    suite = H.Suite(f"ensemble of {k} MLPs {'-'.join(map(str, sizes))}, vmap over stacked params",
                    ref="numpy (loop over models)", rtol=1e-3, atol=1e-4)
    suite.extra = _flops_columns(2 * n * sum(a * b for a, b in zip(sizes, sizes[1:])) * k, roof)
    suite.run_case(f"batch {n}", impls, args)
    return [suite, roof]


if __name__ == "__main__":
    sys.exit(main())
