"""DistributedDataParallel cases, run in every process of a launch (distributed_helpers.py).

Each process trains its shard of a global batch; a plain copy of the model, trained in the
same process on the whole batch, is the reference: float64 parameters must agree to 1e-10.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember as torch
import ember.distributed as dist
import ember.nn.functional as F
from ember import nn
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
from ember.nn.parallel import DistributedDataParallel as DDP

TOL = 1e-10


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


class Branchy(MLP):
    """An MLP with a branch used only when asked: its parameters are unused otherwise."""

    def __init__(self):
        super().__init__()
        self.extra = nn.Linear(8, 3)

    def forward(self, x, use_extra=False):
        h = torch.tanh(self.fc1(x))
        out = self.fc2(h)
        return out + self.extra(h) if use_extra else out


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 3 * 3, 3)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(h.flatten(1))


def _model(cls, rank):
    torch.manual_seed(100 + rank)  # different on each process: DDP broadcasts rank 0's
    return cls().double()


def _batch(step, n, shape, seed=0):
    g = np.random.default_rng(1000 * seed + step)
    x = torch.tensor(g.standard_normal((n,) + shape))
    y = torch.tensor(g.integers(0, 3, n))
    return x, y


def _close(model, reference):
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=TOL,
                                   err_msg=name)


def _train(cls, shape, rank, size, steps=4, micro=1, extra_at=(), **ddp_kwargs):
    """DDP training against single-process training on the concatenated batch; ``micro``
    micro-batches per step (all but the last under no_sync)."""
    reference = _model(cls, 0)
    ddp = DDP(_model(cls, rank), **ddp_kwargs)
    _close(ddp.module, reference)  # rank 0's initial parameters everywhere
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    per = 4
    for step in range(steps):
        extra = {"use_extra": True} if step in extra_at else {}
        opt.zero_grad()
        ref_opt.zero_grad()
        for m in range(micro):
            x, y = _batch(step * micro + m, per * size, shape)
            mine = slice(rank * per, (rank + 1) * per)
            ctx = ddp.no_sync() if m < micro - 1 else _Nothing()
            with ctx:
                loss = F.cross_entropy(ddp(x[mine], **extra), y[mine]) / micro
                loss.backward()
            (F.cross_entropy(reference(x, **extra), y) / micro).backward()
        opt.step()
        ref_opt.step()
        _close(ddp.module, reference)
    return ddp


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def mlp_training(rank, size):
    _train(MLP, (5,), rank, size)


def cnn_training(rank, size):
    _train(CNN, (2, 6, 6), rank, size, steps=3)


def no_sync_accumulation(rank, size):
    _train(MLP, (5,), rank, size, steps=3, micro=3)


def unused_parameters(rank, size):
    ddp = _train(Branchy, (5,), rank, size, steps=4, micro=2, extra_at=(1, 3),
                 find_unused_parameters=True)
    assert ddp.module.extra.weight.grad is not None


def unused_parameters_never_used_keep_no_grad(rank, size):
    ddp = _train(Branchy, (5,), rank, size, steps=2, find_unused_parameters=True)
    assert ddp.module.extra.weight.grad is None  # globally unused: .grad left alone


def small_buckets_and_bucket_views(rank, size):
    ddp = _train(CNN, (2, 6, 6), rank, size, steps=3, bucket_cap_mb=0.0005,
                 gradient_as_bucket_view=True)
    assert len(ddp.reducer.buckets) > 2
    for b in ddp.reducer.buckets:
        for i, view in zip(b.indices, b.view_tensors):
            p = ddp.reducer.params[i]
            assert p.grad is view and np.shares_memory(p.grad._data, b.flat)


def static_graph(rank, size):
    ddp = _train(Branchy, (5,), rank, size, steps=4, static_graph=True)
    assert ddp.module.extra.weight.grad is None


def comm_hooks(rank, size):
    _train_with_hook(rank, size, default_hooks.allreduce_hook)
    _check_fp16_hook(rank, size)
    ddp = DDP(_model(MLP, rank))
    ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    with pytest.raises(RuntimeError, match="^register_comm_hook or register_builtin_comm_hook "
                                           "can only be called once.$"):
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)


def _train_with_hook(rank, size, hook):
    reference = _model(MLP, 0)
    ddp = DDP(_model(MLP, rank))
    ddp.register_comm_hook(None, hook)
    x, y = _batch(0, 4 * size, (5,))
    F.cross_entropy(ddp(x[rank * 4:(rank + 1) * 4]), y[rank * 4:(rank + 1) * 4]).backward()
    F.cross_entropy(reference(x), y).backward()
    for p, q in zip(ddp.module.parameters(), reference.parameters()):
        if q.grad is not None:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=0, atol=TOL)


def _check_fp16_hook(rank, size):
    """Each process's gradient in float16, divided by the world size in float16, summed."""
    ddp = DDP(_model(MLP, rank))
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    x, y = _batch(0, 4 * size, (5,))
    local = []
    for r in range(size):
        m = _model(MLP, 0)
        F.cross_entropy(m(x[r * 4:(r + 1) * 4]), y[r * 4:(r + 1) * 4]).backward()
        local.append([None if p.grad is None else p.grad.numpy() for p in m.parameters()])
    F.cross_entropy(ddp(x[rank * 4:(rank + 1) * 4]), y[rank * 4:(rank + 1) * 4]).backward()
    for k, p in enumerate(ddp.module.parameters()):
        if local[0][k] is None:
            continue
        parts = [(g[k].astype(np.float16) / np.float16(size)).astype(np.float16) for g in local]
        total = parts[0]
        for part in parts[1:]:
            total = (total + part).astype(np.float16)
        if size == 2:  # one rounding: MPI's float16 sum is exactly this
            np.testing.assert_array_equal(p.grad.numpy(), total.astype(np.float64))
        else:
            np.testing.assert_allclose(p.grad.numpy(), total.astype(np.float64), rtol=2e-3,
                                       atol=1e-4)


