"""``torch.utils.dlpack``: DLPack exchange (kornia imports ``from_dlpack`` and ``to_dlpack``
from here); the functions are the package's own."""
from __future__ import annotations

import enum

from .._tensor_extras import from_dlpack, to_dlpack

__all__ = ["DLDeviceType", "from_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device type codes, as a tensor's ``__dlpack_device__`` gives them."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


# (``to_dlpack`` is importable from here as from torch's module, outside its __all__)
_EXPORTED = (from_dlpack, to_dlpack)
