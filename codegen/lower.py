"""The complete lowering table: `LOWERINGS` (from `codegen.registry`) with every
family module of `codegen.lowerings` imported, so that each primitive has its
lowering. Modules that only declare lowerings import `codegen.registry`; the
scheduler and module builder import this module to see the filled table.
"""
from __future__ import annotations

from . import lowerings  # noqa: F401  (fills LOWERINGS)
from .registry import LOWERINGS, Lowering

__all__ = ["LOWERINGS", "Lowering"]
