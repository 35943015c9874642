"""NumPy's floating-point error handling, silenced for a stretch of kernel calls.

torch gives inf and nan without a word where NumPy warns, so ember silences NumPy's
floating-point errors for a whole backward pass and for each call of a kernel that may warn.
``np.errstate`` builds a new error state on every entry (about a microsecond, more than a small
kernel); ``silence()`` sets NumPy's error-state context variable (what ``np.errstate`` sets) to
a state built once from the current one, and ``restore(token)`` puts the previous one back.
With a NumPy whose internals differ, both fall back to ``np.errstate``.
"""
from __future__ import annotations

import numpy

try:  # NumPy 2: the context variable np.errstate sets, and its state builder
    from numpy._core._ufunc_config import _extobj_contextvar as _STATE
    from numpy._core.umath import _make_extobj
except ImportError:  # pragma: no cover - another NumPy layout
    _STATE = None

# (the state silenced states were last built from, the silenced state built from it): one
# tuple, so that threads replacing it never pair a state with another's silenced one
_silenced = (None, None)


def _silence_state():
    global _silenced
    current = _STATE.get()
    built = _silenced
    if built[0] is not current:
        # (built from the current state: its buffer size and error callback are kept)
        built = _silenced = (current, _make_extobj(all="ignore"))
    return _STATE.set(built[1])


def _silence_errstate():
    quiet = numpy.errstate(all="ignore")
    quiet.__enter__()
    return quiet


def _restore_errstate(quiet):
    quiet.__exit__(None, None, None)


if _STATE is not None:
    silence = _silence_state
    restore = _STATE.reset
else:  # pragma: no cover - another NumPy layout
    silence = _silence_errstate
    restore = _restore_errstate
