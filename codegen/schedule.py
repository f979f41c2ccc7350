"""Group the nodes of a graph into kernels.

A kernel is one loop nest. Nodes whose lowering is an *expression* (elementwise
math, select, convert, and the layout ops broadcast/reshape/transpose/slice/
rev/pad/concatenate/take/iota/full/random) are fused into the kernel of their
consumers and computed by index arithmetic, never materialised. A kernel is
rooted at

- a `loop` root: an expression node that must be materialised (a graph output,
  or a value read by several kernels); the loop runs over its shape and may
  store further outputs of the same shape computed on the way;
- a *kernel* root (reductions, argmax/argmin, dot_general, index_add): its
  lowering emits its own loops. Reductions and arg-reductions fuse their
  producers; dot_general and index_add read materialised operands.

Nodes are visited in reverse topological order; a node joins the kernel of its
consumers when they all belong to one kernel that accepts producers. Because a
layout op evaluates its operand at a remapped index, a fused node may be
evaluated several times per loop iteration (e.g. `slice(y) + rev(y)`), and a
node under an expanding broadcast is evaluated once per *output* element. Both
are accepted only for cheap nodes (a few instructions); an expensive one
(transcendental, division, random bits, ...) is materialised instead.

Fusion is depth-bounded: a node whose longest chain of fused consumers up to
the kernel root would exceed `MAX_FUSED_DEPTH` starts a kernel of its own.
Lowering evaluates a fused operand by recursion (`KernelContext.value` asks the
operand's lowering, which asks its operands, ...), so the bound keeps a chain of
10,000 elementwise ops from exhausting Python's stack, and it also bounds the
size of one kernel function that LLVM must optimise.

Control flow. A node whose lowering is a `control` (cond, while_loop, scan) is a
step of its own, a `Control`: its operands are materialised, its tuple result is
a list of element buffers, and each of its regions is scheduled in turn, with the
same fusion, into a `Scope` (`Control.regions`). A `tuple_get` is no code: its
value *is* the buffer of that element (`Control.elements`). Before scheduling,
`normalize` folds `tuple_get(make_tuple(...))`, merges repeated projections and
inlines the region of an `inline` node (custom-derivative calls, checkpoint), so
that their bodies fuse with the code around them.
"""
from __future__ import annotations

from ._record import Factory, record

from tensorplay.ir.core import Graph, Node, Value
from tensorplay.ir.regions import region_attrs
from tensorplay.ir.passes.simplify import fold_layout
from tensorplay.ir.types import TupleType
from .lower import LOWERINGS, Lowering

MAX_PATHS = 4  # a cheap node may be recomputed at most this many times per element
# Longest chain of fused nodes in one kernel. Lowering recurses ~4 Python frames per level, so 64
# levels stay far below the default recursion limit of 1000 whatever the caller's own depth.
MAX_FUSED_DEPTH = 64


@record
class Kernel:
    """One loop nest: `nodes` (topological order) computed, `outputs` stored, `inputs` read."""

    name: str
    kind: str  # "loop", or the primitive name of a kernel-kind root
    root: Node
    domain: tuple[int, ...]
    nodes: list[Node] = Factory(list)
    outputs: list[Value] = Factory(list)
    inputs: list[Value] = Factory(list)
    flat: bool = False  # loop kernel iterated as one 1-D loop over the linear index
    node_indices: list[int] = Factory(list)  # positions of `nodes` in graph.nodes
    # a loop kernel iterated box by box, [start, stop) each (None: one loop nest over the domain)
    boxes: list[tuple[tuple[int, ...], tuple[int, ...]]] | None = None

    def fused_values(self) -> set[Value]:
        """Values computed by expression inside this kernel (everything but a kernel-kind root)."""
        return {n.out for n in self.nodes if LOWERINGS[n.prim.name].kind == "expr"}

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind, "domain": self.domain,
                "nodes": [n.prim.name for n in self.nodes], "node_indices": list(self.node_indices),
                "flat": self.flat}


