"""Normalization: batch, layer, group, instance and local response norm.

batch_norm, layer_norm and group_norm are fused primitives: the forward computes the
statistics once and applies one scale-and-shift. Their derivative formulas recompute the
statistics from the saved input with ember ops (cheap next to the GEMMs around them), so the
same formula, handed Tensors under create_graph, gives exact second derivatives.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .._backend import get_xp
from .._backend.fp_errors import quietly
from .._tensor import Tensor
from .reduction import mean, sum as _sum
from . import layer_norm_kernels
from .registry import NONE, op
from .shape import expand, raw as _raw, reshape

__all__ = ["layer_norm", "group_norm"]
# nn.functional names (ember.nn.functional collects FUNCTIONAL of every nn family).
FUNCTIONAL = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "local_response_norm"]


def _stats(x, axes, eps):
    """Mean and 1/sqrt(biased var + eps) over ``axes`` (kept), on raw arrays."""
    xp = get_xp(x)
    if any(x.shape[a] == 0 for a in axes):  # nothing to average: NaN, as torch (no warning)
        nan = xp.full([1 if a in axes else n for a, n in enumerate(x.shape)], xp.nan, x.dtype)
        return nan, nan, nan
    m = x.mean(axis=axes, keepdims=True)
    d = x - m
    var = (d * d).mean(axis=axes, keepdims=True)
    return m, var, 1.0 / xp.sqrt(var + eps)


def _normalized(x, axes, eps):
    """(x - mean) * rstd with ember ops: differentiable under create_graph."""
    from .pointwise import sqrt
    m = mean(x, axes, keepdim=True)
    d = x - m
    rstd = 1.0 / sqrt(mean(d * d, axes, keepdim=True) + eps)
    return d * rstd, rstd


def _norm_grad_input(gw, xhat, rstd, axes):
    """d/dx of an affine-free normalization over ``axes`` given grad*weight ``gw``."""
    return rstd * (gw - mean(gw, axes, keepdim=True) - xhat * mean(gw * xhat, axes,
                                                                       keepdim=True))


def _channel_shape(ndim):
    return (1, -1) + (1,) * (ndim - 2)


def _check_mixed_dtypes(input, *params):  # noqa: A002
    """torch's CPU rule for normalization parameters: all of the input's dtype, or all float32
    under a float16/bfloat16 input."""
    from .. import _dtype as D
    defined = [p for p in params if p is not None]
    if not defined:
        return
    if defined[0].dtype == input.dtype:
        for p in defined[1:]:
            if p.dtype != input.dtype:
                raise RuntimeError(f"expected scalar type {input.dtype.scalar_name} but found "
                                   f"{p.dtype.scalar_name}")
        return
    if any(p.dtype != D.float32 for p in defined):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    if input.dtype not in (D.float16, D.bfloat16):
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


# -- batch norm ---------------------------------------------------------------------------------
@op("native_batch_norm", tensors=3, promote=NONE, node="NativeBatchNormBackward0",
    checked=("running_mean", "running_var"))
def batch_norm_op(input, weight, bias, running_mean, running_var, training,  # noqa: A002
                  momentum, eps):
    xp = get_xp(input)
    axes = (0,) + tuple(range(2, input.ndim))
    cs = _channel_shape(input.ndim)
    cpu_float32 = training and _cpu_float32_kernel(input)
    if training:
        m, var, rstd = training_stats(input, axes, eps)
        if running_mean is not None or running_var is not None:
            _update_running(running_mean, running_var, m.reshape(-1), var.reshape(-1),
                            input.size // input.shape[1], momentum)
    else:
        m = _raw(running_mean).reshape(cs)
        # (a negative running variance gives NaN without a word, as torch's)
        rstd = (1.0 / quietly(xp.sqrt, _raw(running_var) + eps)).astype(input.dtype).reshape(cs)
    scale = rstd if weight is None else rstd * weight.reshape(cs)
    if cpu_float32:
        return _cpu_float32_affine(input, m, scale, None if bias is None else bias.reshape(cs))
    shift = -m * scale if bias is None else bias.reshape(cs) - m * scale
    # NOTE: float16 input with float32 parameters (torch's mixed CPU mode) stays float16.
    return (input * scale + shift).astype(input.dtype, copy=False)


# (in training its kernel updates the running statistics, without a version: see
# _update_running)
batch_norm_op.updates_taken = "training"


def _cpu_float32_kernel(x):
    """Whether torch's CPU batch norm of ``x`` has the float32 rounding emulated below: a
    contiguous float32 batch of images larger than 1x1 (torch reduces an (N, C) batch with its
    channels-last kernel, whose float32 partial sums depend on the thread count: such batches,
    and every other, keep the plain statistics)."""
    return (get_xp(x) is np and x.dtype == np.float32 and x.size > 0 and x.flags.c_contiguous
            and x.size // (x.shape[0] * x.shape[1]) > 1)


def training_stats(x, axes, eps):
    """A batch's mean, biased variance and 1/sqrt(var + eps) over ``axes`` (kept)."""
    if _cpu_float32_kernel(x):
        return _cpu_float32_stats(x, axes, eps)
    return _stats(x, axes, eps)


