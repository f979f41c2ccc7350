"""tensorplay fuzz reproducer: check 'jvp' on program seed 968.

float64 base [2, 0]; inputs a0:[1, 0]; ops norm

Failure: output 0: jvp vs finite differences: max abs error inf > tolerance 0.0001 (at (0, 0): got np.float64(nan), expected np.float64(0.0))

Run: python THIS_FILE  (exit status 1 while the failure stands, 0 once fixed)
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

import tensorplay as tp

LAYOUTS = ("contig", "transposed", "strided", "expanded")
FD_STEP = 1e-6       # central differences in float64: truncation ~h^2, rounding ~eps/h
FD_RTOL = 1e-5       # relative to the size of the terms of the directional derivative


class Mismatch(AssertionError):
    """A result that differs from its oracle beyond the tolerance."""


# ----------------------------------------------------------------------------------------------
# Inputs: literal arrays, made into tensors with a chosen memory layout
# ----------------------------------------------------------------------------------------------
def make_tensor(data: np.ndarray, layout: str):
    """A tensor equal to `data`, laid out as asked: contiguous, a transposed view, a strided
    slice (every other row of a bigger buffer) or an expanded view (stride 0 along size-1 dims)."""
    data = np.asarray(data)
    if layout == "contig" or data.ndim == 0:
        return tp.from_numpy(data.copy())
    if layout == "transposed" and data.ndim >= 2:
        return tp.from_numpy(np.ascontiguousarray(np.swapaxes(data, -1, -2))).transpose(-1, -2)
    if layout == "strided":
        big = np.zeros((2 * data.shape[0],) + data.shape[1:], data.dtype)
        big[::2] = data
        return tp.from_numpy(big)[::2]
    if layout == "expanded":
        small = data[tuple(slice(0, 1) if i == 0 else slice(None) for i in range(data.ndim))]
        if np.array_equal(np.broadcast_to(small, data.shape), data):
            return tp.from_numpy(np.ascontiguousarray(small)).expand(*data.shape)
    return tp.from_numpy(data.copy())


def case_tensors(case: dict, dtype: str | None = None) -> list:
    """Fresh input tensors of `case` (optionally cast to `dtype` first), in their layouts."""
    return [make_tensor(np.asarray(d, dtype or np.asarray(d).dtype), lay) for d, lay in case["inputs"]]


@contextlib.contextmanager
def backend(name: str):
    """Run the body with ``TENSORPLAY_BACKEND=name`` ('compiled' or 'interpreter')."""
    old = os.environ.get("TENSORPLAY_BACKEND")
    os.environ["TENSORPLAY_BACKEND"] = name
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TENSORPLAY_BACKEND", None)
        else:
            os.environ["TENSORPLAY_BACKEND"] = old


def as_tuple(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


# ----------------------------------------------------------------------------------------------
# numpy counterparts of composite ops (used by the programs' numpy versions)
# ----------------------------------------------------------------------------------------------
def np_softmax(x, d):
    e = np.exp(x - np.max(x, axis=d, keepdims=True))
    return e / np.sum(e, axis=d, keepdims=True)


def np_log_softmax(x, d):
    m = np.max(x, axis=d, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=d, keepdims=True))


def np_logsumexp(x, d):
    m = np.max(x, axis=d, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=d, keepdims=True))


def np_round(x):
    return np.round(x)  # half to even, as torch.round


def np_floor_divide(a, b):
    return np.floor_divide(a, b)


# ----------------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------------
def close(what: str, got, want, atol: float) -> None:
    """Raise `Mismatch` unless `got` and `want` have one shape and ``|got - want| <= atol``
    elementwise (exact equality for atol 0; NaN matches only NaN)."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        raise Mismatch(f"{what}: shape {got.shape}, expected {want.shape}")
    if got.size == 0:
        return
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        err = np.where(same, 0.0, np.abs(g - w))
    err = np.where(np.isnan(err), np.inf, err)
    worst = float(err.max())
    if worst > atol:
        i = np.unravel_index(int(np.argmax(err)), err.shape)
        raise Mismatch(f"{what}: max abs error {worst:.3g} > tolerance {atol:.3g} "
                       f"(at {tuple(int(k) for k in i)}: got {g[i]!r}, expected {w[i]!r})")


def _same_dtype(what: str, got, want) -> None:
    if got.dtype != want.dtype:
        raise Mismatch(f"{what}: dtype {got.dtype}, expected {want.dtype}")


