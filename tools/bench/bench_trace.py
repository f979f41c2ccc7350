"""Benchmark: tracing cost per traced op (the tracing core's own speed).

    python -m tensorplay.tools.bench.bench_trace

Times `tensorplay._trace.trace_function` on three small programs (an elementwise chain, a
3-layer tanh MLP, a mix of slicing, reshapes and in-place writes) and divides by the number of
nodes in the traced graph. Peers in the same run: the same program run eagerly by tensorplay
(one numpy impl per op), and `jax.make_jaxpr` (JAX's tracer, per jaxpr equation) when JAX is
installed ("ops" for tensorplay eager is the traced graph's node count, for a like-for-like
per-op figure). "tp trace, call path" is the trace as a plain transform's call makes it: the
arguments flattened once (`flat=`), the transform's name, and the structural key the pipeline
cache looks up. The target is at most 10 us per traced op.

Then the cost of **one traced op under a plain `grad`** (the op memos' hit paths): for each op
(``x + y``, ``x @ w``, ``tanh(x)``, ``x + b`` broadcast, ``relu(x)``, ``F.cross_entropy``) a
function applies it `--ops` times to the same operands and returns the sum of the last result;
the same function with no op (the sum alone) is the baseline. Per op, the difference of the two
over the op count, in thread CPU time (the variants of one op sampled round-robin; medians and
minimum of the per-sample differences):

  tp trace (call path): the function traced as a plain `grad` call traces it (the arguments'
      signature taken once, `trace_function(..., flat=...)` as `_pipeline.call_outermost` does);
  tp plain grad: the whole `grad(f)(x, ...)` call (trace, key, lookup, executable);
  torch eager: the same ops run by torch, no autograd (the peer).
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402

import numpy as np  # noqa: E402

import time  # noqa: E402

import tensorplay as tp  # noqa: E402
import tensorplay.nn.functional as F  # noqa: E402
from tensorplay import _pytree  # noqa: E402
from tensorplay._trace import trace_function  # noqa: E402
from tensorplay.func import grad  # noqa: E402


def programs(m, n_chain: int):
    """(name, fn(x, ws), x shape) with the same meaning for tensorplay (m=tp) and jax.numpy (m=jnp)."""
    def chain(x, ws):
        for _ in range(n_chain):
            x = m.tanh(x * 1.01 + 0.1)
        return x.sum()

    def mlp(x, ws):
        for w in ws:
            x = m.tanh(w @ x)
        return (x * x).sum()

    def views(x, ws):
        y = x.reshape(8, 8)
        acc = y[0] * 0
        for i in range(1, 8):
            acc = acc + y[i, 1:].sum() * y[:, i]
        return acc.sum() + y.T[1:3].sum()

    return [("elementwise chain", chain), ("tanh MLP 64-64-64-64", mlp), ("slices and reshapes", views)]


def _graph_size(fn, x, ws) -> int:
    return len(trace_function(fn, (x, ws), transform="bench").graph.nodes)


def op_cases(rng):
    """(name, op(m, F, x, *rest) -> tensor, numpy arguments): the operands as the ensemble / MLP
    workloads have them (float32; the cross entropy's targets int64)."""
    f32 = np.float32
    return [
        ("x + y", lambda m, F, x, y: x + y, [rng.standard_normal(64).astype(f32), rng.standard_normal(64).astype(f32)]),
        ("x @ w", lambda m, F, x, w: x @ w,
         [rng.standard_normal(64).astype(f32), rng.standard_normal((64, 64)).astype(f32)]),
        ("tanh(x)", lambda m, F, x: m.tanh(x), [rng.standard_normal(64).astype(f32)]),
        ("x + b (broadcast)", lambda m, F, x, b: x + b,
         [rng.standard_normal((32, 64)).astype(f32), rng.standard_normal(64).astype(f32)]),
        ("relu(x)", lambda m, F, x: m.relu(x), [rng.standard_normal((32, 64)).astype(f32)]),
        ("F.cross_entropy", lambda m, F, x, t: F.cross_entropy(x, t),
         [rng.standard_normal((32, 10)).astype(f32), rng.integers(0, 10, 32)]),
    ]


def repeated(op, m, F, n: int):
    """A function of the op's operands applying `op` `n` times and returning the last result's sum
    (the first operand's sum for n = 0)."""
    def f(*args):
        out = args[0]
        for _ in range(n):
            out = op(m, F, *args)
        return out.sum()
    return f


def call_path_trace(wrapper, args):
    """A thunk tracing `wrapper`'s user function as its plain call does (see the module docstring)."""
    from tensorplay.func import _pipeline as P

    wrapper(*args)
    chain, user_fn = wrapper._tp_chain
    plan = P._PLANS[chain]
    sig, tensors = P._signature(plan, args, {}, plan.name)
    flat = (tensors, sig.tree) if sig.types is None else (tensors, sig.tree, sig.types)
    name = getattr(user_fn, "__name__", None)
    return lambda: trace_function(user_fn, args, {}, transform=plan.name, name=name, flat=flat)


def sample(fns: dict, repeat: int, sample_s: float) -> dict:
    """{name: [us per call]} in `repeat` round-robin samples of about `sample_s` each (thread CPU)."""
    counts = {}
    for k, fn in fns.items():
        fn()
        n, t0 = 0, time.thread_time_ns()
        while n < 3 or time.thread_time_ns() - t0 < sample_s * 2e8:
            fn()
            n += 1
        counts[k] = max(1, int(sample_s * 1e9 * n / max(time.thread_time_ns() - t0, 1)))
    out = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            c = counts[k]
            t0 = time.thread_time_ns()
            for _ in range(c):
                fn()
            out[k].append((time.thread_time_ns() - t0) / c / 1e3)
    return out


def op_costs(args) -> None:
    """The per-op table (see the module docstring: "one traced op under a plain grad")."""
    torch = H.import_torch()
    rng = np.random.default_rng(0)
    n = 4 if args.quick else args.ops
    repeat = 3 if args.quick else args.repeat
    rows = []
    for name, op, arrays in op_cases(rng):
        if args.op_case and not any(c in name for c in args.op_case):
            continue
        targs = tuple(tp.from_numpy(a) for a in arrays)
        f0, fn = repeated(op, tp, F, 0), repeated(op, tp, F, n)
        g0, gn = grad(f0), grad(fn)
        fns = {"trace 0": call_path_trace(g0, targs), "trace n": call_path_trace(gn, targs),
               "plain 0": lambda: g0(*targs), "plain n": lambda: gn(*targs)}
        if torch is not None:
            import torch.nn.functional as TF

            oargs = tuple(torch.from_numpy(a) for a in arrays)
            t0_, tn_ = repeated(op, torch, TF, 0), repeated(op, torch, TF, n)
            fns["torch 0"], fns["torch n"] = (lambda: t0_(*oargs)), (lambda: tn_(*oargs))
        s = sample(fns, repeat, args.sample_s)
        for impl in ("trace", "plain", "torch"):
            if f"{impl} 0" not in s:
                continue
            d = sorted((b - a) / n for a, b in zip(s[f"{impl} 0"], s[f"{impl} n"]))
            rows.append((name, {"trace": "tp trace (call path)", "plain": "tp plain grad",
                                "torch": "torch eager"}[impl], d[len(d) // 2], d[0]))
    title = f"the cost of one traced op under a plain grad ({n} ops per function; thread CPU us per op)"
    print(f"\n== {title} ==")
    print(f"{'op':<20}{'impl':<24}{'median us/op':>14}{'min us/op':>11}{'vs torch':>10}")
    peer = {r[0]: r[2] for r in rows if r[1] == "torch eager"}
    for r in rows:
        ratio = f"{r[2] / peer[r[0]]:.2f}x" if r[0] in peer and r[1] != "torch eager" else ""
        print(f"{r[0]:<20}{r[1]:<24}{r[2]:>14.2f}{r[3]:>11.2f}{ratio:>10}")


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=15)
    ap.add_argument("--chain", type=int, default=100, help="ops in the elementwise chain (default 100)")
    ap.add_argument("--ops", type=int, default=32, help="ops per function in the per-op table (default 32)")
    ap.add_argument("--op-case", nargs="+", default=None, help="per-op table: only ops whose name contains one of these")
    ap.add_argument("--no-programs", action="store_true", help="only the per-op table")
    args = H.parse(ap, argv)
    H.header("tracing cost per traced op", args)
    jax = H.import_jax()
    rng = np.random.default_rng(0)
    n_chain = 10 if args.quick else args.chain
    x_np = rng.standard_normal(64).astype(np.float32)
    ws_np = [rng.standard_normal((64, 64)).astype(np.float32) / 8 for _ in range(3)]
    x, ws = tp.from_numpy(x_np), [tp.from_numpy(w) for w in ws_np]
    if args.no_programs:
        op_costs(args)
        return 0
    rows = []
    jprogs = None
    if jax is not None:
        import jax.numpy as jnp

        jprogs = programs(jnp, n_chain)
    for k, (name, fn) in enumerate(programs(tp, n_chain)):
        nodes = _graph_size(fn, x, ws)
        flat = _pytree.tree_flatten(((x, ws), {}))
        fns = {"tp trace": lambda fn=fn: trace_function(fn, (x, ws), transform="bench"),
               "tp trace, call path": lambda fn=fn: trace_function(
                   fn, (x, ws), transform="jacrev", flat=flat).structural_key(),
               "tp eager": lambda fn=fn: fn(x, ws)}
        counts = {"tp trace": nodes, "tp trace, call path": nodes, "tp eager": nodes}
        if jprogs is not None:
            jfn = jprogs[k][1]
            jx, jws = jnp.asarray(x_np), [jnp.asarray(w) for w in ws_np]
            fns["jax.make_jaxpr"] = lambda jfn=jfn: jax.make_jaxpr(jfn)(jx, jws)
            counts["jax.make_jaxpr"] = len(jax.make_jaxpr(jfn)(jx, jws).jaxpr.eqns)
        timings = H.measure(fns, args.repeat, args.warmup, args.sample_s)
        base = timings["tp trace"].median / counts["tp trace"]
        for impl, t in timings.items():
            per_op = t.median / counts[impl]
            rows.append((name, impl, counts[impl], t.median * 1e6, per_op * 1e6, t.best / counts[impl] * 1e6,
                         per_op / base))
    head = ("program", "impl", "ops", "median us/call", "median us/op", "min us/op", "vs tp trace")
    title = "tracing cost per traced op"
    print(f"\n## {title}\n" if args.markdown else f"\n== {title} ==")  # the section style of H.report
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.0f} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.2f}x |")
    else:
        print(f"{head[0]:<24}{head[1]:<22}{head[2]:>6}{head[3]:>16}{head[4]:>14}{head[5]:>11}{head[6]:>13}")
        for r in rows:
            print(f"{r[0]:<24}{r[1]:<22}{r[2]:>6}{r[3]:>16.0f}{r[4]:>14.2f}{r[5]:>11.2f}{r[6]:>12.2f}x")
    op_costs(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