@record
class Control(Kernel):
    """A control-flow step: `root` is the cond/while_loop/scan node, `inputs` its operands,
    `elements[i]` the value projecting element i of its result (None: no one reads it),
    `outputs` the projected values, `regions` each region attribute's schedule."""

    elements: list[Value | None] = Factory(list)
    regions: dict[str, "Scope"] = Factory(dict)

    def describe(self) -> dict:
        d = super().describe()
        d["regions"] = {name: [k.describe() for k in sc.steps] for name, sc in self.regions.items()}
        return d


@record
class Scope:
    """One graph in normal form (`normalize`) and its steps, in execution order."""

    graph: Graph
    steps: list[Kernel]


def schedule_scope(graph: Graph, scopes: dict | None = None) -> Scope:
    """The normal form of `graph` and its schedule, regions included (recursively).

    `scopes` maps regions already scheduled in this compilation to their scope: a region that
    several control steps carry (equal regions: the same structure) is scheduled once and its
    kernels are emitted once (`module._emit_kernels`)."""
    g = normalize(graph)
    return Scope(g, schedule(g, scopes))


def _region_scope(region, scopes: dict) -> Scope:
    scope = scopes.get(region)
    if scope is None:
        scope = scopes[region] = schedule_scope(region.graph, scopes)
    return scope


# --- loop weights in gemm-friendly layout -------------------------------------------------------
# A gemm whose right operand is transposed (``h @ W^T`` with W stored (N, K), i.e. dot_general
# contracting the rhs on its axis 1) runs ~1.5x slower in OpenBLAS for the small row counts of a
# loop body (it repacks the operand at every call). When that operand is a scan const, it is
# transposed once before the loop instead, and the body contracts the copy on axis 0.
MIN_STEPS_FOR_WEIGHT_COPY = 2


def _transposed_rhs(node: Node, const_inputs: set) -> bool:
    if node.prim.name != "dot_general" or any(node.attrs["batch"]):
        return False
    rhs = node.inputs[1]
    return rhs in const_inputs and rhs.ndim == 2 and tuple(node.attrs["contract"][1]) == (1,) \
        and rhs.dtype.is_floating_point


def transpose_loop_weights(graph: Graph) -> Graph:
    """`graph` with each scan whose body multiplies by a const as a transposed right operand given
    that const transposed (once, before the loop) as an extra const; `graph` itself when there is
    none. A const that is itself ``transpose(w)`` outside the loop is replaced by ``w``."""
    todo = []
    for n in graph.nodes:
        if n.prim.name == "scan" and n.attrs["length"] >= MIN_STEPS_FOR_WEIGHT_COPY:
            body = n.attrs["body"].graph
            consts = set(body.inputs[:n.attrs["num_consts"]])
            if any(_transposed_rhs(m, consts) for m in body.nodes):
                todo.append(n)
    if not todo:
        return graph
    from tensorplay.ir.primitive import get_primitive
    from tensorplay.ir.regions import Region
    from tensorplay.ir.types import TensorType

    transpose = get_primitive("transpose")
    env: dict[Value, Value] = {}
    nodes: list[Node] = []
    for n in graph.nodes:
        ins = tuple([env.get(v, v) for v in n.inputs])
        if n not in todo:
            if all(a is b for a, b in zip(ins, n.inputs)):
                nodes.append(n)
            else:
                nodes.append(Node.typed(n.prim, ins, dict(n.attrs), n.out.type))
                env[n.out] = nodes[-1].out
            continue
        a = n.attrs
        nc, body = a["num_consts"], a["body"].graph
        consts = body.inputs[:nc]
        const_set = set(consts)
        wanted = []  # const positions to transpose, in first-use order
        for m in body.nodes:
            if _transposed_rhs(m, const_set):
                i = consts.index(m.inputs[1])
                if i not in wanted:
                    wanted.append(i)
        extra_in, extra_ops = {}, []
        for i in wanted:
            w = ins[i]
            t = TensorType((w.shape[1], w.shape[0]), w.dtype)
            if w.node is not None and w.node.prim.name == "transpose" and tuple(w.node.attrs["permutation"]) == (1, 0):
                extra_ops.append(w.node.inputs[0])
            else:
                nodes.append(Node.typed(transpose, (w,), {"permutation": (1, 0)}, t))
                extra_ops.append(nodes[-1].out)
            extra_in[consts[i]] = Value(t)
        benv: dict[Value, Value] = {}
        bnodes: list[Node] = []
        for m in body.nodes:
            bins = tuple([benv.get(v, v) for v in m.inputs])
            if _transposed_rhs(m, const_set):
                contract = (tuple(m.attrs["contract"][0]), (0,))
                bnodes.append(Node.typed(m.prim, (bins[0], extra_in[m.inputs[1]]),
                                         {"contract": contract, "batch": m.attrs["batch"]}, m.out.type))
            elif all(x is y for x, y in zip(bins, m.inputs)):
                bnodes.append(m)
                continue
            else:
                bnodes.append(Node.typed(m.prim, bins, dict(m.attrs), m.out.type))
            benv[m.out] = bnodes[-1].out
        new_body = Graph([*consts, *extra_in.values(), *body.inputs[nc:]], bnodes,
                         [benv.get(v, v) for v in body.outputs], body.name)
        attrs = dict(a)
        attrs["body"], attrs["num_consts"] = Region(new_body), nc + len(extra_in)
        nodes.append(Node.typed(n.prim, (*ins[:nc], *extra_ops, *ins[nc:]), attrs, n.out.type))
        env[n.out] = nodes[-1].out
    return Graph(graph.inputs, nodes, [env.get(v, v) for v in graph.outputs], graph.name)


