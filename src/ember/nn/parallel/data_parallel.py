"""DataParallel: a module's batch split over the devices of one process.

Without an accelerator the wrapper only calls its module, as torch's CPU build does. With CUDA
devices each forward scatters the inputs along ``dim`` (one chunk per device), runs the module
on each chunk with its parameters and buffers copied to that device (copies that keep the
originals' autograd history, so the gradients sum into the module's own parameters), and gathers
the outputs on ``output_device``. ember runs the replicas one after another; the results are
torch's.
"""
from __future__ import annotations

from itertools import chain

from ... import cuda
from ..._backend.device import device as _device
from ..._tensor import Tensor
from ..modules.module import Module
from ..utils.stateless import functional_call
from .scatter_gather import gather, scatter_kwargs

__all__ = ["DataParallel", "data_parallel"]


def _index(d) -> int:
    return d if isinstance(d, int) else _device(d).index or 0


class DataParallel(Module):
    """Runs ``module`` on chunks of its inputs, one per device in ``device_ids``."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not cuda.is_available():
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_index(d) for d in device_ids]
        self.output_device = _index(output_device)
        self.src_device_obj = _device("cuda", self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in chain(self.module.parameters(), self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError("module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of "
                                   f"them on device: {t.device}")
        inputs, module_kwargs = scatter_kwargs(inputs, kwargs, self.device_ids, self.dim)
        if not inputs and not module_kwargs:
            inputs, module_kwargs = ((),), ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **module_kwargs[0])
        outputs = [self._replica_call(d, args, kw) for d, args, kw
                   in zip(self.device_ids, inputs, module_kwargs)]
        return gather(outputs, self.output_device, self.dim)

    def _replica_call(self, index, args, kwargs):
        """The module on device ``index``: device 0's replica is the module itself (its
        in-place updates are kept, as torch's are); the others use copies."""
        if index == self.device_ids[0]:
            return self.module(*args, **kwargs)
        state = {name: t.to(f"cuda:{index}") for name, t in
                 chain(self.module.named_parameters(), self.module.named_buffers())}
        return functional_call(self.module, state, args, kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """One DataParallel forward of ``module`` on ``inputs`` (a tuple or one input)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if not cuda.is_available():
        raise RuntimeError("device type could not be determined")
    return DataParallel(module, device_ids, output_device, dim)(*inputs,
                                                                **(module_kwargs or {}))
