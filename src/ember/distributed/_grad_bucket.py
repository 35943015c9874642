"""GradBucket: what a DDP communication hook gets, a flat buffer of several gradients."""
from __future__ import annotations


class GradBucket:
    """A bucket of gradients DDP reduces together: ``buffer()`` is their flat concatenation."""

    def __init__(self, index, buffer, gradients, parameters, is_last):
        self._index = index
        self._buffer = buffer
        self._gradients = gradients
        self._parameters = parameters
        self._is_last = is_last

    def index(self) -> int:
        """The bucket's index (bucket 0 holds the gradients that are ready first)."""
        return self._index

    def buffer(self):
        """The flat tensor of the bucket's gradients."""
        return self._buffer

    def gradients(self) -> list:
        """The bucket's gradients, as views of ``buffer()``."""
        return list(self._gradients)

    def parameters(self) -> list:
        return list(self._parameters)

    def is_last(self) -> bool:
        """Whether this is the last bucket to be reduced in the iteration."""
        return self._is_last

    def set_buffer(self, buffer) -> None:
        """Replace the bucket's buffer (DDP copies what the hook's future returns back into
        its own bucket)."""
        self._buffer = buffer
