"""`tensorplay.utils`: data loading (`tensorplay.utils.data`), as `torch.utils`."""
from . import data

__all__ = ["data"]
