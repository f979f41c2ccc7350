"""`Flatten` and `Unflatten`."""
from __future__ import annotations

from ...ops import shape as _sh
from .module import Module


class Flatten(Module):
    """Merge dims start_dim..end_dim (by default all but the batch dim).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.Flatten()(tp.ones(2, 3, 4)).shape
    tensorplay.Size(2, 12)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return _sh.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size`."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        return _sh.unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
