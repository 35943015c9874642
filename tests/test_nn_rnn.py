"""RNN, LSTM, GRU and their cells against torch 2.13 (weights copied across)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch")
tnn = torch.nn

TOL = {"float64": (1e-10, 1e-12), "float32": (1e-4, 1e-5)}


def _flat(out):
    items = out if isinstance(out, tuple) else (out,)
    return [b for a in items for b in (a if isinstance(a, tuple) else (a,))]


def _build(ctor, dtype):
    tm, em = ctor(tnn), ctor(enn)
    if dtype == "float64":
        tm = tm.double()
    tp, ep = dict(tm.named_parameters()), dict(em.named_parameters())
    assert list(tp) == list(ep)
    for n, p in tp.items():
        ep[n]._data = p.detach().numpy().copy()
    return tm, em


def check(ctor, x, hx=None, dtype="float64"):
    rtol, atol = TOL[dtype]
    tm, em = _build(ctor, dtype)
    assert repr(em) == repr(tm)
    x = x.astype(dtype)
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)

    def state(mod):
        if hx is None:
            return None
        if isinstance(hx, tuple):
            return tuple(mod.tensor(h.astype(dtype)) for h in hx)
        return mod.tensor(hx.astype(dtype))
    ft, fe = _flat(tm(xt, state(torch))), _flat(em(xe, state(ember)))
    assert len(ft) == len(fe)
    for a, b in zip(fe, ft):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol, atol)
    weights = [np.cos(np.arange(b.numel())).reshape(tuple(b.shape)).astype(dtype) for b in ft]
    sum((b * torch.tensor(w)).sum() for b, w in zip(ft, weights)).backward()
    sum((a * ember.tensor(w)).sum() for a, w in zip(fe, weights)).backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol, atol)
    for (n, p), q in zip(tm.named_parameters(), em.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol, atol, err_msg=n)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 2, 3))
CASES = {
    "rnn": (lambda nn: nn.RNN(3, 4), X, None),
    "rnn_relu_2layer_bi": (lambda nn: nn.RNN(3, 4, 2, nonlinearity="relu",
                                             bidirectional=True), X,
                           RNG.standard_normal((4, 2, 4))),
    "rnn_batch_first_nobias": (lambda nn: nn.RNN(3, 4, batch_first=True, bias=False), X, None),
    "lstm": (lambda nn: nn.LSTM(3, 4), X, None),
    "lstm_2layer_batch_first": (lambda nn: nn.LSTM(3, 4, num_layers=2, batch_first=True), X,
                                (RNG.standard_normal((2, 5, 4)),
                                 RNG.standard_normal((2, 5, 4)))),
    "lstm_bi_nobias": (lambda nn: nn.LSTM(3, 4, bidirectional=True, bias=False), X, None),
    "gru": (lambda nn: nn.GRU(3, 4), X, None),
    "gru_2layer_bi": (lambda nn: nn.GRU(3, 4, num_layers=2, bidirectional=True), X, None),
    "gru_unbatched": (lambda nn: nn.GRU(3, 4), X[:, 0], RNG.standard_normal((1, 4))),
    "lstm_unbatched": (lambda nn: nn.LSTM(3, 4), X[:, 0], None),
    "rnn_cell": (lambda nn: nn.RNNCell(3, 4), X[0], RNG.standard_normal((2, 4))),
    "rnn_cell_relu": (lambda nn: nn.RNNCell(3, 4, bias=False, nonlinearity="relu"), X[0],
                      None),
    "lstm_cell": (lambda nn: nn.LSTMCell(3, 4), X[0],
                  (RNG.standard_normal((2, 4)), RNG.standard_normal((2, 4)))),
    "gru_cell": (lambda nn: nn.GRUCell(3, 4), X[0], None),
    "gru_cell_unbatched": (lambda nn: nn.GRUCell(3, 4), X[0, 0], None),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name, dtype):
    ctor, x, hx = CASES[name]
    check(ctor, x, hx, dtype)


def test_parameter_names_and_init():
    m = enn.LSTM(3, 4, num_layers=2, bidirectional=True)
    t = tnn.LSTM(3, 4, num_layers=2, bidirectional=True)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [tuple(p.shape) for p in m.parameters()] == [tuple(p.shape) for p in t.parameters()]
    bound = 1 / np.sqrt(4)
    assert all(np.abs(p.detach().numpy()).max() <= bound for p in m.parameters())


def test_dropout_between_layers_only_in_training():
    ember.manual_seed(0)
    m = enn.GRU(3, 4, num_layers=2, dropout=0.5)
    x = ember.randn(5, 2, 3)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    assert np.array_equal(a.detach().numpy(), b.detach().numpy())


def _err(mod, f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            f(mod)
        except Exception as e:  # noqa: BLE001 - the oracle's error is the expectation
            return type(e), str(e)
    return None


ERRORS = {
    "input_4d": lambda m: m.nn.RNN(3, 4)(m.zeros(2, 3, 4, 3)),
    "input_size": lambda m: m.nn.RNN(3, 4)(m.zeros(2, 5, 4)),
    "hidden_size": lambda m: m.nn.RNN(3, 4)(m.zeros(5, 2, 3), m.zeros(1, 3, 4)),
    "lstm_hidden1": lambda m: m.nn.LSTM(3, 4)(m.zeros(5, 2, 3),
                                              (m.zeros(1, 2, 4), m.zeros(1, 3, 4))),
    "unbatched_hx": lambda m: m.nn.RNN(3, 4)(m.zeros(5, 3), m.zeros(1, 2, 4)),
    "nonlinearity": lambda m: m.nn.RNN(3, 4, nonlinearity="foo"),
    "cell_input_size": lambda m: m.nn.RNNCell(3, 4)(m.zeros(5, 4)),
    "cell_batch": lambda m: m.nn.RNNCell(3, 4)(m.zeros(5, 3), m.zeros(4, 4)),
    "cell_3d": lambda m: m.nn.RNNCell(3, 4)(m.zeros(2, 5, 3)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    expected = _err(torch, ERRORS[name])
    assert expected is not None
    assert _err(ember, ERRORS[name]) == expected


def test_dropout_warning_single_layer():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        enn.RNN(3, 4, dropout=0.5)
