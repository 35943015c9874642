"""nn.utils.parametrizations.orthogonal against torch 2.13: every map, with and without
trivialization, square, tall, wide and batched weights: the weight, the original it comes
from, the gradient reaching it, assignment (right_inverse, with torch's random completion of a
non-square matrix) and the errors."""
import numpy as np
import pytest
from oracle import same

GEN = np.random.default_rng(2)
ASSIGN = {shape: np.linalg.qr(GEN.standard_normal(shape[:-2] + (max(shape[-2:]),) * 2))[0][
    ..., :shape[-2], :shape[-1]] for shape in [(3, 3), (4, 2), (2, 4), (2, 3, 3)]}


def _orthogonal(torch, shape, omap, triv):
    torch.manual_seed(0)
    m = torch.nn.Linear(shape[-1], shape[-2], bias=False).double()
    if len(shape) == 3:
        m.weight = torch.nn.Parameter(torch.randn(*shape, dtype=torch.float64))
    torch.nn.utils.parametrizations.orthogonal(m, orthogonal_map=omap,
                                               use_trivialization=triv)
    w, original = m.weight, m.parametrizations.weight.original
    g, = torch.autograd.grad((w * torch.arange(float(w.numel())).reshape(w.shape)).sum(),
                             original)
    out = [type(m).__name__, w.detach(), original.detach(), g]
    with torch.no_grad():
        m.weight = torch.tensor(ASSIGN[shape])
    return out + [m.weight.detach(), m.parametrizations.weight.original.detach()]


@pytest.mark.parametrize("triv", [True, False], ids=["trivialization", "direct"])
@pytest.mark.parametrize("omap", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 3)],
                         ids=["square", "tall", "wide", "batch"])
def test_orthogonal(shape, omap, triv):
    same(lambda torch: _orthogonal(torch, shape, omap, triv), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda t: t.nn.utils.parametrizations.orthogonal(t.nn.Linear(3, 3), "nope"),
    lambda t: t.nn.utils.parametrizations.orthogonal(t.nn.Linear(3, 3), "bias"),
    lambda t: t.nn.utils.parametrizations.orthogonal(t.nn.Linear(3, 3), orthogonal_map="foo"),
    lambda t: t.nn.utils.parametrizations.orthogonal(t.nn.Linear(3, 3, bias=False).to(
        t.complex128), orthogonal_map="householder"),
    lambda t: setattr(t.nn.utils.parametrizations.orthogonal(t.nn.Linear(3, 3)), "weight",
                      t.ones(2, 3)),
])
def test_orthogonal_errors(call):
    same(call, check_warnings=False)


def test_orthogonal_repr():
    same(lambda torch: repr(torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(3, 2))))