def _cpu_float32_stats(x, axes, eps):
    """torch's CPU statistics of a contiguous float32 batch: the sum in float64, the mean
    rounded to float32, the float32 squared deviations summed in float64 and rounded to float32,
    the variance that sum over n in float32, and 1/sqrt(var + eps) in float64 rounded."""
    n = x.size // x.shape[1]
    with np.errstate(invalid="ignore", over="ignore"):  # (inf and NaN: torch is silent)
        m = (x.sum(axis=axes, dtype=np.float64, keepdims=True) / n).astype(np.float32)
        d = x - m
        var_sum = (d * d).sum(axis=axes, dtype=np.float64, keepdims=True).astype(np.float32)
        var = var_sum / np.float32(n)
        rstd = (1.0 / np.sqrt(var.astype(np.float64) + eps)).astype(np.float32)
    return m, var, rstd


def _cpu_float32_affine(x, m, scale, bias):
    """torch's CPU kernel applies ``x * scale + shift``, ``shift = bias - m * scale``, each a
    fused multiply-add (one rounding; emulated in float64, where the products are exact)."""
    shift = -(m.astype(np.float64) * scale)
    if bias is not None:
        shift += bias
    shift = shift.astype(np.float32).astype(np.float64)
    scale = scale.astype(np.float64)
    out = np.empty_like(x)
    # (a few samples at a time, so that the float64 products stay in cache)
    per = max(1, _AFFINE_CHUNK // max(1, x[0].size))
    buf = np.empty((min(per, x.shape[0]),) + x.shape[1:], np.float64)
    for i in range(0, x.shape[0], per):
        products = buf[:min(per, x.shape[0] - i)]
        np.multiply(x[i:i + per], scale, out=products)
        products += shift
        out[i:i + per] = products
    return out


_AFFINE_CHUNK = 1 << 17  # float64 elements: 1 MiB


def _update_running(running_mean, running_var, m, var, n, momentum):
    """torch's in-place running statistics update (unbiased variance). Their versions stay:
    torch's kernel writes their memory without counting a write (only a module's own
    ``num_batches_tracked += 1`` counts)."""
    with np.errstate(all="ignore"):
        if running_mean is not None:
            rm = _raw(running_mean)
            rm *= 1 - momentum
            rm += (momentum * m).astype(rm.dtype)
        if running_var is not None:
            rv = _raw(running_var)
            rv *= 1 - momentum
            rv += (momentum * var * (n / max(n - 1, 1) if n > 1 else np.inf)).astype(rv.dtype)


def _const(array, like):
    """A constant array in the formula's mode: a Tensor beside Tensors, else the array."""
    if isinstance(like, Tensor):
        from .._tensor import _wrap
        return _wrap(array)
    return array


@batch_norm_op.grad("input", "weight", "bias")
def _(grad, input, weight, bias, running_mean, running_var, training, eps):  # noqa: A002
    # one call of torch's fused backward for the three gradients: under create_graph they
    # share its NativeBatchNormBackwardBackward0 node, with torch's five edges (the statistics
    # are constants there: the op's own derivatives account for them)
    if training:
        m, _, rstd = training_stats(_raw(input), (0,) + tuple(range(2, input.ndim)), eps)
        m, rstd = m.reshape(-1), rstd.reshape(-1)
    else:
        rv = _raw(running_var)
        m, rstd = _raw(running_mean), (1.0 / get_xp(rv).sqrt(rv + eps)).astype(rv.dtype)
    return native_batch_norm_backward(grad, input, weight, _const(m, input),
                                      _const(rstd, input), training, bias is not None)


# NOTE: torch computes only the gradients its output_mask asks for; this kernel skips the
# parameters that are None (an empty array stands for their gradient). ``mean``/``invstd``
# are the batch's statistics in training, the running ones (1/sqrt(var + eps)) in eval.
@op("native_batch_norm_backward", tensors=5, promote=NONE, outputs=3, undefined_grads=True,
    node="NativeBatchNormBackwardBackward0")
def native_batch_norm_backward(grad_out, input, weight, mean, invstd, training,  # noqa: A002
                               has_bias):
    xp = get_xp(input)
    none = xp.empty((0,), input.dtype)
    if training and _cpu_float32_backward_kernel(input):
        gi, g_weight, g_bias = _cpu_float32_backward(grad_out, input, weight, mean, invstd)
        return gi, none if weight is None else g_weight, g_bias if has_bias else none
    axes = (0,) + tuple(range(2, input.ndim))
    cs = _channel_shape(input.ndim)
    rstd = invstd.reshape(cs)
    # NOTE: per channel, gi = a * grad_out + b * (input - mean) + c, whose a, b and c follow
    # from two sums (of grad_out, and of grad_out * (input - mean)): a few passes over the
    # batch instead of normalizing the input and reducing twice more
    centered = input - mean.reshape(cs)
    sum_dy = grad_out.sum(axis=axes)
    dot = (grad_out * centered).sum(axis=axes)
    scale = rstd if weight is None else rstd * weight.reshape(cs)
    gi = grad_out * scale
    if training:
        n = input.size // input.shape[1]
        centered *= -(scale * rstd * rstd * dot.reshape(cs) / n)
        gi += centered
        gi -= scale * sum_dy.reshape(cs) / n
    g_weight = none if weight is None else dot * invstd
    g_bias = sum_dy if has_bias else none
    return gi.astype(input.dtype, copy=False), g_weight, g_bias


_LANES = 8  # the float32 lanes of the Vectorized sums in torch's CPU batch norm backward


def _cpu_float32_backward_kernel(x):
    """Whether torch's CPU batch norm backward of ``x`` in training has the float32 rounding
    emulated below: the batches of :func:`_cpu_float32_kernel` whose planes (one sample's
    channel) are whole vectors of 8 lanes (a plane's ragged tail is summed otherwise)."""
    return _cpu_float32_kernel(x) and (x.size // (x.shape[0] * x.shape[1])) % _LANES == 0


def _plane_sums(planes):
    """torch's vec::reduce_all of each plane (the last axis, whole 8-lane vectors): the vectors
    added into the first lane by lane, then the lanes halved by shuffles (i + i+4, then
    i + i+2, then i + i+1)."""
    acc = planes[..., :_LANES].copy()
    for start in range(_LANES, planes.shape[-1], _LANES):
        acc += planes[..., start:start + _LANES]
    half = acc[..., :4] + acc[..., 4:]
    quarter = half[..., :2] + half[..., 2:]
    return quarter[..., 0] + quarter[..., 1]


def _cpu_float32_backward(grad_out, input, weight, mean, invstd):  # noqa: A002
    """torch's CPU batch norm backward in training of a contiguous float32 batch of images
    (see :func:`_cpu_float32_backward_kernel`), to the last bit: per channel, each sample's
    plane sums of ``dy`` and ``(x - mean) * dy`` in float32 vectors, added up over the
    samples in float64; ``k = float(dotp) * invstd * invstd / n`` and ``sum / n`` in float32;
    then ``((dy - sum / n) - (x - mean) * k) * invstd * weight`` with the first subtraction
    and product fused (one rounding, emulated in float64, where the product is exact).
    Returns the input, weight and bias gradients."""
    samples, channels = input.shape[:2]
    x = input.reshape(samples, channels, -1)
    dy = np.ascontiguousarray(grad_out).reshape(x.shape)
    n = samples * x.shape[2]
    centered = x - mean.reshape(1, channels, 1)
    sum_dy = np.add.reduce(_plane_sums(dy).astype(np.float64), axis=0)
    dotp = np.add.reduce(_plane_sums(centered * dy).astype(np.float64), axis=0)
    k = dotp.astype(np.float32) * invstd * invstd / np.float32(n)
    grad_mean = (sum_dy / n).astype(np.float32).reshape(1, channels, 1)
    fused = (dy - grad_mean).astype(np.float64)
    fused -= centered.astype(np.float64) * k.reshape(1, channels, 1)
    gi = fused.astype(np.float32) * invstd.reshape(1, channels, 1)
    if weight is not None:
        gi *= weight.reshape(1, channels, 1)
    return (gi.reshape(input.shape), (dotp * invstd).astype(np.float32),
            sum_dy.astype(np.float32))


@native_batch_norm_backward.grad("grad_out", "input", "weight")
def _(grads, grad_out, input, weight, mean, invstd, training, has_bias):  # noqa: A002
    gg_in, gg_weight, gg_bias = grads
    axes = (0,) + tuple(range(2, input.ndim))
    cs = _channel_shape(input.ndim)
    rstd = reshape(invstd, cs)
    xhat = (input - reshape(mean, cs)) * rstd
    w = None if weight is None else reshape(weight, cs)
    d_out = d_in = d_weight = None
    if gg_in is not None:
        # the input gradient is a symmetric linear map of gw = grad_out * weight
        p = _norm_grad_input(gg_in, xhat, rstd, axes) if training else gg_in * rstd
        d_out = p if w is None else p * w
        d_weight = None if w is None else _sum(grad_out * p, axes)
        if training:
            gw = grad_out if w is None else grad_out * w
            d_in = _input_term(gg_in, gw, xhat, rstd, axes)
    if gg_weight is not None and w is not None:
        gg_w = reshape(gg_weight, cs)
        d_out = _plus(d_out, xhat * gg_w)
        d_in = _plus(d_in, _norm_grad_input(gg_w * grad_out, xhat, rstd, axes) if training
                     else gg_w * grad_out * rstd)
    if gg_bias is not None and has_bias:
        d_out = _plus(d_out, expand(reshape(gg_bias, cs), tuple(grad_out.shape)))
    return d_out, d_in, d_weight


@native_batch_norm_backward.grad("mean", "invstd")
def _(grads):
    # torch's node has edges to these, but they get no gradient (next_functions lists them)
    return None, None


def _verify_batch_size(size):
    """torch.nn.functional's _verify_batch_size: a batch statistic over one value per channel
    (the product of every size but the channels') is refused."""
    if (size[0] * math.prod(size[2:]) if len(size) > 1 else 1) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {size!r}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None,  # noqa: A002
               training=False, momentum=0.1, eps=1e-05):
    """Applies Batch Normalization for each channel across a batch of data."""
    if training:
        _verify_batch_size(input.shape)
    if input.numel() == 0:
        return _batch_norm_of_nothing(input, weight, bias)
    return checked_batch_norm(input, weight, bias, running_mean, running_var, training,
                              momentum, eps)


def _batch_norm_of_nothing(input, weight, bias):  # noqa: A002
    """torch's batch norm of an input without elements, before any check of the other
    arguments: a clone (no view of the input, still in the gradient chain), times
    ``weight[0]``, plus ``bias[0]``; the running statistics stay as they are."""
    from .shape import select
    out = input.clone()
    if weight is not None:
        out = out * select(weight, 0, 0)
    if bias is not None:
        out = out + select(bias, 0, 0)
    return out


def checked_batch_norm(input, weight, bias, running_mean, running_var, training,  # noqa: A002
                       momentum, eps):
    """batch_norm_op after torch's checks of the parameters and running statistics (the
    batch norm of F.batch_norm and of ember.native_batch_norm)."""
    c = input.shape[1] if input.ndim > 1 else input.shape[0]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    _check_mixed_dtypes(input, weight, bias, running_mean, running_var)
    return batch_norm_op(input, weight, bias, running_mean, running_var, bool(training),
                         momentum, eps)


def _int_tuple(shape, fn):
    """torch's parsing of an ``IntArrayRef`` argument (position 2): a sequence of ints."""
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{fn}(): argument 'normalized_shape' (position 2) must be tuple of "
                        f"ints, not {type(shape).__name__}")
    for pos, v in enumerate(shape):
        if not isinstance(v, numbers.Integral):
            raise TypeError(f"{fn}(): argument 'normalized_shape' (position 2) must be tuple of "
                            f"ints, but found element of type {type(v).__name__} at pos {pos}")
    return tuple(int(v) for v in shape)


