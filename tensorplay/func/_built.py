"""Transform wrappers kept on the Python function they wrap, so that ``grad(f)(x)`` written in a
loop (as torch.func users write it) builds the wrapper of ``grad(f)`` once per function.

A wrapper depends only on the function and the transform's parameters, and it calls the function
anew every time (a changed global, closure cell or captured tensor is seen as before), so one
built earlier for the same function and parameters is the same wrapper. Only plain Python
functions (`types.FunctionType`) keep them, in their ``__dict__`` under ``_tp_built``, keyed by
parameters the caller has checked to be of the exact types that key them apart (``argnums=0`` and
``argnums=False`` must not share an entry: the second is an error). The entry records the id of
the function it belongs to, so a copy of the ``__dict__`` (``functools.wraps`` makes one on a
user's decorator) is not taken for the decorator's own. At most `LIMIT` wrappers per function.

Lifetime: a transform wrapper already holds its function and is freed by the cycle collector
(it refers to itself), so keeping it on the function frees both together.

>>> from tensorplay.func import grad
>>> def f(x):
...     return (x * x).sum()
>>> grad(f) is grad(f), grad(f) is grad(f, 0, True)
(True, False)
"""
from __future__ import annotations

from typing import Callable

_FunctionType = type(lambda: None)
ATTR = "_tp_built"
LIMIT = 8


def lookup(func, key: tuple | None) -> Callable | None:
    """The wrapper remembered on `func` for `key`, or None (always None for the key None: parameters
    that are not keyed)."""
    if key is None or func.__class__ is not _FunctionType:
        return None
    got = func.__dict__.get(ATTR)
    if got is None or got[0] != id(func):
        return None
    return got[1].get(key)


def remember(func, key: tuple | None, wrapper: Callable) -> Callable:
    """`wrapper`, remembered on `func` for `key` (when `func` is a plain Python function and `key`
    is not None)."""
    if key is not None and func.__class__ is _FunctionType:
        d = func.__dict__
        got = d.get(ATTR)
        if got is None or got[0] != id(func):
            got = d[ATTR] = (id(func), {})
        if len(got[1]) >= LIMIT:
            got[1].clear()
        got[1][key] = wrapper
    return wrapper


def int_argnums(argnums) -> bool:
    """Whether `argnums` is an int or a tuple of ints (exactly: not bools), the keyable forms."""
    c = argnums.__class__
    if c is int:
        return True
    if c is tuple:
        for a in argnums:
            if a.__class__ is not int:
                return False
        return True
    return False
