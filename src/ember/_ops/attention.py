"""Scaled dot product attention: torch's CPU backends, written with ember ops.

torch picks one of two CPU kernels, and each rounds its own way, which shows in float16 and
bfloat16 results:

- the fused *flash* kernel (the default for 4-D inputs without dropout): the scores
  ``q @ k^T * scale`` and ``exp(s - max)`` in float32, those weights rounded to the input's
  dtype before their product with ``v`` (accumulated in float32), and the sum divided out
  last;
- the *math* kernel (3-D inputs, dropout, or flash switched off): half and bfloat16 inputs
  computed in float32 throughout, ``q`` and ``k^T`` each scaled by ``sqrt(scale)``, a softmax
  that gives 0 (not NaN) to a row masked out entirely, one rounding at the end.

Which kernels may run is read from the switches ``torch.backends.cuda.enable_*_sdp`` and
``nn.attention.sdpa_kernel`` set; with neither allowed, torch's error.
"""
from __future__ import annotations

import math

from .._tensor import Tensor, _C_NAMES, _wrap
from .. import _dtype as D
from .pointwise import no_forward_ad
from .registry import NONE, op

FUNCTIONAL = ["scaled_dot_product_attention"]

NO_BACKEND = ("No viable backend for scaled_dot_product_attention was found. This is likely "
              "due to turning off both the math kernel and the fused kernels.")
_LOW = (D.float16, D.bfloat16)


def _c_name(dtype):
    """The dtype as torch's C++ messages name it."""
    return _C_NAMES.get(dtype.name, "c10::BFloat16" if dtype == D.bfloat16 else dtype.name)


