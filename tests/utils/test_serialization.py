"""tp.save / tp.load: round trips, state dicts, data-only files, clear errors on damaged files."""
import io
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn, optim


def _round_trip(obj):
    buf = io.BytesIO()
    tp.save(obj, buf)
    buf.seek(0)
    return tp.load(buf)


def test_nested_containers_round_trip_with_types_dtypes_and_order():
    obj = {"b": [tp.arange(6).reshape(2, 3), (tp.tensor(1.5, dtype=tp.float64), None)], "a": OrderedDict(z=True, y=2),
           3: "text", (1, "k"): float("inf"), "dt": tp.int32, "arr": np.arange(3, dtype=np.int32),
           "empty": tp.zeros(0, 4), "scalar": tp.tensor(True)}
    back = _round_trip(obj)
    assert list(back) == list(obj)
    t = back["b"][0]
    assert t.dtype is tp.int64 and t.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert isinstance(back["b"][1], tuple) and back["b"][1][0].dtype is tp.float64 and back["b"][1][1] is None
    assert type(back["a"]) is OrderedDict and list(back["a"].items()) == [("z", True), ("y", 2)]
    assert back[3] == "text" and back[(1, "k")] == float("inf") and back["dt"] is tp.int32
    assert isinstance(back["arr"], np.ndarray) and back["arr"].tolist() == [0, 1, 2]
    assert tuple(back["empty"].shape) == (0, 4) and back["scalar"].item() is True


def test_non_contiguous_tensors_save_their_values():
    x = tp.arange(12.0).reshape(3, 4).T[1:]
    np.testing.assert_array_equal(_round_trip(x).numpy(), x.numpy())


def test_module_and_optimizer_state_dicts(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    opt = optim.Adam(model.named_parameters(), lr=0.01)
    params = dict(model.named_parameters())
    opt.step({k: tp.ones_like(v) for k, v in params.items()})
    path = tmp_path / "ckpt.tp"
    tp.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    assert not os.path.exists(str(path) + ".npz")  # written where asked
    ckpt = tp.load(str(path))
    fresh = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    fresh.load_state_dict(ckpt["model"])
    for (k, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    opt2 = optim.Adam(fresh.named_parameters(), lr=0.5)
    opt2.load_state_dict(ckpt["opt"])
    assert opt2.param_groups[0]["lr"] == 0.01
    s1, s2 = opt.state_dict()["state"], opt2.state_dict()["state"]
    assert list(s1) == list(s2)
    np.testing.assert_array_equal(s1[0]["exp_avg"].numpy(), s2[0]["exp_avg"].numpy())


def test_files_hold_no_pickles_and_unsupported_objects_are_errors():
    buf = io.BytesIO()
    tp.save({"w": tp.ones(2)}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        for name in z.namelist():
            assert b"\x80\x04" not in z.read(name)[:2]  # no member is a pickle stream
    with pytest.raises(TypeError, match="namedtuple"):
        tp.save(nn.modules.module._IncompatibleKeys([], []), io.BytesIO())
    with pytest.raises(TypeError, match="object"):
        tp.save({"f": object()}, io.BytesIO())
    with pytest.raises(ValueError, match="pickle_module"):
        tp.save(tp.ones(1), io.BytesIO(), pickle_module=pickle)


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_a_file_with_a_pickle_inside_is_refused_without_running_it():
    buf = io.BytesIO()
    np.savez(buf, __tensorplay__=np.array([_Boom()], dtype=object))
    buf.seek(0)
    with pytest.raises(RuntimeError, match="not a valid tensorplay file"):
        tp.load(buf)
    raw = io.BytesIO(pickle.dumps({"w": 1}))
    with pytest.raises(RuntimeError, match="not a valid tensorplay file"):
        tp.load(raw)


def test_every_damaged_byte_is_an_error_or_the_same_data():
    buf = io.BytesIO()
    tp.save({"a": tp.arange(4.0)}, buf)
    data = buf.getvalue()
    for i in range(0, len(data), 3):
        bad = bytearray(data)
        bad[i] ^= 0x55
        try:
            out = tp.load(io.BytesIO(bytes(bad)))
        except RuntimeError as e:
            assert "not a valid tensorplay file" in str(e)
            continue
        assert list(out) == ["a"] and out["a"].tolist() == [0.0, 1.0, 2.0, 3.0], i
    for cut in (0, 10, len(data) // 2, len(data) - 1):
        with pytest.raises(RuntimeError, match="not a valid tensorplay file"):
            tp.load(io.BytesIO(data[:cut]))


def test_load_arguments():
    buf = io.BytesIO()
    tp.save(tp.ones(2), buf)
    for loc in (None, "cpu", tp.device("cpu")):
        buf.seek(0)
        assert tp.load(buf, map_location=loc, weights_only=True).tolist() == [1.0, 1.0]
    buf.seek(0)
    with pytest.raises(RuntimeError, match="CPU only"):
        tp.load(buf, map_location="cuda:0")
    with pytest.raises(FileNotFoundError):
        tp.load("/nonexistent/file.tp")
