"""The fake ``cuda`` device for tests: ember's CUDA backend built on ``fake_cupy``.

``installed()`` serves ``cuda`` tensors from the CPU stand-in for CuPy while it is active (and
puts back whatever served them before: nothing, or a real GPU). Never active for users: only
the tests' fixtures call it.
"""
from __future__ import annotations

import contextlib

import fake_cupy

from ember._backend.cuda import CudaBackend
from ember._backend.device import install_cuda


@contextlib.contextmanager
def installed():
    backend = CudaBackend(fake_cupy.module(), fake_cupy.extras())
    previous = install_cuda(backend)
    try:
        yield backend
    finally:
        install_cuda(previous if previous is not None else None)
