"""Benchmark: LSTM forward + backward (issue 14's target), one layer, float32.

    python -m tensorplay.tools.bench.bench_lstm [--seq 50 --batch 32 --hidden 128 --input 128]

The loss is ``sum(output ** 2)`` of a one-layer `nn.LSTM`; every implementation returns its
gradient with respect to the four parameters (weight_ih, weight_hh, bias_ih, bias_hh), from
the same weights and inputs:

- ``tp.compile(grad)``: `tp.compile` of `tensorplay.func.grad` of the loss through
  `nn.LSTM` (one `scan` forward, one `scan` backward);
- ``torch autograd``: torch's eager `nn.LSTM` with ``loss.backward()`` (the reference);
- ``jax.jit(grad)``: `jax.jit(jax.grad)` of the same cell written with `lax.scan`.
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tensorplay.tools.bench import _harness as H  # noqa: E402

import numpy as np  # noqa: E402

NAMES = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")


def pin_numpy_blas(threads: int) -> int | None:
    """Set the thread count of numpy's bundled OpenBLAS (which tensorplay's compiled gemm calls) and
    return the previous one; None if it cannot be found.

    The harness pins OpenBLAS through OPENBLAS_NUM_THREADS, but `python -m tensorplay.tools.bench...`
    imports tensorplay, hence numpy and its OpenBLAS, before the harness sets the variable; on a
    loaded 2-core machine an unpinned 2-thread gemm spins and made this benchmark's medians ~20x
    longer. So the pin is applied through OpenBLAS's own call."""
    import ctypes
    import glob

    root = os.path.dirname(np.__file__)
    for path in sorted(glob.glob(os.path.join(root + ".libs", "*openblas*")) +
                       glob.glob(os.path.join(root, ".libs", "*openblas*"))):
        lib = ctypes.CDLL(path)
        for suffix in ("64_", ""):
            setter = getattr(lib, f"scipy_openblas_set_num_threads{suffix}", None) or \
                getattr(lib, f"openblas_set_num_threads{suffix}", None)
            getter = getattr(lib, f"scipy_openblas_get_num_threads{suffix}", None) or \
                getattr(lib, f"openblas_get_num_threads{suffix}", None)
            if setter is not None and getter is not None:
                before = getter()
                setter(threads)
                return before
    return None


def weights(input_size: int, hidden: int, seed: int = 0) -> dict[str, np.ndarray]:
    """PyTorch's init: U(-1/sqrt(hidden), 1/sqrt(hidden)) for every parameter."""
    rng = np.random.default_rng(seed)
    bound = 1 / np.sqrt(hidden)
    shapes = {"weight_ih_l0": (4 * hidden, input_size), "weight_hh_l0": (4 * hidden, hidden),
              "bias_ih_l0": (4 * hidden,), "bias_hh_l0": (4 * hidden,)}
    return {k: rng.uniform(-bound, bound, s).astype(np.float32) for k, s in shapes.items()}


def tensorplay_grad(W: dict, input_size: int, hidden: int):
    """`tp.compile(grad(loss))` of nn.LSTM with the weights `W`; returns (fn of x -> gradients, tp.tensor)."""
    import tensorplay as tp
    from tensorplay import nn
    from tensorplay.func import functional_call, grad

    lstm = nn.LSTM(input_size, hidden)
    params = {k: tp.tensor(W[k]) for k in NAMES}

    def loss(p, x):
        out, _ = functional_call(lstm, p, (x,))
        return (out * out).sum()

    step = tp.compile(grad(loss))

    def run(x):
        grads = step(params, x)
        return [grads[k] for k in NAMES]

    return run, tp.tensor


def torch_autograd(torch, W: dict, input_size: int, hidden: int):
    lstm = torch.nn.LSTM(input_size, hidden)
    lstm.load_state_dict({k: torch.from_numpy(v) for k, v in W.items()})
    params = [getattr(lstm, k) for k in NAMES]

    def run(x):
        for p in params:
            p.grad = None
        out, _ = lstm(x)
        (out * out).sum().backward()
        return [p.grad for p in params]

    return run


def jax_grad(jax, W: dict):
    """`jax.jit(jax.grad)` of the same LSTM written with `lax.scan` (PyTorch's gate order i, f, g, o)."""
    jnp = jax.numpy

    def loss(p, x):
        w_ih, w_hh, b_ih, b_hh = (p[k] for k in NAMES)
        gx = x @ w_ih.T + (b_ih + b_hh)
        w_hh_t = w_hh.T
        zeros = jnp.zeros((x.shape[1], w_hh.shape[1]), x.dtype)

        def step(carry, g):
            h, c = carry
            i, f, gg, o = jnp.split(g + h @ w_hh_t, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(gg)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h

        _, ys = jax.lax.scan(step, (zeros, zeros), gx)
        return (ys * ys).sum()

    params = {k: jnp.asarray(v) for k, v in W.items()}
    step = jax.jit(jax.grad(loss))
    def run(x):
        grads = step(params, x)  # a dict: jax orders its keys, so pick them by name
        return jax.block_until_ready([grads[k] for k in NAMES])

    return run


def main(argv: list[str] | None = None) -> int:
    ap = H.parser(__doc__.splitlines()[0], repeat=15)
    ap.add_argument("--seq", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--hidden", type=int, default=None)
    ap.add_argument("--input", type=int, default=None, help="input features (default: = hidden)")
    args = H.parse(ap, argv)
    if H.THREADS:
        pin_numpy_blas(H.THREADS)
    seq, batch, hidden = args.seq or (4 if args.quick else 50), args.batch or (2 if args.quick else 32), \
        args.hidden or (3 if args.quick else 128)
    input_size = args.input or hidden
    H.header(f"LSTM forward + backward, float32: seq {seq}, batch {batch}, input {input_size}, hidden {hidden}",
             args)
    jax, torch = H.import_jax(), H.import_torch()
    W = weights(input_size, hidden)
    x = np.random.default_rng(1).standard_normal((seq, batch, input_size)).astype(np.float32)
    tp_step, to_tensor = tensorplay_grad(W, input_size, hidden)
    xt = to_tensor(x)
    impls = [H.Impl("tp.compile(grad)", lambda: tp_step(xt))]
    ref = "tp.compile(grad)"
    if torch is not None:
        torch_step, xto = torch_autograd(torch, W, input_size, hidden), torch.from_numpy(x)
        impls.append(H.Impl("torch autograd", lambda: torch_step(xto)))
        ref = "torch autograd"
    if jax is not None:
        jax_step, xj = jax_grad(jax, W), jax.numpy.asarray(x)
        impls.append(H.Impl("jax.jit(grad)", lambda: jax_step(xj)))
    suite = H.Suite("LSTM loss + grad w.r.t. the 4 parameters", ref=ref, rtol=2e-3, atol=2e-4)
    suite.run_case(f"T={seq} N={batch} H={hidden}", impls, args)
    return H.report([suite], args)


if __name__ == "__main__":
    sys.exit(main())
