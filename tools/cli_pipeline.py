"""The `dump`/`viz` pipeline: trace a function, apply transforms and passes, keep every stage.

Stage 0 is the traced function (or the parsed IR file). Stage *i* (1 ≤ i ≤ k)
is the function after the first *i* ``--transform`` s, traced again on its
own example arguments; then one stage per ``--pass``. While a stage is being
built, a `PassRecorder` times every call of a pass function of `ir.passes`
(the transforms call them internally) and keeps the graphs they return, which
is what ``--print-after-all`` shows.

Transforms compose in the order given, innermost first:
``--transform grad --transform vmap`` is ``vmap(grad(f))``. The ``--arg``
specs are the arguments of the *final* function (as with ``jax.make_jaxpr``);
each transform knows how the arguments of the function it wraps follow from
its own (vmap drops the mapped axis, jvp takes primals then tangents, ...).
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import pkgutil
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from tensorplay.ir.core import Graph

from .cli_specs import CallSpec, SpecError, TensorSpec, example_tensor

__all__ = ["Stage", "PassRecord", "PassRecorder", "TRANSFORMS", "build_stages", "run_pass", "graph_function",
           "pass_functions", "graphs_in"]


# ----------------------------------------------------------------------------------------------
# Records
# ----------------------------------------------------------------------------------------------
@dataclass
class PassRecord:
    """One call of a pass function: its name, nesting depth, duration and the graphs it returned."""

    name: str
    depth: int
    seconds: float
    graphs: list[tuple[str, Graph]]


@dataclass
class Stage:
    """One step of the pipeline and the graph after it."""

    index: int
    kind: str  # "trace", "parse", "transform" or "pass"
    label: str
    graph: Graph
    seconds: float
    passes: list[PassRecord] = field(default_factory=list)

    @property
    def pass_seconds(self) -> float:
        """Time spent in top-level pass calls during this stage."""
        return sum(p.seconds for p in self.passes if p.depth == 0)

    @property
    def title(self) -> str:
        return f"stage {self.index}: {self.label}"


def graphs_in(result: Any, prefix: str = "") -> list[tuple[str, Graph]]:
    """The graphs in a pass result: the result itself, or the Graph fields of a dataclass / tuple."""
    if isinstance(result, Graph):
        return [(prefix or "graph", result)]
    found: list[tuple[str, Graph]] = []
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        for f in dataclasses.fields(result):
            found += graphs_in(getattr(result, f.name), f.name)
    elif isinstance(result, (tuple, list)) and len(result) <= 8:
        for i, item in enumerate(result):
            if isinstance(item, Graph):
                found.append((f"{prefix or 'result'}[{i}]", item))
    return found


# ----------------------------------------------------------------------------------------------
# Pass functions and the recorder
# ----------------------------------------------------------------------------------------------
def _takes_graph_first(fn: Callable) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if not params or params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        return False
    p = params[0]
    return p.name == "graph" or p.annotation in (Graph, "Graph")


def _returns_graph(fn: Callable) -> bool:
    """False only when the return annotation says the result holds no graph (``int``, ``list[bool]``)."""
    import typing

    try:
        ret = typing.get_type_hints(fn).get("return")
    except Exception:  # noqa: BLE001 - unresolvable annotations: assume it may be a pass
        return True
    if ret is None:
        return True
    if ret is Graph:
        return True
    if dataclasses.is_dataclass(ret):
        return any(f.type in (Graph, "Graph") for f in dataclasses.fields(ret))
    return False


@functools.lru_cache(maxsize=1)
def pass_functions() -> dict[str, Callable]:
    """Every public function of an `ir.passes` module whose first parameter is a graph, by ``module.name``."""
    import tensorplay.ir.passes as passes_pkg

    found: dict[str, Callable] = {}
    for info in sorted(pkgutil.iter_modules(passes_pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"tensorplay.ir.passes.{info.name}")
        except Exception:  # noqa: BLE001 - a pass module under construction must not break the CLI
            continue
        for name, fn in vars(module).items():
            if (inspect.isfunction(fn) and not name.startswith("_") and fn.__module__ == module.__name__
                    and _takes_graph_first(fn) and _returns_graph(fn)):
                found[f"{info.name}.{name}"] = fn
    return found


def resolve_pass(name: str) -> tuple[str, Callable]:
    """Find pass `name` (``cse`` or ``simplify.cse``) among `pass_functions`."""
    table = pass_functions()
    if name in table:
        return name, table[name]
    matches = [k for k in table if k.rsplit(".", 1)[1] == name]
    if len(matches) > 1:  # `simplify` means simplify.simplify rather than other.simplify
        matches = [k for k in matches if k.split(".", 1)[0] == name] or matches
    if len(matches) == 1:
        return matches[0], table[matches[0]]
    known = ", ".join(sorted(table)) or "none yet"
    if len(matches) > 1:
        raise SpecError(f"pass {name!r} is ambiguous: {', '.join(matches)}")
    raise SpecError(f"unknown pass {name!r} (known passes: {known})")


class PassRecorder:
    """Within ``with PassRecorder() as rec:``, every call of an `ir.passes` function is timed and recorded.

    The functions are replaced by timing wrappers in their modules and in every
    loaded tensorplay/ir/codegen module that imported them by name, and put back
    on exit. (A debugging aid: the passes themselves need no cooperation.)
    """

    _SCOPES = ("ir", "tensorplay", "codegen")

    def __init__(self) -> None:
        self.records: list[PassRecord] = []
        self._depth = 0
        self._undo: list[tuple[Any, str, Any]] = []

    def _wrap(self, name: str, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            depth = self._depth
            self._depth += 1
            t0 = time.perf_counter()
            try:
                result = fn(*args, **kwargs)
            finally:
                self._depth -= 1
            graphs = graphs_in(result)
            if graphs:
                self.records.append(PassRecord(name, depth, time.perf_counter() - t0, graphs))
            return result
        return wrapper

    def __enter__(self) -> "PassRecorder":
        originals = {id(fn): (name, fn) for name, fn in pass_functions().items()}
        wrappers = {key: self._wrap(name, fn) for key, (name, fn) in originals.items()}
        for mod_name, module in list(sys.modules.items()):
            if module is None or mod_name.split(".", 1)[0] not in self._SCOPES:
                continue
            namespace = getattr(module, "__dict__", {})
            for attr, value in list(namespace.items()):
                w = wrappers.get(id(value))
                if w is not None and value is originals[id(value)][1]:
                    self._undo.append((module, attr, value))
                    setattr(module, attr, w)
        return self

    def __exit__(self, *exc) -> None:
        for module, attr, value in reversed(self._undo):
            setattr(module, attr, value)
        self._undo.clear()


def run_pass(graph: Graph, spec: CallSpec) -> tuple[Graph, str]:
    """Apply the pass named by `spec` to `graph`; return the new graph and the pass's full name."""
    name, fn = resolve_pass(spec.name)
    try:
        result = fn(graph, **spec.kw)
    except TypeError as e:
        if "argument" in str(e):
            raise SpecError(f"pass {name}: {e}") from None
        raise
    graphs = graphs_in(result)
    if not graphs:
        raise SpecError(f"pass {name} returned {type(result).__name__}, not a graph")
    return graphs[0][1], name


