"""Every primitive of the IR, declared once with all of its rules.

Importing this package fills `ir.primitive.REGISTRY`.
"""
from . import elementwise, shape, reduce, linalg, random, constant, sort, decompositions  # noqa: F401
