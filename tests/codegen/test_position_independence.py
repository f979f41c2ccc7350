"""Every element's value must not depend on the leading size a graph is compiled at.

vmap(..., chunk_size=c) runs the batched executable on slices of the batch and requires the
result to be bit-identical to the unchunked call, so a per-element computation compiled at
leading size B must give, for row i, exactly the bits it gives compiled at any other size.
What breaks this: fast-math flags the backend applies differently in a vectorised loop body and
its scalar remainder (`contract`: fused or unfused multiply-add), reassociation whose order
depends on the trip count of a loop the element does not reduce over, and shape-dependent
kernel choices (dot_general's BLAS vs loops, m = batch * rows).
"""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay import ir
from tensorplay.codegen import dot
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

SIZES = (1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17)


def _softmax_matmul(b, x, y, w):  # tests/vmap/test_vmap_api.py::test_chunk_size_and_chunk_vmap_equal_unchunked
    n = x.shape[0]
    z = b.dot_general(x, w, batch=((), ()), contract=((2,), (0,)))
    m = b.broadcast_in_dim(b.reshape(b.reduce_max(z, axes=(2,)), shape=(n, 3, 1)),
                           broadcast_dimensions=(0, 1, 2), shape=(n, 3, 2))
    e = b.exp(b.sub(z, m))
    s = b.broadcast_in_dim(b.reshape(b.reduce_sum(e, axes=(2,)), shape=(n, 3, 1)),
                           broadcast_dimensions=(0, 1, 2), shape=(n, 3, 2))
    t = b.broadcast_in_dim(b.reduce_sum(y, axes=(1,)), broadcast_dimensions=(0,), shape=(n, 3, 2))
    return b.mul(b.div(e, s), t)


# name: (per-element input shapes (leading axis added), build(builder, *inputs) -> output)
CASES = {
    "softmax_matmul": (((3, 4), (2,), None), _softmax_matmul),
    "axpy_k4": (((3, 4), None), lambda b, x, w: b.dot_general(x, w, batch=((), ()), contract=((2,), (0,)))),
    "axpy_k9": (((5, 9), None), lambda b, x, w: b.dot_general(x, w, batch=((), ()), contract=((2,), (0,)))),
    "dot_form_k3": (((3, 3), None), lambda b, x, w: b.dot_general(x, w, batch=((), ()), contract=((2,), (1,)))),
    "dot_form_k4": (((2, 4), None), lambda b, x, w: b.dot_general(x, w, batch=((), ()), contract=((2,), (1,)))),
    "dot_form_k37": (((2, 37), None), lambda b, x, w: b.dot_general(x, w, batch=((), ()), contract=((2,), (1,)))),
    "dot_form_k5": (((3, 5), None), lambda b, x, w: b.dot_general(x, w, batch=((), ()), contract=((2,), (1,)))),
    "dot_form_k8": (((2, 8), None), lambda b, x, w: b.dot_general(x, w, batch=((), ()), contract=((2,), (1,)))),
    "dot_form_k2x3": (((2, 2, 3), None),
                      lambda b, x, w: b.dot_general(x, w, batch=((), ()), contract=((2, 3), (1, 2)))),
    "matvec_k6": (((6,), None), lambda b, x, w: b.dot_general(x, w, batch=((), ()), contract=((1,), (0,)))),
    "sum_3": (((3,),), lambda b, x: b.reduce_sum(x, axes=(1,))),
    "sum_5": (((5,),), lambda b, x: b.reduce_sum(x, axes=(1,))),
    "sum_of_products_7": (((7,), (7,)), lambda b, x, y: b.reduce_sum(b.mul(x, y), axes=(1,))),
    "sum_4x2": (((4, 2),), lambda b, x: b.reduce_sum(x, axes=(1, 2))),
    "sum_9x3": (((9, 3),), lambda b, x: b.reduce_sum(x, axes=(1, 2))),
    "sum_33": (((33,),), lambda b, x: b.reduce_sum(x, axes=(1,))),
    "sum_inner_axis": (((4, 3),), lambda b, x: b.reduce_sum(x, axes=(1,))),
    "prod_6": (((6,),), lambda b, x: b.reduce_prod(x, axes=(1,))),
    "max_5": (((5,),), lambda b, x: b.reduce_max(x, axes=(1,))),
    "fused_mul_add": (((3,), (3,), (3,)), lambda b, x, y, z: b.add(b.mul(x, y), z)),
    "transcendentals": (((6,),), lambda b, x: b.add(b.mul(b.exp(x), b.sin(x)), b.tanh(b.mul(x, x)))),
}
# the unbatched operand (None above) of each case: shape
UNBATCHED = {"softmax_matmul": (4, 2), "axpy_k4": (4, 2), "axpy_k9": (9, 3), "dot_form_k3": (2, 3),
             "dot_form_k4": (3, 4), "dot_form_k37": (5, 37),
             "dot_form_k5": (4, 5), "dot_form_k8": (3, 8), "dot_form_k2x3": (3, 2, 3), "matvec_k6": (6,)}


