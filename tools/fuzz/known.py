"""Known failures: op/shape patterns the default campaign avoids while a bug elsewhere in
tensorplay stands. Each names the bug and its minimised reproducer in ``known_failures/``;
``--include-known`` fuzzes them anyway. Delete an entry once its reproducer passes.

>>> sorted(KNOWN_FAILURES)
['norm-over-empty-dim', 'repeat-aliases-under-trace', 'tile-aliases-under-trace']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class KnownFailure:
    op: str
    matches: Callable      # (operand arrays, step) -> bool
    bug: str
    reproducer: str


def _always(operands, step) -> bool:
    return True


def _reduces_empty(operands, step) -> bool:
    x = np.asarray(operands[0])
    return x.ndim > 0 and step.d is not None and x.shape[step.d] == 0


KNOWN_FAILURES: dict[str, KnownFailure] = {
    "norm-over-empty-dim": KnownFailure(
        "norm", _reduces_empty,
        "jvp of tp.norm over an empty dimension is NaN where finite differences (and torch) give 0: the "
        "sqrt JVP divides by the zero norm without a zero mask (issue 11, 'Derivatives at zero'; ir/prims AD rules)",
        "known_failures/fuzz_968_jvp_norm.py"),
    "repeat-aliases-under-trace": KnownFailure(
        "repeat_imul", _always,
        "x.repeat(1, ...) aliases x under a trace (tp.compile, vmap, grad), so an in-place write to the "
        "repeat writes the caller's tensor; eager copies (issue 11, 'Aliasing under a trace'; tensorplay/ops/shape.py "
        "_fresh). Also fuzz_222_interpreter_repeat_imul.py: the interpreter returns the doubled input",
        "known_failures/fuzz_288_unchanged_repeat_imul.py"),
    "tile-aliases-under-trace": KnownFailure(
        "tile_iadd", _always,
        "tp.tile(x, (1,)*ndim) aliases x under a trace: add_ on it changes the caller's x, and on an expanded x "
        "it raises the overlap error where eager works (issue 11, 'Aliasing under a trace'). Also "
        "fuzz_262_compiled_tile_iadd.py (the crash)",
        "known_failures/fuzz_287_unchanged_tile_iadd.py"),
}


def known_failure(name: str, op: str, operands, step) -> bool:
    """Whether known failure `name` covers applying `op` to `operands` in `step`."""
    k = KNOWN_FAILURES[name]
    return k.op == op and bool(k.matches(operands, step))
