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
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402

import numpy as np  # noqa: E402

import tensorplay as tp  # noqa: E402
from tensorplay import _pytree  # noqa: E402
from tensorplay._trace import trace_function  # noqa: E402


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


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=15)
    ap.add_argument("--chain", type=int, default=100, help="ops in the elementwise chain (default 100)")
    args = H.parse(ap, argv)
    H.header("tracing cost per traced op", args)
    jax = H.import_jax()
    rng = np.random.default_rng(0)
    n_chain = 10 if args.quick else args.chain
    x_np = rng.standard_normal(64).astype(np.float32)
    ws_np = [rng.standard_normal((64, 64)).astype(np.float32) / 8 for _ in range(3)]
    x, ws = tp.from_numpy(x_np), [tp.from_numpy(w) for w in ws_np]
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
