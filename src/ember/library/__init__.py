"""``torch.library``: custom operators with their own kernels, derivative, fake (meta) kernel
and vmap rule, callable as ``ember.ops.<namespace>.<name>``."""
from __future__ import annotations

from ._custom_op import CustomOpDef, custom_op
from ._library import (Library, define, impl, impl_abstract, register_autocast,
                       register_autograd, register_fake, register_kernel, register_vmap)
from ._opcheck import opcheck
from ._schema import infer_schema

__all__ = ["CustomOpDef", "Library", "custom_op", "define", "impl", "impl_abstract",
           "infer_schema", "opcheck", "register_autocast", "register_autograd", "register_fake",
           "register_kernel", "register_vmap"]
