"""Which of torch's CPU kernels this machine runs, where their results differ at the edges.

torch compiles its CPU kernels once per instruction set and picks one at run time (the
``ATEN_CPU_CAPABILITY`` variable can lower the choice). Two things in its random numbers depend
on it: the AVX2 and AVX-512 builds fuse multiply-adds (``x * range + from`` rounds once), and
float32 normals of 16 elements or more come from the AVX2 kernel's Cephes polynomials. The x86
baseline build does neither: it rounds twice and uses the C library's float functions. ARM
builds fuse (FMA is part of the base instruction set) and use the C library.

Some ops (gelu) run oneDNN's kernel on a contiguous input of more than one element, for float32
always, and for bfloat16 and float16 only where oneDNN has native support for them on this CPU;
oneDNN's kernel differs from torch's own at infinities.
"""
from __future__ import annotations

import functools
import os
import platform


def _x86_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


@functools.cache
def _machine():
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        if os.environ.get("ATEN_CPU_CAPABILITY", "").lower() == "default":
            return "x86"
        flags = _x86_flags()
        # NOTE: without /proc/cpuinfo (macOS, Windows) assume a CPU of the last decade
        return "x86-avx2" if flags is None or {"avx2", "fma"} <= flags else "x86"
    return "arm" if machine in ("arm64", "aarch64") else "other"


def fused_multiply_add() -> bool:
    """Whether torch's random kernels round ``a * b + c`` once here."""
    return _machine() in ("x86-avx2", "arm")


def cephes_normals() -> bool:
    """Whether float32 normals of 16 or more come from the AVX2 Cephes kernel here."""
    return _machine() == "x86-avx2"


@functools.cache
def _onednn_half_types():
    """The 2-byte float types oneDNN computes natively here, as torch's mkldnn_bf16_device_check
    and mkldnn_fp16_device_check decide: bfloat16 from AVX-512 (F, BW, VL, DQ), float16 from
    AVX-512 FP16 or AMX FP16 (Sapphire Rapids; not AMD Zen 4)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return frozenset()
    flags = _x86_flags() or set()
    kinds = set()
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        kinds.add("bfloat16")
    if "avx512_fp16" in flags or "amx_fp16" in flags:
        kinds.add("float16")
    return frozenset(kinds)


def onednn_runs(dtype) -> bool:
    """Whether torch's oneDNN kernels take float arrays of ``dtype`` here."""
    return dtype.itemsize == 4 or (dtype.itemsize == 2 and str(dtype) in _onednn_half_types())


def is_x86() -> bool:
    """Whether torch's CPU kernels here are the x86 ones (any instruction set)."""
    return _machine() in ("x86-avx2", "x86")
