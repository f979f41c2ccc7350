"""Statistics over observations: `cov`, a composite over reductions and matmul (every transform applies)."""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from . import elementwise as ew
from . import linalg as _la
from . import reduction as _red
from . import shape as _sh
from ._common import as_tensor_operand, convert, get_default_dtype
from ._table import op


def cov(input, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """The covariance matrix of the variables in the rows of `input` (observations in the columns), as torch.

    `correction` is subtracted from the number of observations (1: the unbiased estimate);
    `fweights` are integer repeat counts and `aweights` real importance weights of the
    observations. A 1-d input is one variable, and the result is 0-d.

    >>> import tensorplay as tp
    >>> tp.cov(tp.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    >>> tp.cov(tp.tensor([1.0, 2.0, 4.0]), correction=0)
    tensor(1.5556)
    """
    x = as_tensor_operand(input)
    if x.ndim > 2:
        raise ValueError(f"cov: expected input to have two or fewer dimensions but got an input with {x.ndim} "
                         f"dimensions")
    if not x.dtype.is_floating_point:
        x = convert(x, get_default_dtype())
    obs = _sh.reshape(x, (1, -1)) if x.ndim < 2 else x
    num_obs = obs.shape[1]
    w = None
    if fweights is not None:
        fw = as_tensor_operand(fweights)
        if fw.ndim > 1 or fw.numel() != num_obs or fw.dtype.is_floating_point or fw.dtype.is_bool:
            raise ValueError(f"cov: expected fweights to be a 1-d integer tensor with {num_obs} elements, got "
                             f"{fw.dtype.name} of shape {tuple(fw.shape)}")
        if not fw.is_traced and bool((fw < 0).any()):
            raise ValueError("cov: fweights cannot be negative")
        w = convert(fw, obs.dtype)
    aw = None
    if aweights is not None:
        aw = as_tensor_operand(aweights)
        if aw.ndim > 1 or aw.numel() != num_obs or not aw.dtype.is_floating_point:
            raise ValueError(f"cov: expected aweights to be a 1-d floating point tensor with {num_obs} elements, "
                             f"got {aw.dtype.name} of shape {tuple(aw.shape)}")
        if not aw.is_traced and bool((aw < 0).any()):
            raise ValueError("cov: aweights cannot be negative")
        aw = convert(aw, obs.dtype)
        w = aw if w is None else ew.mul(w, aw)
    if w is None:
        avg = _red.mean(obs, 1)
        w_sum = float(num_obs)
        norm = float(num_obs - correction)
        if norm <= 0:
            warnings.warn("cov: degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
            norm = 0.0
    else:
        w_sum = _red.sum(w)
        avg = ew.div(_red.sum(ew.mul(obs, w), 1), w_sum)
        if correction == 0:
            norm = w_sum
        elif aw is not None:
            norm = ew.sub(w_sum, ew.div(ew.mul(_red.sum(ew.mul(w, aw)), float(correction)), w_sum))
        else:
            norm = ew.sub(w_sum, float(correction))
        norm = ew.maximum(norm, 0.0)
    centered = ew.sub(obs, _sh.unsqueeze(avg, 1))
    right = centered if w is None else ew.mul(centered, w)
    c = ew.div(_la.matmul(centered, _sh.transpose(right, 0, 1)), norm)
    return _sh.squeeze(c)


op("cov", cov)  # the op table: tp.cov and Tensor.cov (tensorplay/ops/_table.py)
