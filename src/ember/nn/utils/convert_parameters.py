"""Parameters to one vector and back, as torch.nn.utils.convert_parameters."""
from __future__ import annotations

from ..._tensor import Tensor


def parameters_to_vector(parameters):
    """Flatten an iterable of parameters into one vector (differentiable)."""
    from ... import cat
    return cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy slices of ``vec`` into the data of ``parameters``."""
    if not isinstance(vec, Tensor):
        from ..modules.module import typename
        raise TypeError(f"expected ember.Tensor, but got: {typename(vec)}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
