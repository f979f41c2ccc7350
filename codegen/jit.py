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

Every compiled graph is one LLVM module, split into parts of balanced estimated cost
(`split_module`: one per compile thread, `COMPILE_THREADS`), each parsed into its own LLVMContext,
optimised with its own pass builder and emitted with its own TargetMachine in a thread of its own
(`compile_ir`), and the small kernels marked `CHEAP_ATTRIBUTE` make one more module at O1
(`split_levels`); llvmlite's global lock is bypassed for those calls only (`_unlocked`), so the
threads really run at the same time (ctypes releases the GIL). The object images are linked into
one library of its own ORC LLJIT instance (`link_object`): dropping the `JitModule` (`release`, or
garbage collection) disposes that instance and frees its machine code. One LLJIT per module, rather than one
library per module in a shared LLJIT, because a shared instance keeps ~9 KB
per library that it never gives back; creating one costs about a millisecond.
The object images are what the disk cache stores (`codegen.disk_cache`, a list per entry).

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
that run's stack frame. That is per part: modules shorter than two `MIN_PART_LINES` stay whole.
"""
from __future__ import annotations

import ctypes
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from ._record import Factory, record

import llvmlite.binding as llvm
from llvmlite.binding import ffi

from .host import default_threads

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
# Kernels whose function carries CHEAP_ATTRIBUTE (`module.compiled_cheaply`: small loops and
# reductions) are compiled apart, in a module of their own, at these levels: O1 (no vectorisers,
# no unrolling) and the machine-code level that emits the same instructions as 3 in ~7 % less time.
CHEAP_ATTRIBUTE = '"tensorplay-cheap"'
CHEAP_SPEED_LEVEL = 1
CHEAP_CODEGEN_OPT = 1
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
        self.target = llvm.Target.from_triple(llvm.get_process_triple())
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.tm = self.new_target_machine()  # triple, data layout, assembly; module parts take their own
        self._free_machines: dict[int, list] = {}  # machine-code level -> target machines not in use
        self.count = 0
        self.imports: dict[str, int] = {}  # symbols of libraries loaded for compiled code
        self.libraries: dict[str, tuple[str, ...]] = {}  # path -> those symbols (a disk-cache entry lists them)

    def new_target_machine(self, codegen_level: int | None = None):
        """A target machine for the host at `codegen_level` (`CODEGEN_OPT` by default)."""
        return self.target.create_target_machine(cpu=self.cpu, features=self.features,
                                                 opt=CODEGEN_OPT if codegen_level is None else codegen_level,
                                                 codemodel="jitdefault")

    def take_machine(self, codegen_level: int | None = None):
        """A target machine at `codegen_level` (`CODEGEN_OPT`) for one thread's use (LLVM's
        TargetMachine is not shared by threads that emit at the same time); give it back with
        `give_machine`."""
        level = CODEGEN_OPT if codegen_level is None else codegen_level
        with _lock:
            free = self._free_machines.get(level)
            if free:
                return free.pop()
        return self.new_target_machine(level)

    def give_machine(self, tm, codegen_level: int | None = None) -> None:
        level = CODEGEN_OPT if codegen_level is None else codegen_level
        with _lock:
            self._free_machines.setdefault(level, []).append(tm)

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
            f"cheap=O{CHEAP_SPEED_LEVEL}/{CHEAP_CODEGEN_OPT} "
            f"options={' '.join(UNROLL_OPTIONS + CODEGEN_OPTIONS)}")


@record
class JitModule:
    """Machine code living in its own LLJIT: function addresses, object images and optimised IR (of
    every part, one after the other)."""

    addresses: dict[str, int]
    llvm_ir: str
    objects: list[bytes]
    timings: dict[str, float] = Factory(dict)
    merged: int = 0  # internal functions merged into an identical one (`merge_identical_functions`)
    _jit: object = None
    _tracker: object = None

    def asm(self) -> str:
        """Host assembly of the optimised module (re-emitted on demand, part by part)."""
        out = []
        tm = engine().tm  # before taking _lock: the first engine() takes it itself
        for part in re.split(r"(?m)^(?=; ModuleID)", self.llvm_ir):
            if part.strip():
                with _parsed(part) as mod, _lock:
                    out.append(tm.emit_assembly(mod))
        return "\n".join(out)

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
            self.module = _parse_unlocked(self.text, self.context)
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


def run_pipeline(mod, speed_level: int | None = None, tm=None) -> None:
    """Run the default pipeline of `speed_level` (`SPEED_LEVEL`, O2 + vectorisers, by default) over
    `mod` for target machine `tm` (the engine's by default), then free the pass builder and pass
    manager. The run itself does not hold llvmlite's global lock (`_unlocked`): threads optimising
    modules of their own contexts with their own target machines run at the same time."""
    speed_level = SPEED_LEVEL if speed_level is None else speed_level
    e = engine()
    pto = e.pipeline(speed_level)
    pb = llvm.create_pass_builder(tm if tm is not None else e.tm, pto)
    pm = pb.getModulePassManager()
    try:
        _unlocked("LLVMPY_RunNewModulePassManager")(pm, mod, pb)
    finally:
        _dispose_pass_manager(pm)
        pb.close()
        pto.close()


def _unlocked(name: str):
    """The ctypes function `name` of libllvmlite without llvmlite's global lock.

    llvmlite wraps every C call in one process-wide lock (`ffi.lib`), so threads compiling at the same
    time would take turns even though ctypes releases the GIL. LLVM itself allows concurrent work on
    distinct LLVMContexts with distinct target machines, which is how module parts are compiled
    (`compile_ir`): only parsing, verifying, optimising, printing and emitting a part's own module go
    through here. Falls back to the locked function if llvmlite's wrapper changes."""
    fn = getattr(ffi.lib, name)
    return getattr(fn, "_cfn", fn)


def _parse_unlocked(text: str, context):
    errmsg = ffi.OutputString()
    with errmsg:
        raw = _unlocked("LLVMPY_ParseAssembly")(context, ctypes.c_char_p(text.encode()), errmsg)
        mod = llvm.ModuleRef(raw, context)
        if errmsg:
            mod.close()
            raise RuntimeError(f"LLVM IR parsing error\n{errmsg}")
    return mod


def _verify_unlocked(mod) -> None:
    with ffi.OutputString() as msg:
        if _unlocked("LLVMPY_VerifyModule")(mod, msg):
            raise RuntimeError(str(msg))


def _print_unlocked(mod) -> str:
    with ffi.OutputString() as out:
        _unlocked("LLVMPY_PrintModuleToString")(mod, out)
        return str(out)


def _emit_unlocked(tm, mod) -> bytes:
    with ffi.OutputString() as err:
        mb = _unlocked("LLVMPY_TargetMachineEmitToMemory")(tm, mod, 1, err)
        if not mb:
            raise RuntimeError(str(err))
    try:
        return ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(mb), ffi.lib.LLVMPY_GetBufferSize(mb))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(mb)


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


