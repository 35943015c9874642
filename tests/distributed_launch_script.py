"""A training script run by the launcher, plain mpiexec and ember.multiprocessing.spawn in
test_distributed_launch.py: ``python distributed_launch_script.py MODE [RANK]``."""
import os
import sys

import numpy as np

import ember as torch
import ember.distributed as dist
import ember.multiprocessing as mp
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP


def report_environment():
    dist.init_process_group()  # env:// from the launcher's variables
    total = torch.tensor([dist.get_rank()])
    dist.all_reduce(total)
    names = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
             "MASTER_ADDR", "MASTER_PORT")
    line = ("ENV " + " ".join(f"{n}={os.environ.get(n)}" for n in names)
            + f" sum={int(total)} elastic={dist.is_torchelastic_launched()} argv={sys.argv[1:]}")
    # one write per line: the ranks share the launcher's stdout (print writes piece by piece)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    dist.destroy_process_group()


def raise_on(rank_to_fail, before_init):
    rank = int(os.environ.get("PMI_RANK", "0"))
    if before_init and rank == rank_to_fail:
        raise ValueError(f"rank {rank} failed before init")
    dist.init_process_group("gloo")
    if rank == rank_to_fail:
        raise ValueError(f"rank {rank} failed after init")
    dist.all_reduce(torch.ones(3))  # waits for the failed rank forever, unless the job ends


def fail_until_attempt(attempt):
    """Rank 1 fails until the launcher has restarted the job ``attempt`` times."""
    restarts = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    dist.init_process_group("gloo")
    if dist.get_rank() == 1 and restarts < attempt:
        raise ValueError(f"rank 1 failed on attempt {restarts}")
    dist.barrier()
    sys.stdout.write(f"ATTEMPT {restarts} RANK {dist.get_rank()} GROUP_RANK "
                     f"{os.environ['GROUP_RANK']} OF {os.environ['GROUP_WORLD_SIZE']} MAX "
                     f"{os.environ['TORCHELASTIC_MAX_RESTARTS']}\n")
    sys.stdout.flush()
    dist.destroy_process_group()


def contradicting_arguments():
    """A rank or world size that is not MPI's is an error that says how to launch."""
    mpi_rank = int(os.environ["PMI_RANK"])
    for kwargs in ({"rank": 1 - mpi_rank, "world_size": 2}, {"rank": mpi_rank, "world_size": 3}):
        try:
            dist.init_process_group("gloo", **kwargs)
        except RuntimeError as e:
            print(f"REFUSED {mpi_rank} {e}", flush=True)
    assert not dist.is_initialized()


def _data(world_size):
    g = np.random.default_rng(0)
    return (torch.tensor(g.standard_normal((6, 4 * world_size, 5))),
            torch.tensor(g.integers(0, 3, (6, 4 * world_size))))


def _model():
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(),
                               torch.nn.Linear(7, 3)).double()


def _train(model, xs, ys, shard):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in zip(xs, ys):
        opt.zero_grad()
        F.cross_entropy(model(x[shard]), y[shard]).backward()
        opt.step()


def spawned_training(rank, world_size, out):
    """torch's DDP tutorial: spawned processes with MASTER_ADDR/MASTER_PORT and explicit
    rank and world size."""
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(rank)  # DDP starts every replica from rank 0's parameters
    model = DDP(_model())
    xs, ys = _data(world_size)
    _train(model, xs, ys, slice(4 * rank, 4 * rank + 4))
    if rank == 0:
        torch.save(model.module.state_dict(), out)
    dist.destroy_process_group()


def spawned_failure(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    if rank == 1:
        raise ValueError("rank 1 failed in the spawned function")
    dist.barrier()


def spawn_and_compare(world_size, out):
    mp.spawn(spawned_training, args=(world_size, out), nprocs=world_size, join=True)
    torch.manual_seed(0)
    reference = _model()
    xs, ys = _data(world_size)
    _train(reference, xs, ys, slice(None))
    trained = torch.load(out)
    for name, p in reference.state_dict().items():
        np.testing.assert_allclose(trained[name].numpy(), p.numpy(), rtol=0, atol=1e-10)
    print("SPAWN-OK", flush=True)


def spawn_failure():
    try:
        mp.spawn(spawned_failure, args=(2,), nprocs=2)
    except mp.ProcessRaisedException as e:
        print(f"RAISED index={e.error_index}{e.msg}", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "env":
        report_environment()
    elif mode in ("raise-before-init", "raise-after-init"):
        raise_on(int(sys.argv[2]), mode == "raise-before-init")
    elif mode == "fail-until-attempt":
        fail_until_attempt(int(sys.argv[2]))
    elif mode == "contradicting-arguments":
        contradicting_arguments()
    elif mode == "spawn-training":
        spawn_and_compare(int(sys.argv[2]), sys.argv[3])
    elif mode == "spawn-failure":
        spawn_failure()
