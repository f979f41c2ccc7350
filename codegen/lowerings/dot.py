"""The `dot_general` lowering: a kernel of its own (cblas gemm when a BLAS is found,
otherwise an explicit multiply-add loop nest; both emitters are in `codegen/dot.py`)."""
from __future__ import annotations

from ..dot import emit_dot
from ..registry import Lowering, register

register("dot_general", Lowering("kernel", emit_dot))
