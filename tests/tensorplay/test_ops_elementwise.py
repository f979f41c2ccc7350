"""Elementwise ops against a numpy oracle: values, broadcasting, and PyTorch's dtype promotion
over bool/int32/int64/float32/float64 tensors (0-d, empty, non-contiguous) and Python scalars."""
import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import tensorplay as tp

from test_ops_support import (DTYPES, NP, arrays, check, dtypes, float_dtypes, is_float, layouts, make_tensor,
                              np_value, quiet, scalars, shapes, tensors, torch_result_type)

_erf = np.vectorize(math.erf, otypes=[np.float64])

UNARY_FLOAT = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "exp": np.exp, "log": np.log, "log1p": np.log1p,
    "expm1": np.expm1, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "erf": lambda x: _erf(x).astype(x.dtype),
}


@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
@given(data=tensors(special=True))
def test_unary_float_functions(name, data):
    t, arr = data
    out_dtype = t.dtype if is_float(t.dtype) else tp.float32
    with quiet():
        expected = UNARY_FLOAT[name](arr.astype(NP[out_dtype]))
    rtol = 1e-4 if name in ("sigmoid", "erf", "tan") else None
    check(getattr(tp, name)(t), expected, out_dtype, rtol=rtol, atol=1e-6 if rtol else None)
    check(getattr(t, name)(), expected, out_dtype, rtol=rtol, atol=1e-6 if rtol else None)


@given(data=tensors(special=True))
def test_neg_abs_sign(data):
    t, arr = data
    if t.dtype is tp.bool:
        for fn in (tp.neg, tp.abs, lambda x: -x):
            with pytest.raises(TypeError, match="bool"):
                fn(t)
        check(tp.sign(t), arr, tp.bool)
        return
    check(tp.neg(t), -arr, t.dtype)
    check(-t, -arr, t.dtype)
    check(tp.negative(t), -arr, t.dtype)
    check(tp.abs(t), np.abs(arr), t.dtype)
    check(abs(t), np.abs(arr), t.dtype)
    check(tp.sign(t), np.where(np.isnan(arr), 0, np.sign(arr)).astype(arr.dtype), t.dtype)  # torch: sign(nan) = 0


@given(data=tensors(special=True), decimals=st.integers(-1, 3))
def test_rounding(data, decimals):
    t, arr = data
    if t.dtype is tp.bool:  # not defined for bool in PyTorch
        for fn in (tp.floor, tp.ceil, tp.round):
            with pytest.raises(TypeError, match="bool"):
                fn(t)
        return
    for name, ref in (("floor", np.floor), ("ceil", np.ceil), ("round", np.round)):
        out = getattr(tp, name)(t)
        check(out, ref(arr) if is_float(t.dtype) else arr, t.dtype)
        if t.numel():
            assert not np.shares_memory(out.numpy(), t.numpy())  # PyTorch returns a new tensor
    if is_float(t.dtype):
        check(tp.round(t, decimals=decimals), np.round(arr, decimals), t.dtype, rtol=1e-6)
    elif decimals:
        with pytest.raises(TypeError, match="decimals"):
            tp.round(t, decimals=decimals)


@given(data=tensors(special=True))
def test_relu(data):
    t, arr = data
    if t.dtype is tp.bool:
        with pytest.raises(TypeError):
            tp.relu(t)
        return
    check(tp.relu(t), np.maximum(arr, 0).astype(arr.dtype), t.dtype)


# --- binary ops -----------------------------------------------------------------------------------
@st.composite
def operand_pairs(draw, dtypes_=dtypes, allow_scalars=True, **kw):
    """(a, b) broadcastable tensors of any dtypes/layouts, or one of them a Python scalar."""
    (sa, sb), _ = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3))
    da, db = draw(dtypes_), draw(dtypes_)
    a = make_tensor(draw(arrays(da, sa, **kw)), draw(layouts))
    b = make_tensor(draw(arrays(db, sb, **kw)), draw(layouts))
    mode = draw(st.sampled_from(["tt", "ts", "st"])) if allow_scalars else "tt"
    if mode == "ts":
        b = draw(scalars())
    elif mode == "st":
        a = draw(scalars())
    return a, b


