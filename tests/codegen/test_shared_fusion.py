"""Three scheduling rules that remove whole passes over memory (`codegen/schedule.py`):

- `split_constants`: an operand-less `full` / `iota` read by several nodes gets one copy per
  reader, so it fuses into every kernel instead of being materialised and loaded back;
- `_join_first`: an expression read by several kernels is computed and stored by the first of them
  to run, when that is a loop over its shape that reads it at its own index (the relu mask that
  the backward pass reads again); otherwise it keeps a loop of its own;
- `split_reduced_cones`: a reduction reading a cheap expression of graph inputs that other nodes
  read too recomputes it (its own copy) instead of a loop storing it.

Values against the interpreter, bit for bit where the rule must not change the arithmetic."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay import ir
from tensorplay.codegen import schedule
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType


def _compile(g, monkeypatch, rules=True):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    if not rules:
        monkeypatch.setattr(schedule, "split_constants", lambda graph: graph)
        monkeypatch.setattr(schedule, "_join_first", lambda *a: None)
        monkeypatch.setattr(schedule, "split_reduced_cones", lambda graph: graph)
    codegen.clear_cache()
    try:
        return codegen.compile_graph(g)
    finally:
        codegen.clear_cache()
        if not rules:
            monkeypatch.undo()


def _check(g, args, monkeypatch):
    """Compiled with the rules == compiled without them (bit for bit) ~ the interpreter; the
    executables' kernel lists."""
    new = _compile(g, monkeypatch)
    old = _compile(g, monkeypatch, rules=False)
    keep = [a.copy() for a in args]
    got, base = new(*args), old(*args)
    want = ir.interpret(g, [np.array(a, order="C") for a in args])  # (ascontiguousarray makes 0-d 1-d)
    for a, k in zip(args, keep):
        np.testing.assert_array_equal(a, k)  # inputs untouched
    for x, y, w in zip(got, base, want):
        np.testing.assert_array_equal(x, y)
        if x.dtype.kind == "f":
            np.testing.assert_allclose(x, w, rtol=2e-5, atol=1e-4)  # reduction order, exp
        else:
            np.testing.assert_array_equal(x, w)
    return new.kernels, old.kernels


def _relu_graph(shape):
    """h = relu(x + b) and a later select by the same mask: g = where(x + b <= 0, 0, d)."""
    b = ir.GraphBuilder("relu")
    x = b.add_input(TensorType(shape, dt.float32))
    bias = b.add_input(TensorType(shape[-1:], dt.float32))
    d = b.add_input(TensorType(shape, dt.float32))
    pre = b.add(x, b.broadcast_in_dim(bias, shape=shape, broadcast_dimensions=(len(shape) - 1,)))
    zero = b.full(shape=shape, dtype=dt.float32, value=0.0)
    mask = b.le(pre, zero)
    h = b.select(mask, zero, pre)
    s = b.reduce_sum(h, axes=(len(shape) - 1,))   # h read by a reduction kernel too
    t = b.exp(h)                                     # ... and by a loop of its own output
    gz = b.full(shape=shape, dtype=dt.float32, value=0.0)
    g = b.select(mask, gz, b.mul(d, t))
    return b.build([s, g, b.reduce_sum(g, axes=(0,))])


def _args(g, seed=0, strided=False):
    rng = np.random.default_rng(seed)
    out = []
    for v in g.inputs:
        shape = v.type.shape
        a = np.asarray(rng.standard_normal(shape + (2,) if strided else shape) * 3).astype(v.dtype.np)
        out.append(a[..., 1] if strided else a)
    return out


