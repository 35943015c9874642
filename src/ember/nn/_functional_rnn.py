"""torch's functional recurrent networks: ``ember.lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``
(a whole multi-layer, possibly bidirectional network from a flat list of weights, on a padded
or a packed batch) and the single steps ``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``,
``rnn_relu_cell``. They run the same code as the nn.RNN / LSTM / GRU modules and cells.
"""
from __future__ import annotations

__all__ = ["gru", "gru_cell", "lstm", "lstm_cell", "rnn_relu", "rnn_relu_cell", "rnn_tanh",
           "rnn_tanh_cell"]

from .._tensor import Tensor
from . import functional as F
from .modules.rnn import _lstm_step, _rnn_step, run_layers

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# -- whole networks -----------------------------------------------------------------------------
def _weights(params, has_biases, has_proj, num_layers, dirs, lstm):
    """``weights(layer, direction)`` over torch's flat parameter list: per layer and direction
    w_ih, w_hh, then b_ih, b_hh with biases, then w_hr with projections."""
    per = 2 + (2 if has_biases else 0) + (1 if has_proj else 0)
    params = list(params)
    if len(params) % per:
        if lstm:  # torch's LSTM splits the list without checking it first
            raise RuntimeError(f"MatrixRef: ArrayRef size {len(params)} not divisible by "
                               f"stride {per}")
        raise RuntimeError("got an incorrect number of RNN parameters")

    def weights(layer, d):
        k = (layer * dirs + d) * per
        if k + per > len(params):
            raise RuntimeError("got an incorrect number of RNN parameters")
        w = params[k:k + per]
        b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
        return w[0], w[1], b_ih, b_hh, (w[-1] if has_proj else None)
    return weights


def _check_input(x, dims):
    if x.ndim < dims:
        n = max(x.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dims - 1})")


def _network(mode, input, batch_sizes, hx, params, has_biases, num_layers, dropout, train,  # noqa: A002
             bidirectional, batch_first):
    lstm = mode == "LSTM"
    if lstm and len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    dirs = 2 if bidirectional else 1
    h0, c0 = (hx[0], hx[1]) if lstm else (hx, None)
    if lstm:
        _check_input(h0, 3)
        _check_input(c0, 3)
    if h0.shape[0] < num_layers * dirs or (lstm and c0.shape[0] < num_layers * dirs):
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    has_proj = lstm and h0.shape[2] != c0.shape[2]
    weights = _weights(params, has_biases, has_proj, num_layers, dirs, lstm)
    sizes = None
    x = input
    if batch_sizes is not None:
        sizes = [int(b) for b in batch_sizes.tolist()]
    else:
        _check_input(x, 3)
        if batch_first:
            x = x.transpose(0, 1)
    out, h_n, c_n = run_layers(mode, x, sizes, h0, c0, weights, num_layers, dirs, dropout,
                               train)
    if batch_sizes is None and batch_first:
        out = out.transpose(0, 1)
    return (out, h_n, c_n) if lstm else (out, h_n)


_UNPACKED = ("input", "hx", "params", "has_biases", "num_layers", "dropout", "train",
             "bidirectional", "batch_first")
_PACKED = ("data", "batch_sizes", "hx", "params", "has_biases", "num_layers", "dropout", "train",
           "bidirectional")


def _is_packed(args, kwargs):
    """Whether a call is the packed overload: its second argument is batch_sizes (a tensor,
    where the other's is hx, a tensor for GRU and RNN too), so it is told by what follows."""
    if "data" in kwargs or "batch_sizes" in kwargs:
        return True
    if "input" in kwargs or "batch_first" in kwargs or len(args) < 2 or \
            not isinstance(args[1], Tensor):
        return False
    if len(args) >= 4:  # params, or the unpacked form's has_biases
        return not isinstance(args[3], bool)
    return ("params" if len(args) == 3 else "hx") in kwargs


def _bind(name, args, kwargs):
    """torch's two overloads, by position or keyword: (input, hx, params, has_biases,
    num_layers, dropout, train, bidirectional, batch_first) and the packed (data, batch_sizes,
    hx, params, has_biases, num_layers, dropout, train, bidirectional)."""
    packed = _is_packed(args, kwargs)
    names = _PACKED if packed else _UNPACKED
    values = list(args) + [kwargs.pop(n) for n in names[len(args):] if n in kwargs]
    if kwargs or len(values) != len(names) or len(args) > len(names):
        got = ", ".join([type(a).__name__ for a in args] +
                        [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:\n * (Tensor data, Tensor batch_sizes, tuple of "
                        "Tensors hx, tuple of Tensors params, bool has_biases, int num_layers, "
                        "float dropout, bool train, bool bidirectional)\n * (Tensor input, "
                        "tuple of Tensors hx, tuple of Tensors params, bool has_biases, int "
                        "num_layers, float dropout, bool train, bool bidirectional, bool "
                        "batch_first)\n")
    return packed, values


def _network_function(mode, name):
    def run(*args, **kwargs):
        packed, values = _bind(name, args, kwargs)
        if packed:
            data, batch_sizes, hx, params, *rest = values
            return _network(mode, data, batch_sizes, hx, params, *rest, False)
        input, hx, params, *rest = values  # noqa: A001
        return _network(mode, input, None, hx, params, *rest)
    run.__name__ = run.__qualname__ = name
    run.__doc__ = (f"A whole {name} network (all layers and directions) from torch's flat "
                   "parameter list: ``(input, hx, params, has_biases, num_layers, dropout, "
                   "train, bidirectional, batch_first)``, or on a packed batch ``(data, "
                   "batch_sizes, hx, params, has_biases, num_layers, dropout, train, "
                   "bidirectional)``, by position or keyword.")
    return run


lstm = _network_function("LSTM", "lstm")
gru = _network_function("GRU", "gru")
rnn_tanh = _network_function("RNN_TANH", "rnn_tanh")
rnn_relu = _network_function("RNN_RELU", "rnn_relu")


# -- single steps -------------------------------------------------------------------------------
def _check_cell(mode, input, hxs, w_ih, w_hh):  # noqa: A002
    """torch's checks of a cell's arguments, in its order: weights, input, hidden states."""
    gates = _GATES[mode]
    hidden_size = w_hh.shape[1]
    for name, w in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if w.shape[0] != gates * hidden_size:
            raise RuntimeError(f"{name} first dim must be {gates} * hidden_size = "
                               f"{gates * hidden_size}, but got {w.shape[0]}")
    _check_input(input, 2)
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]}")
    for k, h in enumerate(hxs):
        if input.shape[0] != h.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} "
                               f"batch size {h.shape[0]}")
        _check_input(h, 2)
        if h.shape[1] != hidden_size:
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, "
                               f"expected {hidden_size}")


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One LSTM step: ``(h, c)`` from ``input`` (N, F) and ``hx = (h, c)``."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell("LSTM", input, hx, w_ih, w_hh)
    return _lstm_step(F.linear(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh)


def _cell_function(mode, name, what):
    def cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
        _check_cell(mode, input, (hx,), w_ih, w_hh)
        return _rnn_step(mode, F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)
    cell.__name__ = cell.__qualname__ = name
    cell.__doc__ = f"One {what} step: the next hidden state from ``input`` (N, F) and ``hx``."
    return cell


gru_cell = _cell_function("GRU", "gru_cell", "GRU")
rnn_tanh_cell = _cell_function("RNN_TANH", "rnn_tanh_cell", "tanh RNN")
rnn_relu_cell = _cell_function("RNN_RELU", "rnn_relu_cell", "ReLU RNN")