# Threads compiling one module's parts (`compile_ir`); tests and benchmarks may set it.
COMPILE_THREADS = default_threads()
# A part is worth a thread from this many lines of unoptimised IR on (parsing the declarations and
# metadata every part repeats, a pass builder and a thread hand-off cost ~1-2 ms; each part also
# keeps ~1.5 KB of llvmlite's pass instrumentation, see the module docstring).
MIN_PART_LINES = 300
_compile_pool: ThreadPoolExecutor | None = None


def _forget_pool() -> None:
    global _compile_pool
    _compile_pool = None  # a forked child has none of the parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _pool(workers: int) -> ThreadPoolExecutor:
    global _compile_pool
    with _lock:
        if _compile_pool is None or _compile_pool._max_workers < workers:
            old, _compile_pool = _compile_pool, ThreadPoolExecutor(max_workers=workers,
                                                                   thread_name_prefix="tensorplay-llvm")
            if old is not None:
                old.shutdown(wait=False)
        return _compile_pool


@record
class _Function:
    name: str
    text: str
    refs: set[str]

    @property
    def cost(self) -> int:
        return self.text.count("\n")


_NAME = re.compile(r'@"([^"]+)"')
_DEFINE_NAME = re.compile(r'^define [^\n]*?@"([^"]+)"\(')


