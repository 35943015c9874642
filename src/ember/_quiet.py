"""Kernels run without NumPy's floating point warnings, at almost no cost per call.

torch computes ``inf - inf``, ``0 * inf`` or a sum overflowing to inf without a word; NumPy
warns. ``np.errstate`` silences it but costs about a microsecond per use, as much as a small
``add``. Since NumPy 2 the error state lives in a context variable, so a ``contextvars.Context``
of ember's own, in which it is "ignore", silences every kernel run inside it
(``Context.run`` costs some 20 ns) and leaves the user's NumPy settings alone.

A context can be entered by one thread at a time and not twice, so each thread has its own,
and a kernel called by a kernel already running inside it (an op built on other ops) runs
directly.
"""
from __future__ import annotations

import contextvars
import threading

import numpy as np

_INSIDE = contextvars.ContextVar("ember_quiet", default=False)
inside = _INSIDE.get  # True while a kernel runs in this thread's quiet context


def _note_invalid(kind, flag):
    quiet_context.made_nan = True


def _silence():
    # (in the new context only: seterr sets a context variable)
    np.seterr(all="ignore", invalid="call")
    np.seterrcall(_note_invalid)
    _INSIDE.set(True)


class _QuietContext(threading.local):
    made_nan = False  # see made_nan()

    def __init__(self):
        # NOTE: an empty context, not a copy of the caller's: kernels read no context
        # variable but NumPy's error state.
        ctx = contextvars.Context()
        ctx.run(_silence)
        self.run = ctx.run


quiet_context = _QuietContext()  # this thread's: quiet_context.run(kernel, *args)


def made_nan(ufunc, x):
    """``(ufunc(x), whether it made a NaN of a number)``: the floating point "invalid" flag,
    which NumPy reports after the call (in a quiet kernel; elsewhere False). A kernel that
    must fix the NaNs it makes (their sign) pays for it only when there are some."""
    quiet_context.made_nan = False
    out = ufunc(x)
    return out, quiet_context.made_nan


def quietly(kernel, *args):
    """``kernel(*args)`` without NumPy's floating point warnings."""
    # NOTE: no test for being inside on the usual path (it would cost more than the run):
    # entering the context again fails before the kernel runs, and only then is it asked.
    try:
        return quiet_context.run(kernel, *args)
    except RuntimeError:
        if not _INSIDE.get():
            raise  # (the kernel's own error)
    return kernel(*args)
