"""Benchmark 7: the plain transforms (no `tp.compile`) against their compiled form and the peers.

    python -m tensorplay.tools.bench.bench_plain_transforms [--only jacrev hessian512 ...]

Every workload of issue 12, in one interleaved run (medians): per-sample gradients, an
ensemble's gradients, jacrev / jacfwd of a 3-layer tanh MLP R^64 -> R^64, the Hessian of
sum(tanh(W x)) (D = 128), the Hessian of tanh(W x): R^512 -> R^32, linearize + 32 `jvp_fn`
calls (tanh MLP R^256 -> R^256), and an MLP loss + gradient.

  tp (plain): the transform called directly, in a loop, as a torch.func user writes it (the
      function is traced on every call; the passes and the executable come from the cache);
  tp.compile: the same transform under `tp.compile` (the reference column);
  torch.func: the same transform, eager; jax.jit: the same transform under `jax.jit`.

The `vs torch.func` column is the plain call's median over torch.func's (target <= 0.5) and
`vs tp.compile` (the ref column) is the target <= 1.5.

`--phases` prints, after the tables, where each plain call's time goes (thread CPU time, median
of the samples, in this process): the argument signature, the trace of the user's function as the
call path makes it with its key, the entry lookup, the cached entry, its bare executable, and the
`tp.compile` call of the same transform (for linearize: the trace, the forward executable, the
residual copies, one `jvp_fn` call, its bare bound call and the native entry alone).
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402  (first: it pins every library's threads)
from tensorplay.tools.bench import _models as M  # noqa: E402

import numpy as np  # noqa: E402

from tensorplay.func import grad, hessian, jacfwd, jacrev, linearize, vmap  # noqa: E402

WORKLOADS = ("per_sample", "ensemble", "jacrev", "jacfwd", "hessian", "hessian512", "linearize", "mlp_grad")


def _stack(params_list):
    """Per-layer (W, b) of several models stacked along a new leading axis (numpy)."""
    return [(np.stack([p[i][0] for p in params_list]), np.stack([p[i][1] for p in params_list]))
            for i in range(len(params_list[0]))]


class Workloads:
    """Per workload: (case title, {implementation name: thunk}), built for the peers present."""

    def __init__(self, args, jax, torch):
        self.q = args.quick
        self.jax, self.torch = jax, torch
        self.T = M.tensorplay_fns("relu")
        self.Tt = M.tensorplay_fns("tanh")
        self.tp = self.T.tp
        if jax is not None:
            self.J, self.Jt = M.jax_fns(jax, "relu"), M.jax_fns(jax, "tanh")
        if torch is not None:
            self.TO, self.TOt = M.torch_fns(torch, "relu"), M.torch_fns(torch, "tanh")

    def case(self, name):
        self.target = None  # (transform wrapper, arguments, its tp.compile form) for `--phases`
        return getattr(self, name)()

    # -- each workload: (title, plain thunk, compiled thunk, jax thunk | None, torch thunk | None) --
    def per_sample(self):
        sizes, n = ([3, 2, 2], 3) if self.q else ([784, 128, 10], 64)
        P = M.init_mlp(sizes)
        x, y = M.batch(n, sizes[0], sizes[-1])
        T, tp = self.T, self.tp
        ps, xt, yt = T.params(P), T.array(x), T.array(y)
        fc = tp.compile(vmap(grad(T.loss1), in_dims=(None, 0, 0)))
        self.target = (vmap(grad(T.loss1), in_dims=(None, 0, 0)), (ps, xt, yt), fc)
        out = [f"per-sample grads MLP {'-'.join(map(str, sizes))} B={n}",
               lambda: vmap(grad(T.loss1), in_dims=(None, 0, 0))(ps, xt, yt), lambda: fc(ps, xt, yt)]
        out += self._peers(
            lambda jax, J: (lambda g, a, b, c: lambda: jax.block_until_ready(g(a, b, c)))(
                jax.jit(jax.vmap(jax.grad(J.loss1), in_axes=(None, 0, 0))), J.params(P), J.array(x), J.array(y)),
            lambda torch, TO: (lambda a, b, c: lambda: torch.func.vmap(torch.func.grad(TO.loss1),
                                                                       in_dims=(None, 0, 0))(a, b, c))(
                TO.params(P), torch.from_numpy(x), torch.from_numpy(y)))
        return out

    def ensemble(self):
        sizes, k, n = ([3, 2, 2], 2, 3) if self.q else ([32, 64, 10], 8, 32)
        Ps = _stack([M.init_mlp(sizes, seed=s) for s in range(k)])
        x, y = M.batch(n, sizes[0], sizes[-1])
        T, tp = self.T, self.tp
        ps, xt, yt = T.params(Ps), T.array(x), T.array(y)
        fc = tp.compile(vmap(grad(T.loss), in_dims=(0, None, None)))
        self.target = (vmap(grad(T.loss), in_dims=(0, None, None)), (ps, xt, yt), fc)
        out = [f"ensemble of {k} MLP {'-'.join(map(str, sizes))} grads, B={n}",
               lambda: vmap(grad(T.loss), in_dims=(0, None, None))(ps, xt, yt), lambda: fc(ps, xt, yt)]
        out += self._peers(
            lambda jax, J: (lambda g, a, b, c: lambda: jax.block_until_ready(g(a, b, c)))(
                jax.jit(jax.vmap(jax.grad(J.loss), in_axes=(0, None, None))), J.params(Ps), J.array(x), J.array(y)),
            lambda torch, TO: (lambda a, b, c: lambda: torch.func.vmap(torch.func.grad(TO.loss),
                                                                       in_dims=(0, None, None))(a, b, c))(
                TO.params(Ps), torch.from_numpy(x), torch.from_numpy(y)))
        return out

    def _jacobian(self, which):
        d = 3 if self.q else 64
        P = M.init_mlp([d, d, d, d], seed=d)
        x = M.batch(1, d, 2, seed=d)[0][0]
        Tt, tp = self.Tt, self.tp
        ps, xt = Tt.params(P), Tt.array(x)
        tp_tf = {"jacrev": jacrev, "jacfwd": jacfwd}[which]
        f = lambda x, ps: Tt.mlp(ps, x)  # noqa: E731
        fc = tp.compile(tp_tf(f))
        self.target = (tp_tf(f), (xt, ps), fc)
        out = [f"{which}, 3-layer tanh MLP R^{d}->R^{d}", lambda: tp_tf(f)(xt, ps), lambda: fc(xt, ps)]
        out += self._peers(
            lambda jax, J: (lambda g, a, b: lambda: g(a, b).block_until_ready())(
                jax.jit(getattr(jax, which)(lambda x, ps: J.mlp(ps, x))), J.array(x), J.params(P)),
            lambda torch, TO: (lambda a, b: lambda: getattr(torch.func, which)(lambda x, ps: TO.mlp(ps, x))(a, b))(
                torch.from_numpy(x), TO.params(P)), act="tanh")
        return out

    def jacrev(self):
        return self._jacobian("jacrev")

    def jacfwd(self):
        return self._jacobian("jacfwd")

    def _hessian(self, d_in, d_out, summed):
        rng = np.random.default_rng(3)
        w = (rng.standard_normal((d_out, d_in)) / np.sqrt(d_in)).astype(np.float32)
        x = rng.standard_normal(d_in).astype(np.float32)
        tp = self.tp
        wt, xt = tp.from_numpy(w), tp.from_numpy(x)
        f = (lambda x, w: tp.tanh(w @ x).sum()) if summed else (lambda x, w: tp.tanh(w @ x))
        fc = tp.compile(hessian(f))
        self.target = (hessian(f), (xt, wt), fc)
        title = f"hessian of sum(tanh(W x)), D={d_in}" if summed else f"hessian of tanh(W x), R^{d_in}->R^{d_out}"
        out = [title, lambda: hessian(f)(xt, wt), lambda: fc(xt, wt)]

        def jax_fn(jax, J):
            import jax.numpy as jnp
            g = (lambda x, w: jnp.tanh(w @ x).sum()) if summed else (lambda x, w: jnp.tanh(w @ x))
            h, a, b = jax.jit(jax.hessian(g)), jnp.asarray(x), jnp.asarray(w)
            return lambda: h(a, b).block_until_ready()

        def torch_fn(torch, TO):
            g = (lambda x, w: torch.tanh(w @ x).sum()) if summed else (lambda x, w: torch.tanh(w @ x))
            a, b = torch.from_numpy(x), torch.from_numpy(w)
            return lambda: torch.func.hessian(g)(a, b)

        return out + self._peers(jax_fn, torch_fn)

    def hessian(self):
        return self._hessian(3 if self.q else 128, 3 if self.q else 128, True)

    def hessian512(self):
        return self._hessian(4 if self.q else 512, 2 if self.q else 32, False)

    def linearize(self):
        d, calls = (3, 2) if self.q else (256, 32)
        P = M.init_mlp([d, d, d], seed=5)
        rng = np.random.default_rng(6)
        x = rng.standard_normal(d).astype(np.float32)
        ts = [rng.standard_normal(d).astype(np.float32) for _ in range(calls)]
        Tt, tp = self.Tt, self.tp
        ps, xt, tts = Tt.params(P), Tt.array(x), [Tt.array(t) for t in ts]

        def run(x, ps, *tangents):
            _, jvp_fn = linearize(lambda x: Tt.mlp(ps, x), x)
            return [jvp_fn(t) for t in tangents]

        fc = tp.compile(run)
        self.target = ("linearize", (lambda x: Tt.mlp(ps, x), xt, tts[0]), None)
        out = [f"linearize + {calls} jvp_fn, tanh MLP R^{d}->R^{d}", lambda: run(xt, ps, *tts),
               lambda: fc(xt, ps, *tts)]

        def jax_fn(jax, J):
            def jrun(x, ps, tangents):
                _, jvp_fn = jax.linearize(lambda x: J.mlp(ps, x), x)
                return [jvp_fn(t) for t in tangents]

            g, a, b, c = jax.jit(jrun), J.array(x), J.params(P), [J.array(t) for t in ts]
            return lambda: jax.block_until_ready(g(a, b, c))

        def torch_fn(torch, TO):
            a, b, c = torch.from_numpy(x), TO.params(P), [torch.from_numpy(t) for t in ts]

            def trun():
                _, jvp_fn = torch.func.linearize(lambda x: TO.mlp(b, x), a)
                return [jvp_fn(t) for t in c]

            return trun

        return out + self._peers(jax_fn, torch_fn, act="tanh")

    def mlp_grad(self):
        sizes, n = ([3, 2, 2], 3) if self.q else ([784, 256, 256, 10], 64)
        P = M.init_mlp(sizes)
        x, y = M.batch(n, sizes[0], sizes[-1])
        T, tp = self.T, self.tp
        ps, xt, yt = T.params(P), T.array(x), T.array(y)
        fc = tp.compile(grad(T.loss))
        self.target = (grad(T.loss), (ps, xt, yt), fc)
        out = [f"MLP {'-'.join(map(str, sizes))} loss+grad, B={n}", lambda: grad(T.loss)(ps, xt, yt),
               lambda: fc(ps, xt, yt)]
        out += self._peers(
            lambda jax, J: (lambda g, a, b, c: lambda: jax.block_until_ready(g(a, b, c)))(
                jax.jit(jax.grad(J.loss)), J.params(P), J.array(x), J.array(y)),
            lambda torch, TO: (lambda a, b, c: lambda: torch.func.grad(TO.loss)(a, b, c))(
                TO.params(P), torch.from_numpy(x), torch.from_numpy(y)))
        return out

    def _peers(self, jax_fn, torch_fn, act: str = "relu"):
        """The peers' thunks, built from their model namespaces for activation `act` (None if absent)."""
        j = jax_fn(self.jax, self.J if act == "relu" else self.Jt) if self.jax is not None else None
        t = torch_fn(self.torch, self.TO if act == "relu" else self.TOt) if self.torch is not None else None
        return [j, t]


