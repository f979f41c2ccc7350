"""`vmap` and `chunk_vmap`: map a per-sample function over a batch dimension.

The function is traced once on per-sample tensors (the batched arguments
with their mapped dimension removed) into a graph; the batching pass
(`ir.passes.batching`) turns that graph into one that handles the whole batch,
and the result is executed, or inlined into an enclosing transform's trace,
which is how `vmap(vmap(f))`, `vmap(grad(f))` and `grad(vmap(f))` compose.

Semantics follow `torch.func.vmap`:

- `in_dims` applies to the positional arguments only: an int or None for all
  of them, or a tuple with one entry per argument, each a prefix of that
  argument's pytree structure. Keyword arguments, arguments with in_dim None
  and tensors closed over by the function are the same for every sample: they
  reach the function as the ordinary tensors they are.
- `out_dims` is an int for every output or a prefix of the output structure;
  None is allowed only for outputs that do not depend on the batch. An output
  that does not depend on the batch but has an int out dim is broadcast.
- `randomness`: 'error' rejects random draws, 'same' makes one draw shared by
  all samples, 'different' gives every sample its own draw: a draw of n
  elements takes a key for n * batch_size elements from the global generator
  and sample i uses counters i * n ... i * n + n - 1 of it, so the values do
  not depend on `chunk_size`.
- `chunk_size` runs the batched graph on slices of the batch (the last one
  may be smaller) and concatenates the results; `chunk_vmap` splits the batch
  into `chunks` pieces. Both give the same values as the unchunked call (bit
  for bit, except that matrix products large enough for BLAS round as gemm
  does for each chunk's size: `tensorplay.codegen.dot`).
- With concrete inputs the chunks run through `_chunks.run_map`: on `executor`
  (any `concurrent.futures.Executor`) when one is given, each chunk shipped as
  the batched graph's IR text plus numpy arrays; results land in preallocated
  outputs in sample order, and a failing chunk raises `_chunks.ChunkError`
  before anything is written back. ``chunk_size="auto"`` derives the chunk size
  from the compiled chunk's working set and `max_memory`. Under an enclosing
  transform the chunks are inlined into its trace instead (the executor is not
  used: there is nothing concrete to run yet).
"""
from __future__ import annotations

import functools
import math
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from tensorplay.ir import TensorType, dtypes
from tensorplay.ir.passes.batching import RANDOMNESS, batch_graph, batched_outputs

from .. import _pytree
from .._state import STATE
from .._tensor import Tensor
from .._trace import RandomKey, bind, call_graph, trace_function, transform_stack
from .._views import owning_trace, own_outputs
from . import _built, _chunks, _pipeline

