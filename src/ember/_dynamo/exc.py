"""``ember._dynamo.exc``: the errors ember.compile raises."""
from .._compile.api import InvalidBackend  # noqa: F401
from .._compile.recorder import Unsupported  # noqa: F401
