"""Activation modules: thin wrappers around ``ember.nn.functional``, and MultiheadAttention
(defined here, as torch defines it, so its pickled name and module path are torch's)."""
from __future__ import annotations

__all__ = [
    'CELU',
    'ELU',
    'GELU',
    'GLU',
    'SELU',
    'Hardshrink',
    'Hardsigmoid',
    'Hardswish',
    'Hardtanh',
    'LeakyReLU',
    'LogSigmoid',
    'LogSoftmax',
    'Mish',
    'MultiheadAttention',
    'PReLU',
    'RReLU',
    'ReLU',
    'ReLU6',
    'SiLU',
    'Sigmoid',
    'Softmax',
    'Softmax2d',
    'Softmin',
    'Softplus',
    'Softshrink',
    'Softsign',
    'Tanh',
    'Tanhshrink',
    'Threshold',
]

from ..._creation import empty
from .. import functional as F
from .. import init
from .._functional_attention import (
    _canonical_mask,
    _none_or_dtype,
    multi_head_attention_forward,
)
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module


def _inplace_str(inplace, lead=", "):
    return f"{lead}inplace=True" if inplace else ""


class Threshold(Module):
    """Thresholds each element: x if x > threshold else value."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class ReLU(Module):
    """Applies the rectified linear unit function element-wise."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class RReLU(Module):
    """Randomized leaky ReLU (random slopes in training, their mean in evaluation)."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Hardtanh(Module):
    """Clips each element to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        super().__init__()
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError("max_val must be greater than min_val")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(0, x), 6), element-wise."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class _Simple(Module):
    """An activation with no parameters (and an optional ``inplace`` flag)."""

    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class Sigmoid(_Simple):
    """Applies the sigmoid function element-wise."""

    _fn = staticmethod(F.sigmoid)


class Tanh(_Simple):
    """Applies the hyperbolic tangent element-wise."""

    _fn = staticmethod(F.tanh)


class LogSigmoid(_Simple):
    """log(sigmoid(x)), element-wise."""

    _fn = staticmethod(F.logsigmoid)


class Softsign(_Simple):
    """x / (1 + |x|), element-wise."""

    _fn = staticmethod(F.softsign)


class Tanhshrink(_Simple):
    """x - tanh(x), element-wise."""

    _fn = staticmethod(F.tanhshrink)


class _Inplace(Module):
    _fn = None
    _show_inplace = True

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return ("inplace=True" if self.inplace else "") if self._show_inplace else ""


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6, element-wise."""

    _fn = staticmethod(F.hardsigmoid)
    _show_inplace = False


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6, element-wise."""

    _fn = staticmethod(F.hardswish)
    _show_inplace = False


class SiLU(_Inplace):
    """x * sigmoid(x), element-wise."""

    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """x * tanh(softplus(x)), element-wise."""

    _fn = staticmethod(F.mish)


class SELU(_Inplace):
    """Scaled ELU with the self-normalising constants."""

    _fn = staticmethod(F.selu)


class ELU(Module):
    """Exponential linear unit, element-wise."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(ELU):
    """Continuously differentiable exponential linear unit, element-wise."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class GLU(Module):
    """Gated linear unit: a * sigmoid(b) for the halves a, b of the input along ``dim``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class GELU(Module):
    """Gaussian error linear unit (``approximate='tanh'``: its tanh approximation)."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Hardshrink(Module):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """Shrinks each element towards 0 by lambd."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class LeakyReLU(Module):
    """max(0, x) + negative_slope * min(0, x), element-wise."""

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class Softplus(Module):
    """1/beta * log(1 + exp(beta * x)), linear above ``threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class PReLU(Module):
    """Leaky ReLU with a learnt slope (one, or one per channel)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _SoftmaxBase(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(_SoftmaxBase):
    """softmax(-x) along ``dim``."""

    _fn = staticmethod(F.softmin)


class Softmax(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along ``dim``."""

    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along ``dim``."""

    _fn = staticmethod(F.log_softmax)


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return F.softmax(input, -3, _stacklevel=5)


class MultiheadAttention(Module):
    """Allows the model to jointly attend to information from different subspaces."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            made = {"dtype": dtype, "device": device}
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **made))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **made))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **made))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), dtype=dtype,
                                                  device=device))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, dtype=dtype, device=device))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype, device=device)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), dtype=dtype, device=device))
            self.bias_v = Parameter(empty((1, 1, embed_dim), dtype=dtype, device=device))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def __setstate__(self, state):
        if "_qkv_same_embed_dim" not in state:
            state["_qkv_same_embed_dim"] = True
        super().__setstate__(state)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """Attention outputs and (unless ``need_weights=False``) the attention weights."""
        is_batched = query.ndim == 3
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                           _none_or_dtype(attn_mask), "attn_mask", query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if self.batch_first and is_batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = {} if self._qkv_same_embed_dim else {
            "use_separate_proj_weight": True, "q_proj_weight": self.q_proj_weight,
            "k_proj_weight": self.k_proj_weight, "v_proj_weight": self.v_proj_weight}
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            average_attn_weights=average_attn_weights, is_causal=is_causal, **separate)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        return out, weights

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """Merge ``attn_mask`` and ``key_padding_mask`` into one mask and its type (0, 1, 2)."""
        mask_type, merged = None, None
        if key_padding_mask is not None:
            mask_type, merged = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.ndim == 3:
                expanded = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                expanded = attn_mask.view(1, 1, seq_len, seq_len).expand(
                    batch_size, self.num_heads, -1, -1)
            merged = expanded
            if key_padding_mask is not None:
                merged = expanded + key_padding_mask.view(batch_size, 1, 1, seq_len).expand(
                    -1, self.num_heads, -1, -1)
        return merged, mask_type
