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


@requires_mpi
def test_launcher_restarts_the_whole_job(tmp_path):
    """--max-restarts: a failed job runs again; an elastic --nnodes takes the machines of the
    host file (here twice this one)."""
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:1\nlocalhost:1\n")
    code, out, _ = _timed(_launcher("--nnodes", "1:3", "--hostfile", str(hosts),
                                    "--max-restarts", "2", SCRIPT, "fail-until-attempt", "1"))
    assert code == 0, out
    assert "ValueError: rank 1 failed on attempt 0" in out, out
    assert "Worker group FAILED. 2/2 attempts left; will restart worker group" in out, out
    assert "1/2 attempts left" not in out and "ATTEMPT 0" not in out, out
    for rank in (0, 1):
        assert f"ATTEMPT 1 RANK {rank} GROUP_RANK {rank} OF 2 MAX 2" in out, out


@requires_mpi
def test_launcher_gives_up_after_its_restarts():
    code, out, _ = _timed(_launcher(
        "--nproc-per-node", "2", "--max-restarts", "1", "--no-python", "sh", "-c",
        'echo "attempt=$TORCHELASTIC_RESTART_COUNT rank=$RANK"; exit $RANK'))
    assert code not in (0, None), out
    assert out.count("Worker group FAILED. 1/1 attempts left; will restart worker group") == 1
    for attempt in (0, 1):
        assert f"attempt={attempt} rank=1" in out, out
    assert "attempt=2" not in out, out


def _refused(*args):
    from ember.distributed.run import parse_args, run
    return lambda: run(parse_args([*args, "x.py"]))


def test_launcher_refuses_what_mpi_cannot_do(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("# two machines\nnode-a:4\nnode-b:4\n")
    with pytest.raises(ValueError, match="^--nnodes 2 needs --hostfile"):
        _refused("--nnodes", "2", "--nproc-per-node", "2")()
    with pytest.raises(ValueError, match="^--nnodes 2:4 needs --hostfile"):
        _refused("--nnodes", "2:4")()
    with pytest.raises(ValueError, match=f"^--nnodes 3:4: the host file {hosts} lists 2 "
                                         "machines, fewer than 3$"):
        _refused("--nnodes", "3:4", "--hostfile", str(hosts))()
    with pytest.raises(RuntimeError, match='^nnodes=1:2:3 is not in "MIN:MAX" format$'):
        _refused("--nnodes", "1:2:3")()
    with pytest.raises(AssertionError, match="^min_nodes must be > 0 and <= max_nodes, got "
                                             "min_nodes=3, max_nodes=2$"):
        _refused("--nnodes", "3:2")()
    with pytest.raises(AssertionError, match="^max_restarts must be >= 0$"):
        _refused("--max-restarts", "-1")()
    with pytest.raises(ValueError, match="^--rdzv-backend etcd-v2 is not supported: MPI "
                                         "starts the processes of every machine from one "
                                         "launch"):
        _refused("--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "etcd:2379")()
    with pytest.raises(ValueError, match="^--standalone runs the job on this machine alone"):
        _refused("--standalone", "--hostfile", str(hosts))()
    with pytest.raises(ValueError, match=r"^start the launcher once, on the first machine "
                                         r"\(--node-rank 0\)"):
        _refused("--nnodes", "2", "--hostfile", str(hosts), "--node-rank", "1")()
    with pytest.raises(ValueError, match=r"^with --rdzv-backend c10d, start the launcher once, "
                                         r"on the --rdzv-endpoint machine \(node-a\), listed "
                                         r"first in the host file \(which lists node-a first\)"):
        _refused("--nnodes", "2", "--hostfile", str(hosts), "--rdzv-backend", "c10d",
                 "--rdzv-endpoint", "node-a:29400")()


def test_launcher_rendezvous_options():
    """What the rendezvous options become in the processes' environment."""
    from ember.distributed.run import _rendezvous, parse_args

    def env(*args):
        return _rendezvous(parse_args([*args, "x.py"]), 1)
    assert env("--rdzv-backend", "c10d", "--rdzv-endpoint", "node-a:1234",
               "--rdzv-id", "job7") == ("node-a", 1234, "job7")
    assert env("--rdzv-backend", "c10d", "--rdzv-endpoint", "node-a")[:2] == ("node-a", 29400)
    assert env("--master-addr", "10.0.0.1", "--master-port", "555")[:2] == ("10.0.0.1", 555)
    addr, port, run_id = env("--standalone", "--rdzv-id", "ignored")
    assert addr == "127.0.0.1" and 0 < port < 65536 and run_id != "ignored"


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
