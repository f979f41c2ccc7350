"""How control flow compiles: a scan is one LLVM loop whatever its length (never unrolled by us),
its body is fused kernels, graphs with control flow are never split over threads, the memory and
disk caches key on region contents, and the normal form folds tuples."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tensorplay import codegen
from tensorplay.codegen import disk_cache
from tensorplay.codegen.executable import _disk_key
from tensorplay.codegen.module import build_module, plan_buffers, splittable
from tensorplay.codegen.schedule import normalize, schedule
from control_graphs import F32, T, assert_compiled_matches, graph, random_args, region, scan_graph

TRIPLE = "x86_64-unknown-linux-gnu"  # the unoptimised text is host-independent (as the golden tests)


def _cell(b, w, h, x):
    return [b.tanh(b.add(b.dot_general(h, w, contract=((1,), (0,)), batch=((), ())), x)), b.reduce_sum(h, axes=(1,))]


def _rnn(length: int):
    return scan_graph(_cell, [T((6, 6), F32)], [T((2, 6), F32)], [T((length, 2, 6), F32)], length)


def _unoptimised(g) -> str:
    kernels = schedule(g)
    return build_module(g, kernels, plan_buffers(g, kernels), "t", TRIPLE, "")[0]


def _function(text: str, name: str) -> str:
    start = text.index(f'define i64 @"{name}"')
    return text[start:text.index("\n}", start)]


def test_a_1000_step_scan_is_one_loop_in_the_entry():
    entry = _function(_unoptimised(_rnn(1000)), "t_entry")
    body_calls = re.findall(r'call void @"t_k0_scan_body_k\d+_\w+"', entry)
    assert len(body_calls) == len(schedule(_rnn(1000))[0].regions["body"].steps) >= 2
    assert re.search(r'%"scan" = phi\s+i64 \[0, %"entry"\], \[%"scan.next", %"loop.stay"\]', entry)
    assert re.search(r'icmp slt i64 %"scan", 1000', entry)
    assert entry.count('br label %"scan.head"') == 2  # the way in and the back-edge


def test_the_module_does_not_grow_with_the_length():
    short, long = _unoptimised(_rnn(10)), _unoptimised(_rnn(1000))
    # only the trip count and the stacked types' sizes differ
    assert abs(len(long) - len(short)) <= 16
    assert short.replace("10", "") == long.replace("1000", "").replace("10", "")


def test_the_optimised_module_keeps_the_loop():
    exe = codegen.compile_graph(_rnn(1000))
    entry = exe.llvm_ir[exe.llvm_ir.index("_entry("):]
    entry = entry[:entry.index("\n}")]
    assert " phi " in entry and re.search(r"icmp \w+ i64 %[\w.]+, (1000|999)\b", entry)
    # a few call sites per body kernel, not 1000 (LLVM may peel the first step, or unroll a
    # little: it fully unrolls at most 4 iterations, see `jit`)
    for k in exe.kernels[0]["regions"]["body"]:
        sites = len(re.findall(rf'@"?tp_scan_k0_scan_body_{k["name"]}"?\(', entry))
        assert 1 <= sites <= 8, (k["name"], sites)
    assert_compiled_matches(_rnn(1000), random_args(_rnn(1000), 0, scale=0.3), rtol=1e-5)


def test_a_loop_body_is_fused_like_any_graph():
    def body(b, c, x):
        y = b.exp(b.neg(b.mul(c, x)))
        return [b.add(y, b.sin(x)), b.reduce_sum(b.mul(y, y), axes=(0,))]
    g = scan_graph(body, [], [T((16,), F32)], [T((5, 16), F32)], 5)
    exe = codegen.compile_graph(g)
    (step,) = exe.kernels
    assert step["kind"] == "scan"
    alone = codegen.compile_graph(g.nodes[0].attrs["body"].graph)  # the body as a graph of its own
    assert step["regions"]["body"] == alone.kernels
    assert [k["nodes"] for k in alone.kernels] == [["mul", "neg", "exp"], ["sin", "add"], ["mul", "reduce_sum"]]
    assert_compiled_matches(g, random_args(g, 1, scale=0.5), rtol=1e-5)


def test_graphs_with_control_flow_are_never_split_over_threads():
    n = 1 << 18  # large enough for the flat elementwise kernels to be split if they were alone
    g = graph("split", [T((n,), F32), T((), F32), T((3,), F32)],
              lambda b, x, c, xs: [b.sin(x), b.tuple_get(b.scan(c, xs, body=region(
                  "body", [T((), F32), T((), F32)], lambda r, c, x: [r.add(c, x), r.mul(c, x)]),
                  num_consts=0, num_carry=1, length=3, reverse=False), index=1), b.cos(x)])
    kernels = schedule(g)
    assert splittable(kernels) == 0
    assert splittable([k for k in kernels if k.kind == "loop"]) == n  # the kernels alone would be split
    exe = codegen.compile_graph(g)
    assert exe.stats["threads"] == 1
    assert_compiled_matches(g, random_args(g, 2))


# --- caches --------------------------------------------------------------------------------------
def _scan_with(op: str):
    return scan_graph(lambda b, c, x: [getattr(b, op)(b.add(c, x)), c], [], [T((4,), F32)], [T((3, 4), F32)], 3)


def test_cache_keys_see_region_contents():
    sin, cos, sin2 = _scan_with("sin"), _scan_with("cos"), _scan_with("sin")
    assert sin.structural_key() != cos.structural_key()
    assert sin.structural_key() == sin2.structural_key()
    assert _disk_key(sin) != _disk_key(cos)
    assert _disk_key(sin) == _disk_key(sin2)
    before = codegen.compile_count()
    a, b, c = codegen.compile_graph(sin), codegen.compile_graph(cos), codegen.compile_graph(sin2)
    assert a is c and a is not b and codegen.compile_count() - before <= 2
    args = random_args(sin, 3)
    assert not np.allclose(a(*args)[0], b(*args)[0])


def test_a_scan_loads_from_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORPLAY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TENSORPLAY_DISK_CACHE", raising=False)
    g = scan_graph(lambda b, x, c, i: [b.add(c, b.take(x, i, axis=0)), c], [T((4,), F32)], [T((), F32)],
                   [T((3,), dt_int32())], 3)
    args = [np.arange(4, dtype=np.float32), np.array(0, np.float32), np.array([0, 3, 1], np.int32)]
    codegen.clear_cache()
    first = codegen.compile_graph(g)
    want = first(*args)
    codegen.clear_cache()
    again = codegen.compile_graph(g)
    assert again.stats["source"] == "disk cache" and disk_cache.enabled()
    for x, y in zip(again(*args), want):
        np.testing.assert_array_equal(x, y)
    with pytest.raises(IndexError, match="inside the scan body region"):
        again(args[0], args[1], np.array([0, 9, 1], np.int32))
    codegen.clear_cache()


def dt_int32():
    from tensorplay.ir import dtypes as dt
    return dt.int32


# --- normal form ---------------------------------------------------------------------------------
def test_tuple_get_of_make_tuple_folds_and_repeated_projections_merge():
    body = region("body", [T((3,), F32), T((3,), F32)], lambda b, c, x: [b.add(c, x), c])

    def fn(b, c, xs):
        t = b.make_tuple(b.sin(c), c)
        s = b.scan(b.tuple_get(t, index=0), xs, body=body, num_consts=0, num_carry=1, length=2, reverse=False)
        return [b.tuple_get(s, index=0), b.tuple_get(s, index=0), b.tuple_get(t, index=1), b.tuple_get(s, index=1)]
    g = graph("tuples", [T((3,), F32), T((2, 3), F32)], fn)
    n = normalize(g)
    assert n is not g and [x.prim.name for x in n.nodes] == ["sin", "scan", "tuple_get", "tuple_get"]
    assert n.outputs[0] is n.outputs[1] and n.outputs[2] is g.inputs[0]
    assert normalize(n) is n
    assert_compiled_matches(g, random_args(g, 4))
