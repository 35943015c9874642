"""``ember.nn``: modules, parameters and functional building blocks."""
from . import functional, init, parallel, utils  # noqa: F401
from .modules import *
from .parameter import Buffer, Parameter  # noqa: F401
