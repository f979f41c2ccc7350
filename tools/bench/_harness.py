"""Shared benchmark harness: peers, an interleaved median-of-N timer, result checks, tables.

Every `bench_*.py` script (except the codegen-only `bench_elementwise.py`) builds a
`Suite`: for each *case* (a problem size) it registers *implementations* (tensorplay
eager / transformed / compiled, numpy, jax.jit, torch, ...), checks that their results
agree with a reference implementation, then times them and prints one table with the
median, the best sample, the spread and the ratio to the reference column (jax.jit by
default: ``2.0x`` means twice as slow as jax.jit, ``0.5x`` twice as fast).

Timing on a shared, noisy 2-core machine:

- every implementation is called `warmup` times first (jit compilation, page faults, caches);
- the number of calls per sample is calibrated so that one sample lasts about `sample_s`
  (so microsecond-scale calls are not dominated by timer resolution);
- samples are taken **round-robin** across the implementations of a case (sample 1 of A, of
  B, of C, then sample 2 of A, ...), so a burst of load from another process hits all of
  them alike instead of one;
- the garbage collector is disabled inside a sample (as `timeit` does);
- reported: median per call, min per call, and the interquartile range relative to the
  median (a rough noise indicator).

Peers (jax, torch) are optional: `import_jax()` / `import_torch()` return None when the
package is not importable (or `--no-peers` is given), and the suite simply leaves the
column out. Implementations that raise or disagree with the reference are reported as
ERROR / WRONG with the message, are not timed, and make the script exit with status 1.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

# Threads. By default every library is pinned to ONE thread: on a shared 2-core machine a
# multi-threaded gemm or OpenMP loop whose second thread is descheduled by another process
# stalls for a scheduler quantum, which made medians swing 10-50x (IQR > 100%) in trials.
# TP_BENCH_THREADS=N pins to N threads instead; TP_BENCH_THREADS=default leaves every library
# at its own default. Set here: OpenMP through the environment (tensorplay's codegen:
# TENSORPLAY_NUM_THREADS), XLA through XLA_FLAGS (jax is imported later); numpy is already
# imported by then (by the parent package `tensorplay`), so OpenBLAS, torch and the codegen pool
# are pinned at run time in `apply_threads()` (called by `parse`).
_threads_env = os.environ.get("TP_BENCH_THREADS", "1").strip().lower()
THREADS = 0 if _threads_env in ("default", "0", "") else int(_threads_env)
if THREADS:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TENSORPLAY_NUM_THREADS"):
        os.environ[_var] = str(THREADS)
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen="
                               f"{'true' if THREADS > 1 else 'false'} intra_op_parallelism_threads={THREADS}")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:  # `python tools/bench/bench_x.py` from anywhere, without installing
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

_NO_PEERS = False


# --- peers -------------------------------------------------------------------------------------
def import_jax():
    """The `jax` module configured for the CPU, or None when it is not importable or disabled.

    With one thread per library, XLA's flags do not keep its CPU runtime on one core (its worker
    pool still runs parts of a computation concurrently: 1.3 CPU-seconds per second measured on an
    MLP forward), and jax has no setting that does. So its threads are created on one CPU (thread
    affinity is inherited at creation), and `jax_cpu()` names that CPU: the samples of a
    `single_cpu` implementation run with the calling thread pinned there too (`_sample`)."""
    global _JAX_CPU
    if _NO_PEERS:
        return None
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    pin = THREADS == 1 and hasattr(os, "sched_setaffinity") and "jax" not in sys.modules
    before = os.sched_getaffinity(0) if pin else None
    try:
        if pin:
            cpu = min(before)
            os.sched_setaffinity(0, {cpu})
        import jax
        import jax.numpy as jnp
        if pin:  # create the client and its worker threads now, under this affinity
            a = jnp.ones((256, 256), jnp.float32)
            jax.jit(lambda m: jnp.tanh(m @ m).sum())(a).block_until_ready()
            _JAX_CPU = cpu
    except Exception:  # noqa: BLE001 - any import failure means "no peer"
        return None
    finally:
        if pin:
            os.sched_setaffinity(0, before)
    return jax


_JAX_CPU: int | None = None


def jax_cpu() -> int | None:
    """The CPU jax's threads are bound to (None: not bound; see `import_jax`)."""
    return _JAX_CPU


