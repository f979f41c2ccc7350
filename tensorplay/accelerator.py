"""``torch.accelerator`` with no accelerator present: programs fall back to the CPU.

>>> import tensorplay as tp
>>> tp.accelerator.is_available(), tp.accelerator.device_count()
(False, 0)
"""
from __future__ import annotations

__all__ = ["is_available", "device_count"]


def is_available() -> bool:
    """False: tensorplay runs on the CPU only."""
    return False


def device_count() -> int:
    """0: there is no accelerator."""
    return 0
