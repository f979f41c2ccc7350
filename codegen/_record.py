"""`record`: the few dataclass features the codegen's small data classes use, without `exec`.

`dataclasses.dataclass` writes `__init__`, `__repr__` and `__eq__` as source text and compiles it:
0.3-1 ms per class, and the 18 classes a cold compile imports cost ~6-13 ms of its first call. A
record's methods are closures over the field list instead (built in ~10 us); construction is a
little slower (a few microseconds), which these classes (a handful of objects per compile) never
notice.

Fields are the class's annotations (a subclass appends its own to its bases'), in order; a class
attribute of the same name is its default, and `Factory(fn)` a default made per instance. `frozen`
objects refuse assignment (`dataclasses.FrozenInstanceError`) and hash by their fields; others
compare by their fields and are unhashable, as dataclasses are.

>>> @record(frozen=True)
... class P:
...     x: int
...     y: int = 2
>>> @record
... class Q(P):
...     tags: list = Factory(list)
>>> p = P(1); p, p == P(1, 2), hash(p) == hash(P(1)), Q(1).tags is not Q(1).tags, Q(0, tags=[1])
(P(x=1, y=2), True, True, True, Q(x=0, y=2, tags=[1]))
>>> P(y=3)
Traceback (most recent call last):
...
TypeError: P() missing the argument 'x'
"""
from __future__ import annotations

from dataclasses import FrozenInstanceError

class Factory:
    """A field default made per instance: ``Factory(list)``."""

    __slots__ = ("make",)

    def __init__(self, make) -> None:
        self.make = make


def record(cls=None, *, frozen: bool = False):
    """Class decorator (``@record`` or ``@record(frozen=True)``): see the module docstring. A
    ``__post_init__(self)`` runs after the fields are set."""
    if cls is None:
        return lambda c: record(c, frozen=frozen)
    names: list[str] = []
    defaults: dict = {}  # name -> (False, value) or (True, factory)
    for base in reversed(cls.__mro__[1:]):
        for name in getattr(base, "__record_fields__", ()):
            if name not in names:
                names.append(name)
        defaults.update(getattr(base, "__record_defaults__", {}))
    for name in cls.__dict__.get("__annotations__", {}):
        if name not in names:
            names.append(name)
        if name in cls.__dict__:
            value = cls.__dict__[name]
            defaults[name] = (True, value.make) if isinstance(value, Factory) else (False, value)
            delattr(cls, name)
    cls.__record_fields__ = tuple(names)
    cls.__record_defaults__ = defaults
    post = getattr(cls, "__post_init__", None)
    count = len(names)
    set_ = object.__setattr__
    qual = cls.__name__

    def __init__(self, *args, **kw):
        if len(args) > count:
            raise TypeError(f"{qual}() takes {count} arguments, got {len(args)}")
        for name, value in zip(names, args):
            set_(self, name, value)
        for name in names[len(args):]:
            if name in kw:
                value = kw.pop(name)
            else:
                d = defaults.get(name)
                if d is None:
                    raise TypeError(f"{qual}() missing the argument {name!r}")
                value = d[1]() if d[0] else d[1]
            set_(self, name, value)
        if kw:
            raise TypeError(f"{qual}() got unexpected arguments {sorted(kw)}")
        if post is not None:
            post(self)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

    def _key(self):
        return tuple(getattr(self, n) for n in names)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _key(self) == _key(other)

    cls.__init__ = __init__
    cls.__repr__ = __repr__
    cls.__eq__ = __eq__
    if frozen:
        def __setattr__(self, name, value):
            raise FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self, name):
            raise FrozenInstanceError(f"cannot delete field {name!r}")

        cls.__setattr__ = __setattr__
        cls.__delattr__ = __delattr__
        cls.__hash__ = lambda self: hash(_key(self))
    else:
        cls.__hash__ = None
    return cls
