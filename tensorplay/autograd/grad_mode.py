"""Grad mode: whether eager ops on tensors that require grad are recorded, as torch's grad mode.

`no_grad`, `enable_grad`, `inference_mode` and `set_grad_enabled` work as context managers and
as decorators. The mode is per thread (`tensorplay._state`). Inside a transform (`grad`, `vjp`,
`jvp`, ...) a `no_grad` block entered *inside* the transformed function stops differentiation
through the values it computes (torch.func semantics); one entered outside the transform call
is ignored by it.

>>> import tensorplay as tp
>>> x = tp.ones(2, requires_grad=True)
>>> with tp.no_grad():
...     y = x * 2
>>> y.requires_grad, tp.is_grad_enabled()
(False, True)
"""
from __future__ import annotations

import functools

from .._state import STATE

__all__ = ["no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "is_grad_enabled",
           "is_inference_mode_enabled"]


def is_grad_enabled() -> bool:
    """True when eager ops on tensors that require grad are recorded for `backward`."""
    return STATE.grad_enabled


def _set(enabled: bool) -> None:
    STATE.set_grad_mode(enabled, len(STATE.stack) if not enabled and STATE.grad_enabled else STATE.grad_off_depth)


class _GradMode:
    """A context manager and decorator setting the grad mode to `self._mode` while active."""

    _mode = True

    def __enter__(self):
        self._saved = (STATE.grad_enabled, STATE.grad_off_depth)
        _set(self._mode)
        return self

    def __exit__(self, *exc):
        STATE.set_grad_mode(*self._saved)
        return False

    def _fresh(self) -> "_GradMode":
        """A new manager of the same mode (a decorated function enters one per call)."""
        return type(self)()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._fresh():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Do not record operations for autograd (results do not require grad).

    >>> import tensorplay as tp
    >>> @tp.no_grad()
    ... def double(x):
    ...     return x * 2
    >>> double(tp.ones(1, requires_grad=True)).requires_grad
    False
    """

    _mode = False


class enable_grad(_GradMode):
    """Record operations again inside a `no_grad` block.

    >>> import tensorplay as tp
    >>> x = tp.ones(1, requires_grad=True)
    >>> with tp.no_grad():
    ...     with tp.enable_grad():
    ...         y = x * 2
    >>> y.requires_grad
    True
    """

    _mode = True


class inference_mode(_GradMode):
    """Like `no_grad` (``mode=True``); ``inference_mode(False)`` changes nothing.

    >>> import tensorplay as tp
    >>> with tp.inference_mode():
    ...     y = tp.ones(1, requires_grad=True) * 2
    >>> y.requires_grad, tp.is_inference_mode_enabled()
    (False, False)
    """

    def __init__(self, mode: bool = True):
        self._on = bool(mode)

    def __enter__(self):
        self._saved = (STATE.grad_enabled, STATE.grad_off_depth)
        if self._on:
            _set(False)
        return self

    def _fresh(self) -> "inference_mode":
        return inference_mode(self._on)


def is_inference_mode_enabled() -> bool:
    """Always False: `inference_mode` is `no_grad` here (tensors are not marked as inference tensors)."""
    return False


class set_grad_enabled(_GradMode):
    """Set grad mode to `mode` (takes effect at once, as in torch, and is undone on leaving a `with`).

    >>> import tensorplay as tp
    >>> with tp.set_grad_enabled(False):
    ...     tp.is_grad_enabled()
    False
    """

    def __init__(self, mode: bool):
        self._mode = bool(mode)
        self._saved = (STATE.grad_enabled, STATE.grad_off_depth)
        _set(self._mode)

    def __enter__(self):
        return self

    def _fresh(self) -> "set_grad_enabled":
        return set_grad_enabled(self._mode)

    def __call__(self, fn):
        STATE.set_grad_mode(*self._saved)  # as a decorator: only while fn runs
        return super().__call__(fn)
