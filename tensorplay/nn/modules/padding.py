"""Padding modules: ZeroPad1d/2d, ConstantPad1d/2d, ReflectionPad1d/2d, ReplicationPad1d/2d, CircularPad1d/2d
(`F.pad` with each mode)."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class _PadNd(Module):
    _n, _mode = 1, "constant"

    def __init__(self, padding, value: float = 0.0):
        super().__init__()
        n = self._n
        self.padding = (int(padding),) * (2 * n) if isinstance(padding, int) else tuple(int(p) for p in padding)
        if len(self.padding) != 2 * n:
            raise ValueError(f"{type(self).__name__}: expected padding to be an int or a {2 * n}-tuple, got {padding!r}")
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self._mode == "constant" else "")


def _pad_class(name: str, n: int, mode: str, doc: str):
    return type(name, (_PadNd,), {"_n": n, "_mode": mode, "__doc__": doc, "__module__": __name__})


ReflectionPad1d = _pad_class("ReflectionPad1d", 1, "reflect", "Pad the last dim by reflection (edge not repeated).")
ReflectionPad2d = _pad_class("ReflectionPad2d", 2, "reflect", """Pad the last two dims by reflection.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.ReflectionPad2d(1)(tp.arange(4.0).reshape(1, 1, 2, 2)).shape
    tensorplay.Size(1, 1, 4, 4)
    """)
ReplicationPad1d = _pad_class("ReplicationPad1d", 1, "replicate", "Pad the last dim by repeating the edge.")
ReplicationPad2d = _pad_class("ReplicationPad2d", 2, "replicate", "Pad the last two dims by repeating the edges.")
CircularPad1d = _pad_class("CircularPad1d", 1, "circular", "Pad the last dim by wrapping around.")
CircularPad2d = _pad_class("CircularPad2d", 2, "circular", "Pad the last two dims by wrapping around.")


class ConstantPad1d(_PadNd):
    """Pad the last dim with `value`."""

    _n = 1

    def __init__(self, padding, value: float):
        super().__init__(padding, value)


class ConstantPad2d(ConstantPad1d):
    """Pad the last two dims with `value`."""

    _n = 2


class ZeroPad1d(_PadNd):
    """Pad the last dim with zeros."""

    _n = 1

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad2d(ZeroPad1d):
    """Pad the last two dims with zeros.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.ZeroPad2d((1, 0, 0, 1))(tp.ones(1, 2, 2)).tolist()
    [[[0.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 0.0]]]
    """

    _n = 2
