"""What ``torch.version`` tells, for ember: the torch API version ember implements (with
ember's own release as the local label), and no CUDA or ROCm build (GPUs are reached through
CuPy, which has its own versions: ``cupy.cuda.runtime.runtimeGetVersion()``)."""
from __future__ import annotations

from .torch_version import TorchVersion

__all__ = ["__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]

#: ember's own release
ember = "0.1.0"
#: the torch API version ember follows, labelled with ember's release (torch prints
#: "2.13.0+cpu" for its CPU build)
__version__ = TorchVersion(f"2.13.0+ember{ember}")
cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"
