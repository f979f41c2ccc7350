"""The trace state of the running thread: which traces are active, innermost last.

Every thread has its own stack, so an eager op in one thread is never captured by a
trace running in another. `tensorplay._trace` pushes and pops traces; everything else
only reads the state. This module imports nothing from tensorplay.

>>> from tensorplay._state import STATE
>>> STATE.stack
[]
"""
from __future__ import annotations

import threading


class TracingError(RuntimeError):
    """A traced value was used where a concrete one is needed (Python control flow, .item(), ...)."""


class TraceState(threading.local):
    """Per-thread trace state: the stack of active traces, outermost first."""

    def __init__(self):
        self.stack: list = []
        self.grad_enabled = True   # autograd recording on (`tensorplay.autograd.grad_mode`)
        self.grad_off_depth = 0    # len(stack) when grad was last disabled: traces below it stop gradients

    def stops_gradient(self, trace) -> bool:
        """Was `no_grad` entered inside `trace`'s transform? Then values it computes are not
        differentiated by that transform (torch.func semantics; a `no_grad` around the transform
        call is ignored)."""
        return not self.grad_enabled and self.grad_off_depth > self.stack.index(trace)

    def set_grad_mode(self, enabled: bool, off_depth: int) -> None:
        """Set `grad_enabled` and `grad_off_depth`. A trace replaying a template
        (`tensorplay._replay`) leaves it first when the mode changes: its ops check the mode once,
        when the replay starts, instead of at every op."""
        if enabled != self.grad_enabled:
            stack = self.stack
            if stack and stack[-1].made is not None:
                stack[-1].leave()
        self.grad_enabled, self.grad_off_depth = enabled, off_depth

    def top(self):
        """The innermost active trace, or None."""
        stack = self.stack
        return stack[-1] if stack else None

    def push(self, trace) -> None:
        self.stack.append(trace)

    def pop(self, trace) -> None:
        if not self.stack or self.stack[-1] is not trace:
            raise RuntimeError("tensorplay: trace stack corrupted (traces must be left in the order entered)")
        self.stack.pop()

    def transform_stack(self) -> str:
        """The active transforms, outermost first: ``vmap(in_dims=0) > grad(argnums=0)``."""
        return " > ".join(t.transform for t in self.stack)


STATE = TraceState()


def leaked_tracer(op: str, transform: str) -> TracingError:
    """The error for a tensor of a finished trace used again (the one place this text is written)."""
    where = f"{op}: " if op else ""
    return TracingError(f"{where}a tensor traced under {transform} escaped its transform and was used after it "
                        f"finished (leaked tracer); return it from the function instead")
