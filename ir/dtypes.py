"""Element types of the IR.

A `DType` is an immutable singleton; `tensorplay.float32` *is* `ir.dtypes.float32`.
The short name (`f32`) is what the text format prints.

Two 16-bit floating types are storage types: `float16` (IEEE half) always, and
`bfloat16` when the optional `ml_dtypes` package is installed (numpy has no
bfloat16 of its own). ml_dtypes is imported only when bfloat16's numpy dtype is
first needed (`bfloat16.np`, or a lookup of an array whose dtype ml_dtypes made):
importing it takes ~1 s, most of `import tensorplay` when jax is installed. Their math is computed in float32 and rounded once to the
storage type per operation, as PyTorch does on the CPU (see `widen` below).
They are not in `ALL`/`FLOATS` (the full-width types the registry-driven tests
enumerate) but in `LOW_FLOATS`; a primitive that accepts float32 accepts them.
"""
from __future__ import annotations

import importlib.util
import sys
import threading
from typing import Callable

import numpy as np


class DType:
    """One element type: its names, numpy counterpart and category."""

    __slots__ = ("name", "short", "np", "kind", "itemsize")

    def __init__(self, name: str, short: str, np_dtype, kind: str, itemsize: int = 0):
        self.name = name
        self.short = short
        self.kind = kind  # 'b' bool, 'i' integer, 'f' floating
        if np_dtype is None:  # numpy dtype resolved on first use (`__getattr__`): bfloat16
            self.itemsize = itemsize
        else:
            self.np = np.dtype(np_dtype)
            self.itemsize = self.np.itemsize

    def __getattr__(self, attr: str):
        # Reached only for an unset slot, i.e. bfloat16's `np` before ml_dtypes was imported.
        if attr == "np" and self is bfloat16:
            return _load_bfloat16()
        raise AttributeError(f"'DType' object has no attribute {attr!r}")

    @property
    def is_floating_point(self) -> bool:
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.kind == "i"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    def __repr__(self) -> str:
        return f"tensorplay.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


float32 = DType("float32", "f32", np.float32, "f")
float64 = DType("float64", "f64", np.float64, "f")
int32 = DType("int32", "i32", np.int32, "i")
int64 = DType("int64", "i64", np.int64, "i")
bool_ = DType("bool", "i1", np.bool_, "b")
float16 = DType("float16", "f16", np.float16, "f")
# bfloat16 needs ml_dtypes' numpy dtype (an optional extra: pip install tensorplay[bfloat16]). It
# exists when ml_dtypes is installed; ml_dtypes itself is imported when its numpy dtype is needed.
bfloat16 = DType("bfloat16", "bf16", None, "f", 2) if importlib.util.find_spec("ml_dtypes") is not None else None

ALL = (bool_, int32, int64, float32, float64)
FLOATS = (float32, float64)
INTS = (int32, int64)
LOW_FLOATS = (float16,) + ((bfloat16,) if bfloat16 is not None else ())
KNOWN = ALL + LOW_FLOATS  # every dtype a tensor can have
BFLOAT16_MISSING = ("bfloat16 needs the optional ml_dtypes package (pip install 'tensorplay[bfloat16]' "
                    "or pip install ml_dtypes)")
_BY_SHORT = {d.short: d for d in KNOWN}
_BY_NAME = {d.name: d for d in KNOWN}
# numpy dtype -> DType, shared by the lookups that bypass `from_numpy` (the call path); bfloat16's
# entry is added when its numpy dtype is resolved (`_load_bfloat16`)
BY_NUMPY = {d.np: d for d in KNOWN if d is not bfloat16}
_BY_NP = BY_NUMPY
_CATEGORY_RANK = {"b": 0, "i": 1, "f": 2}


def from_short(short: str) -> DType:
    """The dtype printed as `short` in the text format (`f32`, `i64`, `i1`, ...)."""
    try:
        return _BY_SHORT[short]
    except KeyError:
        if short == "bf16":
            raise ValueError(f"element type 'bf16': {BFLOAT16_MISSING}") from None
        # bf16 is a valid spelling with or without ml_dtypes: the message is the same on every install
        raise ValueError(f"unknown element type {short!r}; expected one of {sorted({*_BY_SHORT, 'bf16'})}") from None


