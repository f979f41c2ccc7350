"""Known failures: op/shape patterns the default campaign avoids while a bug elsewhere in
tensorplay stands. Each names the bug and its minimised reproducer in ``known_failures/``;
``--include-known`` fuzzes them anyway. Delete an entry once its reproducer passes.

>>> sorted(KNOWN_FAILURES)
[]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class KnownFailure:
    op: str
    matches: Callable      # (operand arrays, step) -> bool
    bug: str
    reproducer: str


KNOWN_FAILURES: dict[str, KnownFailure] = {}  # none stands today


def known_failure(name: str, op: str, operands, step) -> bool:
    """Whether known failure `name` covers applying `op` to `operands` in `step`."""
    k = KNOWN_FAILURES[name]
    return k.op == op and bool(k.matches(operands, step))
