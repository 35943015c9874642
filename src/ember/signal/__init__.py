"""``ember.signal``: torch.signal (its window functions)."""
from . import windows  # noqa: F401
