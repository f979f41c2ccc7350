"""`tensorplay.nn`: PyTorch-style modules, functional ops and initialisers.

Modules hold their parameters as `Parameter` tensors; the function
transforms see them as captured inputs, and `tensorplay.func.functional_call`
turns a module into a function of its parameters:

>>> import tensorplay as tp
>>> from tensorplay import nn
>>> from tensorplay.func import functional_call
>>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
>>> params = {k: tp.zeros_like(v) for k, v in model.named_parameters()}
>>> functional_call(model, params, (tp.ones(2, 3),)).tolist()
[[0.0], [0.0]]
"""
from . import functional, init, utils
from .parameter import Parameter
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .modules.module import Module

__all__ = ["Parameter", "functional", "init", "utils", "Module"] + [n for n in _modules_all if n != "Module"]
