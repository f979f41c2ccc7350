"""TEMPORARY stub: libm intrinsics (replaced by polynomial versions)."""
from __future__ import annotations

from llvmlite import ir

from . import irutil as u


def _libm(name):
    def f(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
        fname = name + ("f" if x.type == u.F32 else "")
        fn = b.module.globals.get(fname)
        if fn is None:
            fn = ir.Function(b.module, ir.FunctionType(x.type, [x.type]), fname)
        return b.call(fn, [x])
    return f


def _libm2(name):
    def f(b, x, y):
        fname = name + ("f" if x.type == u.F32 else "")
        fn = b.module.globals.get(fname)
        if fn is None:
            fn = ir.Function(b.module, ir.FunctionType(x.type, [x.type, x.type]), fname)
        return b.call(fn, [x, y])
    return f


exp = _libm("exp")
log = _libm("log")
log1p = _libm("log1p")
expm1 = _libm("expm1")
sin = _libm("sin")
cos = _libm("cos")
tan = _libm("tan")
tanh = _libm("tanh")
erf = _libm("erf")
pow = _libm2("pow")
atan2 = _libm2("atan2")


def logistic(b, x):
    half = u.const(x.type, 0.5)
    t = tanh(b, b.fmul(half, x))
    return b.fmul(half, b.fadd(u.const(x.type, 1.0), t))
