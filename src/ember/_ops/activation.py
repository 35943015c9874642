"""Activation functions: fused kernels with their derivative formulas, and a few composites.

Each op's kernel runs on raw arrays; its formula uses only Python operators and ember ops, so
the same formula gives first-order gradients on arrays and higher orders on Tensors.
"""
from __future__ import annotations

__all__ = ['celu', 'log_softmax', 'prelu', 'selu', 'softmax']

import functools
import math
import warnings

import numpy as np

from .. import _dtype as D
from .._cpu_capability import onednn_runs
from .._backend import get_xp, is_array, reduce_max, reduce_sum
from .._tensor import Tensor, _wrap_dim
from .pointwise import (add_scalar, exp, no_forward_ad, not_implemented, sigmoid, tanh,
                        threshold_backward, where, zero_gradient)
from .opmath import half_in_float32, number_now, reduced_now
from .reduction import contiguous_result
from .registry import op
from .replay import replay_form

FUNCTIONAL = ['celu', 'elu', 'elu_', 'gelu', 'glu', 'hardshrink', 'hardsigmoid', 'hardswish',
              'hardtanh', 'hardtanh_', 'leaky_relu', 'leaky_relu_', 'log_softmax', 'logsigmoid',
              'mish', 'prelu', 'relu6', 'rrelu', 'rrelu_', 'selu', 'silu', 'softmax', 'softmin',
              'softplus', 'softshrink', 'softsign', 'tanhshrink', 'threshold', 'threshold_',
              'celu_', 'selu_', 'relu_']

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715


def _floating(x, kernel, complex_ok=False):
    """torch's refusal of integer and bool inputs (and complex ones, mostly): its kernels for
    these activations exist for floating point types only."""
    if x.dtype.kind != "f" and not (complex_ok and x.dtype.kind == "c"):
        raise not_implemented(kernel, x)


def _check_hardtanh(x, min_val):
    if x.dtype.kind == "b":
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if x.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if x.dtype.kind == "u" and min_val < 0:
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")


def _run(opdef, inplace, *args):
    return opdef.inplace(*args) if inplace else opdef(*args)


# -- leaky_relu ------------------------------------------------------------------------------
@op("leaky_relu", elementwise=True, node="LeakyReluBackward0")
def _leaky_relu(self, negative_slope=0.01):
    _floating(self, "leaky_relu_cpu")
    slope = _opmath_slope(self, negative_slope)
    return get_xp(self).where(self > 0, self, self * slope).astype(self.dtype, copy=False)


def _opmath_slope(x, slope):
    """``slope`` as torch's float16 kernels take it: in float32 (their opmath type), the
    product rounded to float16 once (NumPy would round the slope to float16 first)."""
    return np.float32(slope) if x.dtype == np.float16 else slope


@_leaky_relu.grad("self")
def _(grad, self, negative_slope):
    return leaky_relu_backward(grad, self, negative_slope, False)


# NOTE: torch's in-place variants save the result, not the overwritten input: their own nodes.
@op("leaky_relu_", elementwise=True, node="LeakyReluBackward1")
def _leaky_relu_inplace(self, negative_slope=0.01):
    return _leaky_relu.kernel(self, negative_slope)


@_leaky_relu_inplace.grad("self")
def _(grad, result, negative_slope):
    return leaky_relu_backward(grad, result, negative_slope, True)


# NOTE: the gradients of piecewise-linear activations are ops of (grad_output, self), as
# torch's *_backward ops (see threshold_backward): second derivatives are zeros, in a graph.
@op("leaky_relu_backward", elementwise=True, tensors=2)
def leaky_relu_backward(grad_output, self, negative_slope, self_is_result):
    slope = _opmath_slope(grad_output, negative_slope)
    return get_xp(self).where(self > 0, grad_output, grad_output * slope).astype(
        grad_output.dtype, copy=False)


@leaky_relu_backward.grad("grad_output")
def _(grad, self, negative_slope):
    return leaky_relu_backward(grad, self, negative_slope, False)


@leaky_relu_backward.grad("self")
def _(grad):
    return zero_gradient(grad)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """max(0, x) + negative_slope * min(0, x), elementwise."""
    if inplace:
        return _leaky_relu_inplace.inplace(input, negative_slope)
    return _leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


# -- elu family ------------------------------------------------------------------------------
def _elu_kernel(x, alpha, scale, input_scale):
    _floating(x, "elu_cpu")
    xp = get_xp(x)
    # NOTE: torch's order: one coefficient alpha * scale, in the opmath type (float32 for
    # float16, whose result is rounded once), multiplying expm1(x * input_scale)
    a = x.astype(np.float32) if x.dtype == np.float16 else x
    coef = a.dtype.type(a.dtype.type(alpha) * a.dtype.type(scale))
    neg = xp.expm1(xp.minimum(0, a) * a.dtype.type(input_scale)) * coef  # (-0.0 stays -0.0)
    return xp.where(a > 0, a * a.dtype.type(scale), neg).astype(x.dtype, copy=False)


# NOTE: the gradient as one op, torch's elu_backward: create_graph records one node
# (EluBackwardBackward0, for elu, selu and celu alike) whose inputs are torch's.
@op("elu_backward", elementwise=True, tensors=2, node="EluBackwardBackward0")
@half_in_float32(2)
def elu_backward(grad_output, self_or_result, alpha, scale, input_scale, is_result):
    xp = get_xp(self_or_result)
    x = self_or_result
    # (torch's order, its coefficients in the computing dtype: alpha * scale is one)
    real = x.dtype.type
    coef, in_scale = real(real(alpha) * real(scale)), real(input_scale)
    if is_result:
        neg = grad_output * in_scale * (x + coef)
    else:
        # exp of the clamped input, so the unused branch never overflows (inf * 0 = nan)
        neg = grad_output * in_scale * coef * xp.exp(xp.minimum(x, 0) * in_scale)
    return xp.where(x > 0, grad_output * real(scale), neg)


@elu_backward.grad("grad_output")
def _(grad, self_or_result, alpha, scale, input_scale, is_result):
    return elu_backward(grad, self_or_result, alpha, scale, input_scale, is_result)


