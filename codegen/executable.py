"""`Executable`: a compiled graph called with numpy arrays, returning numpy arrays.

Everything that does not depend on the argument values is computed once at
compile time: the expected input types (shape, dtype, contiguous strides), the
output shapes and dtypes, the arena size, the ctypes signature and which
outputs are fresh buffers, copies of an input, or repeats of another output.
A call checks the inputs, allocates the outputs and one arena for all
intermediates, and makes one ctypes call with the array objects' addresses
(the compiled entry reads their data pointers); ctypes releases the GIL, so a
large elementwise executable runs its element ranges on several threads.

Threads: one pool for the process, made on first use, of TENSORPLAY_NUM_THREADS
threads (default: the CPU count, at most 8). Only executables made entirely of
flat elementwise loops are split (`module.splittable`), so a split never
contains a BLAS call: the pool and OpenBLAS's threads are never nested. Every
element runs the same code in every chunk, so results do not depend on the
thread count (tests/codegen/test_thread_count.py). An executable that is one large
full reduction runs its fixed blocks on the pool, then combines them in order
(`threads.reduction_split`): also independent of the thread count. A compiled kernel that reads
an index out of range sets the status word the entry returns; the call raises
IndexError (module `context`).
"""
from __future__ import annotations

import ast
import contextlib
import ctypes
import json
import os
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Callable

import numpy as np

from tensorplay.ir import dtypes
from tensorplay.ir.core import Graph
from tensorplay.ir.interpreter import check_arguments
from . import disk_cache, fastcall, recycle
from .host import default_threads

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

# Executables whose kernels are all flat elementwise loops over the same number of elements
# run on TENSORPLAY_NUM_THREADS threads (default: the CPU count, at most 8) when large enough.
PARALLEL_MIN_ELEMENTS = 1 << 17  # below this a thread hand-off costs more than it saves
_THREADS = default_threads()
_pool_instance: ThreadPoolExecutor | None = None
_serial = threading.local()  # `serial_calls`: this thread's calls run in one piece


@contextlib.contextmanager
def serial_calls():
    """Within the block, executables called by this thread run in one piece on this thread.

    For callers that already run several executables in parallel (vmap's chunks on a thread
    pool): splitting each call over the process pool as well would oversubscribe the cores.
    The values are the same either way (every element runs the same code in every range).

    >>> with serial_calls():
    ...     pass
    """
    before = getattr(_serial, "on", False)
    _serial.on = True
    try:
        yield
    finally:
        _serial.on = before


def _pool() -> ThreadPoolExecutor:
    global _pool_instance
    if _pool_instance is None:
        # imported here: concurrent.futures brings logging, traceback and queue (a cache hit of an
        # unthreaded executable needs none of them)
        from concurrent.futures import ThreadPoolExecutor

        _pool_instance = ThreadPoolExecutor(max_workers=_THREADS - 1, thread_name_prefix="tensorplay-jit")
    return _pool_instance


