"""Every ```python block in docs/ runs; the pages document every public API and every primitive.

Blocks of one page share a namespace and run in order (a page reads as one
program). Blocks fenced as ```text are not run. A failure names the page, the
block and its first line number.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import traceback

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.MULTILINE | re.DOTALL)


def pages() -> list[str]:
    found = []
    for folder, _, files in os.walk(DOCS):
        for name in files:
            if name.endswith(".md"):
                found.append(os.path.relpath(os.path.join(folder, name), ROOT))
    return sorted(found)


def code_blocks(text: str) -> list[tuple[str, int, str]]:
    """(language, first line number of the code, code) for each fenced block of a Markdown page."""
    blocks = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start("body")) + 1
        body = m.group("body")
        indent = m.group("indent")
        if indent:
            body = "\n".join(l[len(indent):] if l.startswith(indent) else l for l in body.split("\n"))
        blocks.append((m.group("lang").lower(), line, body))
    return blocks


def test_there_are_pages():
    names = set(pages())
    for required in ["docs/index.md", "docs/api.md", "docs/ir.md", "docs/passes-and-backend.md", "docs/cli.md",
                     "docs/walkthrough.md", "docs/tutorials/per-sample-gradients.md",
                     "docs/tutorials/ensembling.md", "docs/tutorials/jacobians-hessians.md",
                     "docs/tutorials/compile.md"]:
        assert required in names


@pytest.mark.parametrize("page", pages())
def test_fences_are_labelled(page):
    """Every fence says what it is: python (run) or text/shell/... (not run)."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        text = f.read()
    unlabelled = [line for lang, line, _ in code_blocks(text) if not lang]
    assert not unlabelled, f"{page}: unlabelled code fences at lines {unlabelled}; use ```python or ```text"


@pytest.mark.parametrize("page", [p for p in pages() if "```python" in open(os.path.join(ROOT, p)).read()])
def test_page_runs(page, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("TENSORPLAY_BACKEND", raising=False)
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        text = f.read()
    namespace: dict = {"__name__": f"docs_{os.path.basename(page)[:-3].replace('-', '_')}"}
    for i, (lang, line, code) in enumerate(code_blocks(text)):
        if lang not in ("python", "py"):
            continue
        out = io.StringIO()
        try:
            compiled = compile(code, f"{page}:{line}", "exec")
            with contextlib.redirect_stdout(out):
                exec(compiled, namespace)
        except Exception as e:  # noqa: BLE001 - report which block failed and where
            tb = traceback.format_exc(limit=-3)
            pytest.fail(f"{page}: python block {i} (line {line}) raised {type(e).__name__}: {e}\n{tb}\n"
                        f"--- output so far ---\n{out.getvalue()[-2000:]}", pytrace=False)


def test_api_page_documents_every_public_function():
    import tensorplay.func as tf

    with open(os.path.join(DOCS, "api.md"), encoding="utf-8") as f:
        text = f.read()
    headings = set(re.findall(r"^### (\w+)\s*$", text, re.MULTILINE))
    missing = sorted(set(tf.__all__) - headings)
    assert not missing, f"docs/api.md has no section for: {missing}"
    blocks = code_blocks(text)
    for name in tf.__all__:  # each section has a runnable example that calls the function
        section = text.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
        runnable = [code for lang, _, code in code_blocks(section) if lang == "python"]
        assert any(re.search(rf"\b{name}\(", code) for code in runnable), f"docs/api.md: {name} has no python example"
    assert blocks


def test_ir_page_lists_every_primitive():
    from tensorplay import ir

    from tensorplay.tools.cli_doctable import BEGIN, END, primitive_table

    with open(os.path.join(DOCS, "ir.md"), encoding="utf-8") as f:
        text = f.read()
    assert BEGIN in text and END in text, "docs/ir.md lost its primitive table markers"
    table = text[text.index(BEGIN):text.index(END) + len(END)]
    listed = set(re.findall(r"^\| `tp\.(\w+)` \|", table, re.MULTILINE))
    registered = {p.name for p in ir.all_primitives()}
    missing, stale = sorted(registered - listed), sorted(listed - registered)
    hint = "regenerate it: python -m tensorplay.tools.cli list prims --update-doc docs/ir.md"
    assert not missing, f"docs/ir.md does not list the primitives {missing}; {hint}"
    assert not stale, f"docs/ir.md lists primitives that no longer exist: {stale}; {hint}"
    assert table == primitive_table(), f"the primitive table of docs/ir.md is out of date; {hint}"


def test_ops_page_matches_the_registry():
    from tensorplay.tools.op_table import BEGIN, END, op_table

    with open(os.path.join(DOCS, "ops.md"), encoding="utf-8") as f:
        text = f.read()
    assert BEGIN in text and END in text, "docs/ops.md lost its op table markers"
    table = text[text.index(BEGIN):text.index(END) + len(END)]
    hint = "regenerate it: tensorplay-ir list ops --update-doc docs/ops.md"
    assert table == op_table(), f"the op table of docs/ops.md is out of date; {hint}"


def test_links_between_pages_resolve():
    broken = []
    for page in pages():
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            text = f.read()
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", text):
            if target.startswith(("http://", "https://")):
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(os.path.join(ROOT, page)), target))
            if not os.path.isfile(path):
                broken.append(f"{page} -> {target}")
    assert not broken, f"broken links: {broken}"


def test_index_links_every_page_and_the_benchmarks():
    with open(os.path.join(DOCS, "index.md"), encoding="utf-8") as f:
        text = f.read()
    linked = {os.path.normpath(os.path.join("docs", t)) for t in re.findall(r"\]\(([^)#\s]+\.md)", text)}
    required = ["api.md", "nn-and-optim.md", "coming-from-torch-func.md", "coming-from-jax.md", "performance.md",
                "limitations.md", "walkthrough.md", "ir.md", "passes-and-backend.md", "cli.md", "fuzzing.md"]
    missing = sorted(p for p in required if os.path.join("docs", p) not in linked)
    assert not missing, f"docs/index.md does not link {missing}"
    assert os.path.normpath("tools/bench/README.md") in linked
