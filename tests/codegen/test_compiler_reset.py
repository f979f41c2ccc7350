"""`tp.compiler.reset()` clears every in-memory cache: a `tp.compile` function traces and
compiles again, plain transforms re-run their pipelines, the codegen cache is empty, and the
results stay right. Registered hooks run."""
from __future__ import annotations

import numpy as np

import tensorplay as tp
from tensorplay import codegen
from tensorplay.func import grad


def test_reset_forgets_traces_and_executables(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    f = tp.compile(lambda x: tp.sin(x) * 3 + 1)
    x = tp.tensor(np.linspace(0, 1, 9, dtype=np.float32))
    want = np.sin(x.numpy()) * np.float32(3) + np.float32(1)
    np.testing.assert_allclose(f(x).numpy(), want, rtol=2e-6)
    traces, compiles = f.trace_count, codegen.compile_count()
    f(x)
    assert (f.trace_count, codegen.compile_count()) == (traces, compiles)  # cached
    tp.compiler.reset()
    assert len(codegen.cache._entries) == 0
    np.testing.assert_allclose(f(x).numpy(), want, rtol=2e-6)
    assert f.trace_count == traces + 1
    assert codegen.compile_count() == compiles + 1


def test_reset_then_plain_grad_is_right(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_DISK_CACHE", "0")
    g = grad(lambda x: (x * x).sum())
    x = tp.tensor(np.arange(4.0, dtype=np.float32))
    np.testing.assert_array_equal(g(x).numpy(), 2 * x.numpy())
    tp.compiler.reset()
    before = codegen.compile_count()
    np.testing.assert_array_equal(g(x).numpy(), 2 * x.numpy())
    assert codegen.compile_count() == before + 1  # compiled again, not served from memory


def test_registered_hooks_run():
    calls = []
    hook = tp.compiler.register_reset(lambda: calls.append(1))
    tp.compiler.register_reset(hook)  # registering twice runs it once
    tp.compiler.reset()
    assert calls == [1]
    tp.compiler._hooks.remove(hook)