@elu_backward.grad("self_or_result")
def _(grad, grad_output, self_or_result, alpha, scale, input_scale, is_result):
    # NOTE: torch's elu_double_backward: zero at 0 too (strictly negative inputs only), though
    # the first derivative takes the exponential branch there.
    x = self_or_result
    negative = x < 0
    if is_result:
        return grad * grad_output * input_scale * negative
    return elu_backward(grad * grad_output * input_scale, x, alpha, scale, input_scale,
                        False) * negative


def _elu_grad(grad, x, alpha, scale, input_scale):
    return elu_backward(grad, x, alpha, scale, input_scale, False)


@op("elu", elementwise=True, node="EluBackward0")
def _elu(self, alpha=1, scale=1, input_scale=1):
    return _elu_kernel(self, alpha, scale, input_scale)


@_elu.grad("self")
def _(grad, self, alpha, scale, input_scale):
    return _elu_grad(grad, self, alpha, scale, input_scale)


@op("elu_", elementwise=True, node="EluBackward1")
def _elu_inplace(self, alpha=1, scale=1, input_scale=1):
    return _elu_kernel(self, alpha, scale, input_scale)


@_elu_inplace.grad("self")
def _(grad, result, alpha, scale, input_scale):
    return elu_backward(grad, result, alpha, scale, input_scale, True)


def _run_elu(inplace, *args):
    return _elu_inplace.inplace(*args) if inplace else _elu(*args)


@op("celu", elementwise=True, node="CeluBackward0")
def _celu(self, alpha=1.0):
    return _elu_kernel(self, alpha, 1.0, 1.0 / alpha)


@_celu.grad("self")
def _(grad, self, alpha):
    return _elu_grad(grad, self, alpha, 1.0, 1.0 / alpha)


@op("celu_", elementwise=True, node="CeluBackward1")
def _celu_inplace(self, alpha=1.0):
    return _elu_kernel(self, alpha, 1.0, 1.0 / alpha)


@_celu_inplace.grad("self")
def _(grad, result, alpha):
    return elu_backward(grad, result, alpha, 1.0, 1.0 / alpha, True)


def elu(input, alpha=1.0, inplace=False):
    """alpha * (exp(x) - 1) for x <= 0, x otherwise."""
    return _run_elu(inplace, input, alpha)


def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _run_elu(inplace, input, _SELU_ALPHA, _SELU_SCALE)


def selu_(input):
    return selu(input, True)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _celu_inplace.inplace(input, alpha) if inplace else _celu(input, alpha)


def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


# -- gelu, silu, mish, softplus, logsigmoid ---------------------------------------------------
def _erf(x):
    from .special import erf
    return erf(x)


@op("gelu", elementwise=True, node="GeluBackward0", quiet=True)
def _gelu(self, approximate="none"):
    _floating(self, "GeluKernelImpl")
    xp = get_xp(self)
    if approximate == "tanh":
        inner = _SQRT_2_PI * (self + _GELU_C * self * self * self)
        return (0.5 * self * (1 + xp.tanh(inner))).astype(self.dtype, copy=False)
    if (self.dtype.itemsize <= 4 and self.size > 1 and self.flags.c_contiguous
            and onednn_runs(self.dtype)):
        return _gelu_vectorized(self, xp)
    x = self.astype(xp.float32) if self.dtype.itemsize < 4 else self  # half: as torch, in float
    return (0.5 * x * (1 + _erf(x * _SQRT_1_2))).astype(self.dtype, copy=False)


def _gelu_vectorized(x, xp):
    """gelu as torch's oneDNN kernel computes it (the one it runs on a contiguous input of more
    than one element, of a type oneDNN takes on this CPU: _cpu_capability.onednn_runs; 2-byte
    types in float32): x (1 + erf(x/sqrt 2)) / 2 in that order, so a huge finite x overflows
    to inf, and +inf gives nan."""
    x32 = x.astype(xp.float32, copy=False)
    out = x32 * (1 + _erf(x32 * xp.float32(_SQRT_1_2))) * xp.float32(0.5)
    out[x32 == xp.inf] = xp.nan
    return out.astype(x.dtype, copy=False)


@_gelu.grad("self")
def _(grad, self, approximate):
    return gelu_backward(grad, self, approximate)


# NOTE: the gradients of gelu, softplus, hardswish and logsigmoid are ops of their own, as
# torch's *_backward ops: create_graph records torch's one node (GeluBackwardBackward0, ...).
@op("gelu_backward", elementwise=True, tensors=2, node="GeluBackwardBackward0")
@half_in_float32(2)
def gelu_backward(grad_output, self, approximate="none"):
    xp = get_xp(self)
    if approximate == "tanh":
        t = xp.tanh((self + self * self * self * _GELU_C) * _SQRT_2_PI)
        d_inner = (self * self * (3 * _GELU_C) + 1) * _SQRT_2_PI
        return grad_output * ((t + 1) * 0.5 + self * 0.5 * (1 - t * t) * d_inner)
    cdf = (_erf(self * _SQRT_1_2) + 1) * 0.5
    pdf = xp.exp(self * self * -0.5) * _INV_SQRT_2PI
    return grad_output * (cdf + self * pdf)


@gelu_backward.grad("grad_output")
def _(grad, self, approximate):
    return gelu_backward(grad, self, approximate)


@gelu_backward.grad("self")
def _(grad, grad_output, self, approximate):
    if approximate == "tanh":  # (1 - t^2) (u' + x/2 (u'' - 2 t u'^2)), u the tanh's argument
        t = tanh((self + self * self * self * _GELU_C) * _SQRT_2_PI)
        du = (self * self * (3 * _GELU_C) + 1) * _SQRT_2_PI
        ddu = self * (6 * _GELU_C * _SQRT_2_PI)
        second = (1 - t * t) * (du + self * 0.5 * (ddu - t * du * du * 2))
    else:  # pdf(x) (2 - x^2)
        second = exp(self * self * -0.5) * _INV_SQRT_2PI * (2 - self * self)
    return grad * grad_output * second


