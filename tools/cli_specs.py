"""Parsing the command line's little languages, once, into small immutable objects.

- **tensor specs** ``f32[64,784]``, ``i64[3]``, ``f32[]`` (a scalar);
- **call specs** ``vmap(in_dims=(None, 0))``, ``grad``, ``simplify.cse``: a
  (dotted) name with optional keyword arguments whose values are Python
  literals. The text is parsed with `ast` and every value is read with
  `ast.literal_eval`, so nothing is ever evaluated;
- **targets** ``package.module:function`` or ``path/to/file.py:function``.

Errors are `SpecError`s whose message quotes the input.
"""
from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorplay.ir import dtypes as dt
from tensorplay.ir.types import TensorType

__all__ = ["SpecError", "TensorSpec", "CallSpec", "parse_tensor_spec", "parse_call_spec", "split_pipeline",
           "load_target", "example_tensor"]


class SpecError(ValueError):
    """A malformed command-line spec; the message quotes it."""


# ----------------------------------------------------------------------------------------------
# Tensor specs
# ----------------------------------------------------------------------------------------------
_TENSOR_SPEC = re.compile(r"\s*([A-Za-z_]\w*)\s*\[\s*((?:\d+\s*(?:,\s*\d+\s*)*,?)?)\s*\]\s*\Z")
_DTYPE_ALIASES = {"f32": "f32", "float32": "f32", "float": "f32", "f64": "f64", "float64": "f64", "double": "f64",
                  "i32": "i32", "int32": "i32", "int": "i32", "i64": "i64", "int64": "i64", "long": "i64",
                  "i1": "i1", "bool": "i1", "f16": "f16", "float16": "f16", "half": "f16", "bf16": "bf16",
                  "bfloat16": "bf16"}


@dataclass(frozen=True)
class TensorSpec:
    """An example argument: a shape and a dtype (``f32[2,3]``)."""

    shape: tuple[int, ...]
    dtype: dt.DType

    @property
    def type(self) -> TensorType:
        return TensorType(self.shape, self.dtype)

    def __str__(self) -> str:
        return f"{self.dtype.short}[{','.join(map(str, self.shape))}]"


@functools.lru_cache(maxsize=256)
def parse_tensor_spec(text: str) -> TensorSpec:
    """``'f32[64,784]'`` -> TensorSpec((64, 784), float32); ``'f32[]'`` is a scalar.

    Element types: f32, f64, i32, i64, i1, f16, bf16 (and their long names float32, int64, bool,
    half, ...); bf16 needs the optional ml_dtypes package.
    """
    m = _TENSOR_SPEC.match(text)
    if m is None:
        raise SpecError(f"malformed shape spec {text!r}: expected a dtype and bracketed dimensions, "
                        f"e.g. 'f32[64,784]', or 'f32[]' for a scalar")
    name, dims = m.group(1), m.group(2)
    short = _DTYPE_ALIASES.get(name.lower())
    if short is None:
        raise SpecError(f"malformed shape spec {text!r}: unknown element type {name!r} "
                        f"(expected one of f32, f64, i32, i64, i1, f16, bf16)")
    shape = tuple(int(d) for d in dims.replace(" ", "").split(",") if d)
    try:
        return TensorSpec(shape, dt.from_short(short))
    except ValueError as e:  # bf16 without ml_dtypes
        raise SpecError(f"shape spec {text!r}: {e}") from None


def example_tensor(spec: TensorSpec, rng: np.random.Generator):
    """A concrete example tensor for `spec`: standard normal floats, small non-negative ints, random bools."""
    import tensorplay as tp

    if spec.dtype.is_floating_point:
        data = rng.standard_normal(spec.shape)
    elif spec.dtype.is_integer:
        data = rng.integers(0, 4, spec.shape)
    else:
        data = rng.random(spec.shape) < 0.5
    return tp.from_numpy(np.array(data, dtype=spec.dtype.np, order="C"))  # (ascontiguousarray makes 0-d 1-d)


# ----------------------------------------------------------------------------------------------
# Call specs
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CallSpec:
    """``name(kw=literal, ...)``: a dotted `name`, keyword arguments as sorted (key, value) pairs."""

    name: str
    kwargs: tuple[tuple[str, Any], ...] = ()
    text: str = ""

    @property
    def kw(self) -> dict[str, Any]:
        return dict(self.kwargs)

    def __str__(self) -> str:
        if not self.kwargs:
            return self.name
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.kwargs)})"


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _frozen(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, tuple):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _frozen(x)) for k, x in v.items()))
    return v


