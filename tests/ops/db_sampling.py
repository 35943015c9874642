"""Op table rows for the samplers behind ember.distributions (sampling.py).

The gradient kernels (``_standard_gamma_grad``, ``_dirichlet_grad``) are deterministic and
compared with torch's in every regime of their piecewise approximations. The samplers draw as
torch's kernels do: seeded alike, they give torch's samples (and so torch's reparameterised
gradients); rows with certain results (zero concentrations, probabilities 0 and 1,
one-category Dirichlets) check the edge cases.
"""
from __future__ import annotations

import numpy as np

import ember
from ember._ops import sampling as SA

from .op_db import C, S, row


def _seeded(fn):
    """``fn`` after reseeding the default generator, so that repeated calls draw alike."""
    def call(mod):
        def run(*args, **kwargs):
            mod.manual_seed(0)
            return getattr(mod, fn)(*args, **kwargs)
        return run
    return call


def _gamma_grad_samples(m):
    # each regime of the approximation: x < 0.8 (series), alpha > 8 near and far from the
    # mode (saddle point), and the rational fit in between
    alpha = m.arr([0.3, 2.0, 5.0, 9.0, 12.0, 20.0, 3.0, 0.7])
    x = m.arr([0.5, 0.1, 3.0, 9.5, 4.0, 30.0, 1.5, 2.0])
    return [S("regimes", alpha, x), S("bcast", m.arr([[1.5], [10.0]]), m.arr([0.2, 1.0, 11.0])),
            S("0dim", m.arr(4.0), m.arr(2.5))]


row("_standard_gamma_grad", SA._standard_gamma_grad, "_standard_gamma_grad",
    [SA._standard_gamma_grad], _gamma_grad_samples, differentiable=False,
    tols={"float32": (2e-5, 1e-6)})


def _dirichlet_grad_samples(m):
    # near 0 (series in x), near 1 (series in 1 - x), both concentrations large (saddle
    # point, at and away from the mean), and the rational correction
    x = m.arr([0.02, 0.98, 0.5, 0.3, 0.4, 0.6])
    alpha = m.arr([1.5, 2.0, 10.0, 8.0, 2.0, 3.0])
    total = m.arr([3.0, 2.5, 20.0, 20.0, 5.0, 4.5])
    return [S("regimes", x, alpha, total), S("0dim", m.arr(0.4), m.arr(1.0), m.arr(3.0))]


row("_dirichlet_grad", SA._dirichlet_grad, "_dirichlet_grad", [SA._dirichlet_grad],
    _dirichlet_grad_samples, differentiable=False, tols={"float32": (2e-5, 1e-6)})

# Certain results: Gamma(0) gives 0 (clamped to the dtype's tiny), as do NaN and negative ones.
row("_standard_gamma_certain", ember._standard_gamma, "_standard_gamma",
    [SA._standard_gamma], lambda m: [S("degenerate", m.arr([0.0, np.nan, -1.0]))],
    differentiable=False)
row("_standard_gamma", _seeded("_standard_gamma")(ember), _seeded("_standard_gamma"),
    [SA._standard_gamma, SA._standard_gamma_grad],
    lambda m: [S("vector", m(4)), S("matrix", m(2, 3)), S("small", m.arr([0.2, 0.05])),
               S("large", m.arr([9.0, 40.0]))],
    domain=(0.5, 6.0), gradgrad=False, random=True,
    skips={"test_gradcheck": "the gradient is the implicit one, -dF/dalpha / f, not the "
                             "finite difference of a sampler at fixed noise",
           "test_forward_ad": "torch has no forward AD for _standard_gamma (ember raises "
                              "as torch does)"})

row("_sample_dirichlet_certain", ember._sample_dirichlet, "_sample_dirichlet",
    [SA._sample_dirichlet],
    lambda m: [S("one_category", m(3, 1)), S("zeros", m.arr([[0.0, 0.0, 0.0, 0.0]])),
               S("0dim", m.arr(2.0))], domain=(0.5, 3.0), differentiable=False)
row("_sample_dirichlet", _seeded("_sample_dirichlet")(ember), _seeded("_sample_dirichlet"),
    [SA._sample_dirichlet], lambda m: [S("matrix", m(2, 3)), S("long_rows", m(2, 9))],
    domain=(0.5, 3.0), differentiable=False, random=True)


def _binomial_certain(m):
    count = m.arr([5.0, 7.0, 0.0, -3.0, 4.0])
    prob = m.arr([0.0, 1.0, 0.5, 0.5, 1.5])
    return [S("certain", count, C(prob)), S("nan", m.arr([3.0]), C(m.arr([np.nan]))),
            S("bcast", m.arr([[2.0], [6.0]]), C(m.arr([0.0, 1.0])))]


row("binomial_certain", ember.binomial, "binomial", [SA.binomial], _binomial_certain,
    differentiable=False)
row("binomial", _seeded("binomial")(ember), _seeded("binomial"), [SA.binomial],
    lambda m: [S("mixed", m.arr([10.0, 40.0, 3.0, 500.0, 25.0]),
                 m.arr([0.3, 0.6, 0.9, 0.2, 0.95]))], differentiable=False, random=True)