def gelu(input, approximate="none"):
    """x * Phi(x) (approximate='tanh': the tanh approximation)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _gelu(input, approximate)


@op("silu", elementwise=True, node="SiluBackward0", quiet=True)
@half_in_float32()
def _silu(self):
    _floating(self, "silu_cpu", complex_ok=True)
    # (torch's form; exp(-x) overflows to inf where x is very negative: -0.0, as torch's)
    return self / (1 + get_xp(self).exp(-self))


@_silu.grad("self")
def _(grad, self):
    if is_array(grad):  # (first order: torch runs its silu_backward kernel, see below)
        return _first_order_gradient(_silu_backward_values, grad, self)
    s = sigmoid(self)
    return grad * s * add_scalar(self * (1 - s), 1)  # torch's order (its nodes)


def _first_order_gradient(values, grad, x):
    """``values(grad, x)`` as torch's *_backward kernel computes it when no graph is recorded
    (silu's, mish's: their formulas use it outside grad mode): 2-byte floats in float32, the
    result rounded once, where the formula's ops would round after every step."""
    wide = x.astype(np.float32) if x.dtype.itemsize < 4 else x
    with np.errstate(over="ignore"):  # (exp(-x) overflows to inf where sigmoid is 0)
        out = values(grad.astype(wide.dtype, copy=False), wide, get_xp(wide))
    return out.astype(grad.dtype, copy=False)


def _silu_backward_values(grad, x, xp):
    s = 1 / (1 + xp.exp(-x))
    return grad * s * (1 + x * (1 - s))


def _mish_backward_values(grad, x, xp):
    s = 1 / (1 + xp.exp(-x))
    t = xp.tanh(xp.log1p(xp.exp(x)))
    return grad * (t + x * s * (1 - t * t))


def silu(input, inplace=False):
    """x * sigmoid(x), elementwise."""
    return _run(_silu, inplace, input)


@op("softplus", elementwise=True, node="SoftplusBackward0", quiet=True)
@half_in_float32()
def _softplus(self, beta=1.0, threshold=20.0):
    _floating(self, "softplus_cpu")
    xp = get_xp(self)
    z = self * beta
    return xp.where(z > threshold, self, xp.logaddexp(0, z) / beta).astype(self.dtype,
                                                                          copy=False)


@_softplus.grad("self")
def _(grad, self, beta, threshold):
    return softplus_backward(grad, self, beta, threshold)


@op("softplus_backward", elementwise=True, tensors=2, node="SoftplusBackwardBackward0")
@half_in_float32(2)
def softplus_backward(grad_output, self, beta, threshold):
    xp = get_xp(self)
    z = self * beta
    # sigmoid(z) = exp(-logaddexp(0, -z)), never overflowing
    return xp.where(z > threshold, grad_output,
                    grad_output * xp.exp(-xp.logaddexp(0, -z))).astype(grad_output.dtype,
                                                                       copy=False)


@softplus_backward.grad("grad_output")
def _(grad, self, beta, threshold):
    return softplus_backward(grad, self, beta, threshold)


@softplus_backward.grad("self")
def _(grad, grad_output, self, beta, threshold):
    z = self * beta
    s = sigmoid(z)
    return where(z > threshold, 0.0, grad * grad_output * (s * (1 - s) * beta))


def softplus(input, beta=1, threshold=20):
    """1/beta * log(1 + exp(beta * x)), linear above ``threshold``."""
    return _softplus(input, beta, threshold)


@op("mish", elementwise=True, node="MishBackward0", quiet=True)
@half_in_float32()
def _mish(self):
    _floating(self, "mish_cpu")
    xp = get_xp(self)
    return (self * xp.tanh(xp.logaddexp(0, self))).astype(self.dtype, copy=False)


@_mish.grad("self")
def _(grad, self):
    if is_array(grad):  # (first order: torch runs its mish_backward kernel)
        return _first_order_gradient(_mish_backward_values, grad, self)
    t = tanh(_softplus(self, 1.0, 20.0))
    return grad * (t + self * sigmoid(self) * (1 - t * t))


def mish(input, inplace=False):
    """x * tanh(softplus(x)), elementwise."""
    return _run(_mish, inplace, input)


@op("log_sigmoid", elementwise=True, node="LogSigmoidBackward0", quiet=True)
@half_in_float32()
def _logsigmoid(self):
    _floating(self, "log_sigmoid_cpu")
    xp = get_xp(self)  # torch's form: +0.0 (not -0.0) at +inf
    return (xp.minimum(self, 0) - xp.log1p(xp.exp(-xp.abs(self)))).astype(self.dtype, copy=False)


@_logsigmoid.grad("self")
def _(grad, self):
    return log_sigmoid_backward(grad, self)


@op("log_sigmoid_backward", elementwise=True, tensors=2, node="LogSigmoidBackwardBackward0")
def log_sigmoid_backward(grad_output, self):
    # NOTE: torch's kernel: its forward's buffer exp(-|x|) (in self's dtype, never
    # overflowing), then (max_deriv - sign * buffer / (1 + buffer)) * grad in the opmath type
    xp = get_xp(self)
    wide = np.float32 if self.dtype == np.float16 else self.dtype.type
    buffer = xp.exp(-xp.abs(self)).astype(reduced_now() or self.dtype).astype(wide)
    negative = self < 0
    sign = xp.where(negative, wide(1), wide(-1))
    out = (negative.astype(wide) - sign * (buffer / (1 + buffer))) * grad_output.astype(wide)
    return out.astype(grad_output.dtype, copy=False)


@log_sigmoid_backward.grad("grad_output")
def _(grad, self):
    return log_sigmoid_backward(grad, self)


@log_sigmoid_backward.grad("self")
def _(grad, grad_output, self):
    s = sigmoid(self)
    return grad * grad_output * (s * (s - 1))


def logsigmoid(input):
    """log(sigmoid(x)), elementwise."""
    return _logsigmoid(input)


# -- piecewise linear ------------------------------------------------------------------------
@op("hardtanh", elementwise=True, node="HardtanhBackward0", writes=1)
def _hardtanh(self, min_val=-1.0, max_val=1.0):
    _check_hardtanh(self, min_val)
    return get_xp(self).clip(self, min_val, max_val).astype(self.dtype, copy=False)


