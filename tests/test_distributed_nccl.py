"""The NCCL backend on a real GPU (``pytest -m cuda``), world size 1: runs
distributed_nccl_smoke.py in a process of its own. Skips without CuPy's NCCL, a GPU or mpi4py
(CI has none of them)."""
from __future__ import annotations

import sys

import pytest
from distributed_helpers import HERE, requires_mpi, run_command

import ember

pytestmark = [pytest.mark.cuda, requires_mpi]
if not ember.cuda.is_available():
    pytest.skip("no GPU (CuPy with a CUDA device is needed)", allow_module_level=True)


def test_nccl_collectives_and_ddp_on_one_gpu():
    import ember.distributed as dist
    if not dist.is_nccl_available():
        pytest.skip("CuPy has no NCCL here")
    code, out = run_command([sys.executable, f"{HERE}/distributed_nccl_smoke.py"], timeout=180)
    assert code == 0 and "NCCL-SMOKE-OK" in out, out
