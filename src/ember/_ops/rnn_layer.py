"""One LSTM layer in one direction as a single op: torch's ``mkldnn_rnn_layer``.

torch's CPU build runs a float32 LSTM (no projections, not packed) through oneDNN, one
``mkldnn_rnn_layer`` call per layer and direction, so its outputs hang off
``MkldnnRnnLayerBackward0`` nodes whose inputs are the layer's input, its four weights and the
initial ``hx``/``cx``. This op gives ember's LSTM the same graph. Its kernel is the LSTM
recurrence on arrays; its derivative is backpropagation through time written with ops, so it
also records a graph under ``create_graph`` (the forward is recomputed from the inputs, so
second derivatives see every dependency).

Outputs: the hidden state of every step ``(T, N, H)``, the last hidden and cell states
``(N, H)``, and a workspace (empty here; torch's holds oneDNN's intermediates).
"""
from __future__ import annotations

from .._backend import get_xp
from .pointwise import no_forward_ad, sigmoid, tanh
from .registry import NONE, op
from .shape import cat, stack

__all__: list[str] = []

_INPUTS = ("input", "weight0", "weight1", "weight2", "weight3", "hx_", "cx_")


def _steps(n, reverse):
    return range(n - 1, -1, -1) if reverse else range(n)


def _recurrence(x, w_ih, w_hh, b_ih, b_hh, h, c, reverse):
    """Every step's gate activations and states (arrays or Tensors alike: operators and ops
    only). Returns ``(states, h, c)`` with states[t] = (i, f, g, o, c_prev, c_t, h_t)."""
    gi = x @ w_ih.T
    if b_ih is not None:
        gi = gi + b_ih
    hidden = w_hh.shape[1]
    states = [None] * x.shape[0]
    for t in _steps(x.shape[0], reverse):
        gates = h @ w_hh.T
        if b_hh is not None:
            gates = gates + b_hh
        gates = gi[t] + gates
        i = sigmoid(gates[:, :hidden])
        f = sigmoid(gates[:, hidden:2 * hidden])
        g = tanh(gates[:, 2 * hidden:3 * hidden])
        o = sigmoid(gates[:, 3 * hidden:])
        c_prev, c = c, f * c + i * g
        h = o * tanh(c)
        states[t] = (i, f, g, o, c_prev, c, h)
    return states, h, c


@op("mkldnn_rnn_layer", tensors=7, promote=NONE, outputs=4,
    diff_outputs=(True, True, True, False), node="MkldnnRnnLayerBackward0")
def mkldnn_rnn_layer(input, weight0, weight1, weight2, weight3, hx_, cx_,  # noqa: A002
                     reverse, batch_sizes, mode, hidden_size, num_layers, has_biases,
                     bidirectional, batch_first, train):
    xp = get_xp(input)
    states, h, c = _recurrence(input, weight0, weight1, weight2, weight3, hx_, cx_, reverse)
    if states:
        output = xp.stack([s[6] for s in states])
    else:
        output = xp.zeros((0,) + hx_.shape, dtype=input.dtype)
    return output, h, c, xp.zeros((0,), dtype=input.dtype)


@mkldnn_rnn_layer.grad(*_INPUTS)
def _(grads, input, weight0, weight1, weight2, weight3, hx_, cx_,  # noqa: A002
      reverse, batch_sizes, mode, hidden_size, num_layers, has_biases, bidirectional,
      batch_first, train, result0, result1, result2, result3):
    # (the results are saved as torch's node saves them; the steps are recomputed from the
    # inputs, so that a graph recorded here reaches every input)
    g_out, dh, dc = grads[0], grads[1], grads[2]
    states, _, _ = _recurrence(input, weight0, weight1, weight2, weight3, hx_, cx_, reverse)
    dgates = [None] * len(states)
    h_prev = [None] * len(states)
    for t in reversed(list(_steps(len(states), reverse))):
        i, f, g, o, c_prev, c, h = states[t]
        dh = dh + g_out[t]
        tc = tanh(c)
        dc = dc + dh * o * (1 - tc * tc)
        da = cat([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g),
                  dh * tc * o * (1 - o)], 1)
        dgates[t] = da
        dh, dc = da @ weight1, dc * f
    for t in _steps(len(states), reverse):  # each step's previous hidden state
        first = t == (len(states) - 1 if reverse else 0)
        h_prev[t] = hx_ if first else states[t + 1 if reverse else t - 1][6]
    d_all = stack(dgates, 0)
    rows = d_all.reshape(-1, d_all.shape[-1])
    g_input = d_all @ weight0
    g_w_ih = rows.T @ input.reshape(-1, input.shape[-1])
    g_w_hh = rows.T @ stack(h_prev, 0).reshape(-1, hx_.shape[-1])
    g_bias = rows.sum(0)
    return (g_input, g_w_ih, g_w_hh, None if weight2 is None else g_bias,
            None if weight3 is None else g_bias, dh, dc)


# torch's oneDNN layer has no forward-mode derivative
mkldnn_rnn_layer.jvp(*_INPUTS)(no_forward_ad("mkldnn_rnn_layer"))
