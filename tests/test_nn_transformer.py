"""MultiheadAttention and the transformer encoder against torch 2.13 (weights copied)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch")
tnn = torch.nn


def _build(ctor):
    tm, em = ctor(tnn).double(), ctor(enn)
    tp, ep = dict(tm.named_parameters()), dict(em.named_parameters())
    assert list(tp) == list(ep)
    for n, p in tp.items():
        ep[n]._data = p.detach().numpy().copy()
    tm.eval()
    em.eval()
    return tm, em


def check(ctor, inputs, kwargs=None, consts=None):
    tm, em = _build(ctor)
    assert repr(em) == repr(tm)
    kwargs, consts = kwargs or {}, consts or {}
    ti = [torch.tensor(a, requires_grad=True) for a in inputs]
    ei = [ember.tensor(a, requires_grad=True) for a in inputs]
    tk = {k: torch.tensor(v) for k, v in consts.items()}
    ek = {k: ember.tensor(v) for k, v in consts.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ot, oe = tm(*ti, **kwargs, **tk), em(*ei, **kwargs, **ek)
    ot = ot if isinstance(ot, tuple) else (ot,)
    oe = oe if isinstance(oe, tuple) else (oe,)
    for a, b in zip(oe, ot):
        assert (a is None) == (b is None)
        if b is not None:
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), 1e-10, 1e-12)
    w = np.cos(np.arange(ot[0].numel())).reshape(tuple(ot[0].shape))
    (ot[0] * torch.tensor(w)).sum().backward()
    (oe[0] * ember.tensor(w)).sum().backward()
    for a, b in zip(ei, ti):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), 1e-10, 1e-12)
    for (n, p), q in zip(tm.named_parameters(), em.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), 1e-10, 1e-12, err_msg=n)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 2, 8))
Y = RNG.standard_normal((3, 2, 8))
PAD = np.array([[False] * 4 + [True], [False] * 5])


def test_mha_self():
    check(lambda nn: nn.MultiheadAttention(8, 2), [X, X, X])


def test_mha_self_same_tensor():
    tm, em = _build(lambda nn: nn.MultiheadAttention(8, 2))
    xt, xe = torch.tensor(X), ember.tensor(X)
    np.testing.assert_allclose(em(xe, xe, xe)[0].detach().numpy(),
                               tm(xt, xt, xt)[0].detach().numpy(), 1e-10, 1e-12)


def test_mha_cross_per_head_weights():
    check(lambda nn: nn.MultiheadAttention(8, 2), [X, Y, Y], {"average_attn_weights": False})


def test_mha_kdim_vdim_batch_first():
    check(lambda nn: nn.MultiheadAttention(8, 4, kdim=3, vdim=5, batch_first=True),
          [X[:2], RNG.standard_normal((2, 4, 3)), RNG.standard_normal((2, 4, 5))])


def test_mha_masks():
    check(lambda nn: nn.MultiheadAttention(8, 2), [X, X, X], {},
          {"key_padding_mask": PAD, "attn_mask": RNG.standard_normal((5, 5))})


def test_mha_bool_mask_no_weights_no_bias():
    check(lambda nn: nn.MultiheadAttention(8, 2, bias=False), [X, X, X],
          {"need_weights": False}, {"attn_mask": np.triu(np.ones((5, 5), bool), 1)})


def test_mha_unbatched():
    check(lambda nn: nn.MultiheadAttention(8, 2), [X[:, 0]] * 3)


def test_encoder_layer_post_norm():
    check(lambda nn: nn.TransformerEncoderLayer(8, 2, 16), [X])


def test_encoder_layer_norm_first_batch_first_padding():
    check(lambda nn: nn.TransformerEncoderLayer(8, 2, 16, norm_first=True, batch_first=True),
          [X], {}, {"src_key_padding_mask": np.array([[False, True]] + [[False, False]] * 4)})


def test_encoder_layer_gelu_causal_mask():
    if not hasattr(ember.nn.functional, "gelu"):
        pytest.skip("ember.nn.functional.gelu is not there yet")
    check(lambda nn: nn.TransformerEncoderLayer(8, 2, 16, activation="gelu"), [X], {},
          {"src_mask": np.triu(np.full((5, 5), -np.inf), 1)})


def test_encoder_stack():
    if not hasattr(enn, "ModuleList"):
        pytest.skip("ember.nn.ModuleList is not there yet")
    check(lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2,
                                           enable_nested_tensor=False), [X])


def test_mha_errors_match_torch():
    for f in (lambda m: m.nn.MultiheadAttention(5, 2),
              lambda m: m.nn.MultiheadAttention(4, 2)(m.zeros(3, 2, 5), m.zeros(3, 2, 4),
                                                      m.zeros(3, 2, 4))):
        errs = []
        for mod in (torch, ember):
            with pytest.raises(Exception) as info:  # noqa: B017 - compared below
                f(mod)
            errs.append((info.type, str(info.value)))
        assert errs[0] == errs[1]
