"""MaxUnpool1d/2d/3d, MaxPool3d, AvgPool3d, LPPool3d, AdaptiveAvg/MaxPool3d against torch 2.13:
the modules (repr, round trips through unpooling with output_size) and the functions' errors.
Values and derivatives are in the op table."""
import numpy as np
import pytest
from oracle import same

X = np.random.default_rng(0).standard_normal((1, 2, 5, 4))


def test_round_trip():
    def body(torch):
        x = torch.tensor(X, requires_grad=True)
        pool, unpool = torch.nn.MaxPool2d(2, return_indices=True), torch.nn.MaxUnpool2d(2)
        out, idx = pool(x)
        back = unpool(out, idx, output_size=x.size())
        back.pow(2).sum().backward()
        one = torch.nn.MaxUnpool1d(2)(*torch.nn.functional.max_pool1d(x[0, :, 0], 2,
                                                                       return_indices=True))
        return (repr(unpool), repr(torch.nn.MaxUnpool1d(3, 2, 1)),
                repr(torch.nn.MaxUnpool3d((1, 2, 3))), back, x.grad, one)
    same(body)


def _ones(torch, *shape):
    return torch.ones(*shape), torch.zeros(*shape, dtype=torch.long)


ERRORS = {
    "index_high": lambda t, F: F.max_unpool2d(t.ones(1, 1, 1, 1), t.tensor([[[[99]]]]), 2),
    "index_negative": lambda t, F: F.max_unpool3d(t.ones(1, 1, 1, 1, 1),
                                                  t.tensor([[[[[-1]]]]]), 2),
    "shape": lambda t, F: F.max_unpool2d(t.ones(1, 1, 2, 2),
                                         t.zeros(1, 1, 2, 1, dtype=t.long), 2),
    "int32": lambda t, F: F.max_unpool2d(t.ones(1, 1, 2, 2), t.zeros(1, 1, 2, 2, dtype=t.int),
                                         2),
    "ndim": lambda t, F: F.max_unpool2d(*_ones(t, 2, 2), 2),
    "ndim_3d": lambda t, F: F.max_unpool3d(*_ones(t, 2, 2, 2), 2),
    "output_range": lambda t, F: F.max_unpool2d(*_ones(t, 1, 1, 2, 2), 2, output_size=(9, 9)),
    "output_length": lambda t, F: F.max_unpool2d(*_ones(t, 1, 1, 2, 2), 2,
                                                 output_size=(9, 9, 9)),
    "empty_channels": lambda t, F: F.max_unpool2d(*_ones(t, 1, 0, 2, 2), 2),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    same(lambda torch: ERRORS[name](torch, torch.nn.functional))


ADAPTIVE_ERRORS = {
    "ndim": lambda t, F: F.adaptive_avg_pool3d(t.ones(2, 3), 2),
    "empty": lambda t, F: F.adaptive_avg_pool3d(t.ones(1, 0, 2, 2, 2), 2),
    "size_length": lambda t, F: F.adaptive_avg_pool3d(t.ones(1, 1, 2, 2, 2), (2, 2)),
}


@pytest.mark.parametrize("name", list(ADAPTIVE_ERRORS))
def test_adaptive_avg_pool3d_errors(name):
    same(lambda torch: ADAPTIVE_ERRORS[name](torch, torch.nn.functional))


def test_adaptive_avg_pool3d_module():
    def body(torch):
        pool = torch.nn.AdaptiveAvgPool3d((2, None, 1))
        x = torch.tensor(np.arange(48.0).reshape(1, 2, 3, 4, 2), requires_grad=True)
        out = pool(x)
        out.sum().backward()
        return repr(pool), out, x.grad, torch.nn.AdaptiveAvgPool3d(1)(x).grad_fn.name()
    same(body)


AVG3D_ERRORS = {
    "kernel_too_big": lambda t, F: F.avg_pool3d(t.ones(1, 2, 3, 4, 5), (4, 1, 1)),
    "padding": lambda t, F: F.avg_pool3d(t.ones(1, 2, 3, 4, 5), 2, padding=2),
    "ndim": lambda t, F: F.avg_pool3d(t.ones(3, 4, 5), 2),
    "divisor": lambda t, F: F.avg_pool3d(t.ones(1, 2, 3, 4, 5), 2, divisor_override=0),
    "stride": lambda t, F: F.avg_pool3d(t.ones(1, 2, 3, 4, 5), 2, stride=0),
}


@pytest.mark.parametrize("name", list(AVG3D_ERRORS))
def test_avg_pool3d_errors(name):
    same(lambda torch: AVG3D_ERRORS[name](torch, torch.nn.functional))


def test_avg_pool3d_module():
    def body(torch):
        pool = torch.nn.AvgPool3d((1, 2, 2), stride=1, ceil_mode=True, count_include_pad=False)
        x = torch.tensor(np.arange(48.0).reshape(1, 2, 3, 4, 2), requires_grad=True)
        out = pool(x)
        out.sum().backward()
        return repr(pool), repr(torch.nn.AvgPool3d(2)), out, x.grad
    same(body)


MAX3D_ERRORS = {
    "output_small": lambda t, F: F.max_pool3d(t.ones(1, 2, 3, 4, 5), (4, 1, 1)),
    "padding": lambda t, F: F.max_pool3d(t.ones(1, 2, 3, 4, 5), 2, padding=2),
    "ndim": lambda t, F: F.max_pool3d(t.ones(3, 4, 5), 2),
    "stride": lambda t, F: F.max_pool3d(t.ones(1, 2, 3, 4, 5), 2, stride=0),
    "dilation": lambda t, F: F.max_pool3d(t.ones(1, 2, 3, 4, 5), 2, dilation=0),
}


@pytest.mark.parametrize("name", list(MAX3D_ERRORS))
def test_max_pool3d_errors(name):
    same(lambda torch: MAX3D_ERRORS[name](torch, torch.nn.functional))


def test_max_and_lp_pool3d_modules():
    def body(torch):
        x = torch.tensor(np.random.default_rng(3).standard_normal((1, 2, 4, 4, 3)),
                         requires_grad=True)
        pool = torch.nn.MaxPool3d((2, 2, 1), stride=1, dilation=(1, 2, 1), return_indices=True)
        out, idx = pool(x)
        lp = torch.nn.LPPool3d(2, 2, stride=(1, 2, 1))
        lp_out = lp(x)
        inf = torch.nn.functional.lp_pool3d(x, float("inf"), 2)
        (out.sum() + lp_out.sum() + inf.sum()).backward()
        back = torch.nn.MaxUnpool3d((2, 2, 1), stride=1)(out, idx, output_size=(4, 4, 3))
        return repr(pool), repr(lp), out, idx, lp_out, inf, x.grad, back
    same(body)


ADAPTIVE_MAX_ERRORS = {
    "ndim": lambda t, F: F.adaptive_max_pool3d(t.ones(2, 3), 2),
    "size_length": lambda t, F: F.adaptive_max_pool3d(t.ones(1, 1, 2, 2, 2), (2, 2)),
    "empty": lambda t, F: F.adaptive_max_pool3d(t.ones(1, 0, 2, 2, 2), 2),
}


@pytest.mark.parametrize("name", list(ADAPTIVE_MAX_ERRORS))
def test_adaptive_max_pool3d_errors(name):
    same(lambda torch: ADAPTIVE_MAX_ERRORS[name](torch, torch.nn.functional))


def test_adaptive_max_pool3d_module():
    def body(torch):
        x = torch.tensor(np.random.default_rng(4).standard_normal((2, 3, 5, 4)),
                         requires_grad=True)
        pool = torch.nn.AdaptiveMaxPool3d((2, None, 3), return_indices=True)
        out, idx = pool(x)
        out.sum().backward()
        with_idx = torch.nn.functional.adaptive_max_pool3d_with_indices(x, 2)
        return repr(pool), out, idx, x.grad, with_idx
    same(body)
