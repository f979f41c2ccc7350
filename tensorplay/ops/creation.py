"""Factories: tensor, as_tensor, from_numpy, zeros/ones/full/empty (and *_like),
arange, linspace, eye, and random draws."""
from __future__ import annotations

from math import ceil, prod

import numpy as np

from tensorplay.ir import dtypes
from tensorplay.ir.dtypes import DType

from .._tensor import Tensor
from .._trace import RandomKey, bind
from ._common import get_default_dtype, scalar_dtype


def _infer_dtype(data) -> DType:
    """The dtype PyTorch would pick for nested Python data."""
    kinds = set()

    def walk(x):
        if isinstance(x, Tensor):
            kinds.add(x.dtype)
        elif isinstance(x, np.ndarray):
            kinds.add(dtypes.from_numpy(x.dtype))
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        else:
            kinds.add(scalar_dtype(x))

    walk(data)
    if not kinds:
        return get_default_dtype()
    out = None
    for k in kinds:
        out = k if out is None else dtypes.promote(out, k)
    return out


def _to_array(data, dtype: DType | None, copy: bool = True) -> np.ndarray:
    if isinstance(data, Tensor):
        arr = data._concrete("tensor(data)")
        target = dtype or data.dtype
        return np.array(arr, dtype=target.np, copy=True) if copy else arr.astype(target.np, copy=False)
    if isinstance(data, np.ndarray):
        target = dtype or dtypes.from_numpy(data.dtype if data.dtype != np.float16 else np.float32)
        return np.array(data, dtype=target.np, copy=True) if copy else data.astype(target.np, copy=False)
    if isinstance(data, np.generic):  # numpy scalars keep their dtype, as in torch.tensor(np.float64(1))
        data = np.asarray(data)
        target = dtype or dtypes.from_numpy(data.dtype if data.dtype != np.float16 else np.float32)
        return np.array(data, dtype=target.np)
    target = dtype or _infer_dtype(data)

    def unwrap(x):
        if isinstance(x, Tensor):
            return x._concrete("tensor(data)")
        if isinstance(x, (list, tuple)):
            return [unwrap(y) for y in x]
        return x

    try:
        return np.array(unwrap(data), dtype=target.np)
    except (ValueError, TypeError) as e:
        raise ValueError(f"tensor: cannot build a tensor from {type(data).__name__}: {e}") from None


def tensor(data, *, dtype: DType | None = None, device=None) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, numbers, numpy arrays or tensors).

    >>> import tensorplay as tp
    >>> tp.tensor([1.0, 2.0])
    tensor([1., 2.])
    """
    return Tensor._wrap(_to_array(data, dtype))


def as_tensor(data, dtype: DType | None = None, device=None) -> Tensor:
    """`data` as a tensor, sharing memory with numpy arrays and tensors when the dtype allows."""
    if isinstance(data, Tensor) and (dtype is None or data.dtype is dtype):
        return data
    return Tensor._wrap(_to_array(data, dtype, copy=False))


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array`."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(array).__name__})")
    dtypes.from_numpy(array.dtype)
    return Tensor._wrap(array)


def _size(size, op: str = "factory") -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer, Tensor)):
            raise TypeError(f"{op}: size must be a sequence of ints, got {type(s).__name__} in {list(size)}")
    out = tuple(int(s) for s in size)
    if any(s < 0 for s in out):
        raise ValueError(f"{op}: negative dimension in size {list(out)}")
    return out


def full(size, fill_value, *, dtype: DType | None = None, device=None) -> Tensor:
    """A tensor of shape `size` filled with `fill_value` (dtype inferred from the value)."""
    if isinstance(fill_value, Tensor):
        dtype = dtype or fill_value.dtype
        fill_value = fill_value.item()
    dtype = dtype or scalar_dtype(fill_value)
    shape = _size((size,) if isinstance(size, (int, np.integer)) else (tuple(size),), "full")
    value = bool(fill_value) if dtype.is_bool else int(fill_value) if dtype.is_integer else float(fill_value)
    return bind("full", shape=shape, dtype=dtype, value=value)


def zeros(*size, dtype: DType | None = None, device=None) -> Tensor:
    """A tensor of zeros; dtype defaults to float32."""
    return full(_size(size, "zeros"), 0, dtype=dtype or get_default_dtype())


def ones(*size, dtype: DType | None = None, device=None) -> Tensor:
    """A tensor of ones; dtype defaults to float32."""
    return full(_size(size, "ones"), 1, dtype=dtype or get_default_dtype())


def empty(*size, dtype: DType | None = None, device=None) -> Tensor:
    """An uninitialised tensor (zero-filled here, so results stay deterministic)."""
    return zeros(*size, dtype=dtype)


def zeros_like(input, *, dtype: DType | None = None, device=None) -> Tensor:
    """Zeros of `input`'s shape and dtype."""
    return zeros(tuple(input.shape), dtype=dtype or input.dtype)