@pytest.mark.parametrize("shape", [(64, 256), (1, 1), (3, 1), (1, 5), (0, 4), (4, 0)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_relu_mask_is_stored_by_the_forward_select(shape, strided, monkeypatch):
    g = _relu_graph(shape)
    new, old = _check(g, _args(g, strided=strided), monkeypatch)
    assert len(new) < len(old)
    assert not any(k["nodes"] == ["full"] for k in new)  # the zeros are never materialised
    fwd = [k for k in new if "le" in k["nodes"]]
    assert len(fwd) == 1 and {"add", "le", "select"} <= set(fwd[0]["nodes"])


def test_zero_d_and_iota_constants(monkeypatch):
    b = ir.GraphBuilder("c")
    x = b.add_input(TensorType((), dt.float32))
    y = b.add_input(TensorType((6,), dt.int64))
    one = b.full(shape=(), dtype=dt.float32, value=1.0)
    i = b.iota(shape=(6,), dtype=dt.int64, dimension=0)
    e = b.exp(b.add(x, one))                  # its own loop (0-d), reads `one`
    eq = b.eq(i, y)
    cnt = b.reduce_sum(b.convert_element_type(eq, dtype=dt.float32), axes=(0,))
    g = b.build([b.mul(e, one), cnt, b.add(i, y), b.div(one, b.add(x, e))])
    new, old = _check(g, _args(g, seed=1), monkeypatch)
    assert not any(k["nodes"] in (["full"], ["iota"]) for k in new)


def test_split_constants_keeps_a_graph_without_shared_constants():
    b = ir.GraphBuilder("n")
    x = b.add_input(TensorType((4,), dt.float32))
    z = b.full(shape=(4,), dtype=dt.float32, value=2.0)
    g = b.build([b.mul(x, z)])
    assert schedule.split_constants(g) is g


def test_a_shared_constant_that_is_a_graph_output(monkeypatch):
    b = ir.GraphBuilder("o")
    x = b.add_input(TensorType((3, 4), dt.float32))
    z = b.full(shape=(3, 4), dtype=dt.float32, value=0.5)
    g = b.build([z, b.mul(x, z), b.reduce_max(b.add(x, z), axes=(1,))])
    split = schedule.split_constants(g)
    assert split.outputs[0] is g.outputs[0]
    _check(g, _args(g, seed=2), monkeypatch)


# --- where the first reader must not store the shared value ----------------------------------------
def test_first_reader_a_reduction_keeps_the_value_its_own_loop(monkeypatch):
    b = ir.GraphBuilder("r")
    x = b.add_input(TensorType((8, 16), dt.float32))
    e = b.mul(b.exp(x), x)  # (of a computed value: `split_reduced_cones` does not copy it)
    s = b.reduce_sum(e, axes=(1,))           # the first kernel to run that reads e: a reduction
    y = b.mul(e, b.broadcast_in_dim(s, shape=(8, 16), broadcast_dimensions=(0,)))
    g = b.build([y, b.reduce_max(e, axes=(0,))])
    new, old = _check(g, _args(g, seed=3), monkeypatch)
    assert any(k["nodes"] == ["exp", "mul"] for k in new)


def test_reductions_recompute_a_cheap_expression_of_inputs(monkeypatch):
    """`split_reduced_cones`: each reduction fuses its own copy of e = x * x, the loop fuses the
    original: no loop stores e."""
    b = ir.GraphBuilder("r")
    x = b.add_input(TensorType((8, 16), dt.float32))
    e = b.mul(x, x)
    s = b.reduce_sum(e, axes=(1,))
    y = b.mul(e, b.broadcast_in_dim(s, shape=(8, 16), broadcast_dimensions=(0,)))
    g = b.build([y, b.reduce_max(e, axes=(0,))])
    new, old = _check(g, _args(g, seed=3), monkeypatch)
    assert not any(k["nodes"] == ["mul"] for k in new)
    assert [k["kind"] for k in new] == ["reduce_sum", "loop", "reduce_max"]


def test_first_reader_at_a_remapped_index_keeps_the_value_its_own_loop(monkeypatch):
    b = ir.GraphBuilder("t")
    x = b.add_input(TensorType((8, 8), dt.float32))
    e = b.mul(b.exp(x), x)  # (of a computed value: no reduction recomputes it)
    y = b.add(b.transpose(e, permutation=(1, 0)), x)   # first reader: e at the transposed index
    g = b.build([y, b.reduce_sum(e, axes=(0,)), b.mul(e, y)])
    new, old = _check(g, _args(g, seed=4), monkeypatch)
    assert any(k["nodes"] == ["exp", "mul"] for k in new)


def test_first_reader_of_another_shape_keeps_the_value_its_own_loop(monkeypatch):
    b = ir.GraphBuilder("s")
    x = b.add_input(TensorType((8,), dt.float32))
    e = b.mul(b.exp(x), x)  # (of a computed value: no reduction recomputes it)
    two = b.full(shape=(4, 8), dtype=dt.float32, value=2.0)
    y = b.mul(b.broadcast_in_dim(e, shape=(4, 8), broadcast_dimensions=(1,)), two)  # a loop over (4, 8)
    g = b.build([y, b.reduce_sum(e, axes=(0,)), b.add(e, x)])
    new, old = _check(g, _args(g, seed=5), monkeypatch)
    assert any(k["nodes"] == ["exp", "mul"] for k in new)


def test_the_storing_kernel_runs_before_every_other_reader(monkeypatch):
    """e is read by a reduction (later in the graph) and by two loops: the earliest loop stores it,
    and the other readers, whatever their order in the graph, run after it."""
    b = ir.GraphBuilder("o2")
    x = b.add_input(TensorType((16, 32), dt.float32))
    e = b.sub(b.mul(b.exp(x), x), x)  # (exp: no reduction recomputes e, see split_reduced_cones)
    a = b.add(e, x)                                    # loop 1 (earliest root)
    s1 = b.reduce_sum(a, axes=(1,))
    c = b.mul(e, b.broadcast_in_dim(s1, shape=(16, 32), broadcast_dimensions=(0,)))  # loop 2
    s2 = b.reduce_sum(e, axes=(0,))
    g = b.build([a, c, s2])
    new, old = _check(g, _args(g, seed=6), monkeypatch)
    stores = [k for k in new if "sub" in k["nodes"]]
    assert len(stores) == 1 and "add" in stores[0]["nodes"]


def test_an_expensive_value_keeps_its_loop(monkeypatch):
    b = ir.GraphBuilder("x")
    x = b.add_input(TensorType((16, 32), dt.float32))
    e = b.exp(x)
    g = b.build([b.add(e, x), b.reduce_sum(e, axes=(0,))])
    new, old = _check(g, _args(g, seed=9), monkeypatch)
    assert new == old and any(k["nodes"] == ["exp"] for k in new)


def test_mlp_grad_kernels(monkeypatch):
    """tp.compile(grad(...)) of a 2-layer relu MLP: the only bare `full` kernel is the ones a
    dot_general reads (the cotangent of the sum), materialised once; the relu's mask and activation
    come from one loop; the gradients match the interpreter."""
    import tensorplay as tp
    from tensorplay.func import grad

    def loss(w1, b1, w2, x):
        return (tp.relu(x @ w1 + b1) @ w2).sum()

    rng = np.random.default_rng(7)
    arrs = [rng.standard_normal(s).astype(np.float32) for s in ((12, 20), (20,), (20, 5), (9, 12))]
    low = tp.compile(grad(loss, argnums=(0, 1, 2))).lower(*map(tp.from_numpy, arrs))
    new, old = _check(low.graph, arrs, monkeypatch)
    assert len(new) < len(old)
    assert sum(k["nodes"] == ["full"] for k in new) == 1
    assert any({"add", "le", "select"} <= set(k["nodes"]) for k in new)