def _values(a, b, dtype):
    return np_value(a, dtype), np_value(b, dtype)


def _shape(a, b):
    sa = tuple(a.shape) if isinstance(a, tp.Tensor) else ()
    sb = tuple(b.shape) if isinstance(b, tp.Tensor) else ()
    return np.broadcast_shapes(sa, sb)


@given(pair=operand_pairs())
def test_add_sub_mul(pair):
    a, b = pair
    dtype = torch_result_type(a, b)
    x, y = _values(a, b, dtype)
    shape = _shape(a, b)
    if any(isinstance(o, bool) or (isinstance(o, tp.Tensor) and o.dtype is tp.bool) for o in (a, b)):
        with pytest.raises(TypeError, match="sub.*bool"):  # PyTorch refuses any bool operand of `-`
            tp.sub(a, b)
    if dtype is tp.bool:
        check(tp.add(a, b), np.broadcast_to(x | y, shape), tp.bool)
        check(tp.mul(a, b), np.broadcast_to(x & y, shape), tp.bool)
        return
    has_bool = any(isinstance(o, bool) or o.dtype is tp.bool for o in (a, b) if isinstance(o, (bool, tp.Tensor)))
    check(tp.add(a, b), np.broadcast_to(x + y, shape), dtype)
    check(tp.mul(a, b), np.broadcast_to(x * y, shape), dtype)
    check(tp.add(a, b, alpha=2), np.broadcast_to(x + y * NP[dtype](2), shape), dtype)
    if not has_bool:
        check(tp.sub(a, b), np.broadcast_to(x - y, shape), dtype)
        check(tp.sub(a, b, alpha=3), np.broadcast_to(x - y * NP[dtype](3), shape), dtype)
    if isinstance(a, tp.Tensor):
        check(a + b, np.broadcast_to(x + y, shape), dtype)
        check(a * b, np.broadcast_to(x * y, shape), dtype)
        if not has_bool:
            check(a - b, np.broadcast_to(x - y, shape), dtype)
    else:
        check(b.__radd__(a), np.broadcast_to(x + y, shape), dtype)
        check(b.__rmul__(a), np.broadcast_to(x * y, shape), dtype)
        if not has_bool:
            check(b.__rsub__(a), np.broadcast_to(x - y, shape), dtype)
    if not is_float(dtype):
        with pytest.raises(TypeError, match="alpha"):
            tp.add(a, b, alpha=0.5)


@given(pair=operand_pairs())
def test_true_division(pair):
    a, b = pair
    dtype = torch_result_type(a, b)
    out_dtype = dtype if is_float(dtype) else tp.float32  # int / int -> default float
    x, y = _values(a, b, out_dtype)
    with quiet():
        expected = np.broadcast_to(x / y, _shape(a, b))
    check(tp.div(a, b), expected, out_dtype)
    check(tp.true_divide(a, b), expected, out_dtype)
    if isinstance(a, tp.Tensor):
        check(a / b, expected, out_dtype)


