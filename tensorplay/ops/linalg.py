"""Matrix products over `dot_general`: matmul/@, mm, bmm, mv, dot, outer,
tensordot, einsum."""
from __future__ import annotations

import string

from .._tensor import Tensor
from . import _table
from ._common import as_tensor_operand, broadcast_shapes, broadcast_to_shape, dtype_of, ebind, shape_of
from tensorplay.ir import get_primitive as _gp

_NO_BATCH = ((), ())
_DOT = _gp("dot_general")


def _dot(a: Tensor, b: Tensor, contract, batch=_NO_BATCH) -> Tensor:
    return ebind(_DOT, a, b, contract=contract, batch=batch)


def _same_dtype(a, b, op):
    a = a if isinstance(a, Tensor) else as_tensor_operand(a)
    b = b if isinstance(b, Tensor) else as_tensor_operand(b)
    da, db = dtype_of(a), dtype_of(b)
    if da is not db:
        raise TypeError(f"{op}: expected both operands to have the same dtype, but got {da.name} "
                        f"and {db.name} (shapes {tuple(shape_of(a))} and {tuple(shape_of(b))})")
    if da.is_bool:
        raise TypeError(f"{op}: bool tensors are not supported (shapes {tuple(shape_of(a))} and "
                        f"{tuple(shape_of(b))})")
    return a, b