def import_torch():
    """The `torch` module (with torch.func), or None when it is not importable or disabled."""
    if _NO_PEERS:
        return None
    try:
        import torch
        import torch.func  # noqa: F401
    except Exception:  # noqa: BLE001
        return None
    return torch


def _openblas_libs() -> list:
    """ctypes handles of numpy's bundled OpenBLAS (the one tensorplay's codegen calls too)."""
    import ctypes
    import glob
    root = os.path.dirname(np.__file__)
    paths = sorted({p for pat in (os.path.join(root, ".libs", "*openblas*"), os.path.join(root + ".libs", "*openblas*"),
                                  os.path.join(root, ".dylibs", "*openblas*")) for p in glob.glob(pat)})
    libs = []
    for path in paths:
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:
            continue
    return libs


_OPENBLAS_SET = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
                 "openblas_set_num_threads")
_OPENBLAS_GET = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
                 "openblas_get_num_threads")


def _first_symbol(lib, names):
    return next((getattr(lib, n) for n in names if hasattr(lib, n)), None)


def openblas_threads() -> int | None:
    """The thread count numpy's OpenBLAS uses now (None when numpy has no bundled OpenBLAS)."""
    for lib in _openblas_libs():
        get = _first_symbol(lib, _OPENBLAS_GET)
        if get is not None:
            return int(get())
    return None


def _pin_openblas(n: int) -> None:
    # `import tensorplay` (which every bench script does before this module's body runs: it is the
    # parent package) imports numpy, so OpenBLAS has already read OPENBLAS_NUM_THREADS. Without this
    # call it kept its default (the CPU count): its second thread, spinning or descheduled on the shared
    # machine, made every BLAS-bound figure (tp's gemm calls, numpy) 5-50x slower and noisy.
    for lib in _openblas_libs():
        set_threads = _first_symbol(lib, _OPENBLAS_SET)
        if set_threads is not None:
            set_threads(n)


def apply_threads() -> None:
    """Pin OpenBLAS, torch and tensorplay's codegen to TP_BENCH_THREADS threads (no-op when unset)."""
    if not THREADS:
        return
    _pin_openblas(THREADS)
    torch = import_torch()
    if torch is not None:
        torch.set_num_threads(THREADS)
    try:  # TENSORPLAY_NUM_THREADS is read when codegen is imported; it may have been imported already
        import tensorplay.codegen.executable as ce
        ce._THREADS = THREADS  # read when an executable is compiled (`_chunks`) and by its pool
    except ImportError:
        pass


def versions() -> str:
    """One line naming the machine and the versions of everything compared."""
    parts = [f"python {platform.python_version()}", f"numpy {np.__version__}"]
    try:
        import llvmlite
        parts.append(f"llvmlite {llvmlite.__version__}")
    except ImportError:
        pass
    jax = import_jax()
    parts.append(f"jax {jax.__version__}" if jax else "jax: not installed (skipped)")
    torch = import_torch()
    parts.append(f"torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch
                 else "torch: not installed (skipped)")
    blas = openblas_threads()
    if blas is not None:
        parts.append(f"OpenBLAS {blas} threads")
    parts.append(f"{os.cpu_count()} cpus")
    parts.append(f"TP_BENCH_THREADS={THREADS}" if THREADS else "library default threads")
    return ", ".join(parts)


# --- converting results ------------------------------------------------------------------------
def to_numpy(x: Any) -> Any:
    """Nested lists/tuples/dicts of tensorplay / jax / torch / numpy arrays -> the same of numpy arrays."""
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_numpy(v) for v in x]
    if isinstance(x, np.ndarray):
        return x
    mod = type(x).__module__
    if mod.startswith("torch"):
        x = x.detach().cpu()
        return (x.float() if str(x.dtype) == "torch.bfloat16" else x).numpy()  # numpy has no bfloat16
    if hasattr(x, "numpy") and mod.startswith("tensorplay"):
        return x.numpy()
    return np.asarray(x)


