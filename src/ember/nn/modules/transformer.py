"""Attention layers: MultiheadAttention, TransformerEncoderLayer and TransformerEncoder."""
from __future__ import annotations

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]

import copy
import math

from ..._creation import empty
from ..._ops import normalization as N
from ..._ops.linalg import bmm
from ..._ops.pointwise import where
from ..._ops.shape import chunk
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


class NonDynamicallyQuantizableLinear(Linear):
    """The out projection of MultiheadAttention (a Linear under torch's name for it)."""


def _dropout_module(p):
    from .. import modules
    cls = getattr(modules, "Dropout", None)
    return cls(p) if cls is not None else _Dropout(p)


class _Dropout(Module):
    """Stand-in for nn.Dropout while ember.nn has none (same repr and behaviour)."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        self.p = p
        self.inplace = inplace

    def forward(self, input):  # noqa: A002
        return N._dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"

    def _get_name(self):
        return "Dropout"


def _float_mask(mask, dtype):
    """torch's _canonical_mask: a bool mask (True: masked out) becomes 0 / -inf."""
    if mask is None or mask.dtype.is_floating_point:
        return mask
    from ..._creation import zeros
    return where(mask, float("-inf"), zeros((), dtype=dtype))


class MultiheadAttention(Module):
    """Allows the model to jointly attend to information from different subspaces."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("add_bias_kv and add_zero_attn are not supported")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == embed_dim, "embed_dim must be divisible by num_heads"
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), dtype=dtype))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), dtype=dtype))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype)
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

    def _project(self, query, key, value):
        b = self.in_proj_bias
        bq, bk, bv = chunk(b, 3) if b is not None else (None, None, None)
        if self._qkv_same_embed_dim:
            if key is query and value is query:  # self-attention: one GEMM
                return chunk(F.linear(query, self.in_proj_weight, b), 3, -1)
            wq, wk, wv = chunk(self.in_proj_weight, 3)
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batched = query.ndim == 3
        if self.batch_first and batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        if not batched:
            same_k, same_v = key is query, value is key
            query = query.unsqueeze(1)
            key = query if same_k else key.unsqueeze(1)
            value = key if same_v else value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        out, weights = self._attend(query, key, value, key_padding_mask, need_weights,
                                    attn_mask, average_attn_weights, is_causal)
        if not batched:
            out = out.squeeze(1)
            if weights is not None:
                weights = weights.squeeze(0)
        elif self.batch_first:
            out = out.transpose(1, 0)
        return out, weights

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask,
                average, is_causal):
        tgt, n, e = query.shape
        src = key.shape[0]
        h, hd = self.num_heads, self.head_dim
        if e != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but "
                                 f"got {e}")
        q, k, v = self._project(query, key, value)
        q = q.reshape(tgt, n * h, hd).transpose(0, 1)
        k = k.reshape(src, n * h, hd).transpose(0, 1)
        v = v.reshape(src, n * h, hd).transpose(0, 1)
        mask = _float_mask(attn_mask, q.dtype)
        if mask is None and is_causal:
            import numpy as np
            from ..._tensor import _wrap
            mask = _float_mask(_wrap(~np.tril(np.ones((tgt, src), dtype=bool))), q.dtype)
        if mask is not None and mask.ndim == 2:
            mask = mask.unsqueeze(0)
        kpm = _float_mask(key_padding_mask, q.dtype)
        if kpm is not None:
            kpm = kpm.reshape(n, 1, 1, src).expand(n, h, 1, src).reshape(n * h, 1, src)
            mask = kpm if mask is None else mask + kpm
        scores = bmm(q * math.sqrt(1.0 / float(hd)), k.transpose(-2, -1))
        if mask is not None:
            scores = scores + mask
        weights = N.softmax_(scores, -1)
        weights = N._dropout(weights, self.dropout, self.training)
        out = bmm(weights, v).transpose(0, 1).reshape(tgt * n, e)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias).reshape(tgt, n, e)
        if not need_weights:
            return out, None
        weights = weights.reshape(n, h, tgt, src)
        if average:
            weights = weights.mean(1)
        return out, weights


def _activation(name):
    if name == "relu":
        return F.relu
    if name == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {name}")


class TransformerEncoderLayer(Module):
    """A transformer encoder layer: self-attention and a feedforward network."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = _dropout_module(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = _dropout_module(dropout)
        self.dropout2 = _dropout_module(dropout)
        self.activation = _activation(activation) if isinstance(activation, str) else activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """A stack of N encoder layers (deep copies of ``encoder_layer``)."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        from .. import modules
        self.layers = modules.ModuleList([copy.deepcopy(encoder_layer)
                                          for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        out = src
        for mod in self.layers:
            out = mod(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        if self.norm is not None:
            out = self.norm(out)
        return out
