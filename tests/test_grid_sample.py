"""grid_sample / affine_grid against torch 2.13: second derivatives of the sampler in every
mode (the op table checks values, first derivatives and gradgradcheck), the warnings about
align_corners, torch's errors, and the F.GRID_SAMPLE_* tables."""
import numpy as np
import pytest
from oracle import same

RNG = np.random.default_rng(0)
X2, G2 = RNG.standard_normal((2, 2, 3, 4)), RNG.uniform(-1.25, 1.25, (2, 3, 2, 2))
X3, G3 = RNG.standard_normal((1, 2, 2, 3, 4)), RNG.uniform(-1.25, 1.25, (1, 2, 2, 3, 3))
W = RNG.standard_normal(64)


@pytest.mark.parametrize("mode,pad,nd", [("bilinear", "reflection", 2), ("bicubic", "zeros", 2),
                                         ("nearest", "border", 2), ("bilinear", "border", 3)])
def test_double_backward(mode, pad, nd):
    def body(torch):
        x, g = (X2, G2) if nd == 2 else (X3, G3)
        x, g = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
        y = torch.nn.functional.grid_sample(x, g, mode=mode, padding_mode=pad,
                                            align_corners=True)
        w = torch.tensor(W[:y.numel()].reshape(y.shape))
        gx, gg = torch.autograd.grad((y * w).sum(), (x, g), create_graph=True)
        second = torch.autograd.grad((gx.sin().sum() + (gg * gg).sum()), (x, g),
                                     allow_unused=True)
        return y, gx.detach(), gg.detach(), second
    same(body, rtol=1e-9, atol=1e-12)


def test_modes_and_warnings():
    def body(torch):
        F = torch.nn.functional
        y = F.grid_sample(torch.tensor(X2), torch.tensor(G2))
        grid = F.affine_grid(torch.tensor([[[1.0, 0.2, 0.1], [0.0, 0.9, -0.3]]]), (1, 1, 2, 3))
        unit = F.affine_grid(torch.eye(2, 3)[None], (1, 1, 1, 3), align_corners=True)
        return (y, grid, unit, F.GRID_SAMPLE_INTERPOLATION_MODES, F.GRID_SAMPLE_PADDING_MODES,
                torch.grid_sampler(torch.tensor(X2), torch.tensor(G2), 2, 2, True))
    same(body, rtol=1e-12, atol=1e-12)


def _g(t, *shape, dtype=None):
    return t.zeros(*shape, dtype=dtype)


ERRORS = {
    "dtype": lambda t, F: F.grid_sample(t.ones(1, 1, 2, 2), _g(t, 1, 2, 2, 2, dtype=t.double),
                                        align_corners=False),
    "batch": lambda t, F: F.grid_sample(t.ones(2, 1, 2, 2), _g(t, 1, 2, 2, 2),
                                        align_corners=False),
    "last_dim": lambda t, F: F.grid_sample(t.ones(1, 1, 2, 2), _g(t, 1, 2, 2, 3),
                                           align_corners=False),
    "ndim": lambda t, F: F.grid_sample(t.ones(1, 1, 2, 2), _g(t, 1, 2, 2, 2, 3),
                                       align_corners=False),
    "empty": lambda t, F: F.grid_sample(t.ones(1, 1, 0, 2), _g(t, 1, 2, 2, 2),
                                        align_corners=False),
    "bicubic_3d": lambda t, F: F.grid_sample(t.ones(1, 1, 2, 2, 2), _g(t, 1, 2, 2, 2, 3),
                                             mode="bicubic", align_corners=False),
    "mode": lambda t, F: F.grid_sample(t.ones(1, 1, 2, 2), _g(t, 1, 2, 2, 2), mode="area"),
    "padding": lambda t, F: F.grid_sample(t.ones(1, 1, 2, 2), _g(t, 1, 2, 2, 2),
                                          padding_mode="wrap"),
    "int": lambda t, F: F.grid_sample(t.ones(1, 1, 2, 2, dtype=t.long),
                                      _g(t, 1, 2, 2, 2, dtype=t.long), align_corners=False),
    "int_3d": lambda t, F: t.grid_sampler_3d(t.ones(1, 1, 2, 2, 2, dtype=t.long),
                                             _g(t, 1, 2, 2, 2, 3, dtype=t.long), 0, 0, False),
    "2d_given_5d": lambda t, F: t.grid_sampler_2d(t.ones(1, 1, 2, 2, 2), _g(t, 1, 2, 2, 2, 3),
                                                  0, 0, False),
    "3d_given_4d": lambda t, F: t.grid_sampler_3d(t.ones(1, 1, 2, 2), _g(t, 1, 2, 2, 2),
                                                  0, 0, False),
    "empty_batch": lambda t, F: F.grid_sample(t.ones(0, 1, 2, 2), _g(t, 0, 2, 2, 2),
                                              align_corners=False).shape,
    "theta_int": lambda t, F: F.affine_grid(t.ones(1, 2, 3, dtype=t.long), (1, 1, 2, 2),
                                            align_corners=False),
    "theta_shape": lambda t, F: F.affine_grid(t.ones(1, 3, 3), (1, 1, 2, 2), align_corners=False),
    "theta_shape_3d": lambda t, F: F.affine_grid(t.ones(1, 2, 3), (1, 1, 2, 2, 2),
                                                 align_corners=False),
    "size_len": lambda t, F: F.affine_grid(t.ones(1, 2, 3), (1, 1, 2), align_corners=False),
    "size_zero": lambda t, F: F.affine_grid(t.ones(1, 2, 3), (1, 1, 0, 2), align_corners=False),
    "theta_batch": lambda t, F: F.affine_grid(t.ones(2, 2, 3), (1, 1, 2, 2), align_corners=False),
    "generator_size": lambda t, F: t.affine_grid_generator(t.ones(1, 2, 3), (1, 1, 2), False),
    "generator_theta": lambda t, F: t.affine_grid_generator(t.ones(1, 3, 3), (1, 1, 2, 2),
                                                            False),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors(case):
    same(lambda torch: ERRORS[case](torch, torch.nn.functional))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("pad", ["border", "reflection"])
def test_nan_and_huge_coordinates_clip_to_an_edge(mode, pad):
    """A NaN coordinate clips to the first pixel in torch's 2-D kernel and to the last in its
    3-D one; a huge one to the nearer edge."""
    def body(torch):
        nan = float("nan")
        x2 = torch.tensor(np.arange(6.0).reshape(1, 1, 2, 3) + 1)
        g2 = torch.tensor([[[[nan, 1e30], [0.25, nan]]]], dtype=torch.double)
        x3 = torch.tensor(np.arange(12.0).reshape(1, 1, 2, 2, 3) + 1)
        g3 = torch.tensor([[[[[nan, 0.0, -1.0], [0.5, nan, -1.0]]]]], dtype=torch.double)
        F = torch.nn.functional
        return (F.grid_sample(x2, g2, mode=mode, padding_mode=pad, align_corners=True),
                F.grid_sample(x3, g3, mode=mode, padding_mode=pad, align_corners=True))
    same(body)
