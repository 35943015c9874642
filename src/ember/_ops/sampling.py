"""Samplers behind ``ember.distributions``: gamma, Dirichlet and binomial draws, and the
implicit reparameterisation gradients of the gamma and Dirichlet samples.

The samplers are torch's CPU kernels draw for draw (``ember._random.rejection``): with the
same seed they give torch's numbers. A GPU tensor's samples are drawn on its GPU from its CUDA
generator (the samplers of ``ember._backend.device_sampling``).

The gradient of a gamma sample ``x`` with respect to its concentration ``alpha`` is the implicit
one, ``-(dF(x; alpha)/dalpha) / f(x; alpha)`` (F, f: the gamma CDF and density), computed with
torch's approximations (Taylor series, Rice saddle point, rational fit); likewise for the
Dirichlet (through the Beta marginals). Both are first-order only, as in torch.
"""
from __future__ import annotations

__all__ = ['binomial']

import numpy as np

from .. import _dtype as D
from .._backend import get_xp, to_numpy
from .._backend.device import device_of
from .._random import rejection
from .._random.generator import DeviceDraw, cpu_generator, draw_for, kernel_name
from .pointwise import derivative_not_implemented, no_derivative, no_forward_ad, not_implemented
from .registry import NONE, op
from .special import digamma


def _float_only(array, kernel):
    if array.dtype not in (np.float32, np.float64):
        raise not_implemented(kernel, array)


def _same_dtype(*arrays):
    """torch's refusal of operands of different dtypes (these kernels do not promote)."""
    first = arrays[0].dtype
    for a in arrays[1:]:
        if a.dtype != first:
            raise RuntimeError(f"Found dtype {D._BY_NP[a.dtype].scalar_name} but expected "
                               f"{D._BY_NP[first].scalar_name}")


def _draw(kernel, generator, data, *args):
    """``kernel``'s draws for tensors on ``data``'s device: the CPU kernel (``rejection``'s,
    given host arrays) or that device's sampler of the same name (given ``data``'s arrays)."""
    draw = draw_for(generator, device_of(data[0]))
    if isinstance(draw, DeviceDraw):
        return draw.sample(kernel, *data, *args)
    host = (to_numpy(a) for a in data)
    return getattr(rejection, kernel)(cpu_generator(generator), *host, *args)


# -- gamma --------------------------------------------------------------------------------------
def _check_gamma(self, generator=None):
    _float_only(self._data, kernel_name("gamma_cpu", draw_for(generator, self.device)))


@op("_standard_gamma", node="StandardGammaBackward0", promote=NONE, check=_check_gamma)
def _standard_gamma(self, generator=None):
    alphas = get_xp(self).ascontiguousarray(self).ravel()
    return _draw("standard_gamma", generator, (alphas,), self.dtype).reshape(self.shape)


@_standard_gamma.grad("self")
def _(grad, self, result):
    return grad * _standard_gamma_grad(self, result)


_standard_gamma.jvp("self")(no_forward_ad("_standard_gamma"))


def _horner(x, coeffs):
    """sum(coeffs[k] * x ** k)."""
    out = coeffs[-1]
    for c in coeffs[-2::-1]:
        out = c + x * out
    return out


def _gamma_grad_taylor(alpha, x):
    """Small x: the series of the lower incomplete gamma function and its alpha-derivative."""
    xp = get_xp(x)
    numer, denom = xp.ones_like(x), alpha.copy()
    series1, series2 = numer / denom, numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = x ** alpha
    pdf = x ** (alpha - 1) * xp.exp(-x)
    cdf = pow_x_alpha * series1
    cdf_alpha = (xp.log(x) - digamma(alpha)) * cdf - pow_x_alpha * series2
    result = -cdf_alpha / pdf
    return xp.where(xp.isnan(result), 0.0, result)


def _gamma_grad_saddle(alpha, x):
    """Large alpha: Rice's saddle point expansion (a polynomial next to x = alpha)."""
    xp = get_xp(x)
    near = (0.9 * alpha <= x) & (x <= 1.1 * alpha)
    numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
    numer_2 = (1440 * alpha * alpha + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
               + alpha * (107 + 3600 * x))
    polynomial = numer_1 * numer_2 / (1244160 * alpha ** 4)
    denom = xp.sqrt(8 * alpha)
    term2 = denom / (alpha - x)
    term3 = (x - alpha - alpha * xp.log(x / alpha)) ** -1.5
    term23 = xp.where(x < alpha, term2 - term3, term2 + term3)
    term1 = (xp.log(x / alpha) * term23
             - xp.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x)))
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    return xp.where(near, polynomial, -stirling * x * term1 / denom)


