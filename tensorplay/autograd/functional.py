"""``torch.autograd.functional``: jacobian, hessian, vjp, jvp, hvp, vhp of a function at a point.

Each is the corresponding `tensorplay.func` transform, with torch.autograd.functional's calling
convention: `inputs` is a tensor or a tuple of tensors, `v` has the structure of the outputs
(vjp, vhp) or of the inputs (jvp, hvp) and may be omitted when that is a single element, and
the results are detached unless ``create_graph=True``. `strict`, `vectorize` and the strategy
arguments are accepted; tensorplay always vectorizes, and ``strategy="forward-mode"`` uses jacfwd.

>>> import tensorplay as tp
>>> from tensorplay.autograd.functional import jacobian, hvp
>>> jacobian(lambda x: x ** 2, tp.tensor([1.0, 2.0]))
tensor([[2., 0.],
        [0., 4.]])
>>> hvp(lambda x: (x ** 3).sum(), tp.tensor([1.0, 2.0]), tp.tensor([1.0, 0.0]))[1]
tensor([6., 0.])
"""
from __future__ import annotations

from .._tensor import Tensor

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]


def _as_tuple(x, what: str, fn: str) -> tuple[tuple, bool]:
    """(tuple of tensors, was a tuple) for an argument that is a tensor or a tuple/list of tensors."""
    is_tuple = isinstance(x, (tuple, list))
    items = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            where = f"{what}[{i}]" if is_tuple else what
            raise TypeError(f"autograd.functional.{fn}: expected {where} to be a Tensor, got {type(t).__name__}")
    return items, is_tuple


def _finish(result, create_graph: bool):
    """Detach every tensor of a (nested) tuple result unless the graph is wanted."""
    if isinstance(result, tuple):
        return tuple(_finish(r, create_graph) for r in result)
    return result if create_graph or not isinstance(result, Tensor) else result.detach()


def _default_v(like: tuple, what: str, fn: str) -> tuple:
    from ..ops.creation import ones_like

    if len(like) != 1 or like[0].numel() != 1:
        raise RuntimeError(f"autograd.functional.{fn}: the vector v can only be None if the {what} is a single "
                           f"element tensor (got shapes {[tuple(t.shape) for t in like]})")
    return (ones_like(like[0]),)


def _check_v(v, like: tuple, what: str, fn: str) -> tuple:
    vs, _ = _as_tuple(v, "v", fn)
    if len(vs) != len(like) or any(tuple(a.shape) != tuple(b.shape) for a, b in zip(vs, like)):
        raise RuntimeError(f"autograd.functional.{fn}: v has shapes {[tuple(t.shape) for t in vs]} but the {what} "
                           f"have shapes {[tuple(t.shape) for t in like]}")
    return vs


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian of `func` at `inputs`: for tuple inputs a tuple over them, for tuple outputs a
    tuple over those (of tuples, when both are tuples), as torch.autograd.functional.jacobian.

    >>> import tensorplay as tp
    >>> dx, dy = jacobian(lambda x, y: x * y, (tp.tensor([1.0, 2.0]), tp.tensor([3.0, 4.0])))
    >>> dx.diagonal().tolist(), dy.diagonal().tolist()
    ([3.0, 4.0], [1.0, 2.0])
    """
    from ..func import jacfwd, jacrev

    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"autograd.functional.jacobian: expected strategy to be 'forward-mode' or 'reverse-mode', "
                         f"got {strategy!r}")
    xs, is_tuple = _as_tuple(inputs, "inputs", "jacobian")
    transform = jacrev if strategy == "reverse-mode" else jacfwd
    argnums = tuple(range(len(xs))) if is_tuple else 0
    return _finish(transform(func, argnums=argnums)(*xs), create_graph)


def hessian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar `func` at `inputs` (for tuple inputs: a tuple of tuples of blocks).

    >>> import tensorplay as tp
    >>> hessian(lambda x: (x ** 3).sum(), tp.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    from ..func import jacfwd, jacrev

    xs, is_tuple = _as_tuple(inputs, "inputs", "hessian")
    argnums = tuple(range(len(xs))) if is_tuple else 0
    outer = jacfwd if outer_jacobian_strategy == "forward-mode" else jacrev
    return _finish(outer(jacrev(func, argnums=argnums), argnums=argnums)(*xs), create_graph)


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product, shaped as `inputs`.

    >>> import tensorplay as tp
    >>> out, g = vjp(lambda x: x.sum(), tp.tensor([1.0, 2.0]))
    >>> out.item(), g.tolist()
    (3.0, [1.0, 1.0])
    """
    from ..func import vjp as func_vjp

    xs, is_tuple = _as_tuple(inputs, "inputs", "vjp")
    out, pullback = func_vjp(func, *xs)
    outs, out_tuple = _as_tuple(out, "the output of func", "vjp")
    vs = _default_v(outs, "output of func", "vjp") if v is None else _check_v(v, outs, "outputs", "vjp")
    grads = pullback(tuple(vs) if out_tuple else vs[0])
    return _finish(out, create_graph), _finish(tuple(grads) if is_tuple else grads[0], create_graph)


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: the Jacobian-vector product, shaped as the output.

    >>> import tensorplay as tp
    >>> jvp(lambda x: x * x, tp.tensor([1.0, 2.0]), tp.tensor([1.0, 1.0]))[1].tolist()
    [2.0, 4.0]
    """
    from ..func import jvp as func_jvp

    xs, _ = _as_tuple(inputs, "inputs", "jvp")
    vs = _default_v(xs, "input", "jvp") if v is None else _check_v(v, xs, "inputs", "jvp")
    out, tangent = func_jvp(func, xs, vs)
    return _finish(out, create_graph), _finish(tangent, create_graph)


def _hvp(func, inputs, v, create_graph: bool, fn: str):
    from ..func import grad, jvp as func_jvp

    xs, is_tuple = _as_tuple(inputs, "inputs", fn)
    vs = _default_v(xs, "input", fn) if v is None else _check_v(v, xs, "inputs", fn)
    argnums = tuple(range(len(xs)))

    def scalar(*a):
        out = func(*a)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(f"autograd.functional.{fn}: the function given to {fn} should return a single "
                               f"element Tensor")
        return out.reshape(())

    value = scalar(*xs)
    _, prod = func_jvp(grad(scalar, argnums=argnums), xs, vs)
    return _finish(value, create_graph), _finish(tuple(prod) if is_tuple else prod[0], create_graph)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)`` for a scalar `func`: the Hessian-vector product (forward over reverse).

    >>> import tensorplay as tp
    >>> hvp(lambda x: (x ** 2).sum() * 0.5, tp.tensor([3.0]), tp.tensor([2.0]))[1].tolist()
    [2.0]
    """
    return _hvp(func, inputs, v, create_graph, "hvp")


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)`` for a scalar `func`; equal to `hvp`, the Hessian being symmetric.

    >>> import tensorplay as tp
    >>> vhp(lambda x: (x[0] * x[1]), tp.tensor([1.0, 2.0]), tp.tensor([1.0, 0.0]))[1].tolist()
    [0.0, 1.0]
    """
    return _hvp(func, inputs, v, create_graph, "vhp")
