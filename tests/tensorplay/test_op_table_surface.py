"""The user-facing surface, and the op table it comes from.

- `surface.txt` lists every public ``tp.`` name and every Tensor attribute (methods, operators,
  properties). A refactor of how ops are exposed must not lose one: the test fails naming each
  name that disappeared. New names are fine; set ``TENSORPLAY_UPDATE_GOLDEN=1`` to rewrite the
  snapshot from the current surface (then review the diff).
- Every row of the op table (`tensorplay/ops/_table.py`) is ``tp.<name>``, and, as flagged,
  ``Tensor.<name>`` (the same function, so the same docstring) and ``Tensor.<name>_``.
(That a new primitive is named in at most three files -- declaration, lowering, op-table row --
is tests/ir/test_one_place.py.)
"""
from __future__ import annotations

import doctest
import importlib
import inspect
import os
import types

import pytest

import tensorplay as tp
from tensorplay import Tensor
from tensorplay.ops._table import TABLE

HERE = os.path.dirname(os.path.abspath(__file__))
SNAPSHOT = os.path.join(HERE, "surface.txt")
UPDATE = os.environ.get("TENSORPLAY_UPDATE_GOLDEN") == "1"


def surface() -> list[str]:
    """``tp.<name>`` for each public non-module attribute of tensorplay, ``Tensor.<name>`` for each
    attribute Tensor defines or overrides (object's own, untouched, are left out)."""
    names = [f"tp.{n}" for n in dir(tp) if not n.startswith("_") and not isinstance(getattr(tp, n), types.ModuleType)]
    for n in dir(Tensor):
        attr = inspect.getattr_static(Tensor, n)
        if n.startswith("_") and not (n.startswith("__") and n.endswith("__")) and n != "_is_view":
            continue  # private helpers (torch's own `_is_view` is public API)
        if n in ("__dict__", "__weakref__", "__slots__", "__module__", "__doc__", "__annotations__"):
            continue
        if attr is inspect.getattr_static(object, n, None):
            continue
        names.append(f"Tensor.{n}")
    return sorted(names)


def _snapshot() -> list[str]:
    with open(SNAPSHOT, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def test_no_name_of_the_surface_disappears():
    now = surface()
    if UPDATE:
        with open(SNAPSHOT, "w", encoding="utf-8") as f:
            f.write("# tp. names and Tensor attributes (tests/tensorplay/test_op_table_surface.py)\n")
            f.write("\n".join(now) + "\n")
        return
    missing = sorted(set(_snapshot()) - set(now))
    assert not missing, (f"{len(missing)} names of the user-facing surface disappeared: {', '.join(missing)} "
                         f"(if intended, rerun with TENSORPLAY_UPDATE_GOLDEN=1 and review surface.txt)")


def test_the_snapshot_is_not_trivial():
    names = _snapshot()
    assert len(names) > 400
    for name in ("tp.sin", "tp.reshape", "tp.softmax", "tp.zeros", "Tensor.view", "Tensor.__add__", "Tensor.T"):
        assert name in names


def test_surface_sees_a_removed_method(monkeypatch):
    monkeypatch.delattr(Tensor, "flip")
    assert "Tensor.flip" not in surface()


@pytest.mark.parametrize("name", sorted(TABLE))
def test_each_row_is_a_function_and_its_method(name):
    row = TABLE[name]
    doc = inspect.getdoc(row.fn)
    assert doc and doc.strip(), f"{name} has no docstring"
    if row.export:
        assert getattr(tp, name) is row.fn, f"tp.{name} is not the op table's function"
    else:
        assert getattr(tp, name, None) is not row.fn, f"tp.{name} is exported, but its row says it is a method only"
    method = getattr(Tensor, name, None)
    if row.method is True:  # the function itself: one docstring
        assert method is row.fn, f"Tensor.{name} is not tp.{name}"
        assert inspect.getdoc(method) == doc
    elif row.method:  # a method of its own (Tensor.view returns a view): its own docstring
        assert method is row.method, f"Tensor.{name} is not the row's method"
        assert (inspect.getdoc(method) or "").startswith(f"``Tensor.{name}``"), f"Tensor.{name} says what it is"
    else:
        assert method is not row.fn, f"Tensor.{name} exists, but its row says it is a function only"
    if row.inplace:
        assert callable(getattr(Tensor, name + "_", None)), f"Tensor.{name}_ is missing"


def test_the_table_covers_shape_indexing_creation_and_softmax():
    """These ops are exposed from the op table, not by hand in tensorplay/__init__.py and _methods.py."""
    for name in ("reshape", "view", "cat", "diagonal", "index_select", "scatter_add", "zeros", "tensor",
                 "softmax", "log_softmax", "cov", "diagflat", "repeat", "uniform_"):
        assert name in TABLE, name
    assert TABLE["view"].method_fn is Tensor.view is not tp.view
    assert not TABLE["repeat"].export and TABLE["scatter_add"].inplace


@pytest.mark.parametrize("name", ["tensorplay.ops._table", "tensorplay._args", "tensorplay.ops._data"])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0 and result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_the_table_rejects_a_second_row():
    from tensorplay.ops._table import op

    with pytest.raises(ValueError, match="op 'sin' is in the op table twice"):
        op("sin", tp.sin)
