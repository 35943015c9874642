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
from ..._dtype import float32
from ..._ops.pointwise import relu, sigmoid, tanh
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
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
    keep = (rand(tuple(x.shape), dtype=x.dtype, device=x.device) >= p).to(x.dtype)
    return x * keep / (1 - p)


def _rnn_step(mode, gi, h, w_hh, b_hh):
    """One time step: ``gi`` is the input projection (bias included) for this step."""
    # (torch's cells add the input's projection to the hidden one's: the edges' order)
    gh = F.linear(h, w_hh, b_hh)
    if mode == "RNN_TANH":
        return tanh(gh + gi)
    if mode == "RNN_RELU":
        return relu(gh + gi)
    ir, iz, in_ = _ops.shape.unsafe_chunk(gi, 3, 1)  # (torch's cells: UnsafeSplitBackward0)
    hr, hz, hn = _ops.shape.unsafe_chunk(gh, 3, 1)
    r = sigmoid(hr + ir)
    z = sigmoid(hz + iz)
    n = tanh(in_ + hn * r)
    return (h - n) * z + n  # torch's form of (1 - z) * n + z * h (its rounding and nodes)


def _lstm_step(gi, h, c, w_hh, b_hh, w_hr=None):
    gates = F.linear(h, w_hh, b_hh) + gi
    i, f, g, o = _ops.shape.unsafe_chunk(gates, 4, 1)
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h = sigmoid(o) * tanh(c)
    return (h if w_hr is None else F.linear(h, w_hr)), c


