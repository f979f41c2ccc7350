"""The bench harness binds jax's samples to one CPU and always restores the caller's affinity."""
import os

import pytest

from tensorplay.tools.bench import _harness as H

needs_affinity = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity here")


@needs_affinity
def test_pinned_sample_runs_on_that_cpu_and_restores_affinity():
    before = os.sched_getaffinity(0)
    cpu = min(before)
    seen = []
    H._sample(lambda: seen.append(os.sched_getaffinity(0)), 3, [], on_cpu=cpu)
    assert seen == [{cpu}] * 3
    assert os.sched_getaffinity(0) == before


@needs_affinity
def test_affinity_restored_when_the_sample_raises():
    before = os.sched_getaffinity(0)

    def boom():
        raise RuntimeError("x")

    with pytest.raises(RuntimeError):
        H._sample(boom, 1, None, on_cpu=min(before))
    assert os.sched_getaffinity(0) == before


def test_jax_implementations_are_single_cpu_by_default():
    assert H.Impl("jax.jit", lambda: 0).single_cpu
    assert H.Impl("jax eager (no jit)", lambda: 0).single_cpu
    assert not H.Impl("tp.compile", lambda: 0).single_cpu
    assert not H.Impl("jax.jit", lambda: 0, single_cpu=False).single_cpu


@needs_affinity
def test_measure_pins_only_the_single_cpu_names(monkeypatch):
    before = os.sched_getaffinity(0)
    monkeypatch.setattr(H, "_JAX_CPU", min(before))
    seen = {"a": set(), "b": set()}
    fns = {"a": lambda: seen["a"].add(frozenset(os.sched_getaffinity(0))),
           "b": lambda: seen["b"].add(frozenset(os.sched_getaffinity(0)))}
    H.measure(fns, repeat=2, warmup=0, sample_s=0.001, single_cpu=frozenset({"a"}))
    assert frozenset({min(before)}) in seen["a"]
    assert seen["b"] == {frozenset(before)}
    assert os.sched_getaffinity(0) == before
