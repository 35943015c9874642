"""nn.EmbeddingBag and F.embedding_bag against torch 2.13: the module (construction, repr,
from_pretrained, padding), the argument errors, and what torch does not differentiate (second
derivatives, forward AD). Values and first derivatives are in the op table."""
import numpy as np
import pytest
from oracle import same

W = np.random.default_rng(0).standard_normal((6, 3))
IDX = [1, 2, 4, 5, 4, 3, 2, 0]


def test_module():
    def body(torch):
        torch.manual_seed(0)
        bag = torch.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=-2)
        out = bag(torch.tensor(IDX), torch.tensor([0, 4]))
        out.pow(2).sum().backward()
        pre = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(W), mode="max",
                                                    include_last_offset=True)
        return (repr(bag), bag.padding_idx, bag.weight[8], out, bag.weight.grad, repr(pre),
                pre.weight.requires_grad, pre(torch.tensor(IDX), torch.tensor([0, 3, 8])),
                repr(torch.nn.EmbeddingBag(4, 2, max_norm=1.0, norm_type=1.0,
                                           scale_grad_by_freq=True)))
    same(body)


def test_max_norm_renormalises_the_rows_used():
    def body(torch):
        weight = torch.tensor(W * 3)
        out = torch.nn.functional.embedding_bag(torch.tensor([[0, 2], [2, 3]]), weight,
                                                max_norm=1.5)
        return out, weight
    same(body)


def _call(torch, idx=IDX, offsets=(0, 3), **kw):
    w = torch.tensor(W)
    return torch.nn.functional.embedding_bag(
        torch.tensor(idx), w, None if offsets is None else torch.tensor(offsets), **kw)


ERRORS = {
    "mode": lambda torch: _call(torch, mode="median"),
    "max_freq": lambda torch: _call(torch, mode="max", scale_grad_by_freq=True),
    "max_sparse": lambda torch: _call(torch, mode="max", sparse=True),
    "weights_mean": lambda torch: _call(torch, per_sample_weights=torch.ones(8)),
    "weights_shape": lambda torch: _call(torch, mode="sum", per_sample_weights=torch.ones(3)),
    "2d_offsets": lambda torch: _call(torch, [[0, 1], [2, 3]]),
    "no_offsets": lambda torch: _call(torch, offsets=None),
    "offsets_2d": lambda torch: _call(torch, offsets=[[0, 1]]),
    "input_3d": lambda torch: _call(torch, [[[0]]], None),
    "weight_1d": lambda torch: torch.nn.functional.embedding_bag(
        torch.tensor([0]), torch.ones(3), torch.tensor([0])),
    "index_range": lambda torch: _call(torch, [0, 6]),
    "negative_index": lambda torch: _call(torch, [0, -1]),
    "first_offset": lambda torch: _call(torch, offsets=(1, 2)),
    "last_offset": lambda torch: _call(torch, offsets=(0, 9)),
    "float_index": lambda torch: torch.nn.functional.embedding_bag(
        torch.tensor([0.0]), torch.tensor(W), torch.tensor([0])),
    "padding_range": lambda torch: _call(torch, padding_idx=6),
    "module_padding": lambda torch: torch.nn.EmbeddingBag(3, 2, padding_idx=3),
    "pretrained_1d": lambda torch: torch.nn.EmbeddingBag.from_pretrained(torch.ones(3)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    same(lambda torch: ERRORS[name](torch))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_second_derivative_raises(mode):
    def body(torch):
        w = torch.tensor(W, requires_grad=True)
        out = torch.nn.functional.embedding_bag(torch.tensor(IDX), w, torch.tensor([0, 3]),
                                                mode=mode)
        g, = torch.autograd.grad(out.pow(2).sum(), w, create_graph=True)
        return g.grad_fn.name(), torch.autograd.grad(g.sum(), w)
    same(body)


def test_per_sample_weights_second_derivative_raises():
    def body(torch):
        w = torch.tensor(W, requires_grad=True)
        psw = torch.tensor(np.linspace(0.5, 1.5, 8), requires_grad=True)
        out = torch.nn.functional.embedding_bag(torch.tensor(IDX), w, torch.tensor([0, 3]),
                                                mode="sum", per_sample_weights=psw)
        gw, gp = torch.autograd.grad(out.pow(2).sum(), (w, psw), create_graph=True)
        names = (gw.grad_fn.name(), gp.grad_fn.name())
        try:
            torch.autograd.grad(gp.sum(), (w, psw))
        except RuntimeError as e:
            return names, str(e)
    same(body)


def test_forward_ad_raises():
    def body(torch):
        fwad = torch.autograd.forward_ad
        with fwad.dual_level():
            w = fwad.make_dual(torch.tensor(W), torch.ones(6, 3, dtype=torch.float64))
            torch.nn.functional.embedding_bag(torch.tensor(IDX), w, torch.tensor([0, 3]))
    same(body, check_warnings=False)  # (torch warns about TorchScript as it loads forward AD)