def _apply_permutation(tensor, permutation, dim=1):
    return tensor.index_select(dim, permutation)


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
        _check_sizes(bias, batch_first, input_size, hidden_size, num_layers, proj_size)
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                in_size = input_size if layer == 0 else real_hidden * dirs
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                names = [f"weight_ih{sfx}", f"weight_hh{sfx}"]
                params = [Parameter(empty((gate, in_size), dtype=dtype, device=device)),
                          Parameter(empty((gate, real_hidden), dtype=dtype, device=device))]
                if bias:
                    names += [f"bias_ih{sfx}", f"bias_hh{sfx}"]
                    params += [Parameter(empty(gate, dtype=dtype, device=device)),
                               Parameter(empty(gate, dtype=dtype, device=device))]
                if proj_size > 0:
                    names.append(f"weight_hr{sfx}")
                    params.append(Parameter(empty((proj_size, hidden_size), dtype=dtype,
                                                  device=device)))
                for n, p in zip(names, params):
                    setattr(self, n, p)
                self._flat_weights_names += names
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self):
        """Compact the weights in memory (a cuDNN concern: nothing to do in ember)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        dirs = 2 if self.bidirectional else 1
        per = (4 if self.bias else 2) + (1 if self.proj_size > 0 else 0)
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[i * per:(i + 1) * per]]
                for i in range(self.num_layers * dirs)]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
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

    # -- checks (torch's messages) ----------------------------------------------------------
    def check_input(self, input, batch_sizes):  # noqa: A002
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.ndim != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.ndim}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def get_expected_hidden_size(self, input, batch_sizes):  # noqa: A002
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        dirs = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * dirs, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size,
                          msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes):  # noqa: A002
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    # -- forward ----------------------------------------------------------------------------
    def forward(self, input, hx=None):  # noqa: A002
        lstm = self.mode == "LSTM"
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        packed = isinstance(input, PackedSequence)
        batch_dim = 0 if self.batch_first else 1
        is_batched = True
        if packed:
            input, batch_sizes, sorted_indices, unsorted_indices = input
            n = int(batch_sizes[0])
        else:
            batch_sizes = sorted_indices = unsorted_indices = None
            if input.ndim not in (2, 3):
                tensor = "" if self.mode in ("LSTM", "GRU") else " tensor"
                raise ValueError(f"{_NAMES[self.mode]}: Expected input to be 2D or 3D, got "
                                 f"{input.ndim}D{tensor} instead")
            is_batched = input.ndim == 3
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            if hx is not None:
                hx = self._batch_hidden(hx, is_batched, lstm)
            n = input.shape[batch_dim]
        if hx is None:
            h0 = zeros((self.num_layers * dirs, n, real_hidden), dtype=input.dtype,
                       device=input.device)
            hx = (h0, zeros((self.num_layers * dirs, n, self.hidden_size),
                            dtype=input.dtype, device=input.device)) if lstm else h0
            if lstm and not packed:
                self._check_lstm_args(input, hx, batch_sizes)
        else:
            if lstm and not packed:
                self._check_lstm_args(input, hx, batch_sizes)
            hx = (tuple(self.permute_hidden(h, sorted_indices) for h in hx) if lstm
                  else self.permute_hidden(hx, sorted_indices))
        if not lstm:
            self.check_forward_args(input, hx, batch_sizes)
        x = input
        if not packed and self.batch_first:
            x = x.transpose(0, 1)
        sizes = None if batch_sizes is None else [int(b) for b in batch_sizes.tolist()]
        out, h_n, c_n = self._run(x, sizes, hx, lstm, dirs)
        hidden = (h_n, c_n) if lstm else h_n
        if packed:
            out = PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices)
            if lstm:
                return out, tuple(self.permute_hidden(h, unsorted_indices) for h in hidden)
            return out, self.permute_hidden(hidden, unsorted_indices)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not is_batched:
            out = out.squeeze(batch_dim)
            hidden = (h_n.squeeze(1), c_n.squeeze(1)) if lstm else h_n.squeeze(1)
        return out, hidden

    def _batch_hidden(self, hx, is_batched, lstm):
        """torch's dimension checks of a user's hx (and its batch dim for unbatched input)."""
        if lstm:
            d0, d1 = hx[0].ndim, hx[1].ndim
            want = 3 if is_batched else 2
            if d0 != want or d1 != want:
                kind = "batched 3-D" if is_batched else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but "
                                   f"got ({d0}-D, {d1}-D) tensors")
            return hx if is_batched else (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        if is_batched:
            if hx.ndim != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.ndim}-D tensor")
            return hx
        if hx.ndim != 2:
            raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                               f"{hx.ndim}-D tensor")
        return hx.unsqueeze(1)

    def _check_lstm_args(self, input, hidden, batch_sizes):  # noqa: A002
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        expected = self.get_expected_hidden_size(input, batch_sizes)
        self.check_hidden_size(hidden[1], expected[:2] + (self.hidden_size,),
                               "Expected hidden[1] size {}, got {}")

    def _layer_weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")

        def get(name):
            return getattr(self, name + sfx, None)
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), \
            get("weight_hr")

    def _run(self, x, sizes, hx, lstm, dirs):
        h0 = hx[0] if lstm else hx
        c0 = hx[1] if lstm else None
        return run_layers(self.mode, x, sizes, h0, c0, self._layer_weights, self.num_layers,
                          dirs, self.dropout, self.training)


def run_layers(mode, x, sizes, h0, c0, weights, num_layers, dirs, dropout, training):
    """All layers and directions of a recurrent network (the modules' forward and the
    functional ``ember.lstm`` / ``gru`` / ``rnn_tanh`` / ``rnn_relu``). ``x``: (T, N, F), or
    packed rows (sum(sizes), F) with ``sizes`` the batch size of every time step;
    ``weights(layer, direction)``: (w_ih, w_hh, b_ih, b_hh, w_hr), absent ones None;
    ``c0``: None but for an LSTM. Returns the output and the last states (c_n None)."""
    lstm = c0 is not None
    _refuse_vmap(mode, x, sizes, h0, c0, weights, num_layers, dirs)
    onednn = lstm and _runs_on_onednn(x, sizes, weights, num_layers, dirs)
    if not onednn:  # torch splits the states once (UnbindBackward0); oneDNN selects each
        h0 = _ops.shape.unbind(h0, 0)
        c0 = _ops.shape.unbind(c0, 0) if lstm else None
    h_last, c_last = [], []
    for layer in range(num_layers):
        outs = []
        if onednn and not x.is_contiguous():
            x = x.contiguous()  # (torch's oneDNN path copies a batch_first input)
        for d in range(dirs):
            k = layer * dirs + d
            if onednn:
                y, h, c = _onednn_layer(x, h0[k], c0[k], weights(layer, d), d == 1,
                                        num_layers, dirs, training)
            else:
                y, h, c = _direction(mode, x, sizes, h0[k], c0[k] if lstm else None,
                                     weights(layer, d), d == 1)
            outs.append(y)
            h_last.append(h)
            c_last.append(c)
        x = outs[0] if dirs == 1 else _ops.shape.cat(outs, x.ndim - 1)
        if layer < num_layers - 1:
            x = _dropout(x, dropout, training)
    h_n = _ops.shape.stack(h_last, 0)
    c_n = _ops.shape.stack(c_last, 0) if lstm else None
    return x, h_n, c_n


_warned_projections = []
_ATEN_NAMES = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}


def _refuse_vmap(mode, x, sizes, h0, c0, weights, num_layers, dirs):
    """torch's refusal of a recurrent network with a vmapped input, state or weight: its
    aten::lstm (gru, rnn_tanh, rnn_relu) has no batching rule and no fallback."""
    from ..._state import vmap_hook
    if vmap_hook[0] is None:
        return
    from ...func._batched_tensor import batch_level
    tensors = [x, h0, c0] + [w for layer in range(num_layers) for d in range(dirs)
                             for w in weights(layer, d)]
    if any(t is not None and batch_level(t) for t in tensors):
        overload = "input" if sizes is None else "data"
        raise RuntimeError(f"Batching rule not implemented for aten::{_ATEN_NAMES[mode]}."
                           f"{overload}. We could not generate a fallback.")


def _runs_on_onednn(x, sizes, weights, num_layers, dirs):
    """Whether torch's CPU build runs this LSTM through oneDNN: float32, not packed, on the
    CPU, not empty, oneDNN enabled, no projections (refused once with a warning)."""
    from ... import backends
    if (sizes is not None or x.dtype != float32 or x.device.type != "cpu" or x.numel() == 0
            or not backends.mkldnn.enabled):
        return False
    if any(weights(layer, d)[4] is not None for layer in range(num_layers)
           for d in range(dirs)):
        if not _warned_projections:  # torch's TORCH_WARN_ONCE: once per process
            _warned_projections.append(True)
            warnings.warn("LSTM with projections is not supported with oneDNN. Using default "
                          "implementation.", UserWarning, stacklevel=4)
        return False
    return True


def _onednn_layer(x, h, c, weights, reverse, num_layers, dirs, training):
    """One layer and direction as torch's mkldnn_rnn_layer (one MkldnnRnnLayerBackward0)."""
    w_ih, w_hh, b_ih, b_hh, _ = weights
    y, h, c, _ = _ops.rnn_layer.mkldnn_rnn_layer(
        x, w_ih, w_hh, b_ih, b_hh, h, c, reverse, [], 2, w_hh.shape[1], num_layers,
        b_ih is not None, dirs == 2, False, training)
    return y, h, c


