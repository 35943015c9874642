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

# (overrideable: a backend for out-of-tree devices; sdpa_kernel switches it with the others)
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True, "overrideable": True}


def _sdp_switch(kind):
    """torch's query and setter of one scaled-dot-product attention kernel switch."""
    def enabled() -> bool:
        return _SDP[kind]

    def enable(enabled: bool) -> None:
        _SDP[kind] = enabled
    enabled.__name__, enable.__name__ = f"{kind}_sdp_enabled", f"enable_{kind}_sdp"
    return enabled, enable


flash_sdp_enabled, enable_flash_sdp = _sdp_switch("flash")
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _sdp_switch("mem_efficient")
math_sdp_enabled, enable_math_sdp = _sdp_switch("math")
cudnn_sdp_enabled, enable_cudnn_sdp = _sdp_switch("cudnn")
