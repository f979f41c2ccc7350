"""`tensorplay-ir` end to end, through a subprocess: output, exit codes, and one-line errors on bad input."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join("tests", "tools", "fixtures")
MODELS = os.path.join(FIXTURES, "models.py")
SVG_NS = "{http://www.w3.org/2000/svg}"

GOOD_IR = """// a dense layer
func @layer(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>, %b: tensor<2xf32>) -> tensor<4x2xf32> {
  %0 = tp.dot_general %x, %w {batch = [[], []], contract = [[1], [0]]} : tensor<4x2xf32>
  %1 = tp.broadcast_in_dim %b {broadcast_dimensions = [1], shape = [4, 2]} : tensor<4x2xf32>
  %2 = tp.add %0, %1 : tensor<4x2xf32>
  %3 = tp.tanh %2 : tensor<4x2xf32>
  return %3
}
"""

BAD_IR = """func @bad(%x: tensor<3xf32>, %y: tensor<4xf32>) -> tensor<3xf32> {
  %0 = tp.add %x, %y : tensor<3xf32>
  %1 = tp.sin %0 : tensor<4xf32>
  return %1
}
"""

SYNTAX_IR = """func @s(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = tp.sin %x tensor<3xf32>
  return %0
}
"""

# every dtype, a log (needs positive inputs), integer division, a comparison and a select
MIXED_IR = """func @mixed(%x: tensor<8xf32>, %d: tensor<8xf64>, %i: tensor<8xi32>, %j: tensor<8xi64>, %p: tensor<8xi1>) -> (tensor<8xf32>, tensor<8xf64>, tensor<8xi32>, tensor<8xi64>) {
  %0 = tp.log %x : tensor<8xf32>
  %1 = tp.sqrt %d : tensor<8xf64>
  %2 = tp.div %i, %i : tensor<8xi32>
  %3 = tp.mul %j, %j : tensor<8xi64>
  %4 = tp.select %p, %0, %0 : tensor<8xf32>
  return %4, %1, %2, %3
}
"""


def cli(*args: str, cwd: str = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("TENSORPLAY_BACKEND", None)
    return subprocess.run([sys.executable, "-m", "tensorplay.tools.cli", *args], cwd=cwd, capture_output=True, encoding="utf-8",
                          timeout=timeout, env=env)


def assert_one_line_error(p: subprocess.CompletedProcess, fragment: str = "") -> None:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("tensorplay-ir: error: "), p.stderr
    assert "Traceback" not in p.stderr
    assert fragment in lines[0], (fragment, lines[0])


@pytest.fixture()
def ir_files(tmp_path):
    paths = {}
    for name, text in [("good", GOOD_IR), ("bad", BAD_IR), ("syntax", SYNTAX_IR), ("mixed", MIXED_IR)]:
        path = tmp_path / f"{name}.tpir"
        path.write_text(text)
        paths[name] = str(path)
    return paths


# --- dump ------------------------------------------------------------------------------------------
def test_dump_prints_the_traced_graph_like_make_graph():
    import tensorplay as tp

    p = cli("dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[5,3]")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("// -----// stage 0: traced loss(f32[3], f32[5,3]) //----- //\n")
    from tests.tools.fixtures.models import loss

    expected = str(tp.make_graph(loss, tp.ones(3), tp.ones(5, 3)))
    assert p.stdout.split("\n", 1)[1].strip() == expected


def test_dump_accepts_a_dotted_module_path():
    p = cli("dump", "tests.tools.fixtures.models:two_outputs", "--arg", "f32[4]")
    assert p.returncode == 0, p.stderr
    assert "-> (tensor<4xf32>, tensor<f32>)" in p.stdout


def test_dump_with_vmap_prints_one_stage_per_transform():
    p = cli("dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[8,3]", "--transform", "vmap(in_dims=(None, 0))")
    assert p.returncode == 0, p.stderr
    banners = re.findall(r"^// -----// (.*) //----- //$", p.stdout, re.MULTILINE)
    assert banners == ["stage 0: traced loss(f32[3], f32[3])", "stage 1: after vmap(in_dims=(None, 0))"]
    stage1 = p.stdout.split(banners[1])[1]
    assert "func @loss(%arg0: tensor<3xf32>, %arg1: tensor<8x3xf32>) -> tensor<8xf32>" in stage1


def test_dump_transforms_apply_innermost_first():
    p = cli("dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[8,3]",
            "--transform", "grad", "--transform", "vmap(in_dims=(None, 0))")
    assert p.returncode == 0, p.stderr
    banners = re.findall(r"^// -----// (stage .*) //----- //$", p.stdout, re.MULTILINE)
    assert banners[1:] == ["stage 1: after grad", "stage 2: after vmap(in_dims=(None, 0))"]
    final = p.stdout.split("stage 2: after vmap")[1]
    assert "-> tensor<8x3xf32>" in final  # a batch of gradients with respect to w


def test_dump_print_after_all_shows_the_passes_the_transforms_run():
    p = cli("dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[8,3]", "--transform", "vmap(in_dims=(None, 0))",
            "--print-after-all")
    assert p.returncode == 0, p.stderr
    assert "// -----// stage 1 > pass batching.batch_graph //----- //" in p.stdout


def test_dump_runs_named_passes_on_an_ir_file(ir_files):
    p = cli("dump", ir_files["good"], "--pass", "simplify")
    assert p.returncode == 0, p.stderr
    assert "stage 0: parsed" in p.stdout and "stage 1: after pass simplify.simplify" in p.stdout
    # the parsed graph is printed canonically
    assert "func @layer(%arg0: tensor<4x3xf32>, %arg1: tensor<3x2xf32>, %arg2: tensor<2xf32>)" in p.stdout


def test_dump_transforms_an_ir_file(ir_files):
    p = cli("dump", ir_files["good"], "--transform", "vmap(in_dims=(0, None, None))",
            "--arg", "f32[7,4,3]", "--arg", "f32[3,2]", "--arg", "f32[2]", "--stage", "final")
    assert p.returncode == 0, p.stderr
    assert "stage 1: after vmap" in p.stdout and "stage 0" not in p.stdout
    assert "-> tensor<7x4x2xf32>" in p.stdout


def test_dump_stats_llvm_and_asm(ir_files):
    p = cli("dump", ir_files["good"], "--stats", "--llvm", "--asm")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "// -----// optimised LLVM IR //----- //" in out and "define " in out
    assert "// -----// host assembly //----- //" in out
    asm = out.split("host assembly //----- //", 1)[1].split("// -----// stats", 1)[0]
    assert re.search(r"\bret[ql]?\b", asm)
    stats = out.split("// -----// stats //----- //", 1)[1]
    assert re.search(r"^\s+0\s+parsed .*\s3\s+4\s+1\s", stats, re.MULTILINE)  # inputs, nodes, outputs
    assert re.search(r"compile @layer: \d+ kernels after fusion of 4 nodes", stats)
    for phase in ("tracing", "LLVM optimisation", "machine code", "JIT link"):
        assert phase in stats


# --- run -------------------------------------------------------------------------------------------
def test_run_compares_compiled_and_interpreted(ir_files):
    p = cli("run", ir_files["good"], "--seed", "3")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "seed 3" in p.stdout
    assert re.search(r"output 0 tensor<4x2xf32>: max abs diff \S+, max rel diff \S+: ok", p.stdout)


def test_run_handles_every_dtype_and_keeps_logs_finite(ir_files):
    p = cli("run", ir_files["mixed"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count(": ok") == 4
    assert "nan" not in p.stdout


def test_run_fails_beyond_tolerance(tmp_path):
    # transcendentals over many elements: the compiled polynomials and numpy differ in the last bits somewhere
    path = tmp_path / "exp.tpir"
    path.write_text("func @e(%x: tensor<4096xf32>) -> tensor<4096xf32> {\n"
                    "  %0 = tp.exp %x : tensor<4096xf32>\n"
                    "  %1 = tp.sin %0 : tensor<4096xf32>\n"
                    "  %2 = tp.tanh %x : tensor<4096xf32>\n"
                    "  %3 = tp.add %1, %2 : tensor<4096xf32>\n"
                    "  return %3\n}\n")
    p = cli("run", str(path), "--rtol", "0", "--atol", "0")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "MISMATCH" in p.stdout and "differ beyond tolerance" in p.stderr


# --- verify ----------------------------------------------------------------------------------------
def test_verify_valid_file(ir_files):
    p = cli("verify", ir_files["good"])
    assert p.returncode == 0
    assert p.stdout.strip() == f"{ir_files['good']}: ok: @layer, 3 inputs, 4 nodes, 1 outputs"


def test_verify_reports_every_type_error_with_position(ir_files):
    p = cli("verify", "--no-source", ir_files["bad"])
    assert p.returncode == 1
    f = ir_files["bad"]
    assert p.stdout.splitlines() == [
        f"{f}:2:8: error: add: operand shapes (3,), (4,) must be equal",
        f"{f}:3:20: error: result type tensor<4xf32> does not match the type tensor<3xf32> derived by tp.sin",
        f"{f}:4:10: error: result 0 %1 has type tensor<4xf32>, but the signature declares tensor<3xf32>",
    ]


def test_verify_syntax_error_quotes_the_line(ir_files):
    p = cli("verify", ir_files["syntax"])
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    assert lines[0] == f"{ir_files['syntax']}:2:18: error: expected ':' and the result type, found 'tensor<3xf32>'"
    assert lines[1] == "    %0 = tp.sin %x tensor<3xf32>"
    assert lines[2] == "  " + " " * 17 + "^"


def test_verify_several_files(ir_files):
    p = cli("verify", "-q", ir_files["good"], ir_files["bad"])
    assert p.returncode == 1
    assert all(line.startswith(ir_files["bad"]) or line.startswith(" ") for line in p.stdout.splitlines())


# --- viz -------------------------------------------------------------------------------------------
def test_viz_svg_has_one_node_element_per_graph_node(tmp_path, ir_files):
    out = tmp_path / "g.svg"
    p = cli("viz", ir_files["good"], "-o", str(out))
    assert p.returncode == 0, p.stderr
    root = ET.parse(out).getroot()
    assert root.tag == f"{SVG_NS}svg"
    ops = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "node op"]
    assert len(ops) == 4
    assert all(g.get("data-kernel") for g in ops)  # coloured by fused kernel
    labels = [t.text for t in root.iter(f"{SVG_NS}text")]
    assert "4x2xf32" in labels and "3x2xf32" in labels  # edges labelled with shapes


def test_viz_of_a_function_after_a_transform_html_and_dot(tmp_path):
    html = tmp_path / "g.html"
    dot = tmp_path / "g.dot"
    common = [f"{MODELS}:mlp", "--arg", "f32[4,8]", "--arg", "f32[8]", "--arg", "f32[8,3]", "--arg", "f32[5,4]"]
    p = cli("viz", *common, "--stage", "0", "-o", str(html))
    assert p.returncode == 0, p.stderr
    text = html.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text and "<script>" in text
    p = cli("viz", *common, "--colour-by", "family", "-o", str(dot))
    assert p.returncode == 0, p.stderr
    text = dot.read_text(encoding="utf-8")
    assert text.startswith('digraph "mlp"') and text.count(" -> ") >= 17


# --- list and entry points -------------------------------------------------------------------------
def test_list_transforms_and_passes():
    p = cli("list", "transforms")
    assert p.returncode == 0 and p.stdout.split()[0] == "vmap"
    p = cli("list", "passes")
    assert p.returncode == 0 and "batching.batch_graph" in p.stdout


def test_python_dash_m_tools_and_console_script_entry_point(ir_files):
    p = subprocess.run([sys.executable, "-m", "tools", "verify", "-q", ir_files["good"]], cwd=ROOT,
                       capture_output=True, encoding="utf-8", timeout=60)
    assert p.returncode == 0, p.stderr
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    assert scripts["tensorplay-ir"] == "tensorplay.tools.cli:main"
    from tensorplay.tools.cli import main

    assert main(["verify", "-q", ir_files["good"]]) == 0


def test_help_exits_zero():
    p = cli("--help")
    assert p.returncode == 0 and "dump" in p.stdout and "viz" in p.stdout
    p = cli("dump", "--help")
    assert p.returncode == 0 and "--print-after-all" in p.stdout


# --- bad input: one line on stderr, exit status 2 --------------------------------------------------
BAD_INPUT = [
    (["dump", "no_such_module_xyz:f"], "no module named 'no_such_module_xyz'"),
    (["dump", f"{MODELS}:no_such_function", "--arg", "f32[3]"], "has no function 'no_such_function'"),
    (["dump", f"{MODELS}:NOT_CALLABLE"], "not a function"),
    (["dump", f"{FIXTURES}/broken.py:f"], "RuntimeError: this module is broken on purpose"),
    (["dump", f"{FIXTURES}/missing.py:f"], "no such file"),
    (["dump", "just_a_name"], "expected MODULE:FUNC"),
    (["dump", f"{MODELS}:loss", "--arg", "f32[3"], "malformed shape spec 'f32[3'"),
    (["dump", f"{MODELS}:loss", "--arg", "f33[3]"], "unknown element type 'f33'"),
    (["dump", f"{MODELS}:loss", "--arg", "f32[-1]"], "malformed shape spec"),
    (["dump", f"{MODELS}:loss", "--arg", "[3,4]"], "malformed shape spec"),
    (["dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "--transform", "vmapp"],
     "unknown transform 'vmapp'"),
    (["dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "--transform", "vmap(in_dim=0)"],
     "has no option 'in_dim'"),
    (["dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "--transform", "vmap(in_dims=(0,"],
     "malformed transform spec"),
    (["dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "--transform", "vmap(0)"],
     "must be given by keyword"),
    (["dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "--transform", "grad(argnums=x+1)"],
     "must be a Python literal"),
    (["dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "--transform", "vmap(in_dims=(None, 5))"],
     "out of range"),
    (["dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "--pass", "no_such_pass"],
     "unknown pass 'no_such_pass'"),
    (["dump", f"{MODELS}:shape_error", "--arg", "f32[3]"], "ValueError"),
    (["dump", f"{MODELS}:python_control_flow", "--arg", "f32[3]"], "Error"),
    (["dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "--stage", "7"], "out of range"),
    (["dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "--stage", "last"], "--stage"),
    (["dump", "missing_file.tpir"], "no such file: missing_file.tpir"),
    (["run", "missing_file.tpir"], "no such file: missing_file.tpir"),
    (["verify", "missing_file.tpir"], "no such file: missing_file.tpir"),
    (["viz", "missing_file.tpir", "-o", "x.svg"], "no such file: missing_file.tpir"),
    (["viz", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "-o", "graph.png"], "use a .svg, .html or .dot"),
    (["viz", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]"], "required: -o/--output"),
    (["dump"], "required: target"),
    ([], "required: COMMAND"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["run", "tests"], "is a directory"),
    (["run", os.path.join("tests", "filecheck", "verify_ok.tpir"), "--atol", "-1"], "--atol must be a non-negative"),
    (["dump", os.path.join("tests", "filecheck", "verify_ok.tpir"), "--arg", "f32[9]"], "does not match the inputs"),
]


@pytest.mark.parametrize("args,fragment", BAD_INPUT, ids=[" ".join(a)[:60] for a, _ in BAD_INPUT])
def test_bad_input_is_one_line_and_exit_2(args, fragment):
    assert_one_line_error(cli(*args), fragment)


@pytest.mark.parametrize("which", ["syntax", "bad"])
@pytest.mark.parametrize("command", ["dump", "run", "viz"])
def test_malformed_ir_file_is_one_line_and_exit_2(command, which, ir_files, tmp_path):
    extra = ["-o", str(tmp_path / "g.svg")] if command == "viz" else []
    p = cli(command, ir_files[which], *extra)
    line = {"syntax": ":2:18: expected ':'", "bad": ":2:8: add: operand shapes"}[which]
    assert_one_line_error(p, ir_files[which] + line)


def test_transform_spec_is_never_evaluated(tmp_path):
    marker = tmp_path / "pwned"
    spec = f"vmap(in_dims=__import__('os').system('touch {marker}'))"
    p = cli("dump", f"{MODELS}:loss", "--arg", "f32[3]", "--arg", "f32[3]", "--transform", spec)
    assert_one_line_error(p, "must be a Python literal")
    assert not marker.exists()


@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs /usr/bin/chromium")
def test_html_opens_in_headless_chromium_without_script_errors(tmp_path, ir_files):
    out = tmp_path / "g.html"
    assert cli("viz", ir_files["good"], "-o", str(out)).returncode == 0
    p = subprocess.run(["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                        "--enable-logging=stderr", "--v=0", out.as_uri()], capture_output=True, encoding="utf-8", errors="replace",
                       timeout=120)
    assert 'data-ready="1"' in p.stdout, p.stderr[-2000:]
    assert "Uncaught" not in p.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_html_script_runs_against_a_minimal_dom(tmp_path, ir_files):
    from tests.tools.test_viz_drawing import run_script_in_node

    out = tmp_path / "g.html"
    assert cli("viz", ir_files["good"], "-o", str(out)).returncode == 0
    run_script_in_node(out.read_text(encoding="utf-8"))


def test_dump_stats_counts_merged_functions(tmp_path):
    from tensorplay.ir import GraphBuilder, TensorType, float32
    from tensorplay.ir.printer import print_graph

    b = GraphBuilder("twins")  # two fused reductions with the same code: compiled once
    x, y = b.add_input(TensorType((6, 5), float32)), b.add_input(TensorType((6, 5), float32))
    s1, s2 = b.emit("reduce_sum", b.tanh(x), axes=(1,)), b.emit("reduce_sum", b.tanh(y), axes=(1,))
    path = tmp_path / "twins.tpir"
    path.write_text(print_graph(b.build([s1, s2, b.add(s1, s2)])))
    p = cli("dump", str(path), "--stats")
    assert p.returncode == 0, p.stderr
    stats = p.stdout.split("// -----// stats //----- //", 1)[1]
    assert re.search(r"^\s+merged_functions: 1$", stats, re.MULTILINE), stats
