"""``ember.nn``: modules, parameters and functional building blocks."""
from . import functional, init  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import Parameter  # noqa: F401