__all__ = ["vmap", "chunk_vmap"]


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | str | None = None, executor: Executor | None = None,
         max_memory: int | str | None = None) -> Callable:
    """Returns a function that maps `func` over an added batch dimension.

    Write `func` for one sample; the returned function takes batched arguments
    (mapped over dimension `in_dims`) and returns batched results (with the batch
    dimension at `out_dims`). See the module docstring for the full contract.

    >>> import tensorplay as tp
    >>> from tensorplay.func import vmap
    >>> def dot(x, y):
    ...     return (x * y).sum()
    >>> x, y = tp.ones(4, 3), tp.arange(12.0).reshape(4, 3)
    >>> vmap(dot)(x, y)
    tensor([ 3., 12., 21., 30.])
    >>> vmap(dot, in_dims=(1, None))(x.T, y[0])          # x mapped over its last dim, y shared
    tensor([3., 3., 3., 3.])
    >>> vmap(lambda r: (r.sum(), r.max()), out_dims=(0, 0), chunk_size=3)(y)
    (tensor([ 3., 12., 21., 30.]), tensor([ 2.,  5.,  8., 11.]))

    Scaling out (docs/scaling-out.md): `executor` runs the chunks on any
    `concurrent.futures.Executor` (threads, processes, ``dask.distributed.Client.get_executor()``);
    ``chunk_size="auto"`` picks the largest chunk whose working set fits `max_memory` (bytes, or a
    string such as ``"512MB"``). Either way the values are those of the serial chunked map.

    >>> from concurrent.futures import ThreadPoolExecutor
    >>> with ThreadPoolExecutor(2) as pool:
    ...     vmap(dot, chunk_size=2, executor=pool)(x, y)
    tensor([ 3., 12., 21., 30.])
    >>> vmap(dot, chunk_size="auto", max_memory="1MB")(x, y)
    tensor([ 3., 12., 21., 30.])
    """
    # (a wrapper kept on `func` holds in_dims / out_dims: only frozen ones -- exact ints, None and
    # tuples, hashable and keyed apart as they behave -- are keys)
    built_key = (("vmap", in_dims, out_dims, randomness)
                 if chunk_size is None and executor is None and max_memory is None and randomness.__class__ is str
                 and _frozen_dims(in_dims) and _frozen_dims(out_dims) else None)
    made = _built.lookup(func, built_key)
    if made is not None:
        return made
    _check_options("vmap", func, randomness)
    budget = _chunks.check_options("vmap", chunk_size, executor, max_memory)

    def call(*args, **kwargs):
        return _VmapCall("vmap", func, args, kwargs, in_dims, out_dims, randomness).run(chunk_size, executor, budget)

    key = _hashable(("vmap", _out_dims_key(in_dims), _out_dims_key(out_dims), randomness))
    if key is None or None in key[1:3]:
        return _unchained(functools.wraps(func)(call))

    def per_sample(args, kwargs):
        """The mapped leaves and their per-sample types (checks the arguments as an uncached call does)."""
        c = _VmapCall("vmap", func, args, kwargs, in_dims, out_dims, randomness)
        types = []
        for i, d in c.batched:
            t = c.leaves[i]._type()
            types.append(TensorType(t.shape[:d] + t.shape[d + 1:], t.dtype))
        return [i for i, _ in c.batched], types

    if chunk_size is not None or executor is not None:
        return _chunked_vmap(func, in_dims, out_dims, randomness, chunk_size, executor, budget, key, call, per_sample)

    def wrapped(*args, **kwargs):
        if STATE.stack:
            return call(*args, **kwargs)
        return _pipeline.call_outermost(wrapped, args, kwargs, call, per_sample)

    # at top level the same-argument transforms inside (grad, jacrev, ...) and vmap itself are one
    # cached executable: the user's function is traced per sample (`_pipeline.call_outermost`)
    spec = _pipeline.spec(key, lambda: (_vmap_name(key[1], in_dims), lambda g: vmap(g, in_dims, out_dims, randomness)))
    inner, user_fn = _pipeline.transform_chain(func)
    _copy_metadata(wrapped, func)._tp_chain = ((spec,) + inner, _named_errors(user_fn))
    return _built.remember(func, built_key, wrapped)


def _chunked_vmap(func, in_dims, out_dims, randomness, chunk_size, executor, budget, key, call, per_sample):
    """The chunked `vmap` wrapper: at top level through `_pipeline.call_outermost_chunked`, so that a
    call traces the user's function once and replays the cached chunk programs (`_ChunkedMap`);
    under another transform, or when the call cannot be cached, the uncached `call`."""
    where = f"vmap({_fn_name(func, identifier=False)}, in_dims={in_dims!r})"

    def build(fn, args, kwargs, sources_of):
        c = _VmapCall("vmap", fn, args, kwargs, in_dims, out_dims, randomness)
        c.where = where
        closed, inputs, dims, outs, batched, size = c._plan(chunk_size, budget, draw=False)
        if not c._chunked(inputs, size, executor):
            return None
        sources = sources_of(closed.captures)
        if sources is None:
            return None
        return _ChunkedMap(where, closed, [i for i, _ in c.batched], sources, dims, outs, batched, size, c.size,
                           randomness)

    def wrapped(*args, **kwargs):
        if STATE.stack:
            return call(*args, **kwargs)
        return _pipeline.call_outermost_chunked(wrapped, args, kwargs, call, per_sample, build, executor)

    chunks_key = ("chunks", chunk_size, budget, executor is not None)
    spec = _pipeline.spec(key + (chunks_key,), lambda: (_vmap_name(key[1], in_dims),
                                                         lambda g: vmap(g, in_dims, out_dims, randomness)))
    inner, user_fn = _pipeline.transform_chain(func)
    _copy_metadata(wrapped, func)._tp_chain = ((spec,) + inner, _named_errors(user_fn))
    return wrapped


