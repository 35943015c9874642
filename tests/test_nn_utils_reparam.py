"""nn.utils reparameterizations and fusion against torch 2.13: parametrize (register, remove,
cached, the generated class, errors), parametrizations.weight_norm/spectral_norm, the
hook-based weight_norm/spectral_norm, fuse_conv_bn_eval/fuse_linear_bn_eval, skip_init."""
import warnings

import numpy as np
import pytest
from oracle import same

X = np.random.default_rng(0).standard_normal((4, 3))
IMG = np.random.default_rng(1).standard_normal((1, 2, 5, 5))


def _setp(torch, m, seed=0):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))
    return m


def _x(torch):
    return torch.tensor(X, dtype=torch.float32)


def test_parametrize():
    def body(torch):
        P = torch.nn.utils.parametrize

        class Sym(torch.nn.Module):
            def forward(self, w):
                return w.triu() + w.triu(1).T
        m = _setp(torch, torch.nn.Linear(3, 3))
        P.register_parametrization(m, "weight", Sym())
        names = sorted(n for n, _ in m.named_parameters())
        out = m(_x(torch)).sum()
        out.backward()
        grad = m.parametrizations.weight.original.grad
        with P.cached():
            cached = m.weight is m.weight
        info = (type(m).__name__, P.is_parametrized(m), P.is_parametrized(m, "bias"),
                P.type_before_parametrizations(m).__name__, repr(m))
        P.remove_parametrizations(m, "weight")
        after = (type(m).__name__, sorted(n for n, _ in m.named_parameters()), m.weight)
        try:
            P.remove_parametrizations(m, "weight")
        except ValueError as e:
            err = str(e)
        return names, out, grad, cached, info, after, err
    same(body, grad_fn=False, rtol=1e-5, atol=1e-6)


def test_parametrizations_weight_and_spectral_norm():
    def body(torch):
        PS = torch.nn.utils.parametrizations
        m = _setp(torch, torch.nn.Linear(3, 2))
        PS.weight_norm(m)
        a = (sorted(n for n, _ in m.named_parameters()), m(_x(torch)),
             m.parametrizations.weight.original0)
        m = _setp(torch, torch.nn.Linear(3, 2))
        PS.weight_norm(m, dim=None)
        b = (m.parametrizations.weight.original0, m(_x(torch)))
        m = _setp(torch, torch.nn.Linear(3, 2))
        PS.spectral_norm(m)
        c = (sorted(n for n, _ in m.named_parameters()),
             sorted(n for n, _ in m.named_buffers()), repr(m))
        return a, b, c
    same(body, grad_fn=False, rtol=1e-5, atol=1e-6)


def test_hook_based_weight_norm_and_spectral_norm():
    def body(torch):
        U = torch.nn.utils
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = _setp(torch, torch.nn.Linear(3, 2))
            U.weight_norm(m)
            a = (sorted(n for n, _ in m.named_parameters()), m(_x(torch)))
            with torch.no_grad():
                m.weight_g.mul_(2)
            b = m(_x(torch))
            U.remove_weight_norm(m)
            c = (sorted(n for n, _ in m.named_parameters()), m(_x(torch)))
        m = _setp(torch, torch.nn.Linear(3, 2))
        U.spectral_norm(m)
        d = (sorted(n for n, _ in m.named_parameters()), sorted(n for n, _ in m.named_buffers()))
        errors = []
        for fn in (U.remove_weight_norm, U.remove_spectral_norm):
            try:
                fn(torch.nn.Linear(2, 2))
            except ValueError as e:
                errors.append(str(e))
        return a, b, c, d, errors
    same(body, grad_fn=False, rtol=1e-5, atol=1e-6)