def matmul(input, other) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics: 1-d operands are vectors, leading dims broadcast.

    >>> import tensorplay as tp
    >>> (tp.ones(2, 3) @ tp.ones(3)).tolist()
    [3.0, 3.0]
    """
    a, b = _same_dtype(input, other, "matmul")
    sa, sb = shape_of(a), shape_of(b)
    na, nb = len(sa), len(sb)
    if na == 0 or nb == 0:
        raise ValueError(f"matmul: both arguments need at least 1 dimension, got shapes {tuple(sa)} "
                         f"and {tuple(sb)}")
    ka = sa[-1]
    kb = sb[-2] if nb > 1 else sb[0]
    if ka != kb:
        raise ValueError(f"matmul: shapes {tuple(sa)} and {tuple(sb)} cannot be multiplied ({ka} != {kb})")
    if nb <= 2:  # a's leading dims are plain free dims
        return _dot(a, b, ((na - 1,), (0,)))
    if na == 1:
        return _dot(a, b, ((0,), (nb - 2,)))  # -> (batch..., m)
    batch = broadcast_shapes(sa[:-2], sb[:-2], op="matmul")
    a = broadcast_to_shape(a, batch + tuple(sa[-2:]), "matmul")
    b = broadcast_to_shape(b, batch + tuple(sb[-2:]), "matmul")
    n = len(batch)
    return _dot(a, b, ((n + 1,), (n,)), (tuple(range(n)), tuple(range(n))))


def mm(input, mat2) -> Tensor:
    """Product of two matrices."""
    a, b = _same_dtype(input, mat2, "mm")
    if len(shape_of(a)) != 2 or len(shape_of(b)) != 2:
        raise ValueError(f"mm: expected 2-D tensors, got shapes {tuple(shape_of(a))} and {tuple(shape_of(b))}")
    return matmul(a, b)


def bmm(input, mat2) -> Tensor:
    """Batched product of (b, n, k) and (b, k, m) tensors."""
    a, b = _same_dtype(input, mat2, "bmm")
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) != 3 or len(sb) != 3 or sa[0] != sb[0] or sa[2] != sb[1]:
        raise ValueError(f"bmm: expected (b, n, k) and (b, k, m) tensors, got shapes {tuple(sa)} and {tuple(sb)}")
    return _dot(a, b, ((2,), (1,)), ((0,), (0,)))


def mv(input, vec) -> Tensor:
    """Matrix-vector product."""
    a, b = _same_dtype(input, vec, "mv")
    if len(shape_of(a)) != 2 or len(shape_of(b)) != 1:
        raise ValueError(f"mv: expected a matrix and a vector, got shapes {tuple(shape_of(a))} and "
                         f"{tuple(shape_of(b))}")
    return matmul(a, b)


def dot(input, other) -> Tensor:
    """Inner product of two 1-d tensors."""
    a, b = _same_dtype(input, other, "dot")
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) != 1 or len(sb) != 1 or sa != sb:
        raise ValueError(f"dot: expected two 1-D tensors of equal size, got shapes {tuple(sa)} and {tuple(sb)}")
    return _dot(a, b, ((0,), (0,)))


def inner(input, other) -> Tensor:
    """Sum of products over the last dims (a scalar product when either operand is 0-d)."""
    a, b = _same_dtype(input, other, "inner")
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        from .elementwise import mul

        return mul(a, b)
    if sa[-1] != sb[-1]:
        raise ValueError(f"inner: last dimensions must match, got shapes {tuple(sa)} and {tuple(sb)}")
    return _dot(a, b, ((len(sa) - 1,), (len(sb) - 1,)))


def outer(input, vec2) -> Tensor:
    """Outer product of two vectors."""
    a, b = _same_dtype(input, vec2, "outer")
    if len(shape_of(a)) != 1 or len(shape_of(b)) != 1:
        raise ValueError(f"outer: expected two 1-D tensors, got shapes {tuple(shape_of(a))} and "
                         f"{tuple(shape_of(b))}")
    return _dot(a, b, ((), ()))


ger = outer


def tensordot(a, b, dims=2) -> Tensor:
    """Contract the last `dims` dims of a with the first of b, or explicit lists of dims."""
    a, b = _same_dtype(a, b, "tensordot")
    sa, sb = shape_of(a), shape_of(b)
    from ._common import normalize_dim

    if isinstance(dims, int):
        if dims < 0 or dims > len(sa) or dims > len(sb):
            raise ValueError(f"tensordot: dims={dims} out of range for shapes {tuple(sa)} and {tuple(sb)}")
        ca, cb = tuple(range(len(sa) - dims, len(sa))), tuple(range(dims))
    else:
        if len(dims) != 2:
            raise ValueError(f"tensordot: dims must be an int or a pair of dim lists, got {dims!r}")
        ca, cb = (tuple(d) if not isinstance(d, int) else (d,) for d in dims)
        if len(ca) != len(cb):
            raise ValueError(f"tensordot: both dim lists must have the same length, got {list(ca)} and {list(cb)}")
        ca = tuple(normalize_dim(d, len(sa), "tensordot") for d in ca)
        cb = tuple(normalize_dim(d, len(sb), "tensordot") for d in cb)
    for i, j in zip(ca, cb):
        if sa[i] != sb[j]:
            raise ValueError(f"tensordot: contracted dimension {i} of shape {tuple(sa)} (size {sa[i]}) does not "
                             f"match dimension {j} of shape {tuple(sb)} (size {sb[j]})")
    return _dot(a, b, (ca, cb))


def tensordot_axes(x: Tensor, m: Tensor, d: int) -> Tensor:
    """Contract dim `d` of x with dim 0 of matrix m, leaving the result dim at position d."""
    from .shape import movedim

    return movedim(_dot(x, m, ((d,), (0,))), -1, d)


# --- einsum ---------------------------------------------------------------------------------------
def _parse_einsum(equation: str, operands):
    """Expanded subscripts per operand (ellipses replaced by spare letters, right-aligned) and the output."""
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise ValueError(f"einsum: equation {equation!r} has more than one '->'")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: equation {equation!r} names {len(terms)} operands but {len(operands)} were given")
    used = set(c for c in eq if c.isalpha())
    spare = [c for c in string.ascii_letters if c not in used]
    ell_dims = []
    for term, op in zip(terms, operands):
        nd = len(shape_of(op))
        if term.count("...") > 1 or any(not (c.isascii() and c.isalpha() or c == ".") for c in term.replace("...", "")) \
                or "." in term.replace("...", ""):
            raise ValueError(f"einsum: invalid subscripts {term!r} in {equation!r}")
        if "..." in term:
            n = nd - (len(term) - 3)
            if n < 0:
                raise ValueError(f"einsum: subscripts {term!r} have more dims than operand shape {tuple(shape_of(op))}")
            ell_dims.append(n)
        elif len(term) != nd:
            raise ValueError(f"einsum: subscripts {term!r} do not match operand of shape {tuple(shape_of(op))}")
    ell_len = max(ell_dims, default=0)
    expanded = []
    for term, op in zip(terms, operands):
        if "..." in term:
            n = len(shape_of(op)) - (len(term) - 3)
            term = term.replace("...", "".join(spare[ell_len - n:ell_len]))
        expanded.append(term)
    ell = "".join(spare[:ell_len])
    if rhs is None:
        counts = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    else:
        if rhs.count("...") > 1 or "." in rhs.replace("...", "") or \
                any(not (c.isascii() and c.isalpha()) for c in rhs.replace("...", "")):
            raise ValueError(f"einsum: invalid output subscripts {rhs!r} in {equation!r}")
        rhs = rhs.replace("...", ell)
    for c in set(rhs):
        if rhs.count(c) > 1:
            raise ValueError(f"einsum: output subscript {c!r} appears more than once in {equation!r}")
    return expanded, rhs


def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation over `dot_general` and reductions, e.g. ``einsum("bij,bjk->bik", a, b)``.

    Ellipses are right-aligned across operands; dims of size 1 broadcast against the same subscript
    elsewhere (as in PyTorch).

    >>> import tensorplay as tp
    >>> tp.einsum("ij,j->i", tp.ones(2, 3), tp.ones(3)).tolist()
    [3.0, 3.0]
    """
    from .reduction import sum as _sum
    from .shape import permute, diagonal

    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: expected at least one operand")
    ops = [as_tensor_operand(o) for o in operands]
    kinds = {dtype_of(o) for o in ops}
    if len(kinds) > 1:
        raise TypeError(f"einsum: expected operands of one dtype, got {[dtype_of(o).name for o in ops]} "
                        f"for {equation!r}")
    terms, out = _parse_einsum(equation, ops)
    sizes: dict[str, int] = {}
    for t, o in zip(terms, ops):
        for c, n in zip(t, shape_of(o)):
            m = sizes.setdefault(c, n)
            if m != n:
                if m != 1 and n != 1:
                    raise ValueError(f"einsum: subscript {c!r} has size {n} in operand of shape "
                                     f"{tuple(shape_of(o))} but {m} elsewhere in {equation!r}")
                sizes[c] = max(m, n)
    for c in out:
        if c not in sizes:
            raise ValueError(f"einsum: output subscript {c!r} does not appear in the inputs of {equation!r}")
    # broadcast size-1 dims against the other operands
    for k, (t, o) in enumerate(zip(terms, ops)):
        full = tuple(sizes[c] for c in t)
        if tuple(shape_of(o)) != full:
            ops[k] = broadcast_to_shape(o, full, "einsum")

    def needed_after(k):
        return set(out).union(*[set(t) for t in terms[k + 1:]])

    # repeated subscripts within one operand take a diagonal
    for k, (t, o) in enumerate(zip(terms, ops)):
        while len(set(t)) != len(t):
            c = next(c for c in t if t.count(c) > 1)
            i = t.index(c)
            j = t.index(c, i + 1)
            o = diagonal(o, 0, i, j)
            t = "".join(x for n, x in enumerate(t) if n not in (i, j)) + c
        ops[k], terms[k] = o, t

    acc, acc_t = ops[0], terms[0]
    for k in range(1, len(ops) + 1):
        keep = needed_after(k - 1) if k < len(ops) else set(out)
        if k < len(ops):
            keep = keep | set(terms[k])
        drop = [i for i, c in enumerate(acc_t) if c not in keep]
        if drop:
            acc = _sum(acc, tuple(drop))
            acc_t = "".join(c for i, c in enumerate(acc_t) if i not in drop)
        if k == len(ops):
            break
        b, bt = ops[k], terms[k]
        later = needed_after(k)
        drop_b = [i for i, c in enumerate(bt) if c not in later and c not in acc_t]
        if drop_b:
            b = _sum(b, tuple(drop_b))
            bt = "".join(c for i, c in enumerate(bt) if i not in drop_b)
        shared = [c for c in acc_t if c in bt]
        batch = [c for c in shared if c in later]
        contract = [c for c in shared if c not in later]
        acc = _dot(acc, b, (tuple(acc_t.index(c) for c in contract), tuple(bt.index(c) for c in contract)),
                   (tuple(acc_t.index(c) for c in batch), tuple(bt.index(c) for c in batch)))
        acc_t = "".join(batch) + "".join(c for c in acc_t if c not in shared) + \
            "".join(c for c in bt if c not in shared)
    if sorted(acc_t) != sorted(out):
        raise ValueError(f"einsum: could not form output {out!r} from {equation!r}")
    return permute(acc, [acc_t.index(c) for c in out]) if acc_t != out else acc


# === the op table: (name, Tensor method?) ===========================================================
for _name, _method in (
    ("matmul", True), ("mm", True), ("bmm", True), ("mv", True), ("dot", True), ("inner", False),
    ("outer", True), ("ger", False), ("tensordot", False), ("einsum", False),
):
    _table.op(_name, globals()[_name], method=_method)
