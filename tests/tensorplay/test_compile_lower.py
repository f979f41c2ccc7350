"""`f.lower(*args)`: the stages of one compiled signature, as jax.jit(f).lower shows them."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.ir.constants import resources
from tensorplay.ir.interpreter import interpret
from tensorplay.ir.text import parse_graph


def test_stages_describe_the_code_the_calls_run():
    w = tp.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))

    @tp.compile
    def f(x):
        return tp.tanh(x @ w).sum(0)

    x = tp.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 6)
    low = f.lower(x)
    assert low.graph is f.get_graph(x).graph and len(low.graph.inputs) == 2  # x, then the captured w
    assert {"dot_general", "tanh", "reduce_sum"} <= {n.prim.name for n in low.graph.nodes}
    text = low.as_text()
    assert "tp.constant" in text and text.splitlines()[0].count("%arg") == 1
    standalone = parse_graph(text, resources([low.closed.self_contained_graph()]))
    np.testing.assert_allclose(interpret(standalone, [x.numpy()])[0], f(x).numpy(), rtol=1e-6)
    assert low.kernels and all("name" in k for k in low.kernels)
    assert "define" in low.llvm_ir and low.asm.strip()
    exe = low.compile()
    np.testing.assert_allclose(exe(x.numpy(), w.numpy())[0], f(x).numpy(), rtol=1e-6)
    traces = f.trace_count
    f(x)
    assert f.trace_count == traces  # lowering traced the signature the calls use
    assert "inputs" in repr(low)


def test_each_signature_lowers_separately():
    f = tp.compile(lambda x: x * 2)
    assert f.lower(tp.ones(3)).graph.inputs[0].type.shape == (3,)
    assert f.lower(tp.ones(2, 5)).graph.inputs[0].type.shape == (2, 5)


def test_compiled_stages_need_the_compiled_backend(monkeypatch):
    monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")
    low = tp.compile(lambda x: x + 1).lower(tp.ones(3))
    assert low.as_text().startswith("func @")
    with pytest.raises(RuntimeError, match="compiled backend"):
        low.llvm_ir