def _check(query, key, value, attn_mask, dropout_p, enable_gqa):
    """torch's argument checks (the kernels' own messages)."""
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_c_name(query.dtype)} key.dtype: {_c_name(key.dtype)} and "
            f"value.dtype: {_c_name(value.dtype)} instead.")
    if attn_mask is not None and attn_mask.dtype != D.bool and \
            not attn_mask.dtype.is_floating_point and attn_mask.dtype != query.dtype:
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {_c_name(attn_mask.dtype)} and  query.dtype: "
            f"{_c_name(query.dtype)} instead.")
    if not 0 <= dropout_p <= 1:
        raise RuntimeError(
            f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if enable_gqa and query.dim() >= 3 and query.shape[-3] % key.shape[-3] != 0:
        # (torch's message stops there)
        raise RuntimeError(
            "Number of heads in key and value must divide the number of heads in ")


def _flash_fits(query, key, value, attn_mask, dropout_p):
    """Whether torch's CPU flash kernel takes these inputs (its sdp_utils_cpp checks)."""
    if dropout_p > 0 or not (query.dim() == key.dim() == value.dim() == 4):
        return False
    if query.dtype not in (D.float32, D.float64, D.float16, D.bfloat16):
        return False
    if not (query.shape[-1] == key.shape[-1] == value.shape[-1]):
        return False
    if query.shape[-2] == 0 or key.shape[-2] == 0 or query.shape[0] != key.shape[0]:
        return False
    if any(t.stride(-1) != 1 for t in (query, key, value)):
        return False
    if attn_mask is not None and attn_mask.requires_grad:  # (a mask's gradient: math only)
        return False
    return attn_mask is None or attn_mask.dim() in (2, 4)


def _backend(query, key, value, attn_mask, dropout_p):
    from ..backends.cuda import _SDP
    if _SDP["flash"] and _flash_fits(query, key, value, attn_mask, dropout_p):
        return "flash"
    if _SDP["math"]:
        return "math"
    raise RuntimeError(NO_BACKEND)


def _additive_mask(attn_mask, is_causal, n_q, n_k, like):
    """The mask as a float tensor added to the scores (0 kept, -inf masked), or None."""
    from .._creation import ones
    from .pointwise import where
    from .._compile.hooks import constant
    if is_causal:
        keep = constant(ones(n_q, n_k, dtype=D.bool, device=like.device).tril())
        return where(keep, 0.0, float("-inf")).to(like.dtype)
    if attn_mask is None:
        return None
    if attn_mask.dtype == D.bool:
        return where(attn_mask, 0.0, float("-inf")).to(like.dtype)
    return attn_mask


def _grouped(query, key, value, enable_gqa):
    """Key and value heads repeated to the query's (grouped-query attention)."""
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        n = query.shape[-3] // key.shape[-3]
        return key.repeat_interleave(n, -3), value.repeat_interleave(n, -3)
    return key, value


def _softmax_masked(scores, mask):
    """softmax over the keys; with a mask, torch's _safe_softmax: a row masked out entirely
    attends to nothing (0, not NaN), its scores replaced first so no NaN reaches the backward."""
    from .activation import softmax
    from .pointwise import where
    if mask is None:
        return softmax(scores, -1)
    scores = scores + mask
    masked_row = (scores == float("-inf")).all(-1, keepdim=True)
    return where(masked_row, 0.0, softmax(where(masked_row, 0.0, scores), -1))


def _math(query, key, value, mask, dropout_p, scale):
    from .activation import safe_softmax
    from .linalg import matmul
    from .pointwise import mul_scalar
    root = math.sqrt(scale)  # (torch's C++ scales by a number: mul.Scalar, MulBackward1)
    scores = matmul(mul_scalar(query, root), mul_scalar(key.transpose(-2, -1), root))
    weights = safe_softmax(scores if mask is None else scores + mask, -1)
    if dropout_p > 0:
        from .nn_ops import dropout
        weights = dropout(weights, dropout_p)
    return matmul(weights, value)


def _flash(query, key, value, mask, scale, dtype):
    from .linalg import matmul
    from .pointwise import exp, where
    scores = matmul(query, key.transpose(-2, -1)) * scale
    if dtype not in _LOW:  # (dividing by the sum before or after the product: rounding only)
        return matmul(_softmax_masked(scores, mask), value)
    if mask is not None:
        scores = scores + mask
    top = scores.amax(-1, keepdim=True).detach()
    if mask is not None:  # a row masked out entirely: weights exp(-inf) = 0, its output 0
        top = where(top == float("-inf"), 0.0, top)
    weights = exp(scores - top)
    total = weights.sum(-1, keepdim=True)
    # the kernel rounds the weights to the input's dtype for the product
    weights = weights.to(dtype).to(D.float32)
    if mask is not None:  # (its weights are all 0: dividing by 1 leaves its output 0)
        total = where(total == 0, 1.0, total)
    return matmul(weights, value) / total


def _laid_out_as(out, query):
    """``out`` in the query's memory order: the flash kernel writes its output that way, so
    ``out.transpose(1, 2)`` of heads split from a (batch, seq, heads * dim) projection is
    contiguous again (``.view`` works on it), as in torch."""
    order = sorted(range(query.dim()), key=lambda d: -query.stride(d))
    if order == list(range(query.dim())):
        return out
    back = [order.index(d) for d in range(query.dim())]
    return out.permute(order).contiguous().permute(back)


def _flash_operands(query, key, value, attn_mask, is_causal, enable_gqa):
    """The kernel's operands as constant Tensors: q, k, v in the dtype it computes in (float32
    for half and bfloat16), key and value heads grouped, and the additive mask."""
    q, k, v = _wrap(query), _wrap(key), _wrap(value)
    if q.dtype in _LOW:
        q, k, v = q.float(), k.float(), v.float()
    k, v = _grouped(q, k, v, enable_gqa)
    mask = None if attn_mask is None else _wrap(attn_mask)
    return q, k, v, _additive_mask(mask, is_causal, q.shape[-2], k.shape[-2], q)


def _nothing_attended(query, key, value, shape):
    """torch's result where no key is attended to or the output is empty: zeros of the
    output's shape, joined to the graph through the inputs' sums times 0 (AddBackward0 over
    MulBackward1: the inputs get zero gradients, and a NaN among them still shows)."""
    from .._creation import zeros
    from .pointwise import mul_scalar
    joined = mul_scalar(query.sum() + key.sum() + value.sum(), 0)
    return zeros(shape, dtype=query.dtype, device=query.device) + joined


def _scale(query, scale):
    if scale is not None:
        return scale
    size = query.shape[-1]
    return 1.0 / math.sqrt(size) if size else math.inf  # (torch's SymFloat division: 1/0 = inf)


# torch's CPU flash kernel, one node (its output; the logsumexp it also returns stays inside).
# The kernel composes ember ops on constant Tensors: no graph is recorded inside it.
@op("_scaled_dot_product_flash_attention_for_cpu", tensors=3, promote=NONE,
    node="ScaledDotProductFlashAttentionForCpuBackward0")
def flash_attention(query, key, value, dropout_p, is_causal, attn_mask, scale, enable_gqa,
                    dtype):
    """``dtype``: the inputs' (bfloat16 reaches the kernel widened to float32)."""
    q, k, v, mask = _flash_operands(query, key, value, attn_mask, is_causal, enable_gqa)
    out = _laid_out_as(_flash(q, k, v, mask, _scale(query, scale), dtype), _wrap(query))
    return (out.to(dtype) if dtype in _LOW else out)._data


# (result: the output, which torch's node saves too and shows as _saved_output; the backward
# recomputes the weights from the operands)
@flash_attention.grad("query", "key", "value")
def _(grad, query, key, value, dropout_p, is_causal, attn_mask, scale, enable_gqa, result):
    return flash_attention_backward(grad, query, key, value, is_causal, attn_mask,
                                    _scale(query, scale), enable_gqa)


def flash_logsumexp(node):
    """The flash kernel's second return, which torch's node saves (``_saved_logsumexp``): the
    log of each query row's softmax denominator, in float32 for half and bfloat16 inputs.
    ember's backward does not read it, so it is computed when read, from the node's saved
    operands (a freed node refuses, as torch's), 0 for a row masked out entirely (torch's
    kernel leaves it so)."""
    from .linalg import matmul
    from .pointwise import where
    saved = {name: node._unpack_slot(j, False) for j, name in enumerate(node._op.saved_names)}
    query = saved["query"]
    q, k, _, mask = _flash_operands(query, saved["key"], saved["value"], saved["attn_mask"],
                                    saved["is_causal"], saved["enable_gqa"])
    scores = matmul(q, k.transpose(-2, -1)) * _scale(query, saved["scale"])
    if mask is None:
        return scores.logsumexp(-1)
    lse = (scores + mask).logsumexp(-1)
    return where(lse == float("-inf"), 0.0, lse)


flash_attention.jvp("query", "key", "value")(
    no_forward_ad("_scaled_dot_product_flash_attention_for_cpu"))


def _ungrouped(grad, heads):
    """A gradient of heads repeated for grouped-query attention summed back to ``heads``."""
    if grad.shape[-3] == heads:
        return grad
    shape = grad.shape
    return grad.reshape(*shape[:-3], heads, shape[-3] // heads, *shape[-2:]).sum(-3)


@op("_scaled_dot_product_flash_attention_for_cpu_backward", tensors=4, promote=NONE,
    outputs=3, node="NotImplemented")
def flash_attention_backward(grad, query, key, value, is_causal, attn_mask, scale, enable_gqa):
    """The gradients of q, k and v: the weights recomputed, in float32 for half and bfloat16."""
    from .linalg import matmul
    q, k, v, mask = _flash_operands(query, key, value, attn_mask, is_causal, enable_gqa)
    g = _wrap(grad).to(q.dtype)
    weights = _softmax_masked(matmul(q, k.transpose(-2, -1)) * scale, mask)
    d_weights = matmul(g, v.transpose(-2, -1))
    d_scores = weights * (d_weights - (d_weights * weights).sum(-1, keepdim=True)) * scale
    dq = matmul(d_scores, k)
    dk = _ungrouped(matmul(d_scores.transpose(-2, -1), q), key.shape[-3])
    dv = _ungrouped(matmul(weights.transpose(-2, -1), g), value.shape[-3])
    dtype = _wrap(query).dtype
    return tuple(t.to(dtype)._data for t in (dq, dk, dv))


def _no_second_derivative(grads):
    # torch defines no derivative of its flash backward: a second backward through it fails
    raise RuntimeError("derivative for aten::_scaled_dot_product_flash_attention_for_cpu_"
                       "backward is not implemented")


flash_attention_backward.grad("grad", "query", "key", "value")(_no_second_derivative)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(Q K^T * scale + mask) V, computed as torch's CPU kernel for these inputs."""
    if attn_mask is not None and type(attn_mask) is not Tensor:
        from ..nn.attention.bias import CausalBias
        if isinstance(attn_mask, CausalBias):
            return attn_mask._dispatch(query, key, value, attn_mask, dropout_p, is_causal,
                                       scale, enable_gqa)
    _check(query, key, value, attn_mask, dropout_p, enable_gqa)
    shape = tuple(query.shape[:-1]) + tuple(value.shape[-1:])
    if key.shape[-2] == 0 or 0 in shape:
        return _nothing_attended(query, key, value, shape)
    kernel = _backend(query, key, value, attn_mask, dropout_p)
    if kernel == "flash":
        return flash_attention(query, key, value, dropout_p, is_causal,
                               None if attn_mask is None else attn_mask._data, scale, enable_gqa,
                               query.dtype)
    s = _scale(query, scale)
    dtype = query.dtype
    if dtype in _LOW:  # both kernels compute in float32
        query, key, value = query.float(), key.float(), value.float()
    key, value = _grouped(query, key, value, enable_gqa)
    mask = _additive_mask(attn_mask, is_causal, query.shape[-2], key.shape[-2], query)
    out = _math(query, key, value, mask, dropout_p, s)
    return out.to(dtype) if dtype in _LOW else out