def _chunks(size: int) -> list[tuple[int, int]]:
    """Element ranges, one per thread, for a splittable executable of `size` elements ([] = one call)."""
    if _THREADS < 2 or size < PARALLEL_MIN_ELEMENTS:
        return []
    n = min(_THREADS, size // (PARALLEL_MIN_ELEMENTS // 2))
    step = ((size + n - 1) // n + 63) // 64 * 64  # 64-element aligned chunks
    return [(lo, min(lo + step, size)) for lo in range(0, size, step)]


def _block_ranges(blocks: int, n_threads: int) -> list[tuple[int, int]]:
    """[lo, hi) ranges of a split reduction's blocks, one per thread: which thread reduces which
    block; the blocks themselves and their combine order never change (`threads`)."""
    parts = max(1, min(n_threads, blocks))
    step = -(-blocks // parts)
    return [(lo, min(lo + step, blocks)) for lo in range(0, blocks, step)]


class Executable:
    """A graph compiled to native code. Call it with one numpy array per graph input."""

    def __init__(self, graph: Graph):
        clock = _PhaseClock()
        # A graph object of our own (same values and nodes): callers keep their runner on the graph
        # they compiled (`tensorplay._exec`), and holding that object would make a reference cycle,
        # so a dropped executable (and its machine code) would wait for the cyclic collector.
        self.graph = Graph(graph.inputs, graph.nodes, graph.outputs, graph.name, graph.arg_attrs)
        self.name = graph.name
        # The disk cache is keyed by the graph itself, so a hit needs neither the scheduler nor the
        # lowerings (nor their imports): the entry carries the layout the compiled code expects.
        key = _disk_key(self.graph) if disk_cache.enabled() else None
        cached = disk_cache.load(key) if key else None
        layout = _read_layout(cached[2]) if cached is not None else None
        clock.lap("cache_lookup")
        self._jit = None
        source = "compiled"
        if layout is not None:
            self._jit = _link_cached(cached[0], layout, cached[1])
            if self._jit is None:  # a library or symbol gone: rebuild
                layout = None
            else:
                source = "disk cache"
        if self._jit is None:
            layout = self._compile(graph, clock)
            text = _dump_layout(layout)
            if key and _same_layout(_read_layout(text), layout):  # stored only if it reads back the same
                disk_cache.store(key, self._jit.objects, self._jit.llvm_ir, text)
                clock.lap("cache_store")
        else:
            clock.book(self._jit.timings)
        weakref.finalize(self, self._jit.release)  # free the machine code with the last reference
        self._size = layout["size"]
        self._chunks = _chunks(self._size) if self._size else []
        self._blocks = layout["blocks"]  # a split reduction's block count (0: not split)
        self._red_chunks = _block_ranges(self._blocks, _THREADS) if self._blocks else []
        self._kernel_info = layout["kernels"]  # from a disk-cache hit: text, read on first use
        self._errors = layout["errors"]  # status word c: entry c - 1 failed (text, likewise)
        self._n_kernels = layout["n_kernels"]
        self._prepare(layout)
        n_args = self._n_in + len(self._alloc) + (1 if self._arena_bytes else 0)
        # arguments are `id(array)`: the address of the array object, whose data pointer the
        # entry reads; the caller's references keep every array alive during the call
        ranges = [ctypes.c_int64] * 2 if self._size or self._blocks else []
        self._entry = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p] * n_args, *ranges)(
            self._jit.addresses[layout["entry"]])
        self._finish = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p] * n_args)(
            self._jit.addresses[layout["finish"]]) if self._blocks else None
        # the generated calls' entry: the module's METH_FASTCALL trampoline as a builtin taking the
        # array objects themselves (`fastcall`: no ctypes argument conversion), else the ctypes
        # function taking their ids
        trampoline = self._jit.addresses.get(_fastcall_name(layout))
        self._object_entry = fastcall.builtin(trampoline) if trampoline else None
        self._fast = None if self._size or self._blocks else self._fast_call()
        clock.lap("prepare")
        ph = clock.phases
        self.stats = {"source": source,
                      "phases": ph, "schedule_s": ph["schedule"], "plan_s": ph["plan"] + ph["cache_lookup"],
                      "lower_s": ph["llvm_ir"], "llvm_parse_s": ph["llvm_parse"], "llvm_opt_s": ph["llvm_opt"],
                      "codegen_s": ph["codegen"], "link_s": ph["link"], "total_s": clock.total(),
                      "nodes": layout["nodes"], "kernels": self._n_kernels,
                      "object_bytes": sum(map(len, self._jit.objects)),
                      "llvm_parts": len(self._jit.objects), "merged_functions": layout["merged"],
                      "arena_bytes": self._arena_bytes,
                      "threads": len(self._block_chunks()) if self._blocks else max(len(self._chunks), 1)}

    def _compile(self, graph: Graph, clock: "_PhaseClock") -> dict:
        """Schedule, lower and JIT-compile `graph` into `self._jit`; the layout of the compiled code
        (what a disk-cache entry stores besides the object code, see `_layout`)."""
        from . import jit, threads
        from .module import build_module, coded_nodes, plan_buffers, splittable
        from .schedule import normalize, schedule

        graph = normalize(graph)  # the graph compiled (the same one unless it has tuples to fold)
        kernels = schedule(graph)
        clock.lap("schedule")
        plan = plan_buffers(graph, kernels)
        split = threads.reduction_split(graph, kernels, plan)
        size = 0 if split else splittable(kernels)
        if not _chunks(size):
            size = 0  # one call: constant trip counts compile to simpler code
        clock.lap("plan")
        prefix = f"tp_{_sanitize(graph.name)}"  # one LLJIT per module: no clash with other modules
        triple, layout = jit.host_triple_and_layout()
        if split:
            text, entry, finish = threads.build_split_module(graph, split, plan, prefix, triple, layout)
        else:
            (text, entry), finish = build_module(graph, kernels, plan, prefix, triple, layout, ranged=bool(size),
                                                 fastcall=True), None
        clock.lap("llvm_ir")
        out = _layout(graph, kernels, plan, entry, size, coded_nodes(graph, kernels), split, finish)
        self._jit = jit.compile_ir(text, _entry_names(out))
        out["merged"] = self._jit.merged  # identical kernels compiled once (kept for a disk-cache hit's stats)
        clock.book(self._jit.timings)
        return out

    # --- call path ----------------------------------------------------------------------------
    def _prepare(self, layout: dict) -> None:
        self._in_sig = [(v.type.shape, v.dtype.np, _strides(v.type.shape, v.dtype.itemsize)) for v in self.graph.inputs]
        self._n_in = len(self.graph.inputs)
        self._alloc = [(shape, dtypes.from_name(name).np) for shape, name in layout["alloc"]]
        self._arena_bytes = layout["arena_bytes"]
        # how to produce each graph output: ("slot", j) | ("input", i) | ("repeat", k)
        self._recipe = recipe = layout["recipe"]
        self._simple = all(r == ("slot", i) for i, r in enumerate(recipe)) and len(recipe) == len(self._alloc)
        # slot j -> the first output position it is returned at (None: not returned, a scratch slot)
        self._slot_pos: list[int | None] = [None] * len(self._alloc)
        for p, (kind, j) in enumerate(recipe):
            if kind == "slot" and self._slot_pos[j] is None:
                self._slot_pos[j] = p
        self._arenas: list[np.ndarray] = []  # scratch arenas not in use (a call pops one, then returns it)
        # output buffers large enough that a fresh one costs page faults come from `recycle`
        self._recycled = [int(np.prod(shape)) * dtype.itemsize >= recycle.MIN_BYTES for shape, dtype in self._alloc]

    def _fast_call(self) -> Callable[[tuple], list[np.ndarray]]:
        """The call without `out` on one thread, generated for this executable's signature.

        Each input is checked inline against its precomputed (shape, strides, dtype); any other
        argument goes to the general path (`_call`, which coerces or raises). The outputs are the
        only allocations (the scratch arena is reused from a pool), and the result is built by the
        output recipe without a loop, e.g. for two inputs and one output::

            def call(arrays):
                a0, a1 = arrays
                if (a0.__class__ is not ND or a0.shape != S0 or a0.strides != T0
                        or (a0.dtype is not D0 and a0.dtype != D0)) or (...a1...):
                    return me()._call(arrays, None)
                o0 = empty(O0, E0)
                status = entry(id(a0), id(a1), id(o0))
                if status:
                    raise me()._runtime_error(status)
                return [o0]
        """
        # `me` is a weak reference: the function must not keep the executable (and its machine code) alive
        env: dict = {"ND": np.ndarray, "empty": np.empty, "entry": self._object_entry or self._entry,
                     "me": weakref.ref(self), "pool": self._arenas, "U8": np.uint8, "NB": self._arena_bytes}
        ins = [f"a{i}" for i in range(self._n_in)]
        checks = []
        for i, (shape, dtype, strides) in enumerate(self._in_sig):
            env[f"S{i}"], env[f"D{i}"], env[f"T{i}"] = shape, dtype, strides
            checks.append(f"a{i}.__class__ is not ND or a{i}.shape != S{i} or a{i}.strides != T{i} "
                          f"or (a{i}.dtype is not D{i} and a{i}.dtype != D{i})")
        lines = ["def call(arrays):"]
        if ins:
            lines.append(f"    {', '.join(ins)}, = arrays")
        if checks:
            lines += [f"    if {' or '.join(checks)}:", "        return me()._call(arrays, None)"]
        self._emit_run(lines, env, "    ", [self._ptr(n) for n in ins], ins)
        exec("\n".join(lines), env)  # noqa: S102 - the text is built above from names and indices
        return env["call"]

    def bound_call(self, prefix: tuple, single: bool = False) -> Callable[..., list[np.ndarray]] | None:
        """The fast call with its first ``len(prefix)`` inputs fixed to the arrays `prefix`: a
        function of the remaining input arrays (positional) returning the outputs, as
        ``self(*prefix, *rest)`` does. The prefix is checked once, here; the function keeps its
        arrays and this executable (its machine code) alive, and the executable does not keep the
        function (no reference cycle); the other inputs are
        checked on every call as in the fast call, and anything else takes the general path.
        None when there is no fast call (threads, split reductions) or the prefix does not match
        the input signature exactly (C-contiguous arrays of the graph's types). The binding
        code is generated once per prefix length, so a bound call costs a closure.
        linearize's `jvp_fn` calls its linear graph this way, the residuals being the prefix.

        `single`: for one remaining input and one output, the function returns that output's
        array itself, and None (instead of taking the general path) for an argument that does not
        match its input exactly (the caller then reports or coerces it); None if the graph is not
        of that form.

        >>> from tensorplay.ir import GraphBuilder, TensorType, float32
        >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32)); y = b.add_input(TensorType((2,), float32))
        >>> exe = Executable(b.build([b.mul(x, y)]))
        >>> call = exe.bound_call((np.array([2.0, 3.0], np.float32),))
        >>> call(np.ones(2, np.float32))[0].tolist()
        [2.0, 3.0]
        """
        k = len(prefix)
        if self._fast is None or k > self._n_in or (single and (self._n_in - k != 1 or len(self._recipe) != 1)):
            return None
        binders = self.__dict__.setdefault("_binders", {})
        bind = binders.get((k, single))
        if bind is None:
            bind = binders[(k, single)] = self._binder(k, single)
        return bind(prefix, self)

    def _emit_run(self, lines: list[str], env: dict, pad: str, in_ptrs: list[str], in_names: list[str],
                  single: bool = False) -> None:
        """Append the body the generated calls share: allocate the outputs, take a scratch arena
        from the pool, run the entry on `in_ptrs` (the inputs' pointer expressions), raise its
        status, and return the outputs by the recipe (`in_names[i]` names input i for its copies)."""
        outs = []
        for j, (shape, dtype) in enumerate(self._alloc):
            env[f"O{j}"], env[f"E{j}"] = shape, dtype
            lines.append(f"{pad}o{j} = {'take' if self._recycled[j] else 'empty'}(O{j}, E{j})")
            outs.append(f"o{j}")
        if any(self._recycled):
            env["take"], env["give"] = recycle.take, recycle.give
        ptrs = in_ptrs + [self._ptr(n) for n in outs]
        if self._arena_bytes:
            lines.append(f"{pad}arena = pool.pop() if pool else empty(NB, U8)")
            ptrs.append(self._ptr("arena"))
        lines.append(f"{pad}status = entry({', '.join(ptrs)})")
        if self._arena_bytes:
            lines.append(f"{pad}pool.append(arena)")
        lines += [f"{pad}if status:", f"{pad}    raise me()._runtime_error(status)"]
        lines += [f"{pad}give(o{j})" for j, r in enumerate(self._recycled) if r]
        result = []
        for kind, i in self._recipe:
            result.append(f"o{i}" if kind == "slot" else f"{in_names[i]}.copy()" if kind == "input"
                          else f"{result[i]}.copy()")
        lines.append(f"{pad}return {result[0]}" if single else f"{pad}return [{', '.join(result)}]")

    def _ptr(self, name: str) -> str:
        """How the generated calls pass array `name` to their entry: the object itself to the
        fastcall builtin, its address to ctypes."""
        return name if self._object_entry is not None else f"id({name})"

    def _binder(self, k: int, single: bool = False) -> Callable[[tuple], Callable | None]:
        """The generated `bound_call` for prefixes of `k` arrays, e.g. for k = 1 of two inputs::

            def bind(prefix, exe):
                p0, = prefix
                if p0.__class__ is not ND or p0.shape != S0 or p0.strides != T0 or p0.dtype != D0:
                    return None
                P0 = id(p0)
                def call(a1, _keep=(prefix, exe)):
                    if (...a1...):
                        return me()._call(prefix + (a1,), None)
                    o0 = empty(O0, E0)
                    status = entry(P0, id(a1), id(o0))
                    ...
                    return [o0]
                return call
        """
        env: dict = {"ND": np.ndarray, "empty": np.empty, "entry": self._object_entry or self._entry,
                     "me": weakref.ref(self), "pool": self._arenas, "U8": np.uint8, "NB": self._arena_bytes}
        rest = [f"a{i}" for i in range(k, self._n_in)]
        fixed = [f"p{i}" for i in range(k)]
        lines = ["def bind(prefix, exe):"]
        if fixed:
            lines.append(f"    {', '.join(fixed)}, = prefix")
            pre = []
            for i in range(k):
                shape, dtype, strides = self._in_sig[i]
                env[f"S{i}"], env[f"D{i}"], env[f"T{i}"] = shape, dtype, strides
                pre.append(f"p{i}.__class__ is not ND or p{i}.shape != S{i} or p{i}.strides != T{i} "
                           f"or p{i}.dtype != D{i}")
            lines += [f"    if {' or '.join(pre)}:", "        return None"]
            lines += [f"    P{i} = {self._ptr(f'p{i}')}" for i in range(k)]
        lines.append(f"    def call({''.join(r + ', ' for r in rest)}_keep=(prefix, exe)):")
        checks = []
        for i in range(k, self._n_in):
            shape, dtype, strides = self._in_sig[i]
            env[f"S{i}"], env[f"D{i}"], env[f"T{i}"] = shape, dtype, strides
            checks.append(f"a{i}.__class__ is not ND or a{i}.shape != S{i} or a{i}.strides != T{i} "
                          f"or (a{i}.dtype is not D{i} and a{i}.dtype != D{i})")
        if checks:
            lines += [f"        if {' or '.join(checks)}:",
                      "            return None" if single else
                      f"            return me()._call(prefix + ({''.join(r + ', ' for r in rest)}), None)"]
        self._emit_run(lines, env, "        ", [f"P{i}" for i in range(k)] + [self._ptr(n) for n in rest], fixed + rest,
                       single)
        lines.append("    return call")
        exec("\n".join(lines), env)  # noqa: S102 - the text is built above from names and indices
        return env["bind"]

    def __call__(self, *arrays: np.ndarray, out: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """Run the compiled graph; inputs must match `graph.in_types` exactly (TypeError otherwise).

        `out`: one array per graph output, of its exact shape and dtype, to write the results into
        (and return), e.g. slices of a larger buffer; they must not overlap the inputs. Contiguous
        ones are written by the compiled code itself, others receive a copy.
        """
        if out is None and self._fast is not None and len(arrays) == self._n_in:
            return self._fast(arrays)
        return self._call(arrays, out)

    def _call(self, arrays: tuple, out: list[np.ndarray] | None) -> list[np.ndarray]:
        """The general call: coerces inputs (or raises), writes into `out`, splits over threads."""
        if len(arrays) != self._n_in:
            check_arguments(self.graph, arrays)
        i = 0
        for a in arrays:
            shape, dtype, strides = self._in_sig[i]
            if a.__class__ is not np.ndarray or a.shape != shape or a.strides != strides \
                    or (a.dtype is not dtype and a.dtype != dtype):
                arrays = arrays[:i] + (self._coerce(a, i),) + arrays[i + 1:]
            i += 1
        given = self._direct_out(out) if out is not None else None
        outs = [g if g is not None else recycle.take(shape, dtype) if r else np.empty(shape, dtype)
                for g, (shape, dtype), r in zip(given or [None] * len(self._alloc), self._alloc, self._recycled)]
        ptrs = [*map(id, arrays), *map(id, outs)]
        if self._arena_bytes:
            arena = self._arenas.pop() if self._arenas else np.empty(self._arena_bytes, np.uint8)
            ptrs.append(id(arena))
        if self._blocks:
            status = self._run_blocks(ptrs)
        elif not self._size:
            status = self._entry(*ptrs)
        elif getattr(_serial, "on", False):
            status = self._entry(*ptrs, 0, self._size)
        else:  # the GIL is released during each ctypes call, so the chunks run in parallel
            pending = [_pool().submit(self._entry, *ptrs, lo, hi) for lo, hi in self._chunks[1:]]
            status = self._entry(*ptrs, *self._chunks[0])
            for f in pending:
                status = status or f.result()
        if self._arena_bytes:
            self._arenas.append(arena)
        if status:
            raise self._runtime_error(status)
        for o, g, r in zip(outs, given or [None] * len(outs), self._recycled):
            if r and g is None:
                recycle.give(o)
        if out is None:
            if self._simple:
                return outs
            result = []
            for kind, i in self._recipe:
                if kind == "slot":
                    result.append(outs[i])
                elif kind == "input":
                    result.append(arrays[i].copy())
                else:
                    result.append(result[i].copy())
            return result
        sources = []  # what each output holds: a slot (maybe `out[p]` itself), an input, or a repeat
        for kind, i in self._recipe:
            sources.append(outs[i] if kind == "slot" else arrays[i] if kind == "input" else sources[i])
        for o, r in zip(out, sources):
            if r is not o:  # an output the compiled code did not write into directly
                o[...] = r
        return list(out)

    def _block_chunks(self) -> list[tuple[int, int]]:
        """Block ranges of a split reduction for this call, one per thread (`serial_calls`: one)."""
        return [(0, self._blocks)] if getattr(_serial, "on", False) else self._red_chunks

    def _run_blocks(self, ptrs: list) -> int:
        """Phase 1 of a split reduction on the pool (the blocks), then phase 2 here (the combine)."""
        chunks = self._block_chunks()
        pending = [_pool().submit(self._entry, *ptrs, lo, hi) for lo, hi in chunks[1:]]
        status = self._entry(*ptrs, *chunks[0])
        for f in pending:
            status = status or f.result()
        return status or self._finish(*ptrs)

    def _direct_out(self, out) -> list[np.ndarray | None]:
        """Check `out` against the outputs (TypeError); per output slot, the array of `out` the
        compiled code writes into directly (None: a fresh buffer, copied into `out` after the call).

        A slot is written into `out[p]` for the first output position p that returns it, whatever
        the order of the slots, when `out[p]` is C-contiguous, writeable and overlaps no other array
        of `out` taken so far (the compiled code may read a slot back after writing it)."""
        types = [(v.type.shape, v.dtype.np) for v in self.graph.outputs]
        if len(out) != len(types) or any(o.__class__ is not np.ndarray or o.shape != t[0] or o.dtype != t[1]
                                         for o, t in zip(out, types)):
            raise TypeError(f"@{self.name}: out must be one array per output, of "
                            f"{[(t[0], str(t[1])) for t in types]}")
        given: list[np.ndarray | None] = []
        for p in self._slot_pos:
            o = out[p] if p is not None else None
            if o is not None and not (o.flags.c_contiguous and o.flags.writeable
                                      and not any(g is not None and np.may_share_memory(o, g) for g in given)):
                o = None
            given.append(o)
        return given

    def _runtime_error(self, status: int) -> Exception:
        """The exception for a nonzero status word: the code of the node that failed (module `context`)."""
        if isinstance(self._errors, str):
            self._errors = _literal(self._errors, [])
        error = self._errors[status - 1] if 0 < status <= len(self._errors) else None
        if error is None:
            return RuntimeError(f"@{self.name}: compiled code reported error status {status}")
        kind, message = error
        if kind == "linalg":  # a LAPACK routine's info != 0 (ir/prims/decompositions.py)
            from tensorplay.ir.prims.decompositions import LinAlgError

            return LinAlgError(f"{message} in compiled @{self.name}")
        return IndexError(message.replace("@@", f"@{self.name}"))

    def _coerce(self, a, i: int) -> np.ndarray:
        if not isinstance(a, np.ndarray):
            raise TypeError(f"@{self.name} input {i}: expected a numpy array, got {type(a).__name__}")
        shape, dtype, _ = self._in_sig[i]
        if a.shape != shape or a.dtype != dtype:
            t = self.graph.inputs[i].type
            raise TypeError(f"@{self.name} input {i}: expected {t} (shape {t.shape}, dtype {t.dtype.name}), "
                            f"got array of shape {a.shape} and dtype {a.dtype}")
        return np.array(a, dtype=dtype, order="C", copy=True, subok=False)  # contiguous base-class copy

    # --- introspection ------------------------------------------------------------------------
    @property
    def arena_bytes(self) -> int:
        """Bytes of the scratch arena each call allocates for the intermediates (besides the outputs)."""
        return self._arena_bytes

    @property
    def llvm_ir(self) -> str:
        """The optimised LLVM module (text)."""
        return self._jit.llvm_ir

    @property
    def asm(self) -> str:
        """Host assembly of the module."""
        return self._jit.asm()

    @property
    def kernels(self) -> list[dict]:
        """One entry per kernel: name, kind, loop domain, fused node names and their positions
        in `graph.nodes` (in order), and whether it runs as one flat loop."""
        if isinstance(self._kernel_info, str):
            self._kernel_info = _literal(self._kernel_info, [])
        return [dict(k) for k in self._kernel_info]

    def __repr__(self) -> str:
        return f"<Executable @{self.name}: {self._n_kernels} kernels>"


class _PhaseClock:
    """Wall time of each compile phase (`PHASES`, in order, in seconds): `lap(name)` ends the phase
    running since the previous lap; `book(timings)` adds the phases `jit` timed itself (parse,
    optimise, codegen, link). Every phase is present, 0.0 when skipped (LLVM on a disk-cache hit),
    and they add up to `total()` but for the clock reads between laps."""

    PHASES = ("schedule", "plan", "cache_lookup", "llvm_ir", "llvm_parse", "llvm_opt", "codegen", "link",
              "cache_store", "prepare")
    _JIT_TIMINGS = {"parse": "llvm_parse", "llvm_opt": "llvm_opt", "codegen": "codegen", "link": "link"}

    def __init__(self):
        self.start = self.last = time.perf_counter()
        self.phases = dict.fromkeys(self.PHASES, 0.0)

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.phases[name] += now - self.last
        self.last = now

    def book(self, timings: dict) -> None:
        for key, name in self._JIT_TIMINGS.items():
            self.phases[name] += timings.get(key, 0.0)
        self.last = time.perf_counter()

    def total(self) -> float:
        return time.perf_counter() - self.start


def _strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    out = []
    acc = itemsize
    for d in reversed(shape):
        out.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(out))


