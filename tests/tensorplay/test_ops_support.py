"""Shared strategies and oracles for the `test_ops_*` property tests (no tests here).

The oracle is numpy driven by hand: PyTorch's dtype rules are restated below from
PyTorch's own algorithm (`combine_categories` in ATen's TypeProperties.cpp), not
imported from tensorplay, and every expected value is computed with numpy on plain
arrays. Inputs are made non-contiguous with tensorplay's own view ops (a transposed
base, a strided slice) so the ops see the layouts users produce.
"""
from __future__ import annotations

import math
import warnings

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import strategies as st

import tensorplay as tp

DTYPES = [tp.bool, tp.int32, tp.int64, tp.float32, tp.float64]
FLOATS = [tp.float32, tp.float64]
NUMERIC = [tp.int32, tp.int64, tp.float32, tp.float64]
NP = {tp.bool: np.bool_, tp.int32: np.int32, tp.int64: np.int64, tp.float32: np.float32, tp.float64: np.float64,
      tp.float16: np.float16}
_ORDER = [tp.bool, tp.int32, tp.int64, tp.float32, tp.float64]  # PyTorch's promotion lattice is a chain here


def is_float(d):
    return d in (tp.float32, tp.float64)


def promote(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return _ORDER[max(_ORDER.index(a), _ORDER.index(b))]


def _combine_categories(higher, lower):
    """ATen's combine_categories for our dtypes (None is Undefined)."""
    if higher is not None and is_float(higher):
        return higher
    if higher is tp.bool or (lower is not None and is_float(lower)):
        return promote(higher, lower)
    if higher is not None:
        return higher
    return lower


def torch_result_type(*operands, default_float=tp.float32):
    """PyTorch's result_type: dimensioned tensors, zero-dim tensors, wrapped Python numbers."""
    dim = zero = wrapped = None
    for o in operands:
        if isinstance(o, tp.Tensor):
            if o.ndim > 0:
                dim = promote(dim, o.dtype)
            else:
                zero = promote(zero, o.dtype)
        elif isinstance(o, bool):
            wrapped = promote(wrapped, tp.bool)
        elif isinstance(o, int):
            wrapped = promote(wrapped, tp.int64)
        elif isinstance(o, float):
            wrapped = promote(wrapped, default_float)
        else:
            raise TypeError(type(o))
    return _combine_categories(dim, _combine_categories(zero, wrapped))


def np_value(o, dtype):
    """An operand (tensor or Python scalar) as a numpy array/scalar of `dtype` (the promoted dtype)."""
    if isinstance(o, tp.Tensor):
        return np.asarray(o.numpy()).astype(NP[dtype])
    return np.array(o).astype(NP[dtype])


# --- strategies ---------------------------------------------------------------------------------
dtypes = st.sampled_from(DTYPES)
float_dtypes = st.sampled_from(FLOATS)
numeric_dtypes = st.sampled_from(NUMERIC)
LAYOUTS = ["contiguous", "transposed", "strided"]
layouts = st.sampled_from(LAYOUTS)


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def elements(dtype, *, lo=-8, hi=8, special=False):
    """Small values so integer results stay exact; floats include negative zero, and NaN/inf when `special`."""
    npd = NP[dtype]
    if dtype is tp.bool:
        return st.booleans()
    if dtype in (tp.int32, tp.int64):
        return st.integers(lo, hi)
    width = 32 if dtype is tp.float32 else 64
    base = st.floats(lo, hi, width=width, allow_nan=False, allow_infinity=False)
    base = st.one_of(base, st.sampled_from([0.0, -0.0, 0.5, -1.5, 2.0]))
    if special:
        base = st.one_of(base, st.sampled_from([math.nan, math.inf, -math.inf]))
    return base.map(lambda v: npd(v))


def arrays(dtype, shape, **kw):
    return hnp.arrays(NP[dtype], shape, elements=elements(dtype, **kw))


def make_tensor(arr: np.ndarray, layout: str) -> tp.Tensor:
    """A tensor equal to `arr`; for non-"contiguous" layouts a non-contiguous view built with tensorplay ops."""
    arr = np.asarray(arr)
    if layout == "contiguous" or arr.ndim == 0:
        return tp.tensor(arr)
    if layout == "transposed":
        perm = tuple(reversed(range(arr.ndim)))
        base = tp.tensor(np.ascontiguousarray(arr.transpose(perm)))
        t = base.permute(perm)  # its own inverse
    elif layout == "strided":  # every other element of a twice-as-long last dim, at an offset of 1
        shape = arr.shape[:-1] + (2 * arr.shape[-1] + 1,)
        base_arr = np.zeros(shape, arr.dtype)
        base_arr[..., 1::2] = arr
        t = tp.tensor(base_arr)[..., 1::2]
    else:
        raise ValueError(layout)
    assert tuple(t.shape) == arr.shape and t.dtype is tp.tensor(arr).dtype
    if arr.size > 1 and layout == "strided":
        assert not t.numpy().flags.c_contiguous
    return t


@st.composite
def tensors(draw, dtype=None, shape=None, *, layout=None, **kw):
    """(tensor, numpy array) pairs: any dtype/shape/layout unless fixed."""
    dtype = draw(dtypes) if dtype is None else draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype
    if shape is None:
        shape = draw(shapes())
    arr = draw(arrays(dtype, shape, **kw))
    t = make_tensor(arr, draw(layouts) if layout is None else layout)
    return t, arr


def scalars(kind=None):
    """Python scalars (bool, int or float)."""
    options = {"bool": st.booleans(), "int": st.integers(-5, 5),
               "float": st.sampled_from([0.5, -1.5, 2.0, 3.25, 0.0, -0.0])}
    if kind is not None:
        return options[kind]
    return st.one_of(*options.values())


# --- checking -----------------------------------------------------------------------------------
def tolerance(dtype):
    return dict(rtol=2e-5, atol=2e-6) if dtype is tp.float32 else dict(rtol=1e-9, atol=1e-12)


def check(actual, expected, dtype=None, *, rtol=None, atol=None, exact=False):
    """`actual` (a Tensor) has `expected`'s shape and values, and dtype `dtype` when given."""
    assert isinstance(actual, tp.Tensor), type(actual)
    got = actual.numpy()
    expected = np.asarray(expected)
    if dtype is not None:
        assert actual.dtype is dtype, (actual.dtype, dtype)
        assert got.dtype == NP[dtype]
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if exact or got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected.astype(got.dtype) if expected.dtype.kind != "f" or
                                      got.dtype.kind == "f" else expected)
        return
    tol = tolerance(actual.dtype)
    if rtol is not None:
        tol["rtol"] = rtol
    if atol is not None:
        tol["atol"] = atol
    np.testing.assert_allclose(got, expected.astype(np.float64), equal_nan=True, **tol)


def quiet():
    """Context manager silencing numpy floating point warnings in the oracle."""
    class _Quiet:
        def __enter__(self):
            self._err = np.seterr(all="ignore")
            self._w = warnings.catch_warnings()
            self._w.__enter__()
            warnings.simplefilter("ignore")

        def __exit__(self, *exc):
            np.seterr(**self._err)
            self._w.__exit__(*exc)
    return _Quiet()
