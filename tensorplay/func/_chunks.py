"""vmap's chunks as units of parallel and distributed work, and memory-budgeted chunk sizes.

`vmap(f, chunk_size=K, executor=ex)` with concrete inputs runs the batched graph of K samples
on slices of the batch. Each chunk is one call ``run_chunk(program, arrays, placement)``:

- `program` is a `ChunkProgram`: the IR text of the batched graph (`tensorplay.ir.text`) and
  its SHA-256. Pickled, it is that text only -- never the user's function or a closure -- so
  any `concurrent.futures.Executor` can run it: a `ThreadPoolExecutor` (compiled code releases
  the GIL while it runs, so the threads use every core), a `ProcessPoolExecutor`, or
  ``dask.distributed.Client(...).get_executor()``. In the calling process the program runs the
  executable it was built from; elsewhere the worker parses the text and compiles it once per
  digest (`_WORKER_PROGRAMS`; the on-disk cache of `tensorplay.codegen` makes that a load).
- `arrays` are numpy arrays: the chunk's slices of the batched inputs, the unbatched inputs
  and the captured tensors whole. Only the chunk's results come back. On a dask executor the
  program and the large unbatched arrays are scattered to the workers once per map
  (`_Scattered`) and the chunks carry dask futures in their place.
- `placement` says where the chunk's results go in the map's preallocated outputs. A worker
  thread of this process has the compiled code write them there (`Executable(out=)`). With
  workers in other processes the outputs are shared memory (`_shared.SharedOutputs`): a
  worker on this machine maps them when its chunk runs and writes there too; a worker that
  cannot map them (another machine) sends the results back, to be copied into place.

A chunk on an executor runs single-threaded inside: the executable does not split its loops
over its own pool (`codegen.executable.serial_calls`) and numpy's OpenBLAS is held at one
thread (`one_blas_thread`); the executor's workers are the parallelism.

`run_map` submits the chunks (on a thread pool all at once, collected in order; on dask in one
`client.map`; elsewhere a bounded number in flight, each taken as it completes), and raises
`ChunkError` naming the first chunk that failed (its index and sample range, chained to the
cause) -- never a partial result. Nothing is written into the caller's
tensors here: `vmap` applies in-place write-backs only after every chunk has succeeded.

`chunk_size="auto"` with `max_memory=` picks the largest chunk whose working set -- the
executable's arena plus the chunk's inputs and outputs (`footprint`) -- fits the budget
(`auto_chunk_size`).
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import os
import re
import threading
import time
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from tensorplay.ir import Graph
from tensorplay.ir.text import parse_graph, print_graph

from .._exec import runner
from . import _pipeline
from ._shared import RECYCLED, SHARED_POOL, SharedRef

__all__ = ["AUTO", "ChunkError", "ChunkProgram", "ThreadRunners", "check_options", "parse_memory", "run_chunk", "run_chunks", "start_on_threads",
           "run_here", "run_map",
           "footprint", "auto_chunk_size", "chunk_spans"]

AUTO = "auto"


class ChunkError(RuntimeError):
    """A chunk of a chunked map failed (it raised, or its worker died); the cause is chained."""


# --- arguments -------------------------------------------------------------------------------------
_UNITS = {"b": 1, "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12,
          "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "tib": 2 ** 40}
_MEMORY = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*", re.IGNORECASE)


def parse_memory(api: str, value) -> int:
    """`max_memory` in bytes: a positive int, or a string such as ``"512MB"`` or ``"1.5GiB"``
    (B, kB/MB/GB/TB in powers of 1000, KiB/MiB/GiB/TiB in powers of 1024; case-insensitive).

    >>> parse_memory("vmap", "1.5GiB"), parse_memory("vmap", "512 MB"), parse_memory("vmap", 4096)
    (1610612736, 512000000, 4096)
    """
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{api}: max_memory must be a number of bytes (int) or a string such as '512MB', "
                        f"got {type(value).__name__} {value!r}")
    if isinstance(value, int):
        size = value
    else:
        m = _MEMORY.fullmatch(value)
        unit = m.group(2).lower() if m else None
        if unit == "":
            unit = "b"
        if unit not in _UNITS:
            raise ValueError(f"{api}: max_memory {value!r} is not a size: expected a number and a unit "
                             f"({', '.join(['B', 'kB', 'MB', 'GB', 'TB', 'KiB', 'MiB', 'GiB', 'TiB'])}), "
                             f"e.g. '512MB' or '1.5GiB'")
        size = int(float(m.group(1)) * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"{api}: max_memory must be positive, got {value!r}")
    return size


def check_options(api: str, chunk_size, executor, max_memory, *, allow_auto: bool = True) -> int | None:
    """Validate `chunk_size`, `executor` and `max_memory` together; the budget in bytes (or None).

    >>> check_options("vmap", "auto", None, "1kB")
    1000
    """
    auto = allow_auto and isinstance(chunk_size, str) and chunk_size == AUTO
    if chunk_size is not None and not auto and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int)
                                                or chunk_size < 1):
        expected = "a positive int, 'auto' or None" if allow_auto else "a positive int or None"
        raise ValueError(f"{api}: chunk_size must be {expected}, got {chunk_size!r}")
    if executor is not None and not isinstance(executor, cf.Executor):
        hint = " (for dask, pass client.get_executor())" if hasattr(executor, "get_executor") else ""
        raise TypeError(f"{api}: executor must be a concurrent.futures.Executor{hint}, "
                        f"got {type(executor).__name__}")
    if executor is not None and chunk_size is None:
        raise ValueError(f"{api}: executor needs chunk_size: the chunks are what the executor runs "
                         f"(give chunk_size=K{', or chunk_size=' + repr(AUTO) + ' with max_memory' if allow_auto else ''})")
    if max_memory is not None and not auto:
        raise ValueError(f"{api}: max_memory is only used with chunk_size='auto', got chunk_size={chunk_size!r}")
    if auto and max_memory is None:
        raise ValueError(f"{api}: chunk_size='auto' needs max_memory, the memory budget of one chunk "
                         f"(bytes, or a string such as '512MB')")
    return parse_memory(api, max_memory) if auto else None


# --- what a worker runs ----------------------------------------------------------------------------
class ChunkProgram:
    """A batched graph as a worker needs it: its IR text and the text's SHA-256 `digest`.

    Pickling keeps the text only; in the process that built it, the program runs the graph it
    was built from (compiled on first use), elsewhere the text is parsed and compiled once per
    digest and worker.

    The program's graph returns the batched graph's outputs in the order its compiled code
    produces them (`order`: program output j is the map's output ``order[j]``), so that the
    executable writes a chunk's results straight into the map's outputs (`Executable(out=)`
    does that only when the outputs come in the order of its slots; otherwise it writes fresh
    arrays and copies them, which doubles the memory traffic of a map with large results).
    `output_types` and `run_here` speak in the map's order.

    >>> import pickle, numpy as np
    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32))
    >>> p = pickle.loads(pickle.dumps(ChunkProgram.of(b.build([b.neg(x)]))))
    >>> run_chunk(p, [np.ones(2, np.float32)])[0].tolist()
    [-1.0, -1.0]
    """

    __slots__ = ("text", "digest", "order", "_graph", "_lock", "_types")

    def __init__(self, text: str, graph: Graph | None = None, order: Sequence[int] | None = None):
        self.text = text
        self.order = None if order is None or list(order) == list(range(len(order))) else tuple(order)
        self.digest = hashlib.sha256((text if self.order is None else f"{self.order}\n{text}").encode()).hexdigest()
        self._graph = graph
        self._lock = threading.Lock()
        self._types = None

    @classmethod
    def of(cls, graph: Graph) -> "ChunkProgram":
        """The program of `graph` (made once and kept on the graph, as its runner is)."""
        made = graph.__dict__.get("_tp_chunk_program")
        if made is None:
            order = _production_order(graph)
            run = graph if order is None else Graph(graph.inputs, graph.nodes, [graph.outputs[k] for k in order],
                                                    graph.name, graph.arg_attrs)
            made = cls(print_graph(run), run, order)
            graph._tp_chunk_program = made
        return made

    def runner(self) -> tuple[Callable[..., list], bool]:
        """``(run, fresh)`` for this program's graph with the active backend (see `tensorplay._exec.runner`);
        `run` returns the results in the program's order (see `order`)."""
        if self._graph is not None:
            with self._lock:  # threads running the first chunks at once compile it once
                return runner(self._graph)
        return runner(self.graph())

    def graph(self) -> Graph:
        """The program's graph: the one it was made from, or (in a worker) the text parsed once per digest."""
        if self._graph is not None:
            return self._graph
        cached = _WORKER_PROGRAMS.get(self.digest)
        if cached is None:
            cached = parse_graph(self.text)
            _WORKER_PROGRAMS.put(self.digest, cached)
        return cached

    def output_types(self) -> list[tuple[tuple[int, ...], np.dtype]]:
        """``(shape, dtype)`` of each result, in the map's order (worked out once)."""
        if self._types is None:
            types = [(v.type.shape, v.dtype.np) for v in self.graph().outputs]
            self._types = types if self.order is None else self.to_map(types)
        return self._types

    def to_map(self, results: Sequence) -> list:
        """Results in the program's order, put in the map's order."""
        if self.order is None:
            return list(results)
        mapped: list = [None] * len(results)
        for j, k in enumerate(self.order):
            mapped[k] = results[j]
        return mapped

    def to_program(self, items: Sequence) -> list:
        """One item per result in the map's order, put in the program's order."""
        return list(items) if self.order is None else [items[k] for k in self.order]

    def __getstate__(self):
        return {"text": self.text, "digest": self.digest, "order": self.order}

    def __setstate__(self, state):
        self.text, self.digest, self.order = state["text"], state["digest"], state.get("order")
        self._graph = None
        self._lock = threading.Lock()
        self._types = None

    def __repr__(self) -> str:
        return f"<ChunkProgram {self.digest[:12]}: {len(self.text)} chars of IR>"


