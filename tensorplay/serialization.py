"""`tp.save` / `tp.load`: tensors and nested containers of them in a file that holds data only.

The file is a numpy ``.npz`` archive: one array per tensor plus a JSON description of
the containers around them (dicts, OrderedDicts, lists, tuples) and of the plain Python
values in between (numbers, strings, None, dtypes). Loading reads it with
``allow_pickle=False``: no code is ever unpickled, so a file from anyone is safe to load.
A file that is not such an archive, or is damaged, gives an `UnreadableFileError` (a
RuntimeError) naming it.

>>> import io
>>> import tensorplay as tp
>>> buf = io.BytesIO()
>>> tp.save({"w": tp.ones(2, 2), "step": 3, "betas": (0.9, 0.999)}, buf)
>>> _ = buf.seek(0)
>>> tp.load(buf)
{'w': tensor([[1., 1.],
        [1., 1.]]), 'step': 3, 'betas': (0.9, 0.999)}
"""
from __future__ import annotations

import io
import json
import os
import zipfile
from collections import OrderedDict

import numpy as np

from tensorplay.ir import dtypes
from tensorplay.ir.dtypes import DType

from ._device import check_device, device
from ._tensor import Tensor

FORMAT = "tensorplay.save"
VERSION = 1
_HEADER = "__tensorplay__"


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization: bool = True) -> None:
    """Write `obj` -- a tensor, or dicts/lists/tuples of tensors and plain values -- to `f` (a path or a file).

    Shared storage is not preserved: each tensor is written as its own array.

    >>> import tensorplay as tp, tempfile, os
    >>> from tensorplay import nn
    >>> model = nn.Linear(3, 2)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.tp")
    >>> tp.save(model.state_dict(), path)
    >>> state = tp.load(path)
    >>> list(state), bool((state["weight"] == model.weight).all())
    (['weight', 'bias'], True)
    """
    if pickle_module is not None:
        raise ValueError("save: pickle_module is not supported: tensorplay files hold data only, never pickles")
    arrays: list[np.ndarray] = []
    tree = _encode(obj, arrays, "obj")
    header = json.dumps({"format": FORMAT, "version": VERSION, "root": tree}, allow_nan=True)
    payload = {_HEADER: np.frombuffer(header.encode("utf-8"), dtype=np.uint8)}
    payload.update({str(i): a for i, a in enumerate(arrays)})
    if hasattr(f, "write"):
        np.savez(f, **payload)
        return
    with open(os.fspath(f), "wb") as fh:  # a file object: numpy would append ".npz" to a path
        np.savez(fh, **payload)


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = None, mmap: bool | None = None):
    """Read an object written by `save` from `f` (a path or a file); tensors come back as tensors.

    `map_location` may name the CPU only; `weights_only` is accepted with either value (the
    format holds data only).

    >>> import io
    >>> import tensorplay as tp
    >>> tp.load(io.BytesIO(b"not a tensorplay file"))
    Traceback (most recent call last):
      ...
    tensorplay.serialization.UnreadableFileError: load: <stream> is not a valid tensorplay file (not a zip archive); was it written by tp.save?
    """
    if pickle_module is not None:
        raise ValueError("load: pickle_module is not supported: tensorplay files hold data only, never pickles")
    if mmap:
        raise ValueError("load: mmap=True is not supported")
    if map_location is not None and not callable(map_location) and not isinstance(map_location, dict):
        check_device(map_location, "load")
    name = "<stream>" if hasattr(f, "read") else repr(os.fspath(f))
    if not hasattr(f, "read"):
        with open(os.fspath(f), "rb") as fh:
            return _load_stream(io.BytesIO(fh.read()), name)
    return _load_stream(f, name)


class UnreadableFileError(RuntimeError):
    """A file given to `load` that is not a valid tensorplay file."""


