"""Starting jobs: the launcher (python -m ember.distributed.run), plain mpiexec and
ember.multiprocessing.spawn, including a process that fails (distributed_launch_script.py)."""
from __future__ import annotations

import importlib
import os
import re
import sys
import time

import pytest
from distributed_helpers import env_with_src, mpiexec, requires_mpi, run_command

import ember.multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "distributed_launch_script.py")
FAIL_WITHIN = 60  # seconds for a job with a failed process to end


def _launcher(*args):
    return [sys.executable, "-m", "ember.distributed.run", *args]


def _timed(cmd, timeout=FAIL_WITHIN + 30):
    start = time.monotonic()
    code, out = run_command(cmd, timeout)
    return code, out, time.monotonic() - start


@requires_mpi
def test_launcher_sets_torchruns_environment():
    code, out, _ = _timed(_launcher("--nproc-per-node", "2", "--master_port", "29600",
                                    SCRIPT, "env", "--flag"))
    assert code == 0, out
    for rank in (0, 1):
        assert (f"ENV RANK={rank} LOCAL_RANK={rank} WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 "
                f"GROUP_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29600 sum=1 elastic=True "
                "argv=['env', '--flag']") in out, out


@requires_mpi
def test_launcher_runs_a_program_with_no_python():
    code, out, _ = _timed(_launcher("--nproc-per-node", "2", "--no-python", "sh", "-c",
                                    "echo rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE"))
    assert code == 0, out
    assert "rank=0 local=0 world=2" in out and "rank=1 local=1 world=2" in out, out


@requires_mpi
@pytest.mark.parametrize("when", ["before", "after"])
def test_launcher_ends_the_job_when_a_rank_raises(when):
    code, out, seconds = _timed(_launcher("--nproc-per-node", "2", SCRIPT,
                                          f"raise-{when}-init", "1"))
    assert code == 1 and seconds < FAIL_WITHIN, (code, seconds, out)
    assert f"ValueError: rank 1 failed {when} init" in out
    assert re.search(r"FAILED\n-+\nRoot Cause \(first observed failure\):\n  rank: 1\n", out)


@requires_mpi
@pytest.mark.parametrize("when,rank", [("before", 0), ("after", 1)])
def test_plain_mpiexec_ends_the_job_when_a_rank_raises(when, rank):
    code, out, seconds = _timed(mpiexec(2, sys.executable, SCRIPT, f"raise-{when}-init",
                                        str(rank)))
    assert code not in (0, None) and seconds < FAIL_WITHIN, (code, seconds, out)
    assert f"ValueError: rank {rank} failed {when} init" in out


@requires_mpi
def test_rank_or_world_size_that_is_not_mpis():
    code, out, _ = _timed(mpiexec(2, sys.executable, SCRIPT, "contradicting-arguments"))
    assert code == 0, out
    for rank in (0, 1):
        assert (f"REFUSED {rank} init_process_group was given rank={1 - rank}, but this process "
                f"is rank {rank} of its MPI world of 2 (ember's processes communicate through "
                "MPI); pass the rank the launcher gives (RANK, or the spawned function's "
                "argument)") in out, out
        assert (f"REFUSED {rank} init_process_group was given world_size=3, but this process "
                "belongs to an MPI world of 2 processes (ember's processes communicate through "
                "MPI): start the processes with `mpiexec -n 3 python script.py`, `python -m "
                "ember.distributed.run --nproc-per-node 3 script.py` or "
                "ember.multiprocessing.spawn") in out, out


def test_launcher_refuses_what_mpi_cannot_do():
    from ember.distributed.run import parse_args, run
    with pytest.raises(ValueError, match="^--nnodes > 1 needs --hostfile"):
        run(parse_args(["--nnodes", "2", "--nproc-per-node", "2", "x.py"]))
    with pytest.raises(ValueError, match="^elastic --nnodes 1:2 is not supported"):
        run(parse_args(["--nnodes", "1:2", "x.py"]))
    with pytest.raises(ValueError, match="^--max-restarts must be 0"):
        run(parse_args(["--max-restarts", "3", "x.py"]))


@requires_mpi
def test_spawned_ddp_training_equals_single_process(tmp_path):
    code, out, _ = _timed([sys.executable, SCRIPT, "spawn-training", "2",
                           str(tmp_path / "model.pt")], timeout=120)
    assert code == 0 and "SPAWN-OK" in out, out


@requires_mpi
def test_spawn_reports_the_failing_process():
    code, out, seconds = _timed([sys.executable, SCRIPT, "spawn-failure"])
    assert code == 0 and seconds < FAIL_WITHIN, (code, seconds, out)
    assert "RAISED index=1\n\n-- Process 1 terminated with the following error:\n" \
           "Traceback (most recent call last):" in out, out
    assert "ValueError: rank 1 failed in the spawned function" in out


# -- without MPI: ordinary spawned processes, as torch.multiprocessing's ------------------

def _write_rank(i, path):
    with open(os.path.join(path, f"rank-{i}"), "w") as f:
        f.write(str(i))


def _fail_on_one(i):
    if i == 1:
        raise RuntimeError("process one failed")


def _exit_three(i):
    sys.exit(3 if i == 0 else 0)


@pytest.fixture
def without_mpi(monkeypatch):
    spawn = importlib.import_module("ember.multiprocessing.spawn")
    monkeypatch.setattr(spawn, "_use_mpi", lambda: False)
    monkeypatch.setenv("PYTHONPATH", env_with_src()["PYTHONPATH"])


def test_spawn_without_mpi(tmp_path, without_mpi):
    context = mp.start_processes(_write_rank, args=(str(tmp_path),), nprocs=2, join=False)
    while not context.join():
        pass
    assert len(context.pids()) == 2
    assert sorted(os.listdir(tmp_path)) == ["rank-0", "rank-1"]


def test_spawn_without_mpi_failures(without_mpi):
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(_fail_on_one, nprocs=2)
    assert info.value.error_index == 1
    assert info.value.msg.startswith("\n\n-- Process 1 terminated with the following error:\n"
                                     "Traceback (most recent call last):\n")
    assert info.value.msg.endswith("RuntimeError: process one failed\n")
    with pytest.raises(mp.ProcessExitedException, match="^process 0 terminated with exit "
                                                        "code 3$") as info:
        mp.spawn(_exit_three, nprocs=1)
    assert info.value.exit_code == 3
    with pytest.warns(FutureWarning, match="^This method only supports start_method=spawn "
                                           r"\(got: fork\)"):
        mp.spawn(_exit_three, nprocs=1, start_method="fork", join=False).processes[0].join()
