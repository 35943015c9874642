"""torch's functional recurrent networks and cells (ember.lstm, gru, rnn_tanh, rnn_relu,
lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell) against torch 2.13: outputs, gradients,
node names and errors; a module's flat weights through the function give the module's output."""
import numpy as np
import pytest
from oracle import same

GEN = np.random.default_rng(11)
X = GEN.standard_normal((4, 2, 3))
H = GEN.standard_normal((4, 2, 4))
C = GEN.standard_normal((4, 2, 4))


def _params(gates, layers=1, dirs=1, bias=True, inp=3, hid=4):
    out = []
    for layer in range(layers):
        for _ in range(dirs):
            out += [GEN.standard_normal((gates * hid, inp if layer == 0 else hid * dirs)),
                    GEN.standard_normal((gates * hid, hid))]
            if bias:
                out += [GEN.standard_normal(gates * hid), GEN.standard_normal(gates * hid)]
    return out


LSTM_P = _params(4, 2, 2)
GRU_P = _params(3, 1, 1, bias=False)
RNN_P = _params(1, 2, 1)
GRU_PACKED_P = _params(3, 1, 2)
LSTM_PACKED_P = _params(4, 1, 1, bias=False)
PROJ_P = [GEN.standard_normal(s) for s in ((16, 3), (16, 2), (16,), (16,), (2, 4))]


def _leaves(torch, arrays):
    return [torch.tensor(a, requires_grad=True) for a in arrays]


def _result(torch, out, inputs):
    out = out if isinstance(out, tuple) else (out,)
    grads = torch.autograd.grad(sum((o * o).sum() for o in out), inputs, allow_unused=True)
    return [o.detach() for o in out], [o.grad_fn.name() for o in out], grads


@pytest.mark.parametrize("case", ["lstm", "lstm_batch_first", "lstm_proj", "gru", "rnn_tanh",
                                  "rnn_relu", "gru_packed", "lstm_packed"])
def test_networks(case):
    def body(torch):
        x = torch.tensor(X, requires_grad=True)
        h, c = torch.tensor(H, requires_grad=True), torch.tensor(C, requires_grad=True)
        if case == "lstm":
            p = _leaves(torch, LSTM_P)
            return _result(torch, torch.lstm(x, (h, c), p, True, 2, 0.0, True, True, False),
                           [x, h, c, p[0], p[-1]])
        if case == "lstm_batch_first":
            p = _leaves(torch, LSTM_P)
            return _result(torch, torch.lstm(x.transpose(0, 1), (h, c), p, True, 2, 0.0, True,
                                             True, True), [x, p[5]])
        if case == "lstm_proj":
            p = _leaves(torch, PROJ_P)
            return _result(torch, torch.lstm(x, (h[:1, :, :2], c[:1]), p, True, 1, 0.0, True,
                                             False, False), [x, h, p[4]])
        if case == "gru":
            p = _leaves(torch, GRU_P)
            return _result(torch, torch.gru(x, h[:1], p, False, 1, 0.0, True, False, False),
                           [x, h, p[1]])
        if case in ("rnn_tanh", "rnn_relu"):
            p = _leaves(torch, RNN_P)
            fn = getattr(torch, case)
            return _result(torch, fn(x, h[:2], p, True, 2, 0.0, False, False, False),
                           [x, p[2], p[-1]])
        data, sizes = x.reshape(8, 3)[:5], torch.tensor([2, 2, 1])
        if case == "gru_packed":
            p = _leaves(torch, GRU_PACKED_P)
            return _result(torch, torch.gru(data, sizes, h[:2], p, True, 1, 0.0, True, True),
                           [x, h, p[0]])
        p = _leaves(torch, LSTM_PACKED_P)
        return _result(torch, torch.lstm(data, sizes, (h[:1], c[:1]), p, False, 1, 0.0, True,
                                         False), [x, c, p[1]])
    same(body, rtol=1e-10, atol=1e-12)


def test_module_weights_through_the_function():
    def body(torch):
        torch.manual_seed(0)
        lstm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True).double()
        x = torch.tensor(X)
        want, _ = lstm(x)
        got = torch.lstm(x, (torch.zeros(4, 2, 4, dtype=torch.float64),) * 2,
                         lstm._flat_weights, True, 2, 0.0, False, True, False)[0]
        return (want - got).abs().max().item() < 1e-12
    same(body)


@pytest.mark.parametrize("case", ["lstm_cell", "lstm_cell_no_bias", "gru_cell",
                                  "rnn_tanh_cell", "rnn_relu_cell"])