# ----------------------------------------------------------------------------------------------
# Transforms
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TransformDef:
    """How the CLI applies one transform: wrap the function, and derive the wrapped function's arguments."""

    name: str
    options: tuple[str, ...]
    wrap: Callable[[Callable, dict], Callable]
    inner_specs: Callable[[list[TensorSpec], dict], list[TensorSpec]]
    doc: str


def _func(name: str):
    import tensorplay.func as tf

    try:
        return getattr(tf, name)
    except (AttributeError, ImportError) as e:
        raise SpecError(f"transform {name!r} is not available in this build ({type(e).__name__}: {e})") from None


def _same(specs: list[TensorSpec], kw: dict) -> list[TensorSpec]:
    return list(specs)


def _drop_axis(specs: list[TensorSpec], kw: dict) -> list[TensorSpec]:
    in_dims = kw.get("in_dims", 0)
    if isinstance(in_dims, (list, tuple)):
        if len(in_dims) != len(specs):
            raise SpecError(f"vmap: in_dims={in_dims!r} has {len(in_dims)} entries for {len(specs)} arguments")
        dims = list(in_dims)
    else:
        dims = [in_dims] * len(specs)
    out = []
    for i, (s, d) in enumerate(zip(specs, dims)):
        if d is None:
            out.append(s)
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise SpecError(f"vmap: in_dims entry {d!r} for argument {i} must be an int or None "
                            f"(nested in_dims need the Python API)")
        nd = len(s.shape)
        if not -nd <= d < nd:
            raise SpecError(f"vmap: in_dims={d} is out of range for argument {i} of shape spec {s}")
        axis = d % nd
        out.append(TensorSpec(s.shape[:axis] + s.shape[axis + 1:], s.dtype))
    return out


