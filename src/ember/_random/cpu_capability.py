"""Which of torch's CPU kernel builds this machine runs, as far as random numbers can tell.

torch compiles its CPU kernels once per instruction set and picks one at run time (the
``ATEN_CPU_CAPABILITY`` variable can lower the choice). Two things in its random numbers depend
on it: the AVX2 and AVX-512 builds fuse multiply-adds (``x * range + from`` rounds once), and
float32 normals of 16 elements or more come from the AVX2 kernel's Cephes polynomials. The x86
baseline build does neither: it rounds twice and uses the C library's float functions. ARM
builds fuse (FMA is part of the base instruction set) and use the C library.
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
