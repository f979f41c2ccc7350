"""Results are bit-identical whatever TENSORPLAY_NUM_THREADS is: large elementwise executables
split their element range over the pool, and every element's code is the same in every chunk
(no reassociation across elements), including the re-run for huge trig arguments; a large full
reduction runs fixed blocks on the pool and combines them in block order (`codegen.threads`). Each thread
count runs in its own process (the pool size is read once); nothing assumes the core count."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import hashlib, sys
    import numpy as np
    from tensorplay import codegen, ir
    from tensorplay.ir import dtypes as dt
    from tensorplay.ir.types import TensorType
    n = (1 << 19) + 77
    rng = np.random.default_rng(3)
    x = rng.standard_normal(n).astype(np.float32) * 10
    x[n // 3] = 1e30
    b = ir.GraphBuilder("threads")
    v = b.add_input(TensorType((n,), dt.float32))
    y = b.add(b.mul(b.sin(v), b.exp(b.tanh(v))), b.log1p(b.abs(v)))
    exe = codegen.compile_graph(b.build([y]))  # one flat elementwise kernel: split over threads
    b = ir.GraphBuilder("reduction")
    v = b.add_input(TensorType((n,), dt.float32))
    red = codegen.compile_graph(b.build([b.emit("reduce_sum", b.cos(v), axes=(0,))]))  # fixed blocks on the pool
    outs = exe(x) + red(x)
    h = hashlib.sha256(b"".join(o.tobytes() for o in outs)).hexdigest()
    print(exe.stats["threads"], red.stats["threads"], h)
""")


def _run(threads: str) -> tuple[int, int, str]:
    env = dict(os.environ, TENSORPLAY_NUM_THREADS=threads)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    if out.returncode:
        pytest.fail(out.stderr[-2000:])
    chunks, red_chunks, digest = out.stdout.split()
    return int(chunks), int(red_chunks), digest


def test_one_and_several_threads_give_the_same_bits():
    one = _run("1")
    several = _run("3")
    assert one[:2] == (1, 1)
    # the range and the reduction's blocks really were split (3 threads requested, whatever the cores)
    assert several[0] > 1 and several[1] > 1
    assert one[2] == several[2]
    assert hashlib.sha256(b"").hexdigest() != one[2]
