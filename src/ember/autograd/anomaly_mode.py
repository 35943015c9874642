"""Autograd anomaly mode: find the forward op behind a failing backward.

In anomaly mode every node the forward pass creates keeps the Python stack of its creation
(``node._trace``, recorded by the op registry and by custom Functions). When a node then fails
in backward, the engine's ``run_with_anomaly`` warns with that stack, as torch does::

    UserWarning: Error detected in MulBackward0. Traceback of forward call that caused the
    error:
      File "train.py", line 12, in <module>
        loss = (x * y).sum()

and re-raises. With ``check_nan`` it also raises when a node returns NaN gradients:
``RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.``
"""
from __future__ import annotations

import os
import re
import sys
import warnings

from .._state import count_record_extras, state

__all__ = [
    "detect_anomaly",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "run_with_anomaly",
    "set_anomaly_enabled",
    "set_detect_anomaly",
]

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_FRAME_FILE = re.compile(r'\s*File "([^"]*)"')
_NO_TRACE = ("No forward pass information available. Enable detect anomaly during forward "
             "pass for more information.")


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on in this thread."""
    return state.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks backward outputs for NaN in this thread."""
    return state.anomaly_check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off in this thread (``torch.set_anomaly_enabled``)."""
    enabled = bool(enabled)
    if enabled != state.anomaly:
        count_record_extras(1 if enabled else -1)
    state.anomaly = enabled
    state.anomaly_check_nan = bool(check_nan)


class detect_anomaly:
    """Context manager that enables anomaly detection for the autograd engine.

    Forward ops run inside it remember where they were called, so a backward error names
    the forward line that built the failing node; with ``check_nan=True`` (default) a NaN
    gradient raises. Only for debugging: it slows everything down.
    """

    def __init__(self, check_nan=True) -> None:
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Set anomaly detection on or off: as a function call, or as a context manager that
    restores the previous setting on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


# -- called by the engine ----------------------------------------------------------------------
def run_with_anomaly(fn, grads, graph, needed):
    """Run node ``fn`` in anomaly mode: on failure warn with its forward stack and re-raise."""
    seq0 = _peek_sequence() if graph else None
    try:
        outs = fn._apply(grads, graph, needed)
        if state.anomaly_check_nan:
            _check_nan(fn, outs)
    except Exception:
        _warn_forward_trace(fn)
        raise
    if seq0 is not None:
        _adopt_new_nodes(fn, outs, seq0)
    return outs


def _check_nan(fn, outs):
    for i, g in enumerate(outs or ()):
        if g is None:
            continue
        data = getattr(g, "_data", g)
        kind = getattr(getattr(data, "dtype", None), "kind", "")
        if kind in "fc" and kind and _has_nan(data):
            raise RuntimeError(f"Function '{fn.name()}' returned nan values in its {i}th output.")


def _has_nan(data):
    # ``x != x`` is NaN's signature and works for NumPy and CuPy arrays alike.
    return bool((data != data).any())  # noqa: PLR0124


def _warn_forward_trace(fn):
    """torch's warning: the forward traceback of ``fn``, then of the nodes that made it."""
    _warn(f"Error detected in {fn.name()}. " + _trace_text(fn,
          "Traceback of forward call that caused the error:\n"))
    parent = getattr(fn, "_anomaly_parent", None)
    while parent is not None:
        _warn(f"\n\nPrevious calculation was induced by {parent.name()}. " + _trace_text(
            parent, "Traceback of forward call that induced the previous calculation:\n"))
        parent = getattr(parent, "_anomaly_parent", None)


def _trace_text(node, heading):
    trace = getattr(node, "_trace", None)
    if not trace:
        return _NO_TRACE
    return heading + "".join(_user_frames(trace))


def _user_frames(trace):
    """The stack entries outside ember (torch's C++ frames never show either)."""
    kept = []
    for entry in trace:
        m = _FRAME_FILE.match(entry)
        if m is None or not m.group(1).startswith(_EMBER_DIR):
            kept.append(entry)
    return kept or list(trace)


def _warn(message):
    warnings.warn(message, UserWarning, stacklevel=_user_stacklevel())


def _user_stacklevel():
    """The stacklevel that attributes the warning to the first frame outside ember."""
    level, frame = 2, sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_EMBER_DIR):
        level += 1
        frame = frame.f_back
    return level


# -- double backward: remember which node's backward created a node ------------------------------
def _peek_sequence():
    from .._ops import registry
    return int(repr(registry._sequence)[6:-1])  # itertools.count's repr is "count(N)"


def _adopt_new_nodes(fn, outs, seq0):
    """Mark nodes created while ``fn`` ran (create_graph) as induced by ``fn``.

    A later failure in one of them then also shows ``fn``'s forward traceback, as torch's
    "Previous calculation was induced by ..." warning does.
    """
    seen = set()
    stack = [getattr(o, "grad_fn", None) for o in outs or () if o is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or getattr(node, "_seq", -1) < seq0:
            continue
        if getattr(node, "_seq", -1) >= 1 << 40:  # AccumulateGrad, custom Function nodes
            continue
        seen.add(id(node))
        if getattr(node, "_anomaly_parent", None) is None:
            node._anomaly_parent = fn
        stack.extend(n for n, _ in node.next_functions)