class _ChunkedMap:
    """One cached chunked map: the batched chunk programs and where their inputs come from.

    The graph's inputs at a call are the mapped leaves of the arguments (`positions`), then one
    per capture of the per-sample trace (`sources`, see `_pipeline.call_outermost_chunked`); a
    random key becomes the per-sample keys of the call (randomness 'different') or one fresh key.

    On a thread pool of 2 or more threads the pool's runners can start the chunks while the
    calling thread still traces the user's function (`speculate`): on a copy of the inputs the
    call would have if its trace captured what the previous call's did (the arguments of this
    call, the previous call's captures), when there is no random key among them and they are
    small (`SPECULATE_MAX_BYTES`). The call uses those chunks' results only if its trace led to
    this same entry and every input it has then holds exactly the bytes (shape, dtype) the
    chunks read -- the same program on the same bytes gives the same results -- so a changed
    capture, or a function that writes into its own inputs while it runs, gets what the map
    computes without speculation; otherwise the chunks started are abandoned and the map runs
    as usual.
    """

    __slots__ = ("where", "closed", "positions", "sources", "in_dims", "out_dims", "batched", "spans",
                 "randomness", "size", "_programs", "_last_caps")

    SPECULATE_MAX_BYTES = 4 << 20  # copied and compared on the calling thread: small next to the chunks' work

    def __init__(self, where, closed, positions, sources, in_dims, out_dims, batched, chunk_size, size, randomness):
        self.where, self.closed, self.positions, self.sources = where, closed, positions, sources
        self.in_dims, self.out_dims, self.batched, self.randomness = in_dims, out_dims, batched, randomness
        self.size = size
        self.spans = _chunks.chunk_spans(size, min(chunk_size, size))
        self._programs: dict = {}
        self._last_caps = None  # the previous call's captures (by source), when it had no random key

    def program(self, n: int) -> "_chunks.ChunkProgram":
        made = self._programs.get(n)
        if made is None:
            made = self._programs[n] = _chunks.ChunkProgram.of(self.batched(n))
        return made

    def _inputs(self, leaves: list, caps) -> list:
        inputs = [leaves[i] for i in self.positions]
        for s in self.sources:
            if s.__class__ is int:
                s = caps[s]
            elif s.__class__ is tuple:
                s = leaves[s[1]]
            if isinstance(s, RandomKey):
                s = _split_key(s.count, self.size) if self.randomness == "different" else s.materialize()
            inputs.append(s)
        return inputs

    def speculate(self, leaves: list, executor) -> "_Speculation | None":
        """The chunks of a call with `leaves`, started on `executor`'s threads before the call's
        trace (see the class), or None when they cannot be."""
        caps = self._last_caps
        if caps is None or not isinstance(executor, ThreadPoolExecutor) or len(self.spans) < 2 \
                or _chunks._concurrency(executor) < 2:  # the calling thread is a 1-thread pool's only runner
            return None
        if any(isinstance(s, RandomKey) for s in self.sources):  # a constant key: drawn at each call, never early
            return None
        inputs = self._inputs(leaves, caps)
        if any(not isinstance(t, Tensor) for t in inputs):
            return None
        arrays = [t._data for t in inputs]
        if sum(a.nbytes for a in arrays) > self.SPECULATE_MAX_BYTES:
            return None
        try:
            copies = [a.copy() for a in arrays]
            runners = _chunks.start_on_threads(self.where, self.spans, self.program, copies, self.in_dims,
                                               self.out_dims, executor)
        except Exception:  # (a pool shut down meanwhile, no memory...): the call itself says what is wrong
            return None
        return None if runners is None else _Speculation(self, copies, runners)

    def __call__(self, leaves: list, user, executor, started: "_Speculation | None" = None):
        caps = user.captures
        inputs = self._inputs(leaves, caps)
        kept = [caps[s] for s in self.sources if s.__class__ is int]  # what a speculation would reuse
        self._last_caps = None if any(not isinstance(c, Tensor) for c in kept) or sum(
            c._data.nbytes for c in kept) > self.SPECULATE_MAX_BYTES else caps
        outs = started.join(inputs) if started is not None else None
        if outs is None:
            outs = _chunks.run_map(self.where, self.spans, self.program, [t._data for t in inputs], self.in_dims,
                                   self.out_dims, executor)
        outs = own_outputs([Tensor._wrap(a) for a in outs], inputs)
        closed = self.closed
        return closed.unflatten_outputs(closed.write_back(inputs, outs))


class _Speculation:
    """Chunks of a `_ChunkedMap` started before the call's trace, on `copies` of the inputs it expected."""

    __slots__ = ("entry", "copies", "runners")

    def __init__(self, entry, copies, runners):
        self.entry, self.copies, self.runners = entry, copies, runners

    def join(self, inputs: list) -> list | None:
        """The map's outputs when the call's inputs hold the bytes the chunks read, else None (the
        chunks are abandoned)."""
        if len(inputs) != len(self.copies) or not all(
                isinstance(t, Tensor) and _same_bytes(t._data, c) for t, c in zip(inputs, self.copies)):
            self.abandon()
            return None
        return self.runners.join()

    def abandon(self) -> None:
        self.runners.abandon()


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """`a` holds the bytes of its copy `b` (NaNs with the same payload compare equal)."""
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
        np.ascontiguousarray(a).reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))