@_hardtanh.grad("self")
def _(grad, self, min_val, max_val):
    return hardtanh_backward(grad, self, min_val, max_val)


@op("hardtanh_backward", elementwise=True, tensors=2)
@half_in_float32(2)
def hardtanh_backward(grad_output, self, min_val, max_val):
    return get_xp(self).where((self <= min_val) | (self >= max_val), 0, grad_output)


@hardtanh_backward.grad("grad_output")
def _(grad, self, min_val, max_val):
    return hardtanh_backward(grad, self, min_val, max_val)


@hardtanh_backward.grad("self")
def _(grad):
    return zero_gradient(grad)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clipped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _run(_hardtanh, inplace, input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    """min(max(0, x), 6), elementwise."""
    return _run(_hardtanh, inplace, input, 0, 6)


def relu_(input):
    return input.relu_()


@op("hardsigmoid", elementwise=True, node="HardsigmoidBackward0")
@half_in_float32()
def _hardsigmoid(self):
    _floating(self, "hardsigmoid_cpu")
    # (torch's kernel: min(max(x + 3, 0), 6) / 6, rounded as it rounds)
    return (get_xp(self).clip(self + 3, 0, 6) / 6).astype(self.dtype, copy=False)


@_hardsigmoid.grad("self")
def _(grad, self):
    return hardsigmoid_backward(grad, self)


@_hardsigmoid.jvp("self")
def _(self_t, self):  # (elementwise: not derived from the backward, whose own has none)
    return hardsigmoid_backward(self_t, self)


@op("hardsigmoid_backward", elementwise=True, tensors=2, node="NotImplemented")
@half_in_float32(2)
def hardsigmoid_backward(grad_output, self):
    # (torch's kernel multiplies by its constant 1.0f / 6.0f, a float32 also for float64)
    one_sixth = grad_output.dtype.type(np.float32(1) / np.float32(6))
    return get_xp(self).where((self > -3.0) & (self < 3.0), grad_output * one_sixth, 0).astype(
        grad_output.dtype, copy=False)


def _hardsigmoid_second_order(grad):
    # torch defines no derivative of hardsigmoid_backward: a second backward through it fails
    raise RuntimeError("derivative for aten::hardsigmoid_backward is not implemented")


hardsigmoid_backward.grad("grad_output")(_hardsigmoid_second_order)
hardsigmoid_backward.grad("self")(_hardsigmoid_second_order)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6, elementwise."""
    return _run(_hardsigmoid, inplace, input)


@op("hardswish", elementwise=True, node="HardswishBackward0", quiet=True)
@half_in_float32()
def _hardswish(self):
    _floating(self, "hardswish_cpu")
    xp = get_xp(self)
    return (self * xp.clip(self + 3, 0, 6) / 6).astype(self.dtype, copy=False)


@_hardswish.grad("self")
def _(grad, self):
    return hardswish_backward(grad, self)


@op("hardswish_backward", elementwise=True, tensors=2, node="HardswishBackwardBackward0")
@half_in_float32(2)
def hardswish_backward(grad_output, self):
    xp = get_xp(self)
    return xp.where(self <= -3.0, 0, xp.where(self < 3.0, grad_output * (self / 3 + 0.5),
                                              grad_output)).astype(grad_output.dtype, copy=False)


@hardswish_backward.grad("grad_output")
def _(grad, self):
    return hardswish_backward(grad, self)


@hardswish_backward.grad("self")
def _(grad, grad_output, self):
    return where((self > -3.0) & (self < 3.0), grad * grad_output / 3.0, 0.0)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6, elementwise."""
    return _run(_hardswish, inplace, input)


def _check_lambd(input, lambd):
    if lambd < 0:
        import numpy as np
        fmax = float(np.finfo(input.dtype.np).max) if input.dtype.is_floating_point else 0.0
        raise RuntimeError(f"lambda must be in range [0, {fmax:g}] for input dtype "
                           f"{input.dtype.scalar_name}, but found {lambd:g}")


@op("softshrink", elementwise=True, node="SoftshrinkBackward0", quiet=True)
@half_in_float32()
def _softshrink(self, lambd=0.5):
    _floating(self, "softshrink_check")
    xp = get_xp(self)
    # NOTE: self * 0 in between, as torch: NaN stays NaN and -0.0 stays -0.0
    return xp.where(self > lambd, self - lambd,
                    xp.where(self < -lambd, self + lambd, self * 0)).astype(self.dtype,
                                                                          copy=False)


@_softshrink.grad("self")
def _(grad, self, lambd):
    return softshrink_backward(grad, self, lambd)


@op("softshrink_backward", elementwise=True, tensors=2)
def softshrink_backward(grad_output, self, lambd):
    lambd = number_now(lambd)  # (torch's kernel compares in the tensor's dtype: bfloat16's)
    return get_xp(self).where((self >= -lambd) & (self <= lambd), 0, grad_output)


@softshrink_backward.grad("grad_output")
def _(grad, self, lambd):
    return softshrink_backward(grad, self, lambd)


@softshrink_backward.grad("self")
def _(grad):
    return zero_gradient(grad)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 in between."""
    _check_lambd(input, lambd)
    return _softshrink(input, lambd)


@op("hardshrink", elementwise=True, node="HardshrinkBackward0")
def _hardshrink(self, lambd=0.5):
    _floating(self, "hardshrink_cpu")
    lambd = number_now(lambd)  # (torch's kernel compares in the tensor's dtype: bfloat16's)
    return get_xp(self).where((self >= -lambd) & (self <= lambd), 0, self).astype(
        self.dtype, copy=False)


@_hardshrink.grad("self")
def _(grad, self, lambd):
    return hardshrink_backward(grad, self, lambd)


@op("hardshrink_backward", elementwise=True, tensors=2)
def hardshrink_backward(grad_out, self, lambd):
    lambd = number_now(lambd)  # (as hardshrink's)
    return get_xp(self).where((self >= -lambd) & (self <= lambd), 0, grad_out)


@hardshrink_backward.grad("grad_out")
def _(grad, self, lambd):
    return hardshrink_backward(grad, self, lambd)


@hardshrink_backward.grad("self")
def _(grad):
    return zero_gradient(grad)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return _hardshrink(input, lambd)


@op("threshold", elementwise=True, node="ThresholdBackward0")
@half_in_float32()
def _threshold(self, threshold, value):
    if self.dtype.kind in "bc":
        raise not_implemented("threshold_cpu", self)
    # NOTE: value where self <= threshold (so NaN passes through, as in torch)
    return get_xp(self).where(self <= threshold, value, self).astype(self.dtype, copy=False)


@_threshold.grad("self")
def _(grad, self, threshold):
    return threshold_backward(grad, self, threshold)


@op("threshold_", elementwise=True, node="ThresholdBackward1")
def _threshold_inplace(self, threshold, value):
    return _threshold.kernel(self, threshold, value)


@_threshold_inplace.grad("self")
def _(grad, self, threshold):
    # NOTE: self as it was before being overwritten (the in-place path saves a copy), as
    # torch's ThresholdBackward1 saves it
    return threshold_backward(grad, self, threshold)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return _run(_threshold_inplace if inplace else _threshold, inplace, input, threshold, value)


def threshold_(input, threshold, value):
    return _threshold_inplace.inplace(input, threshold, value)


# -- rrelu ------------------------------------------------------------------------------------
def _noise_of(noise):
    return noise._data if isinstance(noise, Tensor) else noise


def _rrelu_kernel(x, noise, lower, upper, training):
    _floating(x, "leaky_relu_cpu")
    xp = get_xp(x)
    if training:
        return xp.where(x <= 0, x * _noise_of(noise), x).astype(x.dtype, copy=False)
    return _leaky_relu.kernel(x, (lower + upper) / 2)  # (torch's: leaky_relu's kernel)


# NOTE: ``noise`` (the slopes drawn for a training call) is not differentiable: a plain
# argument, as torch's node has one edge.
@op("rrelu_with_noise", node="RreluWithNoiseBackward0")
def _rrelu_with_noise(self, noise, lower, upper, training):
    return _rrelu_kernel(self, noise, lower, upper, training)


@_rrelu_with_noise.grad("self")
def _(grad, self, noise, lower, upper, training):
    return _rrelu_backward(grad, self, noise, lower, upper, training)


@op("rrelu_with_noise_", node="RreluWithNoiseBackward1")
def _rrelu_with_noise_inplace(self, noise, lower, upper, training):
    return _rrelu_kernel(self, noise, lower, upper, training)


_rrelu_with_noise_inplace.jvp("self")(no_forward_ad("rrelu_with_noise_"))  # (not out of place)


@_rrelu_with_noise_inplace.grad("self")
def _(grad, result, noise, lower, upper, training):
    return _rrelu_backward(grad, result, noise, lower, upper, training)


@op("rrelu_with_noise_backward", node="RreluWithNoiseBackwardBackward0", tensors=2)
def _rrelu_backward(grad_output, self, noise, lower, upper, training):
    if training and upper - lower > 1e-6:
        return grad_output * _noise_of(noise).astype(grad_output.dtype, copy=False)
    return leaky_relu_backward.kernel(grad_output, self, (lower + upper) / 2, False)


@_rrelu_backward.grad("grad_output")
def _(grad, self, noise, lower, upper, training):
    return _rrelu_backward(grad, self, noise, lower, upper, training)


@_rrelu_backward.grad("self")
def _(grad):
    return zero_gradient(grad)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) for the non-positive inputs when
    training; the mean slope (lower + upper) / 2 otherwise."""
    return rrelu_drawn(input, lower, upper, training, inplace, None)


def rrelu_drawn(input, lower, upper, training, inplace, generator):  # noqa: A002
    """``rrelu`` with its slopes drawn from ``generator`` (torch.rrelu's ``generator=``)."""
    noise = None
    if training:
        noise = _rrelu_noise(input._data, lower, upper, generator)
    if inplace:
        return _rrelu_with_noise_inplace.inplace(input, noise, lower, upper, bool(training))
    return _rrelu_with_noise(input, noise, lower, upper, bool(training))


def _rrelu_noise(x, lower, upper, generator=None):
    """torch's training slopes: one uniform draw per non-positive element, in order; 1
    elsewhere."""
    from .._backend.device import device_of
    from .._random import cpu_generator
    from .._random.generator import DeviceDraw, draw_for
    from .._random.sampling import rrelu_slopes
    xp = get_xp(x)
    flat = xp.ascontiguousarray(x).ravel()
    nonpositive = flat <= 0
    noise = xp.ones(flat.shape, x.dtype)
    count = int(nonpositive.sum())
    if count:
        draw = draw_for(generator, device_of(x))
        if isinstance(draw, DeviceDraw):
            slopes = draw.sample("rrelu_slopes", count, x.dtype, lower, upper)
        else:
            slopes = xp.asarray(rrelu_slopes(cpu_generator(generator), count, x.dtype, lower,
                                             upper))
        noise[nonpositive] = slopes
    return noise.reshape(x.shape)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return rrelu_drawn(input, lower, upper, training, True, generator)


def tanhshrink(input):
    """x - tanh(x), elementwise."""
    return input - tanh(input)


def softsign(input):
    """x / (1 + |x|), elementwise."""
    return input / (input.abs() + 1)


# -- prelu -----------------------------------------------------------------------------------
@op("_prelu_kernel", node="PreluKernelBackward0", tensors=2)
def _prelu(self, weight):
    _floating(self, "prelu_cpu")
    return get_xp(self).where(self > 0, self, self * weight)


@_prelu.grad("self", "weight")
def _(grad, self, weight):
    # one call of torch's fused backward for both gradients (the weight's in the broadcast
    # shape: autograd sums it to the weight's), so create_graph records its
    # PreluKernelBackwardBackward0 (edges: the upstream gradient, the input, the weight)
    return _prelu_kernel_backward(grad, self, weight)


@op("_prelu_kernel_backward", node="PreluKernelBackwardBackward0", tensors=3, outputs=2,
    undefined_grads=True)
def _prelu_kernel_backward(grad_output, self, weight):
    xp = get_xp(self)
    positive = self > 0
    return (xp.where(positive, grad_output, grad_output * weight),
            xp.where(positive, 0.0, grad_output * self).astype(self.dtype, copy=False))


# NOTE: torch's derivatives of the backward compare with >= 0 where the kernel has > 0 (they
# differ at an input of exactly 0); a gradient with no incoming gradient is zeros, as torch's.
@_prelu_kernel_backward.grad("grad_output")
def _(grads, self, weight):
    gg_self, gg_weight = grads
    nonnegative = self >= 0
    if gg_self is None:
        return where(nonnegative, 0.0, gg_weight * self)
    other = gg_self * weight if gg_weight is None else gg_self * weight + gg_weight * self
    return where(nonnegative, gg_self, other)


@_prelu_kernel_backward.grad("self")
def _(grads, grad_output, self):
    gg_weight = grads[1]
    if gg_weight is None:
        return zero_gradient(self)
    return where(self >= 0, 0.0, grad_output * gg_weight)


@_prelu_kernel_backward.grad("weight")
def _(grads, grad_output, self):
    gg_self = grads[0]
    if gg_self is None:
        return zero_gradient(self)
    return where(self >= 0, 0.0, grad_output * gg_self)


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), one weight per channel (dim 1) or one in all."""
    n = weight.numel()
    if n != 1:
        if input.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim >= 2 else 1
        if n != channels:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {n} and channel size = {channels}.")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim}")
    if input.ndim >= 2:
        # (torch's shape, a shared weight too: the gradient sums to it with keepdim and no view)
        weight = weight.reshape([1, n] + [1] * (input.ndim - 2))
    return _prelu(input, weight)


# -- softmax family --------------------------------------------------------------------------
def _softmax_kernel(x, dim, log):
    if (type(x) is np.ndarray and x.ndim == 2 and dim in (1, -1) and x.size
            and x.dtype.kind == "f" and x.dtype.itemsize >= 4):
        return _softmax_of_rows(x, log)
    if x.ndim == 0:  # one element (NaN for NaN and infinities, as in torch)
        return _softmax_kernel(x.reshape(1), 0, log).reshape(())
    xp = get_xp(x)
    acc = x.astype(xp.float32) if x.dtype.type is xp.float16 else x
    m = reduce_max(acc, dim, True) if acc.size else acc
    # NOTE: shifted by the maximum even when it is infinite, as torch: a row holding inf
    # is all NaN
    z = acc - m
    if log:
        out = z - xp.log(reduce_sum(xp.exp(z), dim, True))
    else:
        e = xp.exp(z)
        out = e / reduce_sum(e, dim, True)
    return out if acc is x else out.astype(x.dtype)


def _softmax_of_rows(x, log):
    """The kernel's steps on a float32/float64 NumPy matrix's rows (the usual case, written
    out: inside a training step each Python call costs several times what it costs alone).

    NOTE: NumPy reduces and broadcasts along a short last axis row by row, one inner loop
    per row (a (512, 10) array's maximum: 28 µs). The maximum is taken down the columns of a
    transposed copy instead (3 µs, the copy included; the same value whatever the order),
    and short rows are summed by one matrix-vector product (see _row_sums); from 128 rows
    every step is vectorised across the rows (see _softmax_of_short_rows). Measured right
    after a W2-sized matrix product, as inside a step, a (64, 10) log_softmax takes 8.4 µs
    here, 9.7 with NumPy's row sums or on the transposed copy.
    """
    rows, n = x.shape
    short = n <= _SHORT_ROW and x.flags.c_contiguous
    if short and rows >= 16:
        if rows >= 128:
            return _softmax_of_short_rows(x, log)
        return _softmax_of_some_short_rows(_ones_column(n, x.dtype), log, x)
    return _shifted_softmax(x, np.maximum.reduce(x, axis=1, keepdims=True), log,
                            _ones_column(n, x.dtype) if short else None)


def _softmax_of_some_short_rows(ones, log, x):
    """The kernel's steps on 16 to 127 short rows of a C-contiguous matrix (``ones``: the
    column of ones _row_sums multiplies by), the maximum taken down a transposed copy's
    columns. (A compiled program calls it for such a matrix, its ``ones`` bound once.)"""
    return _shifted_softmax(x, np.maximum.reduce(np.ascontiguousarray(x.T), axis=0)[:, None],
                            log, ones)


def _log_softmax_of_some_short_rows(ones, x):
    """_softmax_of_some_short_rows's log-softmax, its NumPy calls (the same ones, so the same
    bits) in one frame and without its choices (a compiled program calls it, its ``ones``
    bound once). NumPy's functions are read from module names, the axis given by position
    and ``[:, None]``'s index made once: a dozen bytecodes fewer at each call."""
    z = _np_subtract(x, _np_max_reduce(_np_ascontiguous(x.T), 0)[_AS_COLUMN])
    total = _np_matmul(_np_exp(z), ones)
    return _np_subtract(z, _np_log(total, out=total), out=z)


