"""A compiled entry as a Python builtin with the vectorcall convention, instead of a ctypes call.

An executable's entry takes one pointer per argument: the address of each array *object* (it
reads the data pointer from the object itself). CPython's METH_FASTCALL builtins receive exactly
that, an array of object pointers, so each unranged module also defines a trampoline
(`module._emit_fastcall`)::

    PyObject *tp_<name>_fastcall(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
        if nargs != n: return NULL                 (a SystemError, never a wrong call)
        save = PyEval_SaveThread()                 (the GIL is released, as ctypes does)
        status = tp_<name>_entry(args[0], ..., args[n-1])
        PyEval_RestoreThread(save)
        return PyLong_FromLongLong(status)

and `builtin(address)` makes it a builtin function: no ctypes argument conversion (~0.06 us per
argument, ~0.25 us per call: 0.5-0.7 us for the six arguments of linearize's `jvp_fn`), no `id()`
per argument on the caller's side. It is compiled with the module (the C API functions are the
process's symbols), so it is in the disk cache with it and a hit links it with `object_loader`.
Without CPython's C API (another interpreter) `builtin` returns None and the callers keep ctypes.
The caller's references keep the arguments alive during the call, as with ctypes; the builtin
does not keep the machine code alive (its executable does, like the ctypes function pointer).
"""
from __future__ import annotations

import ctypes

METH_FASTCALL = 0x0080


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


class _Holder:
    """The builtin's `self`: it keeps the method definition the builtin points to alive."""

    __slots__ = ("definition",)

    def __init__(self, definition: _MethodDef):
        self.definition = definition


def _new_function():
    try:
        new = ctypes.pythonapi.PyCFunction_NewEx
    except (AttributeError, OSError):  # (not CPython)
        return None
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.POINTER(_MethodDef), ctypes.py_object, ctypes.py_object]
    return new


_NEW = _new_function()


def builtin(address: int):
    """A builtin calling the METH_FASTCALL trampoline at `address` (with the arrays as arguments;
    it returns the entry's int status), or None where builtins cannot be made (then use ctypes).

    >>> import numpy as np
    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> from tensorplay.codegen.executable import Executable
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32))
    >>> exe = Executable(b.build([b.add(x, x)]))
    >>> f = exe._object_entry  # (this builtin, made from the module's trampoline)
    >>> x, o = np.array([1.0, 2.0], np.float32), np.empty(2, np.float32)
    >>> f is None or (f(x, o) == 0 and o.tolist() == [2.0, 4.0])
    True
    """
    if _NEW is None or not address:
        return None
    d = _MethodDef(b"tp_fastcall", address, METH_FASTCALL, None)
    return _NEW(ctypes.byref(d), _Holder(d), None)
