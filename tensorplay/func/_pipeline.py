"""The pipeline cache of the plain transforms: trace every call, derive and compile once.

A plain call such as ``jacrev(f)(x)`` traces `f` afresh (so a changed global, or a captured
tensor updated in place, is seen), and then only looks up: everything derived from the traced
graph -- the passes (batching, JVP, linearize + transpose, simplification, Jacobian assembly)
and the compiled executable -- is cached, keyed by the graph's `Graph.structural_key()` plus
the transform's parameters.

Two levels use it:

- `memo`: one pass pipeline applied to one traced graph (``grad``'s backward graph, ``vjp``'s
  forward and backward graphs, ``vmap``'s batched graph, ...). Inside an outer transform the
  cached result is inlined into the outer trace, so nested transforms hit the cache too.
- `call_outermost`: a chain of same-argument transforms (``grad``, ``jacrev``, ``jacfwd``,
  ``hessian`` and their nests, e.g. ``jacfwd(jacrev(f))``), optionally under one ``vmap`` at its
  head (``vmap(grad(f))``: the user's function is then traced per sample), called with concrete
  tensors. The user's function is traced once; on a miss the whole transform is built by
  *replaying* that graph (the function itself is not run again) and compiled as one executable;
  a hit runs it.

All caches are bounded LRUs; `clear()` empties every one of them.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable

from .. import _pytree
from .._exec import runner
from .._tensor import Tensor
from .._state import STATE
from .._replay import Replayed, TemplateBox, replay_keyed, template_of
from .._trace import ClosedGraph, KeyedTrace, RandomKey, call_graph, trace_function, trace_keyed
from .._views import own_outputs
from ..autograd._engine import run_taped
from ..autograd._record import ACTIVE, needs_tape
from ..compile import _fast_walk, _finisher, call_signature

__all__ = ["LRU", "memo", "clear", "stats", "run_graph", "Transform", "spec", "link", "transform_chain",
           "call_outermost", "MAX_ENTRIES"]

MAX_ENTRIES = 256


class LRU:
    """A bounded, thread-safe least-recently-used mapping with hit and miss counters.

    >>> c = LRU("demo", maxsize=2)
    >>> c.put("a", 1); c.put("b", 2); c.get("a"); c.put("c", 3)
    1
    >>> c.get("b") is None, len(c), c.misses
    (True, 2, 1)
    """

    def __init__(self, name: str, maxsize: int = MAX_ENTRIES):
        self.name = name
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._last = None  # the value most recently stored or returned: its key is already the newest
        _CACHES.append(self)

    def get(self, key):
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            if value is not self._last:  # (a repeated hit skips re-hashing its key: keys are long tuples)
                self._data.move_to_end(key)
                self._last = value
            self.hits += 1
            return value

    def put(self, key, value) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            self._last = value
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._last = None

    def __len__(self) -> int:
        return len(self._data)


_CACHES: list[LRU] = []


def clear() -> None:
    """Empty every in-memory cache of the plain transforms (passes, replays, executables they hold).

    >>> import tensorplay as tp
    >>> from tensorplay.func import grad, _pipeline
    >>> _ = grad(lambda x: (x * x).sum())(tp.ones(3))
    >>> _pipeline.clear(); sum(len(c) for c in _pipeline._CACHES)
    0
    """
    for c in _CACHES:
        c.clear()
    _IN_TREES.clear()
    _PLANS.clear()
    for plan in _STANDALONE_PLANS:  # (their latest signature holds its replay templates)
        plan.last = None


def stats() -> dict[str, tuple[int, int, int]]:
    """``{cache name: (hits, misses, entries)}`` of every pipeline cache (tests read the misses).

    >>> from tensorplay.func import _pipeline
    >>> "outermost" in _pipeline.stats()
    True
    """
    return {c.name: (c.hits, c.misses, len(c)) for c in _CACHES}


def memo(cache: LRU, key, build: Callable[[], Any]) -> Any:
    """``cache[key]``, built by `build()` on a miss (a key that is None is never cached).

    >>> c = LRU("memo-demo")
    >>> memo(c, ("k",), lambda: [1]), memo(c, ("k",), lambda: [2]), c.hits
    ([1], [1], 1)
    """
    if key is None:
        return build()
    value = cache.get(key)
    if value is None:
        value = build()
        cache.put(key, value)
    return value


def run_graph(graph, inputs: list) -> list:
    """`call_graph` with a short path for the common case: no active trace and concrete inputs
    run the graph's kept runner directly (no trace resolution, no executable-cache lookup).

    >>> import tensorplay as tp
    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32))
    >>> run_graph(b.build([b.neg(x)]), [tp.ones(2)])
    [tensor([-1., -1.])]
    """
    if STATE.stack:
        return call_graph(graph, inputs)
    arrays = []
    keep = arrays.append
    for t in inputs:
        if t._trace is not None:
            return call_graph(graph, inputs)
        keep(t._data)
    if needs_tape(inputs):  # inputs that require grad: record the graph's ops on the tape
        return run_taped(graph, inputs)
    run, fresh = runner(graph)
    wrap = Tensor._wrap
    outs = [wrap(a) for a in run(*arrays)]
    return outs if fresh else own_outputs(outs, inputs)


# --- the outermost plain call -----------------------------------------------------------------------
class Transform:
    """What a same-argument transform is, independent of the function it wraps: `key` (its kind and
    parameters, hashable), `name` (as in messages, e.g. ``jacrev(argnums=0)``) and `apply`, which
    makes the same transform of another function. Made once per key (`spec`) and shared by every
    wrapper with those parameters, so building ``grad(f)`` in a loop makes none; compared by
    identity (a chain of them keys the pipeline cache's `_Plan`)."""

    __slots__ = ("key", "name", "apply", "__weakref__")

    def __init__(self, key: tuple, name: str, apply: Callable[[Callable], Callable]):
        self.key, self.name, self.apply = key, name, apply

    def __repr__(self) -> str:
        return f"Transform({self.name})"


_SPECS: dict = {}  # key -> Transform
_SPECS_LIMIT = 4096


def spec(key: tuple, make: Callable[[], tuple[str, Callable[[Callable], Callable]]]) -> Transform:
    """The shared `Transform` of `key`; ``make()`` gives its ``(name, apply)`` on the first use, so
    building ``grad(f)`` in a loop formats no name and makes no closure. (The key determines the
    name up to how a dict of in_dims was ordered, which only messages show.)

    >>> a = spec(("demo", 0), lambda: ("demo(0)", lambda g: g))
    >>> a is spec(("demo", 0), lambda: ("other", None)), a.name
    (True, 'demo(0)')
    """
    try:
        made = _SPECS.get(key)
    except TypeError:  # an unhashable parameter (the call reports it): a spec of its own
        return Transform(key, *make())
    if made is None:
        if len(_SPECS) >= _SPECS_LIMIT:
            _SPECS.clear()
        made = _SPECS[key] = Transform(key, *make())
    return made


def link(wrapper: Callable, func: Callable, transform: Transform) -> Callable:
    """Make `wrapper` the chain link of `transform` around `func`: ``wrapper._tp_transform`` is
    ``(transform, func)`` and ``wrapper._tp_chain`` the chain it heads (see `transform_chain`).

    >>> from tensorplay.func import grad
    >>> g = grad(lambda x: (x * x).sum())
    >>> [t.name for t in g._tp_chain[0]]
    ['grad(argnums=0)']
    """
    inner, user_fn = transform_chain(func)
    wrapper._tp_transform = (transform, func)
    wrapper._tp_chain = ((transform,) + inner, user_fn)
    return wrapper


def transform_chain(func: Callable) -> tuple[tuple[Transform, ...], Callable]:
    """The same-argument transforms wrapped around `func`, outermost first, and the user's function.

    A transform wrapper names the function it wraps twice (``_tp_transform[1]`` and ``__wrapped__``);
    a wrapper that only copied another one's attributes (``functools.wraps`` copies ``__dict__``,
    so a user's decorator around ``grad(f)`` carries grad's ``_tp_transform``) is not that transform,
    and ends the chain. A link's own ``_tp_chain`` is the rest of the chain (made when it was built).

    >>> from tensorplay.func import grad, jacrev
    >>> f = lambda x: (x * x).sum()
    >>> chain, user_fn = transform_chain(jacrev(grad(f)))
    >>> [t.name for t in chain], user_fn is f
    (['jacrev(argnums=0)', 'grad(argnums=0)'], True)
    """
    got = getattr(func, "_tp_transform", None)
    if got is None or getattr(func, "__wrapped__", None) is not got[1]:
        return (), func
    chain = func.__dict__.get("_tp_chain")
    if chain is not None:
        return chain
    chain, user_fn = transform_chain(got[1])
    return (got[0],) + chain, user_fn


class _Replayed:
    """One cached outermost call: the executable of the whole transform, and where its inputs come from.

    `sources[i]` says where the i-th capture of the transform's graph comes from at a call: an
    int is the position in the user function's captures, a RandomKey draws a fresh key, and a
    tensor is a constant the transform made (a shape-only constant, never user data). `plan` is
    the gathering of the inputs, written out once: None when the inputs are the call's tensors
    followed by the user's captures in their order (the common case).
    """

    __slots__ = ("closed", "run", "call", "fresh", "sources", "plain", "fast", "finish", "__weakref__")

    def __init__(self, closed: ClosedGraph, user: ClosedGraph):
        self.closed = closed
        self.run, self.fresh = runner(closed.graph)
        # the executable's generated call of a tuple of arrays, when it has one (else its __call__)
        fast_call = getattr(self.run, "_fast", None)
        self.call = fast_call if fast_call is not None else lambda arrays, run=self.run: run(*arrays)
        where = {id(s): k for k, s in enumerate(user.captures)}
        self.sources = [where.get(id(s), s) for s in closed.captures]
        # the user's captures, all of them, in order, none a random key: passed as they are
        self.plain = self.sources == list(range(len(user.captures))) and not any(
            isinstance(s, RandomKey) for s in user.captures)
        self.fast = self.fresh and not closed.mutated and all(a is None for a in closed.output_aliases)
        # fresh output buffers, nothing written back: the result is built from the arrays by one
        # generated expression, as `tp.compile`'s fast call builds it
        self.finish = _finisher(closed) if self.fast else None

    def __call__(self, tensors: list, caps: list):
        """Run on the call's tensors and `caps`, the capture sources of the user function's trace."""
        # only the captures the transform reads, in its order: a random key the transform replaced
        # (vmap's per-sample keys) is not drawn
        if self.plain:
            inputs = tensors + caps if caps else tensors
        else:
            inputs = tensors + [_current(caps[s] if s.__class__ is int else s) for s in self.sources]
        closed = self.closed
        if ACTIVE[0] and needs_tape(inputs):  # inputs that require grad: record the graph's ops on the tape
            return closed.unflatten_outputs(closed.write_back(inputs, run_taped(closed.graph, inputs)))
        arrays = self.call(tuple([t._data for t in inputs]))  # (a tuple: a refused input goes to the general call)
        if self.finish is not None:  # (called at top level only: no trace can own the results)
            return self.finish(arrays)
        wrap = Tensor._wrap
        outs = [wrap(a) for a in arrays]
        if not self.fresh:
            outs = own_outputs(outs, inputs)
        return closed.unflatten_outputs(closed.write_back(inputs, outs))


def _current(source):
    """A capture's value at this call: the tensor itself, or a fresh key for a random draw."""
    return source.materialize() if isinstance(source, RandomKey) else source


class _Plan:
    """What the pipeline cache keeps per chain of transforms (the `Transform` objects, by identity):
    the chain's name, and `last`, the fast-walk signature of its latest keyword-free call (a
    repeated call checks its arguments against it with the signature's `match`, building no key)."""

    __slots__ = ("name", "last")

    def __init__(self, chain: tuple):
        self.name = " > ".join(t.name for t in chain)
        self.last = None


class _Signature:
    """One argument signature of one chain: `tree` is the TreeDef of ``(args, kwargs)`` when every
    leaf is a tensor (False otherwise), `mapped` the head map's per-sample types (see `_mapped_types`,
    None until needed). Cached entries are keyed by ``(signature, trace key)``, so a hit hashes the
    argument signature once and the trace's key once; `last` is ``(trace key, entry)`` of the latest
    hit or miss (a repeated call compares its trace key with it instead of hashing it). `match`
    (fast-walk signatures only) returns the tensor leaves of positional arguments of exactly this
    signature, else None (see `_matcher`)."""

    __slots__ = ("tree", "mapped", "types", "match", "last", "templates", "__weakref__")

    def __init__(self, tree, types: list | None = None, match: Callable | None = None):
        self.tree = tree
        self.mapped = None
        # the leaves' TensorTypes, given when the key fixes them (the fast walk: concrete
        # C-contiguous tensors, keyed by shape and dtype): the trace looks no type up
        self.types = types
        self.match = match
        self.last = None
        # per user function (its code: a fresh lambda per call is the same program), the replay
        # template of its latest hit (`tensorplay._replay`)
        self.templates: dict = {}


_MATCH_LEAVES = 64  # larger argument trees are matched by the fast walk and a key lookup


def _matcher(args: tuple) -> Callable | None:
    """A function telling whether positional arguments have the fast-walk signature of `args`
    (concrete C-contiguous tensors, in tuples, lists and dicts: see `compile._fast_walk`), returning
    their tensors in flatten order if so, else None. It is written out once per signature, e.g. for
    ``(x, [(w, b)])``::

        def match(a):
            if len(a) != 2: return None
            v1, v2 = a
            if v1.__class__ is not T or v1._trace is not None: return None
            d = v1._data
            if d.shape != S0 or d.strides != C0 or d.dtype is not D0: return None
            ...
            return [v1, v4, v5]

    It checks less loosely than the key: the exact strides and dtype object of `args` (which make
    the array C-contiguous); an argument it refuses takes the key's path, which is never wrong.
    None when `args` has more than `_MATCH_LEAVES` leaves.

    >>> import tensorplay as tp
    >>> m = _matcher((tp.ones(2), [tp.ones(3)]))
    >>> len(m((tp.zeros(2), [tp.zeros(3)]))), m((tp.zeros(2), [tp.zeros(4)])), m((tp.zeros(2), (tp.zeros(3),)))
    (2, None, None)
    """
    env: dict = {"T": Tensor}
    lines = ["def match(a):", f"    if len(a) != {len(args)}: return None"]
    names: list = []
    count = [0]

    def unpack(var: str, items) -> bool:
        if not items:
            return True
        vs = []
        for _ in items:
            count[0] += 1
            vs.append(f"v{count[0]}")
        lines.append(f"    {', '.join(vs)}, = {var}")
        return all(leaf(v, x) for v, x in zip(vs, items))

    def leaf(v: str, x) -> bool:
        cls = x.__class__
        if len(names) >= _MATCH_LEAVES or count[0] > 4 * _MATCH_LEAVES:
            return False
        if cls is Tensor:
            d, k = x._data, len(names)
            env[f"S{k}"], env[f"C{k}"], env[f"D{k}"] = d.shape, d.strides, d.dtype
            lines.append(f"    if {v}.__class__ is not T or {v}._trace is not None: return None")
            lines.append(f"    d = {v}._data")
            lines.append(f"    if d.shape != S{k} or d.strides != C{k} or d.dtype is not D{k}: return None")
            names.append(v)
            return True
        if cls is tuple or cls is list:
            lines.append(f"    if {v}.__class__ is not {cls.__name__} or len({v}) != {len(x)}: return None")
            return unpack(v, x)
        if cls is dict:
            keys = f"K{len(env)}"  # (a fresh name per dict: the environment only grows)
            env[keys] = tuple(x)
            lines.append(f"    if {v}.__class__ is not dict or tuple({v}) != {keys}: return None")
            return unpack(f"{v}.values()", list(x.values()))
        return False

    if not unpack("a", args):
        return None
    lines.append(f"    return [{', '.join(names)}]")
    exec("\n".join(lines), env)  # noqa: S102 - the text is built above from names and indices
    return env["match"]


_PLANS: dict = {}  # chain (tuple of Transforms) -> _Plan
_PLANS_LIMIT = 1024
_OUTERMOST = LRU("outermost")
_SIGNATURES = LRU("outermost_signatures", maxsize=4 * MAX_ENTRIES)


def _plan(chain: tuple) -> _Plan:
    plan = _PLANS.get(chain)
    if plan is None:
        if len(_PLANS) >= _PLANS_LIMIT:
            _PLANS.clear()
        plan = _PLANS[chain] = _Plan(chain)
    return plan


def _signature(plan: _Plan, args: tuple, kwargs: dict, name: str):
    """``(signature record, tensor leaves)`` of a top-level call the pipeline cache can serve, or
    None (a non-hashable non-tensor argument has no key; a call with symbolic tensors is not top
    level). One walk over the arguments, one hash of its key."""
    if not kwargs:
        last = plan.last
        if last is not None:  # the chain's latest signature again: checked, not keyed
            tensors = last.match(args)
            if tensors is not None:
                return last, tensors
        key: list = [plan, "fast"]
        tensors: list = []
        if _fast_walk(args, key.append, tensors.append, arrays=False):
            key = tuple(key)
            sig = _SIGNATURES.get(key)
            if sig is None:
                sig = _Signature(_pytree.tree_flatten((tuple(args), kwargs))[1], [t._type() for t in tensors],
                                 _matcher(args))
                _SIGNATURES.put(key, sig)
            if sig.match is not None:
                plan.last = sig
            return sig, tensors
    try:
        arg_key, tensors, concrete = call_signature(args, kwargs, name)
    except TypeError:
        return None
    if not concrete:
        return None
    key = (plan, "general", arg_key)
    sig = _SIGNATURES.get(key)
    if sig is None:
        leaves, tree = _pytree.tree_flatten((tuple(args), kwargs))
        if len(leaves) != len(tensors) or any(a is not b for a, b in zip(leaves, tensors)):
            tree = False
        sig = _Signature(tree)
        _SIGNATURES.put(key, sig)
    return sig, tensors


def call_outermost(wrapper: Callable, args: tuple, kwargs: dict, fallback: Callable,
                   per_sample: Callable | None = None):
    """Call the transform `wrapper` at top level through the pipeline cache (see the module docstring).

    `fallback(*args, **kwargs)` is the uncached call, used when the call cannot be keyed (a
    non-hashable non-tensor argument or output).

    `per_sample(args, kwargs)`, given for a mapping transform at the head of the chain (`vmap`),
    checks the arguments and returns ``(positions, types)``: the mapped leaves (positions in the
    flattened ``(args, kwargs)``) and the per-sample type the user's function sees for each; it
    runs once per argument signature. The user's function is traced once on per-sample tensors
    (the other arguments reach it as they are), and the whole chain, the mapping included, is
    replayed and compiled as one executable.

    >>> import tensorplay as tp
    >>> from tensorplay.func import jacrev
    >>> j = jacrev(lambda x: x * x)
    >>> call_outermost(j, (tp.tensor([1.0, 2.0]),), {}, None)
    tensor([[2., 0.],
            [0., 4.]])
    """
    chain, user_fn = wrapper._tp_chain
    plan = _PLANS.get(chain) or _plan(chain)
    name = plan.name
    got = _signature(plan, args, kwargs, name)
    if got is None:
        return fallback(*args, **kwargs)
    sig, tensors = got
    tree = sig.tree
    user_name = getattr(user_fn, "__name__", None)
    tkey, captures, user, positions = _trace_call(chain, user_fn, args, kwargs, sig, tensors, per_sample, name,
                                                  user_name)
    latest = None
    try:
        if tkey is None:  # (outputs, writes or draws beyond the common case: `user` is a ClosedGraph)
            tkey = _trace_key(user)
        last = sig.last
        if last is not None and last[0] == tkey:  # the signature's latest entry again: no hashing, no lock
            latest = last[1]()  # (weakly held: an entry the LRU dropped is freed as before)
            # only while it is the LRU's newest value, so skipping the LRU's recency update changes
            # nothing: an entry in use is never the one evicted
            if latest is not _OUTERMOST._last:
                latest = None
        if latest is None:
            key = (sig, tkey)
            entry = _OUTERMOST.get(key)
    except TypeError:  # a non-hashable non-tensor output
        key = None
        entry = None
    if latest is not None or entry is not None:
        if user.__class__ is Replayed:  # (`release_hit`, its common case inlined)
            user.drop()
        else:
            release_hit(user, sig, tkey, user_fn)
        if latest is not None:
            _OUTERMOST.hits += 1  # (a hit, as `stats` counts them; unlocked: a counter only)
            return latest(tensors, captures)
    else:
        if user.__class__ is KeyedTrace or user.__class__ is Replayed:
            user = user.closed()
        try:
            entry = _replay_call(chain, user, args, kwargs, name, user_name, positions)
        except Exception:
            if per_sample is None:
                raise
            # a mapping's errors name the caller's arguments, which the replay does not see:
            # the uncached call raises the error as it words it
            return fallback(*args, **kwargs)
        if key is not None:
            _OUTERMOST.put(key, entry)
    if key is not None:
        sig.last = (tkey, weakref.ref(entry))
    return entry(tensors, captures)


def _trace_call(chain: tuple, user_fn: Callable, args, kwargs, sig: _Signature, tensors: list,
                per_sample: Callable | None, name: str, user_name: str | None) -> tuple:
    """The trace of the user's function that a call of `chain` with signature `sig` makes:
    ``(trace key or None, captures, traced, replay positions)``. When the signature gives every
    leaf's type, `traced` is `trace_keyed`'s (a `KeyedTrace` in the common case: no ClosedGraph
    unless the call misses); otherwise a ClosedGraph, whose key the caller computes."""
    tree = sig.tree
    known = None  # (every leaf's type, which are per-sample) when the signature gives them
    if per_sample is None:
        if sig.types is not None and tree is not False:
            known = (sig.types, None)
        else:
            user = trace_function(user_fn, args, kwargs, transform=name, name=user_name,
                                  flat=None if tree is False else (tensors, tree))
            return None, user.captures, user, None
    else:
        if tree is False:
            flat = None
            leaves, tree = _pytree.tree_flatten((tuple(args), kwargs))
        else:
            flat, leaves = (tensors, tree), tensors
        mapped = sig.mapped
        if mapped is None:  # raises the transform's own errors
            mapped = sig.mapped = _mapped_types(per_sample, args, kwargs, leaves, sig.types)
        if len(chain) == 1 or mapped[3] is None or flat is None:
            user, positions = _trace_mapped(chain, user_fn, args, kwargs, flat, leaves, tree, mapped, name,
                                            user_name)
            return None, user.captures, user, positions
        known = mapped[3]
    box = sig.templates.get(getattr(user_fn, "__code__", user_fn))
    if box:
        got = replay_keyed(box, user_fn, tensors, tree, known[1], name, user_name)
        if got is not None:
            if got[2].__class__ is Replayed:
                if box.fails:
                    box.fails = 0
            else:
                box.fails += 1
            return (*got, None)
    tkey, captures, user = trace_keyed(user_fn, tensors, tree, known[0], known[1], name, user_name)
    return tkey, captures, user, None


def trace_standalone(plan: _Plan, user_fn: Callable, args: tuple) -> tuple | None:
    """For a top-level transform that is no chain (`linearize`: it returns a function, not a
    value), the trace of ``user_fn(*args)`` as a chain's call makes it, replays included:
    ``(signature, tensor leaves, trace key or None, captures, traced)`` (`traced` as
    `_trace_call`'s), or None when the arguments have no signature. After a cache hit on the key,
    give `traced` to `release_hit`; on a miss, make its ClosedGraph (``traced.closed()``)."""
    got = _signature(plan, args, {}, plan.name)
    if got is None:
        return None
    sig, tensors = got
    tkey, captures, user, _ = _trace_call((), user_fn, args, {}, sig, tensors, None, plan.name,
                                          getattr(user_fn, "__name__", None))
    return sig, tensors, tkey, captures, user


def standalone_plan(name: str) -> _Plan:
    """The `_Plan` (signature records) of a standalone transform named `name` (`trace_standalone`)."""
    plan = _Plan(())
    plan.name = name
    _STANDALONE_PLANS.append(plan)
    return plan


_STANDALONE_PLANS: list = []


def release_hit(user, sig: _Signature, tkey: tuple, user_fn: Callable) -> None:
    """After a cache hit of the trace `user` (`_trace_call`'s) of `user_fn` with signature `sig`:
    a replay gives its template back, a keyed trace is kept as the next replay's template."""
    if user.__class__ is Replayed:
        user.drop()
    elif user.__class__ is KeyedTrace:
        _keep_template(user, sig, tkey, user_fn)


_REPLAY_FAILS = 4  # replays or templates failing this many times running end a function's replays


def _keep_template(keyed: KeyedTrace, sig: _Signature, tkey: tuple, user_fn: Callable) -> None:
    """After a hit of `keyed`, a trace of `user_fn` with signature `sig`: keep it as their replay
    template when it can be one and they have none, else free it (`KeyedTrace.drop`)."""
    templates = sig.templates
    code = getattr(user_fn, "__code__", user_fn)
    box = templates.get(code)
    if box is None:
        if len(templates) >= _TEMPLATES_PER_SIGNATURE:
            templates.clear()
        box = templates[code] = TemplateBox()
    if box or box.fails >= _REPLAY_FAILS:
        keyed.drop()
        return
    template = template_of(keyed, tkey)
    if template is None:
        box.fails += 1
    else:
        box.append(template)


_TEMPLATES_PER_SIGNATURE = 32


def _trace_key(user: ClosedGraph) -> tuple:
    """What a cached entry depends on beyond the argument signature: the trace's structure and its
    output tree, and, when there are any, its static outputs, in-place writes, output aliases and
    random-key captures (the two forms have different lengths, so they never compare equal)."""
    skey = user.structural_key()
    caps = user.captures
    if (user.mutated or any(user.out_static) or any(user.output_aliases)
            or (caps and any(isinstance(s, RandomKey) for s in caps))):
        return (skey, user.out_tree, tuple(user.out_static), tuple(user.mutated),
                tuple(map(_freeze_alias, user.output_aliases)), tuple([isinstance(s, RandomKey) for s in caps]))
    return (skey, user.out_tree)


def _keyed_signature(args, kwargs, name: str):
    """(argument key, tensors) of a top-level call the pipeline cache can serve, or None: a
    non-hashable non-tensor argument has no key, and a call with symbolic tensors is not top level."""
    try:
        arg_key, tensors, concrete = call_signature(args, kwargs, name)
    except TypeError:
        return None
    return (arg_key, tensors) if concrete else None


def _mapped_for(chain, arg_key, per_sample: Callable, args, kwargs, leaves: list) -> tuple:
    """`_mapped_types` of a mapping transform at the head of `chain`, once per argument signature."""
    types_key = (chain[0].key, arg_key)
    mapped = _PER_SAMPLE.get(types_key)
    if mapped is None:
        mapped = _mapped_types(per_sample, args, kwargs, leaves)
        _PER_SAMPLE.put(types_key, mapped)
    return mapped


def _trace_mapped(chain, user_fn, args, kwargs, flat, leaves: list, tree, mapped: tuple, name: str, user_name):
    """(the user's function traced on per-sample tensors, the mapped leaf positions its replay takes
    or None): with transforms inside the map, they take every tensor argument as theirs; a bare
    map's arguments that are not mapped reach the function as they are (captures of its trace)."""
    positions, types, leaf_types = mapped[:3]
    if len(chain) > 1:
        return trace_function(user_fn, args, kwargs, transform=name, in_types=leaf_types, name=user_name,
                              flat=flat), None
    return trace_function(_per_sample_call(user_fn, leaves, tree, positions), tuple(leaves[i] for i in positions),
                          transform=name, in_types=types, name=user_name), positions


def _entry_key(chain, arg_key, user: ClosedGraph) -> tuple:
    """The chunked map's pipeline-cache key of a traced call: the chain's keys, the argument
    signature, the trace's structure and everything about its outputs and captures that the
    replayed entry depends on."""
    return (tuple(t.key for t in chain), arg_key, user.structural_key(), user.out_tree,
            tuple(user.out_static), tuple(user.mutated), tuple(map(_freeze_alias, user.output_aliases)),
            tuple([isinstance(s, RandomKey) for s in user.captures]))


_PER_SAMPLE = LRU("outermost_per_sample_types")
_IN_TREES: dict = {}  # argument signature -> the TreeDef of (args, kwargs) when every leaf is a tensor, else False
_IN_TREES_LIMIT = 4096


def _tensor_tree(arg_key, tensors: list, args, kwargs):
    """``(tensors, in_tree)`` for `trace_function` when every leaf of ``(args, kwargs)`` is a tensor
    (`tensors` are then the leaves, in flatten order), else None. The tree comes from the argument
    signature, which determines it."""
    tree = _IN_TREES.get(arg_key)  # (the key holds every static leaf, so it determines the tree)
    if tree is None:
        leaves, tree = _pytree.tree_flatten((tuple(args), kwargs))
        if len(leaves) != len(tensors) or any(a is not b for a, b in zip(leaves, tensors)):
            tree = False
        if len(_IN_TREES) >= _IN_TREES_LIMIT:
            _IN_TREES.clear()
        _IN_TREES[arg_key] = tree
    return None if tree is False else (tensors, tree)


def _mapped_types(per_sample: Callable, args, kwargs, leaves: list, signature_types: list | None = None) -> tuple:
    """(mapped leaf positions, their per-sample types, the type of every tensor leaf: per-sample
    for a mapped one, None for the others, and, given the signature's `signature_types` of every
    leaf (all tensors), ``(every leaf's type as the function sees it, which are per-sample)`` for
    `trace_function`'s known-type path, else None)."""
    positions, types = per_sample(args, kwargs)
    of = dict(zip(positions, types))
    leaf_types = tuple([of.get(i) for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor)])
    known = None
    if signature_types is not None and len(signature_types) == len(leaf_types) == len(leaves):
        seen = [t if g is None else g for g, t in zip(leaf_types, signature_types)]
        batched = tuple([g is not None and g.shape != t.shape for g, t in zip(leaf_types, signature_types)])
        known = (seen, batched if any(batched) else None)
    return tuple(positions), tuple(types), leaf_types, known


