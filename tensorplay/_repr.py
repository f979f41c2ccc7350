"""PyTorch-style printing: ``tensor([0., 0., 0.])``, ``tensor(3.5000)``, ``dtype=`` when not default.

This follows `torch/_tensor_str.py` with the default print options (precision 4, threshold
1000, edgeitems 3, linewidth 80): one formatter for the whole tensor (integer mode, fixed
point or scientific, chosen from the non-zero finite values), every element right-aligned
to that formatter's width, torch's line wrapping, and ``size=``/``dtype=`` suffixes.
"""
from __future__ import annotations

import math

import numpy as np

from tensorplay.ir import dtypes

from ._args import get_default_dtype

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80


class _Formatter:
    def __init__(self, arr: np.ndarray):
        self.floating = arr.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = arr.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if vals.size == 0:
            return
        absv = np.abs(vals)
        vmin, vmax = absv.min(), absv.max()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        if self.int_mode:
            if vmax / vmin > 1000.0 or vmax > 1.0e8:
                self.sci_mode = True
                for v in vals.tolist():
                    self.max_width = max(self.max_width, len(f"{v:.{PRECISION}e}"))
            else:
                for v in vals.tolist():
                    self.max_width = max(self.max_width, len(f"{v:.0f}") + 1)
        elif vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4:
            self.sci_mode = True
            for v in vals.tolist():
                self.max_width = max(self.max_width, len(f"{v:.{PRECISION}e}"))
        else:
            for v in vals.tolist():
                self.max_width = max(self.max_width, len(f"{v:.{PRECISION}f}"))

    def width(self) -> int:
        return self.max_width

    def format(self, value) -> str:
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{PRECISION}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The edge items that a summarised print shows (they decide the formatter)."""
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        return np.concatenate([arr[:EDGEITEMS], arr[-EDGEITEMS:]]) if arr.shape[0] > 2 * EDGEITEMS else arr
    if arr.shape[0] > 2 * EDGEITEMS:
        rows = [arr[i] for i in range(EDGEITEMS)] + [arr[i] for i in range(arr.shape[0] - EDGEITEMS, arr.shape[0])]
    else:
        rows = list(arr)
    return np.stack([_summarized(r) for r in rows])


def _vector_str(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    element_length = fmt.width() + 2
    per_line = max(1, int(math.floor((LINEWIDTH - indent) / element_length)))
    if summarize and arr.shape[0] > 2 * EDGEITEMS:
        data = [fmt.format(v) for v in arr[:EDGEITEMS].tolist()] + [" ..."] + \
            [fmt.format(v) for v in arr[-EDGEITEMS:].tolist()]
    else:
        data = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    n = arr.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        rows = [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)] + ["..."] + \
            [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(n - EDGEITEMS, n)]
    else:
        rows = [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _format_array(arr: np.ndarray, indent: int = len("tensor(")) -> str:
    summarize = arr.size > THRESHOLD
    fmt = _Formatter(_summarized(arr) if summarize else arr)
    return _tensor_str(arr, indent, summarize, fmt)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, arr: np.ndarray | None) -> str:
    """The repr of tensor `t` with value `arr`, as torch prints it. A traced tensor whose value can
    be computed (see `Trace.concrete_array`) prints that value; one without (`arr` None: under
    `tp.compile`, or batched under vmap) shows its type and transform."""
    if arr is None:
        return f"Tensor(shape={tuple(t.shape)}, dtype={t.dtype.name}, traced under {t._trace.transform})"
    dt = dtypes.from_numpy(arr.dtype)
    prefix = "tensor("
    suffixes = []
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if dt is not get_default_dtype():  # an empty tensor shows any non-default dtype
            suffixes.append(f"dtype={dt!r}")
        body = "[]"
    else:
        if dt not in (get_default_dtype(), dtypes.int64, dtypes.bool_):
            suffixes.append(f"dtype={dt!r}")
        # bfloat16 arrays print as float32 (numpy formats ml_dtypes' values as their shortest repr)
        body = _format_array(arr.astype(np.float32) if dt is dtypes.bfloat16 else arr, len(prefix))
    return _add_suffixes(prefix + body, suffixes, len(prefix))
