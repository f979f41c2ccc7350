"""Bad input gives ValueError/TypeError/IndexError naming the op and the shapes."""
import pytest

import tensorplay as tp


@pytest.mark.parametrize("call,exc,pattern", [
    (lambda: tp.ones(3) + tp.ones(4), ValueError, r"add.*\(3,\).*\(4,\)"),
    (lambda: tp.ones(2, 3) @ tp.ones(2, 3), ValueError, r"matmul.*\(2, 3\).*\(2, 3\)"),
    (lambda: tp.ones(2, 3).reshape(4, 2), ValueError, r"reshape.*\[4, 2\].*6"),
    (lambda: tp.ones(2, 3).sum(2), IndexError, r"sum.*range"),
    (lambda: tp.ones(2, 3).transpose(0, 3), IndexError, r"transpose.*range"),
    (lambda: tp.cat([tp.ones(2, 3), tp.ones(3, 2)], 0), ValueError, r"cat.*\(2, 3\).*\(3, 2\)"),
    (lambda: tp.stack([tp.ones(2), tp.ones(3)]), ValueError, r"stack.*\(2,\).*\(3,\)"),
    (lambda: tp.ones(3)[5], IndexError, r"index 5 is out of bounds.*size 3"),
    (lambda: tp.ones(3)[tp.tensor([0, 3])], IndexError, r"out of bounds"),
    (lambda: tp.ones(3)[tp.tensor([0.5])], IndexError, r"long, int or bool"),
    (lambda: tp.ones(3)[0, 0], IndexError, r"too many indices"),
    (lambda: tp.ones(3, dtype=tp.int64).mean(), TypeError, r"mean.*floating"),
    (lambda: tp.ones(2) @ tp.ones(2, dtype=tp.float64), TypeError, r"matmul.*float32.*float64"),
    (lambda: tp.ones(2).bitwise_and(tp.ones(2)), TypeError, r"bitwise_and.*float"),
    (lambda: tp.zeros(0).max(), ValueError, r"max.*non-empty"),
    (lambda: tp.ones(3, dtype=tp.int64).add_(1.5), TypeError, r"add_.*float32.*int64"),
    (lambda: tp.ones(3).add_(tp.ones(2, 3)), ValueError, r"add_.*\(3,\).*\(2, 3\)"),
    (lambda: tp.einsum("ij,jk->ik", tp.ones(2, 3), tp.ones(4, 5)), ValueError, r"einsum.*'j'"),
    (lambda: tp.ones(2, 3).expand(3, 3), ValueError, r"expand.*\(2, 3\)"),
])
def test_bad_input_errors(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_errors_inside_trace_name_the_transform():
    with pytest.raises(ValueError, match=r"add.*\(3,\).*\(4,\)"):
        tp.make_graph(lambda x, y: x + y, tp.ones(3), tp.ones(4))


def test_caller_tensor_unchanged_by_failed_op():
    x = tp.ones(3)
    with pytest.raises(ValueError):
        x.add_(tp.ones(2, 3))
    assert x.tolist() == [1, 1, 1]
