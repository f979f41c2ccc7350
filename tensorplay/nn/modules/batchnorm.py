"""Batch normalization: `BatchNorm1d`, `BatchNorm2d`.

In training mode the module normalizes with the batch statistics and updates
its running statistics in place (``running_mean``, ``running_var``,
``num_batches_tracked``); in eval mode it normalizes with the running
statistics. Under `vmap` the in-place update is ambiguous, so it raises and
points at `tensorplay.func.replace_all_batch_norm_modules_`.
"""
from __future__ import annotations

from tensorplay.ir import dtypes

from ..._trace import transform_stack
from ...ops import elementwise as ew
from ...ops.creation import ones, tensor, zeros
from .. import functional as F
from ..parameter import Parameter
from .module import Module


class _NormBase(Module):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(ones(num_features, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(zeros(num_features, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dtypes.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            self.weight.fill_(1)
            if self.bias is not None:
                self.bias.zero_()

    def _check_input_dim(self, input) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        if self.training and self.track_running_stats and "vmap" in transform_stack() and (
                self.running_mean is not None or self.running_var is not None or self.num_batches_tracked is not None):
            F._check_no_vmap_update(type(self).__name__)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                n = self.num_batches_tracked
                factor = ew.div(1.0, n) if n.is_traced else 1.0 / float(n)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None, self.running_var if use_stats else None,
                            self.weight, self.bias, bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over ``(N, C)`` or ``(N, C, L)`` input (statistics per channel C).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> bn = nn.BatchNorm1d(3)
    >>> y = bn(tp.randn(8, 3))
    >>> int(bn.num_batches_tracked)
    1
    >>> bn.eval()(tp.zeros(2, 3)).shape
    tensorplay.Size(2, 3)
    """

    def _check_input_dim(self, input) -> None:
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over ``(N, C, H, W)`` input (statistics per channel C).

    `momentum=None` makes the running statistics a cumulative average; with
    ``track_running_stats=False`` batch statistics are used in both modes.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> bn = nn.BatchNorm2d(4)
    >>> bn(tp.randn(2, 4, 3, 3)).shape
    tensorplay.Size(2, 4, 3, 3)
    >>> sorted(name for name, _ in bn.named_buffers())
    ['num_batches_tracked', 'running_mean', 'running_var']
    """

    def _check_input_dim(self, input) -> None:
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")
