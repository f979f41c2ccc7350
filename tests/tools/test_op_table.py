"""The generated op table: each column follows the registry's rules for the op's primitives."""
import pytest

from tensorplay import ir
from tensorplay.codegen import LOWERINGS
from tensorplay.tools import op_table


@pytest.fixture(scope="module")
def rows():
    return {r.name: r for r in op_table.op_rows()}


def test_elementwise_and_contraction_rows(rows):
    assert rows["sin"].primitives == ("sin",)
    assert (rows["sin"].vmap, rows["sin"].jvp, rows["sin"].vjp, rows["sin"].compiled) == (True, True, True, True)
    assert rows["matmul"].primitives == ("dot_general",)


def test_non_float_results_have_no_derivative_columns(rows):
    for name in ("eq", "lt", "argmax", "bitwise_and"):
        assert rows[name].jvp is None and rows[name].vjp is None, name


def test_columns_follow_the_primitive_rules(rows):
    for r in rows.values():
        used = [ir.get_primitive(p) for p in r.primitives]
        if not used:
            continue
        assert r.vmap == all(p.batch is not None for p in used), r.name
        assert r.compiled == all(p.name in LOWERINGS for p in used), r.name
        if r.jvp is not None:
            assert r.jvp == all(p.jvp is not None or not p.differentiable for p in used), r.name
            assert r.vjp is False or r.jvp, r.name


def test_a_primitive_without_a_batching_rule_shows_in_the_table(monkeypatch):
    sin = ir.get_primitive("sin")
    monkeypatch.setattr(sin, "batch", None)
    (row,) = op_table.op_rows(["sin"])
    assert row.vmap is False and row.jvp is True


def test_utilities_are_not_listed(rows):
    assert "allclose" not in rows and "result_type" not in rows and "einsum" in rows


def test_cli_prints_the_table(capsys):
    from tensorplay.tools.cli import main

    assert main(["list", "ops"]) == 0
    out = capsys.readouterr().out
    assert op_table.BEGIN in out and "| `tp.sin` | `sin` | yes | yes | yes | yes |" in out
