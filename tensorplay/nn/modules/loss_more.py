"""More loss modules: SmoothL1Loss, HuberLoss, KLDivLoss."""
from __future__ import annotations

from .. import functional as F
from .loss import _Loss


class SmoothL1Loss(_Loss):
    """Quadratic below `beta`, linear above (`F.smooth_l1_loss`).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.SmoothL1Loss()(tp.tensor([0.5, 3.0]), tp.tensor([0.0, 0.0])).item()
    1.3125
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below `delta`, linear (slope `delta`) above (`F.huber_loss`)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(None, None, reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """The Kullback-Leibler divergence of `target` from log-probabilities `input` (`F.kl_div`)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        if reduction == "batchmean":
            super().__init__(size_average, reduce, "mean")
            self.reduction = "batchmean"
        else:
            super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)