def _first_half(name: str):
    def inner(specs: list[TensorSpec], kw: dict) -> list[TensorSpec]:
        n = len(specs) // 2
        if len(specs) % 2 or specs[:n] != specs[n:]:
            raise SpecError(f"{name}: the transformed function takes the primals followed by tangents of the same "
                            f"shapes, so give 2n --arg specs with matching halves (got {', '.join(map(str, specs))})")
        return specs[:n]
    return inner


def _wrap_simple(name: str):
    def wrap(fn: Callable, kw: dict) -> Callable:
        return _func(name)(fn, **kw)
    return wrap


def _wrap_jvp(fn: Callable, kw: dict) -> Callable:
    jvp = _func("jvp")

    def jvp_of(*args):
        n = len(args) // 2
        return jvp(fn, tuple(args[:n]), tuple(args[n:]), **kw)
    jvp_of.__name__ = f"jvp_{getattr(fn, '__name__', 'f')}"
    return jvp_of


def _wrap_linearize(fn: Callable, kw: dict) -> Callable:
    linearize = _func("linearize")

    def linearized(*args):
        n = len(args) // 2
        out, jvp_fn = linearize(fn, *args[:n], **kw)
        return out, jvp_fn(*args[n:])
    linearized.__name__ = f"linearize_{getattr(fn, '__name__', 'f')}"
    return linearized


def _wrap_vjp(fn: Callable, kw: dict) -> Callable:
    vjp = _func("vjp")
    from tensorplay import _pytree, ones_like

    def vjp_of(*args):
        res = vjp(fn, *args, **kw)
        out, vjp_fn = res[0], res[1]
        return out, vjp_fn(_pytree.tree_map(ones_like, out))
    vjp_of.__name__ = f"vjp_{getattr(fn, '__name__', 'f')}"
    return vjp_of


def _wrap_compile(fn: Callable, kw: dict) -> Callable:
    import tensorplay as tp

    return tp.compile(fn, **kw)


_T = TransformDef
TRANSFORMS: dict[str, TransformDef] = {t.name: t for t in [
    _T("vmap", ("in_dims", "out_dims", "randomness", "chunk_size"), _wrap_simple("vmap"), _drop_axis,
       "map over a batch axis of the arguments (in_dims) and stack results (out_dims)"),
    _T("chunk_vmap", ("in_dims", "out_dims", "randomness", "chunks"), _wrap_simple("chunk_vmap"), _drop_axis,
       "vmap evaluated in `chunks` pieces"),
    _T("grad", ("argnums", "has_aux"), _wrap_simple("grad"), _same, "gradient of a scalar function"),
    _T("grad_and_value", ("argnums", "has_aux"), _wrap_simple("grad_and_value"), _same,
       "gradient and value of a scalar function"),
    _T("jacrev", ("argnums", "has_aux", "chunk_size"), _wrap_simple("jacrev"), _same,
       "Jacobian by reverse mode"),
    _T("jacfwd", ("argnums", "has_aux", "randomness"), _wrap_simple("jacfwd"), _same,
       "Jacobian by forward mode"),
    _T("hessian", ("argnums",), _wrap_simple("hessian"), _same, "Hessian of a scalar function"),
    _T("jvp", ("has_aux", "strict"), _wrap_jvp, _first_half("jvp"),
       "(primals..., tangents...) -> (output, directional derivative)"),
    _T("linearize", (), _wrap_linearize, _first_half("linearize"),
       "(primals..., tangents...) -> (output, linearized function applied to the tangents)"),
    _T("vjp", ("has_aux",), _wrap_vjp, _same, "(primals...) -> (output, vector-Jacobian product with ones)"),
    _T("functionalize", ("remove",), _wrap_simple("functionalize"), _same,
       "remove in-place mutation of the arguments"),
    _T("compile", (), _wrap_compile, _same, "tp.compile (the graph is unchanged; marks the compiled boundary)"),
]}


