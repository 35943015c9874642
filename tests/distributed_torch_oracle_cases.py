"""DDP against torch's own DDP (gloo), in the same processes: each process of the launch
also joins a torch gloo group (MASTER_ADDR/MASTER_PORT from the test), and both libraries
train the same model on the same shards; their parameters must agree."""
from __future__ import annotations

import os

import numpy as np

import ember
import ember.nn.functional as eF
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks as ember_hooks
from ember.nn.parallel import DistributedDataParallel as EmberDDP

_TORCH = []


def _torch():
    if not _TORCH:
        import torch
        import torch.distributed
        torch.distributed.init_process_group("gloo", rank=int(os.environ["PMI_RANK"]),
                                             world_size=int(os.environ["PMI_SIZE"]))
        _TORCH.append(torch)
    return _TORCH[0]


def _net(lib):
    class Branchy(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(5, 8)
            self.fc2 = lib.nn.Linear(8, 3)
            self.extra = lib.nn.Linear(8, 3)

        def forward(self, x, use_extra=False):
            h = lib.tanh(self.fc1(x))
            return self.fc2(h) + self.extra(h) if use_extra else self.fc2(h)

    lib.manual_seed(int(os.environ["PMI_RANK"]))  # replicas differ until DDP broadcasts
    return Branchy().double()


def _data(step, n):
    g = np.random.default_rng(step)
    return g.standard_normal((n, 5)), g.integers(0, 3, n)


def _assert_same(ours, theirs, exact=False):
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        a, b = p.detach().numpy(), q.detach().numpy()
        if exact:
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12, err_msg=name)


def training_matches_torch(rank, size):
    """Unused parameters, no_sync micro-batches, momentum: torch's DDP and ember's agree."""
    torch = _torch()
    theirs = torch.nn.parallel.DistributedDataParallel(_net(torch), find_unused_parameters=True)
    ours = EmberDDP(_net(ember), find_unused_parameters=True)
    with ember.no_grad():  # the same (rank 0) starting point in both libraries
        for p, q in zip(ours.module.parameters(), theirs.module.parameters()):
            p.copy_(ember.tensor(q.detach().numpy()))
    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    opt_e = ember.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    for step in range(3):
        opt_t.zero_grad()
        opt_e.zero_grad()
        for micro in range(2):
            x, y = _data(10 * step + micro, 4 * size)
            part = slice(4 * rank, 4 * rank + 4)
            extra = {"use_extra": step == 1}
            sync = micro == 1
            with (theirs.no_sync() if not sync else _nothing()):
                torch.nn.functional.cross_entropy(
                    theirs(torch.tensor(x[part]), **extra), torch.tensor(y[part])).backward()
            with (ours.no_sync() if not sync else _nothing()):
                eF.cross_entropy(ours(ember.tensor(x[part]), **extra),
                                 ember.tensor(y[part])).backward()
        for p, q in zip(ours.module.parameters(), theirs.module.parameters()):
            assert (p.grad is None) == (q.grad is None)
        opt_t.step()
        opt_e.step()
        _assert_same(ours.module, theirs.module)


def fp16_hook_matches_torch(rank, size):
    """The float16 compression hook gives torch's gradients bit for bit (2 processes)."""
    torch = _torch()
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as torch_hooks
    theirs = torch.nn.parallel.DistributedDataParallel(_net(torch))
    ours = EmberDDP(_net(ember))
    with ember.no_grad():
        for p, q in zip(ours.module.parameters(), theirs.module.parameters()):
            p.copy_(ember.tensor(q.detach().numpy()))
    theirs.register_comm_hook(None, torch_hooks.fp16_compress_hook)
    ours.register_comm_hook(None, ember_hooks.fp16_compress_hook)
    x, y = _data(5, 4 * size)
    part = slice(4 * rank, 4 * rank + 4)
    torch.nn.functional.cross_entropy(theirs(torch.tensor(x[part]), use_extra=True),
                                      torch.tensor(y[part])).backward()
    eF.cross_entropy(ours(ember.tensor(x[part]), use_extra=True),
                     ember.tensor(y[part])).backward()
    for p, q in zip(ours.module.parameters(), theirs.module.parameters()):
        if q.grad is not None:
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


