"""Matrix products over `dot_general`: matmul/@, mm, bmm, mv, dot, outer,
tensordot, einsum."""
from __future__ import annotations

import string

from .._tensor import Tensor
from .._trace import bind
from ._common import as_tensor_operand, broadcast_shapes, broadcast_to_shape, convert, result_type

_NO_BATCH = ((), ())


def _dot(a: Tensor, b: Tensor, contract, batch=_NO_BATCH) -> Tensor:
    return bind("dot_general", a, b, contract=contract, batch=batch)


def _same_dtype(a, b, op):
    a, b = as_tensor_operand(a), as_tensor_operand(b)
    if a.dtype.is_bool or b.dtype.is_bool:
        raise TypeError(f"{op}: bool tensors are not supported")
    if a.dtype is not b.dtype:
        raise TypeError(f"{op}: expected both operands to have the same dtype, but got {a.dtype.name} "
                        f"and {b.dtype.name}")
    return a, b


def matmul(input, other) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics: 1-d operands are vectors, leading dims broadcast.

    >>> import tensorplay as tp
    >>> (tp.ones(2, 3) @ tp.ones(3)).tolist()
    [3.0, 3.0]
    """
    a, b = _same_dtype(input, other, "matmul")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: both arguments need at least 1 dimension, got shapes {tuple(a.shape)} "
                         f"and {tuple(b.shape)}")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
                         f"({ka} != {kb})")
    if b.ndim <= 2:  # a's leading dims are plain free dims
        return _dot(a, b, ((a.ndim - 1,), (0,)))
    if a.ndim == 1:
        out = _dot(a, b, ((0,), (b.ndim - 2,)))  # -> (batch..., m)
        return out
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], op="matmul")
    a = broadcast_to_shape(a, batch + tuple(a.shape[-2:]), "matmul")
    b = broadcast_to_shape(b, batch + tuple(b.shape[-2:]), "matmul")
    nb = len(batch)
    return _dot(a, b, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))


def mm(input, mat2) -> Tensor:
    """Product of two matrices."""
    a, b = _same_dtype(input, mat2, "mm")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"mm: expected 2-D tensors, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    return matmul(a, b)


def bmm(input, mat2) -> Tensor:
    """Batched product of (b, n, k) and (b, k, m) tensors."""
    a, b = _same_dtype(input, mat2, "bmm")
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ValueError(f"bmm: expected (b, n, k) and (b, k, m) tensors, got shapes {tuple(a.shape)} "
                         f"and {tuple(b.shape)}")
    return _dot(a, b, ((2,), (1,)), ((0,), (0,)))


def mv(input, vec) -> Tensor:
    """Matrix-vector product."""
    a, b = _same_dtype(input, vec, "mv")
    if a.ndim != 2 or b.ndim != 1:
        raise ValueError(f"mv: expected a matrix and a vector, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    return matmul(a, b)


def dot(input, other) -> Tensor:
    """Inner product of two 1-d tensors."""
    a, b = _same_dtype(input, other, "dot")
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"dot: expected two 1-D tensors of equal size, got shapes {tuple(a.shape)} "
                         f"and {tuple(b.shape)}")
    return _dot(a, b, ((0,), (0,)))


inner = dot


def outer(input, vec2) -> Tensor:
    """Outer product of two vectors."""
    a, b = _same_dtype(input, vec2, "outer")
    return _dot(a, b, ((), ()))


ger = outer


def tensordot(a, b, dims=2) -> Tensor:
    """Contract the last `dims` dims of a with the first of b, or explicit lists of dims."""
    a, b = _same_dtype(a, b, "tensordot")
    if isinstance(dims, int):
        ca, cb = tuple(range(a.ndim - dims, a.ndim)), tuple(range(dims))
    else:
        ca, cb = (tuple(d) if not isinstance(d, int) else (d,) for d in dims)
        ca = tuple(d % a.ndim for d in ca)
        cb = tuple(d % b.ndim for d in cb)
    return _dot(a, b, (ca, cb))


def tensordot_axes(x: Tensor, m: Tensor, d: int) -> Tensor:
    """Contract dim `d` of x with dim 0 of matrix m, leaving the result dim at position d."""
    from .shape import movedim

    return movedim(_dot(x, m, ((d,), (0,))), -1, d)


# --- einsum ---------------------------------------------------------------------------------------
def _parse_einsum(equation: str, operands):
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: equation {equation!r} names {len(terms)} operands but {len(operands)} were given")
    used = set(c for c in eq if c.isalpha())
    spare = [c for c in string.ascii_letters if c not in used]
    ell_len = 0
    expanded = []
    for term, op in zip(terms, operands):
        if term.count("...") > 1 or any(not (c.isalpha() or c == ".") for c in term):
            raise ValueError(f"einsum: invalid subscripts {term!r} in {equation!r}")
        if "..." in term:
            n = op.ndim - (len(term) - 3)
            if n < 0:
                raise ValueError(f"einsum: subscripts {term!r} have more dims than operand shape {tuple(op.shape)}")
            ell_len = max(ell_len, n)
            term = term.replace("...", "".join(spare[ell_len - n:ell_len]) if n else "")
        if len(term) != op.ndim:
            raise ValueError(f"einsum: subscripts {term!r} do not match operand of shape {tuple(op.shape)}")
        expanded.append(term)
    ell = "".join(spare[:ell_len])
    if rhs is None:
        counts = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    return expanded, rhs


def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation over `dot_general` and reductions, e.g. ``einsum("bij,bjk->bik", a, b)``.

    >>> import tensorplay as tp
    >>> tp.einsum("ij,j->i", tp.ones(2, 3), tp.ones(3)).tolist()
    [3.0, 3.0]
    """
    from .reduction import sum as _sum
    from .shape import permute, diagonal

    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ops = [as_tensor_operand(o) for o in operands]
    dtype = result_type(*ops)
    ops = [convert(o, dtype) for o in ops]
    terms, out = _parse_einsum(equation, ops)
    sizes: dict[str, int] = {}
    for t, o in zip(terms, ops):
        for c, n in zip(t, o.shape):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"einsum: subscript {c!r} has size {n} in operand of shape {tuple(o.shape)} "
                                 f"but {sizes[c]} elsewhere in {equation!r}")
    for c in out:
        if c not in sizes:
            raise ValueError(f"einsum: output subscript {c!r} does not appear in the inputs of {equation!r}")

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
