"""ember.distributions against torch.distributions.

Every distribution (tests/distributions_cases.py) is built alike in both libraries and compared:
shapes, reprs, supports, moments, entropy, log_prob / cdf / icdf at torch's samples, expand,
enumerate_support, and the gradients of all of these through the parameters. Samples cannot
be compared value for value (ember's random stream is not torch's), so they are checked by
what does not depend on the stream: shapes and dtypes, support, moments (seeded, with bounds of
several standard errors), and reparameterised gradients, which must be torch's at ember's
sample values (by three routes, see below).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
from tests.distributions_cases import CASES, KL_FACTORIES, C, kl_params
from tests.oracle import assert_close, error_of, plain, run, same, torch_or_skip

_BY_NAME = {c.name: c for c in CASES}
_IDS = [c.name for c in CASES]


def _build(mod, case):
    args = []
    for p in case.params:
        if isinstance(p, C):
            args.append(mod.tensor(p.value, dtype=mod.float64))
        elif isinstance(p, np.ndarray):
            args.append(mod.tensor(p, dtype=mod.float64, requires_grad=True))
        else:
            args.append(p)
    return case.make(mod, *args), [a for a in args if getattr(a, "requires_grad", False)]


def _torch_values(case):
    """Values to score: torch's samples (two per batch entry), as a NumPy array."""
    torch = torch_or_skip()
    dist, _ = _build(torch, case)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's Wishart warns of singular samples)
        return dist.sample((2,)).numpy()


def _methods(mod, case, values):
    """Everything comparable between the libraries (each item computed on its own, so an
    error in one is compared as an error)."""
    dist, params = _build(mod, case)
    value = mod.tensor(values)
    q = mod.full(tuple(dist.batch_shape + dist.event_shape), 0.3, dtype=mod.float64)
    items = {
        "shapes": lambda: (dist.batch_shape, dist.event_shape),
        "repr": lambda: repr(dist), "support": lambda: repr(dist.support),
        "flags": lambda: (dist.has_rsample, dist.has_enumerate_support),
        "mean": lambda: dist.mean, "mode": lambda: dist.mode, "variance": lambda: dist.variance,
        "stddev": lambda: dist.stddev, "entropy": lambda: dist.entropy(),
        "perplexity": lambda: dist.perplexity(), "log_prob": lambda: dist.log_prob(value),
        "cdf": lambda: dist.cdf(value), "icdf": lambda: dist.icdf(q),
        "enumerate_support": lambda: (dist.enumerate_support(),
                                      dist.enumerate_support(expand=False)),
        "expand": lambda: _expanded(mod, dist, value),
        "grads": lambda: _grads(mod, dist, params, value),
    }
    out = {}
    for name, fn in items.items():
        outcome = run(lambda _mod, fn=fn: fn(), mod)
        out[name] = outcome.error or outcome.value
    return out


def _expanded(mod, dist, value):
    big = dist.expand((4,) + tuple(dist.batch_shape))
    return big.batch_shape, big.event_shape, big.log_prob(value[:1]), type(big).__name__


def _grads(mod, dist, params, value):
    """Gradients of log_prob (and entropy and mean, where defined) w.r.t. the parameters."""
    total = dist.log_prob(value).sum()
    for extra in (lambda: dist.entropy(), lambda: dist.mean, lambda: dist.variance):
        try:
            v = extra()
        except NotImplementedError:
            continue
        if v.requires_grad:
            total = total + ember_or_torch_nan_free(mod, v).sum()
    return mod.autograd.grad(total, params, allow_unused=True)


def ember_or_torch_nan_free(mod, v):
    """``v`` with its undefined (NaN / inf) entries zeroed, so they add no NaN gradient."""
    return mod.where(mod.isfinite(v), v, mod.zeros_like(v))


