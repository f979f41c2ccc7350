"""``torch.cuda`` as on a CPU-only build of PyTorch: no device is available.

Programs that pick their device with ``"cuda" if torch.cuda.is_available() else "cpu"``
run unchanged; seeding CUDA does nothing, as torch does without a GPU.

>>> import tensorplay as tp
>>> tp.cuda.is_available(), tp.cuda.device_count()
(False, 0)
"""
from __future__ import annotations

__all__ = ["is_available", "device_count", "manual_seed", "manual_seed_all"]


def is_available() -> bool:
    """False: tensorplay runs on the CPU only."""
    return False


def device_count() -> int:
    """0: there are no CUDA devices."""
    return 0


def manual_seed(seed: int) -> None:
    """Nothing to seed without a GPU (as torch.cuda.manual_seed on a CPU build).

    >>> manual_seed(0) is None
    True
    """
    int(seed)


def manual_seed_all(seed: int) -> None:
    """Nothing to seed without a GPU."""
    int(seed)
