"""The llvmlite binding layer: a target
machine for the host CPU (its name and features), and the O2 pipeline of the
new pass manager with loop and SLP vectorisation (`SPEED_LEVEL`; small elementwise kernels carry
`optsize`, see `module.optimised_for_size`).

Loop unrolling is kept but capped (`UNROLL_OPTIONS`): with O3's defaults, LLVM fully
unrolls every constant-trip-count loop of a small shape, and unrolling was half of the
compile time (MLP 784-256-256-10 loss+grad: 217-248 -> 165-174 ms to compile; tiny MLP
4-8-8-2 loss+grad: 218-242 -> 156-179 ms; hessian d=16: 400-429 -> 127-138 ms), while
turning it off entirely slows column reductions 1.8x and small loop-nest products 1.4x.
Interleaving stays on: without it a vectorised reduction has one accumulator and runs
1.7x slower. (Measured 2026-11-29; tools/bench/README.md, "Notes: compiler performance work".)

Every compiled graph is one LLVM module, optimised and emitted as an object file
(`compile_ir`), then linked into its own ORC LLJIT instance (`link_object`):
dropping the `JitModule` (`release`, or garbage collection) disposes that
instance and frees its machine code. One LLJIT per module, rather than one
library per module in a shared LLJIT, because a shared instance keeps ~9 KB
per library that it never gives back; creating one costs about a millisecond.
The object bytes are what the disk cache stores (`codegen.disk_cache`).

Memory (measured 2026-12-01, tools/bench/bench_soak.py): compiling a distinct graph used to keep
~92 KB for good. The O3 pipeline leaked whole: llvmlite 0.50's `ModulePassManager` and
`FunctionPassManager` list `ffi.ObjectRef` before `NewPassManager` in their bases, so
`ObjectRef._dispose` (a no-op) shadows the `_dispose` that deletes the C++ pass manager, and
every pipeline built stays allocated with all its passes. `_dispose_pass_manager` deletes it
(feature-detected, so a fixed llvmlite is left alone). Each module is also parsed into its own
LLVMContext, disposed with it, so that the constants and types it uniques (a new constant per
graph is common) do not pile up in the global context. What is left is ~1.5 KB per compile:
`LLVMPY_CreatePassBuilder` allocates a `PassInstrumentationCallbacks` that nothing deletes. A
pass builder cannot be reused to avoid it: each run registers callbacks into it that point into
that run's stack frame.
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field

import llvmlite.binding as llvm
from llvmlite.binding import ffi

_lock = threading.Lock()
_engine: "_Engine | None" = None


# LLVM command-line options, read when the pass pipeline runs: at most 4 iterations are unrolled
# fully, and the unrolled size limit is 100 instead of O3's 300. They are process-wide: another
# llvmlite user in the same process (numba) would see them too.
FULL_UNROLL_MAX_COUNT = 4
# The optimisation pipeline is O2 (with loop and SLP vectorisation, interleaving and capped unrolling
# as below): O3 adds passes that do nothing for our straight loop kernels (argument promotion,
# call-site splitting, non-trivial unswitching) and cost ~10-15 % of the optimiser's time.
SPEED_LEVEL = 2
CODEGEN_OPT = 3  # the machine-code generator's level (O2 and O3 cost the same there)
UNROLL_OPTIONS = ("-unroll-threshold=100", f"-unroll-full-max-count={FULL_UNROLL_MAX_COUNT}")
# Loop strength reduction (machine-code generator) is off: it was a third of the machine-code time
# of a conv2d + max_pool2d grad module (deep loop nests with many address computations: LSR is
# superlinear in their number), while x86's base + index * scale addressing does the same job at
# run time (same-process A/B on fused elementwise, row/column sums, transpose, conv and MLP grads:
# 0.96-1.05x, noise; tools/bench/README.md, "Compile time round 5").
CODEGEN_OPTIONS = ("-disable-lsr",)


def reassociation_is_per_element(reduced_trip_counts) -> bool:
    """Whether a `reassoc` accumulation over loops of these trip counts keeps one fixed order per
    output element. Yes while one of them survives full unrolling: LLVM then vectorises that loop,
    in an order that depends on the reduced extents alone. If all are unrolled away, the loop over
    output elements is vectorised instead and its scalar remainder may be SLP-vectorised as a
    horizontal reduction in another order: the result would depend on the element's position."""
    return any(n > FULL_UNROLL_MAX_COUNT for n in reduced_trip_counts)


