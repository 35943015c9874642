"""The losses of the ``torch`` namespace are aten's operators, not ``nn.functional``'s: an int
reduction (unreduced by default), aten's positional order, torch's parser error for a string
reduction; ``F``'s functions of the same names keep their own signatures."""
import numpy as np
import pytest

from oracle import same


def _inputs(torch):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, 4, generator=g, dtype=torch.float64)
    c = torch.randn(3, 4, generator=g, dtype=torch.float64)
    sign = torch.randn(3, 4, generator=g, dtype=torch.float64).sign()
    prob = torch.rand(3, 4, generator=g, dtype=torch.float64)
    return a, b, c, sign, prob


def _log_probs(torch):
    g = torch.Generator().manual_seed(1)
    lp = torch.randn(5, 2, 4, generator=g, dtype=torch.float64).log_softmax(2)
    return lp.detach().requires_grad_(), torch.tensor([[1, 2], [1, 3]])


# name -> the call without its reduction, as (positional arguments, keyword arguments)
CALLS = {
    "kl_div": lambda t, a, b, c, s, p: ((a, b.log_softmax(1).exp()), {}),
    "margin_ranking_loss": lambda t, a, b, c, s, p: ((a, b, s, 0.3), {}),
    "hinge_embedding_loss": lambda t, a, b, c, s, p: ((a, s, 0.7), {}),
    "binary_cross_entropy_with_logits": lambda t, a, b, c, s, p: ((a, p, p + 0.5, None), {}),
    "triplet_margin_loss": lambda t, a, b, c, s, p: ((a, b, c, 0.9, 2.0, 1e-6, True), {}),
    "cosine_embedding_loss": lambda t, a, b, c, s, p: ((a, b, s[:, 0], 0.1), {}),
    "poisson_nll_loss": lambda t, a, b, c, s, p: ((a, p, True, False, 1e-8), {}),
    "ctc_loss": lambda t, *_: ((*_log_probs(t), [5, 5], [2, 2], 0), {}),
}


def _call(torch, name, **kw):
    args, kwargs = CALLS[name](torch, *_inputs(torch))
    return getattr(torch, name)(*args, **kwargs, **kw)


@pytest.mark.parametrize("name", sorted(set(CALLS) - {"poisson_nll_loss"}))
def test_default_reduction_is_none(name):
    # (torch's binding reads aten's default at::Reduction::Mean as 0)
    same(lambda torch: _call(torch, name))


@pytest.mark.parametrize("reduction", [0, 1, 2, 3, -1])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_int_reduction_values_nodes_and_gradient(name, reduction):
    def body(torch):
        args, _ = CALLS[name](torch, *_inputs(torch))
        loss = getattr(torch, name)(*args, reduction=reduction)
        (grad,) = torch.autograd.grad(loss.sum(), args[0])
        return loss, grad
    same(body)


@pytest.mark.parametrize("name", sorted(set(CALLS) - {"ctc_loss"}))
@pytest.mark.parametrize("reduction", ["mean", "none", None, 1.0, True])
def test_non_int_reduction_is_a_type_error(name, reduction):
    def positional(torch):
        args, _ = CALLS[name](torch, *_inputs(torch))
        # reduction at its aten position: after every argument before it (defaults filled)
        full = {"kl_div": 2, "margin_ranking_loss": 4, "hinge_embedding_loss": 3,
                "binary_cross_entropy_with_logits": 4, "triplet_margin_loss": 7,
                "cosine_embedding_loss": 4, "poisson_nll_loss": 5}[name]
        return getattr(torch, name)(*args[:full], reduction)
    same(positional)
    same(lambda torch: _call(torch, name, reduction=reduction))


def test_ctc_loss_string_reduction_is_torchs_type_error():
    same(lambda torch: _call(torch, "ctc_loss", reduction="mean"))


def test_kl_div_takes_log_target_by_keyword_only():
    same(lambda torch: torch.kl_div(*_inputs(torch)[:2], 1, True))
    same(lambda torch: torch.kl_div(_inputs(torch)[0], _inputs(torch)[0], 1, log_target=True))


def test_functional_losses_keep_their_string_reduction():
    same(lambda torch: torch.nn.functional.kl_div(*_inputs(torch)[:2], reduction="sum"))
    same(lambda torch: torch.nn.functional.margin_ranking_loss(
        *_inputs(torch)[:2], _inputs(torch)[3], reduction="mean"))


