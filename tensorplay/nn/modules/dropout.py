"""`Dropout`."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class Dropout(Module):
    """Zero elements with probability `p` during training (scaling the rest by 1/(1-p)); identity in eval.

    The mask is drawn with `tensorplay.rand`, so under vmap it follows the
    `randomness` option ("error" by default).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> drop = nn.Dropout(0.5)
    >>> drop.eval()(tp.ones(3))
    tensor([1., 1., 1.])
    """

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class AlphaDropout(Dropout):
    """Dropout that keeps SELU activations at mean 0 and variance 1 (see `F.alpha_dropout`); identity in eval.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.AlphaDropout(0.2).eval()(tp.ones(2))
    tensor([1., 1.])
    """

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training, self.inplace)


class Dropout1d(Dropout):
    """Zero whole channels of ``(N, C, L)`` with probability `p` during training (`F.dropout1d`)."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """Zero whole channels of ``(N, C, H, W)`` with probability `p` during training (`F.dropout2d`).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.Dropout2d(0.5).eval()(tp.ones(1, 2, 2, 2)).sum().item()
    8.0
    """

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)
