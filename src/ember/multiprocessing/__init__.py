"""``ember.multiprocessing``: Python's multiprocessing, plus torch's ``spawn`` and
``start_processes``.

``spawn(fn, args, nprocs)`` runs ``fn(i, *args)`` in ``nprocs`` new processes. When
ember.distributed can run (the ``distributed`` extra), they are started together under MPI's
``mpiexec``, so that ``init_process_group(rank=i, world_size=nprocs)`` in ``fn`` joins them
(MPI cannot join processes started apart); otherwise they are ordinary spawned processes.
"""
import multiprocessing as _mp
from multiprocessing import *

from .spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

# (as torch's: tensors given to a Process, a Queue or a Pipe travel in shared memory)
from ..utils.data._shared_memory import register_reductions as _register_reductions

_register_reductions()

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "start_processes"] + list(_mp.__all__)