@pytest.mark.parametrize("name", _IDS)
def test_against_torch(name):
    torch = torch_or_skip()
    case = _BY_NAME[name]
    values = _torch_values(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's Wishart warns of singular samples)
        t = _methods(torch, case, values)
        e = _methods(ember, case, values)
    assert t.keys() == e.keys()
    for key in t:
        assert_close(t[key], e[key], rtol=1e-7, atol=1e-9, path=f"{name}.{key}",
                     grad_fn=False)
    del torch


def test_gamma_cdf_gradients():
    """Gamma's CDF is ember.special.gammainc: differentiable in the value and the rate, not in
    the concentration (torch has no derivative of igamma in its first argument)."""
    def body(torch):
        def pair():
            c, r, x = (torch.tensor(v, dtype=torch.float64, requires_grad=True)
                       for v in ([0.5, 2.0, 3.5], [1.0, 0.7, 2.0], [0.3, 1.5, 2.0]))
            return (c, r, x), torch.distributions.Gamma(c, r).cdf(x)
        (_, r, x), y = pair()
        (c, _, _), y2 = pair()
        return [y, torch.autograd.grad(y.sum(), (x, r)),
                error_of(lambda: torch.autograd.grad(y2.sum(), c)),
                torch.distributions.Chi2(torch.tensor([3.0])).cdf(torch.tensor([2.0]))]
    same(body)


# -- sampling -----------------------------------------------------------------------------------
# (heavy tails: no finite variance to bound the sample mean with)
_NO_MOMENTS = {"Cauchy", "HalfCauchy", "VonMises", "LKJCholesky", "Wishart", "Wishart_tril"}


@pytest.mark.parametrize("name", _IDS)
def test_sample_statistics(name):
    """Shapes, dtype and support of seeded samples; their mean within 6 standard errors."""
    torch = torch_or_skip()
    case = _BY_NAME[name]
    dist, _ = _build(ember, case)
    tdist, _ = _build(torch, case)
    n = 1000
    ember.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Wishart's "singular sample" warning (as torch's)
        s = dist.sample((n,))
        again = dist.sample((2, 3))
        ember.manual_seed(0)
        assert np.array_equal(dist.sample((n,)).numpy(), s.numpy()), "a seed repeats"
        t = tdist.sample((2, 3))
        if dist.has_rsample:
            r = dist.rsample((2, 3))
            assert tuple(r.shape) == tuple(t.shape)
            assert r.requires_grad == tdist.rsample().requires_grad
    assert tuple(again.shape) == tuple(t.shape)
    assert plain(again.dtype, ember) == plain(t.dtype, torch)
    assert not s.requires_grad
    assert bool(dist.support.check(s).all()), "samples outside the support"
    try:
        mean = dist.mean.detach().numpy()
        var = dist.variance.detach().numpy()
    except NotImplementedError:  # (as in torch: relaxed and logistic-normal laws)
        return
    if name in _NO_MOMENTS:
        return
    finite = np.isfinite(mean) & np.isfinite(var)
    got = s.double().mean(0).numpy()
    bound = 6 * np.sqrt(var / n) + 1e-9
    assert np.all(np.abs(got - mean)[finite] <= bound[finite]), (got, mean)


# Samples that pass through ops whose last bit can differ from torch's (matmul, pow, sigmoid,
# Cholesky): equal to rounding; every other distribution's seeded samples are torch's exactly.
_ROUNDED = {"Weibull", "ContinuousBernoulli_logits", "RelaxedBernoulli", "LogisticNormal",
            "MultivariateNormal_tril", "MultivariateNormal_cov", "MultivariateNormal_prec",
            "LowRankMultivariateNormal", "Wishart", "Wishart_tril", "LKJCholesky"}


