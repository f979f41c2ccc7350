"""Datasets: the map-style `Dataset` protocol, `TensorDataset`, `Subset`, `ConcatDataset`, `random_split`."""
from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Sequence

from ..._tensor import Tensor


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` and usually ``__len__``.

    ``a + b`` concatenates two datasets.

    >>> from tensorplay.utils.data import Dataset
    >>> class Squares(Dataset):
    ...     def __len__(self): return 4
    ...     def __getitem__(self, i): return i * i
    >>> ds = Squares() + Squares()
    >>> len(ds), ds[5]
    (8, 1)
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read by iterating over it (``__iter__``) rather than by index.

    >>> from tensorplay.utils.data import DataLoader, IterableDataset
    >>> class Count(IterableDataset):
    ...     def __iter__(self): return iter(range(5))
    >>> [b.tolist() for b in DataLoader(Count(), batch_size=2)]
    [[0, 1], [2, 3], [4]]
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other):
        raise TypeError("IterableDataset does not support concatenation with +")


class TensorDataset(Dataset):
    """Samples are the `index`-th rows of each tensor (all tensors share their first dimension).

    >>> import tensorplay as tp
    >>> from tensorplay.utils.data import TensorDataset
    >>> ds = TensorDataset(tp.tensor([[1.0, 2.0], [3.0, 4.0]]), tp.tensor([7, 8]))
    >>> len(ds), ds[1]
    (2, (tensor([3., 4.]), tensor(8)))
    """

    def __init__(self, *tensors: Tensor):
        if not tensors:
            raise ValueError("TensorDataset: expected at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: argument {i} is a {type(t).__name__}, expected a tensor")
            if t.ndim == 0:
                raise ValueError(f"TensorDataset: argument {i} is 0-d; tensors need a first (sample) dimension")
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) > 1:
            raise ValueError(f"TensorDataset: size mismatch between tensors: first dimensions {sizes}")
        self.tensors = tuple(tensors)

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order.

    >>> from tensorplay.utils.data import Subset
    >>> s = Subset(list("abcde"), [4, 0])
    >>> len(s), s[0], s[1]
    (2, 'e', 'a')
    """

    def __init__(self, dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """The samples of several map-style datasets, one after another.

    >>> from tensorplay.utils.data import ConcatDataset
    >>> ds = ConcatDataset([[1, 2], [3]])
    >>> len(ds), ds[2], ds[-1]
    (3, 3, 3)
    """

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


def random_split(dataset, lengths: Sequence, generator=None) -> list[Subset]:
    """Split `dataset` into non-overlapping random subsets of the given lengths (or fractions summing to 1).

    Fractions are rounded down, and the remaining samples go one each to the subsets in
    turn, as torch does. The permutation comes from `generator` (default: the global one).

    >>> import tensorplay as tp
    >>> from tensorplay.utils.data import random_split
    >>> a, b = random_split(range(10), [0.7, 0.3], generator=tp.Generator().manual_seed(0))
    >>> len(a), len(b), sorted(list(a) + list(b)) == list(range(10))
    (7, 3, True)
    """
    from ...ops.creation import randperm

    lengths = list(lengths)
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and 1")
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.")
        lengths = counts
    for i, c in enumerate(lengths):
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise ValueError(f"random_split: length at index {i} must be a non-negative int or a fraction, got {c!r}")
    if sum(lengths) != n:
        raise ValueError(f"random_split: sum of input lengths ({sum(lengths)}) does not equal the length of the "
                         f"input dataset ({n})")
    indices = randperm(n, generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end]) for end, length in zip(itertools.accumulate(lengths), lengths)]
