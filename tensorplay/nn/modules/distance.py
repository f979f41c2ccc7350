"""CosineSimilarity and PairwiseDistance (`F.cosine_similarity`, `F.pairwise_distance`)."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class CosineSimilarity(Module):
    """The cosine of the angle between `x1` and `x2` along `dim`.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.CosineSimilarity(dim=0)(tp.tensor([1.0, 0.0]), tp.tensor([2.0, 0.0])).item()
    1.0
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm distance between the rows of `x1` and `x2`."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