@given(pair=operand_pairs())
def test_rounding_division(pair):
    a, b = pair
    dtype = torch_result_type(a, b)
    if dtype is tp.bool:
        with pytest.raises(TypeError):
            tp.floor_divide(a, b)
        return
    x, y = _values(a, b, dtype)
    shape = _shape(a, b)
    if not is_float(dtype) and np.any(y == 0):
        for fn in (tp.floor_divide, tp.remainder, tp.fmod):
            with pytest.raises(RuntimeError, match="ZeroDivisionError"):
                fn(a, b)
        return
    with quiet():
        check(tp.floor_divide(a, b), np.broadcast_to(np.floor_divide(x, y), shape), dtype)
        check(tp.div(a, b, rounding_mode="floor"), np.broadcast_to(np.floor_divide(x, y), shape), dtype)
        check(tp.div(a, b, rounding_mode="trunc"), np.broadcast_to(np.trunc(x / y) if is_float(dtype) else
                                                                   (np.abs(x) // np.abs(y)) * np.sign(x) * np.sign(y),
                                                                   shape), dtype)
        check(tp.remainder(a, b), np.broadcast_to(np.remainder(x, y), shape), dtype)
        check(tp.fmod(a, b), np.broadcast_to(np.fmod(x, y), shape), dtype)
        if isinstance(a, tp.Tensor):
            check(a // b, np.broadcast_to(np.floor_divide(x, y), shape), dtype)
            check(a % b, np.broadcast_to(np.remainder(x, y), shape), dtype)


def test_python_floor_division_rounding():
    # 1 // 0.1 is 9 in Python, numpy and PyTorch although 1 / 0.1 rounds to 10
    check(tp.floor_divide(tp.tensor([1.0, -1.0], dtype=tp.float64), 0.1), [9.0, -10.0], tp.float64)
    check(tp.tensor([-0.0, 0.0, 5.0]) // tp.tensor([3.0, -3.0, 0.0]), [-0.0, -0.0, np.inf], tp.float32)
    assert np.signbit(tp.floor_divide(tp.tensor([0.0]), -3.0).numpy()[0])


@given(pair=operand_pairs(lo=-4, hi=4))
def test_pow(pair):
    a, b = pair
    dtype = torch_result_type(a, b)
    shape = _shape(a, b)
    if dtype is tp.bool:
        with pytest.raises(TypeError):
            tp.pow(a, b)
        return
    x, y = _values(a, b, dtype)
    if is_float(dtype):
        with quiet():
            expected = np.power(x, y)
        check(tp.pow(a, b), np.broadcast_to(expected, shape), dtype, rtol=1e-5)
        return
    if isinstance(b, int) and b < 0 and isinstance(a, tp.Tensor):
        with pytest.raises(ValueError, match="negative integer powers"):
            tp.pow(a, b)
        return
    # integer powers stay integer; negative exponents give 1, +-1 or 0 as in PyTorch
    xb, yb = np.broadcast_arrays(x, y)
    expected = np.array([int(p) ** int(q) if q >= 0 else (1 if p == 1 else (-1) ** int(-q) if p == -1 else 0)
                         for p, q in zip(xb.ravel(), yb.ravel())], dtype=NP[dtype]).reshape(shape)
    check(tp.pow(a, b), expected, dtype)
    if isinstance(a, tp.Tensor):
        check(a ** b, expected, dtype)


def test_pow_specials():
    x = tp.tensor([2, -3, 0], dtype=tp.int32)
    check(x ** 0, [1, 1, 1], tp.int32)
    check(x ** 2, [4, 9, 0], tp.int32)
    with quiet():
        check(x ** 0.5, np.power(np.array([2, -3, 0], np.float32), 0.5), tp.float32)
    check(2 ** tp.tensor([0, 3, 10]), [1, 8, 1024], tp.int64)
    check(tp.tensor([True, False]) ** 2, [1, 0], tp.int64)
    check(tp.tensor([2.0]) ** tp.tensor(3, dtype=tp.int64), [8.0], tp.float32)
    y = x ** 1
    y += 1
    assert x.tolist() == [2, -3, 0]  # x ** 1 is a new tensor
    y = x ** 0
    y += 1
    assert y.tolist() == [2, 2, 2]


@given(pair=operand_pairs())
def test_maximum_minimum_atan2(pair):
    a, b = pair
    dtype = torch_result_type(a, b)
    x, y = _values(a, b, dtype)
    shape = _shape(a, b)
    check(tp.maximum(a, b), np.broadcast_to(np.maximum(x, y), shape), dtype)
    check(tp.minimum(a, b), np.broadcast_to(np.minimum(x, y), shape), dtype)
    fdt = dtype if is_float(dtype) else tp.float32
    xf, yf = _values(a, b, fdt)
    check(tp.atan2(a, b), np.broadcast_to(np.arctan2(xf, yf), shape), fdt)


@pytest.mark.parametrize("name,ref", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                                      ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)])
@given(pair=operand_pairs(special=True))
def test_comparisons(name, ref, pair):
    a, b = pair
    dtype = torch_result_type(a, b)
    x, y = _values(a, b, dtype)  # compared in the promoted dtype
    expected = np.broadcast_to(ref(x, y), _shape(a, b))
    check(getattr(tp, name)(a, b), expected, tp.bool)
    op = {"eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__", "gt": "__gt__", "ge": "__ge__"}[name]
    if isinstance(a, tp.Tensor):
        check(getattr(a, op)(b), expected, tp.bool)


@given(pair=operand_pairs(dtypes_=st.sampled_from([tp.bool, tp.int32, tp.int64])))
def test_bitwise_and_logical(pair):
    a, b = pair
    if isinstance(a, float) or isinstance(b, float):
        with pytest.raises(TypeError):
            tp.bitwise_and(a, b)
        return
    dtype = torch_result_type(a, b)
    x, y = _values(a, b, dtype)
    shape = _shape(a, b)
    check(tp.bitwise_and(a, b), np.broadcast_to(x & y, shape), dtype)
    check(tp.bitwise_or(a, b), np.broadcast_to(x | y, shape), dtype)
    check(tp.bitwise_xor(a, b), np.broadcast_to(x ^ y, shape), dtype)
    xa = np_value(a, dtype)
    check(tp.bitwise_not(tp.tensor(xa)), ~xa, dtype)
    check(tp.logical_and(a, b), np.broadcast_to(np.logical_and(x, y), shape), tp.bool)
    check(tp.logical_or(a, b), np.broadcast_to(np.logical_or(x, y), shape), tp.bool)
    check(tp.logical_not(tp.tensor(xa)), np.logical_not(xa), tp.bool)


@given(data=tensors(dtype=tp.float32))
def test_bitwise_rejects_floats(data):
    t, _ = data
    for fn in (tp.bitwise_and, tp.bitwise_or, tp.bitwise_xor):
        with pytest.raises(TypeError, match="floating"):
            fn(t, t)
    with pytest.raises(TypeError, match="bitwise_not"):
        tp.bitwise_not(t)


@st.composite
def where_args(draw):
    (sc, sa, sb), _ = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=3))
    cond = draw(arrays(tp.bool, sc))
    a = make_tensor(draw(arrays(draw(dtypes), sa)), draw(layouts))
    b = make_tensor(draw(arrays(draw(dtypes), sb)), draw(layouts))
    mode = draw(st.sampled_from(["tt", "ts", "st", "ss"]))
    if mode[0] == "s":
        a = draw(scalars())
    if mode[1] == "s":
        b = draw(scalars())
    return make_tensor(cond, draw(layouts)), cond, a, b


