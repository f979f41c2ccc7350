"""The CLI's little languages (shape specs, transform/pass specs, targets) and its pipeline, in process."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tensorplay as tp
from tensorplay.ir import dtypes as dt
from tensorplay.tools.cli_pipeline import TRANSFORMS, PassRecorder, build_stages, graphs_in, pass_functions, transform_def
from tensorplay.tools.cli_run import compare_outputs, positive_inputs, random_inputs
from tensorplay.tools.cli_specs import (CallSpec, SpecError, TensorSpec, example_tensor, load_target, parse_call_spec,
                             parse_tensor_spec)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "tests", "tools", "fixtures", "models.py")


# --- tensor specs --------------------------------------------------------------------------------
@pytest.mark.parametrize("text,shape,dtype", [
    ("f32[64,784]", (64, 784), dt.float32), ("f32[]", (), dt.float32), ("i64[3]", (3,), dt.int64),
    ("i1[2, 2]", (2, 2), dt.bool_), (" f64 [ 1 , 0 ] ", (1, 0), dt.float64), ("int32[5]", (5,), dt.int32),
    ("bool[]", (), dt.bool_), ("float64[2,]", (2,), dt.float64),
])
def test_tensor_spec(text, shape, dtype):
    spec = parse_tensor_spec(text)
    assert spec == TensorSpec(shape, dtype)


@pytest.mark.parametrize("text", ["f32", "f32[", "f32[3", "f32[3,,4]", "f32[-1]", "f32[3.5]", "[3]", "f8[3]",
                                  "u8[2]", "f32[3]x", "", "f32[a]"])
def test_malformed_tensor_specs_quote_the_input(text):
    with pytest.raises(SpecError) as e:
        parse_tensor_spec(text)
    assert repr(text) in str(e.value)


@given(st.lists(st.integers(0, 50), max_size=4), st.sampled_from(["f32", "f64", "i32", "i64", "i1"]))
def test_tensor_spec_round_trip(shape, short):
    spec = parse_tensor_spec(f"{short}[{','.join(map(str, shape))}]")
    assert spec.shape == tuple(shape) and spec.dtype.short == short
    assert parse_tensor_spec(str(spec)) == spec
    t = example_tensor(spec, np.random.default_rng(0))
    assert tuple(t.shape) == tuple(shape) and t.dtype is spec.dtype


# --- call specs ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text,name,kwargs", [
    ("grad", "grad", {}),
    ("grad()", "grad", {}),
    ("vmap(in_dims=(None, 0))", "vmap", {"in_dims": (None, 0)}),
    ("vmap(in_dims=[0, [1, None]], randomness='same')", "vmap", {"in_dims": (0, (1, None)), "randomness": "same"}),
    ("jacrev(argnums=(0, 1), chunk_size=4)", "jacrev", {"argnums": (0, 1), "chunk_size": 4}),
    ("simplify.cse", "simplify.cse", {}),
    ("batching.batch_graph(in_dims=(0,), axis_size=5)", "batching.batch_graph", {"in_dims": (0,), "axis_size": 5}),
    ("f(x=-1.5e3, y=True, z=None)", "f", {"x": -1500.0, "y": True, "z": None}),
])
def test_call_spec(text, name, kwargs):
    spec = parse_call_spec(text)
    assert spec.name == name and spec.kw == kwargs
    hash(spec)  # immutable, cacheable


@pytest.mark.parametrize("text,fragment", [
    ("vmap(0)", "by keyword"), ("vmap(in_dims=x)", "Python literal"), ("vmap(in_dims=(0,)", "malformed"),
    ("vmap(**d)", "'**'"), ("1 + 2", "expected name"), ("vmap(a=1, a=2)", "malformed"), ("", "empty"),
    ("vmap(in_dims=__import__('os'))", "Python literal"), ("(lambda: 0)()", "expected name"),
    ("vmap(in_dims=[i for i in range(3)])", "Python literal"),
])
def test_malformed_call_specs(text, fragment):
    with pytest.raises(SpecError, match=None) as e:
        parse_call_spec(text)
    assert fragment in str(e.value)


def test_transform_table_validates_options():
    assert transform_def(CallSpec("vmap", (("in_dims", 0),))) is TRANSFORMS["vmap"]
    with pytest.raises(SpecError, match="no option 'argnum'"):
        transform_def(CallSpec("grad", (("argnum", 0),)))
    with pytest.raises(SpecError, match="unknown transform"):
        transform_def(CallSpec("vmapp"))


# --- targets -------------------------------------------------------------------------------------
def test_load_target_by_file_and_by_module(monkeypatch):
    monkeypatch.chdir(ROOT)
    f = load_target(f"{MODELS}:loss")
    g = load_target("tests.tools.fixtures.models:loss")
    assert f.__name__ == g.__name__ == "loss"
    with pytest.raises(SpecError, match="no function"):
        load_target(f"{MODELS}:nope")
    with pytest.raises(SpecError, match="no module named"):
        load_target("definitely_not_a_module_abc:f")
    with pytest.raises(SpecError, match="MODULE:FUNC"):
        load_target("loss")


# --- pipeline ------------------------------------------------------------------------------------
def test_stages_follow_the_transforms():
    from tensorplay.func import vmap
    from tests.tools.fixtures.models import loss

    stages = build_stages(fn=loss, specs=[parse_tensor_spec("f32[3]"), parse_tensor_spec("f32[6,3]")],
                          transforms=[parse_call_spec("vmap(in_dims=(None, 0))")])
    assert [s.kind for s in stages] == ["trace", "transform"]
    assert stages[0].graph.in_types[1].shape == (3,)  # the inner function sees one sample
    expected = tp.make_graph(vmap(loss, in_dims=(None, 0)), tp.ones(3), tp.ones(6, 3))
    assert stages[1].graph.structural_key() == expected.graph.structural_key()
    assert any(p.name == "batching.batch_graph" for p in stages[1].passes)


def test_stage_arguments_of_jvp_are_primals_then_tangents():
    from tests.tools.fixtures.models import loss

    f32 = parse_tensor_spec("f32[3]")
    with pytest.raises(SpecError, match="2n --arg specs"):
        build_stages(fn=loss, specs=[f32, f32, f32], transforms=[parse_call_spec("jvp")])


def test_pass_recorder_restores_the_functions():
    import tensorplay.ir.passes.simplify as simplify

    before = simplify.simplify
    with PassRecorder() as rec:
        assert simplify.simplify is not before
        g = tp.make_graph(lambda x: x * 1.0 + 0.0, tp.ones(3)).graph
        simplify.simplify(g)
    assert simplify.simplify is before
    assert any(r.name == "simplify.simplify" for r in rec.records)
    assert "simplify.simplify" in pass_functions() and "simplify.node_count" not in pass_functions()


def test_graphs_in_pass_results():
    import dataclasses

    g = tp.make_graph(lambda x: x, tp.ones(1)).graph

    @dataclasses.dataclass
    class Two:
        forward: object
        backward: object
        n: int

    assert graphs_in(g) == [("graph", g)]
    assert graphs_in(Two(g, g, 3)) == [("forward", g), ("backward", g)]
    assert graphs_in(3) == []


# --- run: random inputs and comparison -----------------------------------------------------------
def test_random_inputs_respect_dtypes_and_domains():
    from tensorplay.ir.text import parse_graph

    g = parse_graph("""func @f(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<4xi32>, %k: tensor<3x2xi64>,
                                %p: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xi32>) {
      %0 = tp.neg %a : tensor<4xf32>
      %1 = tp.log %0 : tensor<4xf32>
      %2 = tp.div %i, %i : tensor<4xi32>
      %3 = tp.select %p, %1, %b : tensor<4xf32>
      return %3, %2
    }""")
    assert positive_inputs(g) == {0, 2}
    arrays = random_inputs(g, seed=1)
    assert [a.dtype for a in arrays] == [np.float32, np.float32, np.int32, np.int64, np.bool_]
    assert (arrays[0] > 0).all() and (arrays[2] > 0).all() and (arrays[3] >= 0).all()
    assert all(np.array_equal(a, b) for a, b in zip(arrays, random_inputs(g, seed=1)))


def test_compare_outputs():
    from tensorplay.ir.text import parse_graph

    g = parse_graph("func @f(%a: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {\n  return %a, %a\n}")
    a = np.array([1.0, np.nan, np.inf], np.float32)
    ok, bad = compare_outputs(g, [a, a + np.float32(1e-3)], [a.copy(), a.copy()])
    assert ok.ok and ok.max_abs == 0.0
    assert not bad.ok and bad.max_abs == pytest.approx(1e-3, rel=1e-3)


TRANSFORM_CASES = [  # (spec, function in fixtures/models.py, final --arg specs)
    ("vmap(in_dims=(None, 0))", "loss", ["f32[3]", "f32[4,5,3]"]),
    ("chunk_vmap(in_dims=(None, 0), chunks=2)", "loss", ["f32[3]", "f32[4,5,3]"]),
    ("grad", "loss", ["f32[3]", "f32[5,3]"]),
    ("grad_and_value(argnums=(0, 1))", "loss", ["f32[3]", "f32[5,3]"]),
    ("jacrev", "two_outputs", ["f32[3]"]),
    ("jacfwd", "two_outputs", ["f32[3]"]),
    ("hessian", "loss", ["f32[3]", "f32[5,3]"]),
    ("jvp", "loss", ["f32[3]", "f32[5,3]", "f32[3]", "f32[5,3]"]),
    ("linearize", "loss", ["f32[3]", "f32[5,3]", "f32[3]", "f32[5,3]"]),
    ("vjp", "loss", ["f32[3]", "f32[5,3]"]),
    ("functionalize", "bump", ["f32[3]"]),
    ("compile", "loss", ["f32[3]", "f32[5,3]"]),
]


def test_every_transform_is_covered():
    assert {parse_call_spec(s).name for s, _, _ in TRANSFORM_CASES} == set(TRANSFORMS)


@pytest.mark.parametrize("spec,fname,args", TRANSFORM_CASES, ids=[c[0] for c in TRANSFORM_CASES])
def test_every_transform_builds_a_verified_stage(spec, fname, args):
    from tensorplay.ir.verify import verify
    from tests.tools.fixtures import models

    stages = build_stages(fn=getattr(models, fname), specs=[parse_tensor_spec(a) for a in args],
                          transforms=[parse_call_spec(spec)])
    assert len(stages) == 2
    final = stages[-1].graph
    verify(final)
    assert [tuple(t.shape) for t in final.in_types[:len(args)]] == [parse_tensor_spec(a).shape for a in args]
