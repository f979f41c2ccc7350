"""Instance normalization: `InstanceNorm1d`, `InstanceNorm2d` (torch's defaults: no affine, no running stats)."""
from __future__ import annotations

from ...ops import shape as _sh
from .. import functional as F
from .batchnorm import _NormBase


class _InstanceNorm(_NormBase):
    _spatial = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input):
        n = self._spatial
        if input.ndim not in (n + 1, n + 2):
            raise ValueError(f"{type(self).__name__}: expected {n + 1}D or {n + 2}D input (got {input.ndim}D input)")
        unbatched = input.ndim == n + 1
        x = _sh.unsqueeze(input, 0) if unbatched else input
        if x.shape[1] != self.num_features and self.affine:
            raise ValueError(f"{type(self).__name__}: expected input's size at dim=1 to match num_features "
                             f"({self.num_features}), but got: {x.shape[1]}.")
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                              self.momentum if self.momentum is not None else 0.1, self.eps)
        return _sh.squeeze(out, 0) if unbatched else out

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Normalize each channel of each sample of ``(N, C, L)`` (or ``(C, L)``) input over L.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.InstanceNorm1d(2)(tp.tensor([[[1.0, 3.0], [2.0, 6.0]]]))
    tensor([[[-1.0000,  1.0000],
             [-1.0000,  1.0000]]])
    """

    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Normalize each channel of each sample of ``(N, C, H, W)`` (or ``(C, H, W)``) input over H and W.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.InstanceNorm2d(3, affine=True)(tp.randn(2, 3, 4, 4)).shape
    tensorplay.Size(2, 3, 4, 4)
    """

    _spatial = 2
