"""nn.DataParallel: a pass-through without an accelerator (as torch's CPU build), the batch on
the one device of the fake CUDA backend otherwise."""
from __future__ import annotations

import pytest
from oracle import same

import ember


def test_without_an_accelerator_it_calls_its_module():
    def body(torch):
        torch.manual_seed(0)
        inner = torch.nn.Linear(3, 2)
        net = torch.nn.DataParallel(inner, device_ids=[0])
        out = net(torch.randn(4, 3))
        out.sum().backward()
        return (repr(net), net.device_ids, list(net.state_dict()), out, inner.weight.grad,
                net.module is inner, torch.nn.parallel.DataParallel is torch.nn.DataParallel,
                hasattr(net, "dim"))
    same(body)


def test_data_parallel_function_needs_an_accelerator():
    def body(torch):
        torch.manual_seed(0)
        inner = torch.nn.Linear(3, 2)
        x = torch.randn(4, 3)
        return torch.nn.parallel.data_parallel(inner, x)
    same(body)


def test_one_device_moves_the_module_and_the_batch(cuda_device):
    ember.manual_seed(0)
    inner = ember.nn.Linear(3, 2)
    net = ember.nn.DataParallel(inner)
    assert net.device_ids == [0] and net.output_device == 0 and net.dim == 0
    assert inner.weight.device == ember.device(cuda_device)
    x = ember.randn(4, 3)
    out = net(x, )
    assert out.device == ember.device(cuda_device)
    out.sum().backward()
    expected = ember.nn.functional.linear(x, inner.weight.detach().cpu(),
                                          inner.bias.detach().cpu())
    assert ember.allclose(out.detach().cpu(), expected)
    assert inner.weight.grad.device == ember.device(cuda_device)


def test_parameters_off_the_first_device_are_refused(cuda_device):
    net = ember.nn.DataParallel(ember.nn.Linear(3, 2))
    net.module.cpu()
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on "
                       r"device cuda:0 \(device_ids\[0\]\) but found one of them on device: cpu"):
        net(ember.randn(4, 3))
