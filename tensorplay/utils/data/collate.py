"""`default_collate` and `default_convert`: how a `DataLoader` turns samples into batches, as torch's."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..._tensor import Tensor


def default_convert(data):
    """numpy arrays and numpy scalars become tensors, inside dicts, namedtuples and sequences; the rest stays.

    >>> import numpy as np
    >>> from tensorplay.utils.data import default_convert
    >>> default_convert({"a": np.ones(2), "b": 3})
    {'a': tensor([1., 1.], dtype=tensorplay.float64), 'b': 3}
    """
    from ...ops.creation import as_tensor

    if isinstance(data, Tensor):
        return data
    if isinstance(data, (np.ndarray, np.generic)) and data.dtype.kind not in "SUO":
        return as_tensor(data)
    if isinstance(data, Mapping):
        return _rebuild_mapping(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def default_collate(batch):
    """Stack a list of samples into a batch, recursing into dicts, namedtuples and sequences (as torch).

    Tensors and numpy arrays are stacked; Python floats become float64 tensors, ints int64,
    bools bool; strings stay a list; a batch of tuples becomes a list of collated fields.

    >>> import tensorplay as tp
    >>> from tensorplay.utils.data import default_collate
    >>> default_collate([(tp.tensor([1.0]), 0), (tp.tensor([2.0]), 1)])
    [tensor([[1.],
            [2.]]), tensor([0, 1])]
    >>> default_collate([{"x": 1.5, "name": "a"}, {"x": 2.5, "name": "b"}])
    {'x': tensor([1.5000, 2.5000], dtype=tensorplay.float64), 'name': ['a', 'b']}
    """
    from ...ops.creation import as_tensor, tensor
    from ...ops.shape import stack
    from tensorplay.ir import dtypes

    if not isinstance(batch, (list, tuple)) and not isinstance(batch, Sequence):
        raise TypeError(f"default_collate: expected a sequence of samples, got {type(batch).__name__}")
    if len(batch) == 0:
        raise ValueError("default_collate: the batch is empty")
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch))
    if isinstance(elem, np.ndarray) and elem.dtype.kind not in "SUO":
        return stack([as_tensor(b) for b in batch])
    if isinstance(elem, np.generic) and elem.dtype.kind not in "SUO":
        return as_tensor(np.array(batch))
    if isinstance(elem, bool):
        return tensor(list(batch), dtype=dtypes.bool_)
    if isinstance(elem, float):
        return tensor(list(batch), dtype=dtypes.float64)
    if isinstance(elem, int):
        return tensor(list(batch), dtype=dtypes.int64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, Mapping):
        return _rebuild_mapping(elem, {k: default_collate([d[k] for d in batch]) for k in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        size = len(elem)
        if any(len(b) != size for b in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of equal size")
        fields = [default_collate(list(s)) for s in zip(*batch)]
        return fields if isinstance(elem, tuple) else _rebuild_sequence(elem, fields)
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                    f"found {type(elem).__name__}")


def _rebuild_mapping(like: Mapping, items: dict):
    try:
        return type(like)(items)
    except TypeError:  # a mapping type that cannot be built from a dict
        return items


def _rebuild_sequence(like, items: list):
    try:
        return type(like)(items)
    except TypeError:
        return items
