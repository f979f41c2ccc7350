"""Every primitive of the IR, declared once with all of its rules.

Importing this package fills `ir.primitive.REGISTRY`.
"""
from . import elementwise, shape, reduce, linalg, random, control  # noqa: F401
