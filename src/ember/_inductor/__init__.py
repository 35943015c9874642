"""``ember._inductor``: the names programs reach through ``torch._inductor``."""
from __future__ import annotations

from . import utils  # noqa: F401
