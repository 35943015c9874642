"""``functional_call`` and ``stack_module_state``: modules as functions of their parameters."""
from __future__ import annotations

from collections.abc import Sequence

from ..nn.utils.stateless import _functional_call

__all__ = ["functional_call", "replace_all_batch_norm_modules_", "stack_module_state"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Call ``module`` with its parameters and buffers replaced by the given tensors."""
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(  # noqa: TRY004 - torch's type
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but "
            f"got {type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def _stacked_leaf(tensors, name):
    from .._ops.shape import stack
    all_grad = all(t.requires_grad for t in tensors)
    if not all_grad and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack(list(tensors))
    if all_grad:
        result = result.detach().requires_grad_()
    return result


def stack_module_state(models):
    """The parameters and the buffers of ``models`` (same class), each stacked along a new
    leading dimension: two dicts keyed by name."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    kind = type(models[0])
    if not all(type(m) is kind for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers


def _batch_norm_without_running_stats(module):
    from ..nn.modules.normalization import _BatchNorm
    if isinstance(module, _BatchNorm) and module.track_running_stats:
        module.running_mean = None
        module.running_var = None
        module.num_batches_tracked = None
        module.track_running_stats = False


def replace_all_batch_norm_modules_(root):
    """In place, make every BatchNorm module of ``root`` use batch statistics only (no running
    statistics); returns ``root``."""
    _batch_norm_without_running_stats(root)
    for module in root.modules():
        _batch_norm_without_running_stats(module)
    return root
