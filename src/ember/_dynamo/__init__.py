"""``ember._dynamo``: the names torch code reaches through ``torch._dynamo``."""
from __future__ import annotations

from .._compile.api import disable, list_backends  # noqa: F401
from .._compile.compiled import reset  # noqa: F401
from .._compile.config import config  # noqa: F401
from ..compiler import allow_in_graph  # noqa: F401
from . import exc  # noqa: F401