def _a(torch, *shape):
    g = torch.Generator().manual_seed(2)
    return torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True)


# where F checks more than aten does (F's own checks before it calls the operator), and the
# parser's errors for missing arguments
ATEN_NOT_F = {
    "margin_ranking_broadcasts": lambda t: t.margin_ranking_loss(
        _a(t, 3, 4), _a(t, 4), _a(t, 3, 4).detach().sign(), 0.2, 1),
    "triplet_zero_margin": lambda t: t.triplet_margin_loss(_a(t, 3, 4), _a(t, 3, 4) * 2,
                                                           _a(t, 3, 4) - 1, 0.0),
    "triplet_negative_margin": lambda t: t.triplet_margin_loss(_a(t, 3, 4), _a(t, 3, 4) * 2,
                                                               _a(t, 3, 4) - 1, -1.0, 2.0),
    "triplet_dimensions": lambda t: t.triplet_margin_loss(_a(t, 3, 4), _a(t, 4), _a(t, 3, 4)),
    "bce_smaller_target": lambda t: t.binary_cross_entropy_with_logits(
        _a(t, 3, 4), _a(t, 4).detach().sigmoid()),
    "bce_crossed_shapes": lambda t: t.binary_cross_entropy_with_logits(
        _a(t, 3, 1), _a(t, 1, 4).detach().sigmoid()),
    "bce_smaller_input_forward": lambda t: t.binary_cross_entropy_with_logits(
        _a(t, 4).detach(), _a(t, 3, 4).detach().sigmoid(), reduction=1),
    "poisson_missing_one": lambda t: t.poisson_nll_loss(_a(t, 3), _a(t, 3), True, False, 1e-8),
    "poisson_missing_after_keyword": lambda t: t.poisson_nll_loss(_a(t, 3), _a(t, 3), True,
                                                                  eps=1.0),
    "kl_div_missing_input": lambda t: t.kl_div(target=_a(t, 3)),
    "ctc_missing": lambda t: t.ctc_loss(_a(t, 3)),
}


@pytest.mark.parametrize("case", sorted(ATEN_NOT_F))
def test_aten_checks_not_functionals(case):
    same(ATEN_NOT_F[case])


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("shapes", [((4,), (3, 4)), ((3, 1), (3, 4)), ((1, 4), (3, 4))])
def test_bce_with_logits_input_broadcast_fails_in_backward_as_torch(shapes, reduction):
    # torch's forward broadcasts a smaller input, its backward cannot write the gradient back
    def body(torch):
        x, y = _a(torch, *shapes[0]), _a(torch, *shapes[1]).detach().sigmoid()
        loss = torch.binary_cross_entropy_with_logits(x, y, None, torch.ones(4) * 2, reduction)
        return loss, torch.autograd.grad(loss.sum(), x)
    same(body)


def test_bce_with_logits_broadcast_input_has_a_tangent():
    def body(torch):
        import importlib
        forward_ad = importlib.import_module(torch.__name__ + ".autograd.forward_ad")
        x, y = _a(torch, 4).detach(), _a(torch, 3, 4).detach().sigmoid()
        with forward_ad.dual_level():
            dual = forward_ad.make_dual(x, torch.ones_like(x))
            loss = torch.binary_cross_entropy_with_logits(dual, y, reduction=1)
            return forward_ad.unpack_dual(loss).tangent
    same(body)


@pytest.mark.parametrize("name", sorted(set(CALLS) - {"poisson_nll_loss"}))
def test_ops_aten_takes_the_schemas_mean_default(name):
    # (the schema's default is at::Reduction::Mean; only the torch namespace's binding reads 0)
    def body(torch):
        args, _ = CALLS[name](torch, *_inputs(torch))
        return getattr(torch.ops.aten, name)(*args)
    same(body)


@pytest.mark.parametrize("reduction", [0, 2])
def test_ops_aten_takes_an_int_reduction(reduction):
    same(lambda torch: torch.ops.aten.kl_div(*_inputs(torch)[:2], reduction))
    same(lambda torch: torch.ops.aten.binary_cross_entropy_with_logits(
        _inputs(torch)[0], _inputs(torch)[4], None, None, reduction))


