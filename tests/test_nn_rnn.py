"""RNN, LSTM, GRU and their cells against torch 2.13 (weights copied across)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import same

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
    "lstm_proj": (lambda nn: nn.LSTM(3, 4, proj_size=2), X,
                  (RNG.standard_normal((1, 2, 2)), RNG.standard_normal((1, 2, 4)))),
    "lstm_proj_2layer_bi_batch_first": (lambda nn: nn.LSTM(3, 4, num_layers=2, proj_size=3,
                                                           bidirectional=True,
                                                           batch_first=True), X, None),
    "lstm_proj_unbatched_nobias": (lambda nn: nn.LSTM(3, 5, proj_size=1, bias=False), X[:, 0],
                                   None),
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
    "lstm_cell_hx_3d": lambda m: m.nn.LSTMCell(3, 4)(m.zeros(2, 3),
                                                     (m.zeros(2, 4), m.zeros(1, 2, 4))),
    "gru_cell_hx_3d": lambda m: m.nn.GRUCell(3, 4)(m.zeros(2, 3), m.zeros(1, 2, 4)),
    "gru_input_1d": lambda m: m.nn.GRU(3, 4)(m.zeros(3)),
    "lstm_input_4d": lambda m: m.nn.LSTM(3, 4)(m.zeros(1, 2, 3, 3)),
    "lstm_batched_hx_2d": lambda m: m.nn.LSTM(3, 4)(m.zeros(5, 2, 3),
                                                    (m.zeros(2, 4), m.zeros(2, 4))),
    "lstm_unbatched_hx_3d": lambda m: m.nn.LSTM(3, 4)(m.zeros(5, 3),
                                                      (m.zeros(1, 1, 4), m.zeros(1, 4))),
    "gru_batched_hx_2d": lambda m: m.nn.GRU(3, 4)(m.zeros(5, 2, 3), m.zeros(2, 4)),
    "lstm_proj_hidden": lambda m: m.nn.LSTM(3, 4, proj_size=2)(
        m.zeros(5, 2, 3), (m.zeros(1, 2, 4), m.zeros(1, 2, 4))),
    "lstm_proj_cell": lambda m: m.nn.LSTM(3, 4, proj_size=2)(
        m.zeros(5, 2, 3), (m.zeros(1, 2, 2), m.zeros(1, 2, 2))),
    "proj_too_big": lambda m: m.nn.LSTM(3, 4, proj_size=4),
    "proj_negative": lambda m: m.nn.LSTM(3, 4, proj_size=-1),
    "proj_on_gru": lambda m: m.nn.GRU(3, 4, proj_size=2),
    "proj_on_rnn": lambda m: m.nn.RNN(3, 4, proj_size=2),
    "hidden_zero": lambda m: m.nn.RNN(3, 0),
    "input_zero": lambda m: m.nn.GRU(0, 3),
    "layers_zero": lambda m: m.nn.LSTM(3, 4, 0),
    "hidden_float": lambda m: m.nn.LSTM(3, 4.0),
    "bias_type": lambda m: m.nn.GRU(3, 4, bias=1),
    "batch_first_type": lambda m: m.nn.RNN(3, 4, batch_first=None),
    "packed_input_size": lambda m: m.nn.GRU(3, 4)(m.nn.utils.rnn.pack_sequence(
        [m.zeros(3, 2), m.zeros(2, 2)])),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    expected = _err(torch, ERRORS[name])
    assert expected is not None
    assert _err(ember, ERRORS[name]) == expected


def test_dropout_warning_single_layer():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        enn.RNN(3, 4, dropout=0.5)



def test_dtype_mismatch_error_matches_torch():
    def body(lib):
        try:
            lib.nn.GRU(3, 4)(lib.zeros(5, 2, 3, dtype=lib.float64))
        except ValueError as e:
            return str(e)
    assert same(body).value is not None


def test_reprs_and_flat_weights_match_torch():
    def body(lib):
        nn = lib.nn
        mods = [nn.LSTM(3, 4, proj_size=2), nn.LSTM(3, 4, 2, proj_size=1, bidirectional=True),
                nn.RNN(3, 4, 2, "relu", False, True, 0.5, True), nn.GRU(3, 4, bias=False)]
        out = []
        for m in mods:
            m.flatten_parameters()
            out.append((repr(m), [n for n, _ in m.named_parameters()],
                        [tuple(p.shape) for p in m.parameters()],
                        [[tuple(p.shape) for p in ws] for ws in m.all_weights],
                        [tuple(p.shape) for p in m._flat_weights]))
        return out
    same(body, check_warnings=False)


def _packed_run(lib, mod, x, lengths, hx, batch_first, enforce_sorted):
    R = lib.nn.utils.rnn
    xt = lib.tensor(x, requires_grad=True)
    packed = R.pack_padded_sequence(xt, lengths, batch_first=batch_first,
                                    enforce_sorted=enforce_sorted)
    h = None
    if hx is not None:
        h = (tuple(lib.tensor(a, requires_grad=True) for a in hx) if isinstance(hx, tuple)
             else lib.tensor(hx, requires_grad=True))
    out, hn = mod(packed, h)
    padded, lens = R.pad_packed_sequence(out, batch_first=batch_first, total_length=6)
    flat = [padded] + (list(hn) if isinstance(hn, tuple) else [hn])
    loss = sum((f * lib.tensor(np.cos(np.arange(f.numel())).reshape(tuple(f.shape)))).sum()
               for f in flat)
    ins = [xt] + (list(h) if isinstance(h, tuple) else ([h] if h is not None else []))
    params = list(mod.parameters())
    grads = lib.autograd.grad(loss, ins + params)
    return ([f.detach().numpy() for f in flat] + [lens.numpy(), out.batch_sizes.numpy()]
            + [g.numpy() for g in grads], type(out).__name__)


XP = RNG.standard_normal((5, 4, 3))
PACKED = {
    "rnn_sorted": (lambda nn: nn.RNN(3, 4), [5, 3, 2, 1], None, False, True),
    "gru_2layer_bi_hx": (lambda nn: nn.GRU(3, 4, 2, bidirectional=True), [5, 3, 3, 1],
                         RNG.standard_normal((4, 4, 4)), False, True),
    "lstm_bi_batch_first_unsorted": (
        lambda nn: nn.LSTM(3, 4, 2, bidirectional=True, batch_first=True), [2, 5, 1, 3],
        (RNG.standard_normal((4, 4, 4)), RNG.standard_normal((4, 4, 4))), True, False),
    "lstm_proj_unsorted": (lambda nn: nn.LSTM(3, 4, proj_size=2, bidirectional=True),
                           [4, 2, 5, 1], None, False, False),
    "rnn_relu_equal_lengths": (lambda nn: nn.RNN(3, 4, nonlinearity="relu", bias=False,
                                                 bidirectional=True), [3, 3, 3, 3],
                               RNG.standard_normal((2, 4, 4)), False, False),
}


@pytest.mark.parametrize("name", list(PACKED))
def test_packed_sequences_match_torch(name):
    ctor, lengths, hx, batch_first, enforce_sorted = PACKED[name]
    tm, em = _build(ctor, "float64")
    x = XP.transpose(1, 0, 2).copy() if batch_first else XP
    a, ka = _packed_run(torch, tm, x, lengths, hx, batch_first, enforce_sorted)
    b, kb = _packed_run(ember, em, x, lengths, hx, batch_first, enforce_sorted)
    assert ka == kb == "PackedSequence"
    assert len(a) == len(b)
    for k, (u, v) in enumerate(zip(a, b)):
        np.testing.assert_allclose(v, u, 1e-10, 1e-12, err_msg=f"output {k}")


def _graph_names(node, depth=3):
    """Node names of a graph to ``depth`` (None for no edge), as nested lists."""
    if node is None:
        return None
    if depth == 0:
        return node.name()
    return [node.name(), [_graph_names(n, depth - 1) for n, _ in node.next_functions]]


@pytest.mark.parametrize("kw", [{}, {"num_layers": 2}, {"bidirectional": True},
                                {"batch_first": True}, {"bias": False},
                                {"num_layers": 2, "dropout": 0.5}])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_graph_is_torchs_onednn_graph(kw, dtype):
    """torch's CPU build runs a float32 LSTM through oneDNN: one MkldnnRnnLayerBackward0 per
    layer and direction; float64 takes its plain recurrence (StackBackward0)."""
    def body(torch):
        torch.manual_seed(0)
        m = torch.nn.LSTM(3, 4, **kw).to(getattr(torch, dtype))
        x = torch.randn(5, 2, 3, dtype=getattr(torch, dtype), requires_grad=True)
        out, (h, c) = m(x)
        (out.sum() + h.sum() * 2 + c.sum() * 3).backward()
        # (float64's steps: the projection unbound, the gates cut by unsafe_chunk)
        depth = 3 if dtype == "float32" else 6
        return ([_graph_names(t.grad_fn, depth).__repr__().replace("torch::autograd::", "")
                 for t in (out, h, c)], out, h, c, x.grad,
                [p.grad for p in m.parameters()])
    same(body, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", ["GRU", "RNN", "GRUCell", "LSTMCell"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_step_by_step_graph_is_torchs(cls, dtype):
    """The recurrences torch runs step by step: the projected input unbound once
    (UnbindBackward0), gates cut by unsafe_chunk (UnsafeSplitBackward0)."""
    def body(torch):
        torch.manual_seed(0)
        m = getattr(torch.nn, cls)(3, 4, dtype=getattr(torch, dtype))
        cell = cls.endswith("Cell")
        x = torch.randn(*(2, 3) if cell else (3, 2, 3), dtype=getattr(torch, dtype),
                        requires_grad=True)
        out = m(x)
        out = out[0] if isinstance(out, tuple) else out
        out.sum().backward()
        return (_graph_names(out.grad_fn, 7).__repr__().replace("torch::autograd::", ""),
                out, x.grad, [p.grad for p in m.parameters()])
    same(body, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("on", ["input", "weight"])
def test_forward_ad_through_the_onednn_layer_is_refused(on):
    """torch's oneDNN LSTM layer has no forward-mode derivative: NotImplementedError."""
    def body(torch):
        torch.manual_seed(0)
        m = torch.nn.LSTM(3, 2)
        x = torch.randn(2, 1, 3)
        with torch.autograd.forward_ad.dual_level():
            if on == "input":
                x = torch.autograd.forward_ad.make_dual(x, torch.ones_like(x))
            else:
                w = m.weight_ih_l0.detach()
                del m.weight_ih_l0
                m.weight_ih_l0 = torch.autograd.forward_ad.make_dual(w, torch.ones_like(w))
            m(x)
    same(body, check_warnings=False)