def _load_stream(stream, name: str):
    def bad(why: str) -> UnreadableFileError:
        return UnreadableFileError(f"load: {name} is not a valid tensorplay file ({why}); was it written by tp.save?")

    # Anything raised while parsing untrusted bytes (zipfile and numpy raise many types) means a bad file.
    try:
        archive = np.load(stream, allow_pickle=False)
    except Exception as e:  # noqa: BLE001
        raise bad("not a zip archive" if "pickle" in str(e) or isinstance(e, zipfile.BadZipFile)
                  else f"{type(e).__name__}: {e}") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise bad("a single numpy array, not an archive")
    with archive:
        try:
            header = json.loads(bytes(archive[_HEADER]).decode("utf-8"))
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise bad("no tensorplay header")
            if header.get("version") != VERSION:
                raise bad(f"format version {header.get('version')!r}, expected {VERSION}")
            return _decode(header["root"], archive)
        except UnreadableFileError:
            raise
        except Exception as e:  # noqa: BLE001
            raise bad(f"damaged: {type(e).__name__}: {e}") from None


# --- encoding ------------------------------------------------------------------------------------
_SCALARS = (bool, int, float, str, type(None))


def _encode(x, arrays: list, path: str):
    if isinstance(x, Tensor):
        arr = np.asarray(x._concrete(f"save ({path})"), order="C")
        if x.dtype is dtypes.bfloat16:  # numpy files have no bfloat16: its bit patterns, as uint16
            arrays.append(arr.view(np.uint16))
            return {"bfloat16_tensor": len(arrays) - 1}
        arrays.append(arr)
        return {"tensor": len(arrays) - 1}
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "biuf":
            raise TypeError(f"save: {path} is a numpy array of dtype {x.dtype}: only numeric arrays are saved")
        arrays.append(np.asarray(x, order="C"))
        return {"ndarray": len(arrays) - 1}
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, _SCALARS):
        return x if not isinstance(x, float) or np.isfinite(x) else {"float": repr(x)}
    if isinstance(x, DType):
        return {"dtype": x.name}
    if isinstance(x, device):
        return {"device": str(x)}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        raise TypeError(f"save: {path} is a namedtuple ({type(x).__name__}); tensorplay files hold no classes, "
                        f"so save it as a tuple or a dict")
    if isinstance(x, (list, tuple)):
        kind = "list" if isinstance(x, list) else "tuple"
        return {kind: [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(x)]}
    if isinstance(x, dict):
        kind = "odict" if isinstance(x, OrderedDict) else "dict"
        return {kind: [[_encode_key(k, path), _encode(v, arrays, f"{path}[{k!r}]")] for k, v in x.items()]}
    raise TypeError(f"save: {path} is a {type(x).__name__}; tensorplay files hold tensors, numpy arrays, numbers, "
                    f"strings, None, dtypes and dicts/lists/tuples of them")


def _encode_key(k, path: str):
    if isinstance(k, (bool, int, str, type(None))) or (isinstance(k, float) and np.isfinite(k)):
        return k
    if isinstance(k, tuple):
        return {"tuple": [_encode_key(v, path) for v in k]}
    raise TypeError(f"save: {path} has a dict key of type {type(k).__name__}; keys must be str, int, float, bool, "
                    f"None or tuples of them")


# --- decoding ------------------------------------------------------------------------------------
def _decode(node, archive):
    if isinstance(node, _SCALARS):
        return node
    if isinstance(node, list) or not isinstance(node, dict) or len(node) != 1:
        raise ValueError(f"unexpected node {str(node)[:60]}")
    (kind, body), = node.items()
    if kind in ("tensor", "ndarray"):
        arr = archive[str(int(body))]
        if kind == "ndarray":
            return arr
        dtypes.from_numpy(arr.dtype)  # TypeError for dtypes tensors cannot hold
        return Tensor._wrap(arr)
    if kind == "bfloat16_tensor":
        if dtypes.bfloat16 is None:
            raise TypeError(f"the file holds a bfloat16 tensor: {dtypes.BFLOAT16_MISSING}")
        return Tensor._wrap(np.asarray(archive[str(int(body))]).view(dtypes.bfloat16.np))
    if kind == "float":
        return float(body)
    if kind == "dtype":
        return dtypes.from_name(body)
    if kind == "device":
        return device(body)
    if kind == "list":
        return [_decode(v, archive) for v in body]
    if kind == "tuple":
        return tuple(_decode(v, archive) for v in body)
    if kind in ("dict", "odict"):
        items = [(_decode_key(k), _decode(v, archive)) for k, v in body]
        return OrderedDict(items) if kind == "odict" else dict(items)
    raise ValueError(f"unknown node kind {kind!r}")


def _decode_key(k):
    if isinstance(k, dict):
        return tuple(_decode_key(v) for v in k["tuple"])
    return k
