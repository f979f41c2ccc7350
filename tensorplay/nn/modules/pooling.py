"""Pooling: `MaxPool1d`, `MaxPool2d`, `AvgPool1d`, `AvgPool2d`."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False):
        super().__init__()
        if return_indices:
            raise NotImplementedError(f"{type(self).__name__}: return_indices=True is not supported")
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation, self.ceil_mode = padding, dilation, ceil_mode
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Maximum over sliding windows of the last dim."""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class MaxPool2d(_MaxPoolNd):
    """Maximum over sliding windows of the last two dims.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.MaxPool2d(2)(tp.ones(1, 3, 8, 8)).shape
    tensorplay.Size(1, 3, 4, 4)
    """

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class _AvgPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Mean over sliding windows of the last dim."""

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """Mean over sliding windows of the last two dims.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.AvgPool2d(2)(tp.ones(1, 3, 8, 8)).shape
    tensorplay.Size(1, 3, 4, 4)
    """

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AdaptiveAvgPool1d(Module):
    """Average pooling to a fixed output length, with torch's bins.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.AdaptiveAvgPool1d(3)(tp.randn(2, 4, 10)).shape
    tensorplay.Size(2, 4, 3)
    """

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    """Average pooling to a fixed output size (an int, a pair, None keeps a dim), with torch's bins.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.AdaptiveAvgPool2d((1, None))(tp.randn(2, 4, 5, 6)).shape
    tensorplay.Size(2, 4, 1, 6)
    """

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)
