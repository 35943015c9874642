"""What a function under vmap reads of autograd: torch's batched tensor has no autograd metadata
of its own, so its inputs and the results of its ops report requires_grad False, a leaf, no
grad_fn, whatever records the batch outside; a grad, vjp or jacrev called inside the vmap wraps
them in tensors that record (jvp and jacfwd do not). The vmap's outputs require grad. Against
torch 2.13."""
import pytest
from oracle import same


def _flags(t):
    return (t.requires_grad, t.is_leaf, t.grad_fn is None)


def _seen_inside(torch, transform, x):
    seen = []

    def f(y):
        z = y * 2
        seen.append((_flags(y), _flags(z)))
        return z.sum()
    func = torch.func
    if transform == "vmap":
        out = func.vmap(lambda y: f(y) * 1)(x)
    elif transform == "vmap_of_vmap":
        out = func.vmap(func.vmap(f))(x.unsqueeze(-1).expand(2, 3, 4))
    elif transform == "grad_of_vmap":
        out = func.grad(lambda a: func.vmap(f)(a).sum())(x.detach())
    elif transform == "vmap_of_grad":
        out = func.vmap(func.grad(f))(x)
    elif transform == "vmap_of_vjp":
        out = func.vmap(lambda a: func.vjp(f, a)[0])(x)
    elif transform == "vmap_of_jacrev":
        out = func.vmap(func.jacrev(f))(x)
    elif transform == "vmap_of_jvp":
        out = func.vmap(lambda a: func.jvp(f, (a,), (a,))[1])(x)
    else:
        out = func.vmap(func.jacfwd(f))(x)
    # NOTE: under grad/vjp/jacrev the input's is_leaf and grad_fn differ from torch's (ember
    # records the function on the batch's physical values): only requires_grad is compared
    if transform in ("vmap_of_grad", "vmap_of_vjp", "vmap_of_jacrev"):
        seen = [(y[0], z) for y, z in seen]
    return out, _flags(out), seen


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("transform", ["vmap", "vmap_of_vmap", "grad_of_vmap", "vmap_of_grad",
                                       "vmap_of_vjp", "vmap_of_jacrev", "vmap_of_jvp",
                                       "vmap_of_jacfwd"])
def test_autograd_flags_inside_vmap_as_torch(transform, requires_grad):
    if transform == "vmap_of_jacfwd" and requires_grad:
        pytest.xfail("ember's jacfwd under vmap (computed in reverse mode) is not recorded by "
                     "the graph outside: torch's result requires grad (ViewBackward0)")
    same(lambda torch: _seen_inside(torch, transform,
                                    torch.ones(2, 3, requires_grad=requires_grad)))


def test_vmap_of_identity_returns_the_input_as_torch():
    """Inside: no flags; the output is the input itself, a leaf that requires grad."""
    def run(torch):
        seen = []
        x = torch.ones(2, 3, requires_grad=True)
        out = torch.func.vmap(lambda y: seen.append(_flags(y)) or y)(x)
        return seen, _flags(out), out is x
    same(run)


def test_vmap_over_a_graph_records_the_outputs_as_torch():
    """A non-leaf batch: its ops under vmap report nothing, the output has its grad_fn."""
    def run(torch):
        seen = []
        x = torch.ones(2, 3, requires_grad=True) * 3

        def f(y):
            z = y.sin()
            seen.append((_flags(y), _flags(z)))
            return z
        out = torch.func.vmap(f)(x)
        out.sum().backward()
        return seen, _flags(out), type(out.grad_fn).__name__
    same(run)
