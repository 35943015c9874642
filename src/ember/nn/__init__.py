"""``ember.nn``: modules, parameters and functional building blocks."""
from . import functional, init  # noqa: F401
from .modules.linear import Identity, Linear
from .modules.module import Module
from .parameter import Parameter

__all__ = ["Module", "Linear", "Identity", "Parameter", "functional", "init"]
