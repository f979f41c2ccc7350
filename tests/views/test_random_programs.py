"""Random aliasing programs: a chain of view ops, a write into the last view, reads of the base
and of another view. Eager tensorplay must match numpy (and torch when importable), and
`tp.compile` must match eager, results and caller-visible state alike.

Also checks the stride model that decides whether a traced reshape is a view (`_layout.reshape_strides`)
against numpy on random strided arrays.
"""
import numpy as np
from hypothesis import given, settings, strategies as st

import tensorplay as tp
from tensorplay import _layout

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


# --- the stride model against numpy ----------------------------------------------------------------
def _factorizations(n: int, parts: int):
    if parts == 1:
        return [(n,)]
    out = []
    for d in range(1, n + 1):
        if n % d == 0:
            out += [(d,) + rest for rest in _factorizations(n // d, parts - 1)]
    return out


@st.composite
def strided_arrays(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    if draw(st.booleans()):
        a = a.transpose(draw(st.permutations(range(a.ndim))))
    key = tuple(slice(draw(st.integers(0, d - 1)), None, draw(st.integers(1, 2))) for d in a.shape)
    a = a[key]
    n = a.size
    new = draw(st.sampled_from(_factorizations(n, draw(st.integers(1, 4)))))
    return a, new


@given(strided_arrays())
@settings(max_examples=200)
def test_reshape_stride_model_matches_numpy(case):
    a, new = case
    item = a.itemsize
    strides = tuple(s // item for s in a.strides)
    got = _layout.reshape_strides(a.shape, strides, new)
    r = a.reshape(new)
    is_view = np.shares_memory(r, a) or r.size <= 1 and r.base is not None
    assert (got is not None) == is_view, (a.shape, strides, new)
    if got is not None and r.size > 1:
        assert tuple(s // item for s, d in zip(r.strides, r.shape) if d > 1) == \
            tuple(s for s, d in zip(got, new) if d > 1)


# --- random programs -------------------------------------------------------------------------------
@st.composite
def view_step(draw, shape):
    """One view op applicable to a tensor of `shape`: (label, torch-API fn, numpy fn, new shape)."""
    nd = len(shape)
    kinds = ["index", "permute", "unsqueeze", "reshape", "narrow"]
    if nd >= 2:
        kinds += ["diagonal", "transpose"]
    if any(d == 1 for d in shape):
        kinds += ["squeeze"]
    kind = draw(st.sampled_from(kinds))
    if kind == "index" and nd:
        key = []
        for d in shape:
            c = draw(st.integers(0, 2))
            if c == 0 and d > 0:
                key.append(draw(st.integers(-d, d - 1)))
            elif c == 1 and d > 0:
                start = draw(st.integers(0, d - 1))
                key.append(slice(start, draw(st.integers(start, d)), draw(st.integers(1, 3))))
            else:
                key.append(slice(None))
        key = tuple(key)
        return (f"[{key}]", lambda t: t[key], lambda a: a[key + (Ellipsis,)], np.zeros(shape)[key + (Ellipsis,)].shape)
    if kind == "permute" and nd:
        perm = tuple(draw(st.permutations(range(nd))))
        return (f"permute{perm}", lambda t: t.permute(*perm), lambda a: a.transpose(perm),
                tuple(shape[p] for p in perm))
    if kind == "transpose":
        i, j = draw(st.integers(0, nd - 1)), draw(st.integers(0, nd - 1))
        out = list(shape)
        out[i], out[j] = out[j], out[i]
        return (f"transpose{(i, j)}", lambda t: t.transpose(i, j), lambda a: a.swapaxes(i, j), tuple(out))
    if kind == "squeeze":
        d = draw(st.sampled_from([i for i, s in enumerate(shape) if s == 1]))
        return (f"squeeze({d})", lambda t: t.squeeze(d), lambda a: a.squeeze(d), shape[:d] + shape[d + 1:])
    if kind == "narrow" and nd and all(shape):
        d = draw(st.integers(0, nd - 1))
        start = draw(st.integers(0, shape[d] - 1))
        length = draw(st.integers(0, shape[d] - start))
        out = list(shape)
        out[d] = length
        key = (slice(None),) * d + (slice(start, start + length),)
        return (f"narrow{(d, start, length)}", lambda t: t.narrow(d, start, length), lambda a: a[key], tuple(out))
    if kind == "diagonal":
        off = draw(st.integers(-1, 1))
        ref = np.diagonal(np.zeros(shape), off, 0, 1)

        def np_diag(a):  # np.diagonal is read-only; the same strides on a writable array
            d = np.diagonal(a, off, 0, 1)
            sub = a[:, off:] if off >= 0 else a[-off:]
            return np.lib.stride_tricks.as_strided(sub, shape=d.shape, strides=d.strides)
        return (f"diagonal({off})", lambda t: t.diagonal(off), np_diag, ref.shape)
    if kind == "unsqueeze" or not nd:
        d = draw(st.integers(0, nd))
        return (f"unsqueeze({d})", lambda t: t.unsqueeze(d), lambda a: np.expand_dims(a, d),
                shape[:d] + (1,) + shape[d:])
    n = int(np.prod(shape))
    new = draw(st.sampled_from(_factorizations(n, draw(st.integers(1, 3))))) if n else (0,)
    return (f"reshape{new}", lambda t: t.reshape(new), lambda a: a.reshape(new), tuple(new))


WRITES = [
    ("fill_", lambda t: t.fill_(-7), lambda a: a.__setitem__(Ellipsis, -7)),
    ("add_", lambda t: t.add_(100), lambda a: a.__iadd__(100)),
    ("mul_", lambda t: t.mul_(-2), lambda a: a.__imul__(-2)),
    ("zero_", lambda t: t.zero_(), lambda a: a.__setitem__(Ellipsis, 0)),
    ("copy_", lambda t: t.copy_(t * 0 + 0.5), lambda a: a.__setitem__(Ellipsis, 0.5)),
]


@st.composite
def programs(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    steps, cur = [], shape
    for _ in range(draw(st.integers(1, 4))):
        step = draw(view_step(cur))
        steps.append(step)
        cur = step[3]
    other = draw(view_step(shape))  # a second view of the base, read after the write
    write = draw(st.sampled_from(WRITES))
    return shape, steps, other, write


def _run(lib, shape, steps, other, write, compiled=False):
    base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)

    def prog(x):
        o = other[1](x)
        v = x
        for s in steps:
            v = s[1](v)
        write[1](v)
        return v * 1, o * 1

    if lib == "numpy":
        x = base.copy()
        o = other[2](x)
        v = x
        for s in steps:
            v = s[2](v)
        write[2](v)
        return v * 1, o * 1, x
    if lib == "torch":
        x = torch.tensor(base)
        v, o = prog(x)
        return v.numpy(), o.numpy(), x.numpy()
    x = tp.tensor(base)
    v, o = (tp.compile(prog) if compiled else prog)(x)
    return v.numpy(), o.numpy(), x.numpy()


def _describe(shape, steps, other, write):
    return f"x{shape} " + ".".join(s[0] for s in steps) + f".{write[0]}; other view: {other[0]}"


@given(programs())
@settings(max_examples=60)
def test_random_program_eager_matches_numpy_and_torch(prog):
    shape, steps, other, write = prog
    msg = _describe(*prog)
    got = _run("tp", *prog)
    want = _run("numpy", *prog)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w, err_msg=msg)
    if torch is not None:
        for g, w in zip(got, _run("torch", *prog)):
            np.testing.assert_array_equal(g, w, err_msg=msg)


@given(programs())
@settings(max_examples=25)
def test_random_program_compiled_matches_eager(prog):
    msg = _describe(*prog)
    for g, w in zip(_run("tp", *prog, compiled=True), _run("tp", *prog)):
        np.testing.assert_array_equal(g, w, err_msg=msg)
