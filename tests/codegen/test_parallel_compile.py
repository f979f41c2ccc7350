"""A module compiled as several parts in parallel threads (`jit.compile_ir(parts=N)`, `jit.split_module`)
gives the same results, bit for bit, as the same module compiled as one part: each function is
optimised and emitted the same way whichever part it lands in. The thread count is set explicitly
here (never the machine's core count), and nothing is timed."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

from tensorplay import codegen, ir
from tensorplay.codegen import jit
from tensorplay.ir import dtypes as dt
from tensorplay.ir.core import DenseElements
from tensorplay.ir.interpreter import interpret
from tensorplay.ir.types import TensorType

from .control_graphs import random_args, scan_graph

T = TensorType
F32 = dt.float32
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    codegen.clear_cache()
    yield
    codegen.clear_cache()


def _parts(monkeypatch, n: int) -> None:
    """Compile every module as (at most) `n` parts, however short."""
    monkeypatch.setattr(jit, "COMPILE_THREADS", n)
    monkeypatch.setattr(jit, "MIN_PART_LINES", 1)


def _mlp_grad(n: int) -> ir.Graph:
    # dot_general (BLAS or loops), bias adds, tanh and its derivative, column sums: many kernels
    b = ir.GraphBuilder("mlp")
    x = b.add_input(T((n, 6), F32))
    w = b.add_input(T((6, 5), F32))
    c = b.add_input(T((5,), F32))
    z = b.add(b.dot_general(x, w, batch=((), ()), contract=((1,), (0,))),
              b.broadcast_in_dim(c, broadcast_dimensions=(1,), shape=(n, 5)))
    h = b.tanh(z)
    dz = b.sub(b.const(1.0, (n, 5)), b.mul(h, h))
    dw = b.dot_general(x, dz, batch=((), ()), contract=((0,), (0,)))
    return b.build([b.emit("reduce_sum", h, axes=(0, 1)), dw, b.emit("reduce_sum", dz, axes=(0,))])


def _layout(n: int) -> ir.Graph:
    # pad, concatenate, slices, a reduce_max window: the conv/max-pool kernels' shapes, and a constant
    b = ir.GraphBuilder("layout")
    x = b.add_input(T((n, 4), F32))
    p = b.emit("pad", x, low=(1, 0), high=(0, 2), interior=(0, 0), value=0.0)
    k = b.emit("constant", value=DenseElements(np.arange(6 * (n + 1), dtype=np.float32).reshape(n + 1, 6) / 7))
    cat = b.emit("concatenate", p, b.mul(p, k), axis=1)
    return b.build([cat, b.emit("reduce_max", cat, axes=(1,)), b.sin(b.mul(x, b.const(1e7, (n, 4))))])


def _scan() -> ir.Graph:
    return scan_graph(lambda b, w, h, x: [b.tanh(b.add(b.mul(h, w), x)), b.exp(h)],
                      [T((3,), F32)], [T((3,), F32)], [T((5, 3), F32)], length=5)


def _split_reduction() -> ir.Graph:
    # one large full reduction: two entries (blocks, finish) call the same kernel
    b = ir.GraphBuilder("big_sum")
    x = b.add_input(T((1 << 18,), F32))
    return b.build([b.emit("reduce_sum", b.cos(x), axes=(0,))])


GRAPHS = {"mlp_grad_0": lambda: _mlp_grad(0), "mlp_grad_1": lambda: _mlp_grad(1), "mlp_grad_9": lambda: _mlp_grad(9),
          "layout_1": lambda: _layout(1), "layout_6": lambda: _layout(6), "scan": _scan,
          "split_reduction": _split_reduction}


def _args(g: ir.Graph, seed: int) -> list[np.ndarray]:
    args = random_args(g, seed)
    if args and args[0].ndim == 2 and args[0].shape[0] > 1:  # a non-contiguous first input (coerced)
        args[0] = np.asfortranarray(args[0])
    return args


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_two_parts_give_the_bits_of_one(name, monkeypatch, no_disk_cache):
    g = GRAPHS[name]()
    args = _args(g, 1)
    _parts(monkeypatch, 1)
    one = codegen.Executable(g)
    _parts(monkeypatch, 2)
    two = codegen.Executable(g)
    cheap = int(jit.CHEAP_ATTRIBUTE in one.llvm_ir)  # small kernels: one more module (`jit.split_levels`)
    assert one.stats["llvm_parts"] == 1 + cheap and two.stats["llvm_parts"] == 2 + cheap
    got1, got2 = one(*args), two(*args)
    for a, b in zip(got1, got2):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes(), name
    want = interpret(g, [np.ascontiguousarray(a) for a in args])
    for a, w in zip(got2, want):  # and both are right
        np.testing.assert_allclose(a, w, rtol=2e-5, atol=1e-5)
    assert len(two._jit.objects) == 2 + cheap and all(o[:4] == b"\x7fELF" for o in two._jit.objects)
    assert "define internal" not in two.llvm_ir
    asm = two.asm  # every part's assembly, every function labelled once
    for fn in re.findall(r'^define [^\n]*?@"?([\w.]+)"?\(', two.llvm_ir, re.M):
        assert asm.count(f"\n{fn}:") == 1, fn


def test_parts_hold_each_function_once_and_declare_what_they_call():
    text, _ = jit.merge_identical_functions(_module_text(_mlp_grad(4)))
    defined = re.findall(r'^define [^\n]*?@"([^"]+)"\(', text, re.M)
    for n in (1, 2, 3, 50):
        parts = jit.split_module(text, n)
        assert len(parts) == min(n, len(defined))
        names = [re.findall(r'^define [^\n]*?@"([^"]+)"\(', p, re.M) for p in parts]
        assert sorted(sum(names, [])) == sorted(defined)  # each function in exactly one part
        for p, mine in zip(parts, names):
            called = set(re.findall(r'call [^\n]*?@"([^"]+)"\(', p))
            declared = set(re.findall(r'^declare [^\n]*?@"([^"]+)"\(', p, re.M))
            assert called <= set(mine) | declared
            assert "define internal" not in p
    costs = [p.count("\n") for p in jit.split_module(text, 2)]
    assert max(costs) < sum(costs)  # both parts hold work


def _module_text(g: ir.Graph) -> str:
    from tensorplay.codegen.module import build_module, plan_buffers
    from tensorplay.codegen.schedule import normalize, schedule

    g = normalize(g)
    kernels = schedule(g)
    triple, layout = jit.host_triple_and_layout()
    return build_module(g, kernels, plan_buffers(g, kernels), "tp_split", triple, layout)[0]


def test_an_unknown_construct_is_compiled_as_one_part():
    text = 'define internal void @"a"()\n{\nentry:\n  ret void\n}\n$c = comdat any\n'
    assert jit.split_module(text, 2) == [text]


def test_a_split_module_round_trips_through_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORPLAY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TENSORPLAY_DISK_CACHE", raising=False)
    _parts(monkeypatch, 2)
    codegen.clear_cache()
    g = _layout(5)
    args = _args(g, 2)
    first = codegen.Executable(g)
    again = codegen.Executable(g)
    assert first.stats["source"] == "compiled" and again.stats["source"] == "disk cache"
    assert len(again._jit.objects) == 2 + int(jit.CHEAP_ATTRIBUTE in first.llvm_ir)
    for a, b in zip(first(*args), again(*args)):
        np.testing.assert_array_equal(a, b)
    codegen.clear_cache()


def test_threads_compiling_at_once_each_get_their_own_results(monkeypatch, no_disk_cache):
    _parts(monkeypatch, 2)
    graphs = [_mlp_grad(k) for k in range(2, 6)]
    args = [_args(g, k) for k, g in enumerate(graphs)]
    out: dict[int, list] = {}
    errors = []

    def work(k):
        try:
            out[k] = codegen.Executable(graphs[k])(*args[k])
        except BaseException as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(graphs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, g in enumerate(graphs):
        for a, w in zip(out[k], interpret(g, [np.ascontiguousarray(a) for a in args[k]])):
            np.testing.assert_allclose(a, w, rtol=2e-5, atol=1e-5)


def test_registry_kernels_compiled_in_two_parts_match_the_interpreter(tmp_path):
    """The registry's compiled-vs-interpreter test, every module split in two (a plugin sets the
    part count before the tests run)."""
    (tmp_path / "two_parts.py").write_text("from tensorplay.codegen import jit\n"
                                           "jit.COMPILE_THREADS = 2\njit.MIN_PART_LINES = 1\n")
    env = dict(os.environ, TENSORPLAY_DISK_CACHE="0",
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "two_parts", "-p", "no:cacheprovider", "-x",
                        os.path.join(ROOT, "tests", "codegen", "test_prims.py"), "-k", "compiled_matches_interpreter"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert re.search(r"\b[1-9]\d* passed", p.stdout), p.stdout[-1000:]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_compiles_in_parts(monkeypatch, no_disk_cache):
    _parts(monkeypatch, 2)
    g = _mlp_grad(3)
    args = _args(g, 5)
    want = codegen.Executable(g)(*args)  # the parent's compile pool has a thread now
    pid = os.fork()
    if pid == 0:  # the child: its pool must be a new one (the parent's threads are not there)
        code = 1
        try:
            codegen.clear_cache()
            got = codegen.Executable(g)(*args)
            code = 0 if all(a.tobytes() == b.tobytes() for a, b in zip(got, want)) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