_np_subtract, _np_matmul, _np_exp, _np_log = np.subtract, np.matmul, np.exp, np.log
_np_max_reduce, _np_ascontiguous = np.maximum.reduce, np.ascontiguousarray
_AS_COLUMN = (slice(None), None)  # ([:, None])


def _shifted_softmax(x, m, log, ones):
    """The rows' (log-)softmax from their maxima ``m``; the sums by a product with ``ones``
    (short C-contiguous rows, see _row_sums) or NumPy's reduction (``ones`` None)."""
    z = np.subtract(x, m)
    e = np.exp(z) if log else np.exp(z, out=z)
    total = np.add.reduce(e, axis=1, keepdims=True) if ones is None else np.matmul(e, ones)
    if log:
        return np.subtract(z, np.log(total, out=total), out=z)
    return np.divide(e, total, out=e)


_SHORT_ROW = 32  # the longest rows summed by _row_sums


def _row_sums(a):
    """Each row's sum of a C-contiguous float32/float64 NumPy matrix of short rows, as a
    column: one matrix-vector product with ones.

    NOTE: NumPy's reduction along a short last axis runs one inner loop per row (a (64, 10)
    array: 2.5 µs); BLAS's product is one call (0.7 µs). Each product with 1.0 is exact, so
    the sums are the rows' values added in BLAS's order (torch's vectorised sums have an
    order of their own too); NaN and infinities propagate as in any sum.
    """
    return np.matmul(a, _ones_column(a.shape[1], a.dtype))


