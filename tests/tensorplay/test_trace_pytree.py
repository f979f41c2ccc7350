"""The pytree used by tracing: generated unflatten functions rebuild every container kind, deep
trees fall back to closures, and a wrong leaf count is a clear error."""
from collections import OrderedDict, defaultdict, namedtuple

import pytest

from tensorplay import _pytree

Point = namedtuple("Point", "x y")


TREES = [
    1,
    None,
    (),
    [],
    {},
    (1,),
    (1, [2, 3], {"a": 4, "b": (5, None)}),
    OrderedDict([("z", 1), ("a", [2])]),
    defaultdict(list, {"k": 1, 2: (3, 4)}),
    Point(1, [2, Point(3, 4)]),
    {"nested": {"deeper": [(1, 2), {"x": 3}]}},
]


def _same(a, b):
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a.keys()) == list(b.keys())
        if isinstance(a, defaultdict):
            assert a.default_factory is b.default_factory
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_round_trip_with_new_leaves(tree):
    leaves, td = _pytree.tree_flatten(tree)
    new = [f"leaf{i}" for i in range(len(leaves))]
    rebuilt = _pytree.tree_unflatten(td, new)
    assert _pytree.tree_flatten(rebuilt)[0] == new
    assert _pytree.tree_flatten(rebuilt)[1] == td
    _same(_pytree.tree_unflatten(td, leaves), tree)
    _same(_pytree.tree_unflatten(td, iter(leaves)), tree)  # any iterable of leaves


def test_deep_trees_are_rebuilt_too():
    tree = 0
    for i in range(1, 200):
        tree = [i, tree] if i % 2 else (tree, {"k": i})
    leaves, td = _pytree.tree_flatten(tree)
    _same(_pytree.tree_unflatten(td, leaves), tree)


def test_wrong_leaf_count_is_an_error():
    _, td = _pytree.tree_flatten((1, [2, 3]))
    with pytest.raises(ValueError, match="takes 3 leaves, got 2"):
        _pytree.tree_unflatten(td, [1, 2])
    with pytest.raises(ValueError, match="takes 3 leaves, got 4"):
        _pytree.tree_unflatten(td, [1, 2, 3, 4])