class _Engine:
    def __init__(self) -> None:
        for option in UNROLL_OPTIONS + CODEGEN_OPTIONS:
            llvm.set_option("tensorplay", option)
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.tm = target.create_target_machine(cpu=self.cpu, features=self.features, opt=CODEGEN_OPT,
                                               codemodel="jitdefault")
        self.count = 0
        self.imports: dict[str, int] = {}  # symbols of libraries loaded for compiled code
        self.libraries: dict[str, tuple[str, ...]] = {}  # path -> those symbols (a disk-cache entry lists them)

    def pipeline(self, speed_level: int = 3):
        pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
        pto.loop_vectorization = speed_level >= 2
        pto.slp_vectorization = speed_level >= 2
        pto.loop_unrolling = speed_level >= 2
        pto.loop_interleaving = speed_level >= 2
        return pto


def engine() -> _Engine:
    """The process-wide target machine and options (created on first use)."""
    global _engine
    if _engine is None:
        with _lock:
            if _engine is None:
                _engine = _Engine()
    return _engine


def host_triple_and_layout() -> tuple[str, str]:
    """Target triple and data layout to stamp on modules built for this host."""
    e = engine()
    return e.tm.triple, str(e.tm.target_data)


def host_fingerprint() -> str:
    """What object code compiled here depends on: LLVM and llvmlite versions, triple, CPU, features."""
    import llvmlite

    e = engine()
    return (f"llvm={'.'.join(map(str, llvm.llvm_version_info))} llvmlite={llvmlite.__version__} "
            f"triple={e.tm.triple} cpu={e.cpu} features={e.features} opt=O{SPEED_LEVEL}/{CODEGEN_OPT} "
            f"options={' '.join(UNROLL_OPTIONS + CODEGEN_OPTIONS)}")


@dataclass
class JitModule:
    """Machine code living in its own LLJIT: function addresses, object bytes and optimised IR."""

    addresses: dict[str, int]
    llvm_ir: str
    object_code: bytes
    timings: dict[str, float] = field(default_factory=dict)
    merged: int = 0  # internal functions merged into an identical one (`merge_identical_functions`)
    _jit: object = None
    _tracker: object = None

    def asm(self) -> str:
        """Host assembly of the optimised module (re-emitted on demand)."""
        with _parsed(self.llvm_ir) as mod, _lock:
            return engine().tm.emit_assembly(mod)

    def release(self) -> None:
        """Free the machine code; its function addresses become invalid."""
        tracker, lljit = self._tracker, self._jit
        self._tracker = self._jit = None
        if tracker is not None:
            tracker.close()
        if lljit is not None:
            lljit.close()


class _parsed:
    """``with _parsed(text) as mod``: a module parsed into a fresh LLVMContext; module and context
    are disposed on exit (nothing it uniqued stays in the global context)."""

    def __init__(self, text: str):
        self.text = text
        self.context = self.module = None

    def __enter__(self):
        self.context = llvm.create_context()
        try:
            self.module = llvm.parse_assembly(self.text, context=self.context)
        except BaseException:
            self.context.close()
            raise
        return self.module

    def __exit__(self, *exc) -> None:
        self.module.close()
        self.context.close()


def _dispose_pass_manager(pm) -> None:
    """Delete the C++ pass manager behind `pm` (llvmlite 0.50 never does: see the module docstring)."""
    if type(pm)._dispose is not ffi.ObjectRef._dispose:  # a fixed llvmlite disposes it itself
        pm.close()
        return
    if isinstance(pm, llvm.ModulePassManager):
        ffi.lib.LLVMPY_DisposeNewModulePassManger(pm)
    else:
        ffi.lib.LLVMPY_DisposeNewFunctionPassManger(pm)
    pm.detach()


def run_pipeline(mod, speed_level: int | None = None) -> None:
    """Run the default pipeline of `speed_level` (`SPEED_LEVEL`, O2 + vectorisers, by default) over
    `mod`, then free the pass builder and pass manager."""
    speed_level = SPEED_LEVEL if speed_level is None else speed_level
    e = engine()
    pto = e.pipeline(speed_level)
    pb = llvm.create_pass_builder(e.tm, pto)
    pm = pb.getModulePassManager()
    try:
        pm.run(mod, pb)
    finally:
        _dispose_pass_manager(pm)
        pb.close()
        pto.close()


_DEFINE = re.compile(r'^define internal [^\n]*?@"([^"]+)"\(', re.MULTILINE)


_METADATA_REF = re.compile(r"!(\d+)\b")
_METADATA_DEF = re.compile(r"^!(\d+) = (.*)$", re.MULTILINE)


def _metadata_contents(text: str) -> dict[str, str]:
    """Numbered metadata node -> its content with every node it refers to spelled out (a node's
    reference to itself, as in a distinct loop-metadata node, becomes ``!self``)."""
    defs = {m.group(1): m.group(2) for m in _METADATA_DEF.finditer(text)}
    out: dict[str, str] = {}

    def content(n: str, depth: int = 0) -> str:
        if n not in out:
            if depth > 8 or n not in defs:
                return f"!{n}"
            out[n] = _METADATA_REF.sub(lambda r: "!self" if r.group(1) == n else content(r.group(1), depth + 1),
                                       defs[n].replace("distinct ", ""))
        return out[n]

    for n in defs:
        content(n)
    return out


