"""Benchmark 4: jacrev / jacfwd / hessian of a small tanh MLP with respect to its input.

    python -m tensorplay.tools.bench.bench_jacobians [--dims 16 64] [--hidden 64]

f(x, params) = MLP d-h-h-d (tanh) for jacrev and jacfwd (a d x d Jacobian);
g(x, params) = sum(f(x)^2) for the hessian (d x d). The parameters are an explicit
argument (not differentiated) for every framework, so none can fold them into constants.

  tensorplay: the plain transform (re-traced every call) and `tp.compile(transform)`;
  jax: `jax.jit(jax.jacrev(f))`, ...; torch: `torch.func.jacrev(f)`, ... (eager).
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402
from tensorplay.tools.bench import _models as M  # noqa: E402

from tensorplay.func import hessian, jacfwd, jacrev  # noqa: E402

TRANSFORMS = ("jacrev", "jacfwd", "hessian")


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=21)
    ap.add_argument("--dims", type=int, nargs="+", default=None)
    ap.add_argument("--hidden", type=int, default=None)
    args = H.parse(ap, argv)
    dims = args.dims or ([3] if args.quick else [16, 64])
    hidden = args.hidden or (2 if args.quick else 64)
    H.header(f"Jacobians and Hessian of an MLP d-{hidden}-{hidden}-d (tanh) w.r.t. x, float32", args)
    jax, torch = H.import_jax(), H.import_torch()
    T = M.tensorplay_fns("tanh")
    tp = T.tp
    tp_f = lambda x, ps: T.mlp(ps, x)  # noqa: E731
    tp_g = lambda x, ps: (T.mlp(ps, x) ** 2).sum()  # noqa: E731
    tp_tf = {"jacrev": jacrev(tp_f), "jacfwd": jacfwd(tp_f), "hessian": hessian(tp_g)}
    tp_c = {k: tp.compile(v) for k, v in tp_tf.items()}
    if jax is not None:
        J = M.jax_fns(jax, "tanh")
        j_f = lambda x, ps: J.mlp(ps, x)  # noqa: E731
        j_g = lambda x, ps: (J.mlp(ps, x) ** 2).sum()  # noqa: E731
        j_c = {"jacrev": jax.jit(jax.jacrev(j_f)), "jacfwd": jax.jit(jax.jacfwd(j_f)),
               "hessian": jax.jit(jax.hessian(j_g))}
    if torch is not None:
        TO = M.torch_fns(torch, "tanh")
        to_f = lambda x, ps: TO.mlp(ps, x)  # noqa: E731
        to_g = lambda x, ps: (TO.mlp(ps, x) ** 2).sum()  # noqa: E731
        to_tf = {"jacrev": torch.func.jacrev(to_f), "jacfwd": torch.func.jacfwd(to_f),
                 "hessian": torch.func.hessian(to_g)}

    suites = []
    for name in TRANSFORMS:
        suite = H.Suite(name, ref=f"jax.jit({name})", rtol=1e-3, atol=1e-5)
        suites.append(suite)
        for d in dims:
            P = M.init_mlp([d, hidden, hidden, d], seed=d)
            x = M.batch(1, d, 2, seed=d)[0][0]
            tps, xt = T.params(P), T.array(x)
            impls = [H.Impl(f"tp {name} (plain)", lambda: tp_tf[name](xt, tps)),
                     H.Impl(f"tp.compile({name})", lambda: tp_c[name](xt, tps))]
            if jax is not None:
                jps, xj = J.params(P), J.array(x)
                impls.append(H.Impl(f"jax.jit({name})", lambda: j_c[name](xj, jps).block_until_ready()))
            if torch is not None:
                tops, xto = TO.params(P), torch.from_numpy(x)
                impls.append(H.Impl(f"torch.func.{name}", lambda: to_tf[name](xto, tops)))
            suite.run_case(f"d={d}", impls, args)
    return H.report(suites, args)


if __name__ == "__main__":
    sys.exit(main())