def _module_items(text: str):
    """(header lines, {global name: line}, declarations, [_Function], metadata lines) of a module
    printed by llvmlite, or None if some top-level line is not of a kind this knows."""
    header, globals_, decls, funcs, meta = [], {}, [], [], []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("define "):
            try:
                j = lines.index("}", i)
            except ValueError:
                return None
            m = _DEFINE_NAME.match(line)
            if m is None:
                return None
            body = "\n".join(lines[i:j + 1])
            funcs.append(_Function(m.group(1), body, set(_NAME.findall(body)) - {m.group(1)}))
            i = j + 1
            continue
        if line.startswith("declare "):
            decls.append(line)
        elif line.startswith('@"'):
            m = _NAME.match(line)
            globals_[m.group(1)] = line
        elif line.startswith("!"):
            meta.append(line)
        elif line.startswith(("; ModuleID", "target ", "source_filename")):
            header.append(line)
        elif line.strip():
            return None
        i += 1
    return header, globals_, decls, funcs, meta


def split_module(text: str, parts: int) -> list[str]:
    r"""`text` (one module, after `merge_identical_functions`) as `parts` modules of balanced
    estimated cost (lines of IR) that link into the same program, or fewer when there are fewer
    functions; ``[text]`` unchanged if it holds a construct this does not know.

    Every internal function becomes external (a part may call a kernel another part defines, through
    a declaration), whatever `parts` is, so that each function is optimised and emitted the same way
    alone or beside the others: its machine code does not depend on the split. Each part repeats
    the declarations and metadata, and the constants its functions use (private, so each part has
    its own copy).

    >>> f = 'define internal void @"k{0}"()\n{{\nentry:\n  ret void\n}}\n'
    >>> text = f.format(0) + f.format(1) + 'define void @"e"()\n{\n  call void @"k0"()\n  call void @"k1"()\n  ret void\n}\n'
    >>> [p.count("define ") for p in split_module(text, 2)], "internal" in "".join(split_module(text, 1))
    ([1, 2], False)
    """
    items = _module_items(text)
    if items is None:
        return [text]
    funcs = items[3]
    parts = max(1, min(parts, len(funcs)))
    return _assemble(items, _balanced(funcs, parts), parts)


def _balanced(funcs: list[_Function], parts: int, first: int = 0) -> dict[str, int]:
    """Each function's part, ``first`` to ``first + parts - 1``, of balanced estimated cost."""
    load = [0] * parts
    owner: dict[str, int] = {}
    for f in sorted(funcs, key=lambda f: -f.cost):  # longest first, each to the least loaded part
        p = load.index(min(load))
        owner[f.name] = first + p
        load[p] += f.cost
    return owner


def _assemble(items, owner: dict[str, int], parts: int) -> list[str]:
    """The `parts` modules holding the functions of `items` (`_module_items`) as `owner` says,
    every function external (see `split_module`)."""
    header, globals_, decls, funcs, meta = items
    for f in funcs:
        if f.text.startswith("define internal "):
            f.text = "define " + f.text[len("define internal "):]
    defined = {f.name: f for f in funcs}
    out = []
    for p in range(parts):
        mine = [f for f in funcs if owner[f.name] == p]
        refs = set().union(*(f.refs for f in mine)) if mine else set()
        used_globals, todo = [], [r for r in refs if r in globals_]
        seen = set(todo)
        while todo:  # constants may refer to constants
            g = todo.pop()
            used_globals.append(g)
            for r in _NAME.findall(globals_[g].split("=", 1)[1]):
                if r in globals_ and r not in seen:
                    seen.add(r)
                    todo.append(r)
        external = ["declare " + defined[r].text.split("\n", 1)[0][len("define "):]
                    for r in sorted(refs) if r in defined and owner[r] != p]
        out.append("\n".join([*header, "", *(globals_[g] for g in sorted(used_globals)), *decls, *external,
                              "", *(f.text + "\n" for f in mine), *meta, ""]))
    return out


