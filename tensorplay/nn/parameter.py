"""`Parameter`: a tensor that a `Module` registers as one of its parameters.

A Parameter is an ordinary `Tensor` (every tensorplay op accepts it and
returns plain tensors) that is an autograd leaf requiring grad by default
(`requires_grad=False` for frozen weights). ``Parameter(t)`` shares `t`'s
storage, as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor


class Parameter(Tensor):
    """A tensor registered by assignment to a `Module` attribute.

    >>> import tensorplay as tp
    >>> from tensorplay.nn import Parameter
    >>> t = tp.zeros(2)
    >>> p = Parameter(t)
    >>> p.requires_grad, p.is_leaf
    (True, True)
    >>> with tp.no_grad():    # in-place updates of a parameter go under no_grad, as in torch
    ...     _ = p.add_(1)     # shares storage with t
    >>> t
    tensor([1., 1.])
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = Tensor._wrap(np.zeros((0,), dtype=np.float32))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor as data, got {type(data).__name__}")
        p = object.__new__(cls)
        p._data, p._trace, p._value = data._data, data._trace, data._value
        p.requires_grad = bool(requires_grad)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # everything happens in __new__ (Tensor.__init__ would copy the data)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce__(self):
        return (_rebuild_parameter, (self._concrete("pickle"), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = Parameter(Tensor._wrap(np.array(self._concrete("deepcopy"), copy=True)), self.requires_grad)
        memo[id(self)] = out
        return out


def _rebuild_parameter(arr, requires_grad):
    return Parameter(Tensor._wrap(arr), requires_grad)


def is_parameter(x) -> bool:
    return isinstance(x, Parameter)