# -- layer norm ---------------------------------------------------------------------------------
@op("native_layer_norm", tensors=3, promote=NONE, node="NativeLayerNormBackward0", quiet=True)
def layer_norm_op(input, weight, bias, normalized_shape, eps):  # noqa: A002
    if input.dtype.kind != "f":
        from .pointwise import not_implemented
        raise not_implemented("LayerNormKernelImpl", input)
    axes = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    if layer_norm_kernels.exact(input, axes):
        m, rstd = layer_norm_kernels.row_stats(input, axes, eps)
        return layer_norm_kernels.forward(input, m, rstd, weight, bias)
    m, _, rstd = _stats(input, axes, eps)
    # torch's kernel: x * rstd - mean * rstd, then the affine step with a bias of +0 when there
    # is none (so that x == mean gives +0 whatever the weight's sign, as in torch)
    out = input * rstd
    out += -m * rstd
    if weight is not None:
        out *= weight
    out += 0 if bias is None else bias
    return out


def layer_norm_stats(x, axes, eps):
    """Each row's (mean, rstd), as the layer norm of ``x`` over ``axes`` computes them."""
    if layer_norm_kernels.exact(x, axes):
        return layer_norm_kernels.row_stats(x, axes, eps)
    m, _, rstd = _stats(x, axes, eps)
    return m, rstd


