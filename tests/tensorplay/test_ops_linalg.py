"""matmul and friends, tensordot and einsum against numpy: vector/matrix/batched operands,
broadcast batch dims, zero-size dims, non-contiguous inputs, integer dtypes."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import tensorplay as tp

from test_ops_support import arrays, check, layouts, make_tensor

MATMUL_DTYPES = st.sampled_from([tp.float32, tp.float64, tp.int32, tp.int64])


@st.composite
def matmul_shapes(draw):
    """Shapes (a, b) valid for matmul: 1-d or n-d operands, broadcastable batch dims."""
    n, k, m = (draw(st.integers(0, 3)) for _ in range(3))
    na, nb = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch_len = max(na, nb) - 2
    batch = [draw(st.integers(0, 3)) for _ in range(max(batch_len, 0))]

    def batch_for(nd):
        own = batch[len(batch) - (nd - 2):] if nd > 2 else []
        return [d if draw(st.booleans()) else 1 for d in own]

    sa = (k,) if na == 1 else tuple(batch_for(na)) + (n, k)
    sb = (k,) if nb == 1 else tuple(batch_for(nb)) + (k, m)
    return sa, sb


def _operands(data, sa, sb, dtype):
    a = data.draw(arrays(dtype, sa, lo=-4, hi=4))
    b = data.draw(arrays(dtype, sb, lo=-4, hi=4))
    return make_tensor(a, data.draw(layouts)), make_tensor(b, data.draw(layouts)), a, b


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype is tp.float32 else {}


@given(shapes_=matmul_shapes(), dtype=MATMUL_DTYPES, data=st.data())
def test_matmul(shapes_, dtype, data):
    sa, sb = shapes_
    ta, tb, a, b = _operands(data, sa, sb, dtype)
    expected = np.matmul(a, b)
    check(tp.matmul(ta, tb), expected, dtype, **_tol(dtype))
    check(ta @ tb, expected, dtype, **_tol(dtype))
    check(ta.matmul(tb), expected, dtype, **_tol(dtype))


@given(dims=st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)),
       dtype=MATMUL_DTYPES, data=st.data())
def test_mm_bmm_mv_dot_outer_inner(dims, dtype, data):
    bt, n, k, m = dims
    ta, tb, a, b = _operands(data, (n, k), (k, m), dtype)
    check(tp.mm(ta, tb), a @ b, dtype, **_tol(dtype))
    ta3, tb3, a3, b3 = _operands(data, (bt, n, k), (bt, k, m), dtype)
    check(tp.bmm(ta3, tb3), np.matmul(a3, b3), dtype, **_tol(dtype))
    tv, _, v, _ = _operands(data, (k,), (k,), dtype)
    check(tp.mv(ta, tv), a @ v, dtype, **_tol(dtype))
    tu, tw, u, w = _operands(data, (k,), (k,), dtype)
    check(tp.dot(tu, tw), np.dot(u, w), dtype, **_tol(dtype))
    check(tp.inner(tu, tw), np.inner(u, w), dtype, **_tol(dtype))
    check(tp.inner(ta3, tb3.transpose(1, 2)), np.inner(a3, b3.transpose(0, 2, 1)), dtype, **_tol(dtype))
    tx, ty, x, y = _operands(data, (n,), (m,), dtype)
    check(tp.outer(tx, ty), np.outer(x, y), dtype, **_tol(dtype))
    check(tp.ger(tx, ty), np.outer(x, y), dtype, **_tol(dtype))


@given(dtype=st.sampled_from([tp.float32, tp.float64]), data=st.data())
def test_tensordot(dtype, data):
    sa = data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple))
    ndims = data.draw(st.integers(0, len(sa)))
    sb = sa[len(sa) - ndims:] + tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    ta, tb, a, b = _operands(data, sa, sb, dtype)
    check(tp.tensordot(ta, tb, ndims), np.tensordot(a, b, ndims), dtype, **_tol(dtype))
    if ndims:
        axes_a = list(range(len(sa) - ndims, len(sa)))
        axes_b = [i - len(sb) for i in range(ndims)]  # negative dims
        check(tp.tensordot(ta, tb, (axes_a, axes_b)), np.tensordot(a, b, (axes_a, axes_b)), dtype, **_tol(dtype))


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 1)]),
    ("i,i->", [(3,), (3,)]),
    ("i,i", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->ji", [(2, 2, 3)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,ij->", [(2, 3), (2, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),
    ("...i,...i->...", [(3, 4), (2, 3, 4)]),
    ("i...->...", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ab,cd->", [(2, 3), (4, 5)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("ij,kj->ik", [(0, 3), (2, 3)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("equation,shapes_", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
@given(dtype=st.sampled_from([tp.float64, tp.int64]), data=st.data())
def test_einsum(equation, shapes_, dtype, data):
    arrs = [data.draw(arrays(dtype, s, lo=-3, hi=3)) for s in shapes_]
    ts = [make_tensor(a, data.draw(layouts)) for a in arrs]
    expected = np.einsum(equation.replace(" ", ""), *arrs)
    check(tp.einsum(equation, *ts), expected, dtype)
    check(tp.einsum(equation, ts), expected, dtype)  # operands as one list


def test_einsum_broadcasts_size_one_dims():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(3.0).reshape(1, 3)
    check(tp.einsum("ij,ij->ij", tp.tensor(a), tp.tensor(b)), a * b, tp.float64)
    check(tp.einsum("ij,ij->i", tp.tensor(a), tp.tensor(b)), (a * b).sum(1), tp.float64)


@pytest.mark.parametrize("call,exc,pattern", [
    (lambda: tp.matmul(tp.ones(2, 3), tp.ones(2, 3)), ValueError, r"matmul.*\(2, 3\).*\(2, 3\)"),
    (lambda: tp.matmul(tp.ones(()), tp.ones(3)), ValueError, r"matmul.*1 dimension"),
    (lambda: tp.matmul(tp.ones(2, 2, 3), tp.ones(3, 3, 2)), ValueError, r"matmul.*\(2,\).*\(3,\)"),
    (lambda: tp.matmul(tp.ones(3, dtype=tp.int64), tp.ones(3)), TypeError, r"matmul.*int64.*float32"),
    (lambda: tp.matmul(tp.ones(3, dtype=tp.bool), tp.ones(3, dtype=tp.bool)), TypeError, r"matmul.*bool"),
    (lambda: tp.mm(tp.ones(3), tp.ones(3, 2)), ValueError, r"mm.*2-D"),
    (lambda: tp.bmm(tp.ones(2, 2, 3), tp.ones(3, 3, 2)), ValueError, r"bmm"),
    (lambda: tp.dot(tp.ones(3), tp.ones(4)), ValueError, r"dot.*\(3,\).*\(4,\)"),
    (lambda: tp.outer(tp.ones(2, 2), tp.ones(2)), ValueError, r"outer.*1-D"),
    (lambda: tp.tensordot(tp.ones(2, 3), tp.ones(2, 3), 1), ValueError, r"tensordot.*\(2, 3\)"),
    (lambda: tp.einsum("ij,jk->ik", tp.ones(2, 3), tp.ones(4, 5)), ValueError, r"einsum.*'j'"),
    (lambda: tp.einsum("ij->k", tp.ones(2, 3)), ValueError, r"einsum.*'k'"),
    (lambda: tp.einsum("ij->ii", tp.ones(2, 2)), ValueError, r"einsum.*more than once"),
    (lambda: tp.einsum("ij", tp.ones(2)), ValueError, r"einsum.*\(2,\)"),
    (lambda: tp.einsum("i,j", tp.ones(2)), ValueError, r"einsum.*2 operands"),
])
def test_bad_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


@given(data=st.data())
def test_matmul_empty_contraction_is_zero(data):
    n, m = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
    out = tp.ones(n, 0) @ tp.ones(0, m)
    check(out, np.zeros((n, m)), tp.float32)
    assume(n and m)
    assert out.sum().item() == 0