def _unchained(wrapped):
    """`wrapped` without the transform attributes `functools.wraps` copied from the function it wraps
    (a vmap is not the grad it maps)."""
    wrapped.__dict__.pop("_tp_transform", None)
    wrapped.__dict__.pop("_tp_chain", None)
    wrapped.__dict__.pop(_built.ATTR, None)
    return wrapped


def _frozen_dims(d) -> bool:
    """Whether in_dims / out_dims `d` cannot change after the call: None, ints and tuples of those."""
    c = d.__class__
    if d is None or c is int:
        return True
    if c is tuple:
        for x in d:
            if not (x is None or x.__class__ is int or (x.__class__ is tuple and _frozen_dims(x))):
                return False
        return True
    return False


_FunctionType = type(_unchained)
_TRANSFORM_ATTRS = ("_tp_transform", "_tp_chain", _built.ATTR)
_WRAPS_AS_WRITTEN = (functools.WRAPPER_ASSIGNMENTS == ("__module__", "__name__", "__qualname__", "__doc__",
                                                     "__annotations__")
                     and functools.WRAPPER_UPDATES == ("__dict__",))  # else (another Python) functools.wraps


def _copy_metadata(wrapper, func):
    """``_unchained(functools.wraps(func)(wrapper))``: the same attributes, written out for a
    Python function `func` (a vmap wrapper is built on every call of ``vmap(f)(x)`` as torch.func
    users write it; `functools.update_wrapper` costs several microseconds of that).

    >>> def f(x):
    ...     "doc"
    >>> w = _copy_metadata(lambda x: x, f)
    >>> w.__name__, w.__doc__, w.__wrapped__ is f
    ('f', 'doc', True)
    """
    if func.__class__ is not _FunctionType or not _WRAPS_AS_WRITTEN:
        return _unchained(functools.wraps(func)(wrapper))
    wrapper.__module__ = func.__module__
    wrapper.__name__ = func.__name__
    wrapper.__qualname__ = func.__qualname__
    wrapper.__doc__ = func.__doc__
    wrapper.__annotations__ = func.__annotations__
    extra = func.__dict__
    if extra:
        wrapper.__dict__.update(extra)
        for k in _TRANSFORM_ATTRS:
            wrapper.__dict__.pop(k, None)
    wrapper.__wrapped__ = func
    return wrapper


_NAMES: dict = {}  # the frozen in_dims key -> "vmap(in_dims=...)", for in_dims whose repr the key determines
_NAMES_LIMIT = 1024


def _vmap_name(frozen, in_dims) -> str:
    """``f"vmap(in_dims={in_dims!r})"``, memoised for an int, None or a tuple of them (the frozen key
    determines their repr; a list or a dict is written out every time)."""
    if in_dims is None or in_dims.__class__ is int or (
            in_dims.__class__ is tuple and all(d is None or d.__class__ is int for d in in_dims)):
        name = _NAMES.get(frozen)
        if name is None:
            if len(_NAMES) >= _NAMES_LIMIT:
                _NAMES.clear()
            name = _NAMES[frozen] = f"vmap(in_dims={in_dims!r})"
        return name
    return f"vmap(in_dims={in_dims!r})"


def _named_errors(func):
    """`func` raising its TypeError / ValueError / IndexError with the active transforms named, as
    the per-sample function of an uncached vmap call does. (Internal: it is the traced function,
    so it carries `func`'s name and nothing else.)"""
    def per_sample(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (TypeError, ValueError, IndexError) as e:
            if type(e) not in (TypeError, ValueError, IndexError) or "(under " in str(e):
                raise
            raise type(e)(f"{e} (under {transform_stack()})") from None

    name = getattr(func, "__name__", None)
    if name is not None:
        per_sample.__name__ = name
        per_sample.__qualname__ = getattr(func, "__qualname__", name)
    per_sample.__wrapped__ = func
    return per_sample


def chunk_vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error",
               chunks: int = 2, *, executor: Executor | None = None) -> Callable:
    """`vmap` splitting the batch into `chunks` pieces (of ``ceil(batch / chunks)`` samples each),
    run on `executor` when one is given (as ``vmap(..., executor=)``).

    Prefer ``vmap(..., chunk_size=...)``, which bounds the memory in samples and so
    does not change with the batch size.

    >>> import tensorplay as tp
    >>> from tensorplay.func import chunk_vmap
    >>> chunk_vmap(lambda r: r.sum(), chunks=3)(tp.ones(5, 2))
    tensor([2., 2., 2., 2., 2.])
    """
    _check_options("chunk_vmap", func, randomness)
    if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise ValueError(f"chunk_vmap: chunks must be a positive int, got {chunks!r}")
    _chunks.check_options("chunk_vmap", chunks, executor, None, allow_auto=False)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        call = _VmapCall("chunk_vmap", func, args, kwargs, in_dims, out_dims, randomness)
        return call.run(max(1, math.ceil(call.size / chunks)), executor)

    return _unchained(wrapped)


