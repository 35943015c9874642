"""jacfwd computed in reverse mode (under vmap, inside jvp) refuses as torch's forward mode
does: an op torch gives no forward-mode formula for, reached by the inputs' tangents, raises
torch's NotImplementedError (not an op only a captured tensor reaches), and a complex output
gives jacfwd's error, not jacrev's. Against torch 2.13."""
import pytest
from oracle import same


def _x(torch):
    return torch.linspace(0.5, 1.5, 6, dtype=torch.float64).reshape(2, 3)


def _vmap_jacfwd(torch, f):
    return torch.func.vmap(torch.func.jacfwd(f))(_x(torch))


def _ones(torch, **kw):
    return torch.ones(3, dtype=torch.float64, **kw)


def _captured_igamma(torch):
    w = _ones(torch, requires_grad=True)  # (made outside: no tangent reaches it)
    return _vmap_jacfwd(torch, lambda v: v * torch.special.gammainc(_ones(torch), w))


CASES = {
    "igamma": lambda torch: _vmap_jacfwd(torch, lambda v: torch.special.gammainc(v, v)),
    "igamma_other": lambda torch: _vmap_jacfwd(
        torch, lambda v: torch.special.gammainc(_ones(torch), v)),
    "igamma_captured_only": lambda torch: _captured_igamma(torch),
    "cholesky": lambda torch: torch.func.vmap(torch.func.jacfwd(
        lambda v: torch.cholesky(v[:, None] * v + torch.eye(3, dtype=torch.float64))))(
        _x(torch)),
    "huber_loss_backward": lambda torch: _vmap_jacfwd(
        torch, lambda v: torch.ops.aten.huber_loss_backward(v, v, v, 1, 1.0)),
    "multi_margin_loss": lambda torch: _vmap_jacfwd(
        torch, lambda v: torch.nn.functional.multi_margin_loss(v[None], torch.tensor([1]))),
    "sin": lambda torch: _vmap_jacfwd(torch, torch.sin),
    "complex_output": lambda torch: _vmap_jacfwd(torch, lambda v: v * 1j),
    "jacfwd_inside_jvp": lambda torch: torch.func.jvp(
        torch.func.jacfwd(lambda v: torch.special.gammainc(v, v)), (_x(torch)[0],),
        (_x(torch)[0],)),
}


@pytest.mark.parametrize("case", CASES)
def test_reverse_mode_jacfwd_refuses_as_torch(case):
    same(CASES[case], check_warnings=False)
