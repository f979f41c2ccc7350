"""PixelShuffle and PixelUnshuffle (`F.pixel_shuffle`, `F.pixel_unshuffle`)."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class PixelShuffle(Module):
    """``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.PixelShuffle(2)(tp.ones(1, 8, 3, 3)).shape
    tensorplay.Size(1, 2, 6, 6)
    """

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)


class PixelUnshuffle(Module):
    """``(*, C, H*r, W*r) -> (*, C*r*r, H, W)``."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)
