"""In-place writes to captured tensors inside control-flow functions (functionalized regions).

A branch or a loop body may write in place into a tensor it closes over (a preallocated buffer,
a running statistic, a module's state). Tracing functionalizes the write (`tensorplay._views`):
the function's graph returns the storage's final value. Control flow then threads that value
through its node like any other value:

- `cond`: a written tensor is an extra output of both branches (a branch that does not write
  it returns it unchanged);
- `scan` / `while_loop` / `fori_loop`: a written tensor is an extra carry, so every step sees the
  previous step's write (the loop's cond function reads the carry too);

and after the node its final value is stored back into the tensor: an eager copy, or an in-place
write of the enclosing trace (so the transforms and `tp.compile` see it as any other write).
Writes into a function's own arguments stay local to the region (arguments are values).

>>> import tensorplay as tp
>>> total = tp.zeros(())
>>> def body(c, x):
...     total.add_(x)          # a captured tensor, written at every step
...     return c * 2, None
>>> tp.scan(body, tp.tensor(1.0), tp.tensor([1.0, 2.0, 3.0]))[0], total
(tensor(8.), tensor(6.))
"""
from __future__ import annotations

from typing import Sequence

from tensorplay.ir import Graph, Value

from . import _views

__all__ = ["written_consts", "branch_with_writes", "loop_with_writes", "cond_reading_carried", "store_back"]


def written_consts(graph: Graph, n_args: int, n_out: int, mutated: Sequence[int]) -> list[tuple[int, Value]]:
    """``(capture index, final value)`` for each capture a traced function wrote in place.

    `graph` is the function's traced graph (inputs: arguments, then captures; outputs: the
    function's own, then one final value per entry of `mutated`, graph-input indices).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); x, c = b.add_input(TensorType((), float32)), b.add_input(TensorType((), float32))
    >>> new = b.add(c, x)
    >>> written_consts(b.build([x, new]), 1, 1, [1]) == [(0, new)]
    True
    """
    return [(idx - n_args, graph.outputs[n_out + k]) for k, idx in enumerate(mutated) if idx >= n_args]


def branch_with_writes(graph: Graph, consts: Sequence, own_consts: Sequence, own_written: Sequence[tuple[int, Value]],
                       targets: Sequence) -> Graph:
    """A branch graph (its inputs: `consts`, then the operands) that also returns the final value of
    every tensor in `targets`: the branch's own write, or the const it received, unchanged.

    `own_consts` are the branch's captures and `own_written` its writes (indices into them).

    >>> import tensorplay as tp
    >>> from tensorplay.ir import GraphBuilder
    >>> a, b_ = tp.zeros(2), tp.ones(2)
    >>> b = GraphBuilder(); ca, cb, x = (b.add_input(a._type()) for _ in range(3))
    >>> g = branch_with_writes(b.build([x]), [a, b_], [a], [(0, x)], [a, b_])
    >>> g.outputs == [x, x, cb]
    True
    """
    mine = {id(own_consts[i]): v for i, v in own_written}
    position = {id(s): k for k, s in enumerate(consts)}
    finals = [mine.get(id(t)) or graph.inputs[position[id(t)]] for t in targets]
    return Graph(graph.inputs, graph.nodes, list(graph.outputs) + finals, graph.name)


def loop_with_writes(graph: Graph, num_consts: int, num_carry: int,
                     written: Sequence[tuple[int, Value]]) -> tuple[Graph, list[int], list[int]]:
    """A loop body ``(*consts, *carry, *xs) -> (*carry, *ys)`` whose written consts are carried.

    Returns the body ``(*kept consts, *carry, *written, *xs) -> (*carry, *written, *ys)``, the
    indices of the kept consts and those of the written ones (into the body's consts).

    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> b = GraphBuilder(); k, w, c = (b.add_input(TensorType((), float32)) for _ in range(3))
    >>> g, keep, written = loop_with_writes(b.build([b.add(c, k), b.add(w, c)]), 2, 1, [(1, b.nodes[1].out)])
    >>> g.inputs == [k, c, w], keep, written
    (True, [0], [1])
    """
    w_idx = [i for i, _ in written]
    keep = [i for i in range(num_consts) if i not in set(w_idx)]
    ins, outs = graph.inputs, graph.outputs
    new_in = ([ins[i] for i in keep] + ins[num_consts:num_consts + num_carry] + [ins[i] for i in w_idx]
              + ins[num_consts + num_carry:])
    new_out = list(outs[:num_carry]) + [v for _, v in written] + list(outs[num_carry:])
    return Graph(new_in, graph.nodes, new_out, graph.name), keep, w_idx


def cond_reading_carried(graph: Graph, consts: Sequence, targets: Sequence) -> tuple[Graph, list[int]]:
    """A while loop's cond graph ``(*consts, *carry) -> pred`` for a carry extended by `targets`
    (the tensors the body writes): a const that is one of them is read from the carry instead.

    Returns the graph ``(*kept consts, *carry, *targets) -> pred`` and the kept consts' indices.

    >>> import tensorplay as tp
    >>> from tensorplay.ir import GraphBuilder
    >>> n = tp.zeros(())
    >>> b = GraphBuilder(); cn, i = b.add_input(n._type()), b.add_input(n._type())
    >>> g, keep = cond_reading_carried(b.build([b.lt(i, cn)]), [n], [n])
    >>> g.inputs == [i, cn], keep
    (True, [])
    """
    carried = {id(t): k for k, t in enumerate(targets)}
    keep = [i for i, s in enumerate(consts) if id(s) not in carried]
    extra = [Value(t._type()) for t in targets]
    for i, s in enumerate(consts):
        if id(s) in carried:
            extra[carried[id(s)]] = graph.inputs[i]
    n = len(consts)
    return Graph([graph.inputs[i] for i in keep] + graph.inputs[n:] + extra, graph.nodes, graph.outputs,
                 graph.name), keep


def store_back(targets: Sequence, values: Sequence, op: str) -> None:
    """Store the final values of the written tensors into them (eagerly, or into the owning trace).

    >>> import tensorplay as tp
    >>> t = tp.zeros(2); store_back([t], [tp.ones(2)], "example"); t
    tensor([1., 1.])
    """
    for t, v in zip(targets, values):
        if tuple(v.shape) != tuple(t.shape) or v.dtype is not t.dtype:
            raise ValueError(f"{op}: the value written into a captured tensor of type {t._type()} has type "
                             f"{v._type()}")
        _views.store(t, v, op)
