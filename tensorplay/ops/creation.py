"""Factories: tensor, as_tensor, from_numpy, zeros/ones/full/empty (and *_like),
arange, linspace, eye, and random draws.

Every factory reads ``dtype=`` and ``device=`` as PyTorch does (see `tensorplay._device`),
checks that the size it allocates is possible (naming the op and the size), and
honours ``requires_grad=`` (the new tensor is an autograd leaf).
"""
from __future__ import annotations

import contextlib
import functools
from math import ceil, prod

import numpy as np

from tensorplay.ir import dtypes
from tensorplay.ir.dtypes import DType

from .._device import as_dtype, check_device
from .._tensor import Tensor
from .._trace import RandomKey, bind
from ._common import convert, get_default_dtype, scalar_dtype
from ._data import to_array
from ._table import op
from .elementwise import floor, mul

_MAX_BYTES = (1 << 63) - 1


def _options(op: str, dtype=None, device=None) -> DType | None:
    """Check a factory's device argument; returns its dtype argument as a DType (or None)."""
    check_device(device, op)
    return as_dtype(dtype, op)


def check_size(op: str, shape: tuple[int, ...], dtype: DType) -> None:
    """A ValueError naming `op` and the size when a `shape` x `dtype` tensor could not exist."""
    n = prod(shape)
    if n * dtype.itemsize > _MAX_BYTES:
        raise ValueError(f"{op}: size {list(shape)} ({n} elements of {dtype.name}) is too large: more than "
                         f"2^63 bytes")


@contextlib.contextmanager
def allocating(op: str, shape: tuple[int, ...], dtype: DType):
    """`check_size`, then name `op` and the size if numpy cannot allocate the result."""
    check_size(op, shape, dtype)
    n = prod(shape)
    try:
        yield
    except MemoryError:
        raise MemoryError(f"{op}: cannot allocate {n * dtype.itemsize} bytes for a {dtype.name} tensor of size "
                          f"{list(shape)}") from None


def tensor(data, *, dtype: DType | None = None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, numbers, numpy arrays or tensors).

    >>> import tensorplay as tp
    >>> tp.tensor([1.0, 2.0])
    tensor([1., 2.])
    """
    dtype = _options("tensor", dtype, device)
    if pin_memory:
        raise RuntimeError("tensor: pin_memory=True needs an accelerator; tensorplay runs on the CPU only")
    return Tensor._wrap(to_array(data, dtype))


def as_tensor(data, dtype: DType | None = None, device=None) -> Tensor:
    """`data` as a tensor, sharing memory with numpy arrays and tensors when the dtype allows."""
    dtype = _options("as_tensor", dtype, device)
    if isinstance(data, Tensor) and (dtype is None or data.dtype is dtype):
        return data
    return Tensor._wrap(to_array(data, dtype, copy=False))


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array`."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(array).__name__})")
    dtypes.from_numpy(array.dtype)
    return Tensor._wrap(array)


def _size(size, op: str = "factory") -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list, np.ndarray)):
        size = tuple(size[0])
    for s in size:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer, Tensor)):
            raise TypeError(f"{op}: size must be a sequence of ints, got {type(s).__name__} in {list(size)}")
    out = tuple(int(s) for s in size)
    if any(s < 0 for s in out):
        raise ValueError(f"{op}: negative dimension in size {list(out)}")
    return out


def _filled(op: str, shape: tuple[int, ...], fill_value, dtype: DType) -> Tensor:
    value = bool(fill_value) if dtype.is_bool else int(fill_value) if dtype.is_integer else float(fill_value)
    with allocating(op, shape, dtype):
        return bind("full", shape=shape, dtype=dtype, value=value)


def full(size, fill_value, *, dtype: DType | None = None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of shape `size` filled with `fill_value` (dtype inferred from the value).

    >>> import tensorplay as tp
    >>> tp.full((2,), 7)
    tensor([7, 7])
    """
    dtype = _options("full", dtype, device)
    if isinstance(fill_value, Tensor):
        dtype = dtype or fill_value.dtype
        fill_value = fill_value.item()
    dtype = dtype or scalar_dtype(fill_value)
    shape = _size((size,) if isinstance(size, (int, np.integer)) else (tuple(size),), "full")
    return _filled("full", shape, fill_value, dtype)


