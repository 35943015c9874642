"""Per-thread modes read once per op: grad mode, inference mode, anomaly mode.

Kept in one tiny module so that the op dispatcher reads a single thread-local attribute.
"""
import threading


class _ThreadState(threading.local):
    grad_enabled = True
    inference = False
    # The grad mode that is_grad_enabled() reports inside inference mode, where grad_enabled
    # (which decides whether ops record) stays False: enable_grad can't undo inference mode.
    inference_grad = False
    anomaly = False
    anomaly_check_nan = True
    # saved_tensors_hooks: a stack of (pack, unpack) pairs, innermost last (the op registry
    # reads it once per recorded op); the error message of disable_saved_tensors_hooks, or None.
    saved_hooks = ()
    saved_hooks_disabled = None
    # Inside a backward pass, which runs under one np.errstate(all="ignore"): quiet kernels
    # need not enter their own.
    quiet = False


state = _ThreadState()

# The profiler hook: None when no profiler runs (one global read per op), else a callable
# ``hook(name, inputs) -> context manager``.
profiler_hook = [None]

# Forward-mode AD: None when no dual level is active (one global read per op), else the hook
# object of ember.autograd.forward_ad that computes output tangents.
forward_hook = [None]
