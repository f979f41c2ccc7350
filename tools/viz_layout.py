"""A layered (Sugiyama-style) layout for directed acyclic graphs, in pure Python.

The four classic phases, kept small:

1. **Layering** by longest path from the sources, so every edge points down.
   Sources that are not graph inputs (constants) are then pulled down to sit
   just above their first consumer instead of crowding the top row.
2. **Dummy vertices** split every edge that spans several layers, so long
   edges are routed around the vertices in between.
3. **Ordering** within layers by barycentre sweeps (down, then up), keeping
   the order with the fewest edge crossings seen.
4. **Coordinates**: each layer is placed by weighted isotonic regression (the
   pool-adjacent-violators algorithm): every vertex moves as close as it can
   to the mean position of its neighbours in the layer above or below, subject
   to the minimum separation from its left neighbour. Dummy vertices weigh
   more, which keeps long edges straight.

`layered_layout` takes a networkx (Multi)DiGraph and the size of each vertex;
it returns vertex boxes and one polyline per edge. It knows nothing about the
IR; `tools.viz` does the drawing.
"""
from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import dataclass, field
from typing import Callable, Hashable

__all__ = ["Layout", "layered_layout", "count_crossings"]

Point = tuple[float, float]


@dataclass
class Layout:
    """Result of `layered_layout`.

    `boxes[v]` is ``(x, y, width, height)`` with (x, y) the top-left corner;
    `edges[(u, v, key)]` is the polyline from the bottom of u to the top of v;
    `layers` lists the real vertices of each layer, left to right.
    """

    boxes: dict[Hashable, tuple[float, float, float, float]]
    edges: dict[tuple, list[Point]]
    layers: list[list[Hashable]]
    width: float
    height: float
    crossings: int = 0
    layer_of: dict[Hashable, int] = field(default_factory=dict)


class _Dummy:
    """A bend point of a long edge; one per layer the edge passes through."""

    __slots__ = ("edge", "step")

    def __init__(self, edge: tuple, step: int):
        self.edge = edge
        self.step = step

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"_Dummy({self.edge}, {self.step})"


def _layers(G, pinned_top: Callable[[Hashable], bool]) -> dict[Hashable, int]:
    import networkx as nx

    layer: dict[Hashable, int] = {}
    order = list(nx.topological_sort(G))
    for v in order:
        preds = list(G.predecessors(v))
        layer[v] = 1 + max(layer[p] for p in preds) if preds else 0
    # Pull unpinned sources (constants) down next to their first consumer.
    for v in reversed(order):
        if G.in_degree(v) == 0 and not pinned_top(v):
            succs = list(G.successors(v))
            if succs:
                layer[v] = max(0, min(layer[s] for s in succs) - 1)
    return layer


def count_crossings(upper: list, lower: list, edges: list[tuple]) -> int:
    """Number of crossing pairs among `edges` (u in `upper`, v in `lower`) for these orders."""
    pu = {v: i for i, v in enumerate(upper)}
    pl = {v: i for i, v in enumerate(lower)}
    pairs = sorted((pu[u], pl[v]) for u, v in edges)
    seen: list[int] = []
    crossings = 0
    for _, b in pairs:
        # pairs before this one with a larger lower position cross it
        crossings += len(seen) - bisect_right(seen, b)
        insort(seen, b)
    return crossings


def _total_crossings(order: list[list], down: dict) -> int:
    total = 0
    for i in range(len(order) - 1):
        lower = set(order[i + 1])
        edges = [(u, v) for u in order[i] for v in down[u] if v in lower]
        total += count_crossings(order[i], order[i + 1], edges)
    return total


def _barycentre_sort(layer: list, neighbours: dict, positions: dict) -> list:
    keyed = []
    for i, v in enumerate(layer):
        ps = [positions[n] for n in neighbours[v] if n in positions]
        keyed.append((sum(ps) / len(ps) if ps else float(i), i, v))
    keyed.sort(key=lambda t: (t[0], t[1]))
    return [v for _, _, v in keyed]


def _order(order: list[list], up: dict, down: dict, sweeps: int) -> tuple[list[list], int]:
    best = [list(layer) for layer in order]
    best_cross = _total_crossings(best, down)
    current = [list(layer) for layer in order]
    for _ in range(sweeps):
        if best_cross == 0:
            break
        for i in range(1, len(current)):
            pos = {v: j for j, v in enumerate(current[i - 1])}
            current[i] = _barycentre_sort(current[i], up, pos)
        for i in range(len(current) - 2, -1, -1):
            pos = {v: j for j, v in enumerate(current[i + 1])}
            current[i] = _barycentre_sort(current[i], down, pos)
        cross = _total_crossings(current, down)
        if cross < best_cross:
            best, best_cross = [list(layer) for layer in current], cross
    return best, best_cross


