"""Recurrent layers: `RNN`, `LSTM`, `GRU` and their single-step cells.

Names, parameter names and shapes, initialisation, arguments, inputs and
outputs follow PyTorch. The time loop of each layer and direction is one
`tensorplay.scan`: a traced or compiled forward holds one scan node per layer
and direction, whatever the sequence length, and vmap, grad and compile see
the loop as a loop. The input projection ``x @ W_ih^T`` of every time step is
one matrix product before the scan; only the recurrent product runs inside it.

>>> import tensorplay as tp
>>> from tensorplay import nn
>>> lstm = nn.LSTM(4, 3, num_layers=2, batch_first=True)
>>> out, (h, c) = lstm(tp.ones(2, 5, 4))
>>> out.shape, h.shape, c.shape
(tensorplay.Size(2, 5, 3), tensorplay.Size(2, 2, 3), tensorplay.Size(2, 2, 3))
"""
from __future__ import annotations

import math
import numbers
import warnings

from ..._control import scan
from ..._tensor import Tensor
from ...ops import elementwise as ew
from ...ops import linalg as _la
from ...ops import shape as _sh
from ...ops.creation import empty, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_NONLINEARITY = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}


# ----------------------------------------------------------------------------------------------
# One time step of each cell. `gx` is the input projection of this step with the biases that can be
# added outside the recurrence already in it; the recurrent product (with the transposed weight
# `w_hh_t`, transposed once outside the loop) and its bias are computed here.
# ----------------------------------------------------------------------------------------------
def _recurrent(h, w_hh_t, b_hh):
    out = _la.matmul(h, w_hh_t)
    return out if b_hh is None else ew.add(out, b_hh)


def _rnn_step(gx, h, w_hh_t, b_hh, relu: bool):
    pre = ew.add(gx, _recurrent(h, w_hh_t, b_hh))
    return F.relu(pre) if relu else ew.tanh(pre)


def _lstm_step(gx, h, c, w_hh_t, b_hh, w_hr_t):
    i, f, g, o = _sh.chunk(ew.add(gx, _recurrent(h, w_hh_t, b_hh)), 4, -1)
    c = ew.add(ew.mul(ew.sigmoid(f), c), ew.mul(ew.sigmoid(i), ew.tanh(g)))
    h = ew.mul(ew.sigmoid(o), ew.tanh(c))
    if w_hr_t is not None:
        h = _la.matmul(h, w_hr_t)
    return h, c


def _gru_step(gx, h, w_hh_t, b_hh):
    # PyTorch's GRU: the hidden bias of the candidate gate sits inside the reset product, so b_hh
    # always stays in the recurrence: n = tanh(x_n + r * (W_hn h + b_hn)).
    x_r, x_z, x_n = _sh.chunk(gx, 3, -1)
    h_r, h_z, h_n = _sh.chunk(_recurrent(h, w_hh_t, b_hh), 3, -1)
    r = ew.sigmoid(ew.add(x_r, h_r))
    z = ew.sigmoid(ew.add(x_z, h_z))
    n = ew.tanh(ew.add(x_n, ew.mul(r, h_n)))
    return ew.add(n, ew.mul(z, ew.sub(h, n)))  # (1 - z) * n + z * h


def _t(w):
    return None if w is None else _sh.transpose(w, 0, 1)


def _add_bias(a, b):
    if a is None:
        return b
    return a if b is None else ew.add(a, b)