def test_cells(case):
    def body(torch):
        x, h, c = (torch.tensor(a[0], requires_grad=True) for a in (X, H, C))
        gates = {"lstm": 4, "gru": 3}.get(case.split("_")[0], 1)
        w_ih, w_hh, b_ih, b_hh = _leaves(torch, [a[:gates * 4] for a in LSTM_P[:4]])
        if case == "lstm_cell":
            out = torch.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)
        elif case == "lstm_cell_no_bias":
            out = torch.lstm_cell(x, (h, c), w_ih, w_hh)
        else:
            out = getattr(torch, case)(x, h, w_ih, w_hh, None, b_hh)
        return _result(torch, out, [x, h, w_ih, w_hh, b_ih, b_hh])
    same(body, rtol=1e-10, atol=1e-12)


ERRORS = [
    lambda t: t.rnn_relu_cell(t.ones(2, 3), t.ones(1, 4), t.ones(5, 3), t.ones(4, 4)),
    lambda t: t.rnn_relu_cell(t.ones(2, 3), t.ones(2, 4), t.ones(4, 3), t.ones(4, 5)),
    lambda t: t.gru_cell(t.ones(2, 3), t.ones(2, 4), t.ones(12, 3), t.ones(11, 4)),
    lambda t: t.rnn_tanh_cell(t.ones(2, 2), t.ones(1, 4), t.ones(4, 3), t.ones(4, 4)),
    lambda t: t.rnn_tanh_cell(t.ones(2, 3), t.ones(2, 3), t.ones(4, 3), t.ones(4, 4)),
    lambda t: t.rnn_tanh_cell(t.ones(3), t.ones(4), t.ones(4, 3), t.ones(4, 4)),
    lambda t: t.rnn_tanh_cell(t.ones(2, 3), t.ones(4), t.ones(4, 3), t.ones(4, 4)),
    lambda t: t.lstm_cell(t.ones(2, 3), (t.ones(2, 4), t.ones(2, 3)), t.ones(16, 3),
                          t.ones(16, 4)),
    lambda t: t.lstm_cell(t.ones(2, 3), (t.ones(2, 4),), t.ones(16, 3), t.ones(16, 4)),
    lambda t: t.lstm(t.ones(2, 3), (t.ones(2, 4), t.ones(2, 4)), [t.ones(16, 3),
                                                                  t.ones(16, 4)],
                     False, 1, 0.0, True, False, False),
    lambda t: t.lstm(t.ones(5, 2, 3), (t.ones(1, 2, 4),), [t.ones(16, 3), t.ones(16, 4)],
                     False, 1, 0.0, True, False, False),
    lambda t: t.lstm(t.ones(5, 2, 3), (t.ones(1, 2, 4), t.ones(1, 2, 4)),
                     [t.ones(16, 3), t.ones(16, 4), t.ones(16)], False, 1, 0.0, True, False,
                     False),
    lambda t: t.gru(t.ones(2, 5, 3), t.zeros(1, 2, 4), [t.ones(12, 3), t.ones(12, 4)], False,
                    2, 0.0, True, False, True),
    lambda t: t.gru(t.ones(2, 5, 3), t.zeros(1, 2, 4), [t.ones(12, 3), t.ones(12, 4),
                                                         t.ones(12)], True, 1, 0.0, True,
                    False, True),
]


@pytest.mark.parametrize("call", ERRORS)
def test_errors(call):
    same(call)


def test_networks_take_torchs_keyword_names():
    def body(t):
        t.manual_seed(0)
        x, h = t.randn(5, 2, 3), (t.zeros(1, 2, 4), t.zeros(1, 2, 4))
        params = list(t.nn.LSTM(3, 4)._flat_weights)
        packed = t.nn.utils.rnn.pack_padded_sequence(x, [5, 3])
        gru_params = list(t.nn.GRU(3, 4)._flat_weights)
        return (t.lstm(input=x, hx=h, params=params, has_biases=True, num_layers=1, dropout=0.0,
                       train=False, bidirectional=False, batch_first=False)[0].detach(),
                t.lstm(x, h, params, True, 1, 0.0, False, bidirectional=False,
                       batch_first=False)[1].detach(),
                t.lstm(data=packed.data, batch_sizes=packed.batch_sizes, hx=h, params=params,
                       has_biases=True, num_layers=1, dropout=0.0, train=False,
                       bidirectional=False)[0].detach(),
                t.gru(x, h[0], gru_params, True, 1, 0.0, False, False, batch_first=False)[0].detach(),
                t.gru(packed.data, packed.batch_sizes, h[0], params=gru_params, has_biases=True,
                      num_layers=1, dropout=0.0, train=False, bidirectional=False)[0].detach())
    same(body)  # (values: torch's CPU build records its oneDNN MkldnnRnnLayerBackward0 node)