def _seeded(lib, case, method):
    dist, params = _build(lib, case)
    lib.manual_seed(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (Wishart's singular sample warning, as torch's)
        x = getattr(dist, method)((3,))
    after = lib.rand(4, dtype=lib.float64)  # the generator must end where torch's does
    grads = ()
    if method == "rsample" and params:
        w = lib.tensor(np.linspace(0.5, 1.5, x.numel()).reshape(tuple(x.shape)), dtype=x.dtype)
        try:
            grads = lib.autograd.grad((x * w).sum(), params, allow_unused=True)
        except RuntimeError:
            # Wishart: torch's resampling modifies a mask its graph saved, and its backward
            # fails (ember's fails too, with another message: see docs/distributions.md)
            grads = "RuntimeError"
    return x, after, grads


@pytest.mark.parametrize("name", _IDS)
def test_seeded_samples_are_torchs(name):
    """With the same seed, sample and rsample give torch's values and rsample torch's
    gradients (every sampler draws as torch's does)."""
    torch = torch_or_skip()
    case = _BY_NAME[name]
    methods = ["sample"] + (["rsample"] if _build(torch, case)[0].has_rsample else [])
    for method in methods:
        t_x, t_after, t_grads = _seeded(torch, case, method)
        e_x, e_after, e_grads = _seeded(ember, case, method)
        np.testing.assert_array_equal(e_after.numpy(), t_after.numpy())
        if name in _ROUNDED:
            np.testing.assert_allclose(e_x.detach().numpy(), t_x.detach().numpy(), rtol=1e-10,
                                       atol=1e-12)
        else:
            np.testing.assert_array_equal(e_x.detach().numpy(), t_x.detach().numpy())
        assert isinstance(e_grads, str) == isinstance(t_grads, str)
        if isinstance(t_grads, str):
            continue
        for e, t in zip(e_grads, t_grads):
            assert (e is None) == (t is None)
            if t is not None:
                np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-9, atol=1e-12)


