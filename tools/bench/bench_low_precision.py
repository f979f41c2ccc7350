"""Benchmark: float16 / bfloat16 storage (math in float32, one rounding per op) against torch.

    python -m tensorplay.tools.bench.bench_low_precision [--sizes 1e6] [--matmul 256 512]

Two suites. *Fused elementwise* `sin(x)*exp(-x*x)+tanh(x)` on 16-bit vectors: tensorplay
eager (each op widens to float32, computes, rounds back), `tp.compile` (one fused loop: 16-bit
loads widened in registers, a rounding after every op, 16-bit stores) and the same compiled
graph on float32 as the peer inside tensorplay, against torch eager in the same dtype (its CPU
kernels also compute in float32). *Matmul* n x n in bfloat16 and float16: tensorplay eager
(numpy float32 matmul of widened copies), `tp.compile` (cblas sgemm on float32 copies made in
the kernel, one rounding per output) against torch's matmul in the same dtype.
The ratio columns are relative to torch in the same dtype and size (lower is faster).
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402

import numpy as np  # noqa: E402

import tensorplay as tp  # noqa: E402


def expr_tp(x):
    return tp.sin(x) * tp.exp(-x * x) + tp.tanh(x)


def _low_dtypes():
    out = [("float16", tp.float16)]
    if hasattr(tp, "bfloat16"):
        out.append(("bfloat16", tp.bfloat16))
    return out


def elementwise_suite(sizes, args, torch):
    suite = H.Suite("sin(x)*exp(-x*x)+tanh(x), 16-bit floats", ref="torch eager", check_ref="tp eager",
                    rtol=2e-2, atol=2e-2)
    compiled = tp.compile(expr_tp)
    for n in sizes:
        x32 = (np.random.default_rng(0).standard_normal(n) * 3).astype(np.float32)
        for name, dtype in _low_dtypes():
            case = f"{name} n={n:.0e}".replace("e+0", "e")
            xt = tp.tensor(x32).to(dtype)
            x32t = tp.from_numpy(x32)
            impls = [H.Impl("tp eager", lambda: expr_tp(xt)),
                     H.Impl("tp.compile", lambda: compiled(xt)),
                     H.Impl("tp.compile float32", lambda: compiled(x32t), check=False, note="peer: same graph")]
            if torch is not None:
                xtorch = torch.from_numpy(x32).to(getattr(torch, name))

                def torch_eager():
                    with torch.inference_mode():
                        return torch.sin(xtorch) * torch.exp(-xtorch * xtorch) + torch.tanh(xtorch)
                impls.append(H.Impl("torch eager", torch_eager))
            suite.run_case(case, impls, args)
    return suite


def matmul_suite(sizes, args, torch):
    suite = H.Suite("matmul n x n, 16-bit floats", ref="torch", check_ref="tp eager", rtol=2e-2, atol=0.5)
    mm = tp.compile(lambda a, b: a @ b)
    for n in sizes:
        rng = np.random.default_rng(1)
        a32, b32 = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        for name, dtype in reversed(_low_dtypes()):
            case = f"{name} n={n}"
            a, b = tp.tensor(a32).to(dtype), tp.tensor(b32).to(dtype)
            impls = [H.Impl("tp eager", lambda: a @ b), H.Impl("tp.compile", lambda: mm(a, b))]
            if torch is not None:
                ta, tb = (torch.from_numpy(v).to(getattr(torch, name)) for v in (a32, b32))

                def torch_mm():
                    with torch.inference_mode():
                        return ta @ tb
                impls.append(H.Impl("torch", torch_mm))
            suite.run_case(case, impls, args)
    return suite


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=15)
    ap.add_argument("--sizes", type=float, nargs="+", default=None, help="elementwise vector lengths")
    ap.add_argument("--matmul", type=int, nargs="+", default=None, help="matmul sizes n (n x n @ n x n)")
    args = H.parse(ap, argv)
    sizes = [int(s) for s in (args.sizes or ([1e4] if args.quick else [1e6]))]
    msizes = args.matmul or ([64] if args.quick else [256, 512])
    H.header("float16 / bfloat16: fused elementwise and matmul", args)
    torch = H.import_torch()
    return H.report([elementwise_suite(sizes, args, torch), matmul_suite(msizes, args, torch)], args)


if __name__ == "__main__":
    sys.exit(main())
