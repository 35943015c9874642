"""DistributedDataParallel and Join in 2 and 4 MPI processes (distributed_ddp_cases.py)."""
from __future__ import annotations

import pytest
from distributed_ddp_cases import CASES
from distributed_helpers import Launch, requires_mpi

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
