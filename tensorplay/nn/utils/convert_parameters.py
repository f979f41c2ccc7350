"""`parameters_to_vector` and `vector_to_parameters`."""
from __future__ import annotations

from ..._tensor import Tensor
from ...autograd import no_grad
from ...ops import shape as _sh


def _params(parameters, what: str) -> list[Tensor]:
    items = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    for p in items:
        if not isinstance(p, Tensor):
            raise TypeError(f"{what}: expected an iterable of Tensors, but got {type(p).__name__}")
    return items


def parameters_to_vector(parameters) -> Tensor:
    """All `parameters` flattened and concatenated into one 1-d tensor.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.utils.parameters_to_vector([tp.ones(2, 2), tp.zeros(1)])
    tensor([1., 1., 1., 1., 0.])
    """
    return _sh.cat([_sh.reshape(p, (-1,)) for p in _params(parameters, "parameters_to_vector")])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy consecutive slices of the 1-d `vec` into `parameters`, in place (the inverse of the above).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> a, b = tp.zeros(2), tp.zeros(1, 2)
    >>> nn.utils.vector_to_parameters(tp.tensor([1.0, 2.0, 3.0, 4.0]), [a, b])
    >>> a, b
    (tensor([1., 2.]), tensor([[3., 4.]]))
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    if vec.ndim != 1:
        raise ValueError(f"vector_to_parameters: expected a 1-d vector, got shape {tuple(vec.shape)}")
    params = _params(parameters, "vector_to_parameters")
    total = sum(p.numel() for p in params)
    if vec.shape[0] != total:
        raise ValueError(f"vector_to_parameters: the vector has {vec.shape[0]} elements but the parameters have "
                         f"{total}")
    start = 0
    with no_grad():  # as torch's `param.data = ...`: the values change, autograd does not record it
        for p in params:
            n = p.numel()
            p.copy_(_sh.reshape(_sh.narrow(vec, 0, start, n), tuple(p.shape)))
            start += n
