"""``Tensor.untyped_storage()``: the memory a tensor's array views, as bytes."""
from __future__ import annotations

from ._backend import storage_of


class UntypedStorage:
    """The memory behind a tensor (the NumPy array owning it), as torch's UntypedStorage
    describes one: an address and a size in bytes. Views of one tensor share it."""

    __slots__ = ("_owner", "_start", "_end")

    def __init__(self, array):
        self._owner, self._start, self._end = storage_of(array)

    def data_ptr(self) -> int:
        return self._start

    def nbytes(self) -> int:
        return self._end - self._start

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    def __repr__(self):
        return f"<ember.UntypedStorage of {self.nbytes()} bytes at {hex(self._start)}>"
