"""Running a job of N processes under MPI's ``mpiexec`` and ending it when one of them fails.

MPICH's ``mpiexec`` ends the job when a process calls ``MPI_Abort``, but not when one merely
exits with an error (the others may then wait forever in a collective or in ``MPI_Init``).
So every process of a job started here reports a failure in the job's run directory
(``failed-RANK``, holding its traceback) before it exits; the parent watching the job ends
all of them as soon as such a report appears.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback

from ._mpiexec import mpiexec_path

RUN_DIR = "EMBER_RUN_DIR"
POLL_SECONDS = 0.1
ABORT_GRACE_SECONDS = 3.0  # time for MPI_Abort to end the job before it is killed

# Variables MPI sets in the processes it starts: a job started from such a process must not
# see them, or it would take itself for part of the outer job.
_LAUNCHER_PREFIXES = ("PMI_", "PMIX_", "MPI_LOCAL", "HYDRA_", "MPIR_")


def clean_environment(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LAUNCHER_PREFIXES)}
    env.update(extra or {})
    return env


class Job:
    """``mpiexec`` running ``command`` in ``nprocs`` processes (more options in
    ``mpiexec_args``); a run directory where the processes report their ends."""

    def __init__(self, nprocs, command, env=None, mpiexec_args=(), run_dir=None):
        self.nprocs = nprocs
        self.run_dir = run_dir or tempfile.mkdtemp(prefix="ember-run-")
        env = clean_environment(env)
        env[RUN_DIR] = self.run_dir
        cmd = [mpiexec_path(), *mpiexec_args, "-n", str(nprocs), *command]
        self.proc = subprocess.Popen(cmd, env=env, start_new_session=True)

    # -- what the processes reported --------------------------------------------------------
    def _read(self, name):
        try:
            with open(os.path.join(self.run_dir, name)) as f:
                return f.read()
        except OSError:
            return None

    def failures(self):
        """Ranks that reported a failure, first reported first."""
        names = [n for n in os.listdir(self.run_dir) if n.startswith("failed-")]
        names.sort(key=lambda n: os.stat(os.path.join(self.run_dir, n)).st_mtime)
        return [int(n.split("-")[1]) for n in names]

    def traceback(self, rank):
        return self._read(f"failed-{rank}")

    def exit_code(self, rank):
        """The code rank ``rank`` reported at its end, or None."""
        code = self._read(f"exit-{rank}")
        return None if code is None else int(code)

    def exit_time(self, rank):
        """When rank ``rank`` reported its end (inf if it did not)."""
        try:
            return os.stat(os.path.join(self.run_dir, f"exit-{rank}")).st_mtime
        except OSError:
            return float("inf")

    def pid(self, rank):
        pid = self._read(f"pid-{rank}")
        return None if pid is None else int(pid)

    # -- the job as a whole -----------------------------------------------------------------
    def poll(self):
        return self.proc.poll()

    def wait(self, timeout=None):
        """Wait until the job ends or a process reports a failure (then end the job).
        Returns mpiexec's exit code, or None if ``timeout`` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.proc.poll() is None:
            if self.failures():
                self.end(ABORT_GRACE_SECONDS)
                break
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(POLL_SECONDS)
        return self.proc.returncode

    def end(self, grace=0.0):
        """Let the job end by itself for ``grace`` seconds, then terminate it (mpiexec
        takes its processes down with it), then kill what is left."""
        try:
            self.proc.wait(grace)
            return
        except subprocess.TimeoutExpired:
            pass
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, None)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                pass


# -- the side of the processes of a job -----------------------------------------------------

def mpi_rank():
    """This process's rank in the job MPI started (from the variables mpiexec sets)."""
    return int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))


def _write(name, text):
    run_dir = os.environ.get(RUN_DIR)
    if run_dir:
        path = os.path.join(run_dir, name)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)  # the watcher never reads half a report


def report_start():
    _write(f"pid-{mpi_rank()}", str(os.getpid()))


def report_exit(code):
    _write(f"exit-{mpi_rank()}", str(code))


def report_failure(text=None, code=1):
    """Record this process's failure (and traceback) for the watcher, then end the job
    through MPI if this process has joined it."""
    text = traceback.format_exc() if text is None else text
    rank = mpi_rank()
    _write(f"exit-{rank}", str(code))
    _write(f"failed-{rank}", text)
    sys.stdout.flush()
    sys.stderr.flush()
    abort_if_initialized()


def abort_if_initialized():
    from . import _mpi
    if _mpi.initialized():
        _mpi.mpi().COMM_WORLD.Abort(1)