@given(args=where_args())
def test_where(args):
    c, cond, a, b = args
    dtype = torch_result_type(a, b)
    x, y = _values(a, b, dtype)
    shape = np.broadcast_shapes(cond.shape, _shape(a, b))
    check(tp.where(c, a, b), np.broadcast_to(np.where(cond, x, y), shape), dtype)
    if isinstance(a, tp.Tensor):
        check(a.where(c, b), np.broadcast_to(np.where(cond, x, y), shape), dtype)


@given(data=tensors(special=True), lo=st.one_of(st.none(), scalars("int"), scalars("float")),
       hi=st.one_of(st.none(), scalars("int"), scalars("float")), tensor_bounds=st.booleans())
def test_clamp(data, lo, hi, tensor_bounds):
    t, arr = data
    if lo is None and hi is None:
        with pytest.raises(ValueError, match="clamp"):
            tp.clamp(t)
        return
    if t.dtype is tp.bool and (lo is not None or hi is not None):
        assume(False)
    lo_t = tp.tensor(lo, dtype=t.dtype) if tensor_bounds and lo is not None and not isinstance(lo, float) else lo
    hi_t = tp.tensor(hi, dtype=t.dtype) if tensor_bounds and hi is not None and not isinstance(hi, float) else hi
    dtype = torch_result_type(t, *[v for v in (lo_t, hi_t) if v is not None])
    out = arr.astype(NP[dtype])
    if lo is not None:
        out = np.maximum(out, NP[dtype](lo))
    if hi is not None:
        out = np.minimum(out, NP[dtype](hi))  # min > max gives max everywhere, as in PyTorch
    check(tp.clamp(t, lo_t, hi_t), out, dtype)
    check(tp.clip(t, min=lo_t, max=hi_t), out, dtype)
    check(t.clamp(lo_t, hi_t), out, dtype)