def _per_sample_call(fn: Callable, leaves: list, tree, positions) -> Callable:
    """`fn` called on the arguments `leaves` (of structure `tree`) with the leaves at `positions`
    replaced by the given tensors."""
    def call(*xs):
        filled = list(leaves)
        for i, x in zip(positions, xs):
            filled[i] = x
        args, kwargs = _pytree.tree_unflatten(tree, filled)
        return fn(*args, **kwargs)

    return call


def _freeze_alias(alias):
    return None if alias is None else (alias[0], _pytree_freeze(alias[1]))


def _pytree_freeze(x):
    if isinstance(x, (list, tuple)):
        return tuple(_pytree_freeze(y) for y in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _pytree_freeze(v)) for k, v in x.items()))
    return x


def replay(closed: ClosedGraph, name: str | None = None, positions=None) -> Callable:
    """A function that behaves as the traced function `closed`: it inlines its graph into the
    active trace (or runs it), with the captures `closed` read, and performs its in-place writes.
    `name` is its ``__name__`` (as the messages of the transforms around it show it). The graph's
    arguments are the tensor leaves of the call, or the leaves at `positions` when given (the
    others were captures when `closed` was traced)."""
    def replayed(*args, **kwargs):
        leaves = _pytree.tree_flatten((args, kwargs))[0]
        if positions is None:
            args = [x for x in leaves if isinstance(x, Tensor)]
        else:
            args = [leaves[i] for i in positions]
        inputs = args + closed.capture_tensors()
        return closed.unflatten_outputs(closed.write_back(inputs, call_graph(closed.graph, inputs)))

    replayed.__name__ = name or closed.graph.name
    return replayed