def _lowering(node: Node) -> Lowering:
    try:
        return LOWERINGS[node.prim.name]
    except KeyError:
        raise NotImplementedError(f"codegen: primitive {node.prim.name!r} has no lowering") from None


def schedule(graph: Graph, scopes: dict | None = None) -> list[Kernel]:
    """Partition `graph.nodes` into kernels and control steps, returned in an order that respects
    their dependencies. `graph` must be in normal form (`normalize`; most graphs are). `scopes`:
    see `schedule_scope`."""
    scopes = {} if scopes is None else scopes
    live = _live_nodes(graph)
    consumers: dict[Value, list[Node]] = {}
    for n in graph.nodes:
        if n not in live:
            continue
        for v in n.inputs:
            lst = consumers.setdefault(v, [])
            if not lst or lst[-1] is not n:
                lst.append(n)
    outputs = set(graph.outputs)
    kernel_of: dict[Node, Kernel] = {}
    # paths[n]: the distinct chains of index remappings from the kernel domain to n;
    # a path element is (layout node, operand position, expands).
    paths: dict[Node, set[tuple]] = {}
    depth: dict[Node, int] = {}  # longest chain of fused consumers from the kernel root (root: 0)
    kernels: list[Kernel] = []
    order = {n: i for i, n in enumerate(graph.nodes)}

    def new_kernel(node: Node, kind: str, domain: tuple[int, ...]) -> Kernel:
        k = Kernel(f"k{len(kernels)}_{node.prim.name}", kind, node, domain, [node], [node.out])
        kernels.append(k)
        kernel_of[node] = k
        paths[node] = {()}
        depth[node] = 0
        return k

    for node in reversed(graph.nodes):
        if node not in live:
            continue  # dead code: nothing reads it
        low = _lowering(node)
        if low.kind == "alias":
            continue  # tuple_get: the element buffer of its control step (below)
        if low.kind == "control":
            k = Control(f"k{len(kernels)}_{node.prim.name}", node.prim.name, node, (), [node], [])
            k.regions = {name: _region_scope(r, scopes) for name, r in region_attrs(node.attrs)}
            kernels.append(k)
            kernel_of[node] = k
            paths[node] = {()}
            depth[node] = 0
            continue
        if low.kind != "expr" and low.kind != "kernel":
            raise NotImplementedError(f"codegen: {node.prim.name} must be removed by `normalize` before scheduling")
        if low.kind == "kernel":
            operand = node.inputs[0] if node.inputs else None
            domain = operand.shape if (low.fuses_producers and operand is not None) else node.out.shape
            new_kernel(node, node.prim.name, domain)
            continue
        users = consumers.get(node.out, [])
        targets = {id(kernel_of[c]): kernel_of[c] for c in users}
        target = next(iter(targets.values())) if len(targets) == 1 else None
        chain = 1 + max((depth[c] for c in users), default=0)
        if target is not None and _accepts(target) and chain <= MAX_FUSED_DEPTH:
            p = set()
            for c in users:
                p |= _edge_paths(c, node, paths[c], target)
            is_out = node.out in outputs
            expands = any(step[2] for path in p for step in path)
            ok = len(p) == 1 or (low.cheap and len(p) <= MAX_PATHS)
            ok = ok and (low.cheap or not expands)
            if is_out:
                ok = ok and target.kind == "loop" and p == {()} and node.out.shape == target.domain
            if ok:
                target.nodes.append(node)
                kernel_of[node] = target
                paths[node] = p
                depth[node] = chain
                if is_out:
                    target.outputs.append(node.out)
                continue
        first = _join_first(node, users, kernel_of, paths, depth, order) \
            if len(targets) > 1 and low.cheap and node.out not in outputs else None
        if first is not None:
            mine = [c for c in users if kernel_of[c] is first]
            first.nodes.append(node)
            first.outputs.append(node.out)
            kernel_of[node] = first
            paths[node] = {()}
            depth[node] = 1 + max(depth[c] for c in mine)
            continue
        new_kernel(node, "loop", node.out.shape)

    for node in graph.nodes:
        if node in live and LOWERINGS[node.prim.name].kind == "alias":
            k = kernel_of[node.inputs[0].node]
            if not k.elements:
                k.elements = [None] * len(node.inputs[0].type.elements)
            k.elements[node.attrs["index"]] = node.out
            k.outputs.append(node.out)
    kernels.sort(key=lambda k: order[k.root])
    for i, k in enumerate(kernels):
        k.name = f"k{i}_{k.root.prim.name}"
        k.nodes.sort(key=order.__getitem__)
        k.node_indices = [order[n] for n in k.nodes]
        k.outputs.sort(key=lambda v: order[v.node])
        mine = set(k.nodes)
        seen: set[Value] = set()
        for n in k.nodes:
            for v in n.inputs:
                if (v.node is None or v.node not in mine) and v not in seen:
                    seen.add(v)
                    k.inputs.append(v)
        if k.kind == "loop":
            k.flat = all(LOWERINGS[n.prim.name].linear(n) for n in k.nodes)
            if not k.flat:
                k.boxes = _boxes(k, paths)
        if isinstance(k, Control) and not k.elements:
            k.elements = [None] * len(k.root.out.type.elements)
    return kernels


