"""Recurrent layers: RNN, LSTM, GRU and their single-step cells, with torch's layouts.

The input projections of a whole sequence are one GEMM per layer and direction; only the
hidden-to-hidden product runs once per time step.
"""
from __future__ import annotations

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

import math
import numbers
import warnings

from ... import _ops
from ..._creation import empty, zeros
from ..._ops.pointwise import relu, sigmoid, tanh
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _dropout(x, p, training):
    """Dropout between layers (ember.nn.functional.dropout when present)."""
    if not training or p == 0:
        return x
    fn = getattr(F, "dropout", None)
    if fn is not None:
        return fn(x, p, True)
    from ..._creation import rand
    keep = (rand(tuple(x.shape), dtype=x.dtype) >= p).to(x.dtype)
    return x * keep / (1 - p)


def _rnn_step(mode, gi, h, w_hh, b_hh):
    """One time step: ``gi`` is the input projection (bias included) for this step."""
    gh = F.linear(h, w_hh, b_hh)
    if mode == "RNN_TANH":
        return tanh(gi + gh)
    if mode == "RNN_RELU":
        return relu(gi + gh)
    ir, iz, in_ = _ops.shape.chunk(gi, 3, 1)
    hr, hz, hn = _ops.shape.chunk(gh, 3, 1)
    r = sigmoid(ir + hr)
    z = sigmoid(iz + hz)
    n = tanh(in_ + r * hn)
    return (1 - z) * n + z * h


def _lstm_step(gi, h, c, w_hh, b_hh):
    gates = gi + F.linear(h, w_hh, b_hh)
    i, f, g, o = _ops.shape.chunk(gates, 4, 1)
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    return sigmoid(o) * tanh(c), c


class RNNBase(Module):
    """Base class of RNN, LSTM and GRU: parameters named as torch names them."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", UserWarning,
                          stacklevel=3)
        if proj_size != 0:
            raise NotImplementedError("proj_size is not supported by ember's LSTM")
        gate = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                in_size = input_size if layer == 0 else hidden_size * dirs
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                names = [f"weight_ih{sfx}", f"weight_hh{sfx}"]
                params = [Parameter(empty((gate, in_size), dtype=dtype)),
                          Parameter(empty((gate, hidden_size), dtype=dtype))]
                if bias:
                    names += [f"bias_ih{sfx}", f"bias_hh{sfx}"]
                    params += [Parameter(empty(gate, dtype=dtype)),
                               Parameter(empty(gate, dtype=dtype))]
                for n, p in zip(names, params):
                    setattr(self, n, p)
                self._flat_weights_names += names
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    @property
    def all_weights(self):
        dirs = 2 if self.bidirectional else 1
        per = 4 if self.bias else 2
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[i * per:(i + 1) * per]]
                for i in range(self.num_layers * dirs)]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward ----------------------------------------------------------------------------
    def _layer_weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
        get = lambda n: getattr(self, n + sfx) if self.bias or "weight" in n else None  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _check(self, input, hx):  # noqa: A002
        name = type(self).__name__
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D tensor "
                             "instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def _check_hidden(self, h, expected, what="hidden"):
        if tuple(h.shape) != expected:
            raise RuntimeError(f"Expected {what} size {expected}, got {list(h.shape)}")

    def forward(self, input, hx=None):  # noqa: A002
        self._check(input, hx)
        lstm = self.mode == "LSTM"
        unbatched = input.ndim == 2
        dirs = 2 if self.bidirectional else 1
        if unbatched:
            input = input.unsqueeze(1)
            if hx is not None:
                hs = hx if lstm else (hx,)
                for h in hs:
                    if h.ndim != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D "
                                           f"but got {h.ndim}-D tensor")
                hx = tuple(h.unsqueeze(1) for h in hx) if lstm else hx.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        n = input.shape[1]
        shape = (self.num_layers * dirs, n, self.hidden_size)
        if hx is None:
            h0 = zeros(shape, dtype=input.dtype)
            hx = (h0, zeros(shape, dtype=input.dtype)) if lstm else h0
        elif lstm:
            for k, h in enumerate(hx):
                self._check_hidden(h, shape, f"hidden[{k}]")
        else:
            self._check_hidden(hx, shape)
        out, h_n, c_n = self._run(input, hx, lstm, dirs)
        if unbatched:
            out, h_n = out.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if lstm else None
        elif self.batch_first:
            out = out.transpose(0, 1)
        return (out, (h_n, c_n)) if lstm else (out, h_n)

    def _run(self, x, hx, lstm, dirs):
        h0 = hx[0] if lstm else hx
        c0 = hx[1] if lstm else None
        steps = x.shape[0]
        h_last, c_last = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh = self._layer_weights(layer, d)
                k = layer * dirs + d
                h = h0[k]
                c = c0[k] if lstm else None
                gi = F.linear(x, w_ih, b_ih)  # every time step in one GEMM
                order = range(steps - 1, -1, -1) if d == 1 else range(steps)
                ys = [None] * steps
                for t in order:
                    if lstm:
                        h, c = _lstm_step(gi[t], h, c, w_hh, b_hh)
                    else:
                        h = _rnn_step(self.mode, gi[t], h, w_hh, b_hh)
                    ys[t] = h
                outs.append(_ops.shape.stack(ys, 0) if steps else gi[:, :, :self.hidden_size])
                h_last.append(h)
                c_last.append(c)
            x = outs[0] if dirs == 1 else _ops.shape.cat(outs, 2)
            if layer < self.num_layers - 1:
                x = _dropout(x, self.dropout, self.training)
        h_n = _ops.shape.stack(h_last, 0)
        c_n = _ops.shape.stack(c_last, 0) if lstm else None
        return x, h_n, c_n


class RNN(RNNBase):
    """Applies a multi-layer Elman RNN with tanh or ReLU non-linearity."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Applies a multi-layer long short-term memory (LSTM) RNN."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """Applies a multi-layer gated recurrent unit (GRU) RNN."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)


# -- cells --------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Base class of the single-step cells."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def _prepare(self, input, hx, n_states):  # noqa: A002
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D "
                             "instead")
        hs = [hx] if n_states == 1 and hx is not None else list(hx or ())
        for h in hs:
            if h.ndim not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.ndim}D "
                                 "instead")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
            hs = [h.unsqueeze(0) for h in hs]
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        if not hs:
            hs = [zeros((input.shape[0], self.hidden_size), dtype=input.dtype)
                  for _ in range(n_states)]
        for k, h in enumerate(hs):
            if h.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} "
                                   f"batch size {h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, "
                                   f"expected {self.hidden_size}")
        return input, hs, batched


class RNNCell(RNNCellBase):
    """An Elman RNN cell with tanh or ReLU non-linearity."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):  # noqa: A002
        x, (h,), batched = self._prepare(input, hx, 1)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h = _rnn_step(mode, F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                      self.bias_hh)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """A long short-term memory (LSTM) cell."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        x, (h, c), batched = self._prepare(input, hx, 2)
        h, c = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                          self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """A gated recurrent unit (GRU) cell."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        x, (h,), batched = self._prepare(input, hx, 1)
        h = _rnn_step("GRU", F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                      self.bias_hh)
        return h if batched else h.squeeze(0)
