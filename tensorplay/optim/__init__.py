"""`tensorplay.optim`: SGD, Adam and AdamW over module parameters, plus pure functional updates.

Classes update parameters in place from gradients handed to ``step``
(tensorplay has no tape; gradients come from `tensorplay.func.grad`);
`tensorplay.optim.functional` has the same rules as pure functions on dicts.

>>> import tensorplay as tp
>>> from tensorplay import optim
>>> w = tp.tensor([1.0, 2.0])
>>> opt = optim.SGD([w], lr=0.5)
>>> opt.step([tp.tensor([1.0, 1.0])])
>>> w
tensor([0.5000, 1.5000])
"""
from . import functional
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "functional"]