def _check_size(name: str, value, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _uniform_init(module: Module) -> None:
    """PyTorch's init of the recurrent layers and cells: every parameter from U(-k, k), k = 1/sqrt(hidden)."""
    stdv = 1.0 / math.sqrt(module.hidden_size)
    for weight in module.parameters():
        init.uniform_(weight, -stdv, stdv)


def _check_bool(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
    return value


def _tensor_input(module: str, name: str, value) -> Tensor:
    if isinstance(value, Tensor):
        return value
    kind = type(value).__name__
    if kind == "PackedSequence" or (isinstance(value, tuple) and hasattr(value, "batch_sizes")):
        raise TypeError(f"{module}: PackedSequence input is not supported; pad the sequences to one length and "
                        f"pass a tensor (batch_first chooses the layout)")
    raise TypeError(f"{module}: {name} must be a Tensor, got {kind}")


def _check_dtype(module: str, name: str, t: Tensor, dtype) -> None:
    if t.dtype is not dtype:
        raise TypeError(f"{module}: {name} has dtype {t.dtype}, but the parameters are {dtype}; convert one "
                        f"(e.g. module.to({t.dtype}) or {name}.to({dtype}))")


# ----------------------------------------------------------------------------------------------
# Sequence layers
# ----------------------------------------------------------------------------------------------
class RNNBase(Module):
    """The common part of `RNN`, `LSTM` and `GRU`: parameters, argument checks and the layer loop.

    `mode` is ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``. Parameters are named as in
    PyTorch: ``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (and
    ``weight_hr_l{k}`` for an LSTM with ``proj_size > 0``), with a ``_reverse`` suffix for the
    backward direction, registered layer by layer and direction by direction.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode!r} (expected one of {sorted(_GATES)})")
        name = type(self).__name__
        self.mode = mode
        self.input_size = _check_size("input_size", input_size, minimum=1)
        self.hidden_size = _check_size("hidden_size", hidden_size, minimum=1)
        self.num_layers = _check_size("num_layers", num_layers, minimum=1)
        self.proj_size = _check_size("proj_size", proj_size, minimum=0)
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1:
            raise ValueError(f"dropout should be a number in range [0, 1] representing the probability of an "
                             f"element being zeroed, got {dropout!r}")
        if self.proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if self.proj_size >= self.hidden_size:
            raise ValueError(f"proj_size has to be smaller than hidden_size, got proj_size={self.proj_size} and "
                             f"hidden_size={self.hidden_size}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{name}: dropout option adds dropout after all but last recurrent layer, so non-zero "
                          f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=3)
        self.bias = _check_bool("bias", bias)
        self.batch_first = _check_bool("batch_first", batch_first)
        self.dropout = float(dropout)
        self.bidirectional = _check_bool("bidirectional", bidirectional)
        num_directions = 2 if self.bidirectional else 1
        gate_size = _GATES[mode] * self.hidden_size
        real_hidden = self.proj_size or self.hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(self.num_layers):
            layer_input = self.input_size if layer == 0 else real_hidden * num_directions
            for direction in range(num_directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = {"weight_ih": (gate_size, layer_input), "weight_hh": (gate_size, real_hidden)}
                if self.bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if self.proj_size:
                    shapes["weight_hr"] = (self.proj_size, self.hidden_size)
                names = []
                for kind, shape in shapes.items():
                    setattr(self, kind + suffix, Parameter(empty(*shape, dtype=dtype, device=device)))
                    names.append(kind + suffix)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch does."""
        _uniform_init(self)

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each (layer, direction), in PyTorch's order."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Accepted for PyTorch compatibility (cuDNN's weight packing); nothing to do here."""

    # --- the forward pass ------------------------------------------------------------------------
    def _direction_params(self, layer: int, direction: int):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        get = lambda kind: getattr(self, kind + suffix) if hasattr(self, kind + suffix) else None  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def _state_shapes(self, batch: int):
        """Shapes of h0 (and c0 for an LSTM) for a batch of `batch` sequences (3-D)."""
        layers = self.num_layers * (2 if self.bidirectional else 1)
        h_shape = (layers, batch, self.proj_size or self.hidden_size)
        return h_shape, (layers, batch, self.hidden_size)

    def _prepare(self, input, hx):
        """Check the arguments; return (input as (T, N, features), hx as a tuple of 3-D states or None
        when not given (zero states), batched)."""
        name = type(self).__name__
        input = _tensor_input(name, "input", input)
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D tensor instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")
        dtype = self.weight_ih_l0.dtype
        _check_dtype(name, "input", input, dtype)
        batched = input.ndim == 3
        if not batched:
            input = _sh.unsqueeze(input, 1)
        elif self.batch_first:
            input = _sh.transpose(input, 0, 1)
        h_shape, c_shape = self._state_shapes(input.shape[1])
        if hx is None:  # zero states, made per layer and direction (`_zero_states`): no slicing of a stack
            return input, None, batched
        if self.mode == "LSTM":
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"{name}: hx must be a tuple (h_0, c_0) of two tensors, got {type(hx).__name__}")
            states = (("h_0", hx[0], h_shape), ("c_0", hx[1], c_shape))
        else:
            states = (("hx", hx, h_shape),)
        out = []
        for label, state, shape in states:
            state = _tensor_input(name, label, state)
            want = 3 if batched else 2
            if state.ndim != want:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(f"{name}: For {kind} input, {label} should also be {want}-D but got "
                                   f"{state.ndim}-D tensor")
            if not batched:
                state = _sh.unsqueeze(state, 1)
            if tuple(state.shape) != shape:
                raise RuntimeError(f"{name}: Expected {label} of size {list(shape)}, got {list(state.shape)}")
            _check_dtype(name, label, state, dtype)
            out.append(state)
        return input, tuple(out), batched

    def _zero_states(self, batch: int, dtype) -> tuple:
        """The initial states when none is given: zeros of one layer and direction, (N, H_out) and,
        for an LSTM, (N, H)."""
        h_shape, c_shape = self._state_shapes(batch)
        states = (zeros(*h_shape[1:], dtype=dtype),)
        if self.mode == "LSTM":
            states += (zeros(*c_shape[1:], dtype=dtype),)
        return states

    def _run_direction(self, x, state, layer: int, direction: int):
        """One layer in one direction over the sequence `x` (T, N, features): a single scan.

        Returns (outputs (T, N, H_out), final state tuple)."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._direction_params(layer, direction)
        if self.mode == "GRU":
            gx, inner_bias = F.linear(x, w_ih, b_ih), b_hh
        else:
            gx, inner_bias = F.linear(x, w_ih, _add_bias(b_ih, b_hh)), None
        relu = self.mode == "RNN_RELU"
        w_hh_t, w_hr_t = _t(w_hh), _t(w_hr)

        def step(carry, g):
            if self.mode == "LSTM":
                h, c = _lstm_step(g, carry[0], carry[1], w_hh_t, inner_bias, w_hr_t)
                return (h, c), h
            if self.mode == "GRU":
                h = _gru_step(g, carry[0], w_hh_t, inner_bias)
            else:
                h = _rnn_step(g, carry[0], w_hh_t, inner_bias, relu)
            return (h,), h

        final, ys = scan(step, tuple(state), gx, reverse=bool(direction))
        return ys, final

    def forward(self, input, hx=None):
        x, states, batched = self._prepare(input, hx)
        num_directions = 2 if self.bidirectional else 1
        zero = None if states is not None else self._zero_states(x.shape[1], x.dtype)
        finals = []  # per (layer, direction): a tuple of final states
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                x = F.dropout(x, self.dropout, training=True)
            outputs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                start = zero if states is None else tuple(s[k] for s in states)
                ys, final = self._run_direction(x, start, layer, direction)
                outputs.append(ys)
                finals.append(final)
            x = outputs[0] if num_directions == 1 else _sh.cat(outputs, -1)
        output = x
        h_n = tuple(_sh.stack([f[i] for f in finals], 0) for i in range(len(finals[0])))
        if not batched:
            output = _sh.squeeze(output, 1)
            h_n = tuple(_sh.squeeze(h, 1) for h in h_n)
        elif self.batch_first:
            output = _sh.transpose(output, 0, 1)
        return output, (h_n if self.mode == "LSTM" else h_n[0])

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """An Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu), stacked and
    optionally bidirectional.

    Arguments as ``torch.nn.RNN``. ``forward(input, hx=None)`` takes ``(L, N, H_in)`` (``(N, L, H_in)``
    with batch_first) or an unbatched ``(L, H_in)`` and returns ``(output, h_n)``.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> rnn = nn.RNN(3, 5, nonlinearity="relu", bidirectional=True)
    >>> out, h = rnn(tp.ones(7, 3))
    >>> out.shape, h.shape
    (tensorplay.Size(7, 10), tensorplay.Size(2, 5))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None):
        if nonlinearity not in _NONLINEARITY:
            raise ValueError(f"Unknown nonlinearity {nonlinearity!r}. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(_NONLINEARITY[nonlinearity], input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    """A long short-term memory layer (PyTorch's gate order i, f, g, o), stacked and optionally
    bidirectional, with an optional projection of the hidden state (``proj_size``).

    Arguments as ``torch.nn.LSTM``. ``forward(input, (h_0, c_0)=None)`` returns ``(output, (h_n, c_n))``.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> lstm = nn.LSTM(3, 4, proj_size=2)
    >>> out, (h, c) = lstm(tp.ones(6, 5, 3))
    >>> out.shape, h.shape, c.shape
    (tensorplay.Size(6, 5, 2), tensorplay.Size(1, 5, 2), tensorplay.Size(1, 5, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    """A gated recurrent unit layer (PyTorch's gate order r, z, n), stacked and optionally bidirectional.

    Arguments as ``torch.nn.GRU``. ``forward(input, hx=None)`` returns ``(output, h_n)``.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> gru = nn.GRU(3, 4, num_layers=2, batch_first=True)
    >>> out, h = gru(tp.ones(5, 6, 3))
    >>> out.shape, h.shape
    (tensorplay.Size(5, 6, 4), tensorplay.Size(2, 5, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)


# ----------------------------------------------------------------------------------------------
# Cells: one time step
# ----------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """The common part of the cells: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        self.input_size = _check_size("input_size", input_size, minimum=0)
        self.hidden_size = _check_size("hidden_size", hidden_size, minimum=1)
        self.bias = bool(bias)
        gate_size = num_chunks * self.hidden_size
        self.weight_ih = Parameter(empty(gate_size, self.input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(empty(gate_size, self.hidden_size, dtype=dtype, device=device))
        if self.bias:
            self.bias_ih = Parameter(empty(gate_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(empty(gate_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch does."""
        _uniform_init(self)

    def _prepare(self, input, hx, count: int):
        """Check the arguments; return (input as (N, features), states as (N, hidden) each, batched)."""
        name = type(self).__name__
        input = _tensor_input(name, "input", input)
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input has inconsistent input_size: got {input.shape[-1]} expected "
                               f"{self.input_size}")
        dtype = self.weight_ih.dtype
        _check_dtype(name, "input", input, dtype)
        batched = input.ndim == 2
        if not batched:
            input = _sh.unsqueeze(input, 0)
        shape = (input.shape[0], self.hidden_size)
        if hx is None:
            return input, [zeros(*shape, dtype=dtype) for _ in range(count)], batched
        if count == 2 and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"{name}: hx must be a tuple (h_0, c_0) of two tensors, got {type(hx).__name__}")
        states = []
        for label, state in zip(("hx", "cx"), hx if count == 2 else (hx,)):
            state = _tensor_input(name, label, state)
            if state.ndim != input.ndim - (0 if batched else 1):
                raise RuntimeError(f"{name}: Expected {label} to be {2 if batched else 1}D, got {state.ndim}D "
                                   f"instead")
            if not batched:
                state = _sh.unsqueeze(state, 0)
            if tuple(state.shape) != shape:
                raise RuntimeError(f"{name}: Expected {label} of size {list(shape)}, got {list(state.shape)}")
            _check_dtype(name, label, state, dtype)
            states.append(state)
        return input, states, batched

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s


def _unbatch(t: Tensor, batched: bool) -> Tensor:
    return t if batched else _sh.squeeze(t, 0)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu).

    ``forward(input, hx=None)`` takes ``(N, H_in)`` or ``(H_in,)`` and returns ``h'``.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.RNNCell(3, 2)(tp.ones(4, 3)).shape
    tensorplay.Size(4, 2)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None):
        if nonlinearity not in _NONLINEARITY:
            raise ValueError(f"Unknown nonlinearity: {nonlinearity!r}. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        h = _rnn_step(F.linear(x, self.weight_ih, self.bias_ih), h, _t(self.weight_hh), self.bias_hh,
                      self.nonlinearity == "relu")
        return _unbatch(h, batched)


class LSTMCell(RNNCellBase):
    """One step of an LSTM; ``forward(input, (h, c)=None)`` returns ``(h', c')``.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> h, c = nn.LSTMCell(3, 2)(tp.ones(3))
    >>> h.shape, c.shape
    (tensorplay.Size(2), tensorplay.Size(2))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, (h, c), batched = self._prepare(input, hx, 2)
        h, c = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, _t(self.weight_hh), self.bias_hh, None)
        return _unbatch(h, batched), _unbatch(c, batched)


class GRUCell(RNNCellBase):
    """One step of a GRU; ``forward(input, hx=None)`` returns ``h'``.

    >>> import tensorplay as tp
    >>> from tensorplay import nn
    >>> nn.GRUCell(3, 2)(tp.ones(4, 3)).shape
    tensorplay.Size(4, 2)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        return _unbatch(_gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, _t(self.weight_hh), self.bias_hh),
                        batched)
