"""var, std, var_mean and std_mean of float32 and float16 tensors are torch's to the last bit:
torch's CPU kernels accumulate them in double and round once, as ember now does (a float32
two-pass computation gave another last bit for about half of random rows)."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

CASES = [((2, 6), -1), ((50, 10), -1), ((20, 100), 1), ((1000,), None), ((30, 40), 0),
         ((4, 3, 5), (0, 2))]


def _moments(shape, dim, dtype, seed):
    def body(torch):
        rs = np.random.RandomState(seed)
        x = torch.tensor((rs.randn(*shape) * (1 + rs.rand(*shape) * 10) + 3).astype(dtype))
        args = () if dim is None else (dim,)
        return (x.var(*args), x.std(*args), torch.var(x, *args, correction=0),
                torch.std(x, *args, keepdim=dim is not None), torch.var_mean(x, *args)[0],
                torch.std_mean(x, *args)[0])
    return body


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("shape,dim", CASES)
def test_var_and_std_are_torchs_to_the_last_bit(shape, dim, dtype):
    for seed in range(4):
        same(_moments(shape, dim, dtype, seed), rtol=0, atol=0)


def test_float32_values_whose_squares_overflow_float32_have_a_finite_variance():
    # torch's double accumulation: (2e19 - mean) ** 2 overflows float32, the variance does not;
    # one past float32's range is inf, without a warning
    same(lambda torch: torch.tensor([2e19, -2e19, 0.0, 0.0, 0.0]).var(), rtol=0, atol=0)
    same(lambda torch: torch.tensor([1e20, -1e20, 3e19]).std(0), rtol=0, atol=0)


def test_a_layer_norm_written_by_hand_normalizes_as_torchs():
    # a tutorial's check of its hand-written layer norm: the rows' means of the normalized
    # values are float32 rounding, printed as torch prints them
    def body(torch):
        rs = np.random.RandomState(123)
        out = torch.relu(torch.tensor(rs.randn(2, 6).astype(np.float32), requires_grad=True))
        mean, var = out.mean(dim=-1, keepdim=True), out.var(dim=-1, keepdim=True)
        normed = (out - mean) / torch.sqrt(var)
        checked = normed.mean(dim=-1, keepdim=True)
        return checked, repr(checked), normed.var(dim=-1, keepdim=True)
    same(body, rtol=0, atol=0)