# torch's parser: what each kind of parameter accepts, and its error for what it does not
PARSER = {
    "numpy_int_reduction": lambda t: t.kl_div(*_inputs(t)[:2], np.int64(2)),
    "tensor_int_reduction": lambda t: t.kl_div(*_inputs(t)[:2], t.tensor(1)),
    "tensor_float_reduction": lambda t: t.kl_div(*_inputs(t)[:2], t.tensor(1.5)),
    "numpy_float_reduction": lambda t: t.kl_div(*_inputs(t)[:2], reduction=np.float64(1)),
    "bool_margin": lambda t: t.hinge_embedding_loss(_inputs(t)[0], _inputs(t)[3], True, 2),
    "numpy_margin": lambda t: t.hinge_embedding_loss(_inputs(t)[0], _inputs(t)[3],
                                                     np.float64(0.5), 1),
    "tensor_margin": lambda t: t.hinge_embedding_loss(_inputs(t)[0], _inputs(t)[3],
                                                      t.tensor(0.5), 2),
    "vector_margin": lambda t: t.hinge_embedding_loss(_inputs(t)[0], _inputs(t)[3],
                                                      t.tensor([0.5, 1.0])),
    "none_margin": lambda t: t.hinge_embedding_loss(_inputs(t)[0], _inputs(t)[3], None),
    "string_margin": lambda t: t.margin_ranking_loss(*_inputs(t)[:3], margin="x"),
    "int_swap": lambda t: t.triplet_margin_loss(*_inputs(t)[:3], 1.0, 2.0, 1e-6, 1),
    "numpy_bool_log_target": lambda t: t.kl_div(*_inputs(t)[:2], log_target=np.bool_(True)),
    "list_input": lambda t: t.kl_div([1.0], _inputs(t)[1]),
    "int_weight": lambda t: t.binary_cross_entropy_with_logits(_inputs(t)[0], _inputs(t)[4], 3),
    "int_log_input": lambda t: t.poisson_nll_loss(_inputs(t)[0], _inputs(t)[4], 1, False,
                                                  1e-8, 1),
}


@pytest.mark.parametrize("case", sorted(PARSER))
def test_parser_accepts_and_refuses_as_torchs(case):
    same(PARSER[case])


def _aten_loss_inputs(torch):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, 4, generator=g, dtype=torch.float64)
    x4 = torch.randn(2, 3, 2, 2, generator=g, dtype=torch.float64).log_softmax(1)
    return x, y, torch.tensor([0, 3, 1]), x4.detach().requires_grad_(), torch.tensor(
        [[[0, 1], [2, 1]], [[1, 1], [0, 2]]])