# A pad or concatenate read at the kernel's own index selects, per element, which operand (or the
# fill) it reads, with clamped indices: LLVM does not vectorise such gathers, and every operand is
# evaluated at every element. Split at the operand boundaries along one axis, each box of the loop
# nest reads one operand: the range checks fold away and the box vectorises like a plain copy
# (the backward pass of an LSTM cell assembles its gate cotangents this way, 4 pads of 128 columns).
MAX_BOXES = 8


def _boxes(k: Kernel, paths: dict) -> list[tuple[tuple[int, ...], tuple[int, ...]]] | None:
    """Boxes of `k.domain` split at the operand boundaries of the pad / concatenate nodes the kernel
    evaluates at its own index, along the innermost axis that has any; None when there are none."""
    cuts: dict[int, set[int]] = {}
    for n in k.nodes:
        if n.out.shape != k.domain or paths.get(n) != {()}:
            continue
        if n.prim.name == "concatenate":
            a, at = n.attrs["axis"], 0
            for x in n.inputs:
                at += x.shape[a]
                cuts.setdefault(a, set()).add(at)
        elif n.prim.name == "pad":
            for a, (lo, it, x) in enumerate(zip(n.attrs["low"], n.attrs["interior"], n.inputs[0].shape)):
                if it == 0 and (lo != 0 or x != n.out.shape[a]):
                    cuts.setdefault(a, set()).update((lo, lo + x))
    if not cuts:
        return None
    axis = max(cuts)
    size = k.domain[axis]
    edges = sorted({0, size} | {c for c in cuts[axis] if 0 < c < size})
    if len(edges) - 1 > MAX_BOXES or len(edges) <= 2:
        return None
    out = []
    for lo, hi in zip(edges, edges[1:]):
        start = tuple(lo if a == axis else 0 for a in range(len(k.domain)))
        stop = tuple(hi if a == axis else d for a, d in enumerate(k.domain))
        out.append((start, stop))
    return out