_GAMMA_GRAD_UV = np.array([
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343,
     1, 0.32668115, 0.10406089, 0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758,
     0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
     0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07]])


def _gamma_grad_rational(alpha, x):
    """Elsewhere: a bivariate rational fit in log(x / alpha) and log(alpha)."""
    xp = get_xp(x)
    u, v = xp.log(x / alpha), xp.log(alpha)
    coef = [_GAMMA_GRAD_UV[0, i] + u * (_GAMMA_GRAD_UV[1, i] + u * _GAMMA_GRAD_UV[2, i])
            for i in range(8)]
    return xp.exp(_horner(v, coef[:4]) / _horner(v, coef[4:]))


@op("_standard_gamma_grad", tensors=2, node="StandardGammaGradBackward0", promote=NONE,
    quiet=True)
def _standard_gamma_grad(self, output):
    """d(sample)/d(alpha) of standard gamma samples ``output`` drawn with concentration
    ``self``."""
    _float_only(self, "_standard_gamma_grad_cpu")
    _same_dtype(self, output)
    xp = get_xp(self, output)
    alpha, x = (a.astype(np.float64) for a in xp.broadcast_arrays(self, output))
    out = xp.where(x < 0.8, _gamma_grad_taylor(alpha, x),
                   xp.where(alpha > 8.0, _gamma_grad_saddle(alpha, x),
                            _gamma_grad_rational(alpha, x)))
    return out.astype(self.dtype)


_standard_gamma_grad.grad("self")(derivative_not_implemented("_standard_gamma_grad"))
_standard_gamma_grad.grad("output")(derivative_not_implemented("_standard_gamma_grad"))


# -- Dirichlet ----------------------------------------------------------------------------------
def _check_dirichlet(self, generator=None):
    if self._data.dtype.kind != "f":
        raise not_implemented("dirichlet", self._data)


@op("_sample_dirichlet", node="NotImplemented", promote=NONE, check=_check_dirichlet)
def _sample_dirichlet(self, generator=None):
    """Dirichlet samples, one per vector of concentrations along the last dimension."""
    if self.ndim == 0:  # one category: the proportion is (just below) 1
        alphas = self.reshape(1, 1)
    else:
        alphas = get_xp(self).ascontiguousarray(self).reshape(-1, self.shape[-1])
    return _draw("dirichlet", generator, (alphas,), self.dtype).reshape(self.shape)


_sample_dirichlet.grad("self")(no_derivative("_sample_dirichlet"))


def _beta_grad_alpha_small(x, alpha, beta):
    """d(sample)/d(alpha) of a Beta(alpha, beta) sample near 0 (Taylor series in x)."""
    xp = get_xp(x)
    factor = digamma(alpha) - digamma(alpha + beta) - xp.log(x)
    numer = xp.ones_like(x)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer = numer * ((i - beta) * x / i)
        denom = alpha + i
        series = series + numer / denom * (factor + 1 / denom)
    result = x * (1 - x) ** -beta * series
    return xp.where(xp.isnan(result), 0.0, result)


def _beta_grad_beta_small(x, alpha, beta):
    """d(sample)/d(beta) of a Beta(alpha, beta) sample near 0 (Taylor series in x)."""
    xp = get_xp(x)
    factor = digamma(alpha + beta) - digamma(beta)
    numer, betas, dbetas = xp.ones_like(x), xp.ones_like(x), xp.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    result = -(1 - x) ** (1 - beta) * series
    return xp.where(xp.isnan(result), 0.0, result)


