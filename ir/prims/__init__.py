"""Every primitive of the IR, declared once with all of its rules.

Importing this package fills `ir.primitive.REGISTRY`.
"""
from . import elementwise, shape, reduce, linalg, random, constant, sort, decompositions, control  # noqa: F401
from . import control_ad, custom  # noqa: F401  (AD rules of control flow; custom derivatives and checkpoint)
