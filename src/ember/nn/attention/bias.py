"""Causal attention masks that ``scaled_dot_product_attention`` reads as ``is_causal``.

``causal_upper_left(q, kv)`` lines query i up with key i (``is_causal=True``'s mask);
``causal_lower_right(q, kv)`` lines the last query up with the last key, as when decoding the
next tokens after a cached prefix. Both are :class:`CausalBias` tensors that print as the
boolean mask they stand for.
"""
from __future__ import annotations

import warnings
from enum import IntEnum

from ... import _dtype as D
from ..._tensor import Tensor
from ...overrides import _disabled_torch_function_impl

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    """Which corner of the score matrix the causal mask is aligned to."""

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias(Tensor):
    """A causal mask kept as its variant and sequence lengths, made into a mask when needed."""

    # (scaled_dot_product_attention takes it by its own test, not through __torch_function__)
    __torch_function__ = _disabled_torch_function_impl

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        # torch builds the subclass through the legacy constructor Tensor(variant, q, kv)
        super().__init__(int(variant), seq_len_q, seq_len_kv)
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when "
                          "seq_len_q > seq_len_kv!", stacklevel=2)

    def _materialize(self, device=None) -> Tensor:
        """The boolean (seq_len_q, seq_len_kv) mask: True where a query may attend."""
        from ..._creation import ones
        keep = ones((self.seq_len_q, self.seq_len_kv), device=device, dtype=D.bool)
        if self.variant == CausalVariant.UPPER_LEFT:
            return keep.tril(0)
        return keep.tril(self.seq_len_kv - self.seq_len_q)

    @staticmethod
    def _dispatch(query, key, value, attn_mask, dropout_p=0.0, is_causal=False, scale=None,
                  enable_gqa=False):
        """scaled_dot_product_attention with this mask: is_causal, or the lower-right mask."""
        from ..functional import scaled_dot_product_attention as sdpa
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.seq_len_q == attn_mask.seq_len_kv or \
                attn_mask.variant == CausalVariant.UPPER_LEFT:
            return sdpa(query, key, value, attn_mask=None, dropout_p=dropout_p, is_causal=True,
                        scale=scale, enable_gqa=enable_gqa)
        return sdpa(query, key, value, attn_mask=attn_mask._materialize(query.device),
                    dropout_p=dropout_p, is_causal=False, scale=scale, enable_gqa=enable_gqa)

    def __repr__(self):
        return repr(self._materialize())


def causal_upper_left(*size) -> CausalBias:
    """The causal mask aligned to the upper left: query i sees keys 0..i."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size) -> CausalBias:
    """The causal mask aligned to the lower right: the last query sees every key."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
