"""Eager view semantics: which ops share storage, `_base` / `_is_view()`, and writes through views.

Every view op is checked both ways (a write into the view reaches the base, a write into the
base is seen by the view) and, when torch is importable, against torch's own answer to "is this
a view?".
"""
import numpy as np
import pytest

import tensorplay as tp

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

# (name, op) -- ops written against the PyTorch API, applied to a fresh (2, 3, 4) tensor
VIEW_OPS = [
    ("basic_index", lambda x: x[1]),
    ("slice_step", lambda x: x[:, ::2, 1:]),
    ("ellipsis_none", lambda x: x[..., None, 2]),
    ("view", lambda x: x.view(6, 4)),
    ("view_infer", lambda x: x.view(-1)),
    ("reshape_contiguous", lambda x: x.reshape(4, 6)),
    ("transpose", lambda x: x.transpose(0, 2)),
    ("permute", lambda x: x.permute(1, 2, 0)),
    ("T_2d", lambda x: x[0].T),
    ("t", lambda x: x[1].t()),
    ("mT", lambda x: x.mT),
    ("expand", lambda x: x[:, :1].expand(2, 5, 4)),
    ("unsqueeze", lambda x: x.unsqueeze(1)),
    ("squeeze", lambda x: x[:, :1].squeeze(1)),
    ("narrow", lambda x: x.narrow(2, 1, 2)),
    ("select", lambda x: x.select(1, 2)),
    ("diagonal", lambda x: x.diagonal(0, 1, 2)),
    ("diagonal_offset", lambda x: x[0].diagonal(1)),
    ("unflatten", lambda x: x.unflatten(2, (2, 2))),
    ("flatten_contiguous", lambda x: x.flatten(1)),
    ("split_piece", lambda x: x.split(2, dim=2)[1]),
    ("chunk_piece", lambda x: x.chunk(3, dim=1)[2]),
    ("unbind_piece", lambda x: x.unbind(0)[1]),
    ("movedim", lambda x: x.movedim(0, -1)),
    ("view_as", lambda x: x.view_as(tp.zeros(4, 6) if isinstance(x, tp.Tensor) else torch.zeros(4, 6))),
]

COPY_OPS = [
    ("flip", lambda x: x.flip(0)),
    ("reshape_noncontiguous", lambda x: x.transpose(0, 1).reshape(-1)),
    ("flatten_noncontiguous", lambda x: x.permute(2, 0, 1).flatten()),
    ("contiguous_of_transpose", lambda x: x.transpose(1, 2).contiguous()),
    ("clone", lambda x: x.clone()),
    ("arith", lambda x: x * 1),
    ("advanced_index", lambda x: x[[0, 1], [2, 0]]),
    ("mask_index", lambda x: x[x > 3]),
    ("roll", lambda x: x.roll(1, 0)),
    ("repeat", lambda x: x.repeat(1, 1, 2)),
    ("cat", lambda x: (tp if isinstance(x, tp.Tensor) else torch).cat([x, x])),
]


def fresh(lib=tp):
    arr = np.arange(24.0).reshape(2, 3, 4)
    return tp.tensor(arr) if lib is tp else torch.tensor(arr)


@pytest.mark.parametrize("name,op", VIEW_OPS, ids=[n for n, _ in VIEW_OPS])
def test_view_ops_share_storage_both_ways(name, op):
    x = fresh()
    v = op(x)
    assert v._is_view() and v._base is x
    assert np.shares_memory(v.numpy(), x.numpy())
    # base -> view
    x.add_(1000)
    np.testing.assert_array_equal(v.numpy(), op(fresh()).numpy() + 1000)
    if name == "expand":  # as in torch: writes with elements sharing memory raise, except fill_
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            v.add_(-1)
        v.fill_(-1)
        assert (op(x).numpy() == -1).all()
        return
    # view -> base
    v.fill_(-1)
    ref = fresh().numpy()
    ref += 1000
    np.testing.assert_array_equal(op(tp.tensor(ref)).numpy() * 0 - 1, v.numpy())
    assert (x.numpy() == -1).sum() == v.numel()


@pytest.mark.parametrize("name,op", COPY_OPS, ids=[n for n, _ in COPY_OPS])
def test_copying_ops_own_their_storage(name, op):
    x = fresh()
    c = op(x)
    assert not c._is_view() and c._base is None
    assert not np.shares_memory(c.numpy(), x.numpy())
    c.fill_(-1) if c.numel() else None
    np.testing.assert_array_equal(x.numpy(), np.arange(24.0).reshape(2, 3, 4))


@needs_torch
@pytest.mark.parametrize("name,op", VIEW_OPS + COPY_OPS, ids=[n for n, _ in VIEW_OPS + COPY_OPS])
def test_is_view_agrees_with_torch(name, op):
    x, tx = fresh(), fresh(torch)
    v, tv = op(x), op(tx)
    assert v._is_view() == tv._is_view()
    np.testing.assert_array_equal(v.numpy(), tv.numpy())