def _trailing(ndim, normalized_shape):
    return tuple(range(ndim - len(normalized_shape), ndim))


@layer_norm_op.grad("input", "weight", "bias")
def _(grad, input, weight, bias, normalized_shape, eps):  # noqa: A002
    # one call of torch's fused backward for the three gradients: under create_graph they
    # share its NativeLayerNormBackwardBackward0 node, with torch's edges (the statistics are
    # constants there: the op's own derivatives account for them)
    m, rstd = layer_norm_stats(_raw(input), _trailing(input.ndim, normalized_shape), eps)
    return native_layer_norm_backward(grad, input, _const(m, input), _const(rstd, input),
                                      weight, bias, normalized_shape)


# NOTE: torch computes only the gradients its output_mask asks for; this kernel skips the
# parameters that are None (an empty array stands for their gradient).
@op("native_layer_norm_backward", tensors=6, promote=NONE, outputs=3, undefined_grads=True,
    node="NativeLayerNormBackwardBackward0", quiet=True)
def native_layer_norm_backward(grad_out, input, mean, rstd, weight, bias,  # noqa: A002
                               normalized_shape):
    xp = get_xp(input)
    axes = _trailing(input.ndim, normalized_shape)
    lead = tuple(range(input.ndim - len(normalized_shape)))
    xhat = (input - mean) * rstd
    gw = grad_out if weight is None else grad_out * weight
    if layer_norm_kernels.exact(input, axes):
        gi = layer_norm_kernels.input_grad(grad_out, input, mean, rstd, weight, axes)
    elif input.size:
        gi = rstd * (gw - gw.mean(axis=axes, keepdims=True)
                     - xhat * (gw * xhat).mean(axis=axes, keepdims=True))
    else:  # (NumPy's mean of nothing warns; the gradient of nothing is empty)
        gi = xp.zeros_like(input)
    none = xp.empty((0,), input.dtype)
    g_weight = none if weight is None else (grad_out * xhat).sum(axis=lead)
    g_bias = none if bias is None else grad_out.sum(axis=lead)
    return gi.astype(input.dtype, copy=False), g_weight, g_bias