def merge_identical_functions(text: str) -> tuple[str, int]:
    r"""`text` with every internal function whose body is identical to an earlier one removed and
    its callers calling that one instead; and how many were removed.

    A graph often has several kernels with the same code (each layer's activation and its
    derivative, when the layers have the same width): LLVM would optimise and emit each copy.
    Done on the unoptimised text, before parsing (LLVM's MergeFunctions pass would need a second
    pass pipeline, and runs after the optimiser in the default one). Only ``define internal``
    functions with quoted names (all that `llvmlite.ir` prints) are merged; a function's own name
    inside its body (recursion) is compared as a placeholder.

    >>> f = 'define internal void @"a"(ptr %".1")\n{\nentry:\n  ret void\n}\n'
    >>> text = f + f.replace('@"a"', '@"b"') + 'define void @"e"()\n{\n  call void @"b"(ptr null)\n}\n'
    >>> merged, n = merge_identical_functions(text)
    >>> n, '@"b"' in merged, merged.count("define")
    (1, False, 2)
    """
    removed = 0
    metadata = _metadata_contents(text)
    for _ in range(4):  # merging callees can make their callers identical in turn
        first: dict[str, str] = {}
        renames: dict[str, str] = {}
        spans = []
        for m in _DEFINE.finditer(text):
            end = text.find("\n}\n", m.end())
            if end < 0:
                return text, removed
            end += 3
            name = m.group(1)
            body = text[m.start():end].replace(f'@"{name}"', '@"\0"')
            # each loop has its own (distinct) metadata node: compare what the nodes say, not their ids
            body = _METADATA_REF.sub(lambda r: metadata.get(r.group(1), r.group(0)), body)
            kept = first.setdefault(body, name)
            if kept != name:
                renames[name] = kept
                spans.append((m.start(), end))
        if not renames:
            break
        for start, end in reversed(spans):
            text = text[:start] + text[end:]
        text = re.sub(r'@"([^"]+)"', lambda m: f'@"{renames.get(m.group(1), m.group(1))}"', text)
        removed += len(renames)
    return text, removed


def compile_ir(text: str, symbols: list[str], speed_level: int | None = None) -> JitModule:
    """Merge identical internal functions (`merge_identical_functions`), parse, verify and
    optimise `text`, emit its object code and link it; return the addresses of `symbols`.
    Timings: parse (+verify, + the merge), llvm_opt, codegen (object code), link."""
    t0 = time.perf_counter()
    text, merged = merge_identical_functions(text)
    with _parsed(text) as mod:
        mod.verify()
        t1 = time.perf_counter()
        run_pipeline(mod, speed_level)
        t2 = time.perf_counter()
        with _lock:  # one TargetMachine emits for every thread
            obj = engine().tm.emit_object(mod)
        optimised = str(mod)
    t3 = time.perf_counter()
    jm = link_object(obj, symbols, optimised)
    jm.timings.update(parse=t1 - t0, llvm_opt=t2 - t1, codegen=t3 - t2)
    jm.merged = merged
    return jm


def link_object(obj: bytes, symbols: list[str], llvm_ir: str = "") -> JitModule:
    """Load object code (from `compile_ir` or the disk cache) into a fresh LLJIT."""
    e = engine()
    t0 = time.perf_counter()
    lljit = llvm.create_lljit_compiler()
    builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
    for name, address in e.imports.items():
        builder.import_symbol(name, address)
    for s in symbols:
        builder.export_symbol(s)
    with _lock:
        e.count += 1
        tracker = builder.link(lljit, f"tp{e.count}")
    addresses = {s: tracker[s] for s in symbols}
    return JitModule(addresses, llvm_ir, bytes(obj), {"link": time.perf_counter() - t0}, lljit, tracker)


def load_library(path: str, symbols: list[str] = ()) -> None:
    """Make the shared library at `path`, and by address its `symbols`, resolvable from compiled code."""
    import ctypes

    e = engine()
    known = e.libraries.get(path, ())
    if set(symbols) <= set(known):
        return
    llvm.load_library_permanently(path)
    lib = ctypes.CDLL(path)
    for name in symbols:
        e.imports[name] = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
    e.libraries[path] = tuple(sorted({*known, *symbols}))


def symbol_address(name: str) -> int:
    """Address of a process symbol known to the JIT linker (0 if absent)."""
    engine()
    return llvm.address_of_symbol(name) or 0


def next_module_id() -> int:
    e = engine()
    with _lock:
        e.count += 1
        return e.count
