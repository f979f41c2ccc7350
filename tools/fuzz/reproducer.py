"""Reproducer files: a standalone Python script per failure (needs only numpy and tensorplay).

The script holds the check code (`tools.fuzz.harness`, verbatim), the program in tensorplay
and numpy, and its inputs as literals; ``python FILE`` exits 1 while the failure stands and 0
once it is fixed.

>>> from tensorplay.tools.fuzz.program import generate
>>> text = reproducer_source(generate(1), "eager", "example")
>>> compile(text, "repro.py", "exec") is not None
True
"""
from __future__ import annotations

import inspect
import os
import pprint

import numpy as np

from . import harness
from .program import Program, describe


def _array_literal(a: np.ndarray) -> str:
    return f"np.array({a.tolist()!r}, dtype={str(a.dtype)!r}).reshape({tuple(a.shape)!r})"


def _case_literal(case: dict) -> str:
    inputs = ",\n        ".join(f"({_array_literal(np.asarray(d))}, {lay!r})" for d, lay in case["inputs"])
    rest = {k: v for k, v in case.items() if k != "inputs"}
    return "CASE = {\n    \"inputs\": [\n        " + inputs + ",\n    ],\n" + "".join(
        f"    {k!r}: {pprint.pformat(v)},\n" for k, v in rest.items()) + "}\n"


def reproducer_source(p: Program, check: str, message: str) -> str:
    """The text of a standalone script reproducing `check` failing on `p`."""
    name, _, which = check.partition(":")
    case = p.case(**({"backend": which} if which else {}))
    header = (f'"""tensorplay fuzz reproducer: check {check!r} on program seed {p.seed}.\n\n'
              f"{describe(p)}\n\nFailure: {message.strip()}\n\n"
              f"Run: python THIS_FILE  (exit status 1 while the failure stands, 0 once fixed)\n"
              f'"""\n')
    body = inspect.getsource(harness).split('"""', 2)[2]  # the harness without its docstring
    return "\n".join([header, body.strip("\n"), "", "", "# " + "-" * 94, "# The program", "# " + "-" * 94,
                      p.source(), "", _case_literal(case), "",
                      'if __name__ == "__main__":',
                      "    import sys",
                      "    try:",
                      f"        run_check({name!r}, CASE, program, numpy_program)",
                      "    except Mismatch as e:",
                      '        print(f"MISMATCH: {e}")',
                      "        sys.exit(1)",
                      f'    print("ok: check {check} passes")', ""])


def write_reproducer(p: Program, check: str, message: str, out_dir: str) -> str:
    """Write the reproducer of `check` on `p` into `out_dir`; return its path."""
    os.makedirs(out_dir, exist_ok=True)
    ops = "-".join(dict.fromkeys(p.ops()))[:60] or "noop"
    path = os.path.join(out_dir, f"fuzz_{p.seed}_{check.replace(':', '_')}_{ops}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(reproducer_source(p, check, message))
    return path