def normalize(graph: Graph) -> Graph:
    """`graph` with `tuple_get(make_tuple(...))` folded, repeated projections of one element merged,
    `inline` nodes replaced by their region, the transposes and 1-axis reshapes around products
    read through by the products (`fold_layout`: BLAS takes them by its flags) and the scans'
    weights in gemm-friendly layout (`transpose_loop_weights`); `graph` itself when there is
    nothing to do.

    Regions are normalised when they are scheduled (`schedule_scope`)."""
    return split_constants(split_reduced_cones(transpose_loop_weights(fold_layout(_normalize_tuples(graph)))))


# Operand-less constants that every kernel recomputes by index for free: one copy per reader
# instead of one shared value, which (read by several kernels) would be materialised by a loop of
# its own and loaded back by each (the zeros of relu's `le` / `select` in an MLP's grad: a
# 64x256 store and six loads).
SPLIT_PRIMS = frozenset({"full", "iota"})


def split_constants(graph: Graph) -> Graph:
    """`graph` with each operand-less `full` / `iota` read by several nodes that fuse their
    producers given one copy per such reader; the first of them keeps the original unless a reader
    that needs it materialised (a dot_general, a control step, ...) or a graph output has it.
    `graph` itself when there is nothing to split.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((4,), float32))
    >>> z = b.full(shape=(4,), dtype=float32, value=0.0)
    >>> g = b.build([b.max(x, z), b.min(x, z)])
    >>> [n.prim.name for n in split_constants(g).nodes]
    ['full', 'max', 'full', 'min']
    """
    fusing: dict[Value, int] = {}  # constant -> readers that fuse it
    kept: set[Value] = {v for v in graph.outputs}  # constants whose original stays in use
    for n in graph.nodes:
        low = LOWERINGS.get(n.prim.name)
        fuses = low is not None and (low.kind == "expr" or low.kind == "kernel" and low.fuses_producers)
        for v in set(n.inputs):
            if v.node is not None and v.node.prim.name in SPLIT_PRIMS and not v.node.inputs:
                if fuses:
                    fusing[v] = fusing.get(v, 0) + 1
                else:
                    kept.add(v)
    split = {v for v, c in fusing.items() if c > 1 or c == 1 and v in kept}
    if not split:
        return graph
    seen: set[Value] = set(kept)
    env: dict[Value, Value] = {}
    nodes: list[Node] = []
    for n in graph.nodes:
        low = LOWERINGS.get(n.prim.name)
        fuses = low is not None and (low.kind == "expr" or low.kind == "kernel" and low.fuses_producers)
        copies: dict[Value, Value] = {}
        if fuses:
            for v in n.inputs:
                if v in split and v not in copies:
                    if v in seen:
                        nodes.append(Node.typed(v.node.prim, (), dict(v.node.attrs), v.type))
                        copies[v] = nodes[-1].out
                    else:
                        seen.add(v)
        ins = [copies.get(v, env.get(v, v)) for v in n.inputs]
        if all(a is b for a, b in zip(ins, n.inputs)):
            nodes.append(n)
        else:
            nodes.append(Node.typed(n.prim, tuple(ins), dict(n.attrs), n.out.type))
            env[n.out] = nodes[-1].out
    return Graph(graph.inputs, nodes, [env.get(v, v) for v in graph.outputs], graph.name)


MAX_CONE = 4  # nodes of a cheap expression a reduction recomputes instead of reading it back


