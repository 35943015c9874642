"""One rank of a job ``ember.multiprocessing.spawn`` started under mpiexec."""
from __future__ import annotations

import multiprocessing.spawn as _mp_spawn
import os
import pickle

from ..distributed import _job
from .spawn import _wrap


def _traceback_in(error_file):
    try:
        with open(error_file, "rb") as fh:
            return pickle.load(fh)
    except OSError:
        return None


def main():
    with open(os.path.join(os.environ[_job.RUN_DIR], "payload.pickle"), "rb") as f:
        payload = pickle.load(f)
    _mp_spawn.prepare(payload["preparation"])  # the parent's __main__, as __mp_main__
    fn, args = pickle.loads(payload["call"])
    rank = _job.mpi_rank()
    _job.report_start()
    error_file = payload["error_files"][rank]
    try:
        _wrap(fn, rank, args, error_file)
    except SystemExit as e:  # _wrap's exit after writing the error file
        code = e.code if isinstance(e.code, int) else 1
        if code != 0:
            _job.report_failure(_traceback_in(error_file) or f"SystemExit: {e.code}\n", code)
        _job.report_exit(code)
        raise
    _job.report_exit(0)


if __name__ == "__main__":
    main()
