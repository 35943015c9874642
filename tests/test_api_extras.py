"""Smaller names against torch 2.13: Tensor.map2_/new_empty_strided/nonzero_static/prelu,
nn.functional's native_channel_shuffle/assert_int_or_pair/Tensor, nn.factory_kwargs,
nn.init.Tensor."""
import pytest
from oracle import same


def test_tensor_methods():
    def body(torch):
        b = torch.ones(2, 2)
        b.map2_(torch.tensor([1.0, 2.0]), torch.tensor([[3.0], [4.0]]), lambda p, q, r: p + q * r)
        x = torch.ones(2, 3, dtype=torch.float64)
        y = x.new_empty_strided((2, 2), (1, 2), requires_grad=True)
        z = x.new_empty_strided((3,), (2,), dtype=torch.int32)
        w = torch.tensor([0.25], requires_grad=True)
        p = (-torch.arange(6.0).reshape(2, 3)).prelu(w)
        return (b, (y.shape, y.stride(), y.dtype, y.requires_grad), (z.shape, z.dtype),
                p, torch.tensor([[0, 1], [2, 0]]).nonzero_static(size=3, fill_value=-7))
    same(body)


MAP2_ERRORS = {
    "shape": lambda t: t.arange(3.0).map2_(t.ones(2), t.ones(3), lambda p, q, r: p),
    "dtype": lambda t: t.arange(3.0).map2_(t.ones(3, dtype=t.int64), t.ones(3),
                                           lambda p, q, r: p),
    "grad": lambda t: t.ones(3, requires_grad=True).map2_(t.ones(3), t.ones(3),
                                                          lambda p, q, r: p),
}


@pytest.mark.parametrize("name", list(MAP2_ERRORS))
def test_map2_errors(name):
    same(lambda torch: MAP2_ERRORS[name](torch))


def test_functional_names():
    def body(torch):
        F = torch.nn.functional
        out = F.native_channel_shuffle(torch.arange(8.0).reshape(1, 4, 2), 2)
        F.assert_int_or_pair((1, 2), "kernel_size", "{} must be int or pair")
        try:
            F.assert_int_or_pair((1, 2, 3), "kernel_size", "{} must be int or pair")
        except AssertionError as e:
            return out, str(e), F.Tensor is torch.Tensor
    same(body)


FACTORY = {
    "none": None,
    "simple": {"dtype": "float64", "device": "cpu"},
    "nested": {"factory_kwargs": {"dtype": "int32"}, "device": "cpu"},
    "unexpected": {"dtype": "float64", "bias": True},
    "twice": {"factory_kwargs": {"dtype": "int32"}, "dtype": "int64"},
}


@pytest.mark.parametrize("name", list(FACTORY))
def test_factory_kwargs(name):
    def body(torch):
        out = torch.nn.factory_kwargs(FACTORY[name])
        return sorted(out.items()), torch.nn.init.Tensor is torch.Tensor
    same(body)


def test_top_level_max_pool3d():
    def body(torch):
        x = torch.arange(32.0).reshape(1, 1, 2, 4, 4)
        return torch.max_pool3d(x, 2), torch.max_pool3d(x, (1, 2, 2), stride=1, ceil_mode=True)
    same(body)


@pytest.mark.parametrize("args", [((2, 3, 4, 5), (0, 2, 3, 1)), ((2, 3), (1, 0)),
                                  ((2, 3), (0,)), ((2, 3), (0, 0)), ((2, 3), (0, 2))])
def test_empty_permuted(args):
    def body(torch):
        x = torch.empty_permuted(*args, dtype=torch.float64, requires_grad=True)
        return x.shape, x.stride(), x.is_contiguous(), x.requires_grad, x.dtype
    same(body)
