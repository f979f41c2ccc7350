"""`Executable.asm` re-emits host assembly on demand, also in a process whose target machine was
never built (a disk-cache hit needs no LLVM): that first `engine()` call used to take the JIT lock
inside the lock asm() already held, and hung."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_asm_of_an_executable_before_the_engine_exists():
    script = textwrap.dedent("""
        import numpy as np
        from tensorplay import codegen, ir
        from tensorplay.codegen import jit
        from tensorplay.ir import dtypes as dt
        from tensorplay.ir.types import TensorType
        b = ir.GraphBuilder("asm")
        x = b.add_input(TensorType((5,), dt.float32))
        exe = codegen.compile_graph(b.build([b.emit("sin", x)]))
        jit._engine = None  # as in a process that only loaded cached object code
        text = exe.asm
        assert exe.name in text or "sin" in text or ".text" in text, text[:200]
        np.testing.assert_allclose(exe(np.arange(5, dtype=np.float32))[0], np.sin(np.arange(5)), rtol=1e-6)
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]
