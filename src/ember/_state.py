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
    # __torch_function__: 0 on, 1 for modes only (DisableTorchFunctionSubclass), 2 off
    # (DisableTorchFunction); the stack of TorchFunctionMode objects, innermost last
    torch_function_off = 0
    function_modes = ()


state = _ThreadState()

# How many threads have anomaly mode on plus how many saved tensor hook contexts are open,
# all threads together: while it is 0, a recorded op reads neither of those per-thread values
# (each read of the thread's state costs as much as several plain attributes). A thread that
# ends with either still on leaves it above 0, which only sends ops to the reads.
record_extras = [0]
_record_extras_lock = threading.Lock()


def count_record_extras(change):
    """Add ``change`` (+1 or -1) to ``record_extras``: anomaly mode turned on or off in a
    thread, a saved tensor hook context entered or left."""
    with _record_extras_lock:
        record_extras[0] += change

# The profiler hook: None when no profiler runs (one global read per op), else a callable
# ``hook(name, inputs) -> context manager``.
profiler_hook = [None]

# The op interceptor: None in plain eager mode (one global read per op), else an object whose
# ``dispatch(op, args)`` / ``dispatch_inplace(op, args)`` every Tensor op call goes through:
# forward-mode AD's tangent hook (ember.autograd.forward_ad) while a dual level is active, or
# ember.compile's recorder while a compiled function is being recorded.
forward_hook = [None]

# ember.compile's recorder while a compiled function is being recorded, else None: the points
# outside the op registry that it must see (data read into Python, random draws, version
# bumps, tensors made from Python values) read it once (see ember/_compile/hooks.py).
recording = [None]

# vmap: None when no vmap level is active, else the hook object of ember.func._batching that
# the registry hands every op call with a BatchedTensor argument (one global read per op call
# on the registry's slow path only: while vmap is active the fast paths are off).
vmap_hook = [None]

# set while a torch.func transform runs its function: refuses writes to captured tensors
# (ember/_ops/inplace.py reads it)
captured_write_check = [None]

# How many TorchFunctionMode contexts are open, all threads together, or None when none is:
# while one is, the generated operators take the op registry's general path, where the mode
# sees each call (ember.overrides).
function_mode = [None]

# Whether any of forward_hook, profiler_hook, recording, captured_write_check and
# function_mode is set: the hot paths (the generated operators, a compiled function's call)
# test this one flag, and each of those hooks only when it is on. set_hook keeps it: the only way those hooks are
# set (tests/test_state_hooks.py checks that no other code assigns them).
intercepted = [False]


def set_hook(hook, value):
    """``hook[0] = value`` for one of the hooks ``intercepted`` watches, keeping it.

    NOTE: no lock (forward-mode AD sets its hook twice per op): the flag is computed from
    all the hooks after the write, and CPython switches threads at no instruction between
    that computation and its store (no call, no backward jump), so the last store made
    follows every write before it."""
    hook[0] = value
    intercepted[0] = not (forward_hook[0] is None and profiler_hook[0] is None
                          and recording[0] is None and captured_write_check[0] is None
                          and function_mode[0] is None)