def _timer(repeat: int, sample_s: float):
    """`time(fn)`: the median thread CPU time of one `fn()` call in microseconds (`repeat` samples
    of about `sample_s` each, the count per sample calibrated once)."""
    import time

    def time_it(fn) -> float:
        fn()
        n, t0 = 0, time.thread_time_ns()
        while n < 3 or time.thread_time_ns() - t0 < sample_s * 2e8:  # calibrate on a fifth of a sample
            fn()
            n += 1
        per = max((time.thread_time_ns() - t0) / n, 1.0)
        k = max(1, int(sample_s * 1e9 / per))
        samples = []
        for _ in range(repeat):
            t0 = time.thread_time_ns()
            for _ in range(k):
                fn()
            samples.append((time.thread_time_ns() - t0) / k / 1e3)
        samples.sort()
        return samples[len(samples) // 2]

    return time_it


def phases(target, time_it) -> list[tuple[str, float]]:
    """[(phase, us)] of one workload's plain call (see the module docstring): the pieces
    `_pipeline.call_outermost` runs, each timed alone on the state a repeated call sees."""
    from tensorplay._trace import trace_function
    from tensorplay.func import _ad, _pipeline as P

    wrapper, args, compiled = target
    if wrapper == "linearize":
        f, x, t = args

        def trace_linearized():  # the trace `_ad._linearize_plain` makes (a replay), released as on a hit
            sig, _, tkey, _, user = P.trace_standalone(_ad._LINEARIZE_SIGNATURES, f, (x,))
            P.release_hit(user, sig, tkey, f)

        # first, while no jvp_fn holds residual buffers: each call then reuses the dropped one's
        whole = time_it(lambda: linearize(f, x))
        (_, plan) = _ad._LAST_PLAN[0]
        closed = trace_function(f, (x,), None, transform="linearize", name="f")
        arrays = [a._data for a in [x] + closed.captures]
        outs = plan.forward(tuple(arrays))
        out = [("linearize", whole),
               ("trace", time_it(trace_linearized)),
               ("forward", time_it(lambda: plan.forward(tuple(arrays)))),
               ("residual copies", time_it(lambda: plan.residuals(outs, arrays)))]
        _, jvp_fn = linearize(f, x)
        residuals = plan.residuals(outs, arrays)
        bound = plan.bind(residuals)
        out += [("jvp_fn", time_it(lambda: jvp_fn(t))), ("bare bound call", time_it(lambda: bound(t._data)))]
        exe = plan.lin
        entry = getattr(exe, "_object_entry", None)
        if entry is not None:  # the compiled code alone: its fastcall entry on prepared arguments
            objs = (*residuals, t._data, np.empty(t._data.shape, t._data.dtype),
                    *([np.empty(exe.arena_bytes, np.uint8)] if exe.arena_bytes else []))
            out.append(("native entry", time_it(lambda: entry(*objs))))
        return out
    wrapper(*args)
    chain, user_fn = wrapper._tp_chain
    plan = P._PLANS[chain]
    sig, tensors = P._signature(plan, args, {}, plan.name)
    if sig.tree is False:  # (non-tensor leaves: the trace takes the arguments another way; not split)
        return [("plain call", time_it(lambda: wrapper(*args)))]
    name = getattr(user_fn, "__name__", None)
    per_sample = (lambda a, k: sig.mapped[:2]) if sig.mapped is not None else None

    def trace():  # the trace the plain call makes (`_pipeline._trace_call`), its trace freed as on a hit
        tkey, caps, user, _ = P._trace_call(chain, user_fn, args, {}, sig, tensors, per_sample, plan.name, name)
        P.release_hit(user, sig, tkey, user_fn)  # (as a hit does: the next call replays it)
        return tkey if tkey is not None else P._trace_key(user), caps

    tkey, caps = trace()
    entry = P._OUTERMOST.get((sig, tkey))
    out = [("plain call", time_it(lambda: wrapper(*args))),
           ("signature", time_it(lambda: P._signature(plan, args, {}, plan.name))),
           ("trace and its key", time_it(trace)),
           ("entry lookup", time_it(lambda: P._OUTERMOST.get((sig, tkey)))),
           ("entry", time_it(lambda: entry(tensors, caps)))]
    if entry.plain:
        arrays = tuple(t._data for t in tensors + list(caps))
        out.append(("bare executable", time_it(lambda: entry.call(arrays))))
    out.append(("tp.compile call", time_it(lambda: compiled(*args))))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=15)
    ap.add_argument("--only", nargs="+", default=None, choices=WORKLOADS)
    ap.add_argument("--phases", action="store_true", help="also split each plain call into its phases")
    args = H.parse(ap, argv)
    H.header("plain transforms vs tp.compile vs torch.func vs jax.jit, float32", args)
    jax, torch = H.import_jax(), H.import_torch()
    W = Workloads(args, jax, torch)
    suite = H.Suite("plain transforms", ref="tp.compile", check_ref="tp.compile", rtol=2e-3, atol=1e-4)

    def vs_torch(case, impl, timing):
        if impl != "tp (plain)":
            return ""
        for r in suite.rows:
            if r.case == case and r.impl == "torch.func" and r.timing is not None:
                return f"{timing.median / r.timing.median:.2f}x"
        return ""

    suite.extra["plain vs torch.func"] = vs_torch
    split = []
    for name in args.only or WORKLOADS:
        title, plain, compiled, jax_thunk, torch_thunk = W.case(name)
        if args.phases:
            split.append((title, W.target))
        impls = [H.Impl("tp (plain)", plain), H.Impl("tp.compile", compiled)]
        if jax_thunk is not None:
            impls.append(H.Impl("jax.jit", jax_thunk))
        if torch_thunk is not None:
            impls.append(H.Impl("torch.func", torch_thunk))
        suite.run_case(title, impls, args)
    status = H.report([suite], args)
    if split:
        time_it = _timer(args.repeat, args.sample_s)
        print("\n== phases of the plain call (thread CPU us, medians) ==")
        for title, target in split:
            print(f"{title}: " + ", ".join(f"{k} {v:.2f}" for k, v in phases(target, time_it)))
    return status


if __name__ == "__main__":
    sys.exit(main())