_BATCHED = _pipeline.LRU("vmap")
_OUT_DIMS = _pipeline.LRU("vmap_out_dims")
_AUTO = _pipeline.LRU("vmap_auto_chunk_size")


# --- the call --------------------------------------------------------------------------------------
def _check_options(api: str, func, randomness) -> None:
    if not callable(func):
        raise TypeError(f"{api}: func must be callable, got {type(func).__name__}")
    if randomness not in RANDOMNESS:
        raise ValueError(f"{api}: randomness must be one of {', '.join(map(repr, RANDOMNESS))}, got {randomness!r}")


def _fn_name(func, identifier: bool = True) -> str:
    """The function's name for messages (``<lambda>`` too), or as a graph name (an identifier)."""
    name = getattr(func, "__name__", None) or type(func).__name__
    return name if name.isidentifier() or not identifier else "f"


class _Slot:
    """Placeholder for a tensor output while out_dims is matched against the output structure."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


class _VmapCall:
    """One call of a vmapped function: checks the arguments, traces, batches, runs."""

    def __init__(self, api: str, func, args: tuple, kwargs: dict, in_dims, out_dims, randomness: str):
        self.api = api
        self.func = func
        self.where = f"{api}({_fn_name(func, identifier=False)}, in_dims={in_dims!r})"
        self.transform = f"{api}(in_dims={in_dims!r})"
        self.in_dims = in_dims
        self.out_dims = out_dims
        self.randomness = randomness
        self.leaves, self.tree = _pytree.tree_flatten((tuple(args), kwargs))
        self._call_args = (tuple(args), kwargs)
        dims = self._expand_in_dims(tuple(args))
        dims += [None] * (len(self.leaves) - len(dims))  # keyword arguments are never batched
        self.batched = self._check_batched(dims)          # [(leaf index, dim)]
        self.size = self._batch_size()

    @functools.cached_property
    def paths(self) -> list[str]:
        """A readable path per leaf (``args[1]['w']``), for messages: worked out only when one is raised."""
        return _leaf_paths(self._call_args, ("args", "kwargs"))

    # --- in_dims ----------------------------------------------------------------------------------
    def _expand_in_dims(self, args: tuple) -> list:
        in_dims = self.in_dims
        if isinstance(in_dims, (tuple, list)):
            if len(in_dims) != len(args):
                raise ValueError(f"{self.where}: in_dims has {len(in_dims)} entries but {len(args)} positional "
                                 f"arguments were given; give one entry per positional argument")
        elif in_dims is not None and (isinstance(in_dims, bool) or not isinstance(in_dims, int)):
            raise TypeError(f"{self.where}: in_dims must be an int, None, or a tuple with one entry per "
                            f"positional argument, got {type(in_dims).__name__}")
        try:
            dims = _pytree.broadcast_prefix(in_dims, args, what="in_dims")
        except ValueError as e:
            raise ValueError(f"{self.where}: {e}; in_dims must be a prefix of the arguments' structure") from None
        for d in dims:
            if d is not None and (isinstance(d, bool) or not isinstance(d, int)):
                raise TypeError(f"{self.where}: in_dims entries must be ints or None, got {d!r}")
        return dims

    def _check_batched(self, dims: list) -> list[tuple[int, int]]:
        batched = []
        for i, (leaf, d) in enumerate(zip(self.leaves, dims)):
            if d is None:
                continue
            if not isinstance(leaf, Tensor):
                raise ValueError(f"{self.where}: in_dim {d} given for {self.paths[i]}, which is not a tensor "
                                 f"but {type(leaf).__name__} {leaf!r:.40}; vmap maps over tensors only, "
                                 f"so use None for this argument")
            n = leaf.ndim
            if not -n <= d < n:
                valid = f"expected a dim in [{-n}, {n - 1}]" if n else "a 0-d tensor has no dimension to map over"
                raise ValueError(f"{self.where}: in_dim {d} is out of range for {self.paths[i]} of shape "
                                 f"{tuple(leaf.shape)} ({valid})")
            batched.append((i, d % n))
        if not batched:
            raise ValueError(f"{self.where}: no input is batched: every in_dim is None (keyword arguments are "
                             f"never batched); give at least one positional tensor argument a mapped dimension")
        return batched

    def _batch_size(self) -> int:
        sizes = {self.leaves[i].shape[d] for i, d in self.batched}
        if len(sizes) > 1:
            listing = ", ".join(f"{self.paths[i]} has size {self.leaves[i].shape[d]} at dim {d}"
                                for i, d in self.batched)
            raise ValueError(f"{self.where}: batched inputs have different sizes in the mapped dimension "
                             f"({listing}); every batched input needs the same batch size")
        return sizes.pop()

    # --- tracing ----------------------------------------------------------------------------------
    def _trace(self):
        positions = [i for i, _ in self.batched]

        def per_sample(*xs):
            leaves = list(self.leaves)
            for i, x in zip(positions, xs):
                leaves[i] = x
            args, kwargs = _pytree.tree_unflatten(self.tree, leaves)
            try:
                return self.func(*args, **kwargs)
            except (TypeError, ValueError, IndexError) as e:  # name the transforms, as `bind` does for primitives
                if type(e) not in (TypeError, ValueError, IndexError) or "(under " in str(e):
                    raise
                raise type(e)(f"{e} (under {transform_stack()})") from None

        types = []
        for i, d in self.batched:
            t = self.leaves[i]._type()
            types.append(TensorType(t.shape[:d] + t.shape[d + 1:], t.dtype))
        return trace_function(per_sample, tuple(self.leaves[i] for i in positions), {}, transform=self.transform,
                              in_types=types, name=_fn_name(self.func))

    def _inputs(self, closed, draw: bool = True) -> tuple[list, list]:
        """The batched graph's inputs and their batch dims: the batched arguments, then the captures
        (with `draw` False a random key stays the `RandomKey` it is: nothing is drawn)."""
        inputs = [self.leaves[i] for i, _ in self.batched]
        dims: list = [d for _, d in self.batched]
        if self.randomness == "error" and any(n.prim.random for n in closed.graph.nodes):
            raise RuntimeError(f"{self.where}: called a random operation while randomness='error'; pass "
                               f"randomness='different' (a fresh draw per sample) or 'same' (one draw shared by "
                               f"every sample), or draw the random values outside of {self.api}")
        for source in closed.captures:
            if isinstance(source, RandomKey) and not draw:
                inputs.append(source)
                dims.append(0 if self.randomness == "different" else None)
            elif isinstance(source, RandomKey) and self.randomness == "different":
                inputs.append(_split_key(source.count, self.size))
                dims.append(0)
            else:
                inputs.append(source.materialize() if isinstance(source, RandomKey) else source)
                dims.append(None)
        return inputs, dims

    # --- out_dims ---------------------------------------------------------------------------------
    def _out_dims(self, closed, in_batched: list[bool], n_own: int) -> list:
        """One out dim (normalized, or None) per output of the function (the first `n_own` graph outputs)."""
        graph = closed.graph
        skeleton = closed.unflatten_outputs([_Slot(k) for k in range(n_own)])
        out_dims = self.out_dims
        if isinstance(skeleton, _Slot) and isinstance(out_dims, (tuple, list)) and len(out_dims) == 1:
            out_dims = out_dims[0]  # out_dims=(0,) for a single tensor output, as torch accepts
        try:
            flat = _pytree.broadcast_prefix(out_dims, skeleton, what="out_dims")
        except ValueError as e:
            raise ValueError(f"{self.where}: {e}; out_dims must be an int, None, or a prefix of the structure "
                             f"the function returns") from None
        leaves, _ = _pytree.tree_flatten(skeleton)
        paths = _leaf_paths(skeleton, "output")
        batched = batched_outputs(graph, in_batched)
        result: list = [None] * n_own
        for leaf, d, path in zip(leaves, flat, paths):
            if d is not None and (isinstance(d, bool) or not isinstance(d, int)):
                raise TypeError(f"{self.where}: out_dims entries must be ints or None, got {d!r} for {path}")
            if not isinstance(leaf, _Slot):
                if d is not None:
                    raise TypeError(f"{self.where}: the function returned a {type(leaf).__name__} as {path}; "
                                    f"vmap can only return tensors there (use out_dims=None for outputs that "
                                    f"are passed through unchanged)")
                continue
            k = leaf.index
            rank = graph.outputs[k].ndim
            if d is None:
                if batched[k]:
                    raise ValueError(f"{self.where}: out_dims is None for {path}, but that output depends on the "
                                     f"batched inputs (per-sample shape {graph.outputs[k].shape}); None is only "
                                     f"allowed for outputs that are the same for every sample")
                continue
            if not -(rank + 1) <= d <= rank:
                raise ValueError(f"{self.where}: out_dim {d} is out of range for {path}, which has per-sample "
                                 f"shape {graph.outputs[k].shape} (expected a dim in [{-(rank + 1)}, {rank}])")
            result[k] = d % (rank + 1)
        return result

    def _write_dims(self, closed, in_dims: list, n_own: int) -> list:
        """The out dim of each in-place write-back output: the written input's own batch dim.

        Writes into a batched argument reach the caller's tensor (as in torch). A value that depends
        on the batch cannot be written into an input that is shared by every sample.
        """
        graph = closed.graph
        batched = batched_outputs(graph, [d is not None for d in in_dims])
        dims = []
        for j, idx in enumerate(closed.mutated):
            d = in_dims[idx]
            if d is None and batched[n_own + j]:
                raise RuntimeError(f"{self.where}: in-place write into {self._describe_input(closed, idx)}, which "
                                   f"is not batched (every sample shares it), of a value that depends on the "
                                   f"batched inputs; write into a batched argument, or return the value instead")
            dims.append(d)
        return dims

    def _describe_input(self, closed, idx: int) -> str:
        if idx < closed.num_args:
            i, _ = self.batched[idx]
            return self.paths[i]
        source = closed.captures[idx - closed.num_args]
        for i, leaf in enumerate(self.leaves):
            if leaf is source or (isinstance(leaf, Tensor) and getattr(leaf, "_base", None) is source):
                what = "in_dim None" if self.paths[i].startswith("args") else "a keyword argument"
                return f"{self.paths[i]} ({what})"
        shape = tuple(source.shape) if isinstance(source, Tensor) else "?"
        return f"a tensor of shape {shape} captured from outside the function"

    # --- running ----------------------------------------------------------------------------------
    def run(self, chunk_size: int | str | None, executor: Executor | None = None, budget: int | None = None):
        closed, inputs, in_dims, out_dims, batched, chunk_size = self._plan(chunk_size, budget)
        if self._chunked(inputs, chunk_size, executor):
            outs = self._run_chunks(batched, inputs, in_dims, out_dims, chunk_size, executor)
            return closed.unflatten_outputs(closed.write_back(inputs, outs))
        if chunk_size is None or chunk_size >= self.size:  # one piece, or chunks inlined into the enclosing trace
            outs = call_graph(batched(self.size), inputs)
            return closed.unflatten_outputs(closed.write_back(inputs, outs))
        pieces = []
        for start in range(0, self.size, chunk_size):
            n = min(chunk_size, self.size - start)
            sliced = [t if d is None else _narrow(t, d, start, n) for t, d in zip(inputs, in_dims)]
            pieces.append(call_graph(batched(n), sliced))
        outs = [pieces[0][k] if d is None else bind("concatenate", *(p[k] for p in pieces), axis=d)
                for k, d in enumerate(out_dims)]
        return closed.unflatten_outputs(closed.write_back(inputs, outs))

    def _chunked(self, inputs: list, chunk_size, executor) -> bool:
        """Whether the map runs as chunks on concrete inputs (`_chunks.run_map`)."""
        return bool(self.size) and owning_trace([t for t in inputs if isinstance(t, Tensor)]) is None and (
            executor is not None or (chunk_size is not None and chunk_size < self.size))

    def _plan(self, chunk_size: int | str | None, budget: int | None, draw: bool = True):
        """``(closed, inputs, in_dims, out_dims, batched, chunk_size)``: the per-sample trace, the batched
        graph's inputs and their batch dims, the out dims of its outputs, ``batched(n)`` (the batched
        graph for n samples, cached) and the chunk size ("auto" resolved, None when unchunked). With
        `draw` False no random key is drawn (the inputs are only looked at)."""
        closed = self._trace()
        inputs, in_dims = self._inputs(closed, draw)
        n_own = len(closed.graph.outputs) - len(closed.mutated)  # then one output per in-place write-back
        graph_key = closed.graph.structural_key()
        out_key = _out_dims_key(self.out_dims)
        if out_key is not None:  # what resolving out_dims against the outputs depends on
            out_key = (graph_key, tuple(in_dims), out_key, closed.out_tree, tuple(closed.out_static),
                       tuple(closed.mutated))

        def resolve_out_dims():
            dims = self._out_dims(closed, [d is not None for d in in_dims], n_own)
            return tuple(dims + self._write_dims(closed, in_dims, n_own))

        out_dims = list(_pipeline.memo(_OUT_DIMS, _hashable(out_key), resolve_out_dims))

        def batched(size: int):
            key = (graph_key, tuple(in_dims), size, tuple(out_dims), self.randomness)
            return _pipeline.memo(_BATCHED, key, lambda: batch_graph(closed.graph, in_dims, size, out_dims,
                                                                      randomness=self.randomness))

        if chunk_size == _chunks.AUTO:
            auto_key = (graph_key, tuple(in_dims), tuple(out_dims), self.randomness, self.size, budget)
            chunk_size = None if not self.size else _pipeline.memo(
                _AUTO, auto_key, lambda: _chunks.auto_chunk_size(self.where, self.size, budget,
                                                                 lambda n: _chunks.footprint(batched(n))))
        return closed, inputs, in_dims, out_dims, batched, chunk_size

    def _run_chunks(self, batched, inputs: list, in_dims: list, out_dims: list, chunk_size: int,
                    executor: Executor | None) -> list:
        """All graph outputs of the map on concrete inputs, its chunks run by `_chunks.run_map`
        (on `executor`, or here in order) as numpy arrays."""
        spans = _chunks.chunk_spans(self.size, min(chunk_size, self.size))
        outs = _chunks.run_map(self.where, spans, lambda n: _chunks.ChunkProgram.of(batched(n)),
                               [t._data for t in inputs], in_dims, out_dims, executor)
        return own_outputs([Tensor._wrap(a) for a in outs], inputs)


def _out_dims_key(out_dims):
    """`out_dims` as a hashable key (containers tagged by kind, lists as tuples), or None when it
    holds anything but ints, None and containers of those (then nothing is cached and the usual
    checks report it)."""
    c = out_dims.__class__
    if c is int or out_dims is None:
        return ("out_dims", out_dims)
    if c is tuple and all(d is None or d.__class__ is int for d in out_dims):  # the common in_dims
        return ("out_dims", ("tuple",) + out_dims)
    try:
        return ("out_dims", _freeze_dims(out_dims))
    except TypeError:
        return None


def _freeze_dims(d):
    if d is None or (isinstance(d, int) and not isinstance(d, bool)):
        return d
    if isinstance(d, (tuple, list)):
        return (type(d).__name__,) + tuple(_freeze_dims(x) for x in d)
    if isinstance(d, dict):
        return ("dict",) + tuple(sorted((k, _freeze_dims(v)) for k, v in d.items()))
    raise TypeError(f"not an out_dims entry: {d!r}")


def _hashable(key):
    """`key`, or None when it cannot be hashed (then the result is computed, not cached)."""
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _narrow(t: Tensor, d: int, start: int, n: int) -> Tensor:
    starts, limits, strides = [0] * t.ndim, list(t.shape), [1] * t.ndim
    starts[d], limits[d] = start, start + n
    return bind("slice", t, start_indices=tuple(starts), limit_indices=tuple(limits), strides=tuple(strides))


def _split_key(count: int, size: int) -> Tensor:
    """Keys for `size` samples of a draw of `count` elements: [seed, base + i * count] for sample i.

    One key for ``count * size`` elements is taken from the generator (concrete at top level, a capture
    of the enclosing trace under another transform) and split with tensor ops.
    """
    key = RandomKey(count * size).materialize()
    iota = bind("iota", shape=(size, 2), dtype=dtypes.int64, dimension=0)
    column = bind("iota", shape=(size, 2), dtype=dtypes.int64, dimension=1)  # 0 for the seed, 1 for the counter
    offsets = bind("mul", bind("mul", iota, column), bind("full", shape=(size, 2), dtype=dtypes.int64, value=count))
    return bind("add", bind("broadcast_in_dim", key, shape=(size, 2), broadcast_dimensions=(1,)), offsets)


def _leaf_paths(tree: Any, root: str | tuple[str, ...]) -> list[str]:
    """A readable path per leaf of `tree`, in `tree_flatten` order: ``args[1]['w']``, ``output[0]``."""
    paths: list[str] = []

    def go(x, path: str):
        leaves, td = _pytree.tree_flatten(x, is_leaf=lambda y: y is not x)
        if td.kind == "leaf":
            paths.append(path)
        elif td.kind == "dict":
            for k in td.meta:
                go(x[k], f"{path}[{k!r}]")
        elif td.kind != "none":
            for i, c in enumerate(x):
                go(c, f"{path}[{i}]")

    if isinstance(root, tuple):  # the (args, kwargs) pair: name the halves
        for part, name in zip(tree, root):
            go(part, name)
    else:
        go(tree, root)
    return paths