def flat_arrays(x: Any) -> list[np.ndarray]:
    x = to_numpy(x)
    if isinstance(x, dict):
        return [a for k in sorted(x) for a in flat_arrays(x[k])]
    if isinstance(x, list):
        return [a for v in x for a in flat_arrays(v)]
    return [np.asarray(x)]


def compare(got: Any, want: Any, rtol: float, atol: float) -> str | None:
    """None when every leaf of `got` matches `want` (shapes equal, |got-want| <= atol + rtol*|want|);
    otherwise a one-line description of the first mismatch."""
    g, w = flat_arrays(got), flat_arrays(want)
    if len(g) != len(w):
        return f"{len(g)} result arrays, expected {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        if a.shape != b.shape:
            return f"result {i}: shape {a.shape}, expected {b.shape}"
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        if not np.all(np.isfinite(a64) == np.isfinite(b64)):
            return f"result {i}: non-finite values differ"
        err = np.abs(a64 - b64)
        bad = err > atol + rtol * np.abs(b64)
        if bad.any():
            j = np.unravel_index(np.argmax(err - rtol * np.abs(b64)), a.shape)
            return (f"result {i} {a.shape}: {int(bad.sum())} of {a.size} elements differ; max abs err "
                    f"{err.max():.3g} (at {tuple(int(t) for t in j)}: {a64[j]:.6g} vs {b64[j]:.6g})")
    return None


# --- timing ------------------------------------------------------------------------------------
@dataclass
class Timing:
    samples: list[float]  # seconds per call, one entry per sample
    number: int           # calls per sample
    cpu: list[float] = field(default_factory=list)  # process CPU seconds per call (all threads)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu) if self.cpu else float("nan")

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def best(self) -> float:
        return min(self.samples)

    @property
    def iqr_rel(self) -> float:
        if not self.median:
            return 0.0  # a phase that took no measurable time (e.g. a cache step that did not run)
        if len(self.samples) < 4:
            return (max(self.samples) - min(self.samples)) / self.median
        q = statistics.quantiles(self.samples, n=4)
        return (q[2] - q[0]) / self.median


def _sample(fn: Callable[[], Any], number: int, cpu: list | None = None, on_cpu: int | None = None) -> float:
    gc_was = gc.isenabled()
    gc.disable()
    before = None
    if on_cpu is not None:  # (per sample, not per call: the syscalls stay out of the timed calls' share)
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {on_cpu})
    try:
        c0 = time.process_time()
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        t = (time.perf_counter() - t0) / number
        if cpu is not None:
            cpu.append((time.process_time() - c0) / number)
        return t
    finally:
        if before is not None:
            os.sched_setaffinity(0, before)
        if gc_was:
            gc.enable()


def calibrate(fn: Callable[[], Any], sample_s: float, max_number: int = 100_000) -> int:
    """Calls per sample so that one sample lasts about `sample_s` seconds (at least 1)."""
    number = 1
    while True:
        t = _sample(fn, number) * number
        if t >= sample_s / 4 or number >= max_number:
            break
        number *= 4 if t < sample_s / 40 else 2
    per_call = t / number
    return max(1, min(max_number, int(sample_s / max(per_call, 1e-9))))


def measure(fns: dict[str, Callable[[], Any]], repeat: int, warmup: int = 1, sample_s: float = 0.02,
            single_cpu: frozenset = frozenset()) -> dict[str, Timing]:
    """Time each callable: `warmup` calls, calibration, then `repeat` samples taken round-robin.
    The samples of the names in `single_cpu` run on jax's CPU (`jax_cpu()`) when it is bound."""
    pinned = {name: _JAX_CPU if name in single_cpu else None for name in fns}
    numbers = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            fn()
        numbers[name] = calibrate(fn, sample_s)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            samples[name].append(_sample(fn, numbers[name], cpu[name], pinned[name]))
    return {name: Timing(samples[name], numbers[name], cpu[name]) for name in fns}