_DRAWS = {
    "gamma": lambda m, dt: m._standard_gamma(m.tensor([0.1, 0.5, 1.0, 2.5, 7.0, 30.0, 0.0] * 40,
                                                      dtype=dt)),
    "dirichlet": lambda m, dt: m._sample_dirichlet(
        m.tensor([[0.2, 1.0, 4.0, 3.0, 2.0], [1.0, 1.0, 1.0, 0.5, 0.5]] * 20, dtype=dt)),
    "binomial": lambda m, dt: m.binomial(
        m.tensor([5.0, 12.0, 40.0, 200.0, 1000.0, 3.0, 0.0, 7.0] * 30, dtype=dt),
        m.tensor([0.3, 0.7, 0.3, 0.65, 0.02, 0.5, 0.5, 1.0] * 30, dtype=dt)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(_DRAWS))
def test_rejection_samplers_are_torchs(name, dtype):
    """gamma, Dirichlet and binomial draws, and the normals cached and drawn after them."""
    def body(lib):
        lib.manual_seed(3)
        lib.randn(1, dtype=lib.float64)  # leave a cached normal for the gamma sampler
        return _DRAWS[name](lib, getattr(lib, dtype)), lib.randn(3, dtype=lib.float64)
    same(body, rtol=0, atol=0, grad_fn=False)


def test_certain_samples_equal_torch():
    """Where the outcome is certain, the samples are torch's exactly."""
    def body(torch):
        d = torch.distributions
        return (d.Bernoulli(torch.tensor([0.0, 1.0])).sample((3,)),
                d.Binomial(torch.tensor([4.0, 6.0]), torch.tensor([1.0, 0.0])).sample(),
                d.Categorical(torch.tensor([[0.0, 1.0, 0.0]])).sample((4,)),
                d.OneHotCategorical(torch.tensor([0.0, 0.0, 1.0])).sample((2,)),
                d.Multinomial(5, torch.tensor([0.0, 1.0])).sample(),
                d.Poisson(torch.tensor([0.0])).sample(),
                d.Dirichlet(torch.tensor([[2.0]])).sample())
    same(body)


# -- reparameterised gradients ------------------------------------------------------------------
def test_straight_through_gradient_is_the_probabilities():
    def body(torch):
        logits = torch.tensor([[0.3, -1.0, 2.0]], dtype=torch.float64, requires_grad=True)
        d = torch.distributions.OneHotCategoricalStraightThrough(logits=logits)
        x = d.rsample((2,))
        w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
        return x.sum(-1), torch.autograd.grad((x * w).sum(), logits)
    same(body, grad_fn=False)


def test_gamma_rsample_node_names():
    def body(torch):
        c = torch.tensor([1.5, 3.0], requires_grad=True)
        d = torch.distributions
        return (type(d.Gamma(c, 2.0).rsample().grad_fn).__name__,
                type(d.Dirichlet(c).rsample().grad_fn).__name__,
                type(d.Beta(c, c).rsample().grad_fn).__name__,
                type(torch._standard_gamma(c).grad_fn).__name__)
    same(body)


def test_gamma_gradient_is_first_order_only():
    def body(torch):
        c = torch.tensor([1.5, 3.0], dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad(torch._standard_gamma(c).sum(), c, create_graph=True)
        return torch.autograd.grad(g.sum(), c)
    same(body)


# -- KL divergences -----------------------------------------------------------------------------
def _kl_pairs():
    try:
        from torch.distributions.kl import _KL_REGISTRY
    except ImportError:
        return []
    return sorted((p.__name__, q.__name__) for p, q in _KL_REGISTRY)


@pytest.mark.parametrize("pair", _kl_pairs(), ids="-".join)
def test_kl_divergence(pair):
    """Every pair torch registers: values and gradients w.r.t. both distributions."""
    fp, fq = KL_FACTORIES[pair[0]], KL_FACTORIES[pair[1]]

    def body(lib):
        kp, kq = kl_params(lib), kl_params(lib, 0.3)
        kl = lib.distributions.kl_divergence(fp(lib, kp), fq(lib, kq))
        leaves = list(kp.values()) + list(kq.values())
        grads = lib.autograd.grad(kl.sum(), leaves, allow_unused=True) if kl.requires_grad \
            else ()
        return kl, [g for g in grads if g is not None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(body, rtol=1e-7, atol=1e-10, grad_fn=False, check_warnings=False)


def test_register_kl_dispatch_and_ambiguity():
    def body(torch):
        d = torch.distributions

        class MyNormal(d.Normal):
            pass

        class MyLaplace(d.Laplace):
            pass

        @d.register_kl(MyNormal, d.Distribution)
        def _a(p, q):
            return torch.tensor(1.0)

        @d.register_kl(d.Distribution, MyLaplace)
        def _b(p, q):
            return torch.tensor(2.0)

        plain_kl = d.kl_divergence(MyNormal(0.0, 1.0), d.Normal(1.0, 1.0))
        ambiguous = d.kl_divergence(MyNormal(0.0, 1.0), MyLaplace(0.0, 1.0))
        registry = d.kl._KL_REGISTRY
        del registry[MyNormal, d.Distribution], registry[d.Distribution, MyLaplace]
        return plain_kl, ambiguous
    same(body)


# -- transforms and constraints -----------------------------------------------------------------
def _T(lib):
    return lib.distributions.transforms


TRANSFORMS = {
    "Exp": lambda m: _T(m).ExpTransform(),
    "Sigmoid": lambda m: _T(m).SigmoidTransform(),
    "Tanh": lambda m: _T(m).TanhTransform(),
    "Softplus": lambda m: _T(m).SoftplusTransform(),
    "Abs": lambda m: _T(m).AbsTransform(),
    "Power": lambda m: _T(m).PowerTransform(m.tensor([1.5, 2.0, 0.5], dtype=m.float64)),
    "Affine": lambda m: _T(m).AffineTransform(m.tensor(0.5, dtype=m.float64),
                                              m.tensor([2.0, -1.0, 3.0], dtype=m.float64)),
    "Affine_number": lambda m: _T(m).AffineTransform(1.0, -2.0),
    "Affine_event": lambda m: _T(m).AffineTransform(m.zeros(3, dtype=m.float64),
                                                    m.tensor([2.0, -1.0, 3.0],
                                                             dtype=m.float64), event_dim=1),
    "Softmax": lambda m: _T(m).SoftmaxTransform(),
    "StickBreaking": lambda m: _T(m).StickBreakingTransform(),
    "LowerCholesky": lambda m: _T(m).LowerCholeskyTransform(),
    "PositiveDefinite": lambda m: _T(m).PositiveDefiniteTransform(),
    "CorrCholesky": lambda m: _T(m).CorrCholeskyTransform(),
    "Reshape": lambda m: _T(m).ReshapeTransform((2, 3), (6,)),
    "Compose": lambda m: _T(m).ComposeTransform([_T(m).ExpTransform(),
                                                 _T(m).AffineTransform(1.0, 2.0)]),
    "Independent": lambda m: _T(m).IndependentTransform(_T(m).SigmoidTransform(), 1),
    "Cat": lambda m: _T(m).CatTransform([_T(m).ExpTransform(), _T(m).SigmoidTransform()],
                                        dim=1, lengths=[2, 1]),
    "Stack": lambda m: _T(m).StackTransform([_T(m).ExpTransform(), _T(m).TanhTransform()],
                                            dim=1),
    "CDF": lambda m: _T(m).CumulativeDistributionTransform(m.distributions.Normal(0.0, 1.0)),
    "Inverse": lambda m: _T(m).ExpTransform().inv,
    "Cached": lambda m: _T(m).TanhTransform(cache_size=1),
    "identity": lambda m: _T(m).identity_transform,
}
_INPUT_SHAPE = {"Power": (2, 3), "Affine": (3,), "Affine_number": (3,), "Affine_event": (2, 3),
                "Softmax": (2, 4), "StickBreaking": (2, 3), "LowerCholesky": (2, 3, 3),
                "PositiveDefinite": (3, 3), "CorrCholesky": (2, 6), "Reshape": (4, 2, 3),
                "Cat": (2, 3), "Stack": (3, 2)}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform(name):
    x0 = np.random.default_rng(7).standard_normal(_INPUT_SHAPE.get(name, (2, 3))) * 0.8

    def body(lib):
        t = TRANSFORMS[name](lib)
        x = lib.tensor(x0, requires_grad=True)
        y = t(x)
        out = {"y": y, "inv": t.inv(y.detach()), "repr": repr(t), "bijective": t.bijective,
               "domain": repr(t.domain), "codomain": repr(t.codomain),
               "shapes": (t.forward_shape(lib.Size(x0.shape)),
                          t.inverse_shape(t.forward_shape(lib.Size(x0.shape)))),
               "equal": (t == TRANSFORMS[name](lib), t != _T(lib).ExpTransform())}
        if t.bijective or name == "Cat":
            ladj = t.log_abs_det_jacobian(x, y)
            out["ladj"] = ladj
            out["grad"] = lib.autograd.grad(y.sum() + ladj.sum(), x)
        if name == "Cached":
            out["cached"] = t.inv(y) is x
        return out
    same(body, rtol=1e-8, atol=1e-10, grad_fn=False)


_CONSTRAINTS = ["real", "positive", "nonnegative", "unit_interval", "simplex", "lower_cholesky",
                "positive_definite", "corr_cholesky", "real_vector", "positive_semidefinite",
                "boolean", "lower_triangular"]


def test_constraint_registry():
    def body(torch):
        d = torch.distributions
        c = d.constraints
        out = []
        for name in _CONSTRAINTS:
            for registry in (d.biject_to, d.transform_to):
                try:
                    out.append(repr(registry(getattr(c, name))))
                except NotImplementedError as e:
                    out.append(str(e))
        out.append(repr(d.biject_to(c.interval(-1.0, 2.0))))
        out.append(repr(d.transform_to(c.greater_than(2.0))))
        out.append(repr(d.transform_to(c.less_than(2.0))))
        out.append(repr(d.biject_to(c.independent(c.positive, 1))))
        out.append(repr(d.biject_to(c.cat([c.real, c.positive], 0, [1, 2]))))
        y = d.biject_to(c.stack([c.real, c.unit_interval], 0))(torch.zeros(2, 3))
        return out, y
    same(body)


def test_constraint_checks():
    def body(torch):
        c = torch.distributions.constraints
        x = torch.tensor([[-1.0, 0.0, 0.5], [1.0, 2.0, float("nan")]])
        spd = torch.tensor([[2.0, 0.5], [0.5, 1.0]])
        return ([getattr(c, n).check(x) for n in ("real", "positive", "nonnegative",
                                                     "unit_interval", "boolean",
                                                     "nonnegative_integer")],
                c.simplex.check(torch.tensor([[0.2, 0.8], [0.5, 0.6]])),
                c.one_hot.check(torch.tensor([[0.0, 1.0], [1.0, 1.0]])),
                c.independent(c.positive, 1).check(x), c.integer_interval(0, 2).check(x),
                c.half_open_interval(0.0, 1.0).check(x), c.less_than(0.5).check(x),
                c.greater_than_eq(0.0).check(x), c.multinomial(3).check(x.abs()),
                c.positive_definite.check(spd), c.positive_definite.check(-spd),
                c.positive_semidefinite.check(spd), c.symmetric.check(spd.T.triu()),
                c.square.check(torch.ones(2, 2, 3)), c.lower_cholesky.check(spd.tril()),
                c.corr_cholesky.check(torch.eye(2)), c.stack([c.real, c.positive], 1).check(
                    torch.ones(3, 2)), c.cat([c.real, c.positive], 0, [1, 1]).check(
                    -torch.ones(2)), c.is_dependent(c.dependent), repr(c.real_vector),
                [repr(getattr(c, n)) for n in ("positive_integer", "nonnegative_integer")],
                c.independent(c.real, 2).event_dim, c.dependent(event_dim=1).event_dim)
    same(body)


# -- validation and errors ----------------------------------------------------------------------
def _D(lib):
    return lib.distributions


ERRORS = {
    "parameter": lambda m: _D(m).Normal(m.tensor([0.0, 1.0]), m.tensor([1.0, -1.0])),
    "value_support": lambda m: _D(m).Uniform(0.0, 1.0).log_prob(m.tensor(2.0)),
    "value_not_tensor": lambda m: _D(m).Normal(0.0, 1.0).log_prob(1.0),
    "value_event_shape": lambda m: _D(m).MultivariateNormal(m.zeros(3), m.eye(3)).log_prob(
        m.zeros(2)),
    "value_batch_shape": lambda m: _D(m).Normal(m.zeros(3), 1.0).log_prob(m.zeros(2)),
    "probs_and_logits": lambda m: _D(m).Bernoulli(probs=0.5, logits=0.0),
    "neither": lambda m: _D(m).Categorical(),
    "bad_probs": lambda m: _D(m).Bernoulli(probs=m.tensor([1.5])),
    "categorical_0d": lambda m: _D(m).Categorical(probs=m.tensor(0.5)),
    "dirichlet_0d": lambda m: _D(m).Dirichlet(m.tensor(1.0)),
    "uniform_order": lambda m: _D(m).Uniform(m.tensor([2.0]), m.tensor([1.0])),
    "mvn_no_matrix": lambda m: _D(m).MultivariateNormal(m.zeros(2)),
    "mvn_not_pd": lambda m: _D(m).MultivariateNormal(
        m.zeros(2), covariance_matrix=m.tensor([[1.0, 2.0], [2.0, 1.0]])),
    "mvn_not_tril": lambda m: _D(m).MultivariateNormal(
        m.zeros(2), scale_tril=m.tensor([[1.0, 2.0], [0.0, 1.0]])),
    "geometric_zero": lambda m: _D(m).Geometric(probs=m.tensor([0.0, 0.5])),
    "independent_ndims": lambda m: _D(m).Independent(_D(m).Normal(m.zeros(2), 1.0), 2),
    "mixture_type": lambda m: _D(m).MixtureSameFamily(_D(m).Normal(0.0, 1.0),
                                                      _D(m).Normal(m.zeros(2), 1.0)),
    "mixture_components": lambda m: _D(m).MixtureSameFamily(
        _D(m).Categorical(logits=m.zeros(3)), _D(m).Normal(m.zeros(2), 1.0)),
    "transforms_type": lambda m: _D(m).TransformedDistribution(_D(m).Normal(0.0, 1.0), "x"),
    "lkj_dim": lambda m: _D(m).LKJCholesky(1),
    "wishart_df": lambda m: _D(m).Wishart(m.tensor(0.5), covariance_matrix=m.eye(2)),
    "multinomial_count": lambda m: _D(m).Multinomial(m.tensor(3), probs=m.ones(2)),
    "binomial_entropy": lambda m: _D(m).Binomial(m.tensor([2.0, 3.0]),
                                                 probs=m.tensor([0.5, 0.5])).entropy(),
    "kl_missing": lambda m: _D(m).kl_divergence(_D(m).Normal(0.0, 1.0),
                                                _D(m).VonMises(0.0, 1.0)),
    "kl_families": lambda m: _D(m).kl_divergence(_D(m).Poisson(1.0),
                                                 _D(m).Dirichlet(m.ones(2))),
    "kl_event_shapes": lambda m: _D(m).kl_divergence(
        _D(m).MultivariateNormal(m.zeros(2), m.eye(2)),
        _D(m).MultivariateNormal(m.zeros(3), m.eye(3))),
    "kl_binomial_counts": lambda m: _D(m).kl_divergence(_D(m).Binomial(2, m.tensor([0.5])),
                                                        _D(m).Binomial(3, m.tensor([0.5]))),
    "cache_size": lambda m: _D(m).transforms.ExpTransform(cache_size=2),
    "reshape_sizes": lambda m: _D(m).transforms.ReshapeTransform((2, 3), (5,)),
    "biject_missing": lambda m: _D(m).biject_to(_D(m).constraints.lower_cholesky),
    "register_not_constraint": lambda m: _D(m).constraint_registry.ConstraintRegistry(
    ).register(3, lambda c: None),
    "dependent_check": lambda m: _D(m).constraints.dependent.check(m.ones(1)),
    "dependent_event_dim": lambda m: _D(m).constraints.dependent.event_dim,
    "continuous_bernoulli": lambda m: _D(m).ContinuousBernoulli(probs=m.tensor([1.5]),
                                                                validate_args=True),
    "default_validate": lambda m: _D(m).Distribution.set_default_validate_args(3),
    "broadcast_all": lambda m: _D(m).utils.broadcast_all(m.ones(2), "a"),
    "mode_missing": lambda m: _D(m).Pareto(1.0, 2.0).mode,
    "enumerate_independent": lambda m: _D(m).Independent(
        _D(m).Bernoulli(m.ones(2) * 0.5), 1).enumerate_support(),
    "abstract_stddev": lambda m: _D(m).Distribution().stddev,
    "float64_generalized_pareto": lambda m: _D(m).GeneralizedPareto(
        m.zeros(1, dtype=m.float64), 1.0, 0.1).log_prob(m.ones(1, dtype=m.float64)),
    "expand_custom_init": lambda m: type("N", (_D(m).Normal,), {
        "__init__": lambda self: _D(m).Normal.__init__(self, 0.0, 1.0)})().expand((2,)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    same(lambda lib: ERRORS[name](lib))


def test_warnings_and_defaults():
    def body(torch):
        d = torch.distributions
        missing = type("X", (d.Distribution,), {})(torch.Size([2]))  # no arg_constraints
        n = d.Normal(0.0, 1.0).sample_n(3)
        d.Distribution.set_default_validate_args(False)
        try:
            unchecked = d.Normal(0.0, -1.0).scale  # no error without validation
        finally:
            d.Distribution.set_default_validate_args(True)
        unsupported = type("Y", (d.Distribution,), {"arg_constraints": {}})()
        unsupported._validate_sample(torch.ones(2))  # warns: no support
        low_df = d.Wishart(torch.tensor(1.5), covariance_matrix=torch.eye(2)).batch_shape
        return missing.batch_shape, n.shape, unchecked, low_df
    same(body)


def test_lazy_parameters_and_expand_views():
    def body(torch):
        d = torch.distributions
        probs = torch.tensor([0.2, 0.7], requires_grad=True)
        b = d.Bernoulli(probs=probs)
        before = sorted(k for k in vars(b) if k in ("probs", "logits"))
        logits = b.logits
        after = sorted(k for k in vars(b) if k in ("probs", "logits"))
        big = d.Normal(torch.zeros(3), 1.0).expand((2, 3))
        return before, after, logits, big.loc.shape, big.loc.stride(), big.sample().shape
    same(body)


def test_vonmises_sample_in_range():
    d = ember.distributions.VonMises(ember.tensor([-3.0, 3.0]), ember.tensor([0.01, 50.0]))
    ember.manual_seed(0)
    x = d.sample((2000,))
    assert x.dtype == ember.float32 and bool(((x >= -math.pi) & (x < math.pi)).all())
    # concentration 50 around 3.0 wraps: circular mean stays at 3.0
    angle = math.atan2(float(ember.sin(x[:, 1]).mean()), float(ember.cos(x[:, 1]).mean()))
    assert abs(angle - 3.0) < 0.02
