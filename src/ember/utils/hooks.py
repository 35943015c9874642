"""torch.utils.hooks: ``RemovableHandle`` (what every ``register_*hook`` returns) and the
marking of hooks that serialization may drop."""
from __future__ import annotations

import warnings

from ..autograd.graph import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Mark hook ``f`` as one not to warn about when its tensor is serialized."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    """Warn for each backward hook of ``tensor`` not marked ``unserializable_hook``: saving the
    tensor does not keep its hooks."""
    for hook in (tensor._hooks or {}).values():
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this "
                          "is expected, you can decorate the function with "
                          "@ember.utils.hooks.unserializable_hook to suppress this warning",
                          stacklevel=2)
