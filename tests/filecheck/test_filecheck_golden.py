"""Golden files: every tests/filecheck/*.tpir runs through `tensorplay-ir` and its output is compared exactly.

A golden file is an IR file with ``//`` comment directives: a RUN line at the
top, the expectations at the bottom (so that updating them never moves the IR,
whose line numbers error messages quote)::

    // RUN: dump %s --pass simplify --stage final     the command line; %s is this file
    func @f(...) { ... }
    // EXIT: 1                                        expected exit status (default 0)
    // CHECK: func @f(%arg0: tensor<3xf32>) -> ...    expected stdout, one line per CHECK, in order
    // CHECK-ERR: tensorplay-ir: error: ...           expected stderr (default: nothing)

The CHECK lines are the *whole* output (no partial matching). In the actual
output the file's path is replaced by ``%s``. Set ``TENSORPLAY_UPDATE_GOLDEN=1``
to rewrite the CHECK lines from the actual output (then review the diff).
"""
from __future__ import annotations

import glob
import os
import shlex
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FILES = sorted(glob.glob(os.path.join(HERE, "*.tpir")))
UPDATE = os.environ.get("TENSORPLAY_UPDATE_GOLDEN") == "1"
DIRECTIVES = ("// RUN:", "// EXIT:", "// CHECK:", "// CHECK-ERR:")


def directives(text: str) -> dict:
    found = {"run": None, "exit": 0, "out": [], "err": []}
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("// RUN:"):
            found["run"] = s[len("// RUN:"):].strip()
        elif s.startswith("// EXIT:"):
            found["exit"] = int(s[len("// EXIT:"):])
        elif s.startswith("// CHECK-ERR:"):
            found["err"].append(_payload(line, "// CHECK-ERR:"))
        elif s.startswith("// CHECK:"):
            found["out"].append(_payload(line, "// CHECK:"))
    return found


def _payload(line: str, tag: str) -> str:
    rest = line.split(tag, 1)[1]
    return rest[1:] if rest.startswith(" ") else rest


def run_golden(path: str) -> tuple[int, list[str], list[str]]:
    with open(path, encoding="utf-8") as f:
        d = directives(f.read())
    assert d["run"], f"{path}: no // RUN: line"
    args = [a.replace("%s", path) for a in shlex.split(d["run"])]
    env = dict(os.environ)
    env.pop("TENSORPLAY_BACKEND", None)
    p = subprocess.run([sys.executable, "-m", "tensorplay.tools.cli", *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, env=env)
    clean = lambda s: [line.rstrip().replace(path, "%s") for line in s.splitlines()]  # noqa: E731
    return p.returncode, clean(p.stdout), clean(p.stderr)


def rewrite(path: str, status: int, out: list[str], err: list[str]) -> None:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    kept = [l for l in lines if not l.strip().startswith(("// CHECK:", "// CHECK-ERR:", "// EXIT:"))]
    while kept and not kept[-1].strip():
        kept.pop()
    # the expectations go last, so rewriting them never moves the IR (whose line numbers errors quote)
    new = ([f"// EXIT: {status}"] if status else []) + [f"// CHECK: {l}".rstrip() for l in out] + \
        [f"// CHECK-ERR: {l}".rstrip() for l in err]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(kept + [""] + new) + "\n")


def test_there_are_golden_files():
    assert len(FILES) >= 10


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(f) for f in FILES])
def test_golden(path):
    status, out, err = run_golden(path)
    if UPDATE:
        rewrite(path, status, out, err)
        return
    with open(path, encoding="utf-8") as f:
        d = directives(f.read())
    assert (status, out, err) == (d["exit"], d["out"], d["err"]), (
        f"{os.path.basename(path)}: output differs from the CHECK lines "
        f"(TENSORPLAY_UPDATE_GOLDEN=1 rewrites them)\n--- stdout ---\n" + "\n".join(out) +
        "\n--- stderr ---\n" + "\n".join(err))


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(f) for f in FILES])
def test_print_parse_is_stable(path):
    """For every golden file that parses: print(parse(text)) is a fixed point of parse-then-print."""
    from tensorplay.ir.text import ParseError, parse_graph, print_graph

    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        g = parse_graph(text)
    except ParseError:
        return  # the error goldens are about exactly that
    printed = print_graph(g)
    again = parse_graph(printed)
    assert print_graph(again) == printed
    assert again.structural_key() == g.structural_key()
