"""`tensorplay.utils.data`: datasets, batching and splitting, with torch.utils.data's names and semantics.

>>> import tensorplay as tp
>>> from tensorplay.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(tp.arange(6.0).reshape(3, 2), tp.tensor([0, 1, 0]))
>>> for x, y in DataLoader(ds, batch_size=2):
...     print(tuple(x.shape), y.tolist())
(2, 2) [0, 1]
(1, 2) [0]
"""
from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split", "DataLoader",
           "default_collate", "default_convert", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "BatchSampler"]
