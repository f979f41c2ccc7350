"""Benchmark 3: per-sample gradients of a small MLP, `vmap(grad(loss), in_dims=(None, 0, 0))`.

    python -m tensorplay.tools.bench.bench_per_sample_grads [--batches 64 256] [--sizes 32 128 128 10]

The per-example loss is the cross-entropy of one example (the torch.func tutorial form:
`cross_entropy(model(x[None]), y[None])`); the result is one gradient per example for
every parameter, shape (batch, *param.shape).

  `tp vmap(grad)` (plain transforms: trace + AD pass + batching pass every call, compiled
  code reused), `tp.compile(vmap(grad))`, `jax.jit(jax.vmap(jax.grad))` and
  `torch.func.vmap(torch.func.grad)` (eager, no compilation).
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402
from tensorplay.tools.bench import _models as M  # noqa: E402

from tensorplay.func import grad, vmap  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=21)
    ap.add_argument("--batches", type=int, nargs="+", default=None)
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="layer widths (default 32 128 128 10)")
    args = H.parse(ap, argv)
    batches = args.batches or ([3] if args.quick else [64, 256])
    sizes = args.sizes or ([3, 2, 2] if args.quick else [32, 128, 128, 10])
    H.header(f"per-sample gradients, MLP {'-'.join(map(str, sizes))} ReLU, float32", args)
    jax, torch = H.import_jax(), H.import_torch()
    P = M.init_mlp(sizes)
    T = M.tensorplay_fns()
    tp = T.tp
    tparams = T.params(P)
    psg = vmap(grad(T.loss1), in_dims=(None, 0, 0))
    psg_c = tp.compile(psg)
    if jax is not None:
        J = M.jax_fns(jax)
        jparams = J.params(P)
        jpsg = jax.jit(jax.vmap(jax.grad(J.loss1), in_axes=(None, 0, 0)))
    if torch is not None:
        TO = M.torch_fns(torch)
        toparams = TO.params(P)
        topsg = torch.func.vmap(torch.func.grad(TO.loss1), in_dims=(None, 0, 0))

    suite = H.Suite("per-sample gradients", ref="jax.jit(vmap(grad))", rtol=2e-3, atol=1e-5)
    for n in batches:
        x, y = M.batch(n, sizes[0], sizes[-1])
        xt, yt = T.array(x), T.array(y)
        impls = [H.Impl("tp vmap(grad) (plain)", lambda: psg(tparams, xt, yt)),
                 H.Impl("tp.compile(vmap(grad))", lambda: psg_c(tparams, xt, yt))]
        if jax is not None:
            xj, yj = J.array(x), J.array(y)
            impls.append(H.Impl("jax.jit(vmap(grad))", lambda: jax.block_until_ready(jpsg(jparams, xj, yj))))
        if torch is not None:
            xto, yto = torch.from_numpy(x), torch.from_numpy(y)
            impls.append(H.Impl("torch.func vmap(grad)", lambda: topsg(toparams, xto, yto)))
        suite.run_case(f"batch {n}", impls, args)
    return H.report([suite], args)


if __name__ == "__main__":
    sys.exit(main())