def test_fusion_and_skip_init():
    def body(torch):
        U = torch.nn.utils
        conv = _setp(torch, torch.nn.Conv2d(2, 3, 3)).eval()
        bn = _setp(torch, torch.nn.BatchNorm2d(3), 1).eval()
        with torch.no_grad():
            bn.running_mean.copy_(torch.tensor([0.1, -0.2, 0.3]))
            bn.running_var.copy_(torch.tensor([1.5, 0.5, 2.0]))
        img = torch.tensor(IMG, dtype=torch.float32)
        fused = U.fuse_conv_bn_eval(conv, bn)
        lin = _setp(torch, torch.nn.Linear(3, 3)).eval()
        bn1 = _setp(torch, torch.nn.BatchNorm1d(3), 2).eval()
        fl = U.fuse_linear_bn_eval(lin, bn1)
        return (fused(img), bn(conv(img)), fl(_x(torch)), bn1(lin(_x(torch))),
                type(U.skip_init(torch.nn.Linear, 3, 2)).__name__,
                U.skip_init(torch.nn.Linear, 3, 2).weight.shape)
    same(body, grad_fn=False, rtol=1e-4, atol=1e-5)


def _odd_parametrizations(nn):
    class Shape(nn.Module):
        def forward(self, X):
            return X[:2]

    class Dtype(nn.Module):
        def forward(self, X):
            return X.double()

    class NotATensor(nn.Module):
        def forward(self, X):
            return 1

    class InverseShape(nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return X[:1]

    class InverseDtype(InverseShape):
        def right_inverse(self, X):
            return X.double()

    class InverseNotATensor(InverseShape):
        def right_inverse(self, X):
            return 3
    return Shape, Dtype, NotATensor, InverseShape, InverseDtype, InverseNotATensor


@pytest.mark.parametrize("kind", range(6))
@pytest.mark.parametrize("already_parametrized", [False, True])
def test_parametrize_refuses_what_torch_refuses(kind, already_parametrized):
    def body(torch):
        P = torch.nn.utils.parametrize
        m = torch.nn.Linear(3, 3)
        if already_parametrized:
            P.register_parametrization(m, "weight", torch.nn.Identity())
        P.register_parametrization(m, "weight", _odd_parametrizations(torch.nn)[kind]())
    same(body)


def test_a_parametrization_runs_once_when_registered():
    def body(torch):
        calls = []

        class Noisy(torch.nn.Module):
            def forward(self, X):
                calls.append(tuple(X.shape))
                return X
        m = torch.nn.Linear(2, 2)
        torch.nn.utils.parametrize.register_parametrization(m, "weight", Noisy())
        torch.nn.utils.parametrize.register_parametrization(m, "weight", Noisy())
        return calls
    same(body)


def _assignment_parametrizations(nn):
    class Double(nn.Module):  # no right_inverse
        def forward(self, X):
            return 2 * X

    class Halve(nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return X / 2

    class Split(nn.Module):  # two originals
        def forward(self, a, b):
            return a + b

        def right_inverse(self, X):
            return X * 0.25, X * 0.75

    class SplitWrong(Split):  # assigned: its inverse gives what the originals cannot take
        def __init__(self):
            super().__init__()
            self.registered = False

        def right_inverse(self, X):
            if not self.registered:
                self.registered = True
                return super().right_inverse(X)
            return X.double(), X
    return Double, Halve, Split, SplitWrong


@pytest.mark.parametrize("chain", [(0,), (1, 0), (0, 1), (1,), (2,), (2, 1), (3,)])
def test_assigning_a_parametrized_tensor_matches_torch(chain):
    """Assigning runs every right_inverse in reverse order; torch refuses a parametrization
    without one (registration alone tolerates it) and inverses that give the wrong kind."""
    def body(torch):
        P = torch.nn.utils.parametrize
        torch.manual_seed(0)
        m = torch.nn.Linear(2, 2)
        kinds = _assignment_parametrizations(torch.nn)
        for k in chain:
            P.register_parametrization(m, "weight", kinds[k]())
        m.weight = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        return m.weight, sorted((k, v) for k, v in m.state_dict().items())
    same(body)