def zeros(*size, dtype: DType | None = None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros; dtype defaults to float32."""
    dtype = _options("zeros", dtype, device)
    return _filled("zeros", _size(size, "zeros"), 0, dtype or get_default_dtype())


def ones(*size, dtype: DType | None = None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones; dtype defaults to float32."""
    dtype = _options("ones", dtype, device)
    return _filled("ones", _size(size, "ones"), 1, dtype or get_default_dtype())


def empty(*size, dtype: DType | None = None, device=None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor (zero-filled here, so results stay deterministic)."""
    dtype = _options("empty", dtype, device)
    return _filled("empty", _size(size, "empty"), 0, dtype or get_default_dtype())


def _like(op: str, input, fill_value, dtype, device) -> Tensor:
    dtype = _options(op, dtype, device)
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: expected a tensor, got {type(input).__name__}")
    return _filled(op, tuple(input.shape), fill_value, dtype or input.dtype)


def zeros_like(input, *, dtype: DType | None = None, device=None, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    """Zeros of `input`'s shape and dtype."""
    return _like("zeros_like", input, 0, dtype, device)


def ones_like(input, *, dtype: DType | None = None, device=None, requires_grad: bool = False,
              memory_format=None) -> Tensor:
    """Ones of `input`'s shape and dtype."""
    return _like("ones_like", input, 1, dtype, device)


def empty_like(input, *, dtype: DType | None = None, device=None, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    """An uninitialised (here: zero-filled) tensor of `input`'s shape and dtype."""
    return _like("empty_like", input, 0, dtype, device)


def full_like(input, fill_value, *, dtype: DType | None = None, device=None, requires_grad: bool = False,
              memory_format=None) -> Tensor:
    """`fill_value` in `input`'s shape and dtype."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _like("full_like", input, fill_value, dtype, device)


def _affine_iota(n: int, start, step, dtype: DType) -> Tensor:
    """start + step * i for i in range(n), computed in float64 (or int64) and cast, like numpy."""
    from .elementwise import add, mul
    from ._common import convert

    work = dtypes.float64 if dtype.is_floating_point else dtypes.int64
    with allocating("arange", (n,), work):
        i = bind("iota", shape=(n,), dtype=work, dimension=0)
    return convert(add(mul(i, step), start), dtype) if n else convert(i, dtype)


def arange(start, end=None, step=1, *, dtype: DType | None = None, device=None, requires_grad: bool = False) -> Tensor:
    """Values start, start+step, ... below end; int64 for integer arguments, else the default float.

    Float results are start + i * step computed in float64 and rounded (as PyTorch on CPU); integer
    results truncate the arguments to integers first.
    """
    dtype = _options("arange", dtype, device)
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


def linspace(start, end, steps: int, *, dtype: DType | None = None, device=None,
             requires_grad: bool = False) -> Tensor:
    """`steps` evenly spaced values from start to end inclusive.

    As PyTorch: computed in the result dtype (float64 for integer results, then truncated), the first
    half as start + i * step and the second half as end - (steps - 1 - i) * step, so both ends are exact.
    """
    from .elementwise import add, mul, sub, where, lt
    from ._common import convert, constant

    dtype = _options("linspace", dtype, device)
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
    check_size("linspace", (steps,), work)
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


def logspace(start, end, steps: int, base: float = 10.0, *, dtype: DType | None = None, device=None,
             requires_grad: bool = False) -> Tensor:
    """base ** linspace(start, end, steps)."""
    from .elementwise import pow
    from ._common import convert

    dtype = _options("logspace", dtype, device)
    return convert(pow(base, linspace(start, end, steps, dtype=dtypes.float64)), dtype or get_default_dtype())


def eye(n: int, m: int | None = None, *, dtype: DType | None = None, device=None,
        requires_grad: bool = False) -> Tensor:
    """The n x m identity matrix."""
    from ._common import convert

    dtype = _options("eye", dtype, device)
    m = n if m is None else m
    for v in (n, m):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"eye: n and m must be non-negative ints, got n={n!r}, m={m!r}")
    check_size("eye", (n, m), dtypes.int64)
    rows = bind("iota", shape=(n, m), dtype=dtypes.int64, dimension=0)
    cols = bind("iota", shape=(n, m), dtype=dtypes.int64, dimension=1)
    return convert(bind("eq", rows, cols), dtype or get_default_dtype())


# --- random -------------------------------------------------------------------------------------
class _GeneratorKey(RandomKey):
    """The key source of a draw from a user's `tp.Generator` (the global one is `RandomKey`'s)."""

    def __init__(self, count: int, generator):
        super().__init__(count)
        self.generator = generator

    def pin(self) -> np.ndarray:
        if self.pinned is None:
            self.pinned = self.generator.take_key(self.count)
        return self.pinned

    def read(self) -> np.ndarray:
        return self.pinned if self.pinned is not None else self.generator.take_key(self.count)


def random_key(count: int, generator=None) -> Tensor:
    """The (seed, offset) key tensor for a draw of `count` elements from `generator` (None: the global one)."""
    if generator is None:
        return RandomKey(count).materialize()
    from ..random import Generator

    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a tensorplay.Generator, got {type(generator).__name__}")
    return _GeneratorKey(count, generator).materialize()


def _draw(prim: str, shape: tuple[int, ...], dtype: DType | None, generator=None, op: str | None = None) -> Tensor:
    op = op or prim
    dtype = dtype or get_default_dtype()
    if not dtype.is_floating_point:
        raise TypeError(f"{op}: dtype must be floating point, got {dtype.name}")
    if dtypes.is_low_float(dtype):  # drawn in float32; uniform: on the grid of 2^-(mantissa+1) so it stays < 1
        x = _draw(prim, shape, dtypes.float32, generator, op)
        if prim == "random_uniform":
            steps = float(2 ** (11 if dtype is dtypes.float16 else 8))
            x = mul(floor(mul(x, steps)), 1.0 / steps)
        return convert(x, dtype)
    with allocating(op, shape, dtype):
        return bind(prim, random_key(prod(shape), generator), shape=shape, dtype=dtype)


def rand(*size, dtype: DType | None = None, generator=None, device=None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) from the global counter-based generator (or `generator`)."""
    dtype = _options("rand", dtype, device)
    return _draw("random_uniform", _size(size, "rand"), dtype, generator, "rand")


def randn(*size, dtype: DType | None = None, generator=None, device=None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples from the global counter-based generator (or `generator`).

    >>> import tensorplay as tp
    >>> tp.randn(2, 3).shape
    tensorplay.Size(2, 3)
    >>> g = tp.Generator().manual_seed(0)
    >>> bool((tp.randn(3, generator=g) == tp.randn(3, generator=tp.Generator().manual_seed(0))).all())
    True
    """
    dtype = _options("randn", dtype, device)
    return _draw("random_normal", _size(size, "randn"), dtype, generator, "randn")


def rand_like(input, *, dtype: DType | None = None, device=None, requires_grad: bool = False,
              memory_format=None) -> Tensor:
    """Uniform samples in [0, 1) of `input`'s shape and dtype."""
    dtype = _options("rand_like", dtype, device)
    return rand(tuple(input.shape), dtype=dtype or input.dtype)


def randn_like(input, *, dtype: DType | None = None, device=None, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    """Standard normal samples of `input`'s shape and dtype."""
    dtype = _options("randn_like", dtype, device)
    return randn(tuple(input.shape), dtype=dtype or input.dtype)


def randint(low, high=None, size=None, *, dtype: DType | None = None, generator=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """Integers uniform in [low, high); int64 by default.

    >>> import tensorplay as tp
    >>> x = tp.randint(3, 7, (100,))
    >>> bool(((x >= 3) & (x < 7)).all()), x.dtype
    (True, tensorplay.int64)
    """
    dtype = _options("randint", dtype, device)
    if size is None:
        low, high, size = 0, low, high
    if high is None or size is None:
        raise TypeError("randint: expected randint(high, size) or randint(low, high, size)")
    if high <= low:
        raise ValueError(f"randint: low ({low}) must be below high ({high})")
    from .elementwise import add, floor, mul
    from ._common import convert

    shape = _size((size,) if isinstance(size, (int, np.integer)) else (tuple(size),), "randint")
    u = _draw("random_uniform", shape, dtypes.float64, generator, "randint")
    return convert(add(floor(mul(u, float(high - low))), float(low)), dtype or dtypes.int64)


def randperm(n: int, *, generator=None, dtype: DType | None = None, device=None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of 0..n-1 (argsort of uniform draws).

    >>> import tensorplay as tp
    >>> sorted(tp.randperm(5).tolist())
    [0, 1, 2, 3, 4]
    """
    dtype = _options("randperm", dtype, device)
    u = _draw("random_uniform", (int(n),), dtypes.float64, generator, "randperm")
    return Tensor._wrap(np.argsort(u._concrete("randperm"), kind="stable").astype((dtype or dtypes.int64).np))


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype: DType | None = None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Normal samples with the given mean and std (numbers or tensors, broadcast together).

    >>> import tensorplay as tp
    >>> tp.normal(2.0, 0.0, size=(3,))
    tensor([2., 2., 2.])
    """
    from .elementwise import add, mul

    dtype = _options("normal", dtype, device)
    shape = tuple(size) if size is not None else tuple(getattr(mean, "shape", ())) or tuple(getattr(std, "shape", ()))
    return add(mul(_draw("random_normal", _size((shape,), "normal"), dtype, generator, "normal"), std), mean)


def bernoulli(input, p=None, *, generator=None) -> Tensor:
    """1 with probability `p` (or the values of `input`), else 0.

    >>> import tensorplay as tp
    >>> tp.bernoulli(tp.tensor([0.0, 1.0]))
    tensor([0., 1.])
    """
    from .elementwise import lt
    from ._common import convert

    probs = input if p is None else full(tuple(input.shape), p, dtype=input.dtype)
    u = _draw("random_uniform", tuple(input.shape), input.dtype, generator, "bernoulli")
    return convert(lt(u, probs), input.dtype)


# --- torch.Tensor(...) and the in-place random fills -------------------------------------------------
def legacy_constructor_array(args: tuple, dtype=None, device=None) -> np.ndarray:
    """The array behind ``tp.Tensor(...)``, read as torch reads ``torch.Tensor(...)``.

    ``Tensor()`` is empty; ``Tensor(2, 3)`` and ``Tensor(tp.Size([2, 3]))`` are uninitialised
    (zero-filled here) tensors of that size; ``Tensor(data)`` copies data (lists, tuples, arrays,
    tensors) into the default float dtype.

    >>> import tensorplay as tp
    >>> tp.Tensor(2, 3).shape, tp.Tensor([1, 2]), tp.Tensor().shape
    (tensorplay.Size(2, 3), tensor([1., 2.]), tensorplay.Size(0))
    """
    check_device(device, "Tensor")
    dtype = as_dtype(dtype, "Tensor") or get_default_dtype()
    from .._tensor import Size

    if not args:
        return np.zeros((0,), dtype.np)
    sizes = args[0] if len(args) == 1 and isinstance(args[0], Size) else args
    if all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in sizes):
        shape = _size(tuple(sizes), "Tensor")
        check_size("Tensor", shape, dtype)
        return np.zeros(shape, dtype.np)
    if len(args) != 1:
        raise TypeError(f"Tensor(): expected sizes (ints) or one data argument, got "
                        f"({', '.join(type(a).__name__ for a in args)})")
    return to_array(args[0], dtype)


def _fill_with(self: Tensor, sample: Tensor, op: str) -> Tensor:
    from ._common import convert

    if not isinstance(self, Tensor):
        raise TypeError(f"{op}: expected a tensor, got {type(self).__name__}")
    return self.copy_(convert(sample, self.dtype))


def _float_target(self: Tensor, op: str) -> DType:
    if not self.dtype.is_floating_point:
        raise TypeError(f"{op}: not implemented for {self.dtype.name} tensors (expected a floating point tensor)")
    return self.dtype


def _from_to(kwargs: dict, a, b, op: str):
    """torch's ``from``/``to`` keyword names (``from`` is reserved in Python, so they come as **kwargs)."""
    unknown = sorted(set(kwargs) - {"from", "to"})
    if unknown:
        raise TypeError(f"{op}() got unexpected keyword arguments {unknown}")
    return kwargs.get("from", a), kwargs.get("to", b)


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None, **kwargs) -> Tensor:
    """Fill `self` in place with samples uniform in [from, to) (``a``/``b`` positionally, as torch).

    >>> import tensorplay as tp
    >>> x = tp.empty(1000).uniform_(-2, 3)
    >>> bool((x >= -2).all() and (x < 3).all())
    True
    """
    from .elementwise import add, mul

    lo, hi = _from_to(kwargs, a, b, "uniform_")
    if lo > hi:
        raise ValueError(f"uniform_ expects to return a [from, to) range, but found from={lo} > to={hi}")
    u = _draw("random_uniform", tuple(self.shape), _float_target(self, "uniform_"), generator, "uniform_")
    return _fill_with(self, add(mul(u, float(hi) - float(lo)), float(lo)), "uniform_")


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill `self` in place with normal samples of the given mean and std.

    >>> import tensorplay as tp
    >>> tp.zeros(3).normal_(5.0, 0.0)
    tensor([5., 5., 5.])
    """
    from .elementwise import add, mul

    if std < 0:
        raise ValueError(f"normal_ expects std >= 0.0, but found std {std}")
    z = _draw("random_normal", tuple(self.shape), _float_target(self, "normal_"), generator, "normal_")
    return _fill_with(self, add(mul(z, float(std)), float(mean)), "normal_")


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill `self` in place with 1 with probability `p` (a number or a tensor broadcast to self), else 0.

    >>> import tensorplay as tp
    >>> tp.zeros(4, dtype=tp.int64).bernoulli_(1.0)
    tensor([1, 1, 1, 1])
    """
    from .elementwise import lt
    from .shape import expand

    if isinstance(p, Tensor):
        probs = expand(p, tuple(self.shape))
    else:
        if not 0 <= p <= 1:
            raise ValueError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        probs = float(p)
    u = _draw("random_uniform", tuple(self.shape), dtypes.float64, generator, "bernoulli_")
    return _fill_with(self, lt(u, probs), "bernoulli_")


def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fill `self` in place with exponential samples of rate `lambd`: ``-log(1 - U) / lambd``.

    >>> import tensorplay as tp
    >>> bool((tp.empty(100).exponential_(2.0) >= 0).all())
    True
    """
    from .elementwise import div, log1p, neg

    if lambd <= 0:
        raise ValueError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    u = _draw("random_uniform", tuple(self.shape), _float_target(self, "exponential_"), generator, "exponential_")
    return _fill_with(self, div(neg(log1p(neg(u))), float(lambd)), "exponential_")


def _random_range(dtype: DType) -> int:
    """torch's default upper bound of random_() (exclusive): 2^mantissa + 1 for floats, max + 1 for integers."""
    if dtype.is_bool:
        return 2
    if dtype.is_floating_point:
        return (1 << (np.finfo(dtype.np).nmant + 1)) + 1
    return int(np.iinfo(dtype.np).max) + 1


def random_(self: Tensor, a=None, b=None, *, generator=None, **kwargs) -> Tensor:
    """Fill `self` in place with integers uniform in [from, to - 1] (``random_(to)`` means from=0).

    Without bounds: [0, 2^mantissa] for floats, [0, max] for integer dtypes, as torch.

    >>> import tensorplay as tp
    >>> x = tp.zeros(200, dtype=tp.int64).random_(3, 6)
    >>> sorted(set(x.tolist()))
    [3, 4, 5]
    """
    from .elementwise import add, floor, minimum, mul

    lo, hi = _from_to(kwargs, a, b, "random_")
    if hi is None and lo is not None and "from" not in kwargs:
        lo, hi = 0, lo  # random_(to)
    lo = 0 if lo is None else int(lo)
    hi = _random_range(self.dtype) if hi is None else int(hi)
    if lo >= hi:
        raise ValueError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    u = _draw("random_uniform", tuple(self.shape), dtypes.float64, generator, "random_")
    v = minimum(add(floor(mul(u, float(hi - lo))), float(lo)), float(hi - 1))
    return _fill_with(self, v, "random_")


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Write `fill_value` on the main diagonal in place (all dims equal beyond 2-d; `wrap` restarts the
    diagonal of tall matrices every ``cols + 1`` rows, as torch).

    >>> import tensorplay as tp
    >>> tp.zeros(3, 2).fill_diagonal_(5)
    tensor([[5., 0.],
            [0., 5.],
            [0., 0.]])
    """
    from .elementwise import where
    from ._common import constant

    shape = tuple(self.shape)
    if len(shape) < 2:
        raise ValueError(f"fill_diagonal_: dimensions must larger than 1, got shape {shape}")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"fill_diagonal_: all dimensions of input must be of equal length, got shape {shape}")
    mask = np.zeros(shape, dtype=bool)
    n = min(shape)
    mask[(np.arange(n),) * len(shape)] = True
    if wrap and len(shape) == 2 and shape[0] > shape[1] + 1:
        flat = mask.reshape(-1)
        flat[::shape[1] + 1] = True
    value = constant(fill_value, self.dtype, (), (self,))
    return _fill_with(self, where(tensor(mask), value, self), "fill_diagonal_")


def diagflat(input, offset: int = 0) -> Tensor:
    """A square matrix with the flattened `input` on diagonal `offset` (above the main one when positive).

    >>> import tensorplay as tp
    >>> tp.diagflat(tp.tensor([[1, 2], [3, 4]]))
    tensor([[1, 0, 0, 0],
            [0, 2, 0, 0],
            [0, 0, 3, 0],
            [0, 0, 0, 4]])
    >>> tp.diagflat(tp.tensor([5.0, 6.0]), offset=-1)
    tensor([[0., 0., 0.],
            [5., 0., 0.],
            [0., 6., 0.]])
    """
    from .elementwise import where
    from .indexing import take
    from ._common import as_tensor_operand, constant

    x = as_tensor_operand(input)
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise TypeError(f"diagflat: offset must be an int, got {type(offset).__name__}")
    n, k = x.numel(), int(offset)
    size = n + abs(k)
    rows, cols = np.indices((size, size))
    if n == 0:
        return full((size, size), 0, dtype=x.dtype)
    on_diag = cols - rows == k
    source = np.clip(rows if k >= 0 else cols, 0, n - 1)  # the element of `x` each place would hold
    return where(tensor(on_diag), take(x, tensor(source)), constant(0, x.dtype, (), (x,)))


# --- requires_grad= on factories (autograd) -------------------------------------------------------
def _honours_requires_grad(factory):
    """`factory` with torch's ``requires_grad=`` keyword honoured: the new tensor is a leaf that
    requires grad (integer dtypes raise, as in torch). The signature shown stays the factory's own."""
    @functools.wraps(factory)
    def made(*args, requires_grad: bool = False, **kwargs):
        out = factory(*args, **kwargs)
        return out.requires_grad_() if requires_grad else out

    return made


for _name in ("tensor", "full", "zeros", "ones", "empty", "zeros_like", "ones_like", "empty_like", "full_like",
              "arange", "linspace", "logspace", "eye", "rand", "randn", "rand_like", "randn_like", "randint",
              "randperm", "normal"):
    globals()[_name] = _honours_requires_grad(globals()[_name])
del _name


# === the op table ===================================================================================
# The factories are `tp.` functions only; the in-place random fills are Tensor methods only; diagflat is
# both (tensorplay/ops/_table.py).
for _name in ("tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "zeros_like", "ones_like",
              "empty_like", "full_like", "arange", "linspace", "logspace", "eye", "rand", "randn", "rand_like",
              "randn_like", "randint", "randperm", "normal", "bernoulli"):
    op(_name, globals()[_name], method=False)
for _name in ("uniform_", "normal_", "bernoulli_", "exponential_", "random_", "fill_diagonal_"):
    op(_name, globals()[_name], export=False)
op("diagflat", diagflat)
del _name