def _input_cone(v: Value, limit: int = MAX_CONE) -> list[Node] | None:
    """The nodes computing `v` from graph inputs and operand-less constants alone, all cheap
    elementwise expressions, in graph order -- or None (another producer, or more than `limit`)."""
    cone: dict[Node, None] = {}
    pending = [v]
    while pending:
        u = pending.pop()
        n = u.node
        if n is None or n in cone:
            continue
        low = LOWERINGS.get(n.prim.name)
        if low is None or low.kind != "expr" or not low.cheap or not (low.elementwise or not n.inputs):
            return None
        cone[n] = None
        if len(cone) > limit:
            return None
        pending.extend(n.inputs)
    return list(cone)


def split_reduced_cones(graph: Graph) -> Graph:
    """`graph` with each reduction that reads a cheap expression of graph inputs (a few elementwise
    nodes, `MAX_CONE`) which other nodes read too given its own copy of that expression: the
    reduction fuses the copy, and the others fuse the original, instead of one loop storing it for
    both (a reduction cannot store a value besides its own). The nan mask of a product with the
    identity basis (`simplify._dot_of_identity`: a count of non-finite entries per row, then each
    entry's own flag) is one: its 64x256 int32 store and load go. `graph` itself when none applies.

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x = b.add_input(TensorType((4, 3), float32))
    >>> a = b.abs(x)
    >>> g = b.build([b.reduce_max(a, axes=(1,)), b.mul(a, x)])
    >>> [n.prim.name for n in split_reduced_cones(g).nodes]
    ['abs', 'abs', 'reduce_max', 'mul']
    """
    readers: dict[Value, int] = {}
    for n in graph.nodes:
        for v in set(n.inputs):
            readers[v] = readers.get(v, 0) + 1
    for v in graph.outputs:
        readers[v] = readers.get(v, 0) + 1
    cones: dict[Node, list[Node]] = {}  # reduction -> the cone it recomputes
    for n in graph.nodes:
        low = LOWERINGS.get(n.prim.name)
        if low is None or low.kind != "kernel" or not low.fuses_producers or len(n.inputs) != 1:
            continue
        v = n.inputs[0]
        if readers.get(v, 0) > 1 and v.node is not None:
            cone = _input_cone(v)
            if cone:
                cones[n] = cone
    if not cones:
        return graph
    order = {n: i for i, n in enumerate(graph.nodes)}
    renamed: dict[Value, Value] = {}  # a reduction's result -> its copy's
    nodes: list[Node] = []
    for n in graph.nodes:
        cone = cones.get(n)
        if cone is not None:
            local: dict[Value, Value] = {}
            for m in sorted(cone, key=order.__getitem__):
                nodes.append(Node.typed(m.prim, tuple([local.get(u, u) for u in m.inputs]), dict(m.attrs), m.out.type))
                local[m.out] = nodes[-1].out
            nodes.append(Node.typed(n.prim, (local[n.inputs[0]],), dict(n.attrs), n.out.type))
            renamed[n.out] = nodes[-1].out
        elif any(v in renamed for v in n.inputs):
            nodes.append(Node.typed(n.prim, tuple([renamed.get(v, v) for v in n.inputs]), dict(n.attrs), n.out.type))
            renamed[n.out] = nodes[-1].out
        else:
            nodes.append(n)
    return Graph(graph.inputs, nodes, [renamed.get(v, v) for v in graph.outputs], graph.name)


def _normalize_tuples(graph: Graph) -> Graph:
    seen: set[tuple] = set()
    for n in graph.nodes:
        kind = _lowering(n).kind
        if kind == "inline" or n.prim.name == "make_tuple":
            break
        if kind == "alias":
            key = (n.inputs[0], n.attrs["index"])
            if key in seen:
                break
            seen.add(key)
    else:
        return graph
    env: dict[Value, Value] = {v: v for v in graph.inputs}
    nodes: list[Node] = []
    outs = _copy_normalized(graph, graph.inputs, env, nodes, {}, {}, inlined=False)
    return Graph(graph.inputs, nodes, outs, graph.name)