def _layout(graph: Graph, kernels: list, plan, entry: str, size: int, coded: list, split=None,
            finish: str | None = None) -> dict:
    """What the compiled code of `graph` expects, as plain data (a disk-cache entry stores its
    `repr`): the entry symbol, the element count of a threaded entry (0: one call), a split
    reduction's block count and its combining entry (`threads`; 0 and None: not split), the output
    buffers it fills (shape, dtype name), how each graph output is made of them (the recipe),
    the arena size, the kernels (`Kernel.describe`), the message of each error code, the node
    count and the libraries (path, symbols) its calls resolve to (numpy's OpenBLAS)."""
    recipe = []
    first_pos: dict = {}
    inputs = {v: i for i, v in enumerate(graph.inputs)}
    for pos, v in enumerate(graph.outputs):
        if v in first_pos:
            recipe.append(("repeat", first_pos[v]))
        elif v in inputs:
            recipe.append(("input", inputs[v]))
        else:
            recipe.append(("slot", plan.slots[v][1]))
        first_pos.setdefault(v, pos)
    return {"entry": entry, "size": size, "blocks": split.blocks if split else 0, "finish": finish,
            "alloc": [(v.type.shape, v.dtype.name) for v in plan.out_values],
            # a split reduction's arena: the plan's buffers, then the block accumulators
            "recipe": recipe, "arena_bytes": split.arena_bytes if split else plan.arena_bytes,
            "kernels": [k.describe() for k in kernels], "n_kernels": len(kernels),
            "errors": [_error_message(node, where) for node, where in coded],
            "nodes": len(graph.nodes),
            "libraries": sorted((path, tuple(symbols)) for path, symbols in _jit_module().engine().libraries.items())}