class _Bucket:
    """What torch's default hooks use of a GradBucket: its buffer."""

    def __init__(self, buffer):
        self._buffer = buffer

    def buffer(self):
        return self._buffer

    def set_buffer(self, buffer):
        self._buffer = buffer


def bf16_hooks_match_torch(rank, size):
    """The bfloat16 compression hook and wrapper give the gradients torch's own hooks make
    of the same local gradients (torch's DDP refuses them without CUDA, so its hooks run on
    a bucket of the concatenated local gradients here)."""
    torch = _torch()
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as torch_hooks
    x, y = _data(7, 4 * size)
    part = slice(4 * rank, 4 * rank + 4)
    hooks = {"hook": (torch_hooks.bf16_compress_hook, ember_hooks.bf16_compress_hook),
             "wrapper": (torch_hooks.bf16_compress_wrapper(torch_hooks.allreduce_hook),
                         ember_hooks.bf16_compress_wrapper(ember_hooks.allreduce_hook))}
    for name, (torch_hook, ember_hook) in hooks.items():
        theirs = _plain_net(torch)
        with torch.no_grad():  # process 0's weights, as DDP would start from
            for q in theirs.parameters():
                torch.distributed.broadcast(q, 0)
        torch.nn.functional.cross_entropy(theirs(torch.tensor(x[part])),
                                          torch.tensor(y[part])).backward()
        local = torch.cat([q.grad.reshape(-1) for q in theirs.parameters()])
        expected = torch_hook(None, _Bucket(local)).wait()
        ours = EmberDDP(_plain_net(ember))
        with ember.no_grad():
            for p, q in zip(ours.module.parameters(), theirs.parameters()):
                p.copy_(ember.tensor(q.detach().numpy()))
        ours.register_comm_hook(None, ember_hook)
        eF.cross_entropy(ours(ember.tensor(x[part])), ember.tensor(y[part])).backward()
        got = np.concatenate([p.grad.numpy().reshape(-1) for p in ours.module.parameters()])
        np.testing.assert_array_equal(got, expected.double().numpy(), err_msg=name)


def _mismatched_models(lib, rank):
    """Models that differ across processes: in parameter count, sizes, strides."""
    lib.manual_seed(0)
    strided = lib.nn.Linear(4, 3)
    if rank == 1:  # the same sizes, transposed strides
        strided.weight = lib.nn.Parameter(lib.ones(4, 3).t())
    return [lib.nn.Linear(4, 3, bias=rank != 1),
            lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.Linear(3, 2 + rank)),
            strided]


def _construction_error(lib, model, rank, k):
    try:
        lib.nn.parallel.DistributedDataParallel(model)
    except RuntimeError as e:
        if k > 0 and rank > 0:
            _take_part_in_states_broadcast(lib, k)
        return str(e)
    return None


def _take_part_in_states_broadcast(lib, k):
    """After its sizes check passed, process 0 broadcasts its parameters; a process whose
    check failed takes part (with process 0's shapes) so that the processes stay in step."""
    states = list(_mismatched_models(lib, 0)[k].parameters())
    with lib.no_grad():
        _broadcast_coalesced(lib, states)


def _broadcast_coalesced(lib, states):
    if lib is ember:
        from ember.distributed._coalesced import broadcast_coalesced
        broadcast_coalesced(states, 0)
    else:
        lib.distributed._broadcast_coalesced(lib.distributed.group.WORLD, states,
                                             250 * 1024 * 1024, 0)


