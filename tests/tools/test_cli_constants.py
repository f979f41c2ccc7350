"""A dumped function with constants inside runs through the CLI and reproduces the function."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

from tensorplay.ir.interpreter import interpret
from tensorplay.ir.text import parse_graph

MODULE = textwrap.dedent("""
    import numpy as np
    import tensorplay as tp

    W = tp.tensor(np.linspace(-1.0, 1.0, 6 * 40, dtype=np.float32).reshape(6, 40))  # captured, elided

    def f(x):
        scale = tp.tensor([0.5, 2.0, -1.0, 1.0, 3.0, 0.25])   # made inside: a small constant
        labels = tp.tensor([[1], [0], [2]])                    # an int64 constant
        h = tp.tanh((x * scale) @ W)
        return h.sum() + x[labels[:, 0]].sum() + tp.eye(6)[2] @ x.sum(0)
""")


def cli(cwd, *args):
    env = dict(os.environ, PYTHONPATH=str(cwd))
    env.pop("TENSORPLAY_BACKEND", None)
    return subprocess.run([sys.executable, "-m", "tensorplay.tools.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


def test_dump_run_verify_with_constants(tmp_path):
    (tmp_path / "consts_model.py").write_text(MODULE)
    ir_file = tmp_path / "f.tpir"
    p = cli(tmp_path, "dump", "consts_model:f", "--arg", "f32[3,6]", "-o", str(ir_file))
    assert p.returncode == 0, p.stderr
    text = ir_file.read_text()
    body = text[text.index("func @"):]
    assert "tp.constant" in body and "dense<[0.5, 2.0, -1.0, 1.0, 3.0, 0.25]> : tensor<6xf32>" in body
    assert "dense_resource<c_" in body and "xi64>} : tensor<" in body
    assert body.split("\n")[0].count("%arg") == 1  # only the argument: no anonymous capture inputs
    side = tmp_path / "f.npz"
    assert side.exists()

    for sub in (["run", str(ir_file)], ["verify", str(ir_file)]):
        p = cli(tmp_path, *sub)
        assert p.returncode == 0, (sub, p.stdout, p.stderr)

    sys.path.insert(0, str(tmp_path))
    try:
        import consts_model
    finally:
        sys.path.remove(str(tmp_path))
    import tensorplay as tp

    with np.load(side) as data:
        graph = parse_graph(body.rsplit("}", 1)[0] + "}", {k: data[k] for k in data.files})
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    np.testing.assert_allclose(interpret(graph, [x])[0], consts_model.f(tp.tensor(x)).numpy(), rtol=1e-5)

    side.rename(tmp_path / "elsewhere.npz")
    p = cli(tmp_path, "run", str(ir_file))
    assert p.returncode == 2 and "side file" in p.stderr
    p = cli(tmp_path, "run", str(ir_file), "--resources", str(tmp_path / "elsewhere.npz"))
    assert p.returncode == 0, p.stderr


def test_dump_to_stdout_says_where_elided_constants_go(tmp_path):
    (tmp_path / "consts_model.py").write_text(MODULE)
    p = cli(tmp_path, "dump", "consts_model:f", "--arg", "f32[3,6]")
    assert p.returncode == 0 and "dense_resource<c_" in p.stdout
    assert "--resources" in p.stderr


RANDOM_MODULE = textwrap.dedent("""
    import tensorplay as tp

    def f(x):
        return x + tp.rand(3)          # draws from a captured random key
""")


def test_a_captured_random_key_is_marked_in_the_dump_and_run_draws_one(tmp_path):
    (tmp_path / "random_model.py").write_text(RANDOM_MODULE)
    ir_file = tmp_path / "f.tpir"
    p = cli(tmp_path, "dump", "random_model:f", "--arg", "f32[3]", "-o", str(ir_file))
    assert p.returncode == 0, p.stderr
    header = next(line for line in ir_file.read_text().splitlines() if line.startswith("func @"))
    assert header.startswith('func @f(%arg0: tensor<3xf32>, %arg1: tensor<2xi64> {tp.capture = "random_key"})')
    graph = parse_graph(ir_file.read_text())
    assert [graph.arg_attrs.get(v) for v in graph.inputs] == [None, {"tp.capture": "random_key"}]
    p = cli(tmp_path, "run", str(ir_file))
    assert p.returncode == 0, (p.stdout, p.stderr)
