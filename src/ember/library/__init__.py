"""``torch.library``: custom operators with their own kernels, derivative, fake (meta) kernel
and vmap rule, callable as ``ember.ops.<namespace>.<name>``."""
from __future__ import annotations

from ._custom_op import CustomOpDef, custom_op
from ._schema import infer_schema

__all__ = ["CustomOpDef", "custom_op", "infer_schema"]
