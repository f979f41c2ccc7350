"""The `constant` lowering: a splat is a register constant; other elements live in a private
read-only global of the module, read at the output index."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from tensorplay.ir.core import Node
from .. import irutil as u
from ..context import Index, KernelContext
from ..registry import always, lowering
from .layout import fill_constant


def _global(module: ir.Module, node: Node) -> ir.GlobalVariable:
    """The module's global holding the constant's elements (one per distinct content)."""
    c = node.attrs["value"]
    name = f"tp_const_{c.resource_name}"
    if name in module.globals:
        return module.globals[name]
    t = u.mem_type(c.type.dtype)
    flat = c.array.reshape(-1)
    if c.type.dtype.is_bool:
        elements = [int(x) for x in flat]
    elif t is u.I16:  # a 16-bit float: its bit patterns
        elements = [int(x) for x in flat.view(np.uint16)]
    elif c.type.dtype.is_floating_point:
        elements = [float(x) for x in flat]
    else:
        elements = [int(x) for x in flat]
    array_type = ir.ArrayType(t, len(elements))
    g = ir.GlobalVariable(module, array_type, name)
    g.initializer = ir.Constant(array_type, [ir.Constant(t, x) for x in elements])
    g.global_constant = True
    g.linkage = "private"
    g.align = 64
    return g


@lowering("constant", linear=always)
def _constant(ctx: KernelContext, node: Node, idx: Index) -> ir.Value:
    c = node.attrs["value"]
    if c.array.size == 0:
        return fill_constant(c.type.dtype, False if c.type.dtype.is_bool else 0)
    if c.is_splat:
        return fill_constant(c.type.dtype, c.array.reshape(-1)[0].item())
    b = ctx.b
    g = _global(b.module, node)
    t = u.mem_type(c.type.dtype)
    ptr = b.gep(g, [u.i64(0), idx.linear(b)], inbounds=True, source_etype=g.value_type)
    x = b.load(ptr, typ=t)
    if t is u.I16:
        return u.widen(b, x, c.type.dtype)
    return b.trunc(x, u.I1) if c.type.dtype.is_bool else x