@given(data=tensors(special=True))
def test_square_reciprocal_isnan_isfinite(data):
    t, arr = data
    sq_dtype = tp.int64 if t.dtype is tp.bool else t.dtype
    a = arr.astype(NP[sq_dtype])
    check(tp.square(t), a * a, sq_dtype)
    fdt = t.dtype if is_float(t.dtype) else tp.float32
    with quiet():
        check(tp.reciprocal(t), 1 / arr.astype(NP[fdt]), fdt)
    check(tp.isnan(t), np.isnan(arr) if is_float(t.dtype) else np.zeros(arr.shape, bool), tp.bool)
    check(tp.isfinite(t), np.isfinite(arr) if is_float(t.dtype) else np.ones(arr.shape, bool), tp.bool)
    out = tp.isfinite(t)
    out.logical_not()  # a plain, usable result tensor
    if out.numel():
        out[...] = False  # writable
        assert not out.any()


@given(dtype=float_dtypes, shape=shapes(max_dims=3), data=st.data())
def test_lerp_addcmul_addcdiv(dtype, shape, data):
    a, b, c = (data.draw(arrays(dtype, shape)) for _ in range(3))
    ta, tb, tc = (make_tensor(v, data.draw(layouts)) for v in (a, b, c))
    w = data.draw(st.sampled_from([0.0, 0.25, 1.0, -0.5]))
    check(tp.lerp(ta, tb, w), a + NP[dtype](w) * (b - a), dtype, rtol=1e-5, atol=1e-5)
    check(tp.addcmul(ta, tb, tc, value=2), a + 2 * b * c, dtype, rtol=1e-5, atol=1e-5)
    with quiet():
        check(tp.addcdiv(ta, tb, tc, value=0.5), a + NP[dtype](0.5) * (b / c), dtype, rtol=1e-5, atol=1e-5)


@given(pair=operand_pairs(dtypes_=st.sampled_from([tp.float32, tp.float64]), allow_scalars=False, special=True),
       rtol=st.sampled_from([0.0, 1e-5, 0.1]), atol=st.sampled_from([0.0, 1e-8, 0.5]), equal_nan=st.booleans())
def test_isclose_allclose_equal(pair, rtol, atol, equal_nan):
    a, b = pair
    dtype = torch_result_type(a, b)
    x, y = _values(a, b, dtype)
    with quiet():
        err = np.abs(x - y)
        expected = (x == y) | (np.isfinite(err) & (err <= atol + np.abs(rtol * y)))
        if equal_nan:
            expected |= np.isnan(x) & np.isnan(y)
    expected = np.broadcast_to(expected, _shape(a, b))
    check(tp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan), expected, tp.bool)
    assert tp.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan) == bool(expected.all())
    same_shape = tuple(a.shape) == tuple(b.shape)
    assert tp.equal(a, b) == (same_shape and bool(np.all(x == y)))


def test_isclose_infinities_and_ints():
    inf = float("inf")
    check(tp.isclose(tp.tensor([1.0, inf, -inf, inf]), tp.tensor([inf, inf, inf, -inf])),
          [False, True, False, False], tp.bool)
    check(tp.isclose(tp.tensor([100, 5]), tp.tensor([101, 9]), rtol=0.05), [True, False], tp.bool)


