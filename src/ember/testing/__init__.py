"""``ember.testing``: torch.testing's helpers for tests, ``assert_close`` and ``make_tensor``
(and the deprecated ``assert_allclose``)."""
from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]
