"""Lowerings of the counter-based random draws: Philox-4x32 bits per element
(`codegen/philox.py`), expensive expressions that are never recomputed per use."""
from __future__ import annotations

from ..philox import EMITTERS
from .layout import layout

for _name, _emit in EMITTERS.items():
    layout(_name, _emit, cheap=False)
