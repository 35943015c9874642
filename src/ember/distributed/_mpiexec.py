"""Finding MPI's process launcher: the ``mpiexec`` installed beside this Python (the mpich
wheel puts it in the environment's scripts directory), else the one on PATH."""
from __future__ import annotations

import os
import shutil
import sysconfig


def mpiexec_path() -> str:
    beside = os.path.join(sysconfig.get_path("scripts"), "mpiexec")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("mpiexec")
    if found:
        return found
    raise RuntimeError("mpiexec was not found: pip install 'ember[distributed]' installs "
                       "MPICH's (the mpich wheel) beside mpi4py")
