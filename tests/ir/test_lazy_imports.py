"""Expensive optional modules load only when needed: ml_dtypes (bfloat16's numpy dtype, ~1 s to
import) and, for a disk-cache hit, the LLVM side of the backend. Each check runs in a fresh
interpreter (the test process has long since imported everything)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

HAVE_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None


def run(code: str, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, **(env or {})))
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_does_not_load_ml_dtypes():
    got = run("import json, sys, tensorplay as tp, tensorplay.codegen\n"
              "print(json.dumps({'loaded': 'ml_dtypes' in sys.modules}))")
    assert got == {"loaded": False}


def test_absent_ml_dtypes_means_no_bfloat16():
    # sys.modules[name] = None makes both find_spec and import see the package as absent
    got = run("import sys; sys.modules['ml_dtypes'] = None\n"
              "import json, tensorplay as tp\nfrom tensorplay.ir import dtypes\n"
              "try:\n    tp.bfloat16\n    msg = None\nexcept AttributeError as e:\n    msg = str(e)\n"
              "print(json.dumps({'none': dtypes.bfloat16 is None, 'msg': msg,"
              " 'low': [d.name for d in dtypes.LOW_FLOATS]}))")
    assert got["none"] and "ml_dtypes" in got["msg"] and got["low"] == ["float16"]


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason="bfloat16 needs ml_dtypes")
def test_bfloat16_dtype_loads_ml_dtypes_on_first_use():
    got = run("import json, sys, numpy as np, tensorplay as tp\n"
              "before = 'ml_dtypes' in sys.modules\n"
              "t = tp.arange(4, dtype=tp.float32).to(tp.bfloat16) * 3\n"
              "import ml_dtypes\n"
              "print(json.dumps({'before': before, 'after': 'ml_dtypes' in sys.modules,"
              " 'np': t.numpy().dtype == np.dtype(ml_dtypes.bfloat16), 'v': t.float().tolist()}))")
    assert got == {"before": False, "after": True, "np": True, "v": [0.0, 3.0, 6.0, 9.0]}


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason="bfloat16 needs ml_dtypes")
@pytest.mark.parametrize("make", ["tp.tensor(a)", "tp.from_numpy(a)", "tp.as_tensor(a)"])
def test_bfloat16_arrays_made_before_first_use_are_recognised(make):
    # the user imports ml_dtypes (or jax does) after tensorplay, then hands over an array of it
    got = run("import json, numpy as np, tensorplay as tp, ml_dtypes\n"
              "a = np.array([1.5, -2.0, 0.0], ml_dtypes.bfloat16)\n"
              f"t = {make}\n"
              "print(json.dumps({'dtype': str(t.dtype), 'v': (t + 1).float().tolist()}))")
    assert got == {"dtype": "tensorplay.bfloat16", "v": [2.5, -1.0, 1.0]}


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason="bfloat16 needs ml_dtypes")
def test_ml_dtypes_imported_first_registers_bfloat16_at_import():
    got = run("import json, numpy as np, ml_dtypes\nimport tensorplay as tp\n"
              "from tensorplay.ops._common import dtype_of\n"
              "t = tp.ones(2, dtype=tp.bfloat16)\n"
              "print(json.dumps({'known': np.dtype(ml_dtypes.bfloat16) in tp.ir.dtypes.BY_NUMPY,"
              " 'of': str(dtype_of(t))}))")
    assert got == {"known": True, "of": "tensorplay.bfloat16"}