# --- suites and tables -------------------------------------------------------------------------
@dataclass
class Impl:
    name: str
    fn: Callable[[], Any]
    check: bool = True        # compare the result with the reference implementation
    note: str = ""
    single_cpu: bool | None = None  # run on jax's bound CPU (`import_jax`); default: a name starting "jax"

    def __post_init__(self):
        if self.single_cpu is None:
            self.single_cpu = self.name.startswith("jax")


@dataclass
class Row:
    case: str
    impl: str
    timing: Timing | None
    status: str               # "ok", "ERROR: ...", "WRONG: ...", "skipped: ..."
    note: str = ""


@dataclass
class Suite:
    """A table of cases x implementations, timed against `ref` (a column name)."""

    title: str
    ref: str = "jax.jit"
    check_ref: str | None = None  # implementation whose result is the truth (default: `ref`, else first)
    rtol: float = 1e-4
    atol: float = 1e-5
    rows: list[Row] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    unit: str = "ms"
    extra: dict[str, Callable[[str, str, Timing], str]] = field(default_factory=dict)  # extra columns

    def run_case(self, case: str, impls: list[Impl], args: argparse.Namespace,
                 rtol: float | None = None, atol: float | None = None) -> dict[str, Timing]:
        """Check every implementation against the reference, then time the ones that agree."""
        rtol = self.rtol if rtol is None else rtol
        atol = self.atol if atol is None else atol
        results, errors = {}, {}
        for impl in impls:
            try:
                results[impl.name] = to_numpy(impl.fn())
            except Exception as e:  # noqa: BLE001 - reported, never fatal to the suite
                errors[impl.name] = f"ERROR: {type(e).__name__}: {_one_line(str(e))}"
                if args.verbose:
                    traceback.print_exc()
        truth_name = next((n for n in (self.check_ref, self.ref) if n in results), None)
        if truth_name is None:
            truth_name = next(iter(results), None)
        timed = {}
        for impl in impls:
            if impl.name in errors:
                continue
            if impl.check and truth_name is not None and impl.name != truth_name:
                msg = compare(results[impl.name], results[truth_name], rtol, atol)
                if msg is not None:
                    errors[impl.name] = f"WRONG vs {truth_name}: {msg}"
                    continue
            timed[impl.name] = impl.fn
        timings = measure(timed, repeat=args.repeat, warmup=args.warmup, sample_s=args.sample_s,
                          single_cpu=frozenset(i.name for i in impls if i.single_cpu))
        for impl in impls:
            if impl.name in errors:
                self.rows.append(Row(case, impl.name, None, errors[impl.name], impl.note))
                self.failures.append(f"{self.title} [{case}] {impl.name}: {errors[impl.name]}")
            else:
                self.rows.append(Row(case, impl.name, timings[impl.name], "ok", impl.note))
        return timings

    # -- output --
    def _ref_time(self, case: str, cpu: bool = False) -> float | None:
        for r in self.rows:
            if r.case == case and r.impl == self.ref and r.timing is not None:
                t = r.timing.cpu_median if cpu else r.timing.median
                return t if t == t and t > 0 else None
        return None

    def _fmt(self, seconds: float) -> str:
        scale = {"s": 1.0, "ms": 1e3, "us": 1e6}[self.unit]
        v = seconds * scale
        return f"{v:.4g}" if v < 1000 else f"{v:.0f}"

    def table(self, markdown: bool = False) -> str:
        head = ["case", "implementation", f"median {self.unit}", f"min {self.unit}", "iqr", f"cpu {self.unit}",
                f"vs {self.ref}", "cpu vs ref"]
        head += list(self.extra)
        lines = []
        for r in self.rows:
            if r.timing is None:
                lines.append([r.case, r.impl, r.status] + [""] * (len(head) - 3))
                continue
            ref, ref_cpu = self._ref_time(r.case), self._ref_time(r.case, cpu=True)
            phase = r.impl.startswith(" ")  # an indented row is a part of the row above, not an alternative
            cpu = r.timing.cpu_median
            ratio = f"{r.timing.median / ref:.2f}x" if ref and not phase else "-"
            cpu_ratio = f"{cpu / ref_cpu:.2f}x" if ref_cpu and cpu == cpu and not phase else "-"
            cells = [r.case, r.impl + (f" ({r.note})" if r.note else ""), self._fmt(r.timing.median),
                     self._fmt(r.timing.best), f"{100 * r.timing.iqr_rel:.0f}%",
                     self._fmt(cpu) if cpu == cpu else "-", ratio, cpu_ratio]
            cells += [f(r.case, r.impl, r.timing) for f in self.extra.values()]
            lines.append(cells)
        if markdown:
            out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
            out += ["| " + " | ".join(c.replace("|", "/") for c in cells) + " |" for cells in lines]
            return "\n".join(out)
        widths = [max(len(h), *(len(c[i]) for c in lines if len(c) > i and len(c) == len(head)))
                  if lines else len(h) for i, h in enumerate(head)]
        out = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
        prev = None
        for cells in lines:
            if prev is not None and cells[0] != prev:
                out.append("")
            prev = cells[0]
            if len(cells) == len(head) and cells[2] and not cells[2].startswith(("ERROR", "WRONG", "skipped")):
                out.append("  ".join(c.ljust(w) for c, w in zip(cells, widths)))
            else:
                out.append("  ".join([cells[0].ljust(widths[0]), cells[1].ljust(widths[1]), cells[2]]))
        return "\n".join(out)

    def as_json(self) -> dict:
        return {"title": self.title, "ref": self.ref, "unit": self.unit,
                "rows": [{"case": r.case, "impl": r.impl, "status": r.status,
                          "median_s": r.timing.median if r.timing else None,
                          "min_s": r.timing.best if r.timing else None,
                          "cpu_s": r.timing.cpu_median if r.timing else None,
                          "samples": len(r.timing.samples) if r.timing else 0,
                          "calls_per_sample": r.timing.number if r.timing else 0} for r in self.rows]}