# ----------------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------------
def check_eager_numpy(case: dict, program, numpy_program) -> None:
    """Eager tensorplay vs the program written in numpy (float64 or int64 arithmetic)."""
    wide = np.float64 if np.dtype(case["dtype"]).kind == "f" else np.int64
    got = as_tuple(program(*case_tensors(case)))
    want = as_tuple(numpy_program(*[np.asarray(d, wide) for d, _ in case["inputs"]]))
    if len(got) != len(want):
        raise Mismatch(f"eager returned {len(got)} outputs, numpy {len(want)}")
    for k, (g, w) in enumerate(zip(got, want)):
        close(f"output {k}: eager vs numpy", g.numpy(), w, case["atol"])


def _compiled_vs_eager(case: dict, program, which: str) -> None:
    eager = as_tuple(program(*case_tensors(case)))
    with backend(which):
        compiled = as_tuple(tp.compile(program)(*case_tensors(case)))
    if len(compiled) != len(eager):
        raise Mismatch(f"tp.compile ({which}) returned {len(compiled)} outputs, eager {len(eager)}")
    for k, (c, e) in enumerate(zip(compiled, eager)):
        _same_dtype(f"output {k}: tp.compile ({which}) vs eager", c, e)
        close(f"output {k}: tp.compile ({which}) vs eager", c.numpy(), e.numpy(), case["atol"])


def check_compiled(case: dict, program) -> None:
    """`tp.compile` on the native backend vs eager."""
    _compiled_vs_eager(case, program, "compiled")


def check_interpreter(case: dict, program) -> None:
    """`tp.compile` through the reference interpreter (the traced graph run by `ir.interpret`) vs eager."""
    _compiled_vs_eager(case, program, "interpreter")


def _weights(case: dict, outs) -> list:
    rng = np.random.default_rng(case["seed"] + 1)
    return [np.asarray(rng.standard_normal(np.shape(o))) for o in outs]


def _directions(case: dict) -> list[np.ndarray]:
    rng = np.random.default_rng(case["seed"] + 2)
    return [np.asarray(rng.standard_normal(np.shape(d))) for d, _ in case["inputs"]]


def _shifted(case: dict, dirs, t: float) -> list:
    return [make_tensor(np.asarray(d, np.float64) + t * v, lay) for (d, lay), v in zip(case["inputs"], dirs)]


def _fd(case: dict, fn, dirs) -> list[np.ndarray]:
    """Central differences of `fn` (returning a tuple of tensors) along `dirs`, in float64."""
    h = FD_STEP
    plus = as_tuple(fn(*_shifted(case, dirs, h)))
    minus = as_tuple(fn(*_shifted(case, dirs, -h)))
    return [(p.numpy() - m.numpy()) / (2 * h) for p, m in zip(plus, minus)]


def _fd_close(what: str, got: float, want: float, terms: float) -> None:
    tol = FD_RTOL * (terms + 1.0)
    if not abs(got - want) <= tol:
        raise Mismatch(f"{what}: {got!r} vs finite differences {want!r} (|diff| {abs(got - want):.3g} > {tol:.3g})")


def check_grad(case: dict, program) -> None:
    """`tp.func.grad` of a weighted sum of the outputs vs float64 central differences."""
    xs = case_tensors(case, "float64")
    ws = [tp.from_numpy(w) for w in _weights(case, as_tuple(program(*xs)))]

    def scalar(*args):
        total = None
        for o, w in zip(as_tuple(program(*args)), ws):
            s = (o * w).sum()
            total = s if total is None else total + s
        return (total,)

    dirs = _directions(case)
    with backend(case.get("backend", "interpreter")):
        grads = as_tuple(tp.func.grad(lambda *a: scalar(*a)[0], argnums=tuple(range(len(xs))))(*xs))
    terms = [g.numpy() * v for g, v in zip(grads, dirs)]
    analytic = float(sum(t.sum() for t in terms))
    fd = float(_fd(case, scalar, dirs)[0])
    _fd_close("grad . v", analytic, fd, float(sum(np.abs(t).sum() for t in terms)))


def check_jvp(case: dict, program) -> None:
    """`tp.func.jvp` vs float64 central differences, output by output."""
    xs = case_tensors(case, "float64")
    dirs = _directions(case)
    with backend(case.get("backend", "interpreter")):
        _, touts = tp.func.jvp(lambda *a: as_tuple(program(*a)), tuple(xs), tuple(tp.from_numpy(v) for v in dirs))
    fds = _fd(case, program, dirs)
    scale = 1.0 + max((float(np.abs(f).max()) for f in fds if f.size), default=0.0)
    for k, (t, f) in enumerate(zip(as_tuple(touts), fds)):
        close(f"output {k}: jvp vs finite differences", t.numpy(), f, FD_RTOL * scale * 10)


