"""Device and dtype arguments, read the way PyTorch reads them.

tensorplay runs on the CPU only. Every ``device=`` argument is checked: the CPU
(``'cpu'``, ``'cpu:0'``, ``tp.device('cpu')``, None) is accepted, any other known
device type is a RuntimeError saying that tensorplay has no such device, and an
unknown name is the RuntimeError torch gives. Every ``dtype=`` argument accepts a
tensorplay dtype, a numpy dtype or scalar type, a dtype name (``'float32'``,
``'torch.float64'``, ``'long'``) or a Python type (``float`` is float64, as in torch).

>>> import numpy as np
>>> import tensorplay as tp
>>> tp.zeros(2, dtype=np.float64, device=tp.device("cpu")).dtype
tensorplay.float64
>>> tp.zeros(2, device="cuda")
Traceback (most recent call last):
  ...
RuntimeError: zeros: device 'cuda' is not available: tensorplay runs on the CPU only
"""
from __future__ import annotations

import builtins

import numpy as np

from tensorplay.ir import dtypes
from tensorplay.ir.dtypes import DType

# the device types torch knows (its error message lists them); only the CPU exists here
KNOWN_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
               "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


class device:
    """A device description, as ``torch.device``: a type and an optional index.

    Any device type torch knows can be described; only ``'cpu'`` can hold tensors.

    >>> import tensorplay as tp
    >>> d = tp.device("cpu")
    >>> d, d.type, d.index, d == "cpu"
    (device(type='cpu'), 'cpu', None, True)
    >>> tp.device("cuda", 1)
    device(type='cuda', index=1)
    """

    __slots__ = ("type", "index")

    def __init__(self, type, index: int | None = None):  # noqa: A002  (torch's parameter name)
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a device string, got {builtins.type(type).__name__}")
        name, sep, idx = type.partition(":")
        if name not in KNOWN_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(KNOWN_TYPES)} device type at start of device string: "
                               f"{type}")
        if sep:
            if index is not None:
                raise ValueError(f"device(): type {type!r} already has an index, and index={index} was given too")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if index is not None and (isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0):
            raise ValueError(f"device(): index must be a non-negative int, got {index!r}")
        object.__setattr__(self, "type", name)
        object.__setattr__(self, "index", None if index is None else int(index))

    def __setattr__(self, name, value):
        raise AttributeError("device is immutable")

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, ValueError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        return (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return device, (self.type, self.index)


CPU = device("cpu")
META = device("meta")


def wants_meta(args: tuple, kwargs: dict) -> bool:
    """Does a ``to(...)`` call ask for the meta device (``to("meta")``, ``to(device="meta")``)?

    >>> wants_meta(("meta",), {}), wants_meta((), {"device": device("meta")}), wants_meta(("cpu",), {})
    (True, True, False)
    """
    dev = kwargs.get("device", args[0] if args else None)
    if isinstance(dev, str) and dev.partition(":")[0] in KNOWN_TYPES:
        dev = device(dev)
    return isinstance(dev, device) and dev.type == "meta"


def check_device(dev, op: str) -> None:
    """Accept `dev` when it names the CPU (or is None); otherwise raise naming `op`."""
    if dev is None:
        return
    if isinstance(dev, (int, np.integer)) and not isinstance(dev, bool):
        raise RuntimeError(f"{op}: device {dev} (an accelerator index) is not available: tensorplay runs on the "
                           f"CPU only")
    d = dev if isinstance(dev, device) else device(dev) if isinstance(dev, str) else None
    if d is None:
        raise TypeError(f"{op}: device must be a string or tp.device, got {type(dev).__name__}")
    if d.type != "cpu" or d.index not in (None, 0):
        raise RuntimeError(f"{op}: device '{d}' is not available: tensorplay runs on the CPU only")


def is_device_like(x) -> bool:
    """Would `x` be read as a device (a tp.device, or a string naming a device type)?"""
    if isinstance(x, device):
        return True
    return isinstance(x, str) and x.partition(":")[0] in KNOWN_TYPES


_NAMES = {
    "float32": dtypes.float32, "float": dtypes.float32, "float64": dtypes.float64, "double": dtypes.float64,
    "int32": dtypes.int32, "int": dtypes.int32, "int64": dtypes.int64, "long": dtypes.int64, "bool": dtypes.bool_,
    "float16": dtypes.float16, "half": dtypes.float16,
    **({"bfloat16": dtypes.bfloat16} if dtypes.bfloat16 is not None else {}),
}
_PY_TYPES = {float: dtypes.float64, int: dtypes.int64, bool: dtypes.bool_}


def as_dtype(dtype, op: str) -> DType | None:
    """`dtype` as a tensorplay dtype (None stays None); a TypeError naming `op` when it is none.

    >>> import numpy as np
    >>> as_dtype(np.int32, "zeros"), as_dtype("torch.float64", "zeros"), as_dtype(float, "zeros")
    (tensorplay.int32, tensorplay.float64, tensorplay.float64)
    """
    if dtype is None or isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str):
        name = dtype[len("torch."):] if dtype.startswith("torch.") else dtype
        name = name[len("tensorplay."):] if name.startswith("tensorplay.") else name
        if name in _NAMES:
            return _NAMES[name]
        if name == "bfloat16":
            raise TypeError(f"{op}: {dtypes.BFLOAT16_MISSING}")
        raise TypeError(f"{op}: unknown dtype name {dtype!r} (expected one of {', '.join(_NAMES)})")
    if dtype in _PY_TYPES:
        return _PY_TYPES[dtype]
    if type(dtype).__module__ == "torch":  # torch.float32 reads as its name
        return as_dtype(str(dtype), op)
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: dtype must be a tensorplay dtype, a numpy dtype or a dtype name, got "
                        f"{dtype!r}") from None
    try:
        return dtypes.from_numpy(np_dtype)
    except TypeError as e:
        raise TypeError(f"{op}: {e}") from None