def _direction(mode, x, sizes, h, c, weights, reverse):
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    lstm = c is not None
    gi = F.linear(x, w_ih, b_ih)  # every time step in one GEMM
    steps = x.shape[0] if sizes is None else len(sizes)
    starts = None
    if sizes is not None:
        starts = [0] * steps
        for t in range(1, steps):
            starts[t] = starts[t - 1] + sizes[t - 1]
    ys = [None] * steps
    # torch unbinds the projected steps once (UnbindBackward0)
    gis = _ops.shape.unbind(gi, 0) if sizes is None and steps else None
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        if sizes is None:
            g, b = gis[t], None
        else:
            b = sizes[t]
            g = gi[starts[t]:starts[t] + b]
            if b == h.shape[0]:
                b = None
        hb = h if b is None else h[:b]
        if lstm:
            cb = c if b is None else c[:b]
            hb, cb = _lstm_step(g, hb, cb, w_hh, b_hh, w_hr)
        else:
            hb = _rnn_step(mode, g, hb, w_hh, b_hh)
        ys[t] = hb
        # NOTE: in a packed batch the sequences that ended keep their last state.
        h = hb if b is None else _ops.shape.cat([hb, h[b:]], 0)
        if lstm:
            c = cb if b is None else _ops.shape.cat([cb, c[b:]], 0)
    real_hidden = w_hh.shape[1]
    if sizes is not None:
        y = _ops.shape.cat(ys, 0) if steps else gi[:, :real_hidden]
    else:
        y = _ops.shape.stack(ys, 0) if steps else gi[:, :, :real_hidden]
    return y, h, c


_NAMES = {"RNN_TANH": "RNN", "RNN_RELU": "RNN", "LSTM": "LSTM", "GRU": "GRU"}


def _check_sizes(bias, batch_first, input_size, hidden_size, num_layers, proj_size):
    if not isinstance(bias, bool):
        raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
    if not isinstance(batch_first, bool):
        raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
    if not isinstance(input_size, int):
        raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable "
                         "projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


class RNN(RNNBase):
    """Applies a multi-layer Elman RNN with tanh or ReLU non-linearity."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """Applies a multi-layer long short-term memory (LSTM) RNN."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Applies a multi-layer gated recurrent unit (GRU) RNN."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# -- cells --------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Base class of the single-step cells."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), dtype=dtype,
                                         device=device))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), dtype=dtype,
                                         device=device))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, dtype=dtype, device=device))
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
        for k, h in enumerate(hs):
            if h.ndim not in (1, 2):
                what = "hidden" if n_states == 1 else f"hx[{k}]"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {h.ndim}D "
                                 "instead")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
            hs = [h.unsqueeze(0) for h in hs]
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        if not hs:
            hs = [zeros((input.shape[0], self.hidden_size), dtype=input.dtype,
                        device=input.device)
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
