"""``torch.__future__``'s switches for nn.Module conversions, as torch has them: by default a
parameter stays the same object; ``overwrite`` makes new Parameters (and gradients); ``swap``
keeps the objects and wins over ``overwrite``."""
from __future__ import annotations

import importlib

import pytest
from oracle import same


@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True), (True, True)])
def test_module_conversion_follows_the_future_flags(flags):
    overwrite, swap = flags

    def body(torch):
        future = importlib.import_module(f"{torch.__name__}.__future__")
        future.set_overwrite_module_params_on_conversion(overwrite)
        future.set_swap_module_params_on_conversion(swap)
        try:
            m = torch.nn.Linear(2, 2)
            weight, bias = m.weight, m.bias
            m.weight.grad = torch.ones(2, 2)
            grad = m.weight.grad
            m.double()
            return (m.weight is weight, m.bias is bias, m.weight.grad is grad, weight.dtype,
                    m.weight.dtype, m.weight.grad.dtype, type(m.weight).__name__,
                    m.weight.requires_grad, future.get_overwrite_module_params_on_conversion(),
                    future.get_swap_module_params_on_conversion())
        finally:
            future.set_overwrite_module_params_on_conversion(False)
            future.set_swap_module_params_on_conversion(False)
    same(body)