@functools.lru_cache(maxsize=256)
def parse_call_spec(text: str, what: str = "transform") -> CallSpec:
    """Parse ``name`` or ``name(kw=literal, ...)`` without evaluating anything.

    >>> parse_call_spec("vmap(in_dims=(None, 0))")
    CallSpec(name='vmap', kwargs=(('in_dims', (None, 0)),), text='vmap(in_dims=(None, 0))')
    """
    source = text.strip()
    if not source:
        raise SpecError(f"empty {what} spec")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as e:
        col = (e.offset or 1)
        raise SpecError(f"malformed {what} spec {text!r}: {e.msg} at column {col}; "
                        f"expected name or name(key=value, ...)") from None
    body = tree.body
    name = _dotted(body)
    if name is not None:
        return CallSpec(name, (), source)
    if not isinstance(body, ast.Call) or _dotted(body.func) is None:
        raise SpecError(f"malformed {what} spec {text!r}: expected name or name(key=value, ...)")
    if body.args:
        raise SpecError(f"malformed {what} spec {text!r}: arguments must be given by keyword, "
                        f"e.g. vmap(in_dims=0)")
    kwargs = []
    for kw in body.keywords:
        if kw.arg is None:
            raise SpecError(f"malformed {what} spec {text!r}: '**' is not allowed")
        try:
            value = ast.literal_eval(kw.value)
        except (ValueError, SyntaxError, TypeError):
            segment = ast.get_source_segment(source, kw.value) or "?"
            raise SpecError(f"malformed {what} spec {text!r}: the value of {kw.arg!r} ({segment}) must be a "
                            f"Python literal (number, string, True/False/None, tuple or list)") from None
        kwargs.append((kw.arg, _frozen(value)))
    names = [k for k, _ in kwargs]
    if len(set(names)) != len(names):
        raise SpecError(f"malformed {what} spec {text!r}: an argument is given twice")
    return CallSpec(_dotted(body.func), tuple(kwargs), source)


def split_pipeline(text: str) -> list[CallSpec]:
    """A comma-separated pass pipeline, ``'simplify.cse,dce'``, as call specs; commas inside
    brackets or strings belong to an argument (``'batching.batch_graph(in_dims=(0, None)),dce'``).

    >>> [str(s) for s in split_pipeline("simplify.cse, batching.batch_graph(in_dims=(0, None)),dce")]
    ['simplify.cse', 'batching.batch_graph(in_dims=(0, None))', 'dce']
    """
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    if depth or quote:
        raise SpecError(f"malformed pass pipeline {text!r}: unbalanced brackets or quotes")
    if any(not p.strip() for p in parts):
        raise SpecError(f"malformed pass pipeline {text!r}: an empty pass name (two commas in a row?)")
    return [parse_call_spec(p.strip(), "pass") for p in parts]


# ----------------------------------------------------------------------------------------------
# Targets
# ----------------------------------------------------------------------------------------------
def _import_file(path: str):
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise SpecError(f"no such file: {path!r}")
    name = "_tpir_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SpecError(f"cannot import {path!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(path)
    sys.path.insert(0, folder)  # so the file can import its neighbours
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - any failure of user code is reported, not raised
        sys.modules.pop(name, None)
        raise SpecError(f"importing {path!r} failed: {type(e).__name__}: {e}") from None
    return module


def load_target(target: str):
    """Resolve ``MODULE:FUNC`` (MODULE a dotted module path or a .py file) to the callable."""
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise SpecError(f"malformed target {target!r}: expected MODULE:FUNC (e.g. mypkg.models:loss or "
                        f"path/to/file.py:loss) or an IR file ending in .tpir")
    if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
        module = _import_file(module_part)
    else:
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(module_part)
        except ModuleNotFoundError as e:
            if e.name and module_part.startswith(e.name):
                raise SpecError(f"no module named {module_part!r}") from None
            raise SpecError(f"importing {module_part!r} failed: {type(e).__name__}: {e}") from None
        except Exception as e:  # noqa: BLE001
            raise SpecError(f"importing {module_part!r} failed: {type(e).__name__}: {e}") from None
    obj: Any = module
    for part in attr.split("."):
        if not part.isidentifier() or not hasattr(obj, part):
            raise SpecError(f"module {module_part!r} has no function {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise SpecError(f"{target!r} is a {type(obj).__name__}, not a function")
    return obj
