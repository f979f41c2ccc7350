"""``torch.backends`` as on a CPU-only build: ``mps`` and ``cuda`` report unavailable.

>>> import tensorplay as tp
>>> tp.backends.mps.is_available(), tp.backends.cuda.is_built(), tp.backends.cudnn.is_available()
(False, False, False)
"""
from __future__ import annotations

__all__ = ["mps", "cuda", "cudnn"]


class _Unavailable:
    """A backend namespace whose device is neither available nor built."""

    def __init__(self, name: str):
        self._name = name

    def is_available(self) -> bool:
        """False: tensorplay runs on the CPU only."""
        return False

    def is_built(self) -> bool:
        """False: tensorplay has no code for this backend."""
        return False

    def __repr__(self) -> str:
        return f"<tensorplay.backends.{self._name}: unavailable>"


mps = _Unavailable("mps")
cuda = _Unavailable("cuda")
cudnn = _Unavailable("cudnn")