@native_layer_norm_backward.grad("grad_out", "input", "weight")
def _(grads, grad_out, input, mean, rstd, weight, normalized_shape):  # noqa: A002
    gg_in, gg_weight, gg_bias = grads
    axes = _trailing(input.ndim, normalized_shape)
    lead = tuple(range(input.ndim - len(normalized_shape)))
    xhat = (input - mean) * rstd
    gw = grad_out if weight is None else grad_out * weight
    d_out = d_in = d_weight = None
    if gg_in is not None:
        # the input gradient is a symmetric linear map of gw = grad_out * weight
        p = _norm_grad_input(gg_in, xhat, rstd, axes)
        d_out = p if weight is None else p * weight
        d_weight = None if weight is None else _sum(grad_out * p, lead) if lead else grad_out * p
        d_in = _input_term(gg_in, gw, xhat, rstd, axes)
    if gg_weight is not None and weight is not None:
        d_out = _plus(d_out, xhat * gg_weight)
        d_in = _plus(d_in, _norm_grad_input(gg_weight * grad_out, xhat, rstd, axes))
    if gg_bias is not None and tuple(gg_bias.shape) == tuple(normalized_shape):
        d_out = _plus(d_out, expand(gg_bias, tuple(grad_out.shape)))
    return d_out, d_in, d_weight


