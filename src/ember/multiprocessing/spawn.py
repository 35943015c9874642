"""torch.multiprocessing's ``spawn``/``start_processes`` and ``ProcessContext``.

The processes run ``fn(i, *args)``; one that raises writes its traceback to an error file,
and ``ProcessContext.join`` raises it in the parent (``ProcessRaisedException``) after ending
the other processes. With ember.distributed available, the processes are the ranks of one
``mpiexec`` job (``_job.Job``), so that they can form a process group.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.spawn as _mp_spawn
import os
import pickle
import signal
import sys
import tempfile
import time
import warnings

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "start_processes"]

_POLL_SECONDS = 0.05


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A process failed with an exception raised by the code it ran."""


class ProcessExitedException(ProcessException):
    """A process failed through a signal or a non-zero exit code."""

    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return (type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                             self.signal_name))


def _wrap(fn, i, args, error_file):
    """A spawned process's body: run ``fn``, leave the traceback in ``error_file``."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # ended by the parent
    except Exception:  # noqa: BLE001 - handed to the parent, as torch does
        import traceback
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The started processes: ``join`` them, and learn how the first failing one failed."""

    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self._running = set(range(len(processes)))

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def _wait_for_any(self, timeout):
        """Indices of the running processes that have ended, waiting up to ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            ended = [i for i in self._running if self.processes[i].exitcode is not None]
            ended.sort(key=lambda i: (getattr(self.processes[i], "ended_at", 0), i))
            if ended or (deadline is not None and time.monotonic() >= deadline):
                return ended
            time.sleep(_POLL_SECONDS)

    def join(self, timeout=None, grace_period=None):
        """Wait (up to ``timeout`` seconds) for a process to end. Returns True when all have
        ended successfully, False when some still run; when one failed, ends the others
        and raises how it failed."""
        if not self._running:
            return True
        error_index = None
        for i in self._wait_for_any(timeout):
            self._running.discard(i)
            self.processes[i].join()
            if self.processes[i].exitcode != 0:
                error_index = i
                break
        if error_index is None:
            return not self._running
        self._end_all(grace_period)
        raise self._failure(error_index)

    def _end_all(self, grace_period):
        if grace_period is not None:
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()

    def _join_all(self, timeout):
        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0, end - time.monotonic()))

    def _failure(self, index):
        failed = self.processes[index]
        if not os.access(self.error_files[index], os.R_OK):
            code = failed.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                return ProcessExitedException(f"process {index:d} terminated with signal {name}",
                                              error_index=index, error_pid=failed.pid,
                                              exit_code=code, signal_name=name)
            return ProcessExitedException(f"process {index:d} terminated with exit code "
                                          f"{code:d}", error_index=index, error_pid=failed.pid,
                                          exit_code=code)
        with open(self.error_files[index], "rb") as fh:
            trace = pickle.load(fh)
        msg = f"\n\n-- Process {index:d} terminated with the following error:\n" + trace
        return ProcessRaisedException(msg, index, failed.pid)


def _error_file():
    """A fresh path; the file exists only once a process has failed."""
    f = tempfile.NamedTemporaryFile(prefix="ember-errorfile-", suffix=".pickle",  # noqa: SIM115
                                    delete=False)
    f.close()
    os.unlink(f.name)
    return f.name


def _use_mpi():
    from .. import distributed
    return distributed.is_available()


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` for i in range(nprocs) in new processes; wait for them
    (``join``) or return their ProcessContext."""
    error_files = [_error_file() for _ in range(nprocs)]
    if _use_mpi():
        from ._mpi_ranks import start_ranks
        processes = start_ranks(fn, args, nprocs, daemon, error_files)
    else:
        mp = multiprocessing.get_context(start_method)
        processes = []
        for i in range(nprocs):
            p = mp.Process(target=_wrap, args=(fn, i, args, error_files[i]), daemon=daemon)
            p.start()
            processes.append(p)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` in ``nprocs`` spawned processes (see start_processes)."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t"
                      " ember.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")


def preparation_data():
    """What a new process needs to import the parent's ``__main__`` as multiprocessing's
    spawn does (so that functions defined there unpickle). Not the parent's authentication
    key: these processes do not connect back to it through multiprocessing."""
    data = _mp_spawn.get_preparation_data("SpawnProcess")
    data.pop("authkey", None)
    return data
