"""``ember.distributed``: torch.distributed's process groups, collectives and point-to-point
messages, on MPI (through mpi4py) for CPU tensors and on NCCL (through CuPy) for CUDA ones.

Processes are started together by MPI: ``mpiexec -n 4 python train.py``, the launcher
``python -m ember.distributed.run --nproc-per-node 4 train.py`` (torchrun's options), or
``ember.multiprocessing.spawn``. ``init_process_group("gloo")`` (or ``"mpi"``) then makes
MPI's world the default group. See docs/distributed.md.
"""
from __future__ import annotations

from ._barrier import monitored_barrier
from ._collectives import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from ._grad_bucket import GradBucket
from ._objects import (
    all_gather_object,
    broadcast_object_list,
    gather_object,
    recv_object_list,
    scatter_object_list,
    send_object_list,
)
from ._p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
from ._types import (
    Backend,
    DebugLevel,
    DistBackendError,
    DistError,
    DistNetworkError,
    DistStoreError,
    QueueEmptyError,
    ReduceOp,
    default_pg_timeout,
    get_debug_level,
    reduce_op,
    set_debug_level,
    set_debug_level_from_env,
)
from ._work import Work
from ._world import (
    GroupMember,
    ProcessGroup,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_pg_count,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    install_abort_on_error,
    is_initialized,
    is_torchelastic_launched,
    new_group,
    size_from_mpiexec,
)

# A process of a job mpiexec started that dies of an exception, even before
# init_process_group, takes the job down rather than leave the others waiting for it.
install_abort_on_error(size_from_mpiexec())


def is_available() -> bool:
    """Whether ember.distributed can run: mpi4py (the ``distributed`` extra) is installed."""
    from . import _mpi
    return _mpi.available()


def is_mpi_available() -> bool:
    """Whether the MPI backend is available (mpi4py is installed)."""
    from . import _mpi
    return _mpi.available()


def is_gloo_available() -> bool:
    """Whether backend ``'gloo'`` is available: ember runs it on MPI."""
    return is_mpi_available()


def is_nccl_available() -> bool:
    """Whether the NCCL backend is available (CuPy with NCCL is installed)."""
    from ._nccl_backend import available
    return available()


def is_ucc_available() -> bool:
    return False


def is_xccl_available() -> bool:
    return False


def is_backend_available(backend: str) -> bool:
    name = Backend(backend)
    return {"gloo": is_gloo_available, "mpi": is_mpi_available,
            "nccl": is_nccl_available}.get(name, lambda: False)()


__all__ = [
    "Backend", "DebugLevel", "DistBackendError", "DistError", "DistNetworkError",
    "DistStoreError", "GradBucket", "GroupMember", "P2POp", "ProcessGroup", "QueueEmptyError", "ReduceOp",
    "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
    "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast",
    "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather",
    "gather_object", "get_backend", "get_debug_level", "get_global_rank", "get_group_rank",
    "get_node_local_rank", "get_pg_count", "get_process_group_ranks", "get_rank",
    "get_world_size", "group", "init_process_group", "irecv", "is_available",
    "is_backend_available", "is_gloo_available", "is_initialized", "is_mpi_available",
    "is_nccl_available", "is_torchelastic_launched", "is_ucc_available", "is_xccl_available",
    "isend", "monitored_barrier", "new_group", "recv", "recv_object_list", "reduce",
    "reduce_op", "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list",
    "send", "send_object_list", "set_debug_level", "set_debug_level_from_env",
]