@functools.lru_cache(maxsize=64)
def _ones_column(n, dtype):
    """An (n, 1) column of ones (made once per length and dtype, read-only)."""
    ones = np.ones((n, 1), dtype)
    ones.flags.writeable = False
    return ones


def _softmax_of_short_rows(x, log):
    """The kernel's steps on a transposed copy of many short rows, the rows as its columns.

    NOTE: there every step is vectorised across the rows (a (512, 10) log_softmax: 46 ->
    13 µs, the copies included); the two copies cost two NumPy calls, which fewer than 128
    rows do not win back inside a training step. Each row's sum is then sequential, not
    NumPy's pairwise one, which for rows this short is as close to torch's.
    """
    n = x.shape[-1]
    z = np.ascontiguousarray(x.T)
    z -= np.maximum.reduce(z, axis=0)
    e = np.exp(z)
    total = np.add.reduce(e, axis=0)
    out = np.empty(x.shape, x.dtype)  # (the last step writes it through its transpose)
    if log:
        np.subtract(z, np.log(total, out=total), out=out.T)
    else:
        np.divide(e, total, out=out.T)
    return out


def _sum_dim(x, dim):
    from .reduction import sum as sum_
    if x.ndim == 0:
        return x
    if is_array(x) and x.dtype.itemsize >= 4:  # a raw float32/64 gradient (first order):
        return reduce_sum(x, dim, True)  # the array's own reduction, as sum's kernel
    return sum_(x, dim, keepdim=True)