def _beta_grad_alpha_mid(x, alpha, beta):
    """Both concentrations large: Rice's saddle point expansion."""
    xp = get_xp(x)
    total = alpha + beta
    mean = alpha / total
    std = xp.sqrt(alpha * beta / (total + 1)) / total
    near = (mean - 0.1 * std <= x) & (x <= mean + 0.1 * std)
    # Next to the mean the expansion is singular: a polynomial stands in.
    poly = 47 * x * beta ** 4 + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * beta ** 3 + alpha * (
            3 * (59 + 180 * beta - 90 * x) * beta * beta + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                    8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha ** 3 * beta * beta * (1 + 12 * total)
    at_mean = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / xp.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha))
                * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * alpha * alpha * (x - 1) + alpha * beta * (x - 1) - x * beta * beta
    axbx = alpha * (x - 1) + beta * x
    term1 = term1_num / (xp.sqrt(2 * alpha / beta) * total ** 1.5 * axbx * axbx)
    term2 = 0.5 * xp.log(alpha / (total * x))
    term3 = xp.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4 = (beta * xp.log(beta / (total * (1 - x)))
             + alpha * xp.log(alpha / (total * x))) ** -1.5
    term1234 = term1 + term2 * (term3 + xp.where(x < mean, term4, -term4))
    return xp.where(near, at_mean, stirling * prefactor * term1234)


# The rational correction's coefficients c[p or q][power of u][power of a][power of b].
_DIRICHLET_C = np.array([
    [[[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
      [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
      [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
     [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
      [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
      [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
     [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
      [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
      [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]]],
    [[[1, -0.02924021934, -0.04438342661, 0.007285809825],
      [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
      [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
     [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
      [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
      [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
     [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
      [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
      [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]]]])


def _beta_grad_rational(x, alpha, total):
    """Otherwise: a rational correction to an analytic approximation."""
    xp = get_xp(x)
    u = xp.log(x)
    a = xp.log(alpha) - u
    b = xp.log(total) - a
    p = q = 0.0
    for i in range(3):
        for j in range(3):
            ua = u ** i * a ** j
            p = p + ua * _horner(b, list(_DIRICHLET_C[0, i, j]))
            q = q + ua * _horner(b, list(_DIRICHLET_C[1, i, j]))
    approx = x * (digamma(total) - digamma(alpha)) / (total - alpha)
    return p / q * approx


@op("_dirichlet_grad", tensors=3, node="NotImplemented", promote=NONE, quiet=True)
def _dirichlet_grad(x, alpha, total):
    """-(d/dalpha) CDF / density / (1 - x) of Beta(alpha, total - alpha) samples ``x``: the
    building block of the Dirichlet's reparameterised gradient."""
    _float_only(x, "_dirichlet_grad_cpu")
    _same_dtype(x, alpha, total)
    xp = get_xp(x, alpha, total)
    x64, a64, t64 = (v.astype(np.float64) for v in xp.broadcast_arrays(x, alpha, total))
    beta = t64 - a64
    boundary = t64 * x64 * (1 - x64)
    out = xp.where(
        (x64 <= 0.5) & (boundary < 2.5), _beta_grad_alpha_small(x64, a64, beta),
        xp.where((x64 >= 0.5) & (boundary < 0.75), -_beta_grad_beta_small(1 - x64, beta, a64),
                 xp.where((a64 > 6) & (beta > 6), _beta_grad_alpha_mid(x64, a64, beta),
                          _beta_grad_rational(x64, a64, t64))))
    return out.astype(x.dtype)


_dirichlet_grad.grad("x", "alpha", "total")(no_derivative("_dirichlet_grad"))


# -- binomial -----------------------------------------------------------------------------------
def _check_binomial(count, prob, generator=None):
    if count._data.dtype.kind != "f":
        raise ValueError("binomial only supports floating-point dtypes for count, got: "
                         f"{D._BY_NP[count._data.dtype].scalar_name}")


@op("binomial", tensors=2, node="NotImplemented", promote=NONE, check=_check_binomial)
def binomial(count, prob, generator=None):
    """Draws from Binomial(count, prob) distributions, elementwise."""
    _same_dtype(count, prob)
    xp = get_xp(count, prob)
    n, p = (xp.ascontiguousarray(a).ravel() for a in xp.broadcast_arrays(count, prob))
    draws = _draw("binomial", generator, (n, p), count.dtype)
    return xp.asarray(draws.reshape(np.broadcast_shapes(count.shape, prob.shape)))


binomial.grad("count", "prob")(no_derivative("binomial"))