@native_layer_norm_backward.grad("mean", "rstd", "bias")
def _(grads):
    # torch's node has edges to these, but they get no gradient (next_functions lists them)
    return None, None, None


def _plus(a, b):
    return b if a is None else a + b


def _input_term(a, gw, xhat, rstd, axes):
    """d/d input of <a, input gradient> at fixed gw: the normalization's statistics move with
    the input (d rstd/dx = -rstd^2 xhat / N, d xhat/dx = rstd (I - 1/N - xhat xhat^T / N))."""
    def avg(v):
        return mean(v, axes, keepdim=True)
    m_g, m_gx, m_a, m_ax = avg(gw), avg(gw * xhat), avg(a), avg(a * xhat)
    c = avg(a * gw) - m_a * m_g - m_ax * m_gx
    return -(rstd * rstd) * (xhat * c + (a - m_a - xhat * m_ax) * m_gx
                             + m_ax * (gw - m_g - xhat * m_gx))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):  # noqa: A002
    """Applies Layer Normalization over the last dimensions."""
    shape = _int_tuple(normalized_shape, "layer_norm")
    k = len(shape)
    if tuple(input.shape[input.ndim - k:]) != shape or input.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")
    _check_mixed_dtypes(input, weight, bias)
    return layer_norm_op(input, weight, bias, shape, eps)


