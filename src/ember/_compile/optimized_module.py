"""``OptimizedModule``: what ``ember.compile(module)`` returns."""
from __future__ import annotations

from ..nn.modules.module import Module


class OptimizedModule(Module):
    """A module whose calls go through a compiled function of the module it wraps
    (``_orig_mod``, whose parameters it shares: its state_dict keys carry ``_orig_mod.``)."""

    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def train(self, mode=True):
        self._orig_mod.train(mode)
        return super().train(mode)
