"""Compiler-tool conventions of `tensorplay-ir` (mlir-opt style): `opt` with comma pipelines,
`-` for stdin and `-o FILE` on every subcommand, `--version`, `run MODULE:FUNC`, exit codes."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tensorplay.ir.text import parse_graph

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(HERE, "fixtures", "models.py")
IR = """func @f(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = tp.cos %x : tensor<3xf32>
  %1 = tp.cos %x : tensor<3xf32>
  %2 = tp.mul %0, %1 : tensor<3xf32>
  %3 = tp.log %y : tensor<3xf32>
  return %2
}
"""


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("TENSORPLAY_BACKEND", None)
    return subprocess.run([sys.executable, "-m", "tensorplay.tools.cli", *args], cwd=ROOT, input=stdin,
                          capture_output=True, encoding="utf-8", timeout=300, env=env)


def test_version():
    import tensorplay

    p = cli("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"tensorplay-ir {tensorplay.__version__}"


def test_opt_pipeline_output_parses_and_matches_separate_passes(tmp_path):
    combined = cli("opt", "-", "-p", "simplify.cse,dce", stdin=IR)
    assert combined.returncode == 0, combined.stderr
    step = cli("opt", "-", "-p", "cse", stdin=IR)
    again = cli("opt", "-", "-p", "dce", stdin=step.stdout)
    assert combined.stdout == again.stdout
    g = parse_graph(combined.stdout)
    assert [n.prim.name for n in g.nodes] == ["cos", "mul"]


def test_opt_print_ir_after_all_goes_to_stderr():
    p = cli("opt", "-", "-p", "cse,dce", "--print-ir-after-all", stdin=IR)
    assert p.returncode == 0
    assert p.stderr.count("IR Dump After") == 2
    parse_graph(p.stdout)  # stdout is exactly the final IR


@pytest.mark.parametrize("pipeline, fragment", [("cse,,dce", "empty pass name"), ("no_such_pass", "unknown pass"),
                                                ("batching.batch_graph(in_dims=(0,", "unbalanced")])
def test_opt_bad_pipeline_is_exit_2(pipeline, fragment):
    p = cli("opt", "-", "-p", pipeline, stdin=IR)
    assert p.returncode == 2 and fragment in p.stderr and p.stderr.count("\n") == 1


@pytest.mark.parametrize("command", [["verify"], ["dump"], ["run"], ["opt", "-p", "dce"], ["viz", "-o", "{out}"]])
def test_every_subcommand_reads_stdin(command, tmp_path):
    out = str(tmp_path / "g.svg")
    args = [a.replace("{out}", out) for a in command]
    p = cli(args[0], "-", *args[1:], stdin=IR)
    assert p.returncode == 0, p.stderr
    if command[0] == "viz":
        assert open(out, encoding="utf-8").read().startswith("<svg")


def test_stdin_errors_name_stdin():
    p = cli("verify", "-", stdin="func @f(%x: tensor<3xf32>) -> tensor<3xf32> {\n  return %y\n}\n")
    assert p.returncode == 1 and p.stdout.startswith("<stdin>:2:")
    p = cli("opt", "-", "-p", "dce", stdin="garbage")
    assert p.returncode == 2 and "<stdin>:1:1:" in p.stderr


@pytest.mark.parametrize("command", [["verify", "-"], ["dump", "-"], ["run", "-"], ["opt", "-", "-p", "cse"],
                                     ["list", "passes"]])
def test_every_subcommand_writes_dash_o(command, tmp_path):
    out = tmp_path / "out.txt"
    p = cli(*command, "-o", str(out), stdin=IR)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    expected = cli(*command, stdin=IR).stdout
    text = out.read_text()
    if command[0] == "run":  # timings differ between runs
        text, expected = (t.splitlines()[2:] for t in (text, expected))
    assert text == expected and text


def test_dash_o_into_a_missing_folder_is_exit_2(tmp_path):
    p = cli("verify", "-", "-o", str(tmp_path / "no" / "such" / "file"), stdin=IR)
    assert p.returncode == 2 and "cannot write" in p.stderr


def test_run_module_func_compares_compiled_interpreted_and_eager():
    p = cli("run", f"{MODELS}:mlp", "--arg", "f32[4,3]", "--arg", "f32[3]", "--arg", "f32[3,2]", "--arg", "f32[5,4]")
    assert p.returncode == 0, p.stderr
    assert "output 0 tensor<f32>" in p.stdout and "eager vs interpreter: output 0" in p.stdout
    assert "MISMATCH" not in p.stdout


def test_run_module_func_keeps_constants_and_captures():
    """A dumped file would see the constant and the capture as inputs and run them on random values;
    `run MODULE:FUNC` passes their real values, so all three results agree."""
    p = cli("run", "tests.tools.fixtures.models:with_constants", "--arg", "f32[3]")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count(": ok") == 2


def test_run_module_func_with_a_transform():
    p = cli("run", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "--transform", "grad")
    assert p.returncode == 0 and "tensor<3xf32>" in p.stdout


def test_run_module_func_needs_args_and_ir_files_take_none():
    p = cli("run", f"{MODELS}:loss")
    assert p.returncode == 2 and "--arg" in p.stderr
    p = cli("run", "-", "--arg", "f32[3]", stdin=IR)
    assert p.returncode == 2 and "MODULE:FUNC" in p.stderr
