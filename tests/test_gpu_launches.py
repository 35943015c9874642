"""What a small training step asks of a GPU: kernel launches and host <-> device transfers,
counted on ``fake_cupy`` (tests/gpu_launches.py), and the GPU forms of the ops that cut them
giving the CPU's (and torch's) results exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from gpu_launches import op_counts, step_counts
from oracle import same

nan, inf = float("nan"), float("inf")

# (input planes, max_pool2d arguments): NaNs (torch takes the last NaN of a window), ties and
# signed zeros (the first maximum), padding, dilation, strides and ceil_mode.
POOL_CASES = [
    ([[1, nan, 3, nan], [nan, 0, 2, 5], [4, 4, 0, -0.0], [4, -inf, -0.0, 0]], dict(kernel_size=2)),
    ([[2, 2, 1, 7, 7], [2, 1, nan, 7, 0], [-inf, -inf, 3, 3, 3], [0, -0.0, 9, nan, nan],
      [5, 5, 5, 5, 5]], dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ([[1, 2, 3, 4, 5], [5, 4, 3, 2, 1], [0, 0, 0, 0, 0], [-1, nan, -1, 2, 2], [3, 1, 3, 1, 3]],
     dict(kernel_size=2, stride=1, dilation=2)),
]


def _pool_input(lib, plane, device="cpu"):
    x = lib.tensor(plane, dtype=lib.float32)
    return lib.stack([x, x.flip(0), -x]).reshape(1, 3, *x.shape).to(device)


@pytest.mark.parametrize("plane,kwargs", POOL_CASES)
def test_max_pool2d_on_the_device_matches_the_cpu_and_torch(cuda_device, plane, kwargs):
    def pooled(lib, device):
        x = _pool_input(lib, plane, device).requires_grad_(True)
        out, idx = lib.nn.functional.max_pool2d(x, return_indices=True, **kwargs)
        (grad,) = lib.autograd.grad(out, [x], lib.ones_like(out))
        return out, idx, grad

    cpu = [t.detach() for t in pooled(ember, "cpu")]
    gpu = [t.detach().cpu() for t in pooled(ember, cuda_device)]
    for a, b in zip(cpu, gpu):
        np.testing.assert_array_equal(b.numpy(), a.numpy())
        assert b.dtype == a.dtype
    # the signs of zeros too (the first of equal maxima is the one kept)
    np.testing.assert_array_equal(np.signbit(gpu[0].numpy()), np.signbit(cpu[0].numpy()))
    same(lambda torch: pooled(torch, "cpu"), rtol=0, atol=0)


def test_max_pool2d_makes_no_host_transfer_on_the_device(cuda_device):
    counts = op_counts(ember, cuda_device, ops=("max_pool2d",))["max_pool2d"]
    for direction, most in (("forward", 11), ("backward", 3)):
        assert counts[direction]["to_host"] == counts[direction]["from_host"] == 0
        assert counts[direction]["kernels"] <= most


def test_nll_loss_backward_reads_nothing_on_the_host(cuda_device):
    counts = op_counts(ember, cuda_device, ops=("nll_loss", "cross_entropy"))
    for op in ("nll_loss", "cross_entropy"):
        assert counts[op]["backward"]["to_host"] == 0
        assert counts[op]["backward"]["from_host"] == 0
        # the forward's one read: whether every target is a class index (torch's error)
        assert counts[op]["forward"]["to_host"] == 1
    assert counts["nll_loss"]["forward"]["kernels"] <= 7
    assert counts["nll_loss"]["backward"]["kernels"] <= 9


def test_a_w6_training_step_reads_the_host_once(cuda_device):
    """W6 (benchmarks/workloads.py conv): conv2d, relu, max_pool2d, linear, cross_entropy and
    backward copy nothing to the device and read one value back (the target check)."""
    counts = step_counts(ember, cuda_device)
    assert counts["from_host"] == 0
    assert counts["to_host"] == 1
    assert counts["kernels"] <= 55


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_with_ignored_targets_on_the_device_matches_the_cpu_and_torch(
        cuda_device, reduction, weighted):
    """The device's backward masks ignored samples without asking whether there are any."""
    def loss_and_grad(lib, device):
        logits = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [0.0, 3.0, 1.0],
                             [-2.0, 0.5, 0.5]], dtype=lib.float64).to(device)
        logits.requires_grad_(True)
        target = lib.tensor([2, -100, 0, -100]).to(device)
        weight = lib.tensor([0.5, 2.0, 1.5], dtype=lib.float64).to(device) if weighted else None
        loss = lib.nn.functional.cross_entropy(logits, target, weight, reduction=reduction)
        (grad,) = lib.autograd.grad(loss, [logits], lib.ones_like(loss))
        return loss.detach().cpu(), grad.cpu()

    cpu, gpu = loss_and_grad(ember, "cpu"), loss_and_grad(ember, cuda_device)
    for a, b in zip(cpu, gpu):
        np.testing.assert_array_equal(b.numpy(), a.numpy())
    same(lambda torch: loss_and_grad(torch, "cpu"), rtol=1e-12, atol=1e-12)


def test_max_pool3d_on_the_device_matches_the_cpu_and_torch(cuda_device):
    def pooled(lib, device):
        values = np.arange(2 * 5 * 4 * 6, dtype=np.float32).reshape(1, 2, 5, 4, 6) % 7
        values[0, 0, 1, 1, 1] = values[0, 0, 0, 0, 1] = values[0, 1, 4, 3, 5] = np.nan
        values[0, 1, 2] = -0.0
        x = lib.tensor(values).to(device).requires_grad_(True)
        out, idx = lib.nn.functional.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0),
                                                ceil_mode=True, return_indices=True)
        (grad,) = lib.autograd.grad(out, [x], lib.ones_like(out))
        return out.detach().cpu(), idx.cpu(), grad.cpu()

    cpu, gpu = pooled(ember, "cpu"), pooled(ember, cuda_device)
    for a, b in zip(cpu, gpu):
        np.testing.assert_array_equal(b.numpy(), a.numpy())
    same(lambda torch: pooled(torch, "cpu"), rtol=0, atol=0)
