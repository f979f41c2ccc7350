"""The errors of misusing a transform, typed so that ported torch.func code keeps catching them.

torch.func raises RuntimeError for a bad `argnums`, an output of the wrong structure, or
cotangents/tangents that do not match; tensorplay raises ValueError/TypeError there (what the
problem is), as these subclasses that are also RuntimeError (what torch code catches).

>>> import tensorplay as tp
>>> from tensorplay.func import grad
>>> try:
...     grad(lambda x: x, argnums=2)(tp.ones(()))
... except RuntimeError as e:  # a torch.func port's except clause
...     print(type(e).__name__, isinstance(e, ValueError))
FuncValueError True
"""
from __future__ import annotations

__all__ = ["FuncValueError", "FuncTypeError"]


class FuncValueError(ValueError, RuntimeError):
    """A transform was called with a bad value (argnums, structure, shapes): a ValueError and a RuntimeError."""


class FuncTypeError(TypeError, RuntimeError):
    """A transform was called with, or its function returned, the wrong kind of object: also a RuntimeError."""
