"""``ember.special``: torch.special's functions.

Error and gamma functions, Bessel and Airy functions, orthogonal polynomials, entropy and
log helpers, and torch.special's aliases of ember's own ops (``expit`` is ``sigmoid``,
``gammaln`` is ``lgamma``, ...). Values, dtypes, errors and derivatives are torch's; the
Bessel functions of torch.special (``bessel_j0``, ``modified_bessel_k1``, ...), ``airy_ai``
and the polynomials are not differentiable in torch, and their results do not require grad.
SciPy's kernels are used when the optional ``scipy`` extra is installed, ember's own
otherwise (see ``ember._ops.special_numpy``).
"""
from __future__ import annotations

from . import _ops
from ._numpy_operands import refusing_arrays
from ._ops import bessel as _bessel
from ._ops import polynomials as _poly
from ._ops import special as _special
from ._tensor import Tensor

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1",
    "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma",
    "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta", "Tensor"]


def _no_out(out):
    if out is not None:
        raise NotImplementedError("ember.special: out= is not supported")


def _unary(fn, name, doc):
    def call(input, *, out=None):  # noqa: A002 - torch's names
        _no_out(out)
        return fn(input)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


def _binary(fn, name, doc):
    def call(input, other, *, out=None):  # noqa: A002
        _no_out(out)
        return fn(input, other)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


def _tensors_only(name):
    """torch.special.gammainc(c) take tensors only (no Python numbers)."""
    def check(input, other):  # noqa: A002
        for pos, (arg, value) in enumerate((("input", input), ("other", other)), 1):
            if not isinstance(value, Tensor):
                raise TypeError(f"special_{name}(): argument '{arg}' (position {pos}) must be "
                                f"Tensor, not {type(value).__name__}")
    return check


# -- ember ops under torch.special's names ---------------------------------------------------
erf = _unary(_ops.special.erf, "erf", "The error function.")
erfc = _unary(_ops.special.erfc, "erfc", "The complementary error function ``1 - erf(x)``.")
erfinv = _unary(_ops.special.erfinv, "erfinv", "The inverse error function.")
erfcx = _unary(_special.erfcx, "erfcx", "The scaled complementary error function.")
ndtr = _unary(_special.ndtr, "ndtr", "The standard normal cumulative distribution function.")
ndtri = _unary(_special.ndtri, "ndtri", "The inverse of ``ndtr``.")
log_ndtr = _unary(_special.log_ndtr, "log_ndtr", "``log(ndtr(x))``.")
digamma = _unary(_special.digamma, "digamma", "The logarithmic derivative of the gamma "
                 "function.")
psi = _unary(_special.digamma, "psi", "Alias of ``digamma``.")
gammaln = _unary(_special.lgamma, "gammaln", "The log of the absolute value of the gamma "
                 "function.")
entr = _unary(_special.entr, "entr", "``-x log(x)`` (0 at 0, -inf for negative x).")
i0 = _unary(_bessel.i0, "i0", "The modified Bessel function of the first kind, order 0.")
i0e = _unary(_bessel.i0e, "i0e", "``exp(-|x|) i0(x)``.")
i1 = _unary(_bessel.i1, "i1", "The modified Bessel function of the first kind, order 1.")
i1e = _unary(_bessel.i1e, "i1e", "``exp(-|x|) i1(x)``.")


def _op_alias(name, doc):
    import ember
    return _unary(getattr(ember, name), name, doc)


exp2 = _op_alias("exp2", "``2 ** x``.")
expm1 = _op_alias("expm1", "``exp(x) - 1``, accurate near 0.")
log1p = _op_alias("log1p", "``log(1 + x)``, accurate near 0.")
sinc = _op_alias("sinc", "The normalized sinc function ``sin(pi x) / (pi x)``.")
expit = _unary(_ops.pointwise.sigmoid, "expit", "The logistic sigmoid ``1 / (1 + exp(-x))``.")

def _unary_x(fn, name, doc):
    """``_unary`` for the functions whose argument torch names ``x``."""
    def call(x, *, out=None):
        _no_out(out)
        return fn(x)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


for _name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
              "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
              "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
              "airy_ai"):
    _form = _unary_x if _name.startswith(("scaled", "spherical", "airy")) else _unary
    globals()[_name] = _form(getattr(_bessel, _name), _name,
                             getattr(_bessel, _name).kernel.__doc__)


def _polynomial(op, name):
    def call(x, n, *, out=None):
        _no_out(out)
        return op(x, n)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"The {name.replace('_', ' ')} of degree ``n`` at ``x``."
    return call


for _name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
              "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
              "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
              "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
              "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"):
    globals()[_name] = refusing_arrays(_polynomial(getattr(_poly, _name), _name),
                                       f"special_{_name}")

xlogy = _binary(_ops.binary.xlogy, "xlogy", "``input * log(other)`` (0 where input is 0).")
xlog1py = _binary(_special.xlog1py, "xlog1py",
                  "``input * log1p(other)`` (0 where input is 0).")
zeta = _binary(_special.zeta, "zeta", "The Hurwitz zeta function.")
xlogy, xlog1py, zeta = (refusing_arrays(fn, f"special_{fn.__name__}")
                        for fn in (xlogy, xlog1py, zeta))


def gammainc(input, other, *, out=None):  # noqa: A002
    """The regularized lower incomplete gamma function."""
    _no_out(out)
    _tensors_only("gammainc")(input, other)
    return _special.igamma(input, other)


def gammaincc(input, other, *, out=None):  # noqa: A002
    """The regularized upper incomplete gamma function."""
    _no_out(out)
    _tensors_only("gammaincc")(input, other)
    return _special.igammac(input, other)


def multigammaln(input, p, *, out=None):  # noqa: A002
    """The multivariate log-gamma function of dimension ``p``."""
    _no_out(out)
    return _special.mvlgamma(input, p)


def polygamma(n, input, *, out=None):  # noqa: A002
    """The ``n``-th derivative of the digamma function."""
    _no_out(out)
    return _special.polygamma(n, input)


def logit(input, eps=None, *, out=None):  # noqa: A002
    """``log(p / (1 - p))``, with ``p`` clamped to [eps, 1 - eps] when eps is given."""
    _no_out(out)
    import ember
    return ember.logit(input, eps)


def round(input, *, decimals=0, out=None):  # noqa: A001,A002
    """Round half to even (to ``decimals`` decimal places)."""
    _no_out(out)
    import ember
    return ember.round(input, decimals=decimals)


def softmax(input, dim, *, dtype=None):  # noqa: A002
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    import ember
    return ember.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):  # noqa: A002
    """``log(softmax(x))`` along ``dim``, computed stably."""
    import ember
    return ember.log_softmax(input, dim, dtype=dtype)


def logsumexp(input, dim, keepdim=False, *, out=None):  # noqa: A002
    """``log(sum(exp(x)))`` along ``dim``, computed stably."""
    import ember
    return ember.logsumexp(input, dim, keepdim, out=out)