def _production_order(graph: Graph) -> list[int] | None:
    """The graph's outputs ordered by the node that computes each (the order in which compiled code
    assigns their slots; a guess: where the schedule differs, the executable copies, as before),
    or None when that is their order already or an output is an input or repeated."""
    outs = graph.outputs
    if len(set(outs)) != len(outs) or len(outs) < 2:
        return None
    position = {n.out: i for i, n in enumerate(graph.nodes)}
    if any(v not in position for v in outs):
        return None
    order = sorted(range(len(outs)), key=lambda k: position[outs[k]])
    return None if order == list(range(len(outs))) else order


_WORKER_PROGRAMS = _pipeline.LRU("chunk_programs", maxsize=64)  # digest -> parsed graph (its runner is kept on it)


def run_chunk(program: ChunkProgram, arrays: Sequence[np.ndarray], placement: "Placement | None" = None) -> list:
    """Run one chunk on an executor's worker: `run_here` with one thread for the executable and
    for numpy's OpenBLAS (the executor provides the parallelism). A module-level function, so
    executors pickle it by reference. A placement attached to shared outputs in a worker process
    is unmapped when the chunk is done."""
    from tensorplay.codegen.executable import serial_calls  # codegen loads on first use, as in `_exec`

    attached = placement.attach() if placement is not None else None
    try:
        with serial_calls(), one_blas_thread():
            return run_here(program, arrays, attached)
    finally:
        if attached is not None:
            attached.release()