_TO_KEYWORDS = ("device", "dtype", "non_blocking", "copy", "memory_format")


def to_arguments(args: tuple, kwargs: dict) -> tuple[DType | None, bool]:
    """Read ``Tensor.to``'s (and ``Module.to``'s) overloads -- ``to(dtype)``, ``to(device, dtype)``, ``to(other)`` -- as torch does.

    Returns (the target dtype or None, copy). Strings and tp.device are devices (checked:
    only the CPU); a tensor gives its dtype; anything else is a dtype.

    >>> import tensorplay as tp
    >>> to_arguments(("cpu", tp.float64), {}), to_arguments((), {"copy": True})
    ((tensorplay.float64, False), (None, True))
    """
    unknown = sorted(set(kwargs) - set(_TO_KEYWORDS))
    if unknown:
        raise TypeError(f"to() got unexpected keyword arguments {unknown}")
    dev, dtype = kwargs.get("device"), kwargs.get("dtype")
    rest = list(args)
    if rest and (is_device_like(rest[0]) or isinstance(rest[0], str) or
                 (isinstance(rest[0], (int, np.integer)) and not isinstance(rest[0], bool))):
        dev = rest.pop(0)
        if rest and not isinstance(rest[0], bool):
            dtype = rest.pop(0)
    elif rest and isinstance(getattr(rest[0], "dtype", None), DType):  # a tensor (this module sits below Tensor)
        dtype = rest.pop(0).dtype
    elif rest and not isinstance(rest[0], bool):
        dtype = rest.pop(0)
    if len(rest) > 2:
        raise TypeError(f"to() takes at most 2 flags (non_blocking, copy) after the target, got {len(rest)}")
    copy = bool(kwargs.get("copy", rest[1] if len(rest) > 1 else False))
    check_device(dev, "to")
    return as_dtype(dtype, "to"), copy
