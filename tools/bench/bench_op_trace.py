"""Benchmark: the cost of one traced op under a plain `grad` (the op memos' hit paths).

    python -m tensorplay.tools.bench.bench_op_trace [--ops 32] [--repeat 15]

For each op (``x + y``, ``x @ w``, ``tanh(x)``, ``x + b`` broadcast, ``relu(x)``,
``F.cross_entropy``) a function applies it `--ops` times to the same operands and returns the
sum of the last result; the same function with no op (the sum alone) is the baseline. Per op:

  trace: the user's function traced as a plain `grad` call traces it (the arguments' signature
      taken once, `trace_function(..., flat=...)` as `_pipeline.call_outermost` calls it), the
      difference of the two functions over the op count: only the op's own tracing;
  plain grad: the whole `grad(f)(x, ...)` call (trace, key, lookup, executable), same difference;
  torch eager: the same ops run by torch (no autograd), same difference (the peer).

Thread CPU time, the variants of one op sampled round-robin; medians (and the minimum) of the
per-sample differences.
"""
from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402  (first: it pins every library's threads)

import numpy as np  # noqa: E402

import tensorplay as tp  # noqa: E402
import tensorplay.nn.functional as F  # noqa: E402
from tensorplay._trace import trace_function  # noqa: E402
from tensorplay.func import grad  # noqa: E402


def cases(rng):
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


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=15)
    ap.add_argument("--ops", type=int, default=32, help="ops per traced function (default 32)")
    ap.add_argument("--case", nargs="+", default=None, help="only the cases whose name contains one of these")
    args = H.parse(ap, argv)
    H.header("the cost of one traced op under a plain grad", args)
    torch = H.import_torch()
    rng = np.random.default_rng(0)
    n = 4 if args.quick else args.ops
    rows = []
    for name, op, arrays in cases(rng):
        if args.case and not any(c in name for c in args.case):
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
        s = sample(fns, args.repeat, args.sample_s)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
