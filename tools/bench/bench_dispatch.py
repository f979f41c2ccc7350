"""Benchmark 5: eager dispatch overhead per op on tiny float32 tensors.

    python -m tensorplay.tools.bench.bench_dispatch

Each op runs on tensors so small (8 elements, 8x8 for matmul and the broadcast bias add) that the time is almost
entirely the per-call cost of the Python/C++ dispatch path: tensorplay eager (Tensor ->
primitive -> numpy impl -> Tensor), numpy, torch eager and jax eager (`jax.numpy`
without jit: one XLA dispatch per op). Ratios are against numpy (the floor tensorplay's
eager mode sits on).
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402

import numpy as np  # noqa: E402

import tensorplay as tp  # noqa: E402


def ops(m):
    """(op name, callable of (x, y, a, b, idx)) with the same meaning in every framework `m`."""
    if m == "torch":
        import torch
        return [("x + y", lambda x, y, a, b, i: x + y), ("sin(x)", lambda x, y, a, b, i: torch.sin(x)),
                ("x.sum()", lambda x, y, a, b, i: x.sum()), ("a @ b (8x8)", lambda x, y, a, b, i: a @ b),
                ("a + x (8x8 + 8)", lambda x, y, a, b, i: a + x),
                ("x[1:5]", lambda x, y, a, b, i: x[1:5]), ("a[2]", lambda x, y, a, b, i: a[2]),
                ("x[idx]", lambda x, y, a, b, i: x[i]),
                ("x * 2 + 1", lambda x, y, a, b, i: x * 2 + 1),
                ("5-op chain", lambda x, y, a, b, i: (torch.sin(x) * y + x).exp().sum())]
    if m == "jax":
        import jax.numpy as jnp
        return [("x + y", lambda x, y, a, b, i: x + y), ("sin(x)", lambda x, y, a, b, i: jnp.sin(x)),
                ("x.sum()", lambda x, y, a, b, i: x.sum()), ("a @ b (8x8)", lambda x, y, a, b, i: a @ b),
                ("a + x (8x8 + 8)", lambda x, y, a, b, i: a + x),
                ("x[1:5]", lambda x, y, a, b, i: x[1:5]), ("a[2]", lambda x, y, a, b, i: a[2]),
                ("x[idx]", lambda x, y, a, b, i: x[i]),
                ("x * 2 + 1", lambda x, y, a, b, i: x * 2 + 1),
                ("5-op chain", lambda x, y, a, b, i: jnp.exp(jnp.sin(x) * y + x).sum())]
    sin = np.sin if m == "numpy" else tp.sin
    exp = np.exp if m == "numpy" else tp.exp
    return [("x + y", lambda x, y, a, b, i: x + y), ("sin(x)", lambda x, y, a, b, i: sin(x)),
            ("x.sum()", lambda x, y, a, b, i: x.sum()), ("a @ b (8x8)", lambda x, y, a, b, i: a @ b),
            ("a + x (8x8 + 8)", lambda x, y, a, b, i: a + x),
            ("x[1:5]", lambda x, y, a, b, i: x[1:5]), ("a[2]", lambda x, y, a, b, i: a[2]),
            ("x[idx]", lambda x, y, a, b, i: x[i]),
            ("x * 2 + 1", lambda x, y, a, b, i: x * 2 + 1),
            ("5-op chain", lambda x, y, a, b, i: exp(sin(x) * y + x).sum())]


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=9)
    args = H.parse(ap, argv)
    H.header("eager dispatch overhead per op, tiny float32 tensors", args)
    jax, torch = H.import_jax(), H.import_torch()
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    a, b = rng.standard_normal((8, 8)).astype(np.float32), rng.standard_normal((8, 8)).astype(np.float32)
    idx = np.array([0, 3, 5], dtype=np.int64)
    frameworks = {"numpy": (ops("numpy"), (x, y, a, b, idx)),
                  "tp eager": (ops("tp"), tuple(tp.from_numpy(v) for v in (x, y, a, b, idx)))}
    if torch is not None:
        frameworks["torch eager"] = (ops("torch"), tuple(torch.from_numpy(v) for v in (x, y, a, b, idx)))
    if jax is not None:
        import jax.numpy as jnp
        frameworks["jax eager (no jit)"] = (ops("jax"), tuple(jnp.asarray(v) for v in (x, y, a, b, idx)))
    suite = H.Suite("eager op latency", ref="numpy", rtol=1e-5, atol=1e-6, unit="us")
    names = [n for n, _ in ops("numpy")]
    for k, op_name in enumerate(names):
        impls = []
        for fw, (table, operands) in frameworks.items():
            fn = table[k][1]
            impls.append(H.Impl(fw, lambda fn=fn, operands=operands: fn(*operands)))
        suite.run_case(op_name, impls, args)
    return H.report([suite], args)


if __name__ == "__main__":
    sys.exit(main())
