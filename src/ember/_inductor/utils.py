"""``torch._inductor.utils``: the cache helpers programs use around ``torch.compile``."""
from __future__ import annotations

import contextlib

__all__ = ["fresh_cache", "fresh_inductor_cache"]


@contextlib.contextmanager
def fresh_cache(cache_entries=None, dir=None, delete=True):  # noqa: A002 - torch's names
    """Run the block with no compiled code cached on disk from before it.

    ember's compiled functions keep their recordings in memory only (``torch.compiler.reset()``
    drops them) and write no cache directory, so there is nothing on disk to set aside; as on
    torch's CPU build, which writes no Triton kernels, ``cache_entries`` stays empty and must be
    given empty.
    """
    yield
    if isinstance(cache_entries, dict) and cache_entries:
        raise AssertionError("expected empty cache_entries dict")


fresh_inductor_cache = fresh_cache
