"""Every primitive's numpy `impl` against an independent expectation and its own shape rule."""
import numpy as np
import pytest

from tensorplay import ir
from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType
from tests.prim_samples import ALL_SAMPLES, Sample, impl_results, philox4x32, result_types, sample_id, samples

RTOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13}
ATOL = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-14}


def run_impl(s: Sample) -> list[np.ndarray]:
    """The impl's results (one per element of a tuple result)."""
    return impl_results(s.prim, s.args, s.attrs)


def abstract(s: Sample) -> list[TensorType]:
    """The shape rule's result types (one per element of a tuple result)."""
    return result_types(s.prim, s.args, s.attrs)


def test_every_primitive_has_samples():
    missing = [p.name for p in ir.all_primitives() if not samples(p.name)]
    assert not missing, f"primitives without samples in tests/prim_samples.py: {missing}"


def test_all_samples_covers_registry():
    assert {s.prim for s in ALL_SAMPLES} == set(ir.REGISTRY)


def test_unknown_primitive_raises():
    with pytest.raises(KeyError):
        samples("no_such_primitive")


RANK_AT_LEAST_1 = {"concatenate", "iota", "argsort",  # their shape rules need an axis
                   "linalg_solve", "cholesky", "qr", "eigh", "svd"}  # (..., m, n) matrices


def _probe(s: Sample, d: dt.DType) -> bool:
    """Does the shape rule accept `s` with its data operands (or its `dtype` attribute) switched to `d`?

    Only ``data`` operands switch (`Primitive.roles`): a predicate stays bool, indices stay integer."""
    prim = ir.get_primitive(s.prim)
    attrs = dict(s.attrs)
    types = [TensorType(a.shape, dt.from_numpy(a.dtype)) for a in s.args]
    if not types:
        attrs["dtype"] = d
    elif prim.role(0) == "tuple":  # the sample gives the tuple's elements: switch the first one
        types = [ir.TupleType([TensorType(types[0].shape, d), *types[1:]])]
    else:
        types = [TensorType(t.shape, d) if prim.role(i) == "data" else t for i, t in enumerate(types)]
    try:
        prim.abstract_eval(*types, **attrs)
    except (TypeError, ValueError):
        return False
    return True


def _data_dtype(s: Sample) -> dt.DType:
    if not s.args:
        return abstract(s)[0].dtype  # operand-free (iota, full, constant): the result's dtype
    prim = ir.get_primitive(s.prim)
    if prim.role(0) == "tuple":  # the args are the tuple's elements; the first one is switched by _probe
        return dt.from_numpy(s.args[0].dtype)
    return dt.from_numpy(s.args[next(i for i in range(len(s.args)) if prim.role(i) == "data")].dtype) \
        if any(prim.role(i) == "data" for i in range(len(s.args))) else dt.from_numpy(s.args[0].dtype)


def test_every_elementwise_primitive_declares_its_sample_domain():
    """Input domains live on the primitive (one per operand), not in the tests."""
    from prim_samples import _is_plain_elementwise

    missing = [p.name for p in ir.all_primitives() if _is_plain_elementwise(p)
               and (p.domain is None or len(p.domain) != p.num_operands)]
    assert not missing, f"elementwise primitives without a sample domain (Primitive(domain=...)): {missing}"


@pytest.mark.parametrize("name", sorted(ir.REGISTRY))
def test_samples_cover_shapes_and_dtypes(name):
    """Samples see 0-d, size-1 and empty operands and results, and every dtype the shape rule accepts."""
    ss = samples(name)
    assert ss, f"{name} has no samples"
    prim = ir.get_primitive(name)
    shapes = [a.shape for s in ss for a in s.args] + [t.shape for s in ss for t in abstract(s)]
    if name not in RANK_AT_LEAST_1:
        assert any(sh == () for sh in shapes), f"{name}: no 0-d operand or result"
    assert any(int(np.prod(sh)) == 1 for sh in shapes), f"{name}: no size-1 operand or result"
    assert any(int(np.prod(sh)) == 0 for sh in shapes), f"{name}: no empty operand or result"
    if prim.random:
        return
    seen = {_data_dtype(s) for s in ss}
    for d in dt.ALL:
        if _probe(ss[0], d):
            assert d in seen, f"{name} accepts {d.name} but has no {d.name} sample"


