"""New handles on a tensor's value (`clone`, `detach`) and two queries (`is_tensor`, `numel`):
the op table's rows for ``tp.clone`` / ``Tensor.clone``, ``tp.detach`` / ``Tensor.detach``,
``tp.is_tensor`` and ``tp.numel``.

>>> import tensorplay as tp
>>> x = tp.ones(2, 3, requires_grad=True)
>>> tp.detach(x).requires_grad, tp.clone(x).requires_grad, tp.numel(x), tp.is_tensor(x)
(False, True, 6, True)
"""
from __future__ import annotations

import numpy as np

from .. import _views
from .._tensor import Tensor
from .._trace import bind
from ._common import copy
from ._table import op


def clone(input, *, memory_format=None) -> Tensor:
    """A copy of `input` that owns its storage; gradients flow through it (torch's CloneBackward).

    >>> import tensorplay as tp
    >>> x = tp.tensor([1.0, 2.0])
    >>> y = tp.clone(x)
    >>> _ = y.add_(1)
    >>> x.tolist(), y.tolist()
    ([1.0, 2.0], [2.0, 3.0])
    """
    trace = _views.owner(input)
    if trace is not None:  # traced values are immutable, so a new root handle suffices
        return Tensor._symbolic(trace, trace.lift(input))
    if input.__dict__.get("_rg"):  # recorded, so that gradients reach `input`
        return copy(input)
    return Tensor._wrap(np.array(input._data, order="C", copy=True))


def detach(input) -> Tensor:
    """The same storage, cut from autograd's history: a leaf that does not require grad (under
    `tensorplay.func` transforms, a constant for differentiation).

    >>> import tensorplay as tp
    >>> x = tp.tensor([1.0, 2.0], requires_grad=True)
    >>> d = tp.detach(x)
    >>> d.requires_grad, d.tolist()
    (False, [1.0, 2.0])
    """
    return bind("stop_gradient", input)


def is_tensor(obj) -> bool:
    """True when `obj` is a tensorplay Tensor (as ``torch.is_tensor``).

    >>> import tensorplay as tp
    >>> tp.is_tensor(tp.ones(1)), tp.is_tensor([1.0])
    (True, False)
    """
    return isinstance(obj, Tensor)


def numel(input) -> int:
    """The number of elements of `input` (``Tensor.numel()``).

    >>> import tensorplay as tp
    >>> tp.numel(tp.zeros(2, 3, 4))
    24
    """
    return input.numel()


op("clone", clone)
op("detach", detach)
op("is_tensor", is_tensor, method=False)
op("numel", numel, method=False)  # Tensor.numel is the Tensor class's own (it needs no op module)