def ones_like(input, *, dtype: DType | None = None, device=None) -> Tensor:
    """Ones of `input`'s shape and dtype."""
    return ones(tuple(input.shape), dtype=dtype or input.dtype)


def empty_like(input, *, dtype: DType | None = None, device=None) -> Tensor:
    return zeros_like(input, dtype=dtype)


def full_like(input, fill_value, *, dtype: DType | None = None, device=None) -> Tensor:
    """`fill_value` in `input`'s shape and dtype."""
    return full(tuple(input.shape), fill_value, dtype=dtype or input.dtype)


def _affine_iota(n: int, start, step, dtype: DType) -> Tensor:
    """start + step * i for i in range(n), computed in float64 (or int64) and cast, like numpy."""
    from .elementwise import add, mul
    from ._common import convert

    work = dtypes.float64 if dtype.is_floating_point else dtypes.int64
    i = bind("iota", shape=(n,), dtype=work, dimension=0)
    return convert(add(mul(i, step), start), dtype) if n else convert(i, dtype)


def arange(start, end=None, step=1, *, dtype: DType | None = None, device=None) -> Tensor:
    """Values start, start+step, ... below end; int64 for integer arguments, else the default float.

    Float results are start + i * step computed in float64 and rounded (as PyTorch on CPU); integer
    results truncate the arguments to integers first.
    """
    if end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    for v in (start, end, step):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"arange: expected numbers, got {type(v).__name__}")
        if not np.isfinite(v):
            raise ValueError(f"arange: unsupported range {start} -> {end} with step {step}")
    if dtype is None:
        dtype = dtypes.int64 if all(isinstance(v, (int, np.integer)) for v in (start, end, step)) \
            else get_default_dtype()
    if dtype.is_floating_point:
        start, end, step = float(start), float(end), float(step)
    else:
        start, end, step = int(start), int(end), int(step)
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange: upper bound and larger bound inconsistent with step sign "
                         f"(start={start}, end={end}, step={step})")
    n = max(0, ceil((end - start) / step)) if dtype.is_floating_point else max(0, -((start - end) // step))
    return _affine_iota(n, start, step, dtype)


def linspace(start, end, steps: int, *, dtype: DType | None = None, device=None) -> Tensor:
    """`steps` evenly spaced values from start to end inclusive."""
    """`steps` evenly spaced values from start to end inclusive.

    As PyTorch: computed in the result dtype (float64 for integer results, then truncated), the first
    half as start + i * step and the second half as end - (steps - 1 - i) * step, so both ends are exact.
    """
    from .elementwise import add, mul, sub, where, lt
    from ._common import convert, constant

    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"linspace: steps must be an int, got {type(steps).__name__}")
    if steps < 0:
        raise ValueError(f"linspace: number of steps must be non-negative, got {steps}")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    dtype = dtype or get_default_dtype()
    work = dtype if dtype.is_floating_point else dtypes.float64
    if not dtype.is_floating_point:
        start, end = int(start), int(end)
    if steps == 0:
        return full((0,), 0, dtype=dtype)
    if steps == 1:
        return full((1,), start, dtype=dtype)
    s, e = work.np.type(start), work.np.type(end)
    with np.errstate(all="ignore"):
        step = (e - s) / work.np.type(steps - 1)
    i = bind("iota", shape=(steps,), dtype=work, dimension=0)
    j = bind("iota", shape=(steps,), dtype=work, dimension=0)
    rev = sub(constant(steps - 1, work, (steps,)), j)
    lo = add(mul(i, float(step)), float(s))
    hi = sub(float(e), mul(rev, float(step)))
    out = where(lt(i, float(steps // 2)), lo, hi)
    return convert(out, dtype)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype: DType | None = None) -> Tensor:
    """base ** linspace(start, end, steps)."""
    from .elementwise import pow
    from ._common import convert

    return convert(pow(base, linspace(start, end, steps, dtype=dtypes.float64)), dtype or get_default_dtype())


def eye(n: int, m: int | None = None, *, dtype: DType | None = None, device=None) -> Tensor:
    """The n x m identity matrix."""
    from ._common import convert

    m = n if m is None else m
    for v in (n, m):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"eye: n and m must be non-negative ints, got n={n!r}, m={m!r}")
    rows = bind("iota", shape=(n, m), dtype=dtypes.int64, dimension=0)
    cols = bind("iota", shape=(n, m), dtype=dtypes.int64, dimension=1)
    return convert(bind("eq", rows, cols), dtype or get_default_dtype())


# --- random -------------------------------------------------------------------------------------
def _draw(prim: str, shape: tuple[int, ...], dtype: DType | None) -> Tensor:
    dtype = dtype or get_default_dtype()
    if not dtype.is_floating_point:
        raise TypeError(f"{prim}: dtype must be floating point, got {dtype.name}")
    key = RandomKey(prod(shape)).materialize()
    return bind(prim, key, shape=shape, dtype=dtype)


def rand(*size, dtype: DType | None = None, generator=None, device=None) -> Tensor:
    """Uniform samples in [0, 1) from the global counter-based generator."""
    return _draw("random_uniform", _size(size), dtype)


def randn(*size, dtype: DType | None = None, generator=None, device=None) -> Tensor:
    """Standard normal samples from the global counter-based generator.

    >>> import tensorplay as tp
    >>> tp.randn(2, 3).shape
    tensorplay.Size(2, 3)
    """
    return _draw("random_normal", _size(size), dtype)


def rand_like(input, *, dtype: DType | None = None) -> Tensor:
    return rand(tuple(input.shape), dtype=dtype or input.dtype)


def randn_like(input, *, dtype: DType | None = None) -> Tensor:
    return randn(tuple(input.shape), dtype=dtype or input.dtype)


def randint(low, high=None, size=None, *, dtype: DType | None = None, generator=None, device=None) -> Tensor:
    """Integers uniform in [low, high); int64 by default."""
    if size is None:
        low, high, size = 0, low, high
    if high is None or size is None:
        raise TypeError("randint: expected randint(high, size) or randint(low, high, size)")
    if high <= low:
        raise ValueError(f"randint: low ({low}) must be below high ({high})")
    from .elementwise import add, floor, mul
    from ._common import convert

    u = _draw("random_uniform", _size((size,) if isinstance(size, int) else (tuple(size),)), dtypes.float64)
    return convert(add(floor(mul(u, float(high - low))), float(low)), dtype or dtypes.int64)


def randperm(n: int, *, dtype: DType | None = None) -> Tensor:
    """A random permutation of 0..n-1 (argsort of uniform draws)."""
    u = _draw("random_uniform", (n,), dtypes.float64)
    return Tensor._wrap(np.argsort(u._concrete("randperm"), kind="stable").astype((dtype or dtypes.int64).np))


def normal(mean=0.0, std=1.0, size=None, *, dtype: DType | None = None) -> Tensor:
    """Normal samples with the given mean and std."""
    from .elementwise import add, mul

    shape = tuple(size) if size is not None else tuple(getattr(mean, "shape", ())) or tuple(getattr(std, "shape", ()))
    return add(mul(randn(shape, dtype=dtype), std), mean)


def bernoulli(input, p=None) -> Tensor:
    """1 with probability `p` (or the values of `input`), else 0."""
    from .elementwise import lt
    from ._common import convert

    probs = input if p is None else full(tuple(input.shape), p, dtype=input.dtype)
    return convert(lt(rand(tuple(input.shape), dtype=input.dtype), probs), input.dtype)


# --- requires_grad= on factories (autograd) -------------------------------------------------------
def _with_requires_grad(factory):
    """`factory` taking torch's ``requires_grad=`` keyword: the new tensor is a leaf that requires grad."""
    import functools
    import inspect

    @functools.wraps(factory)
    def made(*args, requires_grad: bool = False, **kwargs):
        out = factory(*args, **kwargs)
        return out.requires_grad_() if requires_grad else out

    sig = inspect.signature(factory)
    params = list(sig.parameters.values())
    at = next((i for i, q in enumerate(params) if q.kind is q.VAR_KEYWORD), len(params))
    params.insert(at, inspect.Parameter("requires_grad", inspect.Parameter.KEYWORD_ONLY, default=False,
                                        annotation="bool"))
    made.__signature__ = sig.replace(parameters=params)
    return made


for _name in ("tensor", "full", "zeros", "ones", "empty", "zeros_like", "ones_like", "empty_like", "full_like",
              "arange", "linspace", "logspace", "eye", "rand", "randn", "rand_like", "randn_like", "normal"):
    globals()[_name] = _with_requires_grad(globals()[_name])
del _name