def transform_def(spec: CallSpec) -> TransformDef:
    """Look up and validate the transform named in `spec`."""
    t = TRANSFORMS.get(spec.name)
    if t is None:
        raise SpecError(f"unknown transform {spec.name!r} (known: {', '.join(TRANSFORMS)})")
    bad = [k for k in spec.kw if k not in t.options]
    if bad:
        allowed = ", ".join(t.options) or "none"
        raise SpecError(f"transform {spec.name!r} has no option {bad[0]!r} (options: {allowed})")
    return t


# ----------------------------------------------------------------------------------------------
# Building the stages
# ----------------------------------------------------------------------------------------------
def graph_function(graph: Graph) -> Callable:
    """A Python function over tensors that runs `graph` (so transforms can be applied to an IR file)."""
    from tensorplay._trace import call_graph

    def fn(*args):
        outs = call_graph(graph, list(args))
        return outs[0] if len(outs) == 1 else tuple(outs)
    fn.__name__ = graph.name if graph.name.isidentifier() else "f"
    return fn


def _trace(fn: Callable, specs: list[TensorSpec], seed: int) -> tuple[Graph, float, list[PassRecord]]:
    import tensorplay as tp

    rng = np.random.default_rng(seed)
    args = [example_tensor(s, rng) for s in specs]
    with PassRecorder() as rec:
        t0 = time.perf_counter()
        closed = tp.make_graph(fn, *args)
        seconds = time.perf_counter() - t0
    # captured tensors (weights, constants made inside fn) become constants: the dump runs on its own
    return closed.self_contained_graph(), seconds, rec.records


def build_stages(*, fn: Callable | None = None, graph: Graph | None = None, source: str = "",
                 specs: Sequence[TensorSpec] | None = None, transforms: Sequence[CallSpec] = (),
                 passes: Sequence[CallSpec] = (), seed: int = 0) -> list[Stage]:
    """All stages for a function `fn` (with `specs`) or a parsed `graph`; see the module docstring."""
    defs = [transform_def(t) for t in transforms]
    stages: list[Stage] = []
    if graph is not None and not defs:
        stages.append(Stage(0, "parse", f"parsed {source}", graph, 0.0))
    else:
        if graph is not None:
            fn = graph_function(graph)
            if specs is None:
                specs = [TensorSpec(v.type.shape, v.type.dtype) for v in graph.inputs]
        assert fn is not None
        final_specs = list(specs or [])
        stage_specs = [final_specs]
        for t, spec in zip(reversed(defs), reversed(transforms)):
            stage_specs.insert(0, t.inner_specs(stage_specs[0], spec.kw))
        fns = [fn]
        for t, spec in zip(defs, transforms):
            fns.append(t.wrap(fns[-1], spec.kw))
        name = getattr(fn, "__name__", "f")
        for i, (f, sp) in enumerate(zip(fns, stage_specs)):
            g, seconds, records = _trace(f, sp, seed)
            if i == 0:
                label = f"parsed {source}" if graph is not None else f"traced {name}({', '.join(map(str, sp))})"
                stages.append(Stage(0, "parse" if graph is not None else "trace", label, g, seconds, records))
            else:
                stages.append(Stage(i, "transform", f"after {transforms[i - 1].text or transforms[i - 1]}", g,
                                    seconds, records))
    for spec in passes:
        current = stages[-1].graph
        with PassRecorder() as rec:
            t0 = time.perf_counter()
            g, name = run_pass(current, spec)
            seconds = time.perf_counter() - t0
        label = f"after pass {name}" + (spec.text[len(spec.name):] if spec.kwargs else "")
        stages.append(Stage(len(stages), "pass", label, g, seconds, rec.records))
    return stages
