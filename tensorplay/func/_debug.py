"""`debug_unwrap`: inspect the tensor a transform hands to the wrapped function."""
from __future__ import annotations

from .._state import TracingError
from .._tensor import Tensor


def debug_unwrap(tensor, *, recurse: bool = True):
    """Return the plain tensor underlying a transform's temporary wrapper.

    Inside `grad`, `jvp`, `jacrev`, ... (called on concrete tensors) the traced tensor's value
    is computed and returned as an ordinary tensor, to print or check in a debugger; it is a
    copy, outside the transform (differentiation does not see it). Under `vmap` a tensor that
    depends on the batch has one value per sample, so the per-sample traced tensor is returned
    as it is (its shape excludes the batch dimension); under `tp.compile` nothing has a value
    while tracing, and the traced tensor is returned as well. Other objects are returned
    unchanged. `recurse` is accepted for torch.func compatibility: transforms here wrap a
    tensor once, so unwrapping is always complete.

    >>> import tensorplay as tp
    >>> from tensorplay.func import debug_unwrap, grad, vmap
    >>> def f(x):
    ...     print(debug_unwrap(x * 2))
    ...     return (x * x).sum()
    >>> grad(f)(tp.tensor([1.0, 2.0]))
    tensor([2., 4.])
    tensor([2., 4.])
    >>> vmap(lambda x: (print(debug_unwrap(x).shape), x * 2)[1])(tp.ones(2, 3)).shape
    tensorplay.Size(3)
    tensorplay.Size(2, 3)
    """
    if not isinstance(tensor, Tensor) or tensor._trace is None:
        return tensor
    try:
        arr = tensor._concrete("debug_unwrap")
    except TracingError:
        return tensor
    return Tensor._wrap(arr.copy())
