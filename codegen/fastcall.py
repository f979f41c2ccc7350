"""A compiled entry as a Python builtin with the vectorcall convention, instead of a ctypes call.

An executable's entry takes one pointer per argument: the address of each array *object* (it
reads the data pointer from the object itself). CPython's METH_FASTCALL builtins receive exactly
that, an array of object pointers, so a builtin can hand its arguments to the entry as they come:
no ctypes argument conversion (~0.06 us per argument, ~0.25 us per call: 0.5-0.7 us for the six
arguments of linearize's `jvp_fn`), no `id()` per argument on the caller's side.

One trampoline per arity is generated once per process (`trampoline`):

    PyObject *tramp(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
        if nargs != n: return NULL                 (a SystemError, never a wrong call)
        entry = *(void **)self->data               (self: a uint64 array holding the address)
        save = PyEval_SaveThread()                 (the GIL is released, as ctypes does)
        status = entry(args[0], ..., args[n-1])
        PyEval_RestoreThread(save)
        return PyLong_FromLongLong(status)

and `builtin(address, n)` binds it to one entry. The C API functions are external symbols, so the
object code goes to the disk cache like an executable's, keyed by the arity and the host, and a
later process links it with `object_loader` (a cache hit never imports llvmlite). Without
CPython's C API (another interpreter) or on a failed build, `builtin` returns None and the callers
keep ctypes. The caller's references keep the arguments alive during the call, as with ctypes; the
builtin does not keep the machine code alive (its executable does, like the ctypes pointer).
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

METH_FASTCALL = 0x0080


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


_lock = threading.Lock()
_defs: dict[int, _MethodDef] = {}  # arity -> its method definition (kept for the process: builtins point to it)
_modules: list = []                # the trampolines' machine code (kept for the process)
_failed = False


def _data_offset() -> int:
    """Byte offset of `data` in numpy's PyArrayObject (as `module.ARRAY_DATA_OFFSET`, which
    imports llvmlite.ir: a disk-cache hit must not)."""
    probe = np.zeros(1, np.uint64)
    off = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)
    if ctypes.c_void_p.from_address(id(probe) + off).value != probe.ctypes.data:
        raise RuntimeError("codegen: unexpected numpy array layout (data pointer not after PyObject_HEAD)")
    return off


def _ir(n: int, triple: str, layout: str) -> str:
    args = ", ".join(f"ptr %a{i}" for i in range(n))
    loads = "\n".join(f"  %p{i} = getelementptr ptr, ptr %args, i64 {i}\n  %a{i} = load ptr, ptr %p{i}"
                      for i in range(n))
    return f"""target triple = "{triple}"
target datalayout = "{layout}"

declare ptr @PyEval_SaveThread()
declare void @PyEval_RestoreThread(ptr)
declare ptr @PyLong_FromLongLong(i64)

define ptr @tp_fastcall_{n}(ptr %self, ptr %args, i64 %nargs) {{
entry:
  %ok = icmp eq i64 %nargs, {n}
  br i1 %ok, label %go, label %bad
bad:
  ret ptr null
go:
  %dp = getelementptr i8, ptr %self, i64 {_data_offset()}
  %data = load ptr, ptr %dp
  %fn = load ptr, ptr %data
{loads}
  %save = call ptr @PyEval_SaveThread()
  %status = call i64 %fn({args})
  call void @PyEval_RestoreThread(ptr %save)
  %r = call ptr @PyLong_FromLongLong(i64 %status)
  ret ptr %r
}}
"""


def _link(n: int) -> int:
    """The address of the arity-`n` trampoline: from the disk cache (no llvmlite), else compiled
    (and stored)."""
    from . import disk_cache, object_loader

    name = f"tp_fastcall_{n}"
    key = disk_cache.make_key(name, "fastcall trampoline 1", disk_cache.host_fingerprint()) \
        if disk_cache.enabled() else None
    cached = disk_cache.load(key) if key else None
    if cached is not None:
        try:
            code = object_loader.load(cached[0], [name], object_loader.Resolver([]), cached[1])
            _modules.append(code)
            return code.addresses[name]
        except (object_loader.Unsupported, OSError, AttributeError, KeyError):
            pass
    from . import jit

    jm = jit.compile_ir(_ir(n, *jit.host_triple_and_layout()), [name], parts=1)
    _modules.append(jm)
    if key:
        disk_cache.store(key, jm.objects, jm.llvm_ir)
    return jm.addresses[name]


def trampoline(n: int) -> _MethodDef | None:
    """The method definition of the arity-`n` trampoline (made on first use), or None.

    >>> d = trampoline(2)
    >>> d is None or (d.ml_flags == METH_FASTCALL and d is trampoline(2))
    True
    """
    global _failed
    d = _defs.get(n)
    if d is not None or _failed:
        return d
    with _lock:
        d = _defs.get(n)
        if d is None and not _failed:
            try:
                d = _MethodDef(f"tp_fastcall_{n}".encode(), _link(n), METH_FASTCALL, None)
                _defs[n] = d
            except Exception:  # (no C API here, or LLVM refused: ctypes stays)
                _failed = True
                d = None
    return d


_new = None


def builtin(address: int, n: int):
    """A builtin calling the compiled function at `address` with its `n` arguments' object
    addresses and returning its int64 status, or None (then use ctypes).

    >>> import ctypes, numpy as np
    >>> from tensorplay.ir import GraphBuilder, TensorType, float32
    >>> from tensorplay.codegen.executable import Executable
    >>> b = GraphBuilder(); x = b.add_input(TensorType((2,), float32))
    >>> exe = Executable(b.build([b.add(x, x)]))
    >>> f = builtin(exe._entry_address, 2)
    >>> x, o = np.array([1.0, 2.0], np.float32), np.empty(2, np.float32)
    >>> f is None or (f(x, o) == 0 and o.tolist() == [2.0, 4.0])
    True
    """
    global _new
    d = trampoline(n)
    if d is None:
        return None
    if _new is None:
        new = ctypes.pythonapi.PyCFunction_NewEx
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.POINTER(_MethodDef), ctypes.py_object, ctypes.py_object]
        _new = new
    holder = np.array([address], np.uint64)
    holder.flags.writeable = False
    return _new(ctypes.byref(d), holder, None)
