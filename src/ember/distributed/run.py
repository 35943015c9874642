"""``python -m ember.distributed.run``: torchrun's command line, on MPI's ``mpiexec``.

``python -m ember.distributed.run --nproc-per-node 4 train.py --lr 0.1`` starts 4 processes
of ``train.py`` under ``mpiexec``; each finds torchrun's variables (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, ...) in its environment,
so ``init_process_group()`` with its default ``env://`` works. Several machines: one launch,
from one machine, with an MPI host file (``--hostfile``): mpiexec starts the processes on
every host. When a process fails, the launcher ends the job and exits non-zero, with the
failing process's traceback.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import uuid

from ._job import Job

__all__ = ["get_args_parser", "main", "parse_args", "run"]


def _flag(parser, name, **kwargs):
    """An option spelled both ``--a-b`` and ``--a_b``, as torchrun accepts."""
    spellings = [name] if "-" not in name[2:] else [name, "--" + name[2:].replace("-", "_")]
    parser.add_argument(*spellings, **kwargs)


def get_args_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
        description="Start a data-parallel job of several processes (torchrun's options) "
                    "under MPI's mpiexec.")
    _flag(parser, "--nnodes", default="1", help="number of machines (N or N:N)")
    _flag(parser, "--nproc-per-node", default="1",
          help="processes per machine: a number, or 'cpu'/'auto' (one per CPU core)")
    _flag(parser, "--node-rank", type=int, default=0,
          help="this machine's index; MPI starts every machine from node 0's launch")
    _flag(parser, "--master-addr", default="127.0.0.1",
          help="exported as MASTER_ADDR (MPI itself needs no rendezvous)")
    _flag(parser, "--master-port", type=int, default=29500, help="exported as MASTER_PORT")
    _flag(parser, "--hostfile", default=None,
          help="MPI host file listing the machines (one per line, 'host:slots'); needed "
               "when --nnodes > 1")
    _flag(parser, "--standalone", action="store_true", help="accepted (single machine)")
    _flag(parser, "--rdzv-backend", default="static", help="accepted, unused")
    _flag(parser, "--rdzv-endpoint", default="", help="accepted, unused")
    _flag(parser, "--rdzv-id", default="none", help="accepted, unused")
    _flag(parser, "--max-restarts", type=int, default=0,
          help="only 0: a failed MPI job is not restarted")
    _flag(parser, "--mpiexec-args", default="",
          help="more options for mpiexec, as one string")
    parser.add_argument("-m", "--module", action="store_true",
                        help="run the script as a Python module (python -m)")
    _flag(parser, "--no-python", action="store_true",
          help="run the script as a program, not with Python")
    parser.add_argument("training_script", help="the script (or module, or program)")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return parser


def parse_args(args):
    return get_args_parser().parse_args(args)


def _nproc(value):
    if value in ("cpu", "auto", "gpu"):
        return os.cpu_count() or 1
    return int(value)


def _nnodes(value):
    low, _, high = str(value).partition(":")
    if high and high != low:
        raise ValueError(f"elastic --nnodes {value} is not supported: MPI jobs have a fixed "
                         "size")
    return int(low)


def _command(args):
    if args.no_python:
        target = [sys.executable, "-m", "ember.distributed._rank_main", "--exec",
                  args.training_script]
    elif args.module:
        target = [sys.executable, "-m", "ember.distributed._rank_main", "-m",
                  args.training_script]
    else:
        target = [sys.executable, "-m", "ember.distributed._rank_main",
                  args.training_script]
    return target + list(args.training_script_args)


def run(args) -> int:
    """Run the job ``args`` describes (``parse_args``' result); returns its exit code."""
    nproc, nnodes = _nproc(args.nproc_per_node), _nnodes(args.nnodes)
    if args.max_restarts:
        raise ValueError("--max-restarts must be 0: a failed MPI job is not restarted")
    mpiexec_args = args.mpiexec_args.split()
    if nnodes > 1:
        if args.hostfile is None:
            raise ValueError("--nnodes > 1 needs --hostfile: MPI starts the processes of "
                             "every machine from a single launch, listed in a host file")
        if args.node_rank != 0:
            raise ValueError("start the launcher once, on the first machine (--node-rank 0):"
                             " mpiexec starts the processes of every machine in the host "
                             "file")
    if args.hostfile is not None:
        mpiexec_args += ["-f", args.hostfile, "-ppn", str(nproc)]
    env = {
        "MASTER_ADDR": args.master_addr, "MASTER_PORT": str(args.master_port),
        "EMBER_RUN_NPROC_PER_NODE": str(nproc),
        "TORCHELASTIC_RUN_ID": args.rdzv_id if args.rdzv_id != "none" else uuid.uuid4().hex,
        "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
    }
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        print("Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
              "default, to avoid your system being overloaded, please further tune the "
              "variable for optimal performance in your application as needed.",
              file=sys.stderr)
        env["OMP_NUM_THREADS"] = "1"
    job = Job(nproc * nnodes, _command(args), env, mpiexec_args)
    _end_job_on_signals(job)
    try:
        code = job.wait()
    except KeyboardInterrupt:
        job.end()
        return 130
    failed = job.failures()
    if failed:
        rank = failed[0]
        print(_failure_summary(args.training_script, rank, job.traceback(rank)),
              file=sys.stderr, flush=True)
        return 1
    return code


def _end_job_on_signals(job):
    """mpiexec runs in a session of its own (so that the job can be ended as a whole): a
    launcher told to stop ends it first."""
    def handler(signum, frame):
        job.end()
        sys.exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def _failure_summary(script, rank, trace):
    bar = "=" * 60
    return (f"{bar}\n{script} FAILED\n{'-' * 60}\nRoot Cause (first observed failure):\n"
            f"  rank: {rank}\n  traceback:\n{trace}{bar}")


def main(args=None) -> None:
    """The launcher's entry point: ``main(["--nproc-per-node", "2", "train.py"])``."""
    sys.exit(run(parse_args(sys.argv[1:] if args is None else args)))


if __name__ == "__main__":
    main()