def test_samples_are_read_only():
    for s in ALL_SAMPLES:
        for a in s.args:
            assert isinstance(a, np.ndarray) and not a.flags.writeable, sample_id(s)


@pytest.mark.parametrize("s", ALL_SAMPLES, ids=sample_id)
def test_impl_matches_expected_and_shape_rule(s: Sample):
    outs, want_types = run_impl(s), abstract(s)
    assert len(outs) == len(want_types), f"impl returned {len(outs)} results, abstract_eval {len(want_types)}"
    wants = [None] * len(outs)
    if s.expected is not None:
        wants = s.expected(*s.args, **s.attrs)
        wants = list(wants) if isinstance(wants, tuple) else [wants]
        assert len(wants) == len(outs), f"expected {len(wants)} results, impl returned {len(outs)}"
    for out, want_type, want in zip(outs, want_types, wants):
        assert isinstance(out, np.ndarray), f"{s.prim} impl returned {type(out).__name__}, not an ndarray"
        assert out.shape == want_type.shape, f"impl shape {out.shape} != abstract_eval {want_type}"
        assert out.dtype == want_type.dtype.np, f"impl dtype {out.dtype} != abstract_eval {want_type}"
        if want is None:
            continue
        want = np.asarray(want)
        assert want.shape == out.shape, f"expected shape {want.shape} != impl shape {out.shape}"
        if out.dtype.kind == "f":
            np.testing.assert_allclose(out, want.astype(out.dtype), rtol=RTOL[out.dtype], atol=ATOL[out.dtype])
        else:
            np.testing.assert_array_equal(out, want.astype(out.dtype), strict=True)


def test_impls_do_not_write_to_inputs():
    """Arguments are read-only: an impl writing into its operand would have raised above; check copies too."""
    for s in ALL_SAMPLES:
        before = [a.copy() for a in s.args]
        run_impl(s)
        for a, b in zip(s.args, before):
            np.testing.assert_array_equal(a, b)


# --- Philox known-answer vectors (Random123, kat_vectors: philox4x32_10) -------------------------
@pytest.mark.parametrize("ctr,key,want", [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_reference_matches_published_vectors(ctr, key, want):
    assert philox4x32(ctr, key) == want


def test_random_draws_are_deterministic_and_key_dependent():
    prim = ir.get_primitive("random_uniform")
    a = prim.impl(np.array([1, 0], np.int64), shape=(8,), dtype=dt.float32)
    b = prim.impl(np.array([1, 0], np.int64), shape=(8,), dtype=dt.float32)
    c = prim.impl(np.array([2, 0], np.int64), shape=(8,), dtype=dt.float32)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.all((a >= 0) & (a < 1))


# --- semantics the FD-friendly corpus stays away from ------------------------------------------
def _impl(name, *args, **attrs):
    return ir.get_primitive(name).impl(*(np.asarray(a) for a in args), **attrs)


def test_round_half_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], np.float32)
    np.testing.assert_array_equal(_impl("round", x), np.array([-2, -2, -0, 0, 2, 2], np.float32))


def test_floor_ceil_at_integers():
    x = np.array([-2.0, -0.0, 3.0], np.float64)
    np.testing.assert_array_equal(_impl("floor", x), x)
    np.testing.assert_array_equal(_impl("ceil", x), x)


def test_rem_takes_the_sign_of_the_dividend():
    x = np.array([7, -7, 7, -7], np.int32)
    y = np.array([3, 3, -3, -3], np.int32)
    np.testing.assert_array_equal(_impl("rem", x, y), np.array([1, -1, 1, -1], np.int32))
    np.testing.assert_array_equal(_impl("rem", x.astype(np.float64), y.astype(np.float64)), [1.0, -1.0, 1.0, -1.0])


def test_arg_reductions_pick_the_first_of_ties():
    x = np.array([[1, 3, 3], [2, 2, 0]], np.int32)
    np.testing.assert_array_equal(_impl("argmax", x, axis=1, index_dtype=dt.int64), [1, 0])
    np.testing.assert_array_equal(_impl("argmin", x, axis=0, index_dtype=dt.int64), [0, 1, 1])


def test_convert_truncates_toward_zero():
    x = np.array([-1.7, -0.2, 0.2, 1.7], np.float32)
    np.testing.assert_array_equal(_impl("convert_element_type", x, dtype=dt.int32), [-1, 0, 0, 1])
