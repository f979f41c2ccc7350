"""More activation modules: GLU, Hardsigmoid, Hardswish, Mish, SELU, CELU, Softsign, Tanhshrink,
Hardshrink, Softshrink, Threshold, Softmin, PReLU (learned slopes)."""
from __future__ import annotations

from ...ops.creation import full
from .. import functional as F
from ..parameter import Parameter
from .module import Module


def _simple(name: str, fn, doc: str, inplace: bool = False):
    def __init__(self, inplace: bool = False):
        Module.__init__(self)
        self.inplace = inplace

    def forward(self, input):
        return fn(input, inplace=self.inplace) if inplace else fn(input)

    attrs = {"__doc__": doc, "forward": forward, "__module__": __name__}
    if inplace:
        attrs["__init__"] = __init__
    return type(name, (Module,), attrs)


Hardsigmoid = _simple("Hardsigmoid", F.hardsigmoid, "``relu6(x + 3) / 6`` (`F.hardsigmoid`).", True)
Hardswish = _simple("Hardswish", F.hardswish, "``x * relu6(x + 3) / 6`` (`F.hardswish`).", True)
Mish = _simple("Mish", F.mish, "``x * tanh(softplus(x))`` (`F.mish`).", True)
SELU = _simple("SELU", F.selu, """Scaled ELU (`F.selu`).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.SELU()(tp.tensor([0.0])).tolist()
    [0.0]
    """, True)
Softsign = _simple("Softsign", F.softsign, "``x / (1 + |x|)`` (`F.softsign`).")
Tanhshrink = _simple("Tanhshrink", F.tanhshrink, "``x - tanh(x)`` (`F.tanhshrink`).")


class GLU(Module):
    """The gated linear unit over `dim` (`F.glu`).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.GLU()(tp.ones(2, 4)).shape
    tensorplay.Size(2, 2)
    """

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (`F.celu`)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class Hardshrink(Module):
    """x where ``|x| > lambd``, else 0 (`F.hardshrink`)."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class Softshrink(Hardshrink):
    """x moved toward 0 by `lambd` (`F.softshrink`)."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class Threshold(Module):
    """x where ``x > threshold``, else `value` (`F.threshold`).

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.Threshold(0.5, 0.0)(tp.tensor([0.25, 1.0])).tolist()
    [0.0, 1.0]
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)


class Softmin(Module):
    """``softmax(-x)`` along `dim` (`F.softmin`)."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim)


class PReLU(Module):
    """x where positive, else ``a * x`` with a learned slope `a` (one, or one per channel), initialised to `init`.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.PReLU()(tp.tensor([-4.0, 4.0])).tolist()
    [-1.0, 4.0]
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(full((num_parameters,), init, dtype=dtype, device=device))

    def reset_parameters(self) -> None:
        self.weight.data.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