def _jit_module():
    from . import jit  # imported on first use: a disk-cache hit never needs llvmlite.binding

    return jit


def _link_cached(images: list[bytes], layout: dict, llvm_ir: str):
    """The cached object `images` linked, by `object_loader` (no llvmlite), else by the JIT linker
    when the loader does not support them; None if a library or symbol they need is gone."""
    from . import object_loader

    try:
        return object_loader.load(images, _entry_names(layout), object_loader.Resolver(layout["libraries"]), llvm_ir)
    except object_loader.Unsupported:
        pass
    except (OSError, AttributeError):  # a library or one of its symbols is gone
        return None
    jit = _jit_module()
    try:
        for path, symbols in layout["libraries"]:
            jit.load_library(path, symbols)
        return jit.link_object(images, _entry_names(layout), llvm_ir)
    except (OSError, RuntimeError, KeyError, AttributeError):
        return None


def _entry_names(layout: dict) -> list[str]:
    """The symbols the compiled code of `layout` is called through."""
    fast = _fastcall_name(layout)
    return [layout["entry"]] + ([layout["finish"]] if layout["finish"] else []) + ([fast] if fast else [])


def _fastcall_name(layout: dict) -> str | None:
    """The METH_FASTCALL trampoline's symbol (`module._emit_fastcall`, named as `module.fastcall_name`,
    which a disk-cache hit must not import), or None: ranged and split entries have none."""
    if layout["size"] or layout["blocks"]:
        return None
    entry = layout["entry"]
    return entry[:-len("_entry")] + "_fastcall" if entry.endswith("_entry") else entry + "_fastcall"


