"""A corpus of aliasing programs: views, in-place writes, and reads after writes.

Each `Program` has a version written once against the PyTorch API, run with
``L = tensorplay`` or ``L = torch`` (the two agree on every name used here), and
an independent numpy version using numpy's own views and in-place operators,
the oracle. A program takes ``x`` of shape (3, 4) and ``y`` of shape (4,)
(float64), may write into them and returns a tensor; the *caller-visible
state* is the value of ``x`` and ``y`` afterwards.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Program:
    name: str
    fn: Callable          # fn(L, x, y) with L = tensorplay or torch
    oracle: Callable      # oracle(x, y) on numpy arrays
    differentiable: bool = True   # the result is float and differs smoothly with x and y

    def __repr__(self) -> str:
        return self.name


def inputs() -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(12.0).reshape(3, 4) * 0.5 - 2.0
    y = np.array([1.0, -2.0, 3.0, 0.5])
    return x, y


PROGRAMS: list[Program] = []


def program(name: str, oracle: Callable, differentiable: bool = True):
    def deco(fn):
        PROGRAMS.append(Program(name, fn, oracle, differentiable))
        return fn
    return deco


def _np_row_add(x, y):
    x[0] += 1
    return x * 2


@program("row_add_then_read_base", _np_row_add)
def _(L, x, y):
    r = x[0]
    r.add_(1)
    return x * 2


def _np_col_T(x, y):
    x.T[1] *= 10
    return x.sum(0)


@program("write_column_through_T", _np_col_T)
def _(L, x, y):
    x.T[1].mul_(10)
    return x.sum(0)


def _np_strided(x, y):
    x[::2, 1::2] = -1
    return x.copy()


@program("strided_slice_fill", _np_strided)
def _(L, x, y):
    x[::2, 1::2].fill_(-1)
    return x.clone()


def _np_view_chain(x, y):
    x.reshape(2, 6)[:, 2:5] = 0
    return x + 0


@program("view_then_slice_zero", _np_view_chain)
def _(L, x, y):
    x.view(2, 6)[:, 2:5].zero_()
    return x + 0


def _np_reshape_copy(x, y):
    r = x.T.reshape(-1)  # not expressible with strides: a copy
    r += 100
    return r


@program("reshape_of_transpose_copies", _np_reshape_copy)
def _(L, x, y):
    r = x.t().reshape(-1)
    r.add_(100)
    return r


def _np_reshape_view(x, y):
    r = x.reshape(2, 6)
    r[1] = 3
    return x * 1


@program("reshape_of_contiguous_is_view", _np_reshape_view)
def _(L, x, y):
    r = x.reshape(2, 6)
    r[1].fill_(3)
    return x * 1


def _np_unflatten(x, y):
    x.reshape(3, 2, 2)[:, 1, 0] = 9
    return x.sum()


@program("unflatten_write", _np_unflatten)
def _(L, x, y):
    x.unflatten(1, (2, 2))[:, 1, 0].fill_(9)
    return x.sum()


def _np_diag(x, y):
    x.reshape(-1)[0::5][:3] = 0
    return x * 1


@program("diagonal_fill", _np_diag)
def _(L, x, y):
    x.diagonal().fill_(0)
    return x * 1


def _np_diag1(x, y):
    x.reshape(-1)[1::5][:3] *= 2
    return x.max(1)


@program("diagonal_offset_mul", _np_diag1, differentiable=False)
def _(L, x, y):
    x.diagonal(1).mul_(2)
    return x.amax(1)


def _np_split(x, y):
    for i in range(3):
        x[i:i + 1] *= 2
    return x + 1


@program("split_pieces_mul", _np_split)
def _(L, x, y):
    for p in x.split(1, 0):
        p.mul_(2)
    return x + 1


def _np_chunk(x, y):
    x[:, :2] += 0
    x[:, 2:] += 1
    return x * 3


@program("chunk_pieces_add", _np_chunk)
def _(L, x, y):
    for i, p in enumerate(x.chunk(2, 1)):
        p.add_(i)
    return x * 3


def _np_unbind(x, y):
    x[1] -= x[0]
    return x[1] * 1


@program("unbind_rows_sub", _np_unbind)
def _(L, x, y):
    a, b, c = x.unbind(0)
    b.sub_(a)
    return b * 1


def _np_set_int(x, y):
    x[1, 2] = 7.0
    return x - 1


@program("setitem_int", _np_set_int)
def _(L, x, y):
    x[1, 2] = 7.0
    return x - 1


def _np_set_col(x, y):
    x[:, 1] = y[:3]
    return x * y


@program("setitem_column_from_other_arg", _np_set_col)
def _(L, x, y):
    x[:, 1] = y[:3]
    return x * y


def _np_set_adv(x, y):
    x[[0, 2], [1, 3]] = 7.0
    return x * 2


@program("setitem_advanced", _np_set_adv)
def _(L, x, y):
    x[[0, 2], [1, 3]] = 7.0
    return x * 2


def _np_set_mask(x, y):
    x[x > 0.7] = 0.0
    return x * 2


@program("setitem_mask", _np_set_mask)
def _(L, x, y):
    x[x > 0.7] = 0.0
    return x * 2


def _np_set_rows_mask(x, y):
    x[np.array([True, False, True])] = y
    return x + 1


@program("setitem_row_mask_broadcast", _np_set_rows_mask)
def _(L, x, y):
    x[L.tensor([True, False, True])] = y
    return x + 1


def _np_set_newaxis(x, y):
    x[..., None][1, 2, 0] = -5
    return x * 1


@program("setitem_ellipsis_newaxis", _np_set_newaxis)
def _(L, x, y):
    x[..., None][1, 2, 0] = -5
    return x * 1


def _np_iadd_view(x, y):
    v = x[1]
    v += 5
    return v * 1


@program("iadd_on_view", _np_iadd_view)
def _(L, x, y):
    v = x[1]
    v += 5
    return v * 1


def _np_views_see(x, y):
    w = x[:, 0]
    x[0] += 1
    return w.copy()


@program("other_view_sees_write", _np_views_see)
def _(L, x, y):
    v, w = x[0], x[:, 0]
    v.add_(1)
    return w.clone()


def _np_stale(x, y):
    v = x[1]
    x *= 2
    return v * 1


@program("view_read_after_base_write", _np_stale)
def _(L, x, y):
    v = x[1]
    x.mul_(2)
    return v * 1


def _np_expand_read(x, y):
    e = np.broadcast_to(x[0], (2, 4))
    x[0, 0] = 50
    return e.sum(1)


@program("expanded_view_sees_write", _np_expand_read)
def _(L, x, y):
    e = x[0].expand(2, 4)
    x[0, 0] = 50
    return e.sum(1)


def _np_detach(x, y):
    x += 1
    return x * 1


@program("write_through_detach", _np_detach, differentiable=False)
def _(L, x, y):
    x.detach().add_(1)
    return x * 1


def _np_two_args(x, y):
    x += y
    y *= 2
    return x + y


@program("write_both_args", _np_two_args)
def _(L, x, y):
    x.add_(y)
    y.mul_(2)
    return x + y


def _np_copy(x, y):
    x[0] = y
    return x * 1


@program("copy_into_row", _np_copy)
def _(L, x, y):
    x[0].copy_(y)
    return x * 1


def _np_masked_fill(x, y):
    x[x > 0.7] = -1.0
    return x * 1


@program("masked_fill_", _np_masked_fill)
def _(L, x, y):
    return x.masked_fill_(x > 0.7, -1.0) * 1


def _np_clamp(x, y):
    np.clip(x[1:], -0.5, 1.0, out=x[1:])
    return x * 1


@program("clamp_on_slice", _np_clamp, differentiable=False)
def _(L, x, y):
    x[1:].clamp_(-0.5, 1.0)
    return x * 1


def _np_flatten(x, y):
    x.reshape(-1)[3:6] = 0
    return x * 1


@program("flatten_is_view", _np_flatten)
def _(L, x, y):
    x.flatten()[3:6].fill_(0)
    return x * 1


def _np_select(x, y):
    x[1, 2] = 42
    return x * 1


@program("select_chain", _np_select)
def _(L, x, y):
    x.select(1, 2).select(0, 1).fill_(42)
    return x * 1


def _np_narrow(x, y):
    x[:, 1:3] *= -1
    return x * 1


@program("narrow_neg_", _np_narrow)
def _(L, x, y):
    x.narrow(1, 1, 2).neg_()
    return x * 1


def _np_permute(x, y):
    x.reshape(2, 3, 2).transpose(2, 0, 1)[1, :, 2] = 0
    return x * 1


@program("permute_3d_write", _np_permute)
def _(L, x, y):
    x.reshape(2, 3, 2).permute(2, 0, 1)[1, :, 2].fill_(0)
    return x * 1


def _np_squeeze(x, y):
    x[1] += 1
    return x * 1


@program("unsqueeze_squeeze_write", _np_squeeze)
def _(L, x, y):
    x.unsqueeze(0)[0, 1].unsqueeze(1).squeeze(1).add_(1)
    return x * 1


def _np_contig(x, y):
    r = np.ascontiguousarray(x.T).reshape(-1)
    r += 1
    return r


@program("contiguous_of_transpose_copies", _np_contig)
def _(L, x, y):
    r = x.transpose(0, 1).contiguous().view(-1)
    r.add_(1)
    return r


def _np_chain(x, y):
    x *= 2
    x += 1
    np.clip(x, -1, 4, out=x)
    return x * 1


@program("chained_inplace", _np_chain, differentiable=False)
def _(L, x, y):
    return x.mul_(2).add_(1).clamp_(-1, 4) * 1


def _np_buffer(x, y):
    buf = np.zeros((2, 4))
    buf[0] = x[0]
    buf[1] += x[2]
    return buf


@program("local_buffer", _np_buffer)
def _(L, x, y):
    buf = L.zeros(2, 4, dtype=x.dtype)
    buf[0] = x[0]
    buf[1].add_(x[2])
    return buf


def _np_buffer_acc(x, y):
    buf = np.zeros((2, 4))
    buf += x[:2]
    buf += x[:2]
    return buf


@program("local_buffer_accumulates", _np_buffer_acc)
def _(L, x, y):
    buf = L.zeros(2, 4, dtype=x.dtype)
    buf += x[:2]
    buf += x[:2]
    return buf


def _np_TT(x, y):
    x[0] = 1
    return x * 1


@program("T_of_T_write", _np_TT)
def _(L, x, y):
    x.T.T[0].fill_(1)
    return x * 1


def _np_index_fill(x, y):
    x[:, [0, 2]] = -2.0
    return x * 1


@program("index_fill_", _np_index_fill)
def _(L, x, y):
    x.index_fill_(1, L.tensor([0, 2]), -2.0)
    return x * 1


def _np_shift(x, y):
    x[1:] = x[:-1].copy()
    return x * 1


@program("shift_rows_copy_", _np_shift)
def _(L, x, y):
    x[1:].copy_(x[:-1].clone())
    return x * 1


def _np_zero_vv(x, y):
    x[1:, ::2][0] = 0
    return x * 1


@program("zero_view_of_view", _np_zero_vv)
def _(L, x, y):
    x[1:, ::2][0].zero_()
    return x * 1


def _np_row_iadd(x, y):
    x[0] += x[1]
    return x * 1


@program("setitem_iadd_row", _np_row_iadd)
def _(L, x, y):
    x[0] += x[1]
    return x * 1


def _np_index_put(x, y):
    x[[0, 1]] = y
    return x * 1


@program("index_put_", _np_index_put)
def _(L, x, y):
    x.index_put_((L.tensor([0, 1]),), y)
    return x * 1


def _np_imul_cols(x, y):
    x[:, 1:3] *= 2
    return x * 1


@program("imul_column_block", _np_imul_cols)
def _(L, x, y):
    x[:, 1:3] *= 2
    return x * 1


def _np_scalar_view(x, y):
    x[1, 1] = 3
    return x * 1


@program("fill_0d_view", _np_scalar_view)
def _(L, x, y):
    s = x[1, 1]
    s.fill_(3)
    return x * 1


def _np_write_y_view_of_x(x, y):
    y[:] = x[2]
    x[2] = 0
    return y * 1


@program("copy_then_overwrite_source", _np_write_y_view_of_x)
def _(L, x, y):
    y.copy_(x[2])
    x[2] = 0
    return y * 1


def _np_return_input(x, y):
    x += 1
    return x


@program("return_mutated_input", _np_return_input)
def _(L, x, y):
    x.add_(1)
    return x


def _np_return_view(x, y):
    return x[1, 1:]


@program("return_view_of_input", _np_return_view)
def _(L, x, y):
    return x[1, 1:]
