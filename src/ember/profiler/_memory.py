"""Memory accounting for ``profile_memory=True``: the bytes of the arrays each range creates.

The profiler hook's range cannot see what the op returns, so while memory is profiled the
op registry's ``_tensor_call`` and the engine's ``_run_node`` are wrapped to report their
outputs to the session; the wrappers are removed when the profiler stops, so nothing is
paid when it is off. Views and gradients passed through unchanged are not counted (they
allocate nothing). Frees are not tracked: ``cpu_memory_usage`` is what a range allocated.
"""
from __future__ import annotations


def _tensor_arrays(out):
    if isinstance(out, (tuple, list)):
        return [getattr(o, "_data", None) for o in out]
    return [getattr(out, "_data", None)]


def _grad_arrays(values):
    return [getattr(v, "_data", v) for v in (values or ())]


def install_taps(session):
    """Wrap the two functions that produce arrays; returns a function that unwraps them."""
    from .._ops import registry
    from ..autograd import engine

    tensor_call = registry._tensor_call
    run_node = engine._run_node

    def counted_tensor_call(op, args):
        out = tensor_call(op, args)
        inputs = [getattr(a, "_data", None) for a in args[:op.n_tensors]]
        session.note_outputs(_tensor_arrays(out), [i for i in inputs if i is not None])
        return out

    def counted_run_node(task, fn, grads):
        outs = run_node(task, fn, grads)
        if outs is not None:
            session.note_outputs(_grad_arrays(outs), [g for g in _grad_arrays(grads)
                                                      if g is not None])
        return outs

    registry._tensor_call = counted_tensor_call
    engine._run_node = counted_run_node

    def remove():
        registry._tensor_call = tensor_call
        engine._run_node = run_node
    return remove
