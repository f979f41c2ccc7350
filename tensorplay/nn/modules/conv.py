"""Convolutions: `Conv1d`, `Conv2d` (composites over pad + strided slices + einsum) and the transposed
`ConvTranspose1d`, `ConvTranspose2d` (a strided-padded input convolved with the flipped kernel)."""
from __future__ import annotations

from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class _ConvNd(Module):
    _n = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__()
        n, name = self._n, type(self).__name__
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise NotImplementedError(f"{name}: padding_mode {padding_mode!r} is not supported (only 'zeros')")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = F._ntuple(kernel_size, n, "kernel_size", name)
        self.stride = F._ntuple(stride, n, "stride", name)
        self.dilation = F._ntuple(dilation, n, "dilation", name)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = F._ntuple(padding, n, "padding", name)
        self.groups = groups
        self.padding_mode = padding_mode
        self.output_padding = (0,) * n
        self.transposed = False
        self.weight = Parameter(empty(out_channels, in_channels // groups, *self.kernel_size, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.default_weight_and_bias_(self.weight, self.bias)

    def extra_repr(self) -> str:
        n = self._n
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C_in, L)`` or unbatched ``(C_in, L)`` input.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.Conv1d(2, 4, 3, padding=1)(tp.ones(5, 2, 7)).shape
    tensorplay.Size(5, 4, 7)
    """

    _n = 1

    def forward(self, input):
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """2-D convolution over ``(N, C_in, H, W)`` or unbatched ``(C_in, H, W)`` input.

    Supports stride, padding (ints, tuples, ``"same"``, ``"valid"``), dilation, groups and bias;
    initialised as in PyTorch.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> conv = nn.Conv2d(3, 8, kernel_size=3, stride=2, padding=1)
    >>> conv
    Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))
    >>> conv(tp.ones(2, 3, 8, 8)).shape
    tensorplay.Size(2, 8, 4, 4)
    """

    _n = 2

    def forward(self, input):
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    """Transposed convolutions: weight ``(C_in, C_out/groups, k...)``, as torch's."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None):
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)
        self.output_padding = F._ntuple(output_padding, self._n, "output_padding", type(self).__name__)
        self.transposed = True
        self.weight = Parameter(empty(in_channels, out_channels // groups, *self.kernel_size, dtype=dtype,
                                      device=device))
        self.reset_parameters()


class ConvTranspose1d(_ConvTransposeNd):
    """The transposed 1-D convolution (`F.conv_transpose1d`).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.ConvTranspose1d(2, 3, 3, stride=2)(tp.ones(4, 2, 5)).shape
    tensorplay.Size(4, 3, 11)
    """

    _n = 1

    def forward(self, input):
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """The transposed 2-D convolution (`F.conv_transpose2d`), as in DCGAN generators.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)(tp.ones(1, 8, 5, 5)).shape
    tensorplay.Size(1, 4, 10, 10)
    """

    _n = 2

    def forward(self, input):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)
