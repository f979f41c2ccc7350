"""Pytrees keep dict insertion order and container types, as torch.func does (issue 11 item 3, issue 16 item 11)."""
from collections import OrderedDict, defaultdict, namedtuple

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import _pytree, nn
from tensorplay.func import functional_call, grad, jacrev, stack_module_state, vmap

Pair = namedtuple("Pair", "first second")


def test_flatten_follows_insertion_order_and_round_trips():
    tree = {"z": 1, "a": [2, {"y": 3, "b": 4}], "m": Pair(5, 6)}
    leaves, td = _pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5, 6]
    back = _pytree.tree_unflatten(td, leaves)
    assert back == tree and list(back) == ["z", "a", "m"] and list(back["a"][1]) == ["y", "b"]
    assert type(back["m"]) is Pair


def test_key_order_is_part_of_the_structure():
    _, ab = _pytree.tree_flatten({"a": 1, "b": 2})
    _, ba = _pytree.tree_flatten({"b": 2, "a": 1})
    assert ab != ba


@pytest.mark.parametrize("make", [
    lambda: OrderedDict(b=1, a=2),
    lambda: defaultdict(list, {"b": 1, "a": 2}),
])
def test_dict_subclasses_keep_their_type(make):
    tree = make()
    leaves, td = _pytree.tree_flatten(tree)
    back = _pytree.tree_unflatten(td, [x * 10 for x in leaves])
    assert type(back) is type(tree) and list(back.items()) == [("b", 10), ("a", 20)]
    if isinstance(tree, defaultdict):
        assert back.default_factory is list
    _, td_plain = _pytree.tree_flatten(dict(tree))
    assert td != td_plain


def test_grad_of_a_dict_keeps_insertion_order_so_zip_with_parameters_pairs_right():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    params = dict(model.named_parameters())
    x = tp.randn(5, 3)
    grads = grad(lambda p: functional_call(model, p, (x,)).sum())(params)
    assert list(grads) == [n for n, _ in model.named_parameters()]
    for p, g in zip(model.parameters(), grads.values()):
        assert tuple(p.shape) == tuple(g.shape)
    # the weight gradient of the last layer, by hand: sum over the batch of its input activations
    h = x.numpy() @ params["0.weight"].numpy().T + params["0.bias"].numpy()
    np.testing.assert_allclose(grads["1.weight"].numpy(), np.tile(h.sum(0), (2, 1)), rtol=1e-5, atol=1e-5)


def test_vmap_and_jacrev_keep_order_and_container_type():
    out = vmap(lambda d: OrderedDict(z=d["z"] * 2, a=d["a"]))({"z": tp.ones(2, 3), "a": tp.zeros(2)})
    assert type(out) is OrderedDict and list(out) == ["z", "a"]
    np.testing.assert_array_equal(out["z"].numpy(), np.full((2, 3), 2.0))
    dd = defaultdict(int)
    dd["y"], dd["x"] = tp.ones(2), tp.ones(2) * 3
    back = vmap(lambda d: d)(dd)
    assert type(back) is defaultdict and back.default_factory is int and list(back) == ["y", "x"]
    jac = jacrev(lambda d: d["w"] * d["b"])({"w": tp.tensor([1.0, 2.0]), "b": tp.tensor([3.0, 4.0])})
    assert list(jac) == ["w", "b"]
    np.testing.assert_allclose(jac["w"].numpy(), np.diag([3.0, 4.0]))
    np.testing.assert_allclose(jac["b"].numpy(), np.diag([1.0, 2.0]))
    nt = vmap(lambda p: Pair(p.second, p.first))(Pair(tp.ones(2), tp.zeros(2)))
    assert type(nt) is Pair and nt.first.tolist() == [0.0, 0.0]


def test_stack_module_state_keeps_parameter_order():
    models = [nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1)) for _ in range(2)]
    params, _ = stack_module_state(models)
    assert list(params) == [n for n, _ in models[0].named_parameters()]


def test_vmap_in_dims_dict_prefix_follows_keys_not_position():
    f = vmap(lambda d: d["a"] + d["b"], in_dims=({"b": None, "a": 0},))
    out = f({"a": tp.tensor([[1.0], [2.0]]), "b": tp.tensor([10.0])})
    assert out.tolist() == [[11.0], [12.0]]


def test_compile_cache_treats_key_orders_consistently():
    f = tp.compile(lambda d: (d["a"] - d["b"], {"b": d["b"], "a": d["a"]}))
    a, b = tp.tensor([5.0]), tp.tensor([2.0])
    r1, d1 = f({"a": a, "b": b})
    r2, d2 = f({"b": b, "a": a})
    assert r1.tolist() == r2.tolist() == [3.0]
    assert list(d1) == list(d2) == ["b", "a"] and d1["a"].tolist() == [5.0]
    passthrough = tp.compile(lambda d: d)
    for order in (("a", "b"), ("b", "a")):
        out = passthrough({k: {"a": a, "b": b}[k] for k in order})
        assert list(out) == list(order) and out["a"].tolist() == [5.0]
    assert passthrough.trace_count == 2
