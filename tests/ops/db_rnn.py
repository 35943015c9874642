"""Op table rows for torch's functional recurrent networks and cells (ember.lstm, gru,
rnn_tanh, rnn_relu and their _cell forms; nn/_functional_rnn.py): composites of linear and
pointwise ops, the same code as the nn recurrent modules. Sizes stay tiny (gradgradcheck)."""
from __future__ import annotations

import ember
from ember._ops import rnn_layer as RL

from .op_db import C, S, row

_F32 = {"float32": (1e-5, 1e-5)}


def _params(m, gates, inp, hid, layers=1, dirs=1, bias=True):
    out = []
    for layer in range(layers):
        for _ in range(dirs):
            out += [m(gates * hid, inp if layer == 0 else hid * dirs), m(gates * hid, hid)]
            if bias:
                out += [m(gates * hid), m(gates * hid)]
    return out


def _lstm_samples(m):
    return [S("two_layers", m(2, 1, 2), [m(2, 1, 2), m(2, 1, 2)],
              _params(m, 4, 2, 2, 2), True, 2, 0.0, True, False, False),
            S("bidir", m(2, 1, 2), [m(2, 1, 2), m(2, 1, 2)],
              _params(m, 4, 2, 2, 1, 2), True, 1, 0.0, True, True, False),
            S("batch_first_no_bias", m(2, 3, 2), [m(1, 2, 2), m(1, 2, 2)],
              _params(m, 4, 2, 2, bias=False), False, 1, 0.0, True, False, True),
            S("packed", m(3, 2), C(m.arr([2, 1], "int64")), [m(1, 2, 2), m(1, 2, 2)],
              _params(m, 4, 2, 2), True, 1, 0.0, True, False)]


def _gates_samples(gates):
    def samples(m):
        return [S("bidir", m(2, 1, 2), m(2, 1, 2), _params(m, gates, 2, 2, 1, 2), True, 1,
                  0.0, True, True, False),
                S("two_layers", m(3, 1, 2), m(2, 1, 2), _params(m, gates, 2, 2, 2),
                  True, 2, 0.0, False, False, False)]
    return samples


def _layer_samples(m):
    """torch.mkldnn_rnn_layer's arguments: input, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse,
    batch_sizes, mode (2: LSTM), hidden_size, num_layers, has_biases, bidirectional,
    batch_first, train."""
    rest = ([], 2, 2, 1, True, False, False, True)
    return [S("forward", m(3, 2, 3), m(8, 3), m(8, 2), m(8), m(8), m(2, 2), m(2, 2), False,
              *rest),
            S("reverse", m(2, 1, 2), m(8, 2), m(8, 2), m(8), m(8), m(1, 2), m(1, 2), True,
              *rest)]


# torch's oneDNN LSTM layer (float32 only in torch; ember's float64 runs its gradchecks)
# (its fourth output, oneDNN's workspace, is left out: ember keeps none)
row("mkldnn_rnn_layer", lambda *a: RL.mkldnn_rnn_layer(*a)[:3],
    lambda torch: lambda *a: torch.mkldnn_rnn_layer(*a)[:3], [RL.mkldnn_rnn_layer],
    _layer_samples, tols=_F32, dtypes=("float32",),
    skips={"test_forward_ad": "torch has no forward-mode derivative of mkldnn_rnn_layer",
           "test_gradgrad_vs_torch": "torch's oneDNN kernels take float32 only"},
    public=False)  # (reached through nn.LSTM and ember.lstm, whose rows compare its nodes)
# (second derivatives of whole networks: their cells' rows check them, at a fraction of the
# time)
row("lstm", ember.lstm, "lstm", [], _lstm_samples, tols=_F32, gradgrad=False)
row("gru", ember.gru, "gru", [], _gates_samples(3), tols=_F32, gradgrad=False)
row("rnn_tanh", ember.rnn_tanh, "rnn_tanh", [], _gates_samples(1), tols=_F32, gradgrad=False)
row("rnn_relu", ember.rnn_relu, "rnn_relu", [], _gates_samples(1), tols=_F32,
    domain=(0.2, 2.0), gradgrad=False)


def _cell_samples(gates, pair=False):
    def samples(m):
        hx = [m(2, 3), m(2, 3)] if pair else m(2, 3)
        return [S("bias", m(2, 2), hx, m(gates * 3, 2), m(gates * 3, 3), m(gates * 3),
                  m(gates * 3)),
                S("no_bias", m(1, 2), [m(1, 3), m(1, 3)] if pair else m(1, 3),
                  m(gates * 3, 2), m(gates * 3, 3))]
    return samples


row("lstm_cell", ember.lstm_cell, "lstm_cell", [], _cell_samples(4, True), tols=_F32)
row("gru_cell", ember.gru_cell, "gru_cell", [], _cell_samples(3), tols=_F32)
row("rnn_tanh_cell", ember.rnn_tanh_cell, "rnn_tanh_cell", [], _cell_samples(1), tols=_F32)
row("rnn_relu_cell", ember.rnn_relu_cell, "rnn_relu_cell", [], _cell_samples(1), tols=_F32,
    domain=(0.2, 2.0))
