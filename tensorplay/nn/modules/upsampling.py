"""`Upsample`: `F.interpolate` as a module."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class Upsample(Module):
    """Resize spatial dims by `size` or `scale_factor` (modes as `F.interpolate`).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
    >>> up(tp.ones(1, 1, 2, 3)).shape
    tensorplay.Size(1, 1, 4, 6)
    """

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None):
        super().__init__()
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) else scale_factor
        self.mode, self.align_corners, self.recompute_scale_factor = mode, align_corners, recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"size={self.size}" if self.scale_factor is None else f"scale_factor={self.scale_factor}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-D upsampling (``Upsample(mode="nearest")``)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-D upsampling with ``align_corners=True``, as torch's."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
