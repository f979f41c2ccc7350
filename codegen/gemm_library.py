"""The shape-generic in-place gemm (`gemm_kernel.emit_generic_inplace`), one module per tile with
an entry point per B orientation, compiled at most once per process and called by graph code through
the entry points' symbols.

A graph module that runs a product in place declares ``tp_gemm_f32_8x32_nn`` (or ``_nt`` for a
transposed B) and calls it with m, n, k, the strides and the pointers. Both names are entry points
of one module, ``tp_gemm_f32_8x32`` (`gemm_kernel.generic_module_text`: the two orientations share
one function, so a cold process compiles it once). The symbol is resolved when the module is
linked, as numpy's OpenBLAS symbols are: by the JIT linker (`prefetch` registers it with
`jit.import_later`), and by `object_loader.load` for a disk-cache hit (`object_loader.Resolver`:
`object_loader.provided` once this process has made it, else its own disk-cache entry,
`object_loader.load_symbol`). No module's code holds an absolute address of it, so a graph's
object code stays valid in another process. (The lower modules know it only through those two
registries and the disk cache: they never import this one.)

`address(name)` gives an entry point's address, making its module on first use in the process: its
object code is read from the disk cache (`disk_cache.symbol_key` of the entry point: each holds the
whole module; the key covers the host fingerprint, the tensorplay version and the codegen sources)
and linked by `object_loader` (no LLVM), or else generated, compiled (`COMPILE_LEVEL`, `CODEGEN_LEVEL`)
and stored there under both entry points' keys; where a graph module is built that calls it,
`prefetch` starts that in a thread of its own, so that it runs beside the graph's own compile and
only the graph's link waits. The code stays mapped for the life of the process (`compiled()` counts
the compiles: tests check that graphs of different shapes and both orientations compile it once).

This module imports neither llvmlite nor the code generator until it must compile: a disk-cache
hit of a graph that calls the function costs an object load, not an LLVM start-up.

    >>> parse("tp_gemm_f32_8x32_nt"), parse("tp_gemm_f32_5x5_nn"), parse("cblas_sgemm")
    ((8, 2, 16, True), None, None)
    >>> module_of("tp_gemm_f32_8x32_nt"), entry_points("tp_gemm_f32_8x32")
    ('tp_gemm_f32_8x32', ['tp_gemm_f32_8x32_nn', 'tp_gemm_f32_8x32_nt'])
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
# the compile time (nn 150 -> 35 ms, nt 300 -> 70 ms of LLVM).
COMPILE_LEVEL = 0
# The machine-code generator's level for it: 1 emits the same instructions as `jit.CODEGEN_OPT` = 3
# (the same object size; only their order differs, the same run time on the MLP's six shapes and
# jacrev's product, Zen 4) in ~7 % less time; 0 (fast register allocation) runs 4.5-5x slower.
CODEGEN_LEVEL = 1

_NAME = re.compile(r"tp_gemm_f32_(\d+x\d+)_(nn|nt)")
_lock = threading.RLock()
_addresses: dict[str, int] = {}
_code: list = []  # every JitModule or LoadedCode made here, never released (callers hold addresses)
_compiles: list[str] = []
_pending: dict[str, threading.Thread] = {}  # module -> the thread making it (`prefetch`)
_errors: dict[str, BaseException] = {}  # module -> what making it raised


def parse(name: str) -> tuple[int, int, int, bool] | None:
    """(rows, vectors, lanes, transposed B) of generic gemm function `name`, or None if `name` is
    not one."""
    m = _NAME.fullmatch(name)
    if m is None or m.group(1) not in TILES:
        return None
    return (*TILES[m.group(1)], m.group(2) == "nt")


def module_of(name: str) -> str | None:
    """The module (`gemm_kernel.generic_core_symbol`) defining entry point `name`, or None if
    `name` is not one."""
    return name.rsplit("_", 1)[0] if parse(name) is not None else None


def entry_points(module: str) -> list[str]:
    """The entry points module `module` defines (B untransposed, transposed)."""
    return [f"{module}_nn", f"{module}_nt"]


def compiled() -> int:
    """How many generic gemm modules this process has compiled with LLVM (not loaded from disk).

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
    if name in _addresses or parse(name) is None:
        return
    module = module_of(name)
    if module in _pending:
        return
    with _lock:
        if name not in _addresses and module not in _pending:
            worker = threading.Thread(target=_make, args=(module,), name=f"tensorplay-{module}", daemon=True)
            _pending[module] = worker
            worker.start()
            from . import jit

            for entry in entry_points(module):  # the graph module's link waits for it
                jit.import_later(entry, lambda entry=entry: address(entry))


def _make(module: str) -> None:
    try:
        code = _load(module)
        if code is None:
            code = _compile(module)
    except BaseException as e:  # raised again by `address`, in the thread that needs the function
        _errors[module] = e
        return
    from . import object_loader

    with _lock:
        _code.append(code)
        for entry in entry_points(module):
            _addresses[entry] = code.addresses[entry]
            object_loader.provided[entry] = _addresses[entry]  # for cached graph code linked by the loader


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
    module = module_of(name)
    prefetch(name)
    worker = _pending.get(module)
    if worker is not None:
        worker.join()
    with _lock:
        if module in _errors:
            _pending.pop(module, None)
            raise _errors.pop(module)
        if name not in _addresses:  # the worker did not run (a fork took it away): make it here
            _make(module)
            if module in _errors:
                raise _errors.pop(module)
        return _addresses[name]


def _load(module: str):
    """The module's code from a disk-cache entry of one of its entry points, linked without LLVM
    when the loader can; None if absent."""
    if not disk_cache.enabled():
        return None
    names = entry_points(module)
    entry = disk_cache.load(disk_cache.symbol_key(names[0])) or disk_cache.load(disk_cache.symbol_key(names[1]))
    if entry is None:
        return None
    images, llvm_ir, _ = entry
    from . import object_loader

    try:
        return object_loader.load(images, names, object_loader.Resolver([]), llvm_ir)
    except object_loader.Unsupported:
        pass
    from . import jit

    try:
        return jit.link_object(images, names, llvm_ir)
    except (RuntimeError, KeyError):
        return None


def _compile(module: str):
    from . import gemm_kernel, jit, object_loader

    names = entry_points(module)
    rows, nv, lanes, _ = parse(names[0])
    text = gemm_kernel.generic_module_text(gemm_kernel.Tile(rows, nv, lanes))
    # one module in this thread (no merge or split: `jit.compile_ir`), loaded by the object loader
    # when it can (an LLJIT costs ~1 ms more), as a disk-cache hit would be
    obj, llvm_ir = jit.compile_object(text, COMPILE_LEVEL, CODEGEN_LEVEL)
    try:
        code = object_loader.load([obj], names, object_loader.Resolver([]), llvm_ir)
    except object_loader.Unsupported:
        code = jit.link_object([obj], names, llvm_ir)
    _compiles.append(module)
    if disk_cache.enabled():
        for name in names:  # the same image under each entry point's key (`object_loader.load_symbol`)
            disk_cache.store(disk_cache.symbol_key(name), [obj], llvm_ir, "generic gemm")
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