def run_here(program: ChunkProgram, arrays: Sequence[np.ndarray], placement: "Placement | None" = None) -> list:
    """Run one chunk: `program` on `arrays`. With a `placement` (a worker sharing the caller's
    memory) the batched results are written into the map's outputs and None stands for them."""
    from tensorplay.codegen import Executable

    run, _ = program.runner()
    if placement is not None and isinstance(run, Executable):  # the compiled code writes into place
        run(*arrays, out=program.to_program(placement.buffers(program)))
        return [None if d is not None else r for r, d in zip(placement.kept, placement.out_dims)]
    results = program.to_map([np.asarray(a) for a in run(*arrays)])
    return results if placement is None else placement.put(results)


class _OneBlasThread:
    """numpy's OpenBLAS on one thread while any chunk of an executor runs in this process.

    OpenBLAS's thread count is process-wide: two chunk threads each calling a 2-thread gemm would
    put four threads on two cores and queue on OpenBLAS's own lock. The first chunk to enter sets
    one thread, the last to leave restores the count it found (other numpy code running meanwhile
    is single-threaded too). Without numpy's bundled OpenBLAS it does nothing.
    """

    _SYMBOLS = [("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                ("openblas_get_num_threads", "openblas_set_num_threads")]

    def __init__(self):
        self._lock = threading.Lock()
        self._depth = 0
        self._before = 0
        self._api = False  # (get, set) once looked up; None when there is no OpenBLAS

    def _lookup(self):
        import ctypes
        import glob

        root = os.path.dirname(np.__file__)
        for path in sorted(glob.glob(os.path.join(root + ".libs", "*openblas*"))
                           + glob.glob(os.path.join(root, ".libs", "*openblas*"))
                           + glob.glob(os.path.join(root, ".dylibs", "*openblas*"))):
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for get, set_ in self._SYMBOLS:
                if hasattr(lib, get) and hasattr(lib, set_):
                    getter, setter = getattr(lib, get), getattr(lib, set_)
                    getter.restype, setter.argtypes = ctypes.c_int, [ctypes.c_int]
                    return getter, setter
        return None

    def __enter__(self):
        with self._lock:
            if self._api is False:
                self._api = self._lookup()
            if self._api is not None and self._depth == 0:
                self._before = self._api[0]()
                self._api[1](1)
            self._depth += 1

    def __exit__(self, *exc):
        with self._lock:
            self._depth -= 1
            if self._api is not None and self._depth == 0 and self._before > 1:
                self._api[1](self._before)


_ONE_BLAS_THREAD = _OneBlasThread()


def one_blas_thread() -> _OneBlasThread:
    """The context in which chunks run on an executor (see `_OneBlasThread`)."""
    return _ONE_BLAS_THREAD


class Placement:
    """Where one chunk's batched results go: samples `start` to `stop` of the map's outputs.

    A worker that shares the caller's memory (a thread) writes them there itself, so the copies
    run in parallel like the chunks. Pickled for another process, a placement carries the map's
    `shared` outputs (`_shared.SharedRef`) when there are any: a worker process on the same
    machine maps them and writes there too; elsewhere it becomes None and the worker sends its
    results back instead.
    """

    __slots__ = ("outs", "out_dims", "start", "stop", "kept", "shared", "attached")

    def __init__(self, outs: list, out_dims: list, start: int, stop: int, shared: "SharedRef | None" = None):
        self.outs, self.out_dims, self.start, self.stop, self.shared = outs, out_dims, start, stop, shared
        self.kept: list = []
        self.attached = None  # the worker's mapping of `shared`, once attached

    def slot(self, k: int) -> np.ndarray:
        return _take(self.outs[k], self.out_dims[k], self.start, self.stop)

    def buffers(self, program: ChunkProgram) -> list[np.ndarray]:
        """One array per result of `program`: its slot, or (unbatched results) a fresh array kept here."""
        self.kept = [None if d is not None else np.empty(shape, dtype)
                     for d, (shape, dtype) in zip(self.out_dims, program.output_types())]
        return [self.slot(k) if d is not None else self.kept[k] for k, d in enumerate(self.out_dims)]

    def put(self, results: list) -> list:
        """Write the batched `results` into place (after checking them all); the unbatched ones are
        returned, None standing for each result placed."""
        check_results(results, [None if d is None else (self.slot(k).shape, self.outs[k].dtype)
                                for k, d in enumerate(self.out_dims)])
        kept = []
        for k, r in enumerate(results):
            if self.out_dims[k] is None:
                kept.append(r)
                continue
            self.slot(k)[...] = r
            kept.append(None)
        return kept

    def attach(self) -> "Placement | None":
        """This placement, ready to be written: in a worker process, the shared outputs mapped;
        None when this process cannot map them (then the results are sent back)."""
        if self.outs is not None:
            return self
        self.attached = self.shared.attach()
        if self.attached is None:
            return None
        self.outs = self.attached.arrays
        return self

    def release(self) -> None:
        """Unmap the shared outputs a worker process attached (nothing for the caller's own placements)."""
        if self.attached is not None:
            self.outs = None
            self.attached.close()
            self.attached = None

    def __reduce__(self):
        if self.shared is None:
            return (_no_placement, ())
        return (_attach_placement, (self.shared, self.out_dims, self.start, self.stop))


def _no_placement() -> None:
    return None


def _attach_placement(shared: "SharedRef", out_dims: list, start: int, stop: int) -> "Placement":
    """A placement unpickled in another process: it maps the caller's shared outputs only when its
    chunk runs (`attach`), so a copy that is unpickled and pickled again on the way (a scheduler)
    stays a reference."""
    return Placement(None, out_dims, start, stop, shared)


def check_results(results, types: list) -> None:
    """TypeError unless `results` are arrays of `types` ((shape, dtype) each; None: any array)."""
    ok = isinstance(results, (list, tuple)) and len(results) == len(types) and all(
        isinstance(r, np.ndarray) and (t is None or (r.shape == t[0] and r.dtype == t[1]))
        for r, t in zip(results, types))
    if not ok:
        raise TypeError(f"the chunk's results are {_describe(results)}, expected arrays of "
                        f"{[t and (t[0], str(t[1])) for t in types]}")


# --- memory budgets --------------------------------------------------------------------------------
def footprint(graph: Graph) -> int:
    """Working set of one call of `graph`'s compiled executable, in bytes: its arena, its outputs and
    its inputs (all of them: a worker receives each one).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((4,), float32))
    >>> footprint(b.build([b.neg(x)]))   # 16 bytes in, 16 out, no intermediates
    32
    """
    from tensorplay.codegen import compile_graph

    exe = compile_graph(ChunkProgram.of(graph).graph())  # what a chunk runs: compiled once, for both
    values = list(graph.inputs) + list(graph.outputs)
    return exe.arena_bytes + sum(v.type.size * v.dtype.itemsize for v in values)


def auto_chunk_size(where: str, size: int, budget: int, footprint_of: Callable[[int], int]) -> int:
    """The largest chunk size (at most `size`) whose chunks fit `budget` bytes, `footprint_of(n)`
    being the working set of a chunk of n samples.

    The per-sample and fixed parts come from chunks of 1 and 2 samples; the candidate is then
    checked against its own footprint (and that of the last, smaller chunk) and, if either is
    over the budget, shrunk until both fit (to within 1/16 of the largest that does).

    >>> auto_chunk_size("vmap", 100, 1000, lambda n: 200 + 30 * n)
    26
    """
    one = footprint_of(1)
    if one > budget:
        raise ValueError(f"{where}: max_memory={budget} bytes is too small for one sample: a chunk of one "
                         f"sample needs {one} bytes (arena + inputs + outputs of the compiled chunk)")
    if size <= 1:
        return 1
    per_sample = max(footprint_of(2) - one, 1)
    fixed = max(one - per_sample, 0)

    def worst(n: int) -> int:  # a chunk of n samples, and the last one
        return max(footprint_of(n), footprint_of(size % n or n))

    n = max(1, min(size, (budget - fixed) // per_sample))
    too_big = None  # the smallest size seen not to fit
    while n > 1 and worst(n) > budget:  # the working set grew faster than the estimate: shrink
        too_big = n
        n = max(1, min(n - 1, n * (budget - fixed) // max(worst(n) - fixed, 1)))
    while too_big is not None and too_big - n > max(1, n // 16):  # then close in on the largest that fits
        mid = (n + too_big) // 2
        n, too_big = (mid, too_big) if worst(mid) <= budget else (n, mid)
    return n


# --- running the chunks ----------------------------------------------------------------------------
def chunk_spans(size: int, chunk_size: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` of the chunks of a batch of `size` samples (the last may be smaller).

    >>> chunk_spans(5, 2)
    [(0, 2), (2, 4), (4, 5)]
    """
    return [(start, min(start + chunk_size, size)) for start in range(0, size, chunk_size)]


def _take(a: np.ndarray, d: int, start: int, stop: int) -> np.ndarray:
    return a[(slice(None),) * d + (slice(start, stop),)]


class _MapParts:
    """What running one map's chunks needs: the preallocated outputs, and per chunk its program,
    arrays and placement (`task`), the taking of its results (`collect`) and the error naming it
    (`failed`). See `run_map`."""

    def __init__(self, where: str, spans: list[tuple[int, int]], program_of: Callable[[int], ChunkProgram],
                 arrays: list, in_dims: list, out_dims: list, executor: cf.Executor | None):
        self.where, self.spans, self.program_of = where, spans, program_of
        self.arrays, self.in_dims, self.out_dims = arrays, in_dims, out_dims
        self.size = spans[-1][1]
        self.n_chunks = len(spans)
        self._programs: dict[int, tuple[ChunkProgram, list]] = {}  # chunk size -> (program, its output types)
        self.outs: list = [None] * len(out_dims)
        self.shared = None
        if self.n_chunks > 1:  # preallocated: each chunk's results are written straight into place
            whole = [None if d is None else (shape[:d] + (self.size,) + shape[d + 1:], dtype)
                     for (shape, dtype), d in zip(self.program_for(spans[0][1] - spans[0][0])[1], out_dims)]
            if executor is not None and not isinstance(executor, cf.ThreadPoolExecutor):
                self.shared = SHARED_POOL.take(whole)  # None where there is no shared memory to be had
            self.outs = list(self.shared.arrays) if self.shared is not None else RECYCLED.arrays(whole)
        self.ref = self.shared.ref if self.shared is not None else None

    def program_for(self, n: int) -> tuple[ChunkProgram, list]:
        made = self._programs.get(n)
        if made is None:
            program = self.program_of(n)
            made = self._programs[n] = (program, program.output_types())
        return made

    def failed(self, i: int, cause: BaseException) -> ChunkError:
        start, stop = self.spans[i]
        return ChunkError(f"{self.where}: chunk {i} of {self.n_chunks} (samples {start} to {stop - 1}) failed: "
                          f"{type(cause).__name__}: {cause}; no result was returned and no input was changed")

    def collect(self, i: int, types: list, placement: "Placement | None", results) -> None:
        """Take chunk i's results: placed by the worker (None entries), or sent back (arrays)."""
        outs, out_dims = self.outs, self.out_dims
        if placement is None:  # the only chunk: its results are the outputs
            check_results(results, types)
            outs[:] = results
            return
        if not isinstance(results, (list, tuple)) or len(results) != len(types):
            check_results(results, types)  # raises, describing what came back
        if any(r is None and d is None for r, d in zip(results, out_dims)):
            raise TypeError("the chunk placed an unbatched result, which it must send back")
        sent = [k for k, r in enumerate(results) if r is not None]
        check_results([results[k] for k in sent], [types[k] for k in sent])
        for k in sent:
            if out_dims[k] is None:
                if i == 0:
                    outs[k] = results[k]
            else:  # from a worker in another process, or on another machine
                placement.slot(k)[...] = results[k]

    def task(self, i: int, ship=None) -> tuple:
        start, stop = self.spans[i]
        program, types = self.program_for(stop - start)
        chunk = [(a if ship is None else ship.array(j, a)) if d is None else _take(a, d, start, stop)
                 for j, (a, d) in enumerate(zip(self.arrays, self.in_dims))]
        placement = Placement(self.outs, self.out_dims, start, stop, self.ref) if self.n_chunks > 1 else None
        return (program if ship is None else ship.program(program)), types, chunk, placement

    def scatter(self, client, arrays_too: bool) -> "_Scattered":
        return _Scattered(client, [self.program_for(n)[0] for n in sorted({b - a for a, b in self.spans})],
                          self.arrays, self.in_dims, arrays_too)


def run_map(where: str, spans: list[tuple[int, int]], program_of: Callable[[int], ChunkProgram],
            arrays: list, in_dims: list, out_dims: list, executor: cf.Executor | None) -> list[np.ndarray]:
    """The graph outputs of the whole map: every chunk run (on `executor`, or here in order) and
    its results placed at their samples. `program_of(n)` is the program for chunks of n samples;
    `in_dims` / `out_dims` give each input's / output's batch dim, or None when unbatched.

    The outputs are preallocated; with an executor whose workers are other processes they are
    shared memory (`_shared.SharedOutputs`), which workers on this machine write into. On a dask
    executor the programs and the unbatched inputs are scattered to the workers once per map
    (`_Scattered`) instead of travelling with every chunk.
    """
    m = _MapParts(where, spans, program_of, arrays, in_dims, out_dims, executor)
    finished = False
    try:
        if executor is None:
            for i in range(m.n_chunks):
                program, types, chunk, placement = m.task(i)
                try:
                    m.collect(i, types, placement, run_here(program, chunk, placement))
                except Exception as e:  # the chunk raised
                    raise m.failed(i, e) from e
            return m.outs
        done = _run_on(executor, m.n_chunks, m.task, m.collect, m.failed, m.outs, m.scatter)
        finished = True  # every chunk did: nothing writes into the outputs any more
        return done
    finally:
        if m.shared is not None:  # a small file, or one of a failed map, goes now; `outs` keep the mapping
            SHARED_POOL.finish(m.shared, finished)


def start_on_threads(where: str, spans: list[tuple[int, int]], program_of: Callable[[int], ChunkProgram],
                     arrays: list, in_dims: list, out_dims: list, executor: cf.Executor) -> "ThreadRunners | None":
    """The chunks of a map started on a thread pool's threads before the calling thread joins them
    (`ThreadRunners.join`, which returns what `run_map` would) or drops them (`abandon`); None
    unless `executor` is a thread pool of at least 2 threads (the calling thread is a runner
    too, so a 1-thread pool has nothing to start) and the map has several chunks.

    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32))
    >>> p = ChunkProgram.of(b.build([b.neg(x)]))
    >>> with ThreadPoolExecutor(2) as pool:
    ...     runners = start_on_threads("demo", chunk_spans(6, 2), lambda n: p, [np.arange(6, dtype=np.float32)],
    ...                                [0], [0], pool)
    ...     runners.join()[0].tolist()        # the calling thread joins the chunks already running
    [-0.0, -1.0, -2.0, -3.0, -4.0, -5.0]
    """
    if not isinstance(executor, cf.ThreadPoolExecutor) or len(spans) < 2 or _concurrency(executor) < 2 \
            or getattr(executor, "_shutdown", False) or getattr(executor, "_broken", False):
        return None
    m = _MapParts(where, spans, program_of, arrays, in_dims, out_dims, executor)
    runners = ThreadRunners(executor, m.n_chunks, m.task, m.collect, m.failed, m.outs)
    runners.start(handoff=True)
    return runners


def _run_on(executor: cf.Executor, n_chunks: int, task, collect, failed, outs: list, scatter) -> list:
    """Submit the chunks to `executor` and collect each as it completes (a bounded number in
    flight; on a thread pool, whose chunks are views of the caller's arrays, all of them at once
    and collected in order, which keeps the calling thread's share of the work small)."""
    client = _dask_client(executor)
    if client is not None:
        if getattr(executor, "_shutdown", False):  # as its own submit would refuse
            raise failed(0, RuntimeError("cannot schedule new futures after shutdown"))
        return _run_on_dask(client, executor, n_chunks, task, collect, failed, outs, scatter)
    threads = isinstance(executor, cf.ThreadPoolExecutor)
    if threads and n_chunks > 1:
        return _run_on_threads(executor, n_chunks, task, collect, failed, outs)
    window = n_chunks if threads else 2 * _concurrency(executor, client)  # enough to keep every worker busy
    pending: dict = {}
    submitted = 0
    with one_blas_thread():  # for the whole map (not chunk by chunk) when the workers are threads
        try:
            while submitted < n_chunks or pending:
                while submitted < n_chunks and len(pending) < window:
                    try:
                        program, types, chunk, placement = task(submitted)
                        future = executor.submit(run_chunk, program, chunk, placement)
                    except Exception as e:
                        raise failed(submitted, e) from e
                    pending[future] = (submitted, types, placement)
                    submitted += 1
                if threads:  # in order: the first to fail is named, the others are cancelled
                    done = list(pending)
                else:
                    done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                    done = sorted(done, key=lambda f: pending[f][0])
                for future in done:
                    i, types, placement = pending.pop(future)
                    try:
                        collect(i, types, placement, future.result())
                    except Exception as e:  # the chunk raised, its worker died, or it sent back something else
                        raise failed(i, e) from e
        finally:
            for future in pending:
                future.cancel()
    return outs


def _run_on_threads(executor: cf.ThreadPoolExecutor, n_chunks: int, task, collect, failed, outs: list) -> list:
    """The chunks on a thread pool of n threads: `ThreadRunners`, started and joined at once."""
    runners = ThreadRunners(executor, n_chunks, task, collect, failed, outs)
    runners.start()
    return runners.join()


class ThreadRunners:
    """A map's chunks on a thread pool of n threads: n runners at most (one per chunk), each
    taking the next chunk not yet taken until none is left, so that uneven chunk times balance
    themselves. The calling thread is one of the runners, the other n - 1 are submitted to the
    pool (`start`): instead of waiting idle it runs chunks as well (`join`), which spares the
    map a hand-off to a pool thread and the wake-up from it (on a 1-thread pool the calling
    thread runs every chunk), and at most n chunks run at once, as the pool's size says.
    Runners the pool has not started by the time the calling thread finds no chunk left are
    cancelled, so a map called from one of the pool's own threads cannot wait for itself.

    Chunks are taken in sample order; after a chunk fails no runner takes another, and the map
    raises for the first chunk in order that failed -- every earlier chunk was taken before it,
    and has finished, by then. An interrupt in the calling thread stops the runners taking
    chunks, waits for the ones in flight (nothing writes into `outs` after the map raises) and
    propagates as it is. `abandon` does the same for chunks started that are not wanted.

    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((1,), float32))
    >>> p = ChunkProgram.of(b.build([b.neg(x)]))
    >>> data, got = np.arange(4, dtype=np.float32), {}
    >>> task = lambda i: (p, None, [data[i:i + 1]], None)       # chunk i: program, types, arrays, placement
    >>> collect = lambda i, types, placement, results: got.__setitem__(i, results[0].tolist())
    >>> with ThreadPoolExecutor(2) as pool:
    ...     runners = ThreadRunners(pool, 4, task, collect, None, [])
    ...     runners.start(); runners.join()
    []
    >>> got == {0: [-0.0], 1: [-1.0], 2: [-2.0], 3: [-3.0]}
    True
    """

    def __init__(self, executor: cf.ThreadPoolExecutor, n_chunks: int, task, collect, failed, outs: list):
        self.executor, self.n_chunks, self.task, self.collect, self.failed = executor, n_chunks, task, collect, failed
        self.outs = outs
        self._lock = threading.Lock()
        self._next = 0
        self._stop = False
        self.errors: dict[int, BaseException] = {}
        self._futures: list = []
        self._blas = False
        self._running = None  # set by the first pool runner as it takes its first chunk (`start(handoff=True)`)

    def _take(self) -> int | None:
        with self._lock:
            i = self._next
            if self._stop or i >= self.n_chunks:
                return None
            self._next = i + 1
            return i

    def _run(self, caller: bool = False) -> None:
        from tensorplay.codegen.executable import serial_calls

        with serial_calls():
            while (i := self._take()) is not None:
                if self._running is not None and not caller:
                    self._running.set()
                try:
                    program, types, chunk, placement = self.task(i)
                    self.collect(i, types, placement, run_here(program, chunk, placement))
                except BaseException as e:  # the chunk raised, or sent back something else
                    with self._lock:
                        self._stop = True
                        if caller and not isinstance(e, Exception):  # an interrupt: not the chunk's failure
                            raise
                        self.errors[i] = e
                    return

    def start(self, handoff: bool = False) -> None:
        """Submit the n - 1 pool runners. With `handoff`, wait (at most 2 ms) for the first of them
        to take a chunk: the calling thread is about to run Python code that holds the GIL (a
        trace), during which a runner could not get through the Python part of starting one."""
        executor = self.executor
        if getattr(executor, "_shutdown", False) or getattr(executor, "_broken", False):  # as its submit would refuse
            raise self.failed(0, RuntimeError("cannot schedule new futures after shutdown") if executor._shutdown
                              else cf.BrokenExecutor(executor._broken))
        _ONE_BLAS_THREAD.__enter__()
        self._blas = True
        if handoff:
            self._running = threading.Event()
        try:
            for _ in range(min(self.n_chunks, _concurrency(executor)) - 1):
                try:
                    self._futures.append(executor.submit(self._run))
                except Exception:  # a pool shut down meanwhile: the runners there are (and the caller) do every chunk
                    break
            if handoff and self._futures:
                self._running.wait(0.002)
        except BaseException:
            self._finish()
            raise

    def join(self) -> list:
        """The calling thread runs chunks until none is left, then waits for the pool's runners;
        the outputs, or `ChunkError` for the first chunk in order that failed."""
        try:
            self._run(caller=True)
            for future in self._futures:
                if not future.cancel():  # started: it finishes the chunk it took
                    future.result()
        except BaseException:  # an interrupt: no runner takes another chunk
            self.abandon()
            raise
        finally:
            self._release_blas()
        if self.errors:
            i = min(self.errors)
            raise self.failed(i, self.errors[i]) from self.errors[i]
        return self.outs

    def abandon(self) -> None:
        """No runner takes another chunk; returns once the chunks in flight are done (their
        results and errors are dropped with the outputs, whose memory a next map can then take)."""
        self._finish()
        self.task = self.collect = None
        self.outs = None

    def _finish(self) -> None:
        with self._lock:
            self._stop = True
        cf.wait([f for f in self._futures if not f.cancel()])  # nothing still writes into `outs` after this
        self._release_blas()

    def _release_blas(self) -> None:
        if self._blas:
            self._blas = False
            _ONE_BLAS_THREAD.__exit__(None, None, None)


def _run_on_dask(client, executor: cf.Executor, n_chunks: int, task, collect, failed, outs: list, scatter) -> list:
    """The chunks on a dask cluster, one task per worker thread (`run_chunks`: consecutive chunks
    in sample order, sizes differing by at most one chunk), so that a map costs the scheduler
    and the workers a few tasks, not one per chunk, and each worker receives the unbatched
    inputs once (a task's `common` arrays). The programs are scattered to every worker once per
    client and kept there, as are unbatched inputs seen again (`_Scattered`). All tasks are
    submitted in one `client.map` and their results gathered in one call: a task never raises
    for a chunk that fails (it returns `_Failed` for it and runs no later chunk), so that one
    round trip gives every outcome; the first chunk in order that failed is named. A task
    whose worker died, or whose result could not come back, names the first chunk of that task.
    The options the executor was made with (``client.get_executor(**options)``: resources,
    retries, ...) apply, except that the tasks are never pure: a chunk writes into this map's
    outputs, so dask must not reuse an earlier result. The futures are registered with the
    executor, so its `shutdown` waits for them."""
    options = getattr(executor, "_kwargs", None) or {}
    try:
        ship = scatter(client, False)  # one task per worker: each receives the inputs once anyway
    except Exception as e:
        raise failed(0, e) from e
    tasks = []
    for i in range(n_chunks):
        try:
            tasks.append(task(i, ship))
        except Exception as e:
            raise failed(i, e) from e
    groups = _groups(n_chunks, _concurrency(executor, client))
    common = ship.common()
    try:
        futures = client.map(run_chunks, [[tasks[i][0] for i in range(lo, hi)] for lo, hi in groups],
                             [common] * len(groups),
                             [[ship.strip(tasks[i][2]) for i in range(lo, hi)] for lo, hi in groups],
                             [[tasks[i][3] for i in range(lo, hi)] for lo, hi in groups], **dict(options, pure=False))
    except Exception as e:
        raise failed(0, e) from e
    registered = getattr(executor, "_futures", None)
    if registered is not None:
        registered.update(futures)
    try:
        try:
            results = client.gather(futures)
        except Exception:  # a task was lost (its worker died) or its result could not be sent: one by one
            results = None
        for g, (lo, hi) in enumerate(groups):
            if results is not None:
                done = results[g]
            else:
                try:
                    done = futures[g].result()
                except Exception as e:  # its worker died, or it sent back something else
                    raise failed(lo, e) from e
            for i in range(lo, hi):
                result = done[i - lo] if isinstance(done, list) and i - lo < len(done) else None
                if isinstance(result, _Failed):
                    raise failed(i, result.error) from result.error
                try:
                    if result is None and not isinstance(done, list):
                        check_results(done, tasks[i][1])  # raises, describing what came back
                    collect(i, tasks[i][1], tasks[i][3], result)
                except Exception as e:  # it sent back something else
                    raise failed(i, e) from e
    finally:
        left = [f for f in futures if not f.done()]
        if left:
            client.cancel(left)
    return outs


def _groups(n_chunks: int, n_tasks: int) -> list[tuple[int, int]]:
    """``[(first chunk, stop), ...]``: `n_chunks` split into at most `n_tasks` runs of consecutive
    chunks whose lengths differ by at most one.

    >>> _groups(8, 2), _groups(3, 2), _groups(1, 4)
    ([(0, 4), (4, 8)], [(0, 2), (2, 3)], [(0, 1)])
    """
    n = max(1, min(n_chunks, n_tasks))
    base, extra = divmod(n_chunks, n)
    groups, lo = [], 0
    for g in range(n):
        hi = lo + base + (g < extra)
        groups.append((lo, hi))
        lo = hi
    return groups


class _Failed:
    """What `run_chunks` returns for a chunk that raised: the exception (pickled with the result)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error

    def __reduce__(self):
        return (_Failed, (self.error,))


def run_chunks(programs: Sequence, common: Sequence, chunks: Sequence, placements: Sequence) -> list:
    """Several chunks of one map in one task, in order: chunk c is ``run_chunk(programs[c], arrays,
    placements[c])``, its arrays being ``chunks[c]`` with each None entry taken from `common`
    (the unbatched inputs, sent once per task). One entry per chunk run: its results, or a
    `_Failed` for the exception it raised, after which no chunk runs (the task itself returns).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32)); y = b.add_input(TensorType((2,), float32))
    >>> p = ChunkProgram.of(b.build([b.add(x, y)]))
    >>> zero, one = np.zeros(2, np.float32), np.ones(2, np.float32)
    >>> [r[0].tolist() for r in run_chunks([p, p], [None, one], [[zero, None], [one, None]], [None, None])]
    [[1.0, 1.0], [2.0, 2.0]]
    """
    done: list = []
    for program, arrays, placement in zip(programs, chunks, placements):
        try:
            done.append(run_chunk(program, [c if a is None else a for a, c in zip(arrays, common)], placement))
        except Exception as e:
            done.append(_Failed(e))
            break
    return done


class _Scattered:
    """What a dask map's chunks carry as dask futures instead of values.

    - The programs: scattered to every worker (``broadcast=True``) the first time a client runs
      them, and kept there for later maps (up to `MAX_PROGRAMS` per client).
    - The unbatched inputs of `MIN_BYTES` or more (weights, captured tensors): scattered for this
      map when `arrays_too` (more chunks than worker threads: each worker would otherwise receive
      them several times). An array of up to `MAX_HASHED_BYTES` is also known by its content
      (BLAKE2b of its bytes, shape and dtype): seen in an earlier map of the same client, it is
      scattered once and kept on the workers (up to `MAX_ARRAYS`), so that maps with the same
      weights (inference, saliency over many batches) stop shipping them; an array seen for the
      first time (weights that change at every step) travels as before, with the chunks.

    Smaller unbatched arrays always travel with the chunks. A kept future whose data the cluster
    lost is scattered again. One `client.scatter` call per map at most."""

    MIN_BYTES = 1 << 16
    MAX_HASHED_BYTES = 64 << 20
    MAX_PROGRAMS = 64
    MAX_ARRAYS = 16

    def __init__(self, client, programs: list[ChunkProgram], arrays: list, in_dims: list, arrays_too: bool = True):
        kept = _DASK_KEPT.get(client)
        if kept is None:
            kept = _DASK_KEPT[client] = ({}, {}, {})  # digest -> program future, array digest -> future, seen
        kept_programs, kept_arrays, seen = kept
        missing = [p for p in programs if not _alive(kept_programs.get(p.digest))]
        self._arrays: dict = {}
        send, send_keys = [], []  # arrays to scatter, and the content key to keep each under (or None)
        for j, (a, d) in enumerate(zip(arrays, in_dims)):
            if d is not None or a.nbytes < self.MIN_BYTES:
                continue
            key = _content_key(a) if a.nbytes <= self.MAX_HASHED_BYTES else None
            if key is not None and _alive(kept_arrays.get(key)):
                self._arrays[j] = kept_arrays[key]
            elif arrays_too or (key is not None and key in seen):
                send.append(j)
                send_keys.append(key)
            elif key is not None:
                seen[key] = None
                _trim(seen, 256)
        futures = client.scatter(missing + [arrays[j] for j in send], broadcast=True, hash=False) \
            if missing or send else []
        for p, f in zip(missing, futures):
            _keep(kept_programs, p.digest, f, self.MAX_PROGRAMS)
        for j, key, f in zip(send, send_keys, futures[len(missing):]):
            self._arrays[j] = f
            if key is not None:
                _keep(kept_arrays, key, f, self.MAX_ARRAYS)
        self._programs = {p.digest: kept_programs[p.digest] for p in programs}
        self._common = [self._arrays.get(j, a) if d is None else None for j, (a, d) in enumerate(zip(arrays, in_dims))]

    def program(self, program: ChunkProgram):
        return self._programs[program.digest]

    def common(self) -> list:
        """The unbatched inputs (arrays, or futures of the workers' copies), None for the batched ones."""
        return self._common

    def strip(self, chunk: list) -> list:
        """A chunk's arrays with its unbatched inputs left out (None: `run_chunks` takes them from `common`)."""
        return [None if c is not None else a for a, c in zip(chunk, self._common)]

    def array(self, j: int, a: np.ndarray):
        return self._arrays.get(j, a)


_DASK_KEPT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # client -> what its workers keep


def _alive(future) -> bool:
    return getattr(future, "status", None) == "finished"


def _keep(kept: dict, key, value, limit: int) -> None:
    kept.pop(key, None)
    kept[key] = value
    _trim(kept, limit)


def _trim(kept: dict, limit: int) -> None:
    while len(kept) > limit:
        kept.pop(next(iter(kept)))  # the oldest


def _content_key(a: np.ndarray) -> tuple:
    h = hashlib.blake2b(digest_size=20)
    h.update(np.ascontiguousarray(a).view(np.uint8).reshape(-1) if a.size else b"")
    return (a.shape, a.dtype.str, h.digest())


def _dask_client(executor: cf.Executor):
    """The `distributed.Client` behind a dask executor (``client.get_executor()``), else None."""
    client = getattr(executor, "_client", None)
    return client if hasattr(client, "scatter") and hasattr(client, "nthreads") else None


_DASK_THREADS: dict = {}  # id(client) -> (weakref to it, when asked, thread count): a round trip per 10 s


def _concurrency(executor: cf.Executor, client=None) -> int:
    """How many chunks `executor` runs at once, as far as it tells (else the CPU count). A dask
    cluster's thread count is asked at most every 10 seconds: it only bounds the chunks in flight."""
    n = getattr(executor, "_max_workers", None)  # ThreadPoolExecutor, ProcessPoolExecutor
    if isinstance(n, int) and n > 0:
        return n
    if client is None:
        return os.cpu_count() or 1
    now = time.monotonic()
    known = _DASK_THREADS.get(id(client))
    if known is not None and known[0]() is client and now - known[1] < 10.0:
        return known[2]
    try:
        n = max(1, sum(client.nthreads().values()))
    except Exception:  # its scheduler does not answer: a guess is enough here
        return os.cpu_count() or 1
    if len(_DASK_THREADS) > 16:
        _DASK_THREADS.clear()
    _DASK_THREADS[id(client)] = (weakref.ref(client), now, n)
    return n


def _describe(x: Any) -> str:
    if isinstance(x, (list, tuple)):
        return f"{type(x).__name__} of {len(x)}: " + ", ".join(
            f"array{a.shape} {a.dtype}" if isinstance(a, np.ndarray) else type(a).__name__ for a in x[:4])
    return type(x).__name__