def _isotonic(targets: list[float], weights: list[float], gaps: list[float]) -> list[float]:
    """Positions x minimising sum w_i (x_i - t_i)^2 subject to x_{i+1} - x_i >= gaps[i] (PAVA)."""
    offsets = [0.0]
    for g in gaps:
        offsets.append(offsets[-1] + g)
    # substitute y_i = x_i - offset_i: then y must be non-decreasing
    blocks: list[list[float]] = []  # [weighted mean, total weight, count]
    for t, w, o in zip(targets, weights, offsets):
        blocks.append([t - o, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    ys: list[float] = []
    for m, _, c in blocks:
        ys.extend([m] * c)
    return [y + o for y, o in zip(ys, offsets)]


def layered_layout(G, size: Callable[[Hashable], tuple[float, float]], *, pinned_top: Callable | None = None,
                   hgap: float = 24.0, vgap: float = 56.0, margin: float = 16.0, sweeps: int = 12,
                   dummy_width: float = 8.0) -> Layout:
    """Lay out the DAG `G` top to bottom; `size(v)` gives a vertex's (width, height).

    `pinned_top(v)` marks sources that stay on the top layer (default: all of
    them). Parallel edges of a MultiDiGraph get their own polylines. Raises
    `ValueError` if `G` has a cycle.
    """
    import networkx as nx

    if not nx.is_directed_acyclic_graph(G):
        raise ValueError("layered_layout: the graph has a cycle")
    pinned_top = pinned_top or (lambda v: True)
    layer = _layers(G, pinned_top)
    nlayers = 1 + max(layer.values(), default=-1)

    # Split long edges into chains through dummy vertices.
    up: dict = {v: [] for v in G.nodes}
    down: dict = {v: [] for v in G.nodes}
    chains: dict[tuple, list] = {}
    seen_pairs: set = set()
    multi = G.is_multigraph()
    edge_iter = G.edges(keys=True) if multi else ((u, v, 0) for u, v in G.edges())
    for u, v, k in edge_iter:
        chain = [u]
        for step in range(layer[u] + 1, layer[v]):
            d = _Dummy((u, v, k), step)
            layer[d] = step
            up[d], down[d] = [], []
            chain.append(d)
        chain.append(v)
        chains[(u, v, k)] = chain
        for a, b in zip(chain, chain[1:]):
            if (a, b) in seen_pairs:
                continue  # parallel edges share one ordering constraint
            seen_pairs.add((a, b))
            down[a].append(b)
            up[b].append(a)

    # Initial order: real vertices in graph order, dummies next to where their edge starts.
    order: list[list] = [[] for _ in range(nlayers)]
    rank = {v: i for i, v in enumerate(G.nodes)}
    for v in sorted(layer, key=lambda v: rank[v] if not isinstance(v, _Dummy) else rank[v.edge[0]] + 0.5):
        order[layer[v]].append(v)
    order, crossings = _order(order, up, down, sweeps)

    # Coordinates.
    def width(v) -> float:
        return dummy_width if isinstance(v, _Dummy) else size(v)[0]

    def height(v) -> float:
        return 0.0 if isinstance(v, _Dummy) else size(v)[1]

    row_h = [max((height(v) for v in row), default=0.0) for row in order]
    x: dict = {}
    for row in order:  # centres, packed left to right
        cursor = 0.0
        for v in row:
            x[v] = cursor + width(v) / 2
            cursor += width(v) + hgap
    for it in range(2 * sweeps):
        downward = it % 2 == 0
        rows = range(1, nlayers) if downward else range(nlayers - 2, -1, -1)
        for i in rows:
            row = order[i]
            nbrs = up if downward else down
            targets, weights = [], []
            for v in row:
                ps = [x[n] for n in nbrs[v]]
                targets.append(sum(ps) / len(ps) if ps else x[v])
                w = 4.0 if isinstance(v, _Dummy) else 1.0
                weights.append(w if ps else 0.05)
            gaps = [(width(a) + width(b)) / 2 + hgap for a, b in zip(row, row[1:])]
            for v, xv in zip(row, _isotonic(targets, weights, gaps)):
                x[v] = xv
    lo = min((x[v] - width(v) / 2 for row in order for v in row), default=0.0)
    hi = max((x[v] + width(v) / 2 for row in order for v in row), default=0.0)
    shift = margin - lo

    y_top: list[float] = []
    cursor = margin
    for h in row_h:
        y_top.append(cursor)
        cursor += h + vgap
    total_h = cursor - vgap + margin if nlayers else 2 * margin

    boxes = {}
    for i, row in enumerate(order):
        for v in row:
            if isinstance(v, _Dummy):
                continue
            w, h = size(v)
            cy = y_top[i] + row_h[i] / 2
            boxes[v] = (x[v] + shift - w / 2, cy - h / 2, w, h)

    def mid_y(i: int) -> float:
        return y_top[i] + row_h[i] / 2

    edges: dict[tuple, list[Point]] = {}
    fan_in: dict = {}
    for (u, v, k), chain in chains.items():
        fan_in.setdefault(v, []).append((u, v, k))
    for v, keys in fan_in.items():  # ports left to right in the order the edges arrive from
        keys.sort(key=lambda e: (x[chains[e][-2]], e[2]))
    for key, chain in chains.items():
        u, v, k = key
        bu, bv = boxes[u], boxes[v]
        siblings = fan_in[v]
        j = siblings.index(key)
        # spread the ends of several incoming edges across the top of the target
        port = bv[0] + bv[2] * (j + 1) / (len(siblings) + 1)
        pts: list[Point] = [(bu[0] + bu[2] / 2, bu[1] + bu[3])]
        for d in chain[1:-1]:
            pts.append((x[d] + shift, mid_y(layer[d])))
        pts.append((port, bv[1]))
        edges[key] = pts
    return Layout(boxes, edges, [[v for v in row if not isinstance(v, _Dummy)] for row in order],
                  hi - lo + 2 * margin, total_h, crossings,
                  {v: layer[v] for v in G.nodes})
