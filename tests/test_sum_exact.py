"""Whole sums and means of float32 and float64 tensors on the CPU are torch's to the last bit:
they are added in the order of torch's cascade_sum (see ember/_ops/torch_sum_order.py), up
to torch's grain size, past which torch splits the sum between its threads. So are sums and
means over a contiguous tensor's last dimensions, each row added in that order."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

SIZES = [1, 3, 4, 5, 7, 8, 9, 10, 16, 31, 33, 100, 129, 513, 2049, 4097, 18767, 32768]


def _whole_reductions(n, dtype, shape=None, seed=0):
    def body(torch):
        rs = np.random.RandomState(seed)
        values = (rs.randn(n) * (1 + rs.rand(n) * 100)).astype(dtype)
        x = torch.tensor(values if shape is None else values.reshape(shape))
        return x.sum(), x.mean(), torch.sum(x), torch.mean(x)
    return body


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", SIZES)
def test_whole_sum_and_mean_are_torchs_to_the_last_bit(n, dtype):
    for seed in range(3):
        same(_whole_reductions(n, dtype, seed=seed), rtol=0, atol=0)


def test_a_contiguous_tensor_of_several_dimensions_sums_as_its_elements_in_order():
    same(_whole_reductions(60, "float32", (3, 4, 5)), rtol=0, atol=0)
    same(_whole_reductions(4096, "float32", (64, 64)), rtol=0, atol=0)


ROW_SHAPES = [(2, 6), (3, 3), (4, 5), (5, 8), (3, 10), (7, 33), (3, 100), (4, 513), (2, 3, 7),
              (4, 2, 65), (8, 4096)]


def _row_reductions(shape, dtype, seed):
    def body(torch):
        rs = np.random.RandomState(seed)
        x = torch.tensor((rs.randn(*shape) * (1 + rs.rand(*shape) * 100)).astype(dtype))
        last_two = tuple(range(max(0, x.ndim - 2), x.ndim))
        return (x.sum(-1), x.mean(-1), x.sum(-1, keepdim=True), x.mean(dim=-1, keepdim=True),
                x.sum(last_two), torch.mean(x, last_two, keepdim=True),
                x.sum(tuple(range(x.ndim))))
    return body


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_sums_and_means_over_the_last_dims_are_torchs_to_the_last_bit(shape, dtype):
    for seed in range(3):
        same(_row_reductions(shape, dtype, seed), rtol=0, atol=0)


def test_ten_batch_losses_average_as_torchs():
    # ten float32 losses averaged with torch.tensor(losses).mean(), as programs average them
    losses = [2.2714, 2.2689, 2.2843, 2.2751, 2.2598, 2.2802, 2.2666, 2.2731, 2.2757, 2.2621]
    same(lambda torch: torch.tensor(losses).mean().item(), rtol=0, atol=0)


@pytest.mark.parametrize("n", [3, 9, 100])
def test_a_sum_of_negative_zeros_is_positive_zero(n):
    same(lambda torch: torch.signbit(torch.full((n,), -0.0).sum()))


def test_the_gradient_and_other_sums_are_unchanged():
    def body(torch):
        x = torch.tensor(np.linspace(0.5, 3, 40, dtype=np.float32).reshape(5, 8),
                         requires_grad=True)
        y = (x * x).sum()
        y.backward()
        # a strided view, a dtype argument, a dim: NumPy's sums, close to torch's
        return y, x.grad, x.detach().t().sum(), x.detach().sum(dtype=torch.float64), \
            x.detach().sum(1)
    same(body, rtol=1e-6)