def _is_cheap(f: _Function) -> bool:
    return CHEAP_ATTRIBUTE in f.text[:f.text.find("\n")]


def split_levels(text: str, parts: int) -> list[tuple[str, int | None, int | None]]:
    r"""`split_module(text, parts)`, as (module text, speed level, machine-code level) each (None: the
    defaults), except that the functions marked `CHEAP_ATTRIBUTE` make one more module, at
    `CHEAP_SPEED_LEVEL` and `CHEAP_CODEGEN_OPT`. A function's level depends on its mark alone,
    not on `parts`.

    >>> f = 'define internal void @"k{0}"(){1}\n{{\nentry:\n  ret void\n}}\n'
    >>> text = f.format(0, "") + f.format(1, " " + CHEAP_ATTRIBUTE) + 'define void @"e"()\n{\n  ret void\n}\n'
    >>> [(p.count("define "), s, c) for p, s, c in split_levels(text, 1)]
    [(2, None, None), (1, 1, 1)]
    """
    items = _module_items(text)
    cheap = [] if items is None else [f for f in items[3] if _is_cheap(f)]
    if not cheap:
        return [(t, None, None) for t in split_module(text, parts)]
    rest = [f for f in items[3] if not _is_cheap(f)]
    parts = max(1, min(parts, len(rest)))
    owner = _balanced(rest, parts)
    owner.update((f.name, parts) for f in cheap)
    texts = _assemble(items, owner, parts + 1)
    return [(t, None, None) for t in texts[:-1]] + [(texts[-1], CHEAP_SPEED_LEVEL, CHEAP_CODEGEN_OPT)]


@record
class _PartResult:
    obj: bytes
    llvm_ir: str
    parse: float
    llvm_opt: float
    codegen: float
    cpu: float


def _compile_part(text: str, speed_level: int | None, codegen_level: int | None = None) -> _PartResult:
    """Parse, verify, optimise and emit one module in its own context with its own target machine
    (one of the engine's, at `codegen_level` or `CODEGEN_OPT`)."""
    c0 = time.thread_time()
    t0 = time.perf_counter()
    e = engine()
    tm = e.take_machine(codegen_level)
    try:
        with _parsed(text) as mod:
            _verify_unlocked(mod)
            t1 = time.perf_counter()
            run_pipeline(mod, speed_level, tm)
            t2 = time.perf_counter()
            obj = _emit_unlocked(tm, mod)
            optimised = _print_unlocked(mod)
    finally:
        e.give_machine(tm, codegen_level)
    t3 = time.perf_counter()
    return _PartResult(obj, optimised, t1 - t0, t2 - t1, t3 - t2, time.thread_time() - c0)


def compile_object(text: str, speed_level: int | None = None, codegen_level: int | None = None) -> tuple[bytes, str]:
    r"""(object image, optimised IR) of the module `text`, compiled whole in this thread at
    `speed_level` (`SPEED_LEVEL`) and `codegen_level` (`CODEGEN_OPT`), not linked: for a module
    that is loaded by `object_loader` (the in-place gemm's generic function, `gemm_library`).
    Identical internal functions are not merged and nothing is split (`compile_ir` does both).

    >>> obj, _ = compile_object('define i64 @"one"()\n{\n  ret i64 1\n}\n', 0, 1)
    >>> obj[:4]
    b'\x7fELF'
    """
    result = _compile_part(text, speed_level, codegen_level)
    return result.obj, result.llvm_ir