@pytest.mark.parametrize("cls, dtype, batched", [
    ("LSTM", "float32", "input"), ("LSTM", "float64", "state"), ("GRU", "float32", "input"),
    ("RNN", "float64", "input"), ("LSTM", "float32", "nothing")])
def test_vmap_over_a_recurrent_network_is_refused(cls, dtype, batched):
    """torch's aten::lstm (gru, rnn_tanh) has no batching rule: vmap over its input or state
    is refused; a network of unbatched tensors inside vmap runs."""
    def body(torch):
        torch.manual_seed(0)
        dt = getattr(torch, dtype)
        m = getattr(torch.nn, cls)(3, 2, dtype=dt)
        xs = torch.randn(4, 2, 1, 3, dtype=dt)

        def f(a):
            if batched == "input":
                return m(a)[0]
            if batched == "state":
                h = a[0, :, :2].unsqueeze(0)
                return m(torch.ones(2, 1, 3, dtype=dt), (h, h))[0]
            return a.sum() + m(torch.ones(2, 1, 3, dtype=dt))[0].sum()
        return torch.func.vmap(f)(xs)
    same(body, check_warnings=False)


def test_lstm_layer_node_saves_torchs_names():
    def body(torch):
        m = torch.nn.LSTM(2, 3)
        out, _ = m(torch.ones(2, 1, 2))
        return sorted(a for a in dir(out.grad_fn) if a.startswith("_saved"))
    same(body)


def test_lstm_second_derivatives_through_the_layer_node():
    def body(torch):
        torch.manual_seed(0)
        m = torch.nn.LSTM(3, 4, num_layers=2)
        x = torch.randn(4, 2, 3, requires_grad=True)
        out, (h, c) = m(x)
        g, = torch.autograd.grad((out ** 2).sum() + c.sum(), x, create_graph=True)
        g.pow(2).sum().backward()
        return g, x.grad, m.weight_hh_l0.grad
    same(body, rtol=1e-4, atol=1e-5, grad_fn=False)


def test_lstm_with_projections_warns_that_onednn_is_not_used():
    import ember
    from ember.nn.modules import rnn
    rnn._warned_projections.clear()
    m = ember.nn.LSTM(3, 4, proj_size=2)
    with pytest.warns(UserWarning, match="LSTM with projections is not supported with oneDNN. "
                                         "Using default implementation."):
        m(ember.randn(5, 2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m(ember.randn(5, 2, 3))  # once per process, as torch's TORCH_WARN_ONCE
        m.double()(ember.randn(5, 2, 3, dtype=ember.float64))