def _refuse_half_to_float(self, dim, half_to_float=False):
    """torch's CPU kernels of _softmax and _log_softmax have no half-to-float form."""
    if half_to_float and isinstance(self, Tensor) and self.device.type == "cpu":
        raise RuntimeError("softmax with half to float conversion is not supported on CPU")


@op("_softmax", node="SoftmaxBackward0", quiet=True, check=_refuse_half_to_float)
@contiguous_result
def _softmax(self, dim, half_to_float=False):
    return _softmax_kernel(self, dim, False)


@_softmax.grad("self")
def _(grad, result, dim):
    return softmax_backward_data(grad, result, dim)


@op("_safe_softmax", node="SafeSoftmaxBackward0", quiet=True)
@contiguous_result
def safe_softmax(self, dim):
    """softmax, but 0 (not NaN) over a slice that is -inf throughout (attention's rows
    masked out entirely); its gradient there is 0 too, as the formula multiplies by it."""
    out = _softmax_kernel(self, dim, False)
    if not out.size:
        return out
    xp = get_xp(out)
    masked_out = (self == -math.inf).all(axis=dim, keepdims=True)
    return xp.where(masked_out, out.dtype.type(0), out)


@safe_softmax.grad("self")
def _(grad, result, dim):
    return softmax_backward_data(grad, result, dim)


# Softmax's and log_softmax's gradients are ops of their own, as in torch, so that a second
# derivative is recorded as SoftmaxBackwardDataBackward0 (and log_softmax's likewise).
@op("_softmax_backward_data", tensors=2, node="SoftmaxBackwardDataBackward0", quiet=True)
def softmax_backward_data(grad_output, output, dim):
    if _plain_pair(grad_output, output):
        # (the formula's operations in its order, each written into the product's fresh
        # array: two allocations and the ops' dispatch fewer)
        xp = get_xp(output)
        product = xp.multiply(grad_output, output)
        xp.subtract(grad_output, _sums_along(product, dim), out=product)
        return xp.multiply(output, product, out=product)
    return output * (grad_output - _sum_dim(grad_output * output, dim))


@softmax_backward_data.grad("grad_output")
def _(grad, output, dim):
    return softmax_backward_data(grad, output, dim)  # its Jacobian is symmetric


@softmax_backward_data.grad("output")
def _(grad, grad_output, output, dim):
    return (grad_output * grad - grad * _sum_dim(grad_output * output, dim)
            - grad_output * _sum_dim(grad * output, dim))


@op("_log_softmax", node="LogSoftmaxBackward0", quiet=True, check=_refuse_half_to_float)
@contiguous_result
def _log_softmax(self, dim, half_to_float=False):
    return _softmax_kernel(self, dim, True)


@replay_form(_softmax)
def _(self, dim, half_to_float=False):
    return _softmax_replay_form(self, dim, False)


@replay_form(_log_softmax)
def _(self, dim, half_to_float=False):
    return _softmax_replay_form(self, dim, True)


def _softmax_replay_form(x, dim, log):
    """A (log-)softmax kernel's call on 16 to 127 short rows of a C-contiguous float32/64
    NumPy matrix (W2's logits): the one function its path ends in, whose result is
    contiguous already (contiguous_result's test passes it as it is)."""
    if (type(x) is np.ndarray and x.ndim == 2 and dim in (1, -1) and x.dtype.kind == "f"
            and x.dtype.itemsize >= 4 and 16 <= x.shape[0] < 128 and 1 < x.shape[1] <= _SHORT_ROW
            and x.flags.c_contiguous):
        ones = _ones_column(x.shape[1], x.dtype)
        return (functools.partial(_log_softmax_of_some_short_rows, ones) if log
                else functools.partial(_softmax_of_some_short_rows, ones, log)), (0,)
    return None


@_log_softmax.grad("self")
def _(grad, result, dim):
    return log_softmax_backward_data(grad, result, dim)


@op("_log_softmax_backward_data", tensors=2, node="LogSoftmaxBackwardDataBackward0", quiet=True)
def log_softmax_backward_data(grad_output, output, dim):
    if _plain_pair(grad_output, output):
        return _plain_log_softmax_gradient(grad_output, output, dim, get_xp(output))
    return grad_output - exp(output) * _sum_dim(grad_output, dim)


def _plain_log_softmax_gradient(grad_output, output, dim, xp=np):
    """The kernel on a plain pair (see _plain_pair)."""
    return _log_softmax_gradient(grad_output, output, _sums_along(grad_output, dim), xp)


