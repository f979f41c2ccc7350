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

PARTS = ("forward", "grad", "ensemble")


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=21)
    ap.add_argument("--batches", type=int, nargs="+", default=None)
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="layer widths (default 784 256 256 10)")
    ap.add_argument("--only", nargs="+", choices=PARTS, default=PARTS, help="tables to run (default: all)")
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
        if "forward" in args.only:
            fwd.run_case(case, impls, args)
        bwd.ref = "jax.jit(grad)"
        if "grad" in args.only:
            bwd.run_case(case, gimpls, args)
    suites = [s for s, part in ((fwd, "forward"), (bwd, "grad")) if part in args.only]
    if "ensemble" in args.only:
        suites.append(ensemble(args, jax, torch))
    return H.report(suites, args)


def ensemble(args, jax, torch) -> H.Suite:
    """The forward of k MLPs on one shared batch, vmapped over their stacked parameters."""
    sizes, k, n = ([3, 4, 2], 2, 3) if args.quick else ([784, 128, 10], 10, 64)
    models = [M.init_mlp(sizes, seed=s) for s in range(k)]
    stacked = [(np.stack([p[i][0] for p in models]), np.stack([p[i][1] for p in models]))
               for i in range(len(sizes) - 1)]
    x, _ = M.batch(n, sizes[0], sizes[-1])
    T = M.tensorplay_fns()
    ps, xt = T.params(stacked), T.array(x)
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
    suite.run_case(f"batch {n}", impls, args)
    return suite


if __name__ == "__main__":
    sys.exit(main())
