"""A seeded random-program fuzzer for tensorplay.

Each program is a short random composition of public ``tp.`` ops (`ops`) on inputs of random
shapes (0-d, size-1, empty, broadcasting) and layouts (contiguous, transposed, strided,
expanded), in float32, float64, int32 or int64 (`program`). Every program is checked
(`harness`): eager vs numpy, ``tp.compile`` natively and through the interpreter vs eager,
grad/jvp/vjp vs float64 central differences, vmap vs loop-and-stack, and that the caller's
tensors are unchanged. Failures are minimised by delta debugging (`minimize`) into standalone
reproducer scripts (`reproducer`). ``python -m tensorplay.tools.fuzz --help`` runs a campaign.

>>> from tensorplay.tools.fuzz import run_campaign
>>> run_campaign(seed=0, programs=3, seconds=60).line()
'fuzz: 3 programs, 24 checks, 0 mismatches, 0 crashes'
"""
from .campaign import Failure, Summary, run_campaign
from .program import Program, generate

__all__ = ["run_campaign", "Summary", "Failure", "Program", "generate"]
