"""ember.masked's reductions and normalizations against torch.masked (values, dtypes,
grad_fn names, gradients, errors)."""
import pytest

from oracle import same

REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp"]


def _inputs(torch, dtype="float64"):
    torch.manual_seed(0)
    x = torch.randn(3, 4, dtype=torch.float64).to(getattr(torch, dtype))
    mask = torch.tensor([[True, False, True, True], [False, False, False, False],
                         [True, True, False, True]])
    return x, mask


@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(name, dim):
    def body(torch):
        x, mask = _inputs(torch)
        x.requires_grad_()
        fn = getattr(torch.masked, name)
        out = fn(x, dim, mask=mask)
        kept = fn(x, dim, keepdim=True, mask=mask[0])  # a broadcast mask
        unmasked = fn(x, dim)
        grad = torch.autograd.grad(out.sum() if out.isfinite().all() else out.nan_to_num().sum(),
                                   x, allow_unused=True)[0]
        return out, kept, unmasked, out.grad_fn.name(), grad
    same(body)


@pytest.mark.parametrize("dtype", ["int32", "bool", "float32"])
@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "argmax", "argmin", "mean"])
def test_reduction_dtypes(name, dtype):
    def body(torch):
        x, mask = _inputs(torch)
        x = (x * 5).to(getattr(torch, dtype))
        fn = getattr(torch.masked, name)
        dim = 1 if name.startswith("arg") else None
        return fn(x, dim, mask=mask), fn(x, dim, mask=mask, dtype=torch.float64)
    same(body)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin", "cumsum", "cumprod"])
def test_normalizations(name):
    def body(torch):
        x, mask = _inputs(torch)
        x.requires_grad_()
        fn = getattr(torch.masked, name)
        out = fn(x, 1, mask=mask)
        grad = torch.autograd.grad(out.nan_to_num().sum(), x)[0]
        return out, fn(x, -1), out.grad_fn.name(), grad.nan_to_num(), fn(x, 0, mask=mask,
                                                                      dtype=torch.float32)
    same(body)


def test_errors():
    same(lambda torch: torch.masked.sum(torch.ones(2), 0, mask=torch.ones(1, 2, dtype=torch.bool)))
    same(lambda torch: torch.masked.sum(torch.ones(2, 2), (0, 0)))
    same(lambda torch: torch.masked.amax(torch.ones(2, 2), 2))