# -- rms norm -----------------------------------------------------------------------------------
def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """Applies Root Mean Square Layer Normalization over the last dimensions."""
    from .. import _dtype as D
    from .pointwise import add_scalar
    from .unary import rsqrt
    shape = _int_tuple(normalized_shape, "rms_norm")
    k = len(shape)
    if input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(shape)}")
    # NOTE: torch's composite: reduced precision computes in float32 (its opmath type).
    opmath = D.float32 if input.dtype == D.float16 else input.dtype
    if eps is None:
        eps = float(np.finfo(opmath.np).eps)
    x = input.to(opmath)
    dims = tuple(range(input.ndim - k, input.ndim))
    # (torch's C++ add_(eps) takes a Scalar: add.Scalar's node, AddBackward1)
    r = rsqrt(add_scalar((x ** 2).mean(dims, keepdim=True), eps))
    out = x.mul(r)
    if weight is not None:
        out = out.mul(weight)
    return out.type_as(input)


FUNCTIONAL.append("rms_norm")


# -- group norm ---------------------------------------------------------------------------------
def _grouped_shape(shape, group):
    """(N, group, elements per group): explicit, as an empty batch leaves -1 undefined."""
    return (shape[0], group, math.prod(shape[1:]) // group)


@op("native_group_norm", tensors=3, promote=NONE, node="NativeGroupNormBackward0", quiet=True)
def group_norm_op(input, weight, bias, group, eps):  # noqa: A002
    x = input.reshape(_grouped_shape(input.shape, group))
    m, _, rstd = _stats(x, (2,), eps)
    out = ((x - m) * rstd).reshape(input.shape)
    cs = _channel_shape(input.ndim)
    if weight is not None:
        out *= weight.reshape(cs)
    if bias is not None:
        out += bias.reshape(cs)
    return out


# The derivatives are torch's infinitely differentiable composite (what it records under
# create_graph), on (N, group, channels per group, HxW) views. torch reads the forward's saved
# mean and rstd; here they are recomputed from the input with ember ops, so that their own
# derivatives still reach the input.
def _grouped4(t, group):
    n, c = t.shape[0], t.shape[1]
    return t.reshape(n, group, c // group, math.prod(t.shape[2:]))


def _unsqueezed(t, dim):
    """torch's ``t.unsqueeze_(dim)`` of a fresh sum (UnsqueezeBackward1 under create_graph)."""
    if isinstance(t, Tensor):
        from .inplace_forms import unsqueeze_
        return unsqueeze_(t, dim)
    return get_xp(t).expand_dims(t, dim)


def _group_stats(x4, eps):
    """Each group's mean and rstd, (N, group, 1, 1), of the grouped input ``x4``."""
    from .pointwise import sqrt
    m = mean(x4, (2, 3), keepdim=True)
    d = x4 - m
    rstd = 1.0 / sqrt(mean(d * d, (2, 3), keepdim=True) + eps)
    return m, rstd


def _group_sums(grad, x4, group):
    """torch's ds and db: per-channel sums of grad * x and of grad, (N, group, D, 1)."""
    g4 = _grouped4(grad, group)
    return g4, _unsqueezed((g4 * x4).sum(3), -1), _unsqueezed(g4.sum(3), -1)


def _per_group(t, gamma4):
    """Sum over a group's channels (each scaled by its weight), kept as (N, group, 1, 1)."""
    return _unsqueezed((t if gamma4 is None else t * gamma4).sum(2), -2)


@group_norm_op.grad("input")
def _(grad, input, weight, group, eps):  # noqa: A002
    x4 = _grouped4(input, group)
    m, rstd = _group_stats(x4, eps)
    g4, ds, db = _group_sums(grad, x4, group)
    k = x4.shape[2] * x4.shape[3]
    s = 1.0 / k if k else math.inf
    gamma4 = None if weight is None else weight.reshape(1, group, x4.shape[2], 1)
    rstd_cube = rstd * rstd * rstd
    a = rstd if gamma4 is None else rstd * gamma4
    b, c = _per_group(ds, gamma4), _per_group(db, gamma4)
    b = (c * m - b) * rstd_cube * s
    c = -b * m - c * rstd * s
    return (a * g4 + b * x4 + c).reshape(tuple(input.shape))


@group_norm_op.grad("weight")
def _(grad, input, weight, group, eps):  # noqa: A002
    x4 = _grouped4(input, group)
    m, rstd = _group_stats(x4, eps)
    _, ds, db = _group_sums(grad, x4, group)
    return ((ds - db * m) * rstd).sum(0).reshape(tuple(weight.shape))


@group_norm_op.grad("bias")
def _(grad, bias, group):
    return _unsqueezed(_grouped4(grad, group).sum(3), -1).sum(0).reshape(tuple(bias.shape))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):  # noqa: A002
    """Applies Group Normalization over groups of channels."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    # (torch.nn.functional's check: each group's statistic needs more than one value; the
    # aten op, torch.group_norm, has none)
    _verify_batch_size([input.shape[0] * input.shape[1] // num_groups, num_groups]
                       + list(input.shape[2:]))
    return checked_group_norm(input, num_groups, weight, bias, eps)


def checked_group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):  # noqa: A002
    """torch.group_norm: group norm with the aten op's checks."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    c = input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape "
                               f"{list(t.shape)} and input of shape {list(input.shape)}")
    _check_mixed_dtypes(input, weight, bias)
    return group_norm_op(input, weight, bias, num_groups, eps)


