"""tensorplay.utils.data against torch.utils.data (skipped parts when torch is absent) and by hand."""
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.utils.data import (ConcatDataset, DataLoader, Dataset, IterableDataset, Subset, TensorDataset,
                                   default_collate, random_split)

try:
    import torch
    import torch.utils.data as tud
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
Point = namedtuple("Point", "x y")


def _plain(x):
    """A structure of tensors as nested Python values with dtype names, for comparing with torch."""
    if hasattr(x, "numpy") and hasattr(x, "dtype"):
        return ("tensor", str(x.dtype).split(".")[-1], x.numpy().tolist())
    if isinstance(x, dict):
        return (type(x).__name__, [(k, _plain(v)) for k, v in x.items()])
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, [_plain(v) for v in x])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_plain(v) for v in x])
    return x


BATCHES = [
    [1.0, 2.5], [1, 2], [True, False], [(1, 2.0), (3, 4.0)], [[1, 2.0], [3, 4.0]],
    [{"x": 1, "y": "s"}, {"x": 2, "y": "t"}], [Point(1, 2), Point(3, 4)], [np.float32(1), np.float32(2)],
    [np.ones(2), np.zeros(2)], ["a", "b"], [OrderedDict(b=1.0, a=2), OrderedDict(b=3.0, a=4)],
    [{"img": np.arange(4.0).reshape(2, 2), "label": 3}, {"img": np.ones((2, 2)), "label": 5}],
]


@needs_torch
@pytest.mark.parametrize("batch", BATCHES, ids=range(len(BATCHES)))
def test_default_collate_matches_torch(batch):
    assert _plain(default_collate(batch)) == _plain(tud.default_collate(batch))


@needs_torch
def test_default_collate_of_tensors_matches_torch():
    arrays = [np.random.default_rng(i).standard_normal((2, 3)).astype(np.float32) for i in range(3)]
    got = default_collate([(tp.tensor(a), i) for i, a in enumerate(arrays)])
    want = tud.default_collate([(torch.tensor(a), i) for i, a in enumerate(arrays)])
    assert _plain(got) == _plain(want)


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="found object"):
        default_collate([object(), object()])


def test_tensor_dataset_and_loader_by_hand():
    x = tp.arange(20.0).reshape(10, 2)
    y = tp.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    loader = DataLoader(ds, batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert [tuple(b[0].shape) for b in batches] == [(4, 2), (4, 2), (2, 2)]
    np.testing.assert_array_equal(np.concatenate([b[0].numpy() for b in batches]), x.numpy())
    dropped = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dropped) == 2 and len(list(dropped)) == 2
    with pytest.raises(ValueError, match="size mismatch"):
        TensorDataset(tp.ones(3), tp.ones(4))


def test_shuffle_is_a_permutation_reproducible_from_the_generator_and_new_each_epoch():
    ds = list(range(50))

    def epochs(seed):
        loader = DataLoader(ds, batch_size=7, shuffle=True, generator=tp.Generator().manual_seed(seed))
        return [sum((b.tolist() for b in loader), []) for _ in range(2)]

    first, second = epochs(1)
    assert sorted(first) == ds and sorted(second) == ds and first != second and first != ds
    assert epochs(1) == [first, second] and epochs(2) != [first, second]
    tp.manual_seed(5)
    a = [b.tolist() for b in DataLoader(ds, batch_size=10, shuffle=True)]
    tp.manual_seed(5)
    assert a == [b.tolist() for b in DataLoader(ds, batch_size=10, shuffle=True)]


def test_collate_fn_batch_none_and_iterable_datasets():
    loader = DataLoader(range(5), batch_size=2, collate_fn=lambda b: sum(b))
    assert list(loader) == [1, 5, 4]
    assert list(DataLoader(range(3), batch_size=None)) == [0, 1, 2]

    class Stream(IterableDataset):
        def __iter__(self):
            return iter([np.float64(i) for i in range(5)])

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=2, drop_last=True)] == [[0.0, 1.0], [2.0, 3.0]]
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Stream(), shuffle=True)


def test_unsupported_loader_arguments_are_errors():
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(range(3), num_workers=2)
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(range(3), sampler=[0, 1], shuffle=True)
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(range(3), batch_size=0)


@needs_torch
@pytest.mark.parametrize("n, lengths", [(10, [0.33, 0.33, 0.34]), (11, [0.5, 0.5]), (7, [0.1] * 10),
                                        (10, [3, 7]), (5, [1.0]), (0, [0, 0])])
def test_random_split_lengths_match_torch(n, lengths):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = random_split(range(n), lengths, generator=tp.Generator().manual_seed(0))
        theirs = tud.random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    items = sorted(i for s in ours for i in s)
    assert items == list(range(n))


def test_random_split_errors_and_reproducibility():
    with pytest.raises(ValueError, match="does not equal the length"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="not between 0 and 1"):
        random_split(range(10), [1.5, -0.5])
    a = random_split(range(20), [5, 15], generator=tp.Generator().manual_seed(3))
    b = random_split(range(20), [5, 15], generator=tp.Generator().manual_seed(3))
    assert [list(s) for s in a] == [list(s) for s in b]
    assert isinstance(a[0], Subset) and a[0].dataset == range(20)


def test_dataset_concatenation_and_subset():
    class Letters(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            if not 0 <= i < 3:
                raise IndexError(i)
            return "abc"[i]

    ds = Letters() + ConcatDataset([["x", "y"]])
    assert len(ds) == 5 and [ds[i] for i in range(5)] == list("abcxy") and ds[-1] == "y"
    assert [Subset(ds, [4, 0])[i] for i in range(2)] == ["y", "a"]


def test_pin_memory_warns_as_torch_without_an_accelerator():
    with pytest.warns(UserWarning, match="pin_memory"):
        loader = DataLoader(range(3), pin_memory=True)
    assert loader.pin_memory is False and [b.tolist() for b in loader] == [[0], [1], [2]]
    with pytest.raises(RuntimeError, match="pin_memory"):
        tp.tensor([1.0], pin_memory=True)
