"""``python -m ember.distributed.run``: torchrun's command line, on MPI's ``mpiexec``.

``python -m ember.distributed.run --nproc-per-node 4 train.py --lr 0.1`` starts 4 processes
of ``train.py`` under ``mpiexec``; each finds torchrun's variables (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, ...) in its environment,
so ``init_process_group()`` with its default ``env://`` works. Several machines: one launch,
from one machine, with an MPI host file (``--hostfile``): mpiexec starts the processes on
every host. When a process fails, the launcher ends the job and exits non-zero, with the
failing process's traceback, or runs the whole job again (``--max-restarts``).
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
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
    _flag(parser, "--nnodes", default="1",
          help="number of machines: N, or MIN:MAX (the machines of --hostfile, which must "
               "number at least MIN; at most MAX of them are used)")
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
    _flag(parser, "--standalone", action="store_true",
          help="a job on this machine alone (a fresh run id and MASTER_PORT)")
    _flag(parser, "--rdzv-backend", default="static",
          help="static or c10d: MPI starts every process from this one launch; with c10d "
               "the launch is made on the --rdzv-endpoint machine, the first of --hostfile")
    _flag(parser, "--rdzv-endpoint", default="",
          help="HOST[:PORT]: exported as MASTER_ADDR and MASTER_PORT")
    _flag(parser, "--rdzv-id", default="none", help="exported as TORCHELASTIC_RUN_ID")
    _flag(parser, "--max-restarts", type=int, default=0,
          help="run the whole job again, up to this many times, when a process fails "
               "(TORCHELASTIC_RESTART_COUNT tells the processes which attempt this is)")
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


def _min_max(value):
    """torchrun's reading of --nnodes: N or MIN:MAX."""
    parts = str(value).split(":")
    if len(parts) > 2:
        raise RuntimeError(f'nnodes={value} is not in "MIN:MAX" format')
    low, high = int(parts[0]), int(parts[-1])
    if not 0 < low <= high:
        raise AssertionError(f"min_nodes must be > 0 and <= max_nodes, got min_nodes={low}, "
                             f"max_nodes={high}")
    return low, high


def _hosts(hostfile):
    """The machines a host file lists (``host``, ``host:slots`` or ``host slots=N`` lines)."""
    with open(hostfile) as f:
        lines = [line.split("#", 1)[0].strip() for line in f]
    return [line.split(":", 1)[0].split()[0] for line in lines if line]


def _nnodes(args):
    """How many machines the job runs on: those MPI is given (the host file's, or this one),
    which an elastic MIN:MAX must admit. MPI jobs have a fixed size: no machine joins or
    leaves a running job."""
    low, high = _min_max(args.nnodes)
    if args.standalone and (low > 1 or args.hostfile is not None):
        raise ValueError("--standalone runs the job on this machine alone: it takes no "
                         "--hostfile and --nnodes 1")
    if args.hostfile is None:
        if low > 1:
            raise ValueError(f"--nnodes {args.nnodes} needs --hostfile: MPI starts the "
                             "processes of every machine from a single launch, listed in a "
                             "host file")
        return 1
    available = len(_hosts(args.hostfile))
    if available < low:
        raise ValueError(f"--nnodes {args.nnodes}: the host file {args.hostfile} lists "
                         f"{available} machines, fewer than {low}")
    return min(available, high)


_THIS_MACHINE = ("localhost", "127.0.0.1", "::1", "")


def _this_machine(host):
    if host in _THIS_MACHINE:
        return True
    names = {socket.gethostname(), socket.getfqdn()}
    try:
        names.update(socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:
        pass
    return host in names


def _rendezvous(args, nnodes):
    """(MASTER_ADDR, MASTER_PORT, run id) from the rendezvous options, after checking that
    MPI can do what they ask."""
    run_id = args.rdzv_id if args.rdzv_id != "none" else uuid.uuid4().hex
    if args.standalone:  # torchrun: a c10d rendezvous on localhost, a fresh id
        return "127.0.0.1", _free_port(), uuid.uuid4().hex
    if args.rdzv_backend not in ("static", "c10d"):
        raise ValueError(f"--rdzv-backend {args.rdzv_backend} is not supported: MPI starts "
                         "the processes of every machine from one launch, with no rendezvous "
                         "service (use static or c10d)")
    host, port = args.master_addr, args.master_port
    if args.rdzv_endpoint:
        host, sep, given = args.rdzv_endpoint.rpartition(":")
        if not sep:
            host, given = given, ""
        port = int(given) if given else 29400  # torchrun's default rendezvous port
    if nnodes > 1:
        if args.rdzv_backend == "static" and args.node_rank != 0:
            raise ValueError("start the launcher once, on the first machine (--node-rank 0):"
                             " mpiexec starts the processes of every machine in the host "
                             "file")
        first = _hosts(args.hostfile)[0]
        if args.rdzv_backend == "c10d" and not (_this_machine(host) and _this_machine(first)):
            raise ValueError(f"with --rdzv-backend c10d, start the launcher once, on the "
                             f"--rdzv-endpoint machine ({host}), listed first in the host "
                             f"file (which lists {first} first): mpiexec starts the processes "
                             "of every machine from there")
    return host, port, run_id


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    if args.max_restarts < 0:
        raise AssertionError("max_restarts must be >= 0")
    nproc, nnodes = _nproc(args.nproc_per_node), _nnodes(args)
    master_addr, master_port, run_id = _rendezvous(args, nnodes)
    mpiexec_args = args.mpiexec_args.split()
    if args.hostfile is not None:
        mpiexec_args += ["-f", args.hostfile, "-ppn", str(nproc)]
    env = {
        "MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port),
        "EMBER_RUN_NPROC_PER_NODE": str(nproc), "TORCHELASTIC_RUN_ID": run_id,
        "TORCHELASTIC_MAX_RESTARTS": str(args.max_restarts),
    }
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        print("Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
              "default, to avoid your system being overloaded, please further tune the "
              "variable for optimal performance in your application as needed.",
              file=sys.stderr)
        env["OMP_NUM_THREADS"] = "1"
    for attempt in range(args.max_restarts + 1):
        env["TORCHELASTIC_RESTART_COUNT"] = str(attempt)
        try:
            code, failure = _run_job(nproc * nnodes, _command(args), env, mpiexec_args)
        except KeyboardInterrupt:
            return 130
        if code == 0 and failure is None:
            return 0
        left = args.max_restarts - attempt
        if left:  # torchrun's words: every process of the job starts again
            print(f"[default] Worker group FAILED. {left}/{args.max_restarts} attempts left;"
                  " will restart worker group", file=sys.stderr, flush=True)
    if failure is not None:
        print(_failure_summary(args.training_script, *failure), file=sys.stderr, flush=True)
        return 1
    return code


def _run_job(nprocs, command, env, mpiexec_args):
    """Run one attempt: mpiexec's exit code, and (rank, traceback) of the first process that
    reported a failure, if one did."""
    job = Job(nprocs, command, env, mpiexec_args)
    _end_job_on_signals(job)
    try:
        code = job.wait()
    except KeyboardInterrupt:
        job.end()
        raise
    failed = job.failures()
    if failed:
        return code, (failed[0], job.traceback(failed[0]))
    return code, None


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
