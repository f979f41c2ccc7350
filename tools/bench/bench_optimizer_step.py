"""Benchmark: one Adam step over a small MLP's parameters (784-128-10 and 784-256-256-10).

    python -m tensorplay.tools.bench.bench_optimizer_step

tensorplay's `optim.Adam` updates every parameter of a group in one compiled executable by
default (`optim._fused`); ``foreach=False`` is the per-tensor path (one eager update rule per
parameter). The peers are torch's `torch.optim.Adam` on CPU: its default (the single-tensor
loop on CPU), ``foreach=True`` and ``fused=True``. Ratios are against torch's default. Before
timing, one step from the same state is checked against torch (parameters and both moments).
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402

import numpy as np  # noqa: E402

import tensorplay as tp  # noqa: E402
from tensorplay import optim  # noqa: E402


def shapes(widths):
    out = []
    for a, b in zip(widths, widths[1:]):
        out += [(b, a), (b,)]
    return out


def _check_against_torch(torch, arrays, grads) -> None:
    params = [tp.tensor(a) for a in arrays]
    opt = optim.Adam(params, lr=1e-3, weight_decay=1e-2)
    tparams = [torch.tensor(a, requires_grad=True) for a in arrays]
    topt = torch.optim.Adam(tparams, lr=1e-3, weight_decay=1e-2)
    for _ in range(3):
        opt.step([tp.tensor(g) for g in grads])
        for p, g in zip(tparams, grads):
            p.grad = torch.tensor(g)
        topt.step()
    for p, tpp in zip(params, tparams):
        np.testing.assert_allclose(p.numpy(), tpp.detach().numpy(), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(opt.state[p]["exp_avg_sq"].numpy(), topt.state[tpp]["exp_avg_sq"].numpy(),
                                   rtol=1e-5, atol=1e-12)


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=9)
    args = H.parse(ap, argv)
    H.header("Adam step over an MLP's parameters (float32)", args)
    torch = H.import_torch()
    suite = H.Suite("optimizer step", ref="torch Adam (default)" if torch is not None else "tp foreach=False",
                    unit="us")
    rng = np.random.default_rng(0)
    for widths in ([784, 128, 10], [784, 256, 256, 10]):
        arrays = [rng.standard_normal(s).astype(np.float32) * 0.05 for s in shapes(widths)]
        grads = [rng.standard_normal(s).astype(np.float32) * 0.01 for s in shapes(widths)]
        impls = []
        for name, kw in (("tp Adam (fused, default)", {}), ("tp foreach=False", {"foreach": False})):
            params = [tp.tensor(a) for a in arrays]
            opt = optim.Adam(params, lr=1e-3, **kw)
            tgrads = [tp.tensor(g) for g in grads]
            impls.append(H.Impl(name, lambda opt=opt, tgrads=tgrads: opt.step(tgrads), check=False))
        if torch is not None:
            _check_against_torch(torch, arrays, grads)
            for name, kw in (("torch Adam (default)", {}), ("torch foreach=True", {"foreach": True}),
                             ("torch fused=True", {"fused": True})):
                tparams = [torch.tensor(a, requires_grad=True) for a in arrays]
                for p, g in zip(tparams, grads):
                    p.grad = torch.tensor(g)
                try:
                    topt = torch.optim.Adam(tparams, lr=1e-3, **kw)
                    topt.step()
                except (RuntimeError, TypeError) as e:  # fused CPU Adam needs a recent torch
                    print(f"  {name}: not available ({str(e).splitlines()[0]})")
                    continue
                impls.append(H.Impl(name, topt.step, check=False))
        n = sum(int(np.prod(s)) for s in shapes(widths))
        suite.run_case(f"MLP {'-'.join(map(str, widths))} ({len(arrays)} tensors, {n} floats)", impls, args)
    return H.report([suite], args)


if __name__ == "__main__":
    sys.exit(main())
