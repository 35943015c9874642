"""Distribution instances for tests/test_distributions.py, built alike in ember and torch.

A case is a name, a factory ``make(mod, *params)`` (``mod``: ember or torch) and parameters:
NumPy arrays become float64 tensors that require grad (``C(array)``: tensors that do not),
anything else is passed as it is.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_rng = np.random.default_rng(1234)


def _u(*shape, low=0.5, high=2.0):
    return _rng.uniform(low, high, shape)


def _n(*shape):
    return _rng.standard_normal(shape)


def _simplex(*shape):
    x = _rng.uniform(0.1, 1.0, shape)
    return x / x.sum(-1, keepdims=True)


def _spd(batch, n):
    a = _rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tril(batch, n):
    return np.linalg.cholesky(_spd(batch, n))


@dataclass(frozen=True)
class C:
    """A parameter that does not require grad (counts, fixed matrices)."""

    value: object


@dataclass
class Case:
    name: str
    make: object
    params: tuple
    # methods torch does not implement for this distribution (so neither is compared)
    skip: tuple = ()
    tols: tuple = (1e-9, 1e-9)
    extra: dict = field(default_factory=dict)


def D(mod):
    return mod.distributions


CASES = [
    Case("Normal", lambda m, a, b: D(m).Normal(a, b), (_n(3), _u(3))),
    Case("Normal_scalar", lambda m, a, b: D(m).Normal(a, b), (0.3, 1.5)),
    Case("Uniform", lambda m, a, b: D(m).Uniform(a, a + b), (_n(2, 3), _u(2, 3))),
    Case("Exponential", lambda m, a: D(m).Exponential(a), (_u(4),)),
    Case("Laplace", lambda m, a, b: D(m).Laplace(a, b), (_n(3), _u(3))),
    Case("Cauchy", lambda m, a, b: D(m).Cauchy(a, b), (_n(3), _u(3))),
    Case("Gamma", lambda m, a, b: D(m).Gamma(a, b), (_u(4, low=0.3, high=5.0), _u(4))),
    Case("Chi2", lambda m, a: D(m).Chi2(a), (_u(3, low=1.0, high=6.0),)),
    Case("Beta", lambda m, a, b: D(m).Beta(a, b), (_u(3, low=0.5, high=4.0), _u(3))),
    Case("Dirichlet", lambda m, a: D(m).Dirichlet(a), (_u(2, 3, low=0.5, high=3.0),)),
    Case("StudentT", lambda m, a, b, c: D(m).StudentT(a, b, c),
         (_u(3, low=2.5, high=6.0), _n(3), _u(3))),
    Case("FisherSnedecor", lambda m, a, b: D(m).FisherSnedecor(a, b),
         (_u(3, low=1.0, high=5.0), _u(3, low=5.0, high=9.0))),
    Case("HalfNormal", lambda m, a: D(m).HalfNormal(a), (_u(3),)),
    Case("HalfCauchy", lambda m, a: D(m).HalfCauchy(a), (_u(3),)),
    Case("LogNormal", lambda m, a, b: D(m).LogNormal(a, b), (_n(3), _u(3, high=1.0))),
    Case("Gumbel", lambda m, a, b: D(m).Gumbel(a, b), (_n(3), _u(3))),
    Case("Pareto", lambda m, a, b: D(m).Pareto(a, b), (_u(3), _u(3, low=2.5, high=4.0))),
    Case("Weibull", lambda m, a, b: D(m).Weibull(a, b), (_u(3), _u(3, low=1.2, high=3.0))),
    Case("Kumaraswamy", lambda m, a, b: D(m).Kumaraswamy(a, b),
         (_u(3, low=1.2, high=3.0), _u(3, low=1.2, high=3.0))),
    Case("InverseGamma", lambda m, a, b: D(m).InverseGamma(a, b),
         (_u(3, low=2.5, high=5.0), _u(3))),
    Case("GeneralizedPareto", lambda m, a, b, c: D(m).GeneralizedPareto(a, b, c),
         (_n(4), _u(4), np.array([0.2, -0.2, 0.1, 0.3]))),
    Case("VonMises", lambda m, a, b: D(m).VonMises(a, b), (_n(3), _u(3, low=0.5, high=6.0))),
    Case("ContinuousBernoulli", lambda m, p: D(m).ContinuousBernoulli(probs=p),
         (np.array([0.2, 0.4995, 0.7, 0.9]),)),
    Case("ContinuousBernoulli_logits", lambda m, a: D(m).ContinuousBernoulli(logits=a),
         (_n(3),)),
    Case("Bernoulli", lambda m, p: D(m).Bernoulli(probs=p), (_u(4, low=0.1, high=0.9),)),
    Case("Bernoulli_logits", lambda m, a: D(m).Bernoulli(logits=a), (_n(2, 2),)),
    Case("Binomial", lambda m, n, p: D(m).Binomial(n, probs=p),
         (C(np.array([5.0, 5.0, 5.0])), _u(3, low=0.1, high=0.9))),
    Case("Binomial_logits", lambda m, n, a: D(m).Binomial(n, logits=a), (4, _n(3))),
    Case("Categorical", lambda m, p: D(m).Categorical(probs=p), (_simplex(2, 4),)),
    Case("Categorical_logits", lambda m, a: D(m).Categorical(logits=a), (_n(3, 5),)),
    Case("OneHotCategorical", lambda m, p: D(m).OneHotCategorical(probs=p), (_simplex(2, 3),)),
    Case("OneHotCategoricalStraightThrough",
         lambda m, a: D(m).OneHotCategoricalStraightThrough(logits=a), (_n(2, 3),)),
    Case("Multinomial", lambda m, p: D(m).Multinomial(5, probs=p), (_simplex(2, 3),)),
    Case("Poisson", lambda m, a: D(m).Poisson(a), (_u(4, low=0.5, high=6.0),)),
    Case("Geometric", lambda m, p: D(m).Geometric(probs=p), (_u(3, low=0.2, high=0.8),)),
    Case("Geometric_logits", lambda m, a: D(m).Geometric(logits=a), (_n(3),)),
    Case("NegativeBinomial", lambda m, n, p: D(m).NegativeBinomial(n, probs=p),
         (_u(3, low=1.0, high=5.0), _u(3, low=0.2, high=0.8))),
    Case("RelaxedBernoulli", lambda m, t, p: D(m).RelaxedBernoulli(t, probs=p),
         (C(np.array(0.7)), _u(3, low=0.2, high=0.8))),
    Case("RelaxedOneHotCategorical",
         lambda m, t, a: D(m).RelaxedOneHotCategorical(t, logits=a),
         (C(np.array(0.5)), _n(2, 4))),
    Case("LogisticNormal", lambda m, a, b: D(m).LogisticNormal(a, b), (_n(2, 3), _u(2, 3))),
    Case("MultivariateNormal_tril", lambda m, a, L: D(m).MultivariateNormal(a, scale_tril=L),
         (_n(2, 3), _tril((2,), 3))),
    Case("MultivariateNormal_cov",
         lambda m, a, S: D(m).MultivariateNormal(a, covariance_matrix=S),
         (_n(3), C(_spd((), 3)))),
    Case("MultivariateNormal_prec",
         lambda m, a, P: D(m).MultivariateNormal(a, precision_matrix=P),
         (_n(2, 3), C(_spd((), 3)))),
    Case("LowRankMultivariateNormal",
         lambda m, a, W, d: D(m).LowRankMultivariateNormal(a, W, d),
         (_n(2, 4), _n(2, 4, 2), _u(2, 4))),
    Case("Independent", lambda m, a, b: D(m).Independent(D(m).Normal(a, b), 1),
         (_n(2, 3), _u(2, 3))),
    Case("MixtureSameFamily",
         lambda m, w, a, b: D(m).MixtureSameFamily(D(m).Categorical(logits=w),
                                                   D(m).Normal(a, b)),
         (_n(2, 3), _n(2, 3), _u(2, 3))),
    Case("MixtureSameFamily_mvn",
         lambda m, w, a, b: D(m).MixtureSameFamily(
             D(m).Categorical(probs=w), D(m).Independent(D(m).Normal(a, b), 1)),
         (_simplex(3), _n(3, 2), _u(3, 2))),
    Case("Wishart", lambda m, df, S: D(m).Wishart(df, covariance_matrix=S),
         (np.array([4.5, 6.0]), C(_spd((2,), 3)))),
    Case("Wishart_tril", lambda m, df, L: D(m).Wishart(df, scale_tril=L),
         (np.array(5.0), _tril((), 2))),
    Case("LKJCholesky", lambda m, c: D(m).LKJCholesky(3, c), (_u(2, low=0.5, high=3.0),)),
]


# One instance per class for the KL pairs, batch shape (3,), parameters shared by the pairs.
_K = {"loc": _n(3), "scale": _u(3), "rate": _u(3), "conc": _u(3, low=1.5, high=3.0),
      "conc0": _u(3, low=1.5, high=3.0), "probs": _u(3, low=0.2, high=0.8), "low": _n(3) - 2.0,
      "alpha": _u(3, low=2.5, high=4.0), "vec_loc": _n(3, 2), "tril": _tril((3,), 2),
      "factor": _n(3, 2, 1), "diag": _u(3, 2), "cat": _simplex(3, 4),
      "dir": _u(3, 4, low=0.5, high=3.0), "unit_low": _u(3, low=0.1, high=0.4),
      "unit_high": _u(3, low=0.6, high=0.9)}

KL_FACTORIES = {
    "Bernoulli": lambda m, k: D(m).Bernoulli(probs=k["probs"]),
    "Beta": lambda m, k: D(m).Beta(k["conc"], k["conc0"]),
    "Binomial": lambda m, k: D(m).Binomial(5, probs=k["probs"]),
    "Categorical": lambda m, k: D(m).Categorical(probs=k["cat"]),
    "Cauchy": lambda m, k: D(m).Cauchy(k["loc"], k["scale"]),
    "ContinuousBernoulli": lambda m, k: D(m).ContinuousBernoulli(probs=k["probs"]),
    "Dirichlet": lambda m, k: D(m).Dirichlet(k["dir"]),
    "Exponential": lambda m, k: D(m).Exponential(k["rate"]),
    "Gamma": lambda m, k: D(m).Gamma(k["conc"], k["rate"]),
    "Geometric": lambda m, k: D(m).Geometric(probs=k["probs"]),
    "Gumbel": lambda m, k: D(m).Gumbel(k["loc"], k["scale"]),
    "HalfNormal": lambda m, k: D(m).HalfNormal(k["scale"]),
    "Independent": lambda m, k: D(m).Independent(D(m).Normal(k["vec_loc"], k["diag"]), 1),
    "Laplace": lambda m, k: D(m).Laplace(k["loc"], k["scale"]),
    "LowRankMultivariateNormal": lambda m, k: D(m).LowRankMultivariateNormal(
        k["vec_loc"], k["factor"], k["diag"]),
    "MultivariateNormal": lambda m, k: D(m).MultivariateNormal(k["vec_loc"],
                                                               scale_tril=k["tril"]),
    "Normal": lambda m, k: D(m).Normal(k["loc"], k["scale"]),
    "OneHotCategorical": lambda m, k: D(m).OneHotCategorical(probs=k["cat"]),
    "Pareto": lambda m, k: D(m).Pareto(k["scale"], k["alpha"]),
    "Poisson": lambda m, k: D(m).Poisson(k["rate"]),
    "TransformedDistribution": lambda m, k: D(m).LogNormal(k["loc"], k["scale"]),
    "Uniform": lambda m, k: D(m).Uniform(k["unit_low"], k["unit_high"]),
    "ExponentialFamily": lambda m, k: D(m).Gamma(k["conc"], k["rate"]),
}


def kl_params(mod, shift=0.0):
    """The shared parameters as float64 tensors that require grad (``shift`` moves the
    unconstrained ones, so that p and q differ)."""
    out = {}
    for name, v in _K.items():
        value = v + shift if name in ("loc", "vec_loc", "low", "factor") else v * (1 + shift)
        out[name] = mod.tensor(value, dtype=mod.float64, requires_grad=True)
    return out