def compile_parts(text: str) -> int:
    r"""How many parts `compile_ir` splits `text` into by default: one per compile thread
    (`COMPILE_THREADS`), but none shorter than `MIN_PART_LINES` lines.

    >>> compile_parts('define void @"f"()\n{\n}\n')
    1
    """
    return max(1, min(COMPILE_THREADS, text.count("\n") // MIN_PART_LINES))


def compile_ir(text: str, symbols: list[str], speed_level: int | None = None,
               parts: int | None = None) -> JitModule:
    """Merge identical internal functions (`merge_identical_functions`), split the module into
    `parts` modules (`split_module`; default `compile_parts(text)`), and parse, verify, optimise
    and emit each one in a thread of its own; link the object images into one LLJIT and return the
    addresses of `symbols`. The results do not depend on `parts` (tests/codegen/test_parallel_compile.py).

    Timings: parse (the merge and split, and the first part's parse + verify), llvm_opt (the first
    part's optimiser), codegen (the rest, until every part is emitted), link; llvm_cpu (thread CPU
    time of all parts) and parts."""
    t0 = time.perf_counter()
    text, merged = merge_identical_functions(text)
    parts = compile_parts(text) if parts is None else max(1, parts)
    texts = [(t, s if speed_level is None or s is None else min(s, speed_level), c)
             for t, s, c in split_levels(text, parts)]
    # one thread: every module in this one, one after the other; else one thread per module
    rest = texts[1:] if parts > 1 else []
    pending = [_pool(len(rest)).submit(_compile_part, t, speed_level if s is None else s, c)
               for t, s, c in rest]
    ts = time.perf_counter()
    t, s, c = texts[0]
    first = _compile_part(t, speed_level if s is None else s, c)
    results = [first] + [f.result() for f in pending]
    if parts == 1:
        results += [_compile_part(t, speed_level if s is None else s, c) for t, s, c in texts[1:]]
    t3 = time.perf_counter()
    jm = link_object([r.obj for r in results], symbols, "\n".join(r.llvm_ir for r in results))
    jm.timings.update(parse=ts - t0 + first.parse, llvm_opt=first.llvm_opt,
                      codegen=t3 - ts - first.parse - first.llvm_opt,
                      llvm_cpu=sum(r.cpu for r in results), parts=len(texts))
    jm.merged = merged
    return jm


def link_object(obj: bytes | list[bytes], symbols: list[str], llvm_ir: str = "") -> JitModule:
    """Load object code (from `compile_ir` or the disk cache: one image or a list of them) into a
    fresh LLJIT, all images into one library. Symbols registered with `import_later` that the
    images name are resolved first."""
    e = engine()
    t0 = time.perf_counter()
    images = [obj] if isinstance(obj, (bytes, bytearray, memoryview)) else list(obj)
    for name, get_address in list(_lazy_imports.items()):  # made on demand (`import_later`)
        if name not in e.imports and name not in symbols and any(name.encode() in bytes(i) for i in images):
            e.imports[name] = get_address()
    lljit = llvm.create_lljit_compiler()
    builder = llvm.JITLibraryBuilder()
    for image in images:
        builder.add_object_img(image)
    builder.add_current_process()
    for name, address in e.imports.items():
        builder.import_symbol(name, address)
    for s in symbols:
        builder.export_symbol(s)
    with _lock:
        e.count += 1
        tracker = builder.link(lljit, f"tp{e.count}")
    addresses = {s: tracker[s] for s in symbols}
    return JitModule(addresses, llvm_ir, [bytes(i) for i in images], {"link": time.perf_counter() - t0}, lljit, tracker)


_lazy_imports: dict = {}  # name -> a function giving its address (`import_later`)


def import_later(name: str, get_address) -> None:
    """Have `link_object` resolve `name`, in images that name it, to ``get_address()`` (called at
    the first such link: the in-place gemm's generic functions are made in a thread of their own
    meanwhile, `gemm_library.prefetch`)."""
    _lazy_imports.setdefault(name, get_address)


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
