"""Autograd on tensors: `requires_grad`, `grad`, `is_leaf`, `grad_fn`, `retain_grad`, `backward`,
and the functions `tp.autograd.backward` / `tp.autograd.grad`.

>>> import tensorplay as tp
>>> x = tp.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from . import _engine, _record
from ._hooks import apply_hooks, register_hook
from ._record import RETAINED


def _get_requires_grad(self) -> bool:
    return bool(self.__dict__.get("_rg"))


def _set_requires_grad(self, flag) -> None:
    d = self.__dict__
    flag = bool(flag)
    if d.get("_ag") is not None:
        if not flag:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        return
    if flag and not self.dtype.is_floating_point:
        raise RuntimeError(f"only Tensors of floating point dtype can require gradients (got {self.dtype.name})")
    if flag and self._trace is not None:
        raise RuntimeError("requires_grad_: cannot make a tensor traced under a transform require grad "
                           "(transforms differentiate their arguments themselves)")
    if flag:
        _record.ACTIVE[0] = True
    d["_rg"] = flag


def requires_grad_(self, requires_grad: bool = True):
    """Set `requires_grad` in place and return self (leaves only, floating point only)."""
    _set_requires_grad(self, requires_grad)
    return self


def _get_grad(self):
    d = self.__dict__
    if d.get("_ag") is not None and not d.get("_retain"):
        warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                      "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
                      "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf "
                      "Tensor.", UserWarning, stacklevel=2)
    return d.get("grad")


def _set_grad(self, value) -> None:
    if value is not None:
        if not isinstance(value, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type(value).__name__}")
        if tuple(value.shape) != tuple(self.shape):
            raise RuntimeError(f"assigned grad has data of a different size: {tuple(value.shape)} vs "
                               f"{tuple(self.shape)}")
    self.__dict__["grad"] = value


def _is_leaf(self) -> bool:
    return self.__dict__.get("_ag") is None


def _grad_fn(self):
    return self.__dict__.get("_ag")


def retain_grad(self) -> None:
    """Make `backward` fill `.grad` of this non-leaf tensor too (a no-op for leaves)."""
    if not self.__dict__.get("_rg"):
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.__dict__.get("_ag") is not None:
        RETAINED[id(self)] = self
        self.__dict__["_retain"] = True


def _retains_grad(self) -> bool:
    return self.__dict__.get("_ag") is not None and bool(self.__dict__.get("_retain"))


def clear_grad(t, set_to_none: bool = True) -> None:
    """Reset ``t.grad`` (`Module.zero_grad` and `Optimizer.zero_grad`): None, or zeros in place."""
    g = t.__dict__.get("grad")
    if g is None:
        return
    if set_to_none:
        t.__dict__["grad"] = None
        return
    t.__dict__["grad"] = g.detach().zero_()


def _as_list(x) -> list:
    if x is None:
        return []
    return [x] if isinstance(x, Tensor) else list(x)


def _seeds(outputs, grad_outputs, what: str) -> list:
    """One cotangent per output: given, or ones for a single-element output (torch's implicit grad)."""
    from ..ops.creation import ones

    gos = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    if len(gos) != len(outputs):
        raise RuntimeError(f"{what}: grad_outputs has {len(gos)} entries, but there are {len(outputs)} outputs")
    seeds = []
    for i, (o, g) in enumerate(zip(outputs, gos)):
        if not isinstance(o, Tensor):
            raise TypeError(f"{what}: outputs must be tensors, got {type(o).__name__}")
        if not o.__dict__.get("_rg"):
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if o.numel() != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs (output {i} has "
                                   f"shape {tuple(o.shape)})")
            g = ones(tuple(o.shape), dtype=o.dtype)
        elif not isinstance(g, Tensor):
            from ..ops.creation import tensor

            g = tensor(g, dtype=o.dtype)
        if tuple(g.shape) != tuple(o.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(g.shape)} and output[{i}] "
                               f"has a shape of {tuple(o.shape)}.")
        seeds.append(g)
    return seeds


def _check_eager(tensors, what: str) -> None:
    for t in tensors:
        if isinstance(t, Tensor) and t._trace is not None:
            raise RuntimeError(f"{what}: called on a tensor traced under a transform; inside tensorplay.func "
                               f"transforms and tp.compile use tensorplay.func.grad/vjp instead")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
    """Accumulate into ``.grad`` of the leaves (or of `inputs`) the gradient of `tensors`.

    >>> import tensorplay as tp
    >>> w = tp.ones(3, requires_grad=True)
    >>> tp.autograd.backward((w * 3).sum())
    >>> w.grad
    tensor([3., 3., 3.])
    """
    outputs = _as_list(tensors)
    _check_eager(outputs, "backward")
    seeds = _seeds(outputs, grad_tensors, "backward")
    retain = create_graph if retain_graph is None else bool(retain_graph)
    records = _engine.tape_of(outputs)
    targets = _as_list(inputs) if inputs is not None else _engine.leaves_of(records) + _engine.retained_of(records)
    grads = _engine.compute_grads(outputs, seeds, targets, retain_graph=retain, create_graph=create_graph,
                                  records=records)
    for t, g in zip(targets, grads):
        if g is None:
            continue
        if not create_graph:
            g = g.detach()
        g = apply_hooks(t, g)
        old = t.__dict__.get("grad")
        t.__dict__["grad"] = g if old is None else old + g


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
    """Compute the gradient of this tensor w.r.t. the leaves and accumulate it into their ``.grad``.

    >>> import tensorplay as tp
    >>> x = tp.tensor(3.0, requires_grad=True)
    >>> (x ** 2).backward()
    >>> x.grad
    tensor(6.)
    """
    backward(self, None if gradient is None else [gradient], retain_graph, create_graph, inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         allow_unused: bool | None = None, is_grads_batched: bool = False, materialize_grads: bool = False):
    """The gradients of `outputs` w.r.t. each of `inputs`, as a tuple (``.grad`` is not touched).

    >>> import tensorplay as tp
    >>> x = tp.tensor([1.0, 2.0], requires_grad=True)
    >>> tp.autograd.grad((x ** 3).sum(), x)
    (tensor([ 3., 12.]),)
    """
    if is_grads_batched:
        raise NotImplementedError("autograd.grad: is_grads_batched=True is not supported; use tensorplay.func.vmap")
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    _check_eager(outs + ins, "autograd.grad")
    for i, t in enumerate(ins):
        if not isinstance(t, Tensor) or not t.__dict__.get("_rg"):
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
    seeds = _seeds(outs, grad_outputs, "autograd.grad")
    retain = create_graph if retain_graph is None else bool(retain_graph)
    grads = _engine.compute_grads(outs, seeds, ins, retain_graph=retain, create_graph=create_graph)
    allow = materialize_grads if allow_unused is None else allow_unused
    result = []
    for t, g in zip(ins, grads):
        if g is None:
            if not allow:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                from ..ops.creation import zeros_like

                g = zeros_like(t)
        elif not create_graph:
            g = g.detach()
        if g is not None:
            g = apply_hooks(t, g)
        result.append(g)
    return tuple(result)


def attach(cls=Tensor) -> None:
    """Install the autograd attributes and methods on `Tensor`."""
    cls.requires_grad = property(_get_requires_grad, _set_requires_grad)
    cls.grad = property(_get_grad, _set_grad)
    cls.is_leaf = property(_is_leaf)
    cls.grad_fn = property(_grad_fn)
    cls.retains_grad = property(_retains_grad)
    cls.requires_grad_ = requires_grad_
    cls.retain_grad = retain_grad
    cls.backward = _tensor_backward
    cls.register_hook = register_hook
