"""An op's own constants (`ops._common.fixed`: relu's 0, a loss's element count) are `full` nodes
under every transform, one per distinct (shape, dtype, exact value) in a trace; user scalars stay
graph inputs under plain transforms. Values and gradients against numpy, and keys that must not
merge different constants."""
import numpy as np

import tensorplay as tp
from tensorplay._trace import Trace
from tensorplay.func import grad, vmap
from tensorplay.ir import dtypes
from tensorplay.ops._common import fixed


def test_fixed_keys_are_exact():
    with Trace("grad", concrete=True) as tr:
        vals = [fixed(v, d, (2,), (tr.new_arg(tp.ones(2)._type()),))._value
                for v, d in ((0.0, dtypes.float32), (-0.0, dtypes.float32), (0.0, dtypes.float64),
                             (0, dtypes.int64), (False, dtypes.bool_), (0.0, dtypes.float32))]
        again = fixed(0.0, dtypes.float32, (3,), ())
    assert len({id(v) for v in vals[:5]}) == 5  # 0.0 / -0.0 / float64 / int / bool: five nodes
    assert vals[5] is vals[0]  # the same constant again: the same node
    assert again._trace is None and again.tolist() == [0.0] * 3  # no traced operand: concrete
    names = [n.prim.name for n in tr.builder.nodes]
    assert names == ["full"] * 5
    signs = [np.signbit(n.attrs["value"]) for n in tr.builder.nodes if n.attrs["dtype"] is dtypes.float32]
    assert signs == [False, True]


def test_relu_values_and_gradients_under_every_form():
    x = np.array([[-1.5, 0.0, 2.0], [-0.0, np.nan, 3.0]], dtype=np.float64)
    ref = np.where(x <= 0, 0.0, x)  # NaN stays NaN
    ref_g = np.where(x > 0, 1.0, 0.0)  # derivative 0 at 0, as in PyTorch; NaN: where(le(NaN, 0)) -> x's branch
    ref_g[np.isnan(x)] = 1.0

    def f(x):
        return (tp.relu(x) + tp.relu(x * 1.0)).sum()  # two relus of one shape: one shared zero

    np.testing.assert_array_equal(tp.relu(tp.tensor(x)).numpy(), ref)
    g = grad(f)(tp.tensor(x)).numpy()
    np.testing.assert_array_equal(g, 2 * ref_g)
    np.testing.assert_array_equal(tp.compile(grad(f))(tp.tensor(x)).numpy(), 2 * ref_g)
    per = vmap(grad(lambda r: tp.relu(r).sum()))(tp.tensor(x)).numpy()
    np.testing.assert_array_equal(per, ref_g)


def test_one_zero_node_per_shape_and_no_capture():
    seen = {}

    def f(x, y):
        out = tp.relu(x).sum() + tp.relu(x + 1.0).sum() + tp.relu(y).sum()
        tr = tp._trace.current_trace()
        seen["fulls"] = [n for n in tr.builder.nodes if n.prim.name == "full"]
        seen["captures"] = len(tr.capture_values)
        return out

    grad(f)(tp.ones(4), tp.ones(3, dtype=tp.float64))
    # (4,) float32 and (3,) float64 zeros; the user's 1.0 is the only capture (a scalar input)
    assert sorted((n.attrs["shape"], n.attrs["dtype"].name) for n in seen["fulls"]) == [((3,), "float64"),
                                                                                      ((4,), "float32")]
    assert seen["captures"] == 1