# ember.ops.aten's operators that torch binds nowhere else: the schema's arguments (an int
# reduction, mean by default; another int as each kernel reads it), values, graphs and errors
ATEN_ONLY = {
    "l1_loss": lambda a, x, y, t, x4, t4: a.l1_loss(x, y),
    "l1_loss_none": lambda a, x, y, t, x4, t4: a.l1_loss(x, y, 0),
    "l1_loss_sum": lambda a, x, y, t, x4, t4: a.l1_loss(x, y, 2),
    "l1_loss_other_int": lambda a, x, y, t, x4, t4: a.l1_loss(x, y, -1),
    "l1_loss_broadcast": lambda a, x, y, t, x4, t4: a.l1_loss(x, y[:, :1]),
    "l1_loss_string": lambda a, x, y, t, x4, t4: a.l1_loss(x, y, "mean"),
    "l1_loss_default": lambda a, x, y, t, x4, t4: a.l1_loss.default(x, y, 2),
    "cross_entropy_loss": lambda a, x, y, t, x4, t4: a.cross_entropy_loss(x, t),
    "cross_entropy_loss_weight": lambda a, x, y, t, x4, t4: a.cross_entropy_loss(
        x, t, y[0].abs(), 1, 3),
    "cross_entropy_loss_smoothing": lambda a, x, y, t, x4, t4: a.cross_entropy_loss(
        x, t, None, 0, -100, 0.2),
    "cross_entropy_loss_keywords": lambda a, x, y, t, x4, t4: a.cross_entropy_loss(
        x, t, label_smoothing=0.1, reduction=2),
    "cross_entropy_loss_probabilities": lambda a, x, y, t, x4, t4: a.cross_entropy_loss(
        x, y.softmax(1)),
    "cross_entropy_loss_other_int": lambda a, x, y, t, x4, t4: a.cross_entropy_loss(
        x, t, None, 3),
    "cross_entropy_loss_other_int_smoothing": lambda a, x, y, t, x4, t4: a.cross_entropy_loss(
        x, t, None, 3, -100, 0.1),
    "cross_entropy_loss_other_int_probabilities": lambda a, x, y, t, x4, t4:
        a.cross_entropy_loss(x, y.softmax(1), None, -1),
    "cross_entropy_loss_out_of_range": lambda a, x, y, t, x4, t4: a.cross_entropy_loss(x, t + 4),
    "cross_entropy_loss_float_indices": lambda a, x, y, t, x4, t4: a.cross_entropy_loss(
        x, t.double()[:2]),
    "nll_loss_nd": lambda a, x, y, t, x4, t4: a.nll_loss_nd(x.log_softmax(1), t),
    "nll_loss_nd_spatial": lambda a, x, y, t, x4, t4: a.nll_loss_nd(x4, t4, None, 2, 1),
    "nll_loss_nd_other_int": lambda a, x, y, t, x4, t4: a.nll_loss_nd(x4, t4, None, 3),
    "nll_loss_nd_5d": lambda a, x, y, t, x4, t4: a.nll_loss_nd(x4[None], t4[None]),
    "nll_loss_nd_0d": lambda a, x, y, t, x4, t4: a.nll_loss_nd(x[0, 0], t[0]),
    "nll_loss_nd_batch": lambda a, x, y, t, x4, t4: a.nll_loss_nd(x, t[:2]),
    "nll_loss2d": lambda a, x, y, t, x4, t4: a.nll_loss2d(x4, t4),
    "nll_loss2d_none_ignore": lambda a, x, y, t, x4, t4: a.nll_loss2d(x4, t4, None, 0, 1),
    "nll_loss2d_other_int": lambda a, x, y, t, x4, t4: a.nll_loss2d(x4, t4, None, 3),
    "nll_loss2d_of_2d": lambda a, x, y, t, x4, t4: a.nll_loss2d(x.log_softmax(1), t),
    "nll_loss2d_of_5d": lambda a, x, y, t, x4, t4: a.nll_loss2d(x4[None], t4),
    "nll_loss2d_target_size": lambda a, x, y, t, x4, t4: a.nll_loss2d(x4, t4[:, :1]),
    "smooth_l1_loss": lambda a, x, y, t, x4, t4: a.smooth_l1_loss(x, y),
    "smooth_l1_loss_beta": lambda a, x, y, t, x4, t4: a.smooth_l1_loss(x, y, 0, 0.5),
    "smooth_l1_loss_beta_0": lambda a, x, y, t, x4, t4: a.smooth_l1_loss(x, y, 2, 0.0),
    "smooth_l1_loss_negative_beta": lambda a, x, y, t, x4, t4: a.smooth_l1_loss(x, y, 1, -1.0),
    "huber_loss": lambda a, x, y, t, x4, t4: a.huber_loss(x, y),
    "huber_loss_delta": lambda a, x, y, t, x4, t4: a.huber_loss(x, y, 2, 0.5),
    "huber_loss_delta_keyword": lambda a, x, y, t, x4, t4: a.huber_loss(x, y, delta=2.0),
    "huber_loss_other_int": lambda a, x, y, t, x4, t4: a.huber_loss(x, y, 3),
    "huber_loss_zero_delta": lambda a, x, y, t, x4, t4: a.huber_loss(x, y, 1, 0.0),
    "huber_loss_negative_delta": lambda a, x, y, t, x4, t4: a.huber_loss(x, y, 1, -1.0),
    "huber_loss_shapes": lambda a, x, y, t, x4, t4: a.huber_loss(x, y[:2]),
}


@pytest.mark.parametrize("name", sorted(ATEN_ONLY))
def test_ops_aten_losses_of_the_schema(name):
    def body(torch):
        inputs = _aten_loss_inputs(torch)
        loss = ATEN_ONLY[name](torch.ops.aten, *inputs)
        return loss, torch.autograd.grad(loss.sum(), (inputs[0], inputs[3]), allow_unused=True)
    same(body)
