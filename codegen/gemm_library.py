"""The shape-generic in-place gemm functions (`gemm_kernel.emit_generic_inplace`), one per tile and
B orientation, compiled at most once per process and called by graph code through their symbol.

A graph module that runs a product in place declares ``tp_gemm_f32_8x32_nn`` (or ``_nt`` for a
transposed B) and calls it with m, n, k, the strides and the pointers. The symbol is resolved when
the module is linked, as numpy's OpenBLAS symbols are: by the JIT linker (`prefetch` registers it
with `jit.import_later`), and by `object_loader.load` for a disk-cache hit (`object_loader.Resolver`:
`object_loader.provided` once this process has made it, else its own disk-cache entry,
`object_loader.load_symbol`). No module's code holds an absolute address of it, so a graph's
object code stays valid in another process. (The lower modules know it only through those two
registries and the disk cache: they never import this one.)

`address(name)` gives the function's address, making it on first use in the process: its object
code is read from the disk cache (`disk_cache.symbol_key`: the function's name, the host
fingerprint, the tensorplay version and the codegen sources) and linked by `object_loader` (no
LLVM), or else generated, compiled (`COMPILE_LEVEL`) and stored there; where a graph module is
built that calls it, `prefetch` starts that in a thread of its own, so that it runs beside the
graph's own compile and only the graph's link waits. The code stays mapped for the life of the
process (`compiled()` counts the compiles: tests check that two graphs of different shapes compile
the function once).

This module imports neither llvmlite nor the code generator until it must compile: a disk-cache
hit of a graph that calls the function costs an object load, not an LLVM start-up.

    >>> parse("tp_gemm_f32_8x32_nt"), parse("tp_gemm_f32_5x5_nn"), parse("cblas_sgemm")
    ((8, 2, 16, True), None, None)
"""
from __future__ import annotations

import re
import threading

from . import disk_cache

PREFIX = "tp_gemm_"
# The tiles the generic function is made for: name -> (rows, vectors per row, lanes per vector);
# `gemm_kernel.AVX512_TILE` and `AVX2_TILE` (tests/codegen/test_generic_gemm.py checks they agree).
TILES = {"8x32": (8, 2, 16), "6x16": (6, 2, 8)}
# The optimiser's level for the function: its loops are written with explicit phis and vectors, so
# the O2 pipeline had nothing to add (the same run time on the MLP's six shapes, Zen 4) for 3-4x
# the compile time (nn 150 -> 35 ms, nt 300 -> 70 ms of LLVM). The machine-code generator keeps
# its own level (`jit.CODEGEN_OPT`).
COMPILE_LEVEL = 0

_NAME = re.compile(r"tp_gemm_f32_(\d+x\d+)_(nn|nt)")
_lock = threading.RLock()
_addresses: dict[str, int] = {}
_code: list = []  # every JitModule or LoadedCode made here, never released (callers hold addresses)
_compiles: list[str] = []
_pending: dict[str, threading.Thread] = {}  # name -> the thread making it (`prefetch`)
_errors: dict[str, BaseException] = {}


def parse(name: str) -> tuple[int, int, int, bool] | None:
    """(rows, vectors, lanes, transposed B) of generic gemm function `name`, or None if `name` is
    not one."""
    m = _NAME.fullmatch(name)
    if m is None or m.group(1) not in TILES:
        return None
    return (*TILES[m.group(1)], m.group(2) == "nt")


def compiled() -> int:
    """How many generic functions this process has compiled with LLVM (not loaded from disk).

    >>> isinstance(compiled(), int)
    True
    """
    return len(_compiles)


def prefetch(name: str) -> None:
    """Start making generic gemm function `name` in a thread of its own (loaded from the disk cache
    or compiled), unless it is made or under way: a graph module that calls it is still being
    built and compiled (LLVM releases the GIL), and only its link waits (`address`).

    >>> prefetch("tp_gemm_f32_8x32_nn"); address("tp_gemm_f32_8x32_nn") != 0
    True
    """
    if name in _addresses or name in _pending or parse(name) is None:
        return
    with _lock:
        if name not in _addresses and name not in _pending:
            worker = threading.Thread(target=_make, args=(name,), name=f"tensorplay-{name}", daemon=True)
            _pending[name] = worker
            worker.start()
            from . import jit

            jit.import_later(name, lambda: address(name))  # the graph module's link waits for it


def _make(name: str) -> None:
    try:
        code = _load(name)
        if code is None:
            code = _compile(name)
    except BaseException as e:  # raised again by `address`, in the thread that needs the function
        _errors[name] = e
        return
    from . import object_loader

    with _lock:
        _code.append(code)
        _addresses[name] = code.addresses[name]
        object_loader.provided[name] = _addresses[name]  # for cached graph code linked by the loader


def address(name: str) -> int | None:
    """The address of generic gemm function `name` in this process (loaded or compiled on first
    use, or waited for when `prefetch` started it), or None if `name` is not one.

    >>> address("tp_gemm_f32_8x32_nn") == address("tp_gemm_f32_8x32_nn") != 0
    True
    """
    found = _addresses.get(name)
    if found is not None:
        return found
    if parse(name) is None:
        return None
    prefetch(name)
    worker = _pending.get(name)
    if worker is not None:
        worker.join()
    with _lock:
        if name in _errors:
            _pending.pop(name, None)
            raise _errors.pop(name)
        if name not in _addresses:  # the worker did not run (a fork took it away): make it here
            _make(name)
            if name in _errors:
                raise _errors.pop(name)
        return _addresses[name]


def _load(name: str):
    """The function's code from its disk-cache entry, linked without LLVM when the loader can; None if absent."""
    if not disk_cache.enabled():
        return None
    entry = disk_cache.load(disk_cache.symbol_key(name))
    if entry is None:
        return None
    images, llvm_ir, _ = entry
    from . import object_loader

    try:
        return object_loader.load(images, [name], object_loader.Resolver([]), llvm_ir)
    except object_loader.Unsupported:
        pass
    from . import jit

    try:
        return jit.link_object(images, [name], llvm_ir)
    except (RuntimeError, KeyError):
        return None


def _compile(name: str):
    from . import gemm_kernel, jit

    rows, nv, lanes, trans_b = parse(name)
    tile = gemm_kernel.Tile(rows, nv, lanes)
    code = jit.compile_ir(gemm_kernel.generic_module_text(tile, trans_b), [name], speed_level=COMPILE_LEVEL)
    _compiles.append(name)
    if disk_cache.enabled():
        disk_cache.store(disk_cache.symbol_key(name), code.objects, code.llvm_ir, "generic gemm")
    return code


def jit_import(name: str) -> None:
    """Make `name` resolvable by the JIT linker (`jit.link_object`): its address among the engine's
    imports. Called where a graph module declares it, and for cached images that name it.

    >>> jit_import("tp_gemm_f32_8x32_nn")  # graph modules calling it now link
    """
    from . import jit

    imports = jit.engine().imports
    if name not in imports:
        imports[name] = address(name)


_REFERENCE = re.compile(rb"tp_gemm_f32_\d+x\d+_n[nt]")


def referenced(images) -> set[str]:
    """The generic gemm functions object images name (their string tables hold the symbol).

    >>> sorted(referenced([b"..\\0tp_gemm_f32_8x32_nt\\0..", b"none"]))
    ['tp_gemm_f32_8x32_nt']
    """
    out = set()
    for image in images:
        if PREFIX.encode() in image:
            out.update(m.group(0).decode() for m in _REFERENCE.finditer(bytes(image)))
    return {n for n in out if parse(n) is not None}
