"""torch.backends.cuda: whether ember has a GPU backend, and cuBLAS/attention switches (kept,
read back, no effect on ember's kernels)."""
from __future__ import annotations

from .._backend.device import cuda_backend


def is_built() -> bool:
    """Whether ember can run on CUDA (CuPy found a GPU)."""
    return cuda_backend() is not None


class cuBLASModule:
    """``torch.backends.cuda.matmul``: its known switches, and torch's error for others."""

    _DEFAULTS = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                 "allow_bf16_reduced_precision_reduction": True,
                 "allow_fp16_accumulation": False}

    def __init__(self):
        object.__setattr__(self, "_values", dict(self._DEFAULTS))

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = value


matmul = cuBLASModule()

_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def flash_sdp_enabled() -> bool:
    return _SDP["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _SDP["flash"] = enabled


def mem_efficient_sdp_enabled() -> bool:
    return _SDP["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _SDP["mem_efficient"] = enabled


def math_sdp_enabled() -> bool:
    return _SDP["math"]


def enable_math_sdp(enabled: bool) -> None:
    _SDP["math"] = enabled


def cudnn_sdp_enabled() -> bool:
    return _SDP["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _SDP["cudnn"] = enabled
