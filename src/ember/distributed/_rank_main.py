"""One process of a job the launcher (``ember.distributed.run``) started:
``python -m ember.distributed._rank_main [-m | --exec] SCRIPT ARGS...``.

It puts torchrun's variables for this process in the environment (from those mpiexec sets),
runs the script as ``__main__`` and, if the script raises, shows the traceback and reports
the failure so the launcher ends the job.
"""
from __future__ import annotations

import os
import runpy
import sys
import traceback

from . import _job


def torchrun_environment():
    """RANK, LOCAL_RANK, WORLD_SIZE, ... of this process, as torchrun would set them."""
    rank = _job.mpi_rank()
    size = int(os.environ.get("PMI_SIZE", "1"))
    per_node = int(os.environ.get("EMBER_RUN_NPROC_PER_NODE", size))
    local_rank = int(os.environ.get("MPI_LOCALRANKID", rank % per_node))
    local_size = int(os.environ.get("MPI_LOCALNRANKS", per_node))
    return {"RANK": rank, "WORLD_SIZE": size, "LOCAL_RANK": local_rank,
            "LOCAL_WORLD_SIZE": local_size, "GROUP_RANK": rank // per_node,
            "GROUP_WORLD_SIZE": (size + per_node - 1) // per_node, "ROLE_RANK": rank,
            "ROLE_WORLD_SIZE": size, "ROLE_NAME": "default"}


def main():
    os.environ.update({k: str(v) for k, v in torchrun_environment().items()})
    args = sys.argv[1:]
    if args[0] == "--exec":  # --no-python: the program replaces this process
        os.execvp(args[1], args[1:])
    as_module = args[0] == "-m"
    if as_module:
        args = args[1:]
    sys.argv = args
    _job.report_start()
    try:
        if as_module:
            runpy.run_module(args[0], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
            runpy.run_path(args[0], run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code != 0:
            _job.report_failure(f"SystemExit: {e.code}\n", code)
        _job.report_exit(code)
        raise
    except BaseException:  # noqa: BLE001 - any failure ends the job, shown and reported
        traceback.print_exc()
        _job.report_failure()
        raise SystemExit(1) from None
    _job.report_exit(0)


if __name__ == "__main__":
    main()
