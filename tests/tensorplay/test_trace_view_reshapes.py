"""Traced reshapes of strided views agree with eager mode on view-or-copy: a reshape that only
adds or drops size-1 dims is a view of any layout (writes through it reach the base), one that
regroups non-contiguous dims is a copy (writes stay local). Oracle: the same function run eagerly."""
import numpy as np
import pytest

import tensorplay as tp


def unit_dims(x):
    v = x.T[1:2].reshape(-1)       # (1, 3) slice of a transposed (non-contiguous) view -> (3,)
    v.add_(10.0)
    w = x[:, 2:3].reshape(1, 2, 1)  # strided column, unit dims added and dropped
    w.mul_(2.0)
    return x.sum() + v.sum()


def regroup(x):
    v = x.T.reshape(-1)            # a copy eagerly: the write must not reach x
    v.add_(10.0)
    return v.sum()


@pytest.mark.parametrize("fn", [unit_dims, regroup], ids=lambda f: f.__name__)
def test_traced_reshape_view_or_copy_matches_eager(fn):
    base = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    eager_x = tp.from_numpy(base.copy())
    eager_out = fn(eager_x)
    traced_x = tp.from_numpy(base.copy())
    traced_out = tp.compile(fn)(traced_x)
    np.testing.assert_array_equal(traced_out.numpy(), eager_out.numpy())
    np.testing.assert_array_equal(traced_x.numpy(), eager_x.numpy())


def test_a_concrete_view_reshaped_under_a_trace():
    """A concrete (unbatched) view reaching a traced reshape: its layout comes from the concrete
    tensor (the fuzzer found an AttributeError here)."""
    base = tp.arange(6.0).reshape(2, 3)
    x = base.t()  # a non-contiguous concrete view
    got = tp.func.vmap(lambda s, a: a.reshape(-1).reshape(a.shape) * s, in_dims=(0, None))(tp.ones(2), x)
    np.testing.assert_array_equal(got.numpy(), np.stack([x.numpy()] * 2))
    np.testing.assert_array_equal(base.numpy(), np.arange(6.0).reshape(2, 3))
