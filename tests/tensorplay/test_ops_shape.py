"""Shape and layout ops against numpy: reshape/flatten/permute/movedim/squeeze/expand,
cat/stack/split/chunk, flip/roll/repeat/tile/repeat_interleave/diagonal, on 0-d, size-1,
empty and non-contiguous inputs; copying ops return storage of their own."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import tensorplay as tp

from test_ops_support import arrays, check, dtypes, layouts, make_tensor, shapes, tensors


def _dim(data, nd, extra=0):
    n = max(nd + extra, 1)
    return data.draw(st.integers(-n, n - 1))


def _no_alias(out, *inputs):
    for t in inputs:
        if out.numel() and t.numel():
            assert not np.shares_memory(out.numpy(), t.numpy())


@given(data=tensors(), d=st.data())
def test_reshape_view_flatten_unflatten(data, d):
    t, arr = data
    n = arr.size
    check(tp.reshape(t, -1), arr.reshape(-1), t.dtype)
    if arr.flags.c_contiguous and t.numpy().flags.c_contiguous and n:
        check(t.view(n), arr.reshape(n), t.dtype)  # view needs compatible strides, as in PyTorch
    check(tp.reshape(t, (1,) + arr.shape), arr.reshape((1,) + arr.shape), t.dtype)
    if n:
        k = d.draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0]))
        check(t.reshape(k, -1), arr.reshape(k, -1), t.dtype)
        check(tp.reshape(t, (-1, k)), arr.reshape(-1, k), t.dtype)
    check(tp.flatten(t), arr.reshape(-1), t.dtype)
    if arr.ndim:
        s, e = sorted((d.draw(st.integers(0, arr.ndim - 1)), d.draw(st.integers(0, arr.ndim - 1))))
        expected = arr.reshape(arr.shape[:s] + (-1 if n else int(np.prod(arr.shape[s:e + 1])),) + arr.shape[e + 1:])
        check(tp.flatten(t, s - arr.ndim, e), expected, t.dtype)
        dim = d.draw(st.integers(0, arr.ndim - 1))
        check(tp.unflatten(t, dim, (arr.shape[dim], 1)),
              arr.reshape(arr.shape[:dim] + (arr.shape[dim], 1) + arr.shape[dim + 1:]), t.dtype)
        if arr.shape[dim]:
            check(t.unflatten(dim, (-1, 1)), arr.reshape(arr.shape[:dim] + (arr.shape[dim], 1) + arr.shape[dim + 1:]),
                  t.dtype)
    else:
        check(tp.flatten(t), arr.reshape(1), t.dtype)


@given(data=tensors(), d=st.data())
def test_permute_transpose_movedim(data, d):
    t, arr = data
    nd = arr.ndim
    perm = d.draw(st.permutations(range(nd)))
    check(tp.permute(t, perm), arr.transpose(perm), t.dtype)
    check(t.permute(*perm), arr.transpose(perm), t.dtype)
    check(tp.permute(t, [p - nd for p in perm]), arr.transpose(perm), t.dtype)
    if nd:
        a, b = _dim(d, nd), _dim(d, nd)
        check(tp.transpose(t, a, b), np.swapaxes(arr, a, b), t.dtype)
        check(tp.swapaxes(t, a, b), np.swapaxes(arr, a, b), t.dtype)
        check(tp.swapdims(t, a, b), np.swapaxes(arr, a, b), t.dtype)
        k = d.draw(st.integers(1, nd))
        src = d.draw(st.permutations(range(nd)))[:k]
        dst = d.draw(st.permutations(range(nd)))[:k]
        check(tp.movedim(t, src, dst), np.moveaxis(arr, src, dst), t.dtype)
        check(tp.moveaxis(t, src[0], dst[0] - nd), np.moveaxis(arr, src[0], dst[0]), t.dtype)
    if nd <= 2:
        check(tp.t(t), arr.T, t.dtype)
        check(t.T, arr.T, t.dtype)
    else:
        with pytest.raises(ValueError, match=r"t\(\)"):
            tp.t(t)
        check(t.T, arr.transpose(tuple(reversed(range(nd)))), t.dtype)
    if nd >= 2:
        check(t.mT, np.swapaxes(arr, -1, -2), t.dtype)


@given(data=tensors(shape=shapes(max_side=2)), d=st.data())
def test_squeeze_unsqueeze(data, d):
    t, arr = data
    nd = arr.ndim
    check(tp.squeeze(t), np.squeeze(arr), t.dtype)
    if nd:
        dim = _dim(d, nd)
        expected = np.squeeze(arr, dim) if arr.shape[dim] == 1 else arr  # non-1 dims are left alone
        check(tp.squeeze(t, dim), expected, t.dtype)
        dims = tuple(sorted(d.draw(st.sets(st.integers(0, nd - 1)))))
        ones = tuple(i for i in dims if arr.shape[i] == 1)
        check(t.squeeze(dims), np.squeeze(arr, ones), t.dtype)
    u = _dim(d, nd, 1)
    check(tp.unsqueeze(t, u), np.expand_dims(arr, u), t.dtype)


@given(data=tensors(shape=shapes(max_dims=3, max_side=3)), d=st.data())
def test_expand_broadcast_to(data, d):
    t, arr = data
    lead = d.draw(st.lists(st.integers(0, 3), max_size=2))
    target = tuple(lead) + tuple(d.draw(st.sampled_from([s, 3])) if s == 1 else s for s in arr.shape)
    expected = np.broadcast_to(arr, target)
    check(tp.broadcast_to(t, target), expected, t.dtype)
    check(t.expand(*target), expected, t.dtype)
    check(t.expand(tuple(lead) + (-1,) * arr.ndim), np.broadcast_to(arr, tuple(lead) + arr.shape), t.dtype)
    check(t.expand_as(tp.zeros(target)), expected, t.dtype)
    o = d.draw(arrays(tp.float32, target[len(target) - d.draw(st.integers(0, len(target))):]))
    x, y = tp.broadcast_tensors(t, tp.tensor(o))
    ex, ey = np.broadcast_arrays(arr, o)
    check(x, ex, t.dtype)
    check(y, ey, tp.float32)


@st.composite
def cat_args(draw, same_shape=False):
    base = draw(shapes(min_dims=1, max_dims=3, max_side=3))
    nd = len(base)
    dim = draw(st.integers(-nd, nd - 1))
    count = draw(st.integers(1, 3))
    arrs = []
    for _ in range(count):
        shape = list(base)
        if not same_shape:
            shape[dim] = draw(st.integers(0, 3))
        arrs.append(draw(arrays(draw(dtypes), tuple(shape))))
    return [make_tensor(a, draw(layouts)) for a in arrs], arrs, dim


def _promoted(arrs):
    order = [np.bool_, np.int32, np.int64, np.float32, np.float64]
    return order[max(order.index(a.dtype.type) for a in arrs)]


@given(args=cat_args())
def test_cat(args):
    ts, arrs, dim = args
    dtype = _promoted(arrs)
    expected = np.concatenate([a.astype(dtype) for a in arrs], axis=dim)
    for fn in (tp.cat, tp.concat, tp.concatenate):
        out = fn(ts, dim)
        check(out, expected)
        assert out.numpy().dtype == dtype
        _no_alias(out, *ts)


def test_cat_skips_1d_empty_tensors():
    out = tp.cat([tp.ones(2, 3), tp.zeros(0), tp.ones(1, 3)], 0)
    check(out, np.ones((3, 3)), tp.float32)
    check(tp.cat([tp.zeros(0, dtype=tp.int64), tp.tensor([1, 2], dtype=tp.int32)]), [1, 2], tp.int64)


@given(args=cat_args(same_shape=True), d=st.data())
def test_stack_hstack_vstack(args, d):
    ts, arrs, _ = args
    dtype = _promoted(arrs)
    nd = arrs[0].ndim
    dim = d.draw(st.integers(-(nd + 1), nd))
    out = tp.stack(ts, dim)
    check(out, np.stack([a.astype(dtype) for a in arrs], axis=dim))
    check(tp.hstack(ts), np.hstack([a.astype(dtype) for a in arrs]))
    check(tp.vstack(ts), np.vstack([a.astype(dtype) for a in arrs]))


def test_stack_of_zero_dim_and_hstack_of_scalars():
    check(tp.stack([tp.tensor(1.0), tp.tensor(2.0)]), [1.0, 2.0], tp.float32)
    check(tp.hstack([tp.tensor(1), tp.tensor(2)]), [1, 2], tp.int64)
    check(tp.vstack([tp.tensor(1), tp.tensor(2)]), [[1], [2]], tp.int64)


@given(data=tensors(shape=shapes(min_dims=1)), d=st.data())
def test_narrow_select_unbind(data, d):
    t, arr = data
    nd = arr.ndim
    dim = _dim(d, nd)
    n = arr.shape[dim]
    start = d.draw(st.integers(0, n))
    length = d.draw(st.integers(0, n - start))
    check(tp.narrow(t, dim, start, length), np.take(arr, range(start, start + length), axis=dim), t.dtype)
    if n:
        i = d.draw(st.integers(-n, n - 1))
        check(tp.select(t, dim, i), np.take(arr, i, axis=dim), t.dtype)
        with pytest.raises(IndexError, match="select"):
            tp.select(t, dim, n)
    parts = tp.unbind(t, dim)
    assert len(parts) == n
    for i, p in enumerate(parts):
        check(p, np.take(arr, i, axis=dim), t.dtype)


@given(data=tensors(shape=shapes(min_dims=1, max_side=5)), d=st.data())
def test_split_chunk_tensor_split(data, d):
    t, arr = data
    dim = _dim(d, arr.ndim)
    n = arr.shape[dim]
    size = d.draw(st.integers(1, 6))
    pieces = tp.split(t, size, dim)
    bounds = list(range(size, n, size))
    expected = np.split(arr, bounds, axis=dim) if n else [arr]
    assert len(pieces) == len(expected)
    for p, e in zip(pieces, expected):
        check(p, e, t.dtype)
    sections = d.draw(st.lists(st.integers(0, n), min_size=1, max_size=3).filter(lambda s: sum(s) <= n))
    sections = sections + [n - sum(sections)]
    for p, e in zip(tp.split(t, sections, dim), np.split(arr, np.cumsum(sections)[:-1], axis=dim)):
        check(p, e, t.dtype)
    chunks = d.draw(st.integers(1, 6))
    got = tp.chunk(t, chunks, dim)
    if n:  # chunk size ceil(n / chunks); there may be fewer chunks than asked for
        c = -(-n // chunks)
        expected = np.split(arr, list(range(c, n, c)), axis=dim)
    else:  # PyTorch returns `chunks` empty pieces
        expected = [arr] * chunks
    assert len(got) == len(expected)
    for p, e in zip(got, expected):
        check(p, e, t.dtype)
    for p, e in zip(tp.tensor_split(t, chunks, dim), np.array_split(arr, chunks, axis=dim)):
        check(p, e, t.dtype)
    idx = sorted(d.draw(st.lists(st.integers(-n - 1, n + 1), max_size=3)))
    got = tp.tensor_split(t, idx, dim)
    expected = np.array_split(arr, idx, axis=dim)
    assert len(got) == len(expected)
    for p, e in zip(got, expected):
        check(p, e, t.dtype)


@given(data=tensors(), d=st.data())
def test_flip_roll(data, d):
    t, arr = data
    nd = arr.ndim
    dims = tuple(d.draw(st.sets(st.integers(0, max(nd - 1, 0)), max_size=nd)))
    out = tp.flip(t, dims)
    check(out, np.flip(arr, dims) if dims else arr, t.dtype)
    _no_alias(out, t)
    shift = d.draw(st.integers(-7, 7))
    out = tp.roll(t, shift)
    check(out, np.roll(arr, shift), t.dtype)
    _no_alias(out, t)
    if nd:
        rdims = d.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=3))
        shifts = [d.draw(st.integers(-5, 5)) for _ in rdims]
        check(tp.roll(t, shifts, rdims), np.roll(arr, shifts, rdims), t.dtype)
        check(t.roll(shifts[0], rdims[0]), np.roll(arr, shifts[0], rdims[0]), t.dtype)


@given(data=tensors(shape=shapes(max_dims=3, max_side=3)), d=st.data())
def test_repeat_tile(data, d):
    t, arr = data
    reps = tuple(d.draw(st.lists(st.integers(0, 3), min_size=arr.ndim, max_size=arr.ndim + 2)))
    out = t.repeat(*reps) if reps else t.repeat(())
    check(out, np.tile(arr, reps), t.dtype)
    _no_alias(out, t)
    dims = tuple(d.draw(st.lists(st.integers(0, 3), max_size=4)))
    out = tp.tile(t, dims)
    check(out, np.tile(arr, dims), t.dtype)
    _no_alias(out, t)


def test_repeat_of_ones_is_a_copy():
    x = tp.ones(1, 3)
    for y in (x.repeat(1, 1), x.repeat(2, 1)[:1], tp.tile(x, (1,)), tp.repeat_interleave(x, 1, 0)):
        y += 1
    assert x.tolist() == [[1, 1, 1]]


@given(data=tensors(shape=shapes(max_dims=3, max_side=3)), d=st.data())
def test_repeat_interleave(data, d):
    t, arr = data
    r = d.draw(st.integers(0, 3))
    check(tp.repeat_interleave(t, r), np.repeat(arr, r), t.dtype)
    if arr.ndim:
        dim = _dim(d, arr.ndim)
        check(tp.repeat_interleave(t, r, dim), np.repeat(arr, r, axis=dim), t.dtype)
        counts = d.draw(st.lists(st.integers(0, 3), min_size=arr.shape[dim], max_size=arr.shape[dim]))
        check(t.repeat_interleave(tp.tensor(counts, dtype=tp.int64), dim), np.repeat(arr, counts, axis=dim),
              t.dtype)


@given(data=tensors(shape=shapes(min_dims=2, max_dims=4)), d=st.data())
def test_diagonal(data, d):
    t, arr = data
    nd = arr.ndim
    a, b = d.draw(st.permutations(range(nd)))[:2]
    offset = d.draw(st.integers(-4, 4))
    a_, b_ = (a - nd if d.draw(st.booleans()) else a), b
    check(tp.diagonal(t, offset, a_, b_), np.diagonal(arr, offset, a, b), t.dtype)
    check(t.diagonal(offset, a_, b_), np.diagonal(arr, offset, a, b), t.dtype)


@pytest.mark.parametrize("call,exc,pattern", [
    (lambda: tp.ones(2, 3).reshape(4, 2), ValueError, r"reshape.*\[4, 2\].*6"),
    (lambda: tp.ones(2, 3).reshape(-1, -1), ValueError, r"reshape.*one dimension"),
    (lambda: tp.ones(2, 3).reshape(1.5), TypeError, r"reshape.*ints"),
    (lambda: tp.ones(2, 3).permute(0, 0), ValueError, r"permute.*multiple"),
    (lambda: tp.ones(2, 3).permute(0), ValueError, r"permute.*\(2, 3\)"),
    (lambda: tp.ones(2, 3).transpose(0, 2), IndexError, r"transpose.*range"),
    (lambda: tp.ones(2, 3).flatten(1, 0), ValueError, r"flatten"),
    (lambda: tp.ones(2, 3).unflatten(1, (2, 2)), ValueError, r"unflatten"),
    (lambda: tp.ones(2, 3).squeeze(2), IndexError, r"squeeze.*range"),
    (lambda: tp.ones(2, 3).unsqueeze(3), IndexError, r"unsqueeze.*range"),
    (lambda: tp.ones(2, 3).expand(3, 3), ValueError, r"expand.*\(2, 3\)"),
    (lambda: tp.ones(2, 3).expand(3), ValueError, r"expand.*\(2, 3\)"),
    (lambda: tp.cat([tp.ones(2, 3), tp.ones(3, 2)], 0), ValueError, r"cat.*\(2, 3\).*\(3, 2\)"),
    (lambda: tp.cat([tp.ones(()), tp.ones(())]), ValueError, r"cat.*zero-dimensional"),
    (lambda: tp.cat([]), ValueError, r"cat.*non-empty"),
    (lambda: tp.cat(tp.ones(2)), TypeError, r"cat.*sequence"),
    (lambda: tp.stack([tp.ones(2), tp.ones(3)]), ValueError, r"stack.*\(2,\).*\(3,\)"),
    (lambda: tp.narrow(tp.ones(3), 0, 2, 2), IndexError, r"narrow.*\(3,\)"),
    (lambda: tp.split(tp.ones(3), [1, 1]), ValueError, r"split.*\(3,\)"),
    (lambda: tp.chunk(tp.ones(3), 0), ValueError, r"chunk.*positive"),
    (lambda: tp.tensor_split(tp.ones(3), 0), ValueError, r"tensor_split"),
    (lambda: tp.roll(tp.ones(3), (1, 2), 0), ValueError, r"roll"),
    (lambda: tp.ones(2).repeat(2, -1), ValueError, r"repeat.*negative"),
    (lambda: tp.ones(2, 3).repeat(2), ValueError, r"repeat.*\(2, 3\)"),
    (lambda: tp.repeat_interleave(tp.ones(3), tp.tensor([1, 2])), ValueError, r"repeat_interleave.*\(3,\)"),
    (lambda: tp.diagonal(tp.ones(3, 3), 0, 1, 1), ValueError, r"diagonal.*identical"),
    (lambda: tp.diagonal(tp.ones(3), 0), ValueError, r"diagonal.*\(3,\)"),
    (lambda: tp.movedim(tp.ones(2, 3), (0, 1), (0,)), ValueError, r"movedim"),
])
def test_bad_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


@given(data=tensors(shape=shapes(min_dims=1, max_dims=3, min_side=1)))
def test_views_share_storage(data):
    """transpose/permute/narrow/select/split/expand/diagonal of a contiguous tensor are views (as in PyTorch)."""
    t, arr = data
    assume(t.numpy().flags.c_contiguous)
    for v in (t.transpose(0, -1), t.narrow(0, 0, 1), t.select(0, 0), tp.split(t, 1)[0], t.unsqueeze(0),
              t.reshape(-1), t.flatten()):
        assert np.shares_memory(v.numpy(), t.numpy())


@given(n=st.integers(1, 4), m=st.integers(1, 4), b=st.integers(1, 3), offset=st.integers(-3, 3))
def test_diagonal_of_adjacent_dims_is_a_view(n, m, b, offset):
    x = tp.zeros(b, n, m)
    for d1, d2 in ((-2, -1), (-1, -2), (1, 2)):
        diag = x.diagonal(offset, d1, d2)
        if diag.numel():
            assert np.shares_memory(diag.numpy(), x.numpy())
    x2 = tp.zeros(n, m)
    x2.diagonal(offset, 1, 0).add_(1)  # writes reach the matrix, as in PyTorch
    check(x2, np.eye(n, m, -offset, dtype=np.float32), tp.float32)
