"""`rearrange`: spec examples, a pattern table against numpy, agreement with einops, errors, caching,
views, and transforms."""
import dataclasses
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tensorplay as tp
import tensorplay.func as tpf
from tensorplay.func import rearrange
from tensorplay.func._rearrange import RearrangeError, make_recipe, parse_pattern

try:
    import einops
except ImportError:  # pragma: no cover
    einops = None

needs_einops = pytest.mark.skipif(einops is None, reason="einops is not installed")


def arr(*shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


# --- the spec ----------------------------------------------------------------------------------------
def test_spec_examples_as_written():
    code = (
        "import tensorplay\n"
        "from tensorplay.func import rearrange\n"
        "x = tensorplay.randn(2, 3, 4)\n"
        "print(rearrange(x, 'b h w -> b w h').shape)\n"
        "print(rearrange(x, 'b h w -> b (h w)').shape)\n"
        "print(rearrange(x, '(b1 b2) h w -> b1 b2 h w', b1=1).shape)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["tensorplay.Size(2, 4, 3)", "tensorplay.Size(2, 12)",
                                       "tensorplay.Size(1, 2, 3, 4)"]


def test_sequence_of_tensors_is_stacked_on_a_new_leading_axis():
    xs = [tp.tensor(arr(2, 3) + i) for i in range(4)]
    out = rearrange(xs, "n h w -> h (n w)")
    np.testing.assert_array_equal(out.numpy(), np.stack([x.numpy() for x in xs]).transpose(1, 0, 2).reshape(2, 12))
    assert rearrange(tuple(xs), "n h w -> n h w").shape == (4, 2, 3)
    with pytest.raises(ValueError, match="empty list"):
        rearrange([], "n -> n")


# --- a table against numpy ----------------------------------------------------------------------------
TABLE = [
    ("b h w -> b w h", (2, 3, 4), {}, lambda a: a.transpose(0, 2, 1)),
    ("b h w -> b (h w)", (2, 3, 4), {}, lambda a: a.reshape(2, 12)),
    ("b h w -> (b h w)", (2, 3, 4), {}, lambda a: a.reshape(-1)),
    ("b h w -> w (b h)", (2, 3, 4), {}, lambda a: a.transpose(2, 0, 1).reshape(4, 6)),
    ("(b1 b2) h w -> b1 b2 h w", (2, 3, 4), {"b1": 1}, lambda a: a.reshape(1, 2, 3, 4)),
    ("(h h2) (w w2) -> h w (h2 w2)", (4, 6), {"h2": 2, "w2": 3},
     lambda a: a.reshape(2, 2, 2, 3).transpose(0, 2, 1, 3).reshape(2, 2, 6)),
    ("b (c h) w -> (b h) c w", (2, 6, 4), {"c": 3},
     lambda a: a.reshape(2, 3, 2, 4).transpose(0, 2, 1, 3).reshape(4, 3, 4)),
    ("... -> ...", (2, 3), {}, lambda a: a),
    ("b ... -> ... b", (2, 3, 4), {}, lambda a: a.transpose(1, 2, 0)),
    ("b ... -> b (...)", (2, 3, 4), {}, lambda a: a.reshape(2, 12)),
    ("... h w -> ... w h", (5, 2, 3, 4), {}, lambda a: a.swapaxes(-1, -2)),
    ("... c -> c ...", (7,), {}, lambda a: a),
    ("a ... b -> (b ... a)", (2, 3, 4, 5), {}, lambda a: a.transpose(3, 1, 2, 0).reshape(-1)),
    ("b 1 w -> b w", (2, 1, 4), {}, lambda a: a.reshape(2, 4)),
    ("b () w -> w b", (2, 1, 4), {}, lambda a: a.reshape(2, 4).T),
    ("b w -> b 1 w ()", (2, 4), {}, lambda a: a.reshape(2, 1, 4, 1)),
    ("b w -> (b 1 w)", (2, 4), {}, lambda a: a.reshape(8)),
    ("h w -> w h", (1, 1), {}, lambda a: a.T),
    (" a  b->b a ", (2, 3), {}, lambda a: a.T),
    ("x -> x", (0,), {}, lambda a: a),
    ("(a b) -> b a", (6,), {"a": 2, "b": 3}, lambda a: a.reshape(2, 3).T),
    ("b (h w) -> b h w", (2, 0), {"h": 3}, lambda a: a.reshape(2, 3, 0)),
    ("-> ", (), {}, lambda a: a),
    ("-> 1 ()", (), {}, lambda a: a.reshape(1, 1)),
]


@pytest.mark.parametrize("pattern,shape,lengths,ref", TABLE, ids=[t[0] for t in TABLE])
def test_table_against_numpy(pattern, shape, lengths, ref):
    a = arr(*shape)
    out = rearrange(tp.tensor(a), pattern, **lengths)
    np.testing.assert_array_equal(out.numpy(), ref(a))
    assert out.shape == ref(a).shape


@needs_einops
@pytest.mark.parametrize("pattern,shape,lengths,ref", TABLE, ids=[t[0] for t in TABLE])
def test_table_against_einops(pattern, shape, lengths, ref):
    a = arr(*shape)
    np.testing.assert_array_equal(rearrange(tp.tensor(a), pattern, **lengths).numpy(),
                                  einops.rearrange(a, pattern, **lengths))


# --- random patterns against einops -------------------------------------------------------------------
@st.composite
def random_patterns(draw):
    names = iter("abcdefghijklmnop")
    left, elementary, lengths, shape = [], [], {}, []
    for _ in range(draw(st.integers(0, 3))):
        parts = [(next(names), draw(st.integers(1, 3))) for _ in range(draw(st.integers(1, 3)))]
        elementary += parts
        shape.append(int(np.prod([n for _, n in parts])))
        if len(parts) == 1 and not draw(st.booleans()):
            left.append(parts[0][0])
            continue
        left.append("(" + " ".join(p for p, _ in parts) + ")")
        hidden = draw(st.integers(0, len(parts) - 1))  # one length may be inferred
        for k, (p, n) in enumerate(parts):
            if k != hidden or draw(st.booleans()):
                lengths[p] = n
    dots = draw(st.integers(0, 2)) if draw(st.booleans()) else None
    if dots is not None:
        pos = draw(st.integers(0, len(left)))
        left.insert(pos, "...")
        shape[pos:pos] = [draw(st.integers(1, 3)) for _ in range(dots)]
    order = draw(st.permutations([p for p, _ in elementary] + (["..."] if dots is not None else [])))
    right, i = [], 0
    while i < len(order):
        k = draw(st.integers(1, 3))
        group = list(order[i:i + k])
        i += k
        if draw(st.integers(0, 4)) == 0:
            group.append("1")
        right.append(group[0] if len(group) == 1 and group[0] != "1" and draw(st.booleans())
                     else "(" + " ".join(group) + ")")
    if draw(st.integers(0, 5)) == 0:
        right.insert(draw(st.integers(0, len(right))), "()")
    return " ".join(left) + " -> " + " ".join(right), tuple(shape), lengths


@needs_einops
@given(random_patterns())
@settings(max_examples=150)
def test_random_patterns_agree_with_einops(case):
    pattern, shape, lengths = case
    a = arr(*shape)
    want = einops.rearrange(a, pattern, **lengths)
    got = rearrange(tp.tensor(a), pattern, **lengths)
    np.testing.assert_array_equal(got.numpy(), want, err_msg=pattern)


# --- errors -------------------------------------------------------------------------------------------
ERRORS = [
    # (pattern, shape, lengths, what the message says)
    ("b h w", (2, 3, 4), {}, "exactly one '->'"),
    ("b -> h -> w", (2,), {}, "exactly one '->'"),
    ("b (h w -> b h w", (2, 6), {}, "unmatched '\\('"),
    ("b h) w -> b h w", (2, 3, 4), {}, "unmatched '\\)'"),
    ("b ((h w)) -> b h w", (2, 6), {}, "nested parentheses"),
    ("b h$ -> b h$", (2, 3), {}, "invalid axis name 'h\\$'"),
    ("b _h -> b _h", (2, 3), {}, "underscore"),
    ("b 2 -> b", (2, 2), {}, "anonymous axis 2"),
    ("b b -> b", (2, 2), {}, "axis 'b' repeated on the left"),
    ("b h -> b h b", (2, 3), {}, "axis 'b' repeated on the right"),
    ("b ... ... -> b", (2, 3), {}, "'...' appears more than once"),
    ("b h -> b", (2, 3), {}, "axis 'h' appears on one side only"),
    ("b -> b c", (2,), {}, "axis 'c' appears on one side only"),
    ("b ... -> b", (2, 3), {}, "'...' appears on the left side only"),
    ("b -> b ...", (2,), {}, "'...' appears on the right side only"),
    ("b (h ...) -> b h ...", (2, 6), {}, "inside parentheses is only allowed on the right"),
    ("b h w -> b w h", (2, 3), {}, "wrong number of dimensions: expected 3, got a 2-d tensor"),
    ("b h -> h b", (2, 3, 4), {}, "wrong number of dimensions: expected 2, got a 3-d tensor"),
    ("a b c ... -> c b a ...", (2, 3), {}, "expected at least 3"),
    ("(h w) -> h w", (7,), {"h": 2}, "cannot divide an axis of length 7"),
    ("(h w) -> h w", (6,), {}, "cannot infer the lengths of 'h', 'w'"),
    ("(h w) -> h w", (6,), {"h": 2, "w": 4}, "does not match \\(h w\\) of product 8"),
    ("h w -> w h", (2, 3), {"h": 3}, "does not match h=3"),
    ("h w -> w h", (2, 3), {"q": 3}, "axis length given for 'q'"),
    ("b 1 -> b", (2, 3), {}, "length 3 is matched by a unit axis"),
    ("(h w) -> h w", (6,), {"h": -2}, "must be a non-negative int"),
]


@pytest.mark.parametrize("pattern,shape,lengths,message", ERRORS, ids=[e[0] + str(e[1]) for e in ERRORS])
def test_malformed_patterns_raise_value_errors_quoting_the_pattern(pattern, shape, lengths, message):
    with pytest.raises(ValueError, match=message) as info:
        rearrange(tp.tensor(arr(*shape)), pattern, **lengths)
    assert isinstance(info.value, RearrangeError)
    assert f'"{pattern}"' in str(info.value)


def test_non_string_pattern_is_a_type_error():
    with pytest.raises(TypeError, match="pattern must be a string"):
        rearrange(tp.zeros(2), ["b", "->", "b"])


# --- parsing once, immutable recipes ------------------------------------------------------------------
def test_patterns_are_parsed_once_into_immutable_cached_recipes():
    pattern = "cache_probe (h w) -> cache_probe h w"
    parse_pattern.cache_clear()
    make_recipe.cache_clear()
    x = tp.zeros(2, 6)
    for _ in range(5):
        rearrange(x, pattern, h=2)
    assert parse_pattern.cache_info().misses == 1 and make_recipe.cache_info().misses == 1
    assert make_recipe.cache_info().hits == 4
    recipe = make_recipe(pattern, 2, ("h",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        recipe.permutation = ()
    assert recipe.elementary == ("cache_probe", "h", "w")


# --- views and transforms -----------------------------------------------------------------------------
def test_result_is_a_view_when_reshape_allows():
    x = tp.zeros(2, 3, 4)
    v = rearrange(x, "b h w -> w (b h)")[0]  # permuted: (b h) is still mergeable, then a row of it
    v.fill_(1)
    assert x[:, :, 0].sum().item() == 6
    assert rearrange(x, "b h w -> (b w) h")._base is None  # needs a copy, as reshape does


@pytest.mark.parametrize("transform", ["compile", "vmap", "grad"])
def test_under_transforms(transform):
    pattern = "(h h2) w -> w h h2"
    f = lambda t: rearrange(t, pattern, h2=2).sin()  # noqa: E731
    x = tp.tensor(arr(4, 3) / 10)
    if transform == "compile":
        np.testing.assert_allclose(tp.compile(f)(x).numpy(), f(x).numpy(), rtol=1e-6)
    elif transform == "vmap":
        xs = tp.tensor(arr(5, 4, 3) / 10)
        want = np.stack([f(xs[i]).numpy() for i in range(5)])
        np.testing.assert_allclose(tpf.vmap(f)(xs).numpy(), want, rtol=1e-6)
    else:
        g = tpf.grad(lambda t: (f(t) * tp.arange(12.0).reshape(3, 2, 2)).sum())(x)
        want = (np.cos(arr(4, 3) / 10) * np.arange(12.0).reshape(3, 2, 2).transpose(1, 2, 0).reshape(4, 3))
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-5)