def _copy_normalized(graph: Graph, args, env: dict, nodes: list, tuples: dict, gets: dict,
                     inlined: bool) -> list[Value]:
    """Append `graph`'s nodes in normal form to `nodes`, its inputs bound to `args`; its outputs.

    `tuples` maps a tuple value built by make_tuple (or by an inlined node) to its elements,
    `gets` a (tuple, index) pair to the one value projecting it. Nodes of the graph being
    normalised are kept when their operands are; those of an `inlined` region are always copied
    (a region may be inlined twice)."""
    env.update(zip(graph.inputs, args, strict=True))
    for n in graph.nodes:
        low = _lowering(n)
        ins = tuple([env[v] for v in n.inputs])
        if n.prim.name == "make_tuple":
            env[n.out] = n.out  # stands for its elements: only tuple_get reads it
            tuples[n.out] = list(ins)
            continue
        if low.kind == "inline":
            body, operands = low.inline(n)
            results = _copy_normalized(body, [env[v] for v in operands], env, nodes, tuples, gets, inlined=True)
            if n.out.type.__class__ is TupleType:
                env[n.out] = n.out
                tuples[n.out] = results
            else:
                (env[n.out],) = results
            continue
        if low.kind == "alias":
            t, i = ins[0], n.attrs["index"]
            if t in tuples:
                env[n.out] = tuples[t][i]
                continue
            if (t, i) in gets:
                env[n.out] = gets[(t, i)]
                continue
        if any(v in tuples for v in ins):
            raise NotImplementedError(f"codegen: {n.prim.name} reads a tuple built by make_tuple or a "
                                      f"custom call; only tuple_get may")
        if not inlined and all(a is b for a, b in zip(ins, n.inputs)):
            nodes.append(n)
        else:
            nodes.append(Node.typed(n.prim, ins, dict(n.attrs), n.out.type))
        env[n.out] = nodes[-1].out
        if low.kind == "alias":
            gets[(ins[0], n.attrs["index"])] = nodes[-1].out
    return [env[v] for v in graph.outputs]


def _live_nodes(graph: Graph) -> set[Node]:
    """Nodes some graph output depends on."""
    live: set[Node] = set()
    stack = [v.node for v in graph.outputs if v.node is not None]
    while stack:
        n = stack.pop()
        if n in live:
            continue
        live.add(n)
        stack.extend(v.node for v in n.inputs if v.node is not None)
    return live


def _join_first(node: Node, users: list[Node], kernel_of: dict, paths: dict, depth: dict,
                order: dict) -> Kernel | None:
    """The kernel that computes and stores expression `node`, read by several kernels, instead of
    a loop of its own, or None: the first of those kernels to run (kernels run in the order of
    their roots), when it is a loop over `node`'s shape that reads `node` at its own index only.
    The others run after it and read the stored buffer, so every value a kernel reads from another
    is still stored by a kernel whose root comes first. One pass over memory less: the relu mask
    `le` that the backward pass reads again is stored by the forward's `select` loop. Asked only
    for cheap nodes (compares, selects, adds: what a relu needs); an expensive one keeps its loop,
    as before (the schedules tests/codegen/test_control_ir.py checks)."""
    first = min({id(kernel_of[c]): kernel_of[c] for c in users}.values(), key=lambda k: order[k.root])
    if first.kind != "loop" or node.out.shape != first.domain:
        return None
    mine = [c for c in users if kernel_of[c] is first]
    p: set = set()
    for c in mine:
        p |= _edge_paths(c, node, paths[c], first)
    if p != {()} or 1 + max(depth[c] for c in mine) > MAX_FUSED_DEPTH:
        return None
    return first


def _accepts(k: Kernel) -> bool:
    return k.kind == "loop" or LOWERINGS[k.kind].kind == "kernel" and LOWERINGS[k.kind].fuses_producers


def _edge_paths(consumer: Node, producer: Node, consumer_paths: set[tuple], k: Kernel) -> set[tuple]:
    """Index paths of `producer` contributed by its use in `consumer` (inside kernel `k`)."""
    low = LOWERINGS[consumer.prim.name]
    if low.kind == "kernel" or low.elementwise:
        return set(consumer_paths)
    out = set()
    for i, v in enumerate(consumer.inputs):
        if v is producer.out:
            step = (id(consumer), i, low.expands(consumer))
            out |= {p + (step,) for p in consumer_paths}
    return out