def _error_message(node, where: str):
    """(kind, message) of the error that `node` reports through the status word, or None when it
    reports none. "@@" stands for the executable's name (an entry serves graphs of any name)."""
    failure = getattr(node.prim, "failure", None)
    if failure is not None:
        return ("linalg", f"{node.prim.name}: {failure} (operand {node.inputs[0].type})")
    if len(node.inputs) < 2 or getattr(node.inputs[1].type, "dtype", None) not in dtypes.INTS:
        return None  # only an (integer) index operand reads out of range
    x = node.inputs[0]
    axis = node.attrs.get("axis", 0)
    try:
        size = x.shape[axis]
    except (TypeError, IndexError, AttributeError):
        return None
    return ("index", f"{node.prim.name}: index out of range for axis {axis} with size {size} "
                     f"(operand {x.type}, index {node.inputs[1].type}) in compiled @@"
                     + (f", inside the {where} region" if where else ""))


def _dump_layout(layout: dict) -> str:
    """`layout` as stored in a disk-cache entry: JSON, with the kernels and error messages as
    Python literals inside it (read only when asked for: `Executable.kernels`, an error)."""
    return json.dumps({**layout, "kernels": repr(layout["kernels"]), "errors": repr(layout["errors"])})


def _read_layout(text: str) -> dict | None:
    """The layout stored in a disk-cache entry, or None if it does not read as one (entries are
    checksummed: this guards against an entry written by other code under the same key)."""
    try:
        layout = json.loads(text)
        if not isinstance(layout, dict) or set(layout) != _LAYOUT_KEYS:
            return None
        layout["alloc"] = [(tuple(shape), str(name)) for shape, name in layout["alloc"]]
        layout["recipe"] = [(str(kind), int(i)) for kind, i in layout["recipe"]]
        layout["libraries"] = [(str(path), tuple(symbols)) for path, symbols in layout["libraries"]]
        if not (isinstance(layout["kernels"], str) and isinstance(layout["errors"], str)
                and isinstance(layout["entry"], str) and isinstance(layout["blocks"], int)
                and isinstance(layout["merged"], int)
                and (layout["finish"] is None or isinstance(layout["finish"], str))
                and bool(layout["blocks"]) == (layout["finish"] is not None)):
            return None
    except (ValueError, TypeError):
        return None
    return layout


