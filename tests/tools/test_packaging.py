"""Installed beside user code: ir/, codegen/ and tools/ live under the tensorplay namespace.

A user's own `ir.py`, `codegen/` or `tools/` next to their script must not shadow the library,
and a backend that fails to import is an error, never a silent switch to the interpreter.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import numpy as np
import pytest

import tensorplay as tp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDERS = {"tensorplay": "tensorplay", "ir": "tensorplay.ir", "codegen": "tensorplay.codegen",
           "tools": "tensorplay.tools"}


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_every_package_folder_is_installed_under_the_namespace():
    setuptools_cfg = _pyproject()["tool"]["setuptools"]
    listed = set(setuptools_cfg["packages"])
    assert setuptools_cfg["package-dir"] == {v: k for k, v in FOLDERS.items()}
    found = set()
    for folder, package in FOLDERS.items():
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            if "__init__.py" in files:
                rel = os.path.relpath(dirpath, os.path.join(ROOT, folder))
                found.add(package if rel == "." else package + "." + rel.replace(os.sep, "."))
    assert found == listed, f"pyproject.toml [tool.setuptools] packages: missing {sorted(found - listed)}, " \
                            f"stale {sorted(listed - found)}"


def test_no_generic_top_level_names_are_imported():
    import tensorplay.codegen
    import tensorplay.ir
    import tensorplay.tools.cli  # noqa: F401

    for name in ("ir", "codegen", "tools"):
        module = sys.modules.get(name)
        assert module is None or not (getattr(module, "__file__", None) or "").startswith(ROOT), name


@pytest.fixture
def shadowed_dir(tmp_path):
    """A user's folder holding its own `ir.py`, `codegen/` and `tools/` packages that fail on import."""
    (tmp_path / "ir.py").write_text("raise ImportError('the user ir.py was imported')\n")
    for pkg in ("codegen", "tools"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text(f"raise ImportError('the user {pkg}/ was imported')\n")
    return tmp_path


def _run(args, cwd, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TENSORPLAY_BACKEND")}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300, env=env, **kw)


def test_quickstart_runs_beside_user_modules(shadowed_dir):
    script = shadowed_dir / "quickstart.py"
    shutil.copy(os.path.join(ROOT, "examples", "quickstart.py"), script)
    p = _run([sys.executable, str(script)], cwd=shadowed_dir)
    assert p.returncode == 0, p.stderr


def test_compile_runs_native_code_beside_user_modules(shadowed_dir):
    program = textwrap.dedent("""
        import numpy as np
        import tensorplay as tp
        from tensorplay.codegen.executable import Executable

        f = tp.compile(lambda x: tp.sin(x) * 2 + 1)
        x = tp.linspace(-1, 1, 7)
        y = f(x)
        assert np.allclose(y.numpy(), np.sin(x.numpy()) * 2 + 1, atol=1e-6)
        (entry,) = f._cache.values()
        assert isinstance(entry.run, Executable), type(entry.run)
        print("native")
    """)
    p = _run([sys.executable, "-c", program], cwd=shadowed_dir)
    assert p.returncode == 0 and p.stdout.strip() == "native", p.stderr


def test_cli_runs_beside_user_modules(shadowed_dir):
    (shadowed_dir / "model.py").write_text("import tensorplay as tp\n\ndef f(x):\n    return tp.sin(x).sum()\n")
    script = os.path.join(sysconfig.get_path("scripts"), "tensorplay-ir")
    commands = [[sys.executable, "-m", "tensorplay.tools.cli"]]
    if os.path.exists(script):  # the console script of an installed tensorplay
        commands.append([script])
    for cmd in commands:
        p = _run([*cmd, "dump", "model.py:f", "--arg", "f32[3]"], cwd=shadowed_dir)
        assert p.returncode == 0, p.stderr
        assert "tp.sin" in p.stdout and "tp.reduce_sum" in p.stdout


def test_a_backend_that_fails_to_import_is_an_error(monkeypatch):
    from tensorplay import _exec

    graph = tp.make_graph(lambda x: x + 1, tp.ones(2)).graph
    monkeypatch.setenv("TENSORPLAY_BACKEND", "compiled")
    monkeypatch.setitem(sys.modules, "tensorplay.codegen", None)  # the import now raises ImportError
    with pytest.raises(ImportError):
        _exec.executor(graph)
    with pytest.raises(ImportError):
        tp.compile(lambda x: x * 3)(tp.ones(2))
    monkeypatch.setenv("TENSORPLAY_BACKEND", "interpreter")  # asked for: then the interpreter runs
    assert np.array_equal(_exec.execute(graph, [np.ones(2, np.float32)])[0], [2, 2])
