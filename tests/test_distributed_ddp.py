"""DistributedDataParallel and Join in 2 and 4 MPI processes (distributed_ddp_cases.py)."""
from __future__ import annotations

import pytest
from distributed_ddp_cases import CASES
from distributed_helpers import Launch, requires_mpi
from distributed_torch_oracle_cases import CASES as TORCH_CASES
from oracle import same

import ember as torch

_LAUNCHES = {}


def _launch(size):
    if size not in _LAUNCHES:
        _LAUNCHES[size] = Launch(size, "distributed_ddp_cases", CASES, timeout=150)
    return _LAUNCHES[size]


@requires_mpi
@pytest.mark.parametrize("size", [2, 4])
@pytest.mark.parametrize("case", CASES)
def test_ddp_cases(size, case):
    _launch(size).check(case)


def test_queue_callback_runs_after_the_last_node():
    """The end-of-backward callback DDP relies on (torch's Variable._execution_engine)."""
    engine = torch.autograd.Variable._execution_engine
    with pytest.raises(RuntimeError, match="^Final callbacks can only be installed during "
                                           "backward pass.$"):
        engine.queue_callback(lambda: None)
    x = torch.ones(2, requires_grad=True)
    w = torch.ones(2, requires_grad=True)
    order = []

    def hook(grad):
        order.append("hook")
        engine.queue_callback(lambda: (order.append(("first", w.grad is not None,
                                                     torch.is_grad_enabled())),
                                       engine.queue_callback(lambda: order.append("nested"))))

    x.register_hook(hook)
    (x * w).sum().backward()
    assert order == ["hook", ("first", True, False), "nested"]
    with pytest.raises(RuntimeError, match="^Final callbacks"):
        engine.queue_callback(lambda: None)  # the pass is over


def _sync_bn_body(torch):
    """Without a process group SyncBatchNorm is BatchNorm; errors as torch's."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3, momentum=None),
                              torch.nn.Sequential(torch.nn.BatchNorm2d(3, affine=False)))
    net = torch.nn.SyncBatchNorm.convert_sync_batchnorm(net).double()
    x = torch.arange(96, dtype=torch.float64).reshape(2, 2, 4, 6).sin().requires_grad_()
    out = net(x)
    out.pow(2).sum().backward()
    net.eval()
    errors = []
    for bad in (torch.ones(3), torch.ones(2, 0, 3)):
        try:
            net[1](bad)
        except ValueError as e:
            errors.append(str(e))
    return (out, x.grad, net[1].weight.grad, net[1].running_var, net[1].num_batches_tracked,
            net(x), repr(net), type(net[2][0]).__name__, errors)


def test_sync_batchnorm_without_process_group_matches_torch():
    same(_sync_bn_body, atol=1e-12)


def test_convert_sync_batchnorm_shares_parameters_and_buffers():
    bn = torch.nn.BatchNorm1d(4)
    bn.eval()
    sync = torch.nn.SyncBatchNorm.convert_sync_batchnorm(bn, process_group="pg")
    assert type(sync) is torch.nn.SyncBatchNorm and sync.process_group == "pg"
    assert sync.weight is bn.weight and sync.running_mean is bn.running_mean
    assert not sync.training


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@requires_mpi
@pytest.mark.parametrize("case", TORCH_CASES)
def test_ddp_against_torchs_ddp(case):
    """torch's own DDP on gloo, in the same 2 processes, as the oracle."""
    pytest.importorskip("torch")
    if "torch" not in _LAUNCHES:
        _LAUNCHES["torch"] = Launch(2, "distributed_torch_oracle_cases", TORCH_CASES,
                                    timeout=150, env={"MASTER_ADDR": "127.0.0.1",
                                                      "MASTER_PORT": str(_free_port())})
    _LAUNCHES["torch"].check(case)


class _GroupOfTwo:
    """The one thing the reducer asks its group before backward: how many share the mean."""

    def size(self):
        return 2


def test_ddp_buckets_live_on_the_parameters_device(cuda_device):
    """CUDA parameters get CUDA buckets (NCCL reduces them where they are): gradients are
    scaled into them without a trip through host memory (fake_cupy refuses one)."""
    from ember._backend import to_numpy
    from ember.nn.parallel._reducer import Reducer
    params = [torch.ones(3, device=cuda_device, requires_grad=True),
              torch.ones(2, 2, device=cuda_device, requires_grad=True)]
    reducer = Reducer(params, _GroupOfTwo(), cap_bytes=1 << 20, first_bytes=1 << 20,
                      gradient_as_bucket_view=False, find_unused=False, static_graph=False)
    (params[0].sum() * 2 + params[1].sum() * 4).backward()  # no reducing pass expected yet
    (bucket,) = reducer.buckets
    assert bucket.flat_tensor.device.type == "cuda"
    for i in range(2):
        reducer._copy_into_bucket(i, *reducer.where[i])
    # (reverse parameter order: backward produces the last parameters' gradients first)
    assert to_numpy(bucket.flat).tolist() == [2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0]
