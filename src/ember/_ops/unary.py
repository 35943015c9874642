"""unary ops (see DESIGN: each op block has its forward and derivative side by side)."""
from __future__ import annotations

__all__: list[str] = []
