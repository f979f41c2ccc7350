"""A primitive is one declaration: its knowledge sits on the `Primitive`, with frozen rule signatures.

These tests read the registry (and, for the proof primitives, the source tree): a primitive that
is declared without its family, its doc, or with a rule of another shape fails here, by name.
"""
from __future__ import annotations

import inspect
import os
import re

import pytest

from tensorplay import ir
from tensorplay.ir.primitive import FAMILIES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FROZEN = {  # rule -> its positional parameters (everything else is a keyword attribute)
    "batch": 3,      # (ctx, values, dims, **attrs)
    "jvp": 3,        # (ctx, primals, tangents, **attrs)
    "transpose": 3,  # (ctx, ct, operands, **attrs)
}


def _positional(fn) -> int:
    params = inspect.signature(fn).parameters.values()
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


@pytest.mark.parametrize("name", sorted(ir.REGISTRY))
def test_rules_have_the_frozen_signatures(name):
    prim = ir.get_primitive(name)
    for rule, n in FROZEN.items():
        fn = getattr(prim, rule)
        if fn is not None:
            assert _positional(fn) == n, f"{name}.{rule} takes {_positional(fn)} positional arguments, not {n}"


@pytest.mark.parametrize("name", sorted(ir.REGISTRY))
def test_every_primitive_declares_its_family_doc_and_batching(name):
    prim = ir.get_primitive(name)
    assert prim.family in FAMILIES, f"{name}: family {prim.family!r}"
    assert prim.doc and "\n" not in prim.doc.strip(), f"{name}: needs a one-line doc"
    assert prim.batch is not None, f"{name}: no batching rule"
    if prim.differentiable:
        assert prim.jvp is not None, f"{name}: differentiable but no JVP rule"
    if prim.roles is not None:
        assert prim.num_operands in (None, len(prim.roles)), f"{name}: one role per operand"


def test_elementwise_primitives_fold():
    missing = [p.name for p in ir.all_primitives() if p.family in ("elementwise", "compare", "logical")
               and p.fold is None]
    assert not missing, f"elementwise primitives without constant folding: {missing}"


@pytest.mark.parametrize("name", ["asinh", "acosh", "atanh", "cbrt", "hypot"])
def test_a_new_primitive_lives_in_three_files(name):
    """The declaration (ir/), the lowering (codegen/) and the op table row (tensorplay/): no more."""
    word = re.compile(rf"\b{name}\b")
    files = []
    for top in ("ir", "codegen", "tensorplay", "tools"):
        for folder, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
            for f in names:
                path = os.path.join(folder, f)
                try:
                    with open(path, encoding="utf-8") as fh:
                        if word.search(fh.read()):
                            files.append(os.path.relpath(path, ROOT))
                except (UnicodeDecodeError, OSError):
                    continue
    assert len(files) <= 3, f"{name} is named in {len(files)} files: {files}"
