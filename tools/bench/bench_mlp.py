"""Benchmark 2: MLP 784-256-256-10 (ReLU) forward, and mean cross-entropy loss + gradient.

    python -m tensorplay.tools.bench.bench_mlp [--batches 64 1024]

forward: numpy, tensorplay eager, `tp.compile`, `jax.jit`, torch eager (inference mode).
loss+grad (gradient w.r.t. all six parameter tensors):
  `tp grad` (the plain transform: re-traces and re-runs the AD pass every call, reuses
  the compiled code), `tp.compile(grad(loss))`, `jax.jit(jax.grad(loss))`,
  `torch.func.grad(loss)` and classic torch autograd (`loss.backward()`).
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402
from tensorplay.tools.bench import _models as M  # noqa: E402

from tensorplay.func import grad  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=21)
    ap.add_argument("--batches", type=int, nargs="+", default=None)
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="layer widths (default 784 256 256 10)")
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
        fwd.run_case(case, impls, args)
        bwd.ref = "jax.jit(grad)"
        bwd.run_case(case, gimpls, args)
    return H.report([fwd, bwd], args)


if __name__ == "__main__":
    sys.exit(main())