def mismatched_models_fail_as_torchs(rank, size):
    """DDP's constructor checks that every process has process 0's parameter count, sizes
    and strides, with torch's errors (no TORCH_DISTRIBUTED_DEBUG needed)."""
    torch = _torch()
    models = zip(_mismatched_models(torch, rank), _mismatched_models(ember, rank))
    for k, (theirs, ours) in enumerate(models):
        expected = _construction_error(torch, theirs, rank, k)
        got = _construction_error(ember, ours, rank, k)
        assert got == expected, (got, expected)
        assert (expected is None) == (rank != 1 and k > 0), expected
        torch.distributed.barrier()
        ember.distributed.barrier()


def _plain_net(lib):
    lib.manual_seed(int(os.environ["PMI_RANK"]))
    return lib.nn.Sequential(lib.nn.Linear(5, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3)).double()


def join_matches_torch(rank, size):
    """Uneven inputs under join(): process r has r + 2 batches; the models agree."""
    torch = _torch()
    theirs = torch.nn.parallel.DistributedDataParallel(_plain_net(torch))
    ours = EmberDDP(_plain_net(ember))
    with ember.no_grad():
        for p, q in zip(ours.module.parameters(), theirs.module.parameters()):
            p.copy_(ember.tensor(q.detach().numpy()))
    for lib, model, loss in ((torch, theirs, torch.nn.functional.cross_entropy),
                             (ember, ours, eF.cross_entropy)):
        opt = lib.optim.SGD(model.parameters(), lr=0.1)
        with model.join():
            for k in range(rank + 2):
                x, y = _data(100 * rank + k, 4)
                opt.zero_grad()
                loss(model(lib.tensor(x)), lib.tensor(y)).backward()
                opt.step()
    _assert_same(ours.module, theirs.module)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def low_precision_all_reduce_matches_torch(rank, size):
    """float16 and bfloat16 all-reduces (contiguous and strided) round as torch's gloo does,
    on values whose sums and products are not exact in either type."""
    torch = _torch()
    values = np.random.default_rng(rank).standard_normal(64) * 10
    for name in ("float16", "bfloat16"):
        for op in ("SUM", "PRODUCT", "MIN", "MAX"):
            theirs = torch.tensor(values).to(getattr(torch, name))
            torch.distributed.all_reduce(theirs, op=getattr(torch.distributed.ReduceOp, op))
            ours = ember.tensor(values).to(getattr(ember, name))
            ember.distributed.all_reduce(ours, op=getattr(ember.distributed.ReduceOp, op))
            strided = ember.tensor(np.stack([values, values], 1)).to(getattr(ember, name))
            ember.distributed.all_reduce(strided[:, 1],
                                         op=getattr(ember.distributed.ReduceOp, op))
            want = theirs.double().numpy()
            np.testing.assert_array_equal(ours.double().numpy(), want, err_msg=f"{name} {op}")
            np.testing.assert_array_equal(strided[:, 1].double().numpy(), want)



def all_reduce_sizes_match_torch(rank, size):
    """float32 all-reduces on both sides of the size where ember switches MPICH's algorithm
    (ember.distributed._mpich_tuning), blocking and async_op: torch's gloo values."""
    from ember.distributed._mpich_tuning import SMALL_BYTES
    torch = _torch()
    g = np.random.default_rng(rank)
    for n in (256, 1024, SMALL_BYTES // 4, SMALL_BYTES // 4 + 1, 16384):
        values = g.standard_normal(n).astype(np.float32) * 100
        for op in ("SUM", "AVG", "MAX"):
            theirs = torch.tensor(values)
            torch.distributed.all_reduce(theirs, op=getattr(torch.distributed.ReduceOp, op))
            ours = ember.tensor(values)
            work = ember.distributed.all_reduce(ours, op=getattr(ember.distributed.ReduceOp, op),
                                                async_op=(rank + n) % 2 == 1)
            assert (work is None) == ((rank + n) % 2 == 0)
            if work is not None:
                work.wait()
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=f"{n} {op}")

CASES = ["training_matches_torch", "fp16_hook_matches_torch", "bf16_hooks_match_torch",
         "mismatched_models_fail_as_torchs", "join_matches_torch",
         "low_precision_all_reduce_matches_torch", "all_reduce_sizes_match_torch"]