def _one_line(s: str, limit: int = 300) -> str:
    s = " ".join(s.split())
    return s if len(s) <= limit else s[:limit] + "..."


# --- command line ------------------------------------------------------------------------------
def parser(description: str, repeat: int = 15) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes and 3 samples: checks that the script works (used by the smoke test)")
    ap.add_argument("--repeat", type=int, default=None, help=f"samples per implementation (default {repeat})")
    ap.add_argument("--warmup", type=int, default=2, help="untimed calls before calibration")
    ap.add_argument("--sample-ms", type=float, default=None, help="target length of one sample (default 20 ms)")
    ap.add_argument("--no-peers", action="store_true", help="do not import jax / torch")
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    ap.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failing implementations")
    ap.set_defaults(_default_repeat=repeat)
    return ap


def parse(ap: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    global _NO_PEERS
    args = ap.parse_args(argv)
    _NO_PEERS = args.no_peers
    if args.repeat is None:
        args.repeat = 3 if args.quick else args._default_repeat
    if args.sample_ms is None:
        args.sample_ms = 2.0 if args.quick else 20.0
    if args.quick:
        args.warmup = min(args.warmup, 1)
    args.sample_s = args.sample_ms / 1e3
    apply_threads()
    return args


def report(suites: list[Suite], args: argparse.Namespace, notes: list[str] = ()) -> int:
    """Print the tables (and notes), write JSON if asked; exit status 1 if anything failed."""
    for s in suites:
        print(f"\n## {s.title}\n" if args.markdown else f"\n== {s.title} ==")
        print(s.table(markdown=args.markdown))
    for n in notes:
        print(("\n" if args.markdown else "note: ") + n)
    failures = [f for s in suites for f in s.failures]
    if failures:
        print("\nFAILURES:")
        for f in failures:
            print("  " + f)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"versions": versions(), "suites": [s.as_json() for s in suites]}, fh, indent=1)
    return 1 if failures else 0


def header(title: str, args: argparse.Namespace) -> None:
    print(f"# {title}")
    print(f"# {versions()}")
    print(f"# {args.repeat} samples of ~{args.sample_ms:g} ms per implementation, round-robin; "
          f"median / min per call{'; QUICK (tiny sizes, not meaningful)' if args.quick else ''}")