def _replay_call(chain: tuple[Transform, ...], user: ClosedGraph, args, kwargs, name: str,
                 user_name: str | None = None, positions=None) -> _Replayed:
    """The transform chain applied to the replay of `user`, traced as one graph and compiled."""
    from tensorplay.ir.passes.simplify import simplify

    fn = replay(user, user_name, positions)
    for t in reversed(chain):
        fn = t.apply(fn)
    whole = trace_function(fn, args, kwargs, transform=name, name=user.graph.name)
    whole.graph = simplify(whole.graph)
    return _Replayed(whole, user)


# --- the outermost chunked map ----------------------------------------------------------------------
_CHUNKED = LRU("outermost_chunked")
_LAST_CHUNKED = LRU("outermost_chunked_last", maxsize=64)  # (chain keys, signature, function id) -> last entry
_NOT_CACHED = object()  # an entry saying: this call goes the uncached way


def call_outermost_chunked(wrapper: Callable, args: tuple, kwargs: dict, fallback: Callable,
                           per_sample: Callable, build: Callable, context=None):
    """A chunked map (``vmap(..., chunk_size=K, executor=ex)``) at the head of a transform chain,
    called at top level with concrete tensors, through the pipeline cache.

    As in `call_outermost`, the user's function is traced once per call (so a changed global is
    seen) on per-sample tensors, and everything derived from that trace is cached, keyed by its
    structure, the argument signature and the chain's keys (the map's key holds its chunk
    size and memory budget). On a miss ``build(fn, args, kwargs, sources_of)`` makes the entry:
    `fn` is the chain under the map applied to the replay of the traced function, and
    ``sources_of(captures)`` says where each capture of a graph traced from `fn` comes from at a
    later call (an int: that capture of the traced user function; ``("leaf", i)``: leaf i of the
    flattened ``(args, kwargs)``; anything else: itself), or None when that is ambiguous. `build`
    returns None (or raises) when the call cannot be cached: `fallback` then makes it, and raises
    the errors as it words them. A hit calls ``entry(leaves, user, context)``. Before tracing, the
    entry the previous call with the same argument signature used may start its chunks
    (``entry.speculate(leaves, context)``, a handle or None); if the trace leads to that entry, it
    is called with the handle as a fourth argument, else the handle is abandoned.

    >>> import tensorplay as tp
    >>> from tensorplay.func import vmap
    >>> vmap(lambda r: r.sum(), chunk_size=2)(tp.ones(3, 2))   # goes through here
    tensor([2., 2., 2.])
    """
    chain, user_fn = wrapper._tp_chain
    name = " > ".join(t.name for t in chain)
    signature = _keyed_signature(args, kwargs, name)
    if signature is None:
        return fallback(*args, **kwargs)
    arg_key, tensors = signature
    user_name = getattr(user_fn, "__name__", None)
    flat = _tensor_tree(arg_key, tensors, args, kwargs)
    leaves, tree = flat if flat is not None else _pytree.tree_flatten((tuple(args), kwargs))
    try:
        mapped = _mapped_for(chain, arg_key, per_sample, args, kwargs, leaves)
    except Exception:  # the map's own errors, as the uncached call words them
        return fallback(*args, **kwargs)
    last_key = (tuple(t.key for t in chain), arg_key, id(user_fn))  # (a reused id only costs a dropped start)
    last = _LAST_CHUNKED.get(last_key)  # the entry the previous call of this signature used: start its chunks
    started = last.speculate(leaves, context) if last is not None else None  # while this call traces
    try:
        user, replay_positions = _trace_mapped(chain, user_fn, args, kwargs, flat, leaves, tree, mapped, name,
                                               user_name)
        key = ("chunked",) + _entry_key(chain, arg_key, user)
        try:
            entry = _CHUNKED.get(key)
        except TypeError:  # a non-hashable non-tensor output
            key = None
            entry = None
    except BaseException:
        if started is not None:
            started.abandon()
        raise
    if started is not None and entry is not started.entry:  # the trace led elsewhere
        started.abandon()
        started = None
    if entry is None:
        fn = replay(user, user_name, replay_positions)
        for t in reversed(chain[1:]):
            fn = t.apply(fn)
        of_capture = {id(s): k for k, s in enumerate(user.captures)}
        of_leaf = {id(x): i for i, x in enumerate(leaves) if isinstance(x, Tensor)}

        def sources_of(captures) -> list | None:
            sources = []
            for s in captures:
                k, i = of_capture.get(id(s)), of_leaf.get(id(s))
                if k is not None and i is not None and replay_positions is None:
                    return None  # an argument that is also a global: which one a later call means is not known
                sources.append(k if k is not None else ("leaf", i) if i is not None else s)
            return sources

        try:
            entry = build(fn, args, kwargs, sources_of)
        except Exception:
            entry = None
        if entry is None:
            entry = _NOT_CACHED
        if key is not None:
            _CHUNKED.put(key, entry)
    if entry is _NOT_CACHED:
        return fallback(*args, **kwargs)
    _LAST_CHUNKED.put(last_key, entry)
    if started is not None:
        return entry(leaves, user, context, started)
    return entry(leaves, user, context)
