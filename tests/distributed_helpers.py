"""Running test cases in several MPI processes.

A launch runs ``distributed_worker.py`` under the mpich wheel's ``mpiexec``: each process
initialises the default group, runs the named cases of a case module in order and prints one
``CASE-OK``/``CASE-FAIL`` line per case. Every launch has a deadline; a process that hangs
gets its whole session killed, and the test fails with what the processes printed.
"""
from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
WORKER = os.path.join(HERE, "distributed_worker.py")

requires_mpi = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                                  reason="mpi4py (the 'distributed' extra) is not installed")


def env_with_src(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([SRC, HERE] + [p for p in env.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    env.update(extra or {})
    return env


def run_command(cmd, timeout, env=None, cwd=None):
    """Run ``cmd`` in a session of its own; kill the session after ``timeout`` seconds.
    Returns (returncode or None on timeout, combined output)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env or env_with_src(), cwd=cwd or HERE, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # a launcher ends its mpiexec job on SIGTERM
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        return None, out


def mpiexec(n, *args):
    from ember.distributed._mpiexec import mpiexec_path
    return [mpiexec_path(), "-n", str(n), *args]


class Launch:
    """The outcome of one launch: which cases passed on which ranks."""

    def __init__(self, size, module, cases, timeout=60, env=None):
        self.size = size
        cmd = mpiexec(size, sys.executable, WORKER, module, *cases)
        self.code, self.output = run_command(cmd, timeout, env_with_src(env))

    def check(self, case):
        """Fail unless every rank printed CASE-OK for ``case``."""
        ok = [f"CASE-OK {r} {case}" in self.output for r in range(self.size)]
        if not all(ok):
            status = "timed out" if self.code is None else f"exit code {self.code}"
            pytest.fail(f"case {case} on {self.size} ranks ({status}); ranks passing: "
                        f"{[r for r, good in enumerate(ok) if good]}\n{self.output[-6000:]}")
