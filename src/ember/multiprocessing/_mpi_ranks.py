"""Spawned processes as the ranks of one ``mpiexec`` job.

Each rank (``_spawned.py``) imports the parent's ``__main__`` the way multiprocessing's spawn
does, unpickles ``fn`` and ``args`` and runs ``fn(rank, *args)``. A rank looks to
ProcessContext like a multiprocessing.Process: its pid and exit code are what it reports in
the job's run directory, and ending one ends the job (MPI jobs end as a whole).
"""
from __future__ import annotations

import atexit
import os
import pickle
import sys
import tempfile
import time

from ..distributed._job import POLL_SECONDS, Job
from .spawn import preparation_data


class _Rank:
    def __init__(self, job, rank):
        self._job = job
        self._rank = rank

    @property
    def pid(self):
        return self._job.pid(self._rank) or 0

    @property
    def exitcode(self):
        code = self._job.exit_code(self._rank)
        if code is not None:
            return code
        job_code = self._job.poll()
        if job_code is None:
            return None
        return job_code if job_code != 0 else 1  # ended without reporting its end

    @property
    def ended_at(self):
        """When it reported its end: a rank that failed comes before those the job's end
        took down with it."""
        return self._job.exit_time(self._rank)

    def is_alive(self):
        return self.exitcode is None

    def join(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.is_alive() and (deadline is None or time.monotonic() < deadline):
            time.sleep(POLL_SECONDS)

    def terminate(self):
        self._job.end()

    kill = terminate


def start_ranks(fn, args, nprocs, daemon, error_files):
    """Start ``nprocs`` ranks running ``fn(rank, *args)``; one _Rank per process."""
    payload = {"preparation": preparation_data(), "call": pickle.dumps((fn, args)),
               "error_files": error_files}
    run_dir = tempfile.mkdtemp(prefix="ember-spawn-")
    with open(os.path.join(run_dir, "payload.pickle"), "wb") as f:
        pickle.dump(payload, f)
    job = Job(nprocs, [sys.executable, "-m", "ember.multiprocessing._spawned"],
              run_dir=run_dir)
    if daemon:
        atexit.register(job.end)
    return [_Rank(job, r) for r in range(nprocs)]