def from_name(name: str) -> DType:
    """The dtype called `name` (``"float32"``, ``"float16"``, ...)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        if name == "bfloat16":
            raise TypeError(BFLOAT16_MISSING) from None
        raise


def from_numpy(np_dtype) -> DType:
    """The dtype for a numpy dtype (ml_dtypes' bfloat16 included); unsigned types are rejected."""
    dt = np.dtype(np_dtype)
    try:
        return _BY_NP[dt]
    except KeyError:
        # an array of ml_dtypes' bfloat16 can only exist once ml_dtypes is imported
        if bfloat16 is not None and "ml_dtypes" in sys.modules and _load_bfloat16() == dt:
            return bfloat16
        raise TypeError(f"numpy dtype {dt} has no tensorplay counterpart "
                        f"(supported: {', '.join(d.name for d in KNOWN)})") from None


_bf16_lock = threading.Lock()


def _load_bfloat16():
    """bfloat16's numpy dtype: import ml_dtypes, set `bfloat16.np`, register it in the lookups."""
    global _bf16_loaded
    with _bf16_lock:
        if not _bf16_loaded:
            try:
                import ml_dtypes
            except ImportError as e:  # installed (find_spec saw it) but broken
                raise TypeError(f"{BFLOAT16_MISSING} (importing it failed: {e})") from None
            bfloat16.np = np.dtype(ml_dtypes.bfloat16)
            _BY_NP[bfloat16.np] = bfloat16
            _LOW_NP[bfloat16.np] = bfloat16
            _bf16_loaded = True
    return bfloat16.np


_bf16_loaded = False


def category(dtype: DType) -> int:
    """0 for bool, 1 for integers, 2 for floating point: the promotion category."""
    return _CATEGORY_RANK[dtype.kind]


def is_low_float(dtype: DType) -> bool:
    """Is `dtype` a 16-bit storage float (float16, bfloat16), computed in float32?"""
    return dtype.kind == "f" and dtype.itemsize == 2


def promote(a: DType, b: DType) -> DType:
    """The smallest dtype holding both (PyTorch's promotion lattice for our dtypes).

    float16 with bfloat16 gives float32 (neither holds the other), as in PyTorch.

    >>> promote(float16, float32), promote(int64, float16), promote(float16, float16)
    (tensorplay.float32, tensorplay.float16, tensorplay.float16)
    """
    if a is b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if a.itemsize == b.itemsize:  # float16 and bfloat16
        return float32
    return a if a.itemsize >= b.itemsize else b


def compute_dtype(dtype: DType) -> DType:
    """The dtype that `dtype`'s math runs in: float32 for the 16-bit floats, else `dtype` itself."""
    return float32 if dtype.kind == "f" and dtype.itemsize == 2 else dtype


# --- how the 16-bit floats compute ---------------------------------------------------------------
# float16 and bfloat16 are storage types. Like PyTorch on the CPU, every primitive applied to them
# reads its operands as float32 (exact: both widen without loss), computes in float32 and rounds the
# result to the storage type (to nearest, ties to even); reductions and contractions accumulate in
# float32. `widen` wraps a primitive's numpy `impl` with that rule, so eager execution and the
# reference interpreter agree with the compiled code, which does the same in registers
# (`codegen.irutil.narrow`). A conversion from float64 to a 16-bit type also goes through float32
# (two roundings), as PyTorch's Half(float) / BFloat16(float) constructors do.

_LOW_NP = {d.np: d for d in LOW_FLOATS if d is not bfloat16}  # bfloat16 added by `_load_bfloat16`
_F32 = np.dtype(np.float32)
# Families whose impls only move elements (exact on any dtype) or carry regions that handle their own
# values: they see the 16-bit arrays unchanged.
UNCHANGED_FAMILIES = ("layout", "control", "random")


def widen(impl: Callable) -> Callable:
    """`impl` computing in float32 for 16-bit float operands or dtype attributes (see above).

    >>> add = widen(np.add)
    >>> add(np.array([1.0], np.float16), np.array([2.0 ** -11], np.float16))  # a tie: to even, 1.0
    array([1.], dtype=float16)

    Operands of other dtypes pass through untouched; so does the result when nothing was 16-bit.
    """
    def impl_low_precision(*arrays, **attrs):
        target = None
        args = arrays
        for i, a in enumerate(arrays):
            low = _LOW_NP.get(getattr(a, "dtype", None))
            if low is not None:
                if args is arrays:
                    args = list(arrays)
                j = next((j for j in range(i) if arrays[j] is a), None)  # x * x: widen once
                args[i] = a.astype(_F32) if j is None else args[j]
                target = low
        for k, v in attrs.items():
            if v.__class__ is DType:
                if is_low_float(v):
                    attrs = {**attrs, k: float32}
                    target = v
                elif k == "dtype":  # an explicit full-width result type (a cast from float16 to float64)
                    target = None
        if target is None:
            return impl(*args, **attrs)
        return narrow(impl(*args, **attrs), target)
    impl_low_precision.__wrapped__ = impl
    impl_low_precision.__doc__ = impl.__doc__
    return impl_low_precision


def narrow(out, target: DType):
    """`out` (an array, or a tuple/list of arrays) with its float32 arrays rounded to `target`."""
    if isinstance(out, (tuple, list)):
        return type(out)(narrow(o, target) for o in out)
    if getattr(out, "dtype", None) == _F32:
        with np.errstate(all="ignore"):  # beyond the 16-bit range is inf, as in torch (and numpy is faster so)
            return np.asarray(out).astype(target.np)
    return out


if bfloat16 is not None and "ml_dtypes" in sys.modules:  # already imported (by jax, say): costs nothing
    _load_bfloat16()


def has_low_float(arrays, attrs) -> bool:
    """Does an operand (an array) or a DType attribute have a 16-bit float type?"""
    for a in arrays:
        if getattr(a, "dtype", None) in _LOW_NP:
            return True
    return any(v.__class__ is DType and is_low_float(v) for v in attrs.values())