# -- instance norm ------------------------------------------------------------------------------
def _repeat(t, b):
    """``t`` (C,) repeated ``b`` times (differentiably), as torch's repeat_if_defined."""
    if t is None:
        return None
    from .rearrange import repeat
    return repeat(t, b)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    """Applies Instance Normalization independently for each channel in every sample."""
    if use_input_stats:
        size = math.prod(input.shape[2:])
        if size == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {input.shape!r}")
    b, c = input.shape[:2]
    # (torch's input.contiguous().view(): CloneBackward0 then ViewBackward0 where it copies)
    x = input.contiguous().view((1, b * c) + tuple(input.shape[2:]))
    rm = None if running_mean is None else _tile(running_mean, b)
    rv = None if running_var is None else _tile(running_var, b)
    out = batch_norm(x, rm, rv, _repeat(weight, b), _repeat(bias, b), use_input_stats,
                     momentum, eps)
    for running, tiled in ((running_mean, rm), (running_var, rv)):
        if running is not None and use_input_stats:  # (copied back: one write, in training)
            _raw(running)[...] = _mean_of_copies(_raw(tiled), b, c)
            running._bump_version()
    return reshape(out, tuple(input.shape))


def _mean_of_copies(tiled, b, c):
    """The mean of the ``b`` per-sample copies of a running statistic: NaN where there are
    none (an empty batch), quietly, as torch's ``mean(0)``."""
    with np.errstate(all="ignore"):
        return tiled.reshape(b, c).sum(0) / b


def _tile(t, b):
    from .._tensor import _wrap
    return _wrap(np.tile(_raw(t), b))


# -- local response norm ------------------------------------------------------------------------
def local_response_norm(input, size, alpha=0.0001, beta=0.75, k=1.0):  # noqa: A002
    """Applies local response normalization over channels (torch's composition: squares
    padded along the channels and averaged, with avg_pool2d for 3-D inputs and avg_pool3d
    for more dimensions)."""
    from .pad import pad
    from .pooling import avg_pool2d, avg_pool3d
    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = (div * alpha + k) ** beta
    return input / div
