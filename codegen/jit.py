"""The llvmlite binding layer: one MCJIT engine for the process, a target
machine for the host CPU (its name and features), and the O3 pipeline of the
new pass manager with loop and SLP vectorisation.

Loop unrolling is kept but capped (`UNROLL_OPTIONS`): with O3's defaults, LLVM fully
unrolls every constant-trip-count loop of a small shape, and unrolling was half of the
compile time (MLP 784-256-256-10 loss+grad: 217-248 -> 165-174 ms to compile; tiny MLP
4-8-8-2 loss+grad: 218-242 -> 156-179 ms; hessian d=16: 400-429 -> 127-138 ms), while
turning it off entirely slows column reductions 1.8x and small loop-nest products 1.4x.
Interleaving stays on: without it a vectorised reduction has one accumulator and runs
1.7x slower. (Measured 2026-11-29; tools/bench/README.md, "Notes: compiler performance work".)

Every compiled graph is one LLVM module added to the shared engine; its symbols
are made unique by the caller (`module_prefix`).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import llvmlite.binding as llvm

_lock = threading.Lock()
_engine: "_Engine | None" = None


# LLVM command-line options, read when the pass pipeline runs: at most 4 iterations are unrolled
# fully, and the unrolled size limit is 100 instead of O3's 300. They are process-wide: another
# llvmlite user in the same process (numba) would see them too.
FULL_UNROLL_MAX_COUNT = 4
UNROLL_OPTIONS = ("-unroll-threshold=100", f"-unroll-full-max-count={FULL_UNROLL_MAX_COUNT}")


def reassociation_is_per_element(reduced_trip_counts) -> bool:
    """Whether a `reassoc` accumulation over loops of these trip counts keeps one fixed order per
    output element. Yes while one of them survives full unrolling: LLVM then vectorises that loop,
    in an order that depends on the reduced extents alone. If all are unrolled away, the loop over
    output elements is vectorised instead and its scalar remainder may be SLP-vectorised as a
    horizontal reduction in another order: the result would depend on the element's position."""
    return any(n > FULL_UNROLL_MAX_COUNT for n in reduced_trip_counts)


class _Engine:
    def __init__(self) -> None:
        for option in UNROLL_OPTIONS:
            llvm.set_option("tensorplay", option)
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.tm = target.create_target_machine(cpu=self.cpu, features=self.features, opt=3,
                                               codemodel="jitdefault")
        backing = llvm.parse_assembly("")
        backing.triple = self.tm.triple
        self.ee = llvm.create_mcjit_compiler(backing, self.tm)
        self.count = 0

    def pipeline(self):
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pto.loop_unrolling = True
        pto.loop_interleaving = True
        return pto


def engine() -> _Engine:
    """The process-wide JIT engine (created on first use)."""
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


@dataclass
class JitModule:
    """A module living in the engine: function addresses and its optimised IR."""

    addresses: dict[str, int]
    llvm_ir: str
    timings: dict[str, float] = field(default_factory=dict)
    _module: object = None

    def asm(self) -> str:
        """Host assembly of the optimised module (re-emitted on demand)."""
        mod = llvm.parse_assembly(self.llvm_ir)
        return engine().tm.emit_assembly(mod)

    def release(self) -> None:
        """Remove the module from the engine; its function addresses become invalid."""
        if self._module is not None:
            with _lock:
                engine().ee.remove_module(self._module)
            self._module = None


def compile_ir(text: str, symbols: list[str]) -> JitModule:
    """Parse, verify, optimise (O3 + vectorisers) and JIT `text`; return the addresses of `symbols`."""
    e = engine()
    timings = {}
    t0 = time.perf_counter()
    mod = llvm.parse_assembly(text)
    mod.verify()
    t1 = time.perf_counter()
    timings["parse"] = t1 - t0
    pb = llvm.create_pass_builder(e.tm, e.pipeline())
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)
    t2 = time.perf_counter()
    timings["llvm_opt"] = t2 - t1
    with _lock:
        e.ee.add_module(mod)
        e.ee.finalize_object()
        addresses = {s: e.ee.get_function_address(s) for s in symbols}
    timings["codegen"] = time.perf_counter() - t2
    return JitModule(addresses, str(mod), timings, mod)


def load_library(path: str) -> None:
    """Make the symbols of the shared library at `path` resolvable from JIT-compiled code."""
    llvm.load_library_permanently(path)


def symbol_address(name: str) -> int:
    """Address of a process symbol known to the JIT linker (0 if absent)."""
    engine()
    return llvm.address_of_symbol(name) or 0


def next_module_id() -> int:
    e = engine()
    with _lock:
        e.count += 1
        return e.count