def _log_softmax_gradient(grad_output, output, sums, xp):
    """``grad_output - exp(output) * sums``.

    NOTE: the same operations in the same order, the product and the difference written into
    exp's fresh array: two NumPy calls and two allocations fewer than through the ops
    (cross-entropy's gradient, once per training step, runs here)."""
    e = xp.exp(output)
    e *= sums
    return xp.subtract(grad_output, e, out=e)


@replay_form(log_softmax_backward_data)
def _(grad_output, output, dim):
    # (a pair of NumPy arrays: the test depends on types, dtypes and shapes alone)
    if not (type(output) is np.ndarray and type(grad_output) is np.ndarray
            and _plain_pair(grad_output, output)):
        return None
    if output.ndim == 2 and dim in (1, -1) and output.shape[1] <= _SHORT_ROW:
        return functools.partial(_log_softmax_gradient_of_short_rows,
                                 _ones_column(output.shape[1], output.dtype)), (0, 1, 2)
    return _plain_log_softmax_gradient, (0, 1, 2)


def _log_softmax_gradient_of_short_rows(ones, grad_output, output, dim):
    """The kernel on a plain pair of short-row NumPy matrices (``ones``: their column of
    ones): _sums_along's path, but for the output gradient's layout (the caller's), read at
    each call."""
    sums = (np.matmul(grad_output, ones) if grad_output.flags.c_contiguous
            else np.add.reduce(grad_output, axis=dim, keepdims=True))
    # (_log_softmax_gradient's lines on NumPy: no call, cross-entropy's at every step)
    e = np.exp(output)
    e *= sums
    return np.subtract(grad_output, e, out=e)


def _sums_along(a, dim):
    """``a``'s sums along ``dim``, kept as a dimension of one (a NumPy matrix's short rows by
    _row_sums)."""
    if (type(a) is np.ndarray and a.ndim == 2 and dim in (1, -1) and a.shape[1] <= _SHORT_ROW
            and a.flags.c_contiguous):
        return _row_sums(a)
    return reduce_sum(a, dim, True)


def _plain_pair(a, b):
    """Two float32/float64 arrays of one shape and dtype, not 0-d (a kernel may compute on
    them with the array module's own calls: no reduced-precision rounding rules apply)."""
    # (NumPy arrays, a backward pass's usual gradients, told without is_array's calls)
    return ((type(a) is _ndarray and type(b) is _ndarray or is_array(a) and is_array(b))
            and a.dtype == b.dtype and a.dtype.kind == "f" and a.dtype.itemsize >= 4
            and a.shape == b.shape and a.ndim > 0)


_ndarray = np.ndarray


@log_softmax_backward_data.grad("grad_output")
def _(grad, output, dim):
    return grad - _sum_dim(grad * exp(output), dim)


@log_softmax_backward_data.grad("output")
def _(grad, grad_output, output, dim):
    return -grad * exp(output) * _sum_dim(grad_output, dim)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _prepare_softmax(input, dim, dtype, name):
    if dim is None:
        dim = _softmax_dim(name, input.ndim, 4)
    dim = _wrap_dim(dim, input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    elif input.dtype.category != D.FLOATING:  # (integers, bool and complex: no kernel)
        kernel = "lastdim_kernel_impl" if dim == max(input.ndim, 1) - 1 else "kernel_impl"
        raise NotImplementedError(f'"{name}_{kernel}" not implemented for '
                                  f"'{input.dtype.scalar_name}'")
    return input, dim


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``."""
    input, dim = _prepare_softmax(input, dim, dtype, "softmax")
    return _softmax(input, dim, False)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along ``dim``, computed stably."""
    input, dim = _prepare_softmax(input, dim, dtype, "log_softmax")
    return _log_softmax(input, dim, False)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along ``dim``."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, 3)
    return softmax(-input, dim, dtype=dtype)  # (torch negates first, then converts)


Tensor.softmax = lambda self, dim, dtype=None: softmax(self, dim, dtype=dtype)
Tensor.log_softmax = lambda self, dim, dtype=None: log_softmax(self, dim, dtype=dtype)


# -- glu -------------------------------------------------------------------------------------
@op("glu", node="GluBackward0", quiet=True)
def _glu(self, dim=-1):
    _floating(self, "glu_cpu")
    xp = get_xp(self)
    a, b = xp.split(self, 2, axis=dim)
    return a * sigmoid(b)


@_glu.grad("self")
def _(grad, self, dim):
    return glu_backward(grad, self, dim)


# glu's gradient is an op of its own, as in torch, so that create_graph records its
# GluBackwardBackward0 (edges: the upstream gradient and the input).
@op("glu_backward", tensors=2, node="GluBackwardBackward0", quiet=True)
def glu_backward(grad_output, self, dim):
    xp = get_xp(self)
    a, b = xp.split(self, 2, axis=dim)
    s = sigmoid(b)
    return xp.concatenate([grad_output * s, grad_output * a * s * (1 - s)], axis=dim)


def _halves(x, dim):
    from .shape import split
    return split(x, x.shape[dim] // 2, dim)


@glu_backward.grad("grad_output")
def _(grad, self, dim):
    # the gradient is linear in grad_output: glu's gradient for an upstream of ones, times grad
    ga, gb = _halves(grad, dim)
    a, b = _halves(self, dim)
    s = sigmoid(b)
    return ga * s + gb * a * s * (1 - s)


@glu_backward.grad("self")
def _(grad, grad_output, self, dim):
    from .shape import cat
    ga, gb = _halves(grad, dim)
    a, b = _halves(self, dim)
    s = sigmoid(b)
    s1 = 1 - s
    ds = s * s1  # d sigmoid(b) / d b
    d_a = gb * grad_output * ds
    d_b = ga * grad_output * ds + gb * a * grad_output * (ds * s1 - s * ds)
    return cat([d_a, d_b], dim)


def glu(input, dim=-1):
    """a * sigmoid(b), where a and b are the halves of ``input`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _wrap_dim(dim, input.ndim)
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    return _glu(input, dim)  # (as given: torch's node shows the dim unwrapped)


# torch's kernels that write their results through these out= functions, whose autograd
# layer refuses an inference dual (see forward_ad._check_out_function)
_hardtanh.out_function = "hardtanh_out"
