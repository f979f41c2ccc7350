"""Composable function transforms (the contract is `shared/spec/`).

Each transform traces the function into a graph, runs a graph-to-graph pass
(batching, differentiation, functionalization) and executes or inlines the
result, so transforms compose: ``vmap(grad(f))``, ``jacfwd(jacrev(f))``.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "vmap": "._vmap", "chunk_vmap": "._vmap",
    "grad": "._ad", "grad_and_value": "._ad", "vjp": "._ad", "jvp": "._ad", "linearize": "._ad",
    "jacrev": "._ad", "jacfwd": "._ad", "hessian": "._ad",
    "functionalize": "._functionalize", "rearrange": "._rearrange",
    "functional_call": "._module_utils", "stack_module_state": "._module_utils",
    "replace_all_batch_norm_modules_": "._module_utils", "batch_norm_without_running_stats": "._module_utils",
    "debug_unwrap": "._debug",
    "custom_jvp": "._custom", "custom_vjp": "._custom", "checkpoint": "._custom",
    "checkpoint_policies": "._custom",
    "FuncValueError": "._errors", "FuncTypeError": "._errors",
}

# names served on access but not functions (docs/api.md documents every function in __all__)
_NAMESPACES = ("checkpoint_policies",)
__all__ = sorted(k for k in _EXPORTS if k not in _NAMESPACES)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tensorplay.func' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__ + list(_NAMESPACES)
