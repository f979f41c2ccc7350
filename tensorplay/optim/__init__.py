"""`tensorplay.optim`: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, learning-rate schedulers, and pure updates.

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
from .rmsprop import RMSprop
from .adagrad import Adagrad
from .adaptive import Adadelta, Adamax, NAdam, RAdam
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "functional", "lr_scheduler"]
