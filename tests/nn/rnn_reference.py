"""A numpy-by-hand oracle for the recurrent layers: PyTorch's equations, one Python loop per time step.

Shared by tests/nn/test_rnn*.py; it is an oracle only (the library runs one `scan` per layer and direction).
"""
from __future__ import annotations

import numpy as np

import tensorplay as tp


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def cell_step(mode: str, x, state, p: dict):
    """One step of a cell with parameters `p` (numpy arrays, keys weight_ih, weight_hh, bias_ih, bias_hh,
    weight_hr); `state` is (h,) or (h, c). Returns the new state."""
    zero = np.zeros(p["weight_ih"].shape[0])
    b_ih, b_hh = p.get("bias_ih", zero), p.get("bias_hh", zero)
    gx = x @ p["weight_ih"].T + b_ih
    gh = state[0] @ p["weight_hh"].T + b_hh
    if mode in ("RNN_TANH", "RNN_RELU"):
        pre = gx + gh
        return (np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0),)
    if mode == "LSTM":
        i, f, g, o = np.split(gx + gh, 4, axis=-1)
        c = sigmoid(f) * state[1] + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        if "weight_hr" in p:
            h = h @ p["weight_hr"].T
        return h, c
    xr, xz, xn = np.split(gx, 3, axis=-1)
    hr, hz, hn = np.split(gh, 3, axis=-1)
    r, z = sigmoid(xr + hr), sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    return ((1 - z) * n + z * state[0],)


def params_of(module, layer: int, direction: int) -> dict:
    suffix = f"_l{layer}" + ("_reverse" if direction else "")
    out = {}
    for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"):
        if hasattr(module, kind + suffix):
            out[kind] = getattr(module, kind + suffix).numpy().astype(np.float64)
    return out


def sequence_forward(module, x: np.ndarray, states=None):
    """The layer's forward in numpy: x as the module takes it; states a tuple of arrays (h0[, c0]) or None.

    Returns (output, final states tuple) shaped as the module returns them."""
    mode, L, D = module.mode, module.num_layers, 2 if module.bidirectional else 1
    batched = x.ndim == 3
    if not batched:
        x = x[:, None]
        states = None if states is None else tuple(s[:, None] for s in states)
    elif module.batch_first:
        x = x.transpose(1, 0, 2)
    T, N = x.shape[:2]
    h_size = module.proj_size or module.hidden_size
    if states is None:
        states = (np.zeros((L * D, N, h_size)),) + ((np.zeros((L * D, N, module.hidden_size)),) if mode == "LSTM"
                                                     else ())
    finals = [[] for _ in states]
    for layer in range(L):
        outs = []
        for d in range(D):
            p = params_of(module, layer, d)
            state = tuple(s[layer * D + d] for s in states)
            ys = [None] * T
            for t in (range(T - 1, -1, -1) if d else range(T)):
                state = cell_step(mode, x[t], state, p)
                ys[t] = state[0]
            outs.append(np.stack(ys))
            for f, s in zip(finals, state):
                f.append(s)
        x = np.concatenate(outs, -1)
    finals = tuple(np.stack(f) for f in finals)
    if not batched:
        return x[:, 0], tuple(f[:, 0] for f in finals)
    if module.batch_first:
        x = x.transpose(1, 0, 2)
    return x, finals


def as_numpy_state(hx):
    if hx is None:
        return None
    return tuple(np.asarray(h.numpy(), np.float64) for h in (hx if isinstance(hx, tuple) else (hx,)))


def module_outputs(out):
    """(output, states tuple) as numpy from a module's (output, h_n) or (output, (h_n, c_n))."""
    output, h = out
    states = h if isinstance(h, tuple) else (h,)
    return output.numpy(), tuple(s.numpy() for s in states)


def rand(rng, *shape, dtype=np.float64):
    return tp.tensor(rng.standard_normal(shape).astype(dtype))
