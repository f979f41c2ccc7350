"""Benchmark 4: jacrev / jacfwd / hessian of a small tanh MLP with respect to its input.

    python -m tensorplay.tools.bench.bench_jacobians [--dims 16 64] [--hidden 64]

f(x, params) = MLP d-h-h-d (tanh) for jacrev and jacfwd (a d x d Jacobian);
g(x, params) = sum(f(x)^2) for the hessian (d x d). The parameters are an explicit
argument (not differentiated) for every framework, so none can fold them into constants.

  tensorplay: the plain transform (re-traced every call) and `tp.compile(transform)`;
  numpy: the closed form by hand (the hand-written peer of issue 15), e.g. the Jacobian
      ((W1 * s1) @ (W2 * s2) @ W3)^T with s = 1 - tanh^2 of each layer's pre-activation;
  jax: `jax.jit(jax.jacrev(f))`, ...; torch: `torch.func.jacrev(f)`, ... (eager).

A fourth table, `hessian_tanh`, is the Hessian of sum(tanh(W x)) for D in `--tanh-dims`
(W^T diag(tanh''(W x)) W by hand), the `hessian D=128` row of issue 15.
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402
from tensorplay.tools.bench import _models as M  # noqa: E402

import numpy as np  # noqa: E402

from tensorplay.func import hessian, jacfwd, jacrev  # noqa: E402

TRANSFORMS = ("jacrev", "jacfwd", "hessian")


def _forward(P, x):
    """The tanh MLP's layer outputs (h1, h2, y) for one input vector (numpy, row convention)."""
    (w1, b1), (w2, b2), (w3, b3) = P
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    return h1, h2, h2 @ w3 + b3


def numpy_jacobian(P, x):
    """d f / d x of the MLP d-h-h-d by hand: J = W3^T D2 W2^T D1 W1^T, D = diag(1 - tanh^2)."""
    (w1, _), (w2, _), (w3, _) = P
    h1, h2, _ = _forward(P, x)
    return (((w1 * (1 - h1 * h1)) @ (w2 * (1 - h2 * h2))) @ w3).T


def numpy_hessian(P, x):
    """The Hessian of g = sum(f(x)^2) by hand: 2 (J^T J + sum_k y_k d^2 y_k), the second term
    J2^T diag(v2 t2'') J2 + W1 diag(t1'' (W2 w)) W1^T with v2 = W3 y, w = v2 (1 - h2^2),
    J2 = d a2 / d x and tanh''(a) = -2 t (1 - t^2)."""
    (w1, _), (w2, _), (w3, _) = P
    h1, h2, y = _forward(P, x)
    s1, s2 = 1 - h1 * h1, 1 - h2 * h2
    j2 = ((w1 * s1) @ w2).T  # d a2 / d x, h x d
    jac = (w3.T * s2) @ j2
    v2 = w3 @ y
    w = v2 * s2
    second = (j2.T * (v2 * (-2 * h2 * s2))) @ j2 + (w1 * ((-2 * h1 * s1) * (w2 @ w))) @ w1.T
    return 2 * (jac.T @ jac + second)


def numpy_hessian_tanh(w, x):
    """The Hessian of sum(tanh(W x)) by hand: W^T diag(tanh''(W x)) W."""
    t = np.tanh(w @ x)
    return (w.T * (-2 * t * (1 - t * t))) @ w


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=21)
    ap.add_argument("--dims", type=int, nargs="+", default=None)
    ap.add_argument("--hidden", type=int, default=None)
    ap.add_argument("--tanh-dims", type=int, nargs="+", default=None,
                    help="D of the hessian_tanh table (default 128; none with --quick: 3)")
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
            closed = numpy_hessian if name == "hessian" else numpy_jacobian
            impls = [H.Impl(f"tp {name} (plain)", lambda: tp_tf[name](xt, tps)),
                     H.Impl(f"tp.compile({name})", lambda: tp_c[name](xt, tps)),
                     H.Impl("numpy (closed form)", lambda: closed(P, x))]
            if jax is not None:
                jps, xj = J.params(P), J.array(x)
                impls.append(H.Impl(f"jax.jit({name})", lambda: j_c[name](xj, jps).block_until_ready()))
            if torch is not None:
                tops, xto = TO.params(P), torch.from_numpy(x)
                impls.append(H.Impl(f"torch.func.{name}", lambda: to_tf[name](xto, tops)))
            suite.run_case(f"d={d}", impls, args)
    suites.append(_hessian_tanh(args, tp, jax, torch))
    return H.report(suites, args)


def _hessian_tanh(args, tp, jax, torch):
    """The table of the Hessian of sum(tanh(W x)) w.r.t. x, W of shape D x D."""
    suite = H.Suite("hessian_tanh", ref="numpy (closed form)", rtol=1e-3, atol=1e-5)
    for d in args.tanh_dims or ([3] if args.quick else [128]):
        rng = np.random.default_rng(3)
        w = (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32)
        x = rng.standard_normal(d).astype(np.float32)
        wt, xt = tp.from_numpy(w), tp.from_numpy(x)
        f = hessian(lambda x, w: tp.tanh(w @ x).sum())
        fc = tp.compile(f)
        impls = [H.Impl("numpy (closed form)", lambda: numpy_hessian_tanh(w, x)),
                 H.Impl("tp hessian (plain)", lambda: f(xt, wt)),
                 H.Impl("tp.compile(hessian)", lambda: fc(xt, wt))]
        if jax is not None:
            import jax.numpy as jnp
            hj, xj, wj = jax.jit(jax.hessian(lambda x, w: jnp.tanh(w @ x).sum())), jnp.asarray(x), jnp.asarray(w)
            impls.append(H.Impl("jax.jit(hessian)", lambda: hj(xj, wj).block_until_ready()))
        if torch is not None:
            ht, xo, wo = torch.func.hessian(lambda x, w: torch.tanh(w @ x).sum()), torch.from_numpy(x), torch.from_numpy(w)
            impls.append(H.Impl("torch.func.hessian", lambda: ht(xo, wo)))
        suite.run_case(f"D={d}", impls, args)
    return suite


if __name__ == "__main__":
    sys.exit(main())