def _same_layout(read: dict | None, layout: dict) -> bool:
    return read is not None and {**read, "kernels": _literal(read["kernels"], None),
                                 "errors": _literal(read["errors"], None)} == layout


def _literal(text: str, default):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return default


_LAYOUT_KEYS = {"entry", "size", "blocks", "finish", "alloc", "recipe", "arena_bytes", "kernels", "n_kernels", "errors", "nodes",
                "libraries", "merged"}
# Module-level settings of the code generator that the generated code depends on (tests and
# benchmarks change them at run time): (module, name, default). A module not imported yet has its
# default, so a disk-cache hit need not import it (tests/codegen/test_disk_cache.py checks these
# defaults against the modules).
KEY_SETTINGS = (("dot", "BLAS_MIN_FLOPS", 2 * 32 ** 3), ("dot", "INPLACE_MIN_FLOPS", 1 << 22),
                ("module", "VECTOR_WIDTH", 512),
                ("schedule", "MAX_FUSED_DEPTH", 64), ("schedule", "MAX_PATHS", 4),
                ("threads", "REDUCE_BLOCK", 1 << 16), ("threads", "REDUCE_SPLIT_MIN", 1 << 18))


def _disk_key(graph: Graph) -> str:
    """The disk-cache key: the graph's text plus every setting the generated code depends on."""
    from tensorplay.ir.text import print_graph

    package = __name__.rpartition(".")[0]
    settings = []
    for module, name, default in KEY_SETTINGS:
        loaded = sys.modules.get(f"{package}.{module}")
        settings.append(f"{name}={getattr(loaded, name) if loaded is not None else default}")
    # whether the entry is threaded (`_chunks`), which BLAS `dot.find_blas` finds (numpy's own), and
    # whether products may call the generic in-place gemm (`dot.inplace_gemm_enabled`) or OpenBLAS
    blas = "off" if os.environ.get("TENSORPLAY_NO_BLAS") else f"numpy {np.__version__} {os.path.dirname(np.__file__)}"
    from .host import stream_min_bytes  # which outputs get non-temporal stores

    options = (f"parallel={_THREADS >= 2} parallel_min={PARALLEL_MIN_ELEMENTS} blas={blas} "
               f"stream={stream_min_bytes()} inplace_gemm={os.environ.get('TENSORPLAY_INPLACE_GEMM', '').strip() != '0'} "
               + " ".join(settings))
    return disk_cache.make_key(print_graph(graph), options, disk_cache.host_fingerprint())


def _sanitize(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)[:32] or "f"
