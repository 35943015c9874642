"""FractionalMaxPool2d/3d and F.fractional_max_pool2d/3d against torch 2.13: with the same
seed the samples are drawn alike, so the pooled values and indices are torch's bit for bit;
the modules' _random_samples buffer, reprs and torch's errors. The op table checks values and
derivatives with given samples."""
import numpy as np
import pytest
from oracle import same

RNG = np.random.default_rng(3)
X2 = RNG.standard_normal((2, 3, 9, 8))
X3 = RNG.standard_normal((2, 2, 6, 7, 5))
U = RNG.uniform(size=(2, 3, 2))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_seeded_draws_are_torch(dtype):
    def body(torch):
        torch.manual_seed(11)
        x2 = torch.tensor(X2.astype(dtype), requires_grad=True)
        x3 = torch.tensor(X3.astype(dtype))
        pool2 = torch.nn.FractionalMaxPool2d((3, 2), output_ratio=(0.5, 0.6),
                                             return_indices=True)
        out2, idx2 = pool2(x2)
        out2.sum().backward()
        out3 = torch.nn.FractionalMaxPool3d(2, output_size=(3, 4, 2))(x3)
        unbatched = torch.nn.functional.fractional_max_pool2d(x2[0], 2, output_size=3)
        after = torch.rand(2)  # the generator advanced as torch's does
        return out2, idx2, x2.grad, out3, unbatched, after, repr(pool2)
    same(body, rtol=0, atol=0)


def test_random_samples_buffer():
    def body(torch):
        samples = torch.tensor(U)
        pool = torch.nn.FractionalMaxPool2d(2, output_size=4, _random_samples=samples)
        x = torch.tensor(X2)
        return pool(x), pool(x), list(dict(pool.named_buffers())), pool.state_dict()
    same(body)


ERRORS = {
    "no_size": lambda t, F: F.fractional_max_pool2d(t.ones(1, 1, 4, 4), 2),
    "ratio_len": lambda t, F: F.fractional_max_pool2d(t.ones(1, 1, 4, 4), 2,
                                                      output_ratio=(0.5, 0.5, 0.5)),
    "ratio_float": lambda t, F: F.fractional_max_pool2d(t.ones(1, 1, 4, 4), 2, output_ratio=0.5),
    "too_big": lambda t, F: F.fractional_max_pool2d(t.ones(1, 1, 4, 4), 2, output_size=4),
    "too_wide": lambda t, F: F.fractional_max_pool2d(t.ones(1, 1, 4, 4), 2, output_size=(3, 4)),
    "too_big_3d": lambda t, F: F.fractional_max_pool3d(t.ones(1, 1, 4, 4, 4), 2,
                                                       output_size=(3, 2, 2)),
    "too_high_3d": lambda t, F: F.fractional_max_pool3d(t.ones(1, 1, 4, 4, 4), 2,
                                                        output_size=(2, 3, 2)),
    "ndim": lambda t, F: F.fractional_max_pool2d(t.ones(2, 3), 2, output_size=1),
    "ndim_given": lambda t, F: F.fractional_max_pool2d(t.ones(4, 4), 2, output_size=2,
                                                       _random_samples=t.rand(1, 4, 2)),
    "ndim_3d_given": lambda t, F: F.fractional_max_pool3d(t.ones(4, 4, 4), 2, output_size=2,
                                                          _random_samples=t.rand(1, 4, 3)),
    "samples_channels": lambda t, F: F.fractional_max_pool2d(
        t.ones(1, 2, 4, 4), 2, output_size=2, _random_samples=t.rand(1, 1, 2)),
    "samples_batch": lambda t, F: F.fractional_max_pool2d(
        t.ones(2, 2, 4, 4), 2, output_size=2, _random_samples=t.rand(1, 2, 2)),
    "samples_dtype": lambda t, F: F.fractional_max_pool2d(
        t.ones(1, 2, 4, 4), 2, output_size=2, _random_samples=t.rand(1, 2, 2, dtype=t.double)),
    "samples_last": lambda t, F: F.fractional_max_pool3d(
        t.ones(1, 2, 4, 4, 4), 2, output_size=2, _random_samples=t.rand(1, 2, 2)),
    "samples_ndim": lambda t, F: F.fractional_max_pool2d(
        t.ones(1, 2, 4, 4), 2, output_size=2, _random_samples=t.rand(2, 2)),
    "int": lambda t, F: F.fractional_max_pool2d(
        t.ones(1, 2, 4, 4, dtype=t.long), 2, output_size=2,
        _random_samples=t.ones(1, 2, 2, dtype=t.long)),
    "empty": lambda t, F: F.fractional_max_pool2d(t.ones(1, 2, 0, 4), 2, output_size=2),
    "empty_3d": lambda t, F: F.fractional_max_pool3d(t.ones(1, 2, 0, 4, 4), 2, output_size=2),
    "kernel_len": lambda t, F: F.fractional_max_pool3d(t.ones(1, 2, 4, 4, 4), (2, 2),
                                                       output_size=2),
    "output_len": lambda t, F: F.fractional_max_pool2d(t.ones(1, 2, 4, 4), 2,
                                                       output_size=(2, 2, 2)),
    "empty_batch": lambda t, F: F.fractional_max_pool2d(t.ones(0, 2, 4, 4), 2,
                                                        output_size=2).shape,
    "zero_output": lambda t, F: F.fractional_max_pool2d(t.ones(1, 2, 4, 4), 2,
                                                        output_size=0).shape,
    "module_none": lambda t, F: t.nn.FractionalMaxPool2d(2),
    "module_both": lambda t, F: t.nn.FractionalMaxPool3d(2, output_size=2, output_ratio=0.5),
    "module_ratio": lambda t, F: t.nn.FractionalMaxPool2d(2, output_ratio=1.5),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors(case):
    same(lambda torch: ERRORS[case](torch, torch.nn.functional))
