"""MultiheadAttention and the transformer encoder against torch 2.13 (weights copied)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import same

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


def test_mha_bias_kv():
    check(lambda nn: nn.MultiheadAttention(8, 2, add_bias_kv=True), [X, Y, Y])


def test_mha_zero_attn_with_padding():
    check(lambda nn: nn.MultiheadAttention(8, 2, add_zero_attn=True), [X, X, X], {},
          {"key_padding_mask": PAD})


def test_mha_bias_kv_zero_attn_masks_per_head():
    check(lambda nn: nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True),
          [X, X, X], {"average_attn_weights": False},
          {"key_padding_mask": PAD, "attn_mask": RNG.standard_normal((5, 5))})


def test_mha_bias_kv_3d_mask_no_weights():
    check(lambda nn: nn.MultiheadAttention(8, 2, add_bias_kv=True), [X, X, X],
          {"need_weights": False}, {"attn_mask": RNG.standard_normal((4, 5, 5))})


def test_mha_kdim_vdim_bias_kv():
    check(lambda nn: nn.MultiheadAttention(8, 4, kdim=3, vdim=5, add_bias_kv=True),
          [X, RNG.standard_normal((4, 2, 3)), RNG.standard_normal((4, 2, 5))])


def test_mha_unbatched_3d_mask():
    check(lambda nn: nn.MultiheadAttention(8, 2), [X[:, 0]] * 3, {},
          {"attn_mask": RNG.standard_normal((2, 5, 5))})


def test_mha_parameters_and_init_match_torch():
    tm = tnn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=3)
    em = enn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=3)
    assert [(n, tuple(p.shape)) for n, p in em.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    assert repr(em) == repr(tm)
    big = enn.MultiheadAttention(64, 4, add_bias_kv=True)
    # xavier_normal_ on (1, 1, 64): std = sqrt(2 / (64 + 64))
    assert abs(big.bias_k.detach().numpy().std() - np.sqrt(2 / 128)) < 0.05


def test_functional_multi_head_attention_forward_matches_torch():
    def body(lib):
        g = np.random.default_rng(5)
        w, b = g.standard_normal((24, 8)), g.standard_normal(24)
        ow, ob = g.standard_normal((8, 8)), g.standard_normal(8)
        bk, bv = g.standard_normal((1, 1, 8)), g.standard_normal((1, 1, 8))
        t = lib.tensor
        q = t(X, requires_grad=True)
        out, weights = lib.nn.functional.multi_head_attention_forward(
            q, q, q, 8, 2, t(w), t(b), t(bk), t(bv), True, 0.0, t(ow), t(ob), training=False,
            key_padding_mask=t(PAD), attn_mask=t(np.triu(np.ones((5, 5), bool), 1)))
        return out, weights, lib.autograd.grad(out.sum(), q)
    same(body, rtol=1e-10, atol=1e-12, grad_fn=False)


def test_decoder_layer():
    check(lambda nn: nn.TransformerDecoderLayer(8, 2, 16), [Y, X], {},
          {"tgt_mask": np.triu(np.full((3, 3), -np.inf), 1), "memory_key_padding_mask": PAD})


def test_decoder_layer_norm_first_batch_first_gelu():
    check(lambda nn: nn.TransformerDecoderLayer(8, 2, 16, norm_first=True, batch_first=True,
                                                activation="gelu"),
          [Y.transpose(1, 0, 2).copy(), X.transpose(1, 0, 2).copy()])


def test_decoder_stack_with_norm():
    check(lambda nn: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 2,
                                           nn.LayerNorm(8)), [Y, X])


def test_transformer():
    check(lambda nn: nn.Transformer(8, 2, 2, 2, 16), [X, Y], {},
          {"tgt_mask": np.triu(np.full((3, 3), -np.inf), 1)})


def test_transformer_batch_first_norm_first_padding():
    check(lambda nn: nn.Transformer(8, 2, 1, 1, 16, batch_first=True, norm_first=True),
          [X.transpose(1, 0, 2).copy(), Y.transpose(1, 0, 2).copy()], {},
          {"src_key_padding_mask": PAD})


def test_encoder_detects_a_causal_mask():
    check(lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2,
                                           enable_nested_tensor=False), [X], {},
          {"mask": np.triu(np.full((5, 5), -np.inf), 1)})


def test_encoder_padded_positions_are_zero_in_inference_like_torch():
    # torch runs this case on nested tensors and pads the result with zeros.
    tm, em = _build(lambda nn: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2, nn.LayerNorm(8)))
    pad = np.array([[False] * 4 + [True], [False] * 5])
    xb = X.transpose(1, 0, 2).copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            ot = tm(torch.tensor(xb), src_key_padding_mask=torch.tensor(pad))
    with ember.no_grad():
        oe = em(ember.tensor(xb), src_key_padding_mask=ember.tensor(pad))
    np.testing.assert_allclose(oe.numpy(), ot.numpy(), 1e-6, 1e-7)
    # and with gradients, or a mask that is not left-aligned, torch computes densely
    pad2 = np.array([[True] + [False] * 4, [False] * 5])
    with torch.no_grad():
        ot = tm(torch.tensor(xb), src_key_padding_mask=torch.tensor(pad2))
    with ember.no_grad():
        oe = em(ember.tensor(xb), src_key_padding_mask=ember.tensor(pad2))
    np.testing.assert_allclose(oe.numpy(), ot.numpy(), 1e-6, 1e-7)


def test_nested_tensor_warnings_and_causal_mask_helper_match_torch():
    def body(lib):
        nn = lib.nn
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1)
            nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True,
                                                             norm_first=True), 1)
            nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True,
                                                             activation=lambda x: x), 1)
            nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1)
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1)
        return ([str(w.message) for w in caught], enc.use_nested_tensor,
                nn.Transformer.generate_square_subsequent_mask(4),
                nn.Transformer.generate_square_subsequent_mask(3, dtype=lib.float64),
                nn.TransformerEncoderLayer(8, 2, 16, activation="gelu").activation_relu_or_gelu)
    same(body, check_warnings=False)


MHA_ERRORS = {
    "causal_without_mask": lambda lib, m, x: m(x, x, x, is_causal=True),
    "mask_2d_shape": lambda lib, m, x: m(x, x, x, attn_mask=lib.zeros(4, 4)),
    "mask_3d_shape": lambda lib, m, x: m(x, x, x, attn_mask=lib.zeros(3, 5, 5)),
    "padding_shape": lambda lib, m, x: m(x, x, x,
                                         key_padding_mask=lib.zeros(2, 4, dtype=lib.bool)),
    "key_dims": lambda lib, m, x: m(x, x[0], x[0]),
    "query_dims": lambda lib, m, x: m(x[None], x, x),
    "int_mask": lambda lib, m, x: m(x, x, x, attn_mask=lib.zeros(5, 5, dtype=lib.int64)),
    "embed_dim": lambda lib, m, x: m(x[..., :4], x[..., :4], x[..., :4]),
    "key_value_shapes": lambda lib, m, x: m(x, x, x[:4]),
}


@pytest.mark.parametrize("case", list(MHA_ERRORS))
def test_mha_forward_errors_match_torch(case):
    def body(lib):
        lib.manual_seed(0)
        m = lib.nn.MultiheadAttention(8, 2)
        return MHA_ERRORS[case](lib, m, lib.tensor(X.astype(np.float32)))
    assert same(body).error is not None


def test_mismatched_mask_types_warn_like_torch():
    def body(lib):
        lib.manual_seed(0)
        m = lib.nn.MultiheadAttention(8, 2).double()
        x = lib.tensor(X)
        return m(x, x, x, key_padding_mask=lib.tensor(PAD),
                 attn_mask=lib.zeros(5, 5, dtype=lib.float64))[0].shape
    e = same(body)
    assert e.warnings