def test_promotion_table():
    """The promotion rules of PyTorch's documentation, on 1-d, 0-d and scalar operands."""
    i32, i64, f32, f64, b = (tp.tensor([1], dtype=d) for d in (tp.int32, tp.int64, tp.float32, tp.float64, tp.bool))
    z_f64, z_i64 = tp.tensor(1.0, dtype=tp.float64), tp.tensor(1)
    cases = [
        (i32 + i64, tp.int64), (i32 + f32, tp.float32), (i64 + f32, tp.float32), (f32 + f64, tp.float64),
        (b + b, tp.bool), (b + i32, tp.int32), (i32 + 1, tp.int32), (i32 + 1.5, tp.float32),
        (f32 + z_f64, tp.float32), (i32 + z_f64, tp.float64), (i32 + z_i64, tp.int32), (b + z_i64, tp.int64),
        (b + True, tp.bool), (b + 1, tp.int64), (b * 1.5, tp.float32), (z_i64 + 1.5, tp.float32),
        (z_f64 + 1, tp.float64), (i64 / i64, tp.float32), (b / b, tp.float32), (f64 / 2, tp.float64),
        (i32 // 2, tp.int32), (i32 % 2.0, tp.float32), (i32 ** 2, tp.int32), (i32 ** 2.0, tp.float32),
        (tp.sin(i64), tp.float32), (tp.sqrt(b), tp.float32), (tp.exp(f64), tp.float64),
    ]
    for out, expected in cases:
        assert out.dtype is expected


def test_default_dtype_float64():
    tp.set_default_dtype(tp.float64)
    try:
        assert (tp.tensor([1]) / 2).dtype is tp.float64
        assert (tp.tensor([1]) + 1.5).dtype is tp.float64
        assert tp.sin(tp.tensor([1])).dtype is tp.float64
        assert (tp.tensor([1.0], dtype=tp.float32) + 1.5).dtype is tp.float32
    finally:
        tp.set_default_dtype(tp.float32)


def test_scalar_results_do_not_alias_inputs():
    x = tp.tensor([1, 2, 3])
    for fn in (tp.floor, tp.ceil, tp.round, lambda v: tp.pow(v, 1), lambda v: v.sign(), lambda v: v + 0):
        y = fn(x)
        assert not np.shares_memory(y.numpy(), x.numpy())


@pytest.mark.parametrize("call,exc,pattern", [
    (lambda: tp.ones(2, 3) + tp.ones(3, 2), ValueError, r"add.*\(2, 3\).*\(3, 2\)"),
    (lambda: tp.where(tp.ones(2, dtype=tp.bool), tp.ones(3), 0.0), ValueError, r"where.*\(2,\).*\(3,\)"),
    (lambda: tp.maximum(tp.ones(2), tp.ones(3)), ValueError, r"maximum.*\(2,\).*\(3,\)"),
    (lambda: tp.add(tp.ones(2), "a"), TypeError, r"add.*str"),
    (lambda: tp.mul(tp.ones(2), [1, 2]), TypeError, r"mul.*list"),
    (lambda: tp.div(tp.ones(2), tp.ones(2), rounding_mode="up"), ValueError, r"rounding_mode"),
    (lambda: tp.tensor([True]) - tp.tensor([True]), TypeError, r"sub.*bool"),
    (lambda: tp.tensor([True]) - 1, TypeError, r"sub.*bool"),
    (lambda: tp.tensor([1]) - True, TypeError, r"sub.*bool"),
    (lambda: tp.where(tp.tensor([1, 0]), 1.0, 0.0), TypeError, r"where.*bool.*int64"),
    (lambda: tp.lerp(tp.tensor([1]), tp.tensor([2]), 0.5), TypeError, r"lerp.*int64"),
    (lambda: tp.round(tp.tensor([1]), decimals=1), TypeError, r"round.*decimals"),
    (lambda: tp.floor(tp.tensor([True])), TypeError, r"floor.*bool"),
    (lambda: tp.tensor([1]) // 0, RuntimeError, r"floor_divide.*ZeroDivisionError"),
])
def test_bad_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


@given(dtype=st.sampled_from(DTYPES))
def test_ops_on_empty_and_zero_dim(dtype):
    e = tp.zeros(0, 3, dtype=dtype)
    z = tp.tensor(True if dtype is tp.bool else 2, dtype=dtype)
    assert (e * z).shape == (0, 3) and (e * z).dtype is dtype
    assert tp.where(e.bool(), e, z).shape == (0, 3)
    assert (z + z).shape == () and (z == z).item() is True