def state_dict_and_buffers(rank, size):
    net = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)).double()
    ddp = DDP(net)
    keys = list(ddp.state_dict())
    assert keys == ["module." + k for k in net.state_dict()]
    ddp.load_state_dict(ddp.state_dict())
    seen = []
    net[1].register_forward_pre_hook(lambda m, inp: seen.append(m.running_mean.tolist()))
    net[1].running_mean.fill_(float(rank))
    ddp(torch.ones(4, 3, dtype=torch.float64) * rank)
    assert seen[-1] == [0.0] * 3  # rank 0's buffers, broadcast before the forward
    ddp2 = DDP(net, broadcast_buffers=False)
    net[1].running_mean.fill_(float(rank))
    ddp2(torch.ones(4, 3, dtype=torch.float64))
    assert seen[-1] == [float(rank)] * 3


def join_uneven_inputs(rank, size):
    """Process r has r + 1 batches; joined processes contribute nothing, gradients are
    divided by the world size, and every process ends with the last joiner's model."""
    reference = _model(MLP, 0)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    ddp = DDP(_model(MLP, rank))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    counts = [r + 1 for r in range(size)]
    with ddp.join():
        for k in range(counts[rank]):
            opt.zero_grad()
            x, y = _batch(k, 4, (5,), seed=rank + 1)
            F.cross_entropy(ddp(x), y).backward()
            opt.step()
    for k in range(max(counts)):
        ref_opt.zero_grad()
        for r in range(size):
            if counts[r] > k:
                x, y = _batch(k, 4, (5,), seed=r + 1)
                (F.cross_entropy(reference(x), y) / size).backward()
        ref_opt.step()
    _close(ddp.module, reference)


def join_early_termination(rank, size):
    ddp = DDP(_model(MLP, rank))
    expected = "^Rank 0 exhausted all inputs.$" if rank == 0 else \
        "^Detected at least one rank that exhausted inputs. Throwing across all ranks.$"
    with pytest.raises(RuntimeError, match=expected), ddp.join(throw_on_early_termination=True):
        for k in range(0 if rank == 0 else 3):
            x, y = _batch(k, 4, (5,))
            F.cross_entropy(ddp(x), y).backward()


def ddp_errors(rank, size):
    with pytest.raises(RuntimeError, match="^DistributedDataParallel is not needed when a "
                                           "module doesn't have any parameter that requires "
                                           "a gradient.$"):
        DDP(nn.ReLU())
    ddp = DDP(_model(Branchy, rank))
    x, y = _batch(0, 4, (5,))
    F.cross_entropy(ddp(x), y).backward()
    with pytest.raises(RuntimeError) as info:
        ddp(x)
    message = str(info.value)
    assert message.startswith("Expected to have finished reduction in the prior iteration "
                              "before starting a new one. This error indicates that your "
                              "module has parameters that were not used in producing loss. "
                              "You can enable unused parameter detection by passing the "
                              "keyword argument `find_unused_parameters=True`")
    assert f"Parameter indices which did not receive grad for rank {rank}: 4 5\n" in message
    for p in ddp.module.extra.parameters():  # (the reductions left pending before the error)
        assert p.grad is None
    other = nn.Linear(2, 2) if rank == 0 else nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="^DDP expects same model across all ranks"):
        DDP(other)


