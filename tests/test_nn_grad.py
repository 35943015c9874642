"""ember.nn.grad's convolution gradients against torch.nn.grad (values, dtypes, node names,
and their own gradients)."""
import pytest

from oracle import same

CONFIGS = [dict(), dict(stride=2, padding=1), dict(dilation=2, padding=2, groups=2),
           dict(stride=(2, 1, 3), padding=(0, 1, 1))]


def _inputs(torch, n, config):
    torch.manual_seed(0)
    spatial = (7, 6, 8)[:n]
    x = torch.randn(2, 4, *spatial, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, 4 // config.get("groups", 1), *(3, 2, 3)[:n], dtype=torch.float64,
                    requires_grad=True)
    options = {k: (v[:n] if isinstance(v, tuple) else v) for k, v in config.items()}
    out = getattr(torch.nn.functional, f"conv{n}d")(x, w, **options)
    g = torch.randn(out.shape, dtype=torch.float64, requires_grad=True)
    return x, w, g, options


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_conv_gradients(n, config):
    def body(torch):
        x, w, g, options = _inputs(torch, n, config)
        gi = getattr(torch.nn.grad, f"conv{n}d_input")(x.shape, w, g, **options)
        gw = getattr(torch.nn.grad, f"conv{n}d_weight")(x, w.shape, g, **options)
        # their own derivatives (differentiable as torch's)
        second = torch.autograd.grad((gi.sum() + (gw * gw).sum()), (w, g, x))
        return gi, gw, gi.grad_fn.name(), gw.grad_fn.name(), second
    same(body)


def test_conv_gradients_match_autograd():
    def body(torch):
        x, w, g, options = _inputs(torch, 2, dict(stride=2, padding=1))
        out = torch.nn.functional.conv2d(x, w, **options)
        gx, gw = torch.autograd.grad(out, (x, w), g)
        return (torch.nn.grad.conv2d_input(list(x.shape), w, g, **options) - gx).abs().max(), \
            (torch.nn.grad.conv2d_weight(x, list(w.shape), g, **options) - gw).abs().max()
    same(body, atol=1e-12)
