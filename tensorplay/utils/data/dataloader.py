"""`DataLoader`: batches of samples from a dataset, in order or shuffled by a seeded generator."""
from __future__ import annotations

import warnings
from typing import Callable

from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler


class DataLoader:
    """Iterate over `dataset` in batches, with torch's arguments and defaults.

    ``batch_size=None`` yields single samples (converted by `default_convert`); otherwise
    `collate_fn` (default `default_collate`) builds each batch. ``shuffle=True`` draws a new
    permutation per epoch from `generator` (default: the global generator, so
    ``tp.manual_seed`` makes it reproducible). Data is loaded in the calling process:
    ``num_workers`` must be 0.

    >>> import tensorplay as tp
    >>> from tensorplay.utils.data import DataLoader
    >>> g = tp.Generator().manual_seed(0)
    >>> batches = list(DataLoader(list(range(10)), batch_size=4, shuffle=True, drop_last=True, generator=g))
    >>> [len(b) for b in batches], len(set(sum((b.tolist() for b in batches), [])))  # 8 distinct samples
    ([4, 4], 8)
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn: Callable | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True):
        if num_workers != 0:
            raise ValueError(f"DataLoader: num_workers={num_workers} is not supported: tensorplay loads data in "
                             f"the calling process (num_workers=0)")
        if timeout < 0:
            raise ValueError("DataLoader: timeout option should be non-negative")
        if timeout or worker_init_fn is not None or multiprocessing_context is not None or prefetch_factor \
                is not None or persistent_workers:
            raise ValueError("DataLoader: timeout, worker_init_fn, multiprocessing_context, prefetch_factor and "
                             "persistent_workers need worker processes, and num_workers is 0")
        if pin_memory_device:
            raise ValueError(f"DataLoader: pin_memory_device={pin_memory_device!r}: tensorplay runs on the CPU only")
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.generator = generator
        self.num_workers = 0
        if pin_memory:  # as torch without an accelerator: a warning, and nothing is pinned
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", UserWarning, stacklevel=2)
        self.pin_memory = False
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler and batch_sampler")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None or (self._iterable and batch_size is not None)
            else default_convert)

    def __iter__(self):
        if self._iterable:
            return self._iterate_iterable()
        if self.batch_sampler is not None:
            return (self.collate_fn([self.dataset[i] for i in batch]) for batch in self.batch_sampler)
        return (self.collate_fn(self.dataset[i]) for i in self.sampler)

    def _iterate_iterable(self):
        if self.batch_size is None:
            yield from (self.collate_fn(x) for x in self.dataset)
            return
        batch: list = []
        for x in self.dataset:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)  # TypeError when the iterable dataset has no length, as torch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)
