"""nn modules: dropout."""
from __future__ import annotations

__all__: list[str] = []
