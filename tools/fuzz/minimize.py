"""Delta debugging (ddmin) of a failing program: the smallest op list, inputs and layouts that
still fail the same check the same way.

>>> from tensorplay.tools.fuzz.program import generate
>>> p = generate(3)
>>> small = minimise(p, lambda q: "sqrt" in q.ops())
>>> small.ops()
['sqrt']
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from .program import Invalid, Program, evaluate, rebuild


def _still_fails(fails: Callable[[Program], bool], p: Program) -> bool:
    try:
        evaluate(p)
    except Invalid:
        return False
    return fails(p)


def minimise(p: Program, fails: Callable[[Program], bool], *, seconds: float = 30.0) -> Program:
    """A smaller program on which `fails` still holds (`fails(p)` is assumed true).

    ddmin over the steps (chunks of the op list, then single steps), then each input's layout
    made contiguous, then extra outputs dropped; candidates that leave the fuzzer's domain
    (`program.Invalid`) do not count as failing. Stops improving after `seconds`.
    """
    deadline = time.monotonic() + seconds
    keep = list(range(len(p.steps)))
    chunks = 2
    while len(keep) >= 1 and time.monotonic() < deadline:
        size = max(1, len(keep) // chunks)
        parts = [keep[i:i + size] for i in range(0, len(keep), size)]
        for part in parts:
            rest = [i for i in keep if i not in part]
            if _still_fails(fails, rebuild(p, rest)):
                keep = rest
                chunks = max(chunks - 1, 2)
                break
        else:
            if size == 1:
                break
            chunks = min(len(keep), chunks * 2)
    best = rebuild(p, keep)
    for i, inp in enumerate(best.inputs):
        if inp.layout == "contig" or time.monotonic() > deadline:
            continue
        inputs = list(best.inputs)
        inputs[i] = replace(inp, layout="contig")
        trial = replace(best, inputs=tuple(inputs))
        if _still_fails(fails, trial):
            best = trial
    for out in best.outputs[:-1]:
        trial = replace(best, outputs=tuple(o for o in best.outputs if o != out))
        if time.monotonic() < deadline and _still_fails(fails, trial):
            best = trial
    return rebuild(best, list(range(len(best.steps))))  # drop inputs nothing reads any more