def check_vjp(case: dict, program) -> None:
    """`tp.func.vjp` pulled back along random cotangents vs finite differences:
    ``<ct, J v>`` (differences) equals ``<J^T ct, v>`` (vjp)."""
    xs = case_tensors(case, "float64")
    dirs = _directions(case)
    with backend(case.get("backend", "interpreter")):
        outs, pullback = tp.func.vjp(lambda *a: as_tuple(program(*a)), *xs)
        cts = _weights(case, outs)
        grads = as_tuple(pullback(tuple(tp.from_numpy(c) for c in cts)))
    terms = [g.numpy() * v for g, v in zip(grads, dirs)]
    analytic = float(sum(t.sum() for t in terms))
    fd_terms = [c * f for c, f in zip(cts, _fd(case, program, dirs))]
    fd = float(sum(t.sum() for t in fd_terms))
    _fd_close("<vjp(ct), v>", analytic, fd,
              float(sum(np.abs(t).sum() for t in terms)) + float(sum(np.abs(t).sum() for t in fd_terms)))


def check_vmap(case: dict, program) -> None:
    """`tp.func.vmap` over a batch vs a Python loop over the examples, stacked."""
    rng = np.random.default_rng(case["seed"] + 3)
    size = case.get("batch", 3)
    in_dims = tuple(case["in_dims"])
    batched = []
    for (d, _), dim in zip(case["inputs"], in_dims):
        d = np.asarray(d)
        if dim is None:
            batched.append(d)
        elif d.dtype.kind == "f":
            batched.append(np.asarray(rng.standard_normal((size,) + d.shape), d.dtype))
        else:
            batched.append(np.asarray(rng.integers(-5, 6, (size,) + d.shape), d.dtype))
    with backend(case.get("backend", "interpreter")):
        got = as_tuple(tp.func.vmap(program, in_dims=in_dims)(*[tp.from_numpy(b.copy()) for b in batched]))
    rows = []
    for i in range(size):
        args = [tp.from_numpy(np.array(b if dim is None else b[i])) for b, dim in zip(batched, in_dims)]
        rows.append([o.numpy() for o in as_tuple(program(*args))])
    for k, g in enumerate(got):
        want = np.stack([r[k] for r in rows])
        close(f"output {k}: vmap vs loop-and-stack", g.numpy(), want, case["atol"])


def check_unchanged(case: dict, program) -> None:
    """The caller's tensors hold their values after eager, compiled, vmap and grad calls."""
    xs = case_tensors(case)
    floating = np.dtype(case["dtype"]).kind == "f"
    program(*xs)
    tp.compile(program)(*xs)  # the native backend (the 'compiled' check compiled this graph already)
    with backend(case.get("backend", "interpreter")):
        tp.compile(program)(*xs)
        tp.func.vmap(lambda _, *a: program(*a), in_dims=(0,) + tuple(None for _ in xs))(tp.zeros(2), *xs)
        if floating:
            tp.func.grad(lambda *a: sum(o.sum() for o in as_tuple(program(*a))), argnums=0)(*xs)
    for i, ((d, _), x) in enumerate(zip(case["inputs"], xs)):
        close(f"input {i} after the calls", x.numpy(), np.asarray(d), 0.0)


CHECKS = {"eager": check_eager_numpy, "compiled": check_compiled, "interpreter": check_interpreter,
          "grad": check_grad, "jvp": check_jvp, "vjp": check_vjp, "vmap": check_vmap,
          "unchanged": check_unchanged}


def run_check(name: str, case: dict, program, numpy_program) -> None:
    """Run check `name` on `program` (and its numpy twin, for the 'eager' check)."""
    if name == "eager":
        return check_eager_numpy(case, program, numpy_program)
    return CHECKS[name](case, program)


# ----------------------------------------------------------------------------------------------
# The program
# ----------------------------------------------------------------------------------------------
def _imul_first(x):
    y = x.clone()
    y[..., :1].mul_(2)
    return y


def _np_imul_first(x):
    y = np.array(x, copy=True)
    y[..., :1] *= 2
    return y


def program(a0):
    v2 = tp.norm(a0, dim=-1, keepdim=True)
    return (v2, a0,)


def numpy_program(a0):
    v2 = np.sqrt(np.sum(a0 * a0, axis=-1, keepdims=True))
    return (v2, a0,)


CASE = {
    "inputs": [
        (np.array([[]], dtype='float64').reshape((1, 0)), 'contig'),
    ],
    'dtype': 'float64',
    'atol': 8.881784197001252e-15,
    'seed': 968,
    'in_dims': [0],
}


if __name__ == "__main__":
    import sys
    try:
        run_check('jvp', CASE, program, numpy_program)
    except Mismatch as e:
        print(f"MISMATCH: {e}")
        sys.exit(1)
    print("ok: check jvp passes")
