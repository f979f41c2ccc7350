"""vmap's errors: clear exceptions naming vmap and the offending argument, raised at the user's call."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.func import chunk_vmap, vmap


def X(*shape):
    return tp.from_numpy(np.ones(shape, np.float32))


def test_batch_sizes_differ():
    with pytest.raises(ValueError, match=r"vmap\(add, .*different sizes.*args\[0\] has size 2 at dim 0, "
                                         r"args\[1\] has size 3 at dim 0"):
        vmap(tp.add)(X(2, 4), X(3, 4))
    with pytest.raises(ValueError, match=r"args\[1\]\['b'\] has size 5 at dim 1"):
        vmap(lambda x, d: x + d["a"] + d["b"], in_dims=(0, {"a": 0, "b": 1}))(X(2), {"a": X(2), "b": X(1, 5)})


def test_in_dims_out_of_range():
    with pytest.raises(ValueError, match=r"vmap\(.*in_dim 2 is out of range for args\[0\] of shape \(2, 3\) "
                                         r"\(expected a dim in \[-2, 1\]\)"):
        vmap(tp.sin, in_dims=2)(X(2, 3))
    with pytest.raises(ValueError, match=r"in_dim -3 is out of range"):
        vmap(tp.sin, in_dims=-3)(X(2, 3))
    with pytest.raises(ValueError, match=r"args\[0\] of shape \(\).*0-d tensor has no dimension"):
        vmap(tp.sin)(tp.tensor(1.0))


def test_in_dims_structure_mismatch():
    with pytest.raises(ValueError, match=r"vmap\(.*in_dims has 1 entries but 2 positional arguments"):
        vmap(tp.add, in_dims=(0,))(X(2), X(2))
    with pytest.raises(ValueError, match=r"vmap\(.*in_dims\[0\]: structure tuple of length 2 does not match"):
        vmap(lambda p: p[0] + p[1], in_dims=((0, 0),))([X(2), X(2), X(2)])
    with pytest.raises(ValueError, match=r"in_dims\[0\]: structure dict with keys \['a'\] does not match"):
        vmap(lambda d: d["b"], in_dims=({"a": 0},))({"b": X(2)})
    with pytest.raises(TypeError, match=r"vmap\(.*in_dims must be an int, None, or a tuple"):
        vmap(tp.sin, in_dims={"x": 0})(X(2))
    with pytest.raises(TypeError, match=r"in_dims entries must be ints or None, got 0.5"):
        vmap(tp.sin, in_dims=(0.5,))(X(2))
    with pytest.raises(TypeError, match=r"in_dims must be an int"):
        vmap(tp.sin, in_dims=True)(X(2))


def test_in_dims_for_a_non_tensor():
    with pytest.raises(ValueError, match=r"vmap\(.*in_dim 0 given for args\[1\], which is not a tensor but int 3"
                                         r".*use None"):
        vmap(lambda x, n: x * n)(X(2), 3)
    with pytest.raises(ValueError, match=r"args\[0\]\[1\], which is not a tensor but str"):
        vmap(lambda p: p[0], in_dims=((0, 0),))((X(2), "a"))


def test_no_batched_inputs():
    with pytest.raises(ValueError, match=r"vmap\(sin, in_dims=None\): no input is batched"):
        vmap(tp.sin, in_dims=None)(X(2))
    with pytest.raises(ValueError, match="no input is batched.*keyword arguments are never batched"):
        vmap(lambda *, x: x)(x=X(2))
    with pytest.raises(ValueError, match="no input is batched"):
        vmap(lambda: tp.zeros(2))()


def test_out_dims_mismatch():
    w = X(3)
    with pytest.raises(ValueError, match=r"vmap\(.*out_dims is None for output\[0\], but that output depends on the "
                                         r"batched inputs"):
        vmap(lambda x: (x * 2, w), out_dims=(None, None))(X(2, 3))
    with pytest.raises(ValueError, match=r"out_dim 3 is out of range for output, which has per-sample shape \(3,\)"):
        vmap(lambda x: x, out_dims=3)(X(2, 3))
    with pytest.raises(ValueError, match=r"out_dims: structure tuple of length 3 does not match"):
        vmap(lambda x: (x, x), out_dims=(0, 0, 0))(X(2, 3))
    with pytest.raises(TypeError, match=r"out_dims entries must be ints or None, got 'a' for output\[1\]"):
        vmap(lambda x: (x, x), out_dims=(0, "a"))(X(2, 3))
    with pytest.raises(TypeError, match=r"returned a int as output\[1\]; vmap can only return tensors"):
        vmap(lambda x: (x, 1))(X(2, 3))


def test_python_control_flow_on_batched_values_mentions_vmap():
    with pytest.raises(tp.TracingError, match=r"bool\(tensor\).*traced under vmap\(in_dims=0\).*tp\.where"):
        vmap(lambda x: x if x.sum() > 0 else -x)(X(2, 3))
    with pytest.raises(tp.TracingError, match=r"\.item\(\).*vmap"):
        vmap(lambda x: x * x.sum().item())(X(2, 3))
    with pytest.raises(tp.TracingError, match=r"vmap"):
        vmap(lambda x: tp.from_numpy(x.numpy()))(X(2, 3))


def test_inplace_write_of_batched_value_into_unbatched_tensor():
    y = X(3)
    before = y.numpy().copy()
    with pytest.raises(RuntimeError, match=r"vmap\(<lambda>, in_dims=\(0, None\)\): in-place write into args\[1\] "
                                           r"\(in_dim None\), which is not batched"):
        vmap(lambda x, t: t.add_(x), in_dims=(0, None))(X(2, 3), y)
    with pytest.raises(RuntimeError, match=r"vmap\(.*in-place write into a tensor of shape \(3,\) captured from "
                                           r"outside the function.*depends on the batched inputs"):
        vmap(lambda x: y.copy_(x))(X(2, 3))
    with pytest.raises(RuntimeError, match=r"in-place write into kwargs\['out'\] \(a keyword argument\)"):
        vmap(lambda x, *, out: out.mul_(x))(X(2, 3), out=y)
    with pytest.raises(RuntimeError, match=r"in-place write into args\[1\]"):  # through a view of it
        vmap(lambda x, t: t[1:].add_(x[0]), in_dims=(0, None))(X(2, 3), y)
    np.testing.assert_array_equal(y.numpy(), before)  # nothing was written


def test_bad_options():
    with pytest.raises(ValueError, match=r"vmap: randomness must be one of 'error', 'different', 'same'"):
        vmap(tp.sin, randomness="fresh")
    with pytest.raises(ValueError, match="vmap: chunk_size must be a positive int"):
        vmap(tp.sin, chunk_size=0)
    with pytest.raises(ValueError, match="chunk_vmap: chunks must be a positive int"):
        chunk_vmap(tp.sin, chunks=0)
    with pytest.raises(TypeError, match="vmap: func must be callable"):
        vmap(3)


def test_errors_inside_the_function_name_the_transform_stack():
    with pytest.raises(ValueError, match=r"under vmap\(in_dims=0\)"):
        vmap(lambda x: x.reshape(5))(X(2, 3))
    with pytest.raises(ValueError, match=r"under vmap\(in_dims=0\) > vmap\(in_dims=1\)"):
        vmap(vmap(lambda x: x @ tp.ones(4), in_dims=1))(X(2, 3, 5))
