"""In-place writes into expanded tensors follow torch (issue 11, item 3): a write raises when the
written-to tensor itself has elements sharing memory, and otherwise reaches the expanded tensor's
storage (fill_ and zero_ are exempt from the check, as in torch)."""
import numpy as np
import pytest

import tensorplay as tp

try:
    import torch
except ImportError:
    torch = None

MESSAGE = "more than one element of the written-to tensor refers to a single memory location"

CASES = {  # name -> (write(lib, y) on y = x.expand(3, 4) of x = ones(1, 4), raises?, x afterwards)
    "add_": (lambda m, y: y.add_(1), True, None),
    "mul_": (lambda m, y: y.mul_(2), True, None),
    "copy_": (lambda m, y: y.copy_(m.zeros(3, 4)), True, None),
    "clamp_": (lambda m, y: y.clamp_(0, 0.5), True, None),
    "column_add_": (lambda m, y: y[:, 0].add_(1), True, None),
    "column_setitem": (lambda m, y: y.__setitem__((slice(None), 0), m.tensor([1.0, 2.0, 3.0])), True, None),
    "ellipsis_setitem": (lambda m, y: y.__setitem__(Ellipsis, 7.0), True, None),
    "fill_": (lambda m, y: y.fill_(2.0), False, [[2.0] * 4]),
    "zero_": (lambda m, y: y.zero_(), False, [[0.0] * 4]),
    "row_add_": (lambda m, y: y[1].add_(1), False, [[2.0] * 4]),
    "row_setitem": (lambda m, y: y.__setitem__(0, m.tensor([1.0, 2.0, 3.0, 4.0])), False, [[1.0, 2.0, 3.0, 4.0]]),
    "row_slice_mul_": (lambda m, y: y[2, 1:3].mul_(5), False, [[1.0, 5.0, 5.0, 1.0]]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_expanded_writes(name):
    write, raises, after = CASES[name]
    x = tp.ones(1, 4)
    if raises:
        with pytest.raises(RuntimeError, match=MESSAGE):
            write(tp, x.expand(3, 4))
        assert x.tolist() == [[1.0] * 4]  # nothing was written
    else:
        write(tp, x.expand(3, 4))
        assert x.tolist() == after


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("name", sorted(CASES))
def test_expanded_writes_match_torch(name):
    write, raises, _ = CASES[name]
    results = []
    for m in (tp, torch):
        x = m.ones(1, 4)
        try:
            write(m, x.expand(3, 4))
            results.append(("ok", x.tolist()))
        except RuntimeError as e:
            assert MESSAGE in str(e)
            results.append(("raised", None))
    assert results[0] == results[1]
    assert (results[0][0] == "raised") == raises


def test_read_only_numpy_memory_stays_read_only():
    a = np.ones((1, 3))
    a.flags.writeable = False
    y = tp.from_numpy(a).expand(2, 3)
    with pytest.raises(RuntimeError):
        y[0].add_(1)
    assert a.tolist() == [[1.0, 1.0, 1.0]]