def _graph(name: str, n: int) -> ir.Graph:
    shapes, build = CASES[name]
    b = ir.GraphBuilder(name)
    vals = [b.add_input(TensorType((n,) + s if s is not None else UNBATCHED[name], dt.float32))
            for s in shapes]
    return b.build([build(b, *vals)])


@pytest.mark.parametrize("name", list(CASES))
def test_rows_do_not_depend_on_the_leading_size(name, monkeypatch):
    monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", float("inf"))  # the loop nest; BLAS is exempt (below)
    codegen.clear_cache()
    shapes, _ = CASES[name]
    rng = np.random.default_rng(0)
    big = max(SIZES)
    batched = [rng.standard_normal((big,) + s if s is not None else UNBATCHED[name]).astype(np.float32)
               for s in shapes]
    want = codegen.compile_graph(_graph(name, big))(*batched)[0]
    for n in SIZES:
        exe = codegen.compile_graph(_graph(name, n))
        for start in range(0, big, n):
            stop = min(start + n, big)
            if stop - start != n:
                continue
            args = [np.ascontiguousarray(a[start:stop]) if s is not None else a for a, s in zip(batched, shapes)]
            got = exe(*args)[0]
            np.testing.assert_array_equal(got.view(np.int32), want[start:stop].view(np.int32),
                                          err_msg=f"{name}: rows {start}:{stop} compiled at leading size {n}")
    codegen.clear_cache()


def test_blas_is_exempt_and_not_chosen_for_small_batched_products():
    """dot_general's BLAS path is exempt: OpenBLAS's blocking and edge kernels depend on m, so
    its per-element bits change with the batch folded into m (and differ from the loop nest's).
    It is only chosen for 2*m*n*k >= BLAS_MIN_FLOPS; below that every leading size takes the
    position-independent loop nest, e.g. the (B,3,4) @ (4,2) of the vmap chunking test."""
    for n in (1, 5, 7, 8, 1000):
        b = ir.GraphBuilder("d")
        x = b.add_input(TensorType((n, 3, 4), dt.float32))
        w = b.add_input(TensorType((4, 2), dt.float32))
        g = b.build([b.dot_general(x, w, batch=((), ()), contract=((2,), (0,)))])
        assert dot.blas_plan(g.nodes[0]) is None


# The batch axis last (vmap with in_dims=1 keeps it there): an outer reduced axis accumulates into
# the output; its order must not depend on how many kept elements there are.
TRAILING_BATCH = {
    "sum_leading_3": ((3,), lambda b, x: b.reduce_sum(x, axes=(0,))),
    "sum_leading_2x3": ((2, 3), lambda b, x: b.reduce_sum(x, axes=(0, 1))),
    "prod_leading_5": ((5,), lambda b, x: b.reduce_prod(x, axes=(0,))),
    "sum_of_squares_leading_3": ((3,), lambda b, x: b.reduce_sum(b.mul(x, x), axes=(0,))),
}


@pytest.mark.parametrize("name", list(TRAILING_BATCH))
def test_elements_do_not_depend_on_a_trailing_batch_size(name):
    lead, build = TRAILING_BATCH[name]
    big = max(SIZES)
    x = np.random.default_rng(1).standard_normal(lead + (big,)).astype(np.float32)

    def run(cols):
        b = ir.GraphBuilder(name)
        g = b.build([build(b, b.add_input(TensorType(lead + (cols.shape[-1],), dt.float32)))])
        return codegen.compile_graph(g)(np.ascontiguousarray(cols))[0]

    want = run(x)
    for n in SIZES:
        for start in range(0, big - n + 1, n):
            got = run(x[..., start:start + n])
            np.testing.assert_array_equal(got.view(np.int32), want[..., start:start + n].view(np.int32),
                                          err_msg=f"{name}: columns {start}:{start + n} compiled at size {n}")