def test_detach_shares_storage_without_being_a_view():
    x = fresh()
    for d in (x.detach(), x.data, x[1].detach()):
        assert not d._is_view() and np.shares_memory(d.numpy(), x.numpy())
        d.add_(1)
    assert x[0, 0, 0].item() == 2 and x[1, 0, 0].item() == 15
    if torch is not None:
        tx = fresh(torch)
        assert not tx.detach()._is_view() and not tx.data._is_view()


def test_views_of_views_have_the_root_as_base():
    x = tp.zeros(4, 4)
    v = x[1:].T[::2]
    assert v._base is x
    v[0, 1] = 5
    assert x[2, 0].item() == 5


def test_setitem_every_index_form_writes_through_views():
    x = tp.zeros(3, 4)
    alias = x.T  # every write below must show through this view
    x[0] = 1
    x[1, 2] = 2
    x[:, -1] = tp.tensor([7.0, 8.0, 9.0])
    x[..., 0] = 3
    x[None, 2, 1] = 4
    x[[0, 2], [1, 1]] = 5
    x[tp.tensor([False, True, False])] = tp.tensor([6.0, 6.0, 6.0, 6.0])
    x[x > 8] = -1
    x[1:, ::2] += 10
    ref = np.zeros((3, 4))
    ref[0] = 1
    ref[1, 2] = 2
    ref[:, -1] = [7.0, 8.0, 9.0]
    ref[..., 0] = 3
    ref[None, 2, 1] = 4
    ref[[0, 2], [1, 1]] = 5
    ref[np.array([False, True, False])] = 6
    ref[ref > 8] = -1
    ref[1:, ::2] += 10
    np.testing.assert_array_equal(x.numpy(), ref)
    np.testing.assert_array_equal(alias.numpy(), ref.T)


def test_inplace_methods_return_self_and_write_through():
    x = tp.arange(6.0).reshape(2, 3)
    row = x[1]
    for name, args in [("add_", (1,)), ("sub_", (0.5,)), ("mul_", (2,)), ("div_", (4,)), ("clamp_", (0, 2)),
                       ("pow_", (2,)), ("neg_", ()), ("abs_", ()), ("sqrt_", ()), ("exp_", ()), ("log_", ()),
                       ("copy_", (tp.ones(3),)), ("zero_", ()), ("fill_", (3,)), ("sigmoid_", ()),
                       ("masked_fill_", (tp.tensor([True, False, True]), 9.0))]:
        before = row.numpy().copy()
        out = getattr(row, name)(*args)
        assert out is row, name
        expect = getattr(tp.tensor(before), name)(*args).numpy()
        np.testing.assert_allclose(x.numpy()[1], expect, err_msg=name)
    assert np.array_equal(x.numpy()[0], [0.0, 1.0, 2.0])


def test_inplace_dtype_rules():
    i = tp.zeros(3, dtype=tp.int64)
    with pytest.raises(TypeError, match="can't be cast"):
        i.add_(1.5)
    i.copy_(tp.tensor([1.7, -2.2, 3.0]))  # copy_ converts, truncating like torch
    assert i.tolist() == [1, -2, 3]
    i[0] = 9.9
    i.fill_(2.5) if False else None
    assert i.tolist() == [9, -2, 3]


def test_reshape_copies_only_when_strides_do_not_allow_a_view():
    x = tp.zeros(4, 6)
    assert x.reshape(2, 12)._base is x
    assert x[:, :3].reshape(12)._base is None          # rows are not contiguous: a copy
    assert x[:, :3].reshape(4, 3, 1)._base is x          # only unit dims added: still a view
    assert x.T.reshape(2, 2, 6)._base is None
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.T.view(-1)
    assert x.T.contiguous()._base is None and x.contiguous() is x
    assert not x.T.is_contiguous() and x.is_contiguous()


def test_expand_writes_raise_like_torch():
    x = tp.zeros(1, 3)
    e = x.expand(4, 3)
    for write in (lambda: e.add_(1), lambda: e[:, 0].add_(1), lambda: e.__setitem__(Ellipsis, 1.0)):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            write()
    x.expand(1, 1, 3).add_(1)  # nothing repeated: a writable view, as in torch
    np.testing.assert_array_equal(x.numpy(), [[1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(e.numpy(), np.ones((4, 3)))
    e[1].zero_()  # a row of the expanded tensor repeats nothing: torch writes it through
    np.testing.assert_array_equal(x.numpy(), [[0.0, 0.0, 0.0]])
    e.fill_(2)  # fill_ writes one value, so torch allows it even with elements sharing memory
    np.testing.assert_array_equal(x.numpy(), [[2.0, 2.0, 2.0]])


def test_iadd_rebinds_to_the_same_object():
    x = tp.zeros(3)
    alias = x
    x += 1
    assert x is alias and x.tolist() == [1.0, 1.0, 1.0]
    y = x[1:]
    y *= 4
    assert x.tolist() == [1.0, 4.0, 4.0]


def test_results_of_computations_are_writable_contiguous_storage():
    x = tp.arange(12.0).reshape(3, 4)
    for out in (x.T * 1, x.flip(1), tp.arange(3), tp.full((2, 2), 1.0), x.T.exp()):
        arr = out.numpy()
        assert arr.flags.writeable and arr.flags.c_contiguous and not np.shares_memory(arr, x.numpy())