def sync_batchnorm_uneven_shards(rank, size):
    """Process r holds r samples (rank 0 none): outputs, running statistics and the input
    gradient equal BatchNorm's on the concatenated batch; weight and bias gradients summed
    over the processes equal its."""
    g = np.random.default_rng(7)
    counts = list(range(size))
    x_all = torch.tensor(g.standard_normal((sum(counts), 3, 2, 2)), requires_grad=True)
    seed_all = torch.tensor(g.standard_normal((sum(counts), 3, 2, 2)))
    lo, hi = sum(counts[:rank]), sum(counts[:rank + 1])
    reference = nn.BatchNorm2d(3, momentum=0.3).double()
    sync = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm2d(3, momentum=0.3).double())
    with torch.no_grad():
        for m in (reference, sync):
            m.weight.copy_(torch.tensor([0.5, 2.0, -1.0]))
            m.bias.copy_(torch.tensor([0.1, 0.2, 0.3]))
    x = x_all.detach()[lo:hi].clone().requires_grad_()
    out = sync(x)
    ref_out = reference(x_all)
    (out * seed_all[lo:hi]).sum().backward()
    (ref_out * seed_all).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref_out.detach()[lo:hi].numpy(), atol=TOL)
    if hi > lo:
        np.testing.assert_allclose(x.grad.numpy(), x_all.grad[lo:hi].numpy(), atol=TOL)
    else:  # torch leaves an empty shard's gradient None
        assert x.grad is None
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(sync, name).numpy(),
                                   getattr(reference, name).numpy(), atol=TOL)
    for name in ("weight", "bias"):
        grad = getattr(sync, name).grad
        grad = torch.zeros(3, dtype=torch.float64) if grad is None else grad.clone()
        dist.all_reduce(grad)
        np.testing.assert_allclose(grad.numpy(), getattr(reference, name).grad.numpy(),
                                   atol=TOL)


class BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 6 * 6, 3)

    def forward(self, x):
        return self.fc(F.relu(self.bn(self.conv(x))).flatten(1))


def sync_batchnorm_ddp_training(rank, size):
    """DDP over a model converted to SyncBatchNorm trains as BatchNorm on the whole batch."""
    reference = _model(BNNet, 0)
    ddp = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(_model(BNNet, rank)))
    assert isinstance(ddp.module.bn, nn.SyncBatchNorm)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step in range(3):
        x, y = _batch(step, 3 * size, (2, 6, 6))
        opt.zero_grad()
        ref_opt.zero_grad()
        F.cross_entropy(ddp(x[rank * 3:(rank + 1) * 3]), y[rank * 3:(rank + 1) * 3]).backward()
        F.cross_entropy(reference(x), y).backward()
        opt.step()
        ref_opt.step()
        _close(ddp.module, reference)
        np.testing.assert_allclose(ddp.module.bn.running_var.numpy(),
                                   reference.bn.running_var.numpy(), atol=TOL)


def distributed_sampler_shards(rank, size):
    """The sampler takes its rank and replicas from the group; shards are disjoint and
    cover the dataset (with padding) in every epoch."""
    sampler = torch.utils.data.DistributedSampler(range(10), seed=3)
    assert (sampler.rank, sampler.num_replicas) == (rank, size)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        shards = [None] * size
        dist.all_gather_object(shards, list(sampler))
        flat = [i for shard in shards for i in shard]
        assert sorted(set(flat)) == list(range(10)) and len(flat) == len(sampler) * size
        assert len(flat) - 10 == (-10) % size  # only the padding repeats


CASES = ["mlp_training", "cnn_training", "no_sync_accumulation", "unused_parameters",
         "unused_parameters_never_used_keep_no_grad", "small_buckets_and_bucket_views",
         "static_graph", "comm_hooks", "state_dict_and_buffers", "join_uneven_inputs",
         "join_early_termination", "ddp_errors", "sync_batchnorm_uneven_shards",
         "sync_batchnorm_ddp_training", "distributed_sampler_shards"]
