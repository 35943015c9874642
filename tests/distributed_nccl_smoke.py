"""NCCL on one GPU (world size 1): every collective on CUDA tensors, and DDP on a CUDA model
against plain training. Run as a script by test_distributed_nccl.py (a process of its own, as
MPI and NCCL initialise once per process); prints ``NCCL-SMOKE-OK`` when every check passed.
"""
from __future__ import annotations

import os

import numpy as np

import ember as torch
import ember.distributed as dist
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP

DEV = "cuda:0"


def close(a, b, tol=1e-12):
    a, b = np.asarray(a.detach().cpu().numpy(), np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol), (a, b)


def collectives():
    x = torch.arange(6, dtype=torch.float64, device=DEV).reshape(2, 3)
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.MIN,
               dist.ReduceOp.PRODUCT):
        y = x.clone()
        dist.all_reduce(y, op=op)
        close(y, np.arange(6).reshape(2, 3))  # one process: every reduction is the identity
    flags = torch.tensor([True, False], device=DEV)
    dist.all_reduce(flags)
    assert flags.tolist() == [True, False]
    strided = torch.arange(8, dtype=torch.float32, device=DEV)[::2]
    dist.all_reduce(strided)
    close(strided, [0, 2, 4, 6])
    work = dist.all_reduce(x.clone(), async_op=True)
    work.wait()
    assert work.is_completed()
    b = torch.full((4,), 3.0, device=DEV)
    dist.broadcast(b, src=0)
    close(b, [3, 3, 3, 3])
    out = torch.empty(2, 3, dtype=torch.float64, device=DEV)
    dist.all_gather_into_tensor(out, x)
    close(out, np.arange(6).reshape(2, 3))
    parts = [torch.empty(2, 3, dtype=torch.float64, device=DEV)]
    dist.all_gather(parts, x)
    close(parts[0], np.arange(6).reshape(2, 3))
    rs = torch.empty(2, 3, dtype=torch.float64, device=DEV)
    dist.reduce_scatter_tensor(rs, x)
    close(rs, np.arange(6).reshape(2, 3))
    r = x.clone()
    dist.reduce(r, dst=0)
    close(r, np.arange(6).reshape(2, 3))
    dist.barrier()


def ddp_matches_plain_training(**options):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)).double().to(DEV)
    reference = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)).double().to(DEV)
    reference.load_state_dict(model.state_dict())
    ddp = DDP(model, bucket_cap_mb=1e-4, **options)  # several buckets
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(16, 5, dtype=torch.float64, device=DEV)
        target = torch.randn(16, 3, dtype=torch.float64, device=DEV)
        for net, o in ((ddp, opt), (reference, ref_opt)):
            o.zero_grad()
            torch.nn.functional.mse_loss(net(x), target).backward()
            o.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert p.device.type == "cuda"
        close(p, q.detach().cpu().numpy(), tol=1e-10)


def main():
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    assert dist.is_nccl_available()
    dist.init_process_group("nccl")
    assert dist.get_backend() == "nccl" and dist.get_world_size() == 1
    collectives()
    ddp_matches_plain_training()
    ddp_matches_plain_training(find_unused_parameters=True, gradient_as_bucket_view=True)
    dist.destroy_process_group()
    print("NCCL-SMOKE-OK")


if __name__ == "__main__":
    main()
