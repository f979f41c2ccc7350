"""Known failures: op/shape patterns the default campaign avoids while a bug elsewhere in
tensorplay stands. Each names the bug and its minimised reproducer in ``known_failures/``;
``--include-known`` fuzzes them anyway. Delete an entry once its reproducer passes.

>>> sorted(KNOWN_FAILURES)
['norm-over-empty-dim']
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


def _reduces_empty(operands, step) -> bool:
    x = np.asarray(operands[0])
    return x.ndim > 0 and step.d is not None and x.shape[step.d] == 0


KNOWN_FAILURES: dict[str, KnownFailure] = {
    "norm-over-empty-dim": KnownFailure(
        "norm", _reduces_empty,
        "jvp of tp.norm over an empty dimension is NaN where finite differences (and torch) give 0: the "
        "sqrt JVP divides by the zero norm without a zero mask (issue 11, 'Derivatives at zero'; ir/prims AD rules)",
        "known_failures/fuzz_968_jvp_norm.py"),
}


def known_failure(name: str, op: str, operands, step) -> bool:
    """Whether known failure `name` covers applying `op` to `operands` in `step`."""
    k = KNOWN_FAILURES[name]
    return k.op == op and bool(k.matches(operands, step))
