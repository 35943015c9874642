"""``torch.types``: the type aliases torch's annotations use (``Number`` for a custom
operator's scalar argument, ``Device``...)."""
from __future__ import annotations

import os
from typing import IO, Union

from ._dtype import dtype as _dtype
from ._size import Size
from ._storage import UntypedStorage as Storage
from ._tensor import Tensor, device as _device

__all__ = ["Number", "Device", "FileLike", "Storage"]

_bool, _int, _float, _complex, _str, _bytes = bool, int, float, complex, str, bytes
Number = int | float | bool
_Number = (int, float, bool)
Device = _device | str | int | None
FileLike = Union[str, os.PathLike, IO[bytes]]
_size = Union[Size, list[int], tuple[int, ...]]
_TensorOrTensors = Union[Tensor, tuple[Tensor, ...], list[Tensor]]
_TensorOrOptionalTensors = Union[Tensor, None, tuple[Union[Tensor, None], ...]]
