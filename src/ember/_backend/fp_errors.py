"""NumPy's floating-point errors silenced where ember computes, the user's settings untouched.

torch computes ``inf - inf``, ``0 * inf`` or a sum overflowing to inf without a word; NumPy
warns. NumPy 2 keeps its error state (what ``np.errstate`` and ``np.seterr`` set) in a context
variable; ember never changes a state the user made, it points that variable at a silenced
state of its own ("ignore" throughout) for as long as its code runs, in one of two ways:

- ``quietly(kernel, *args)``: one kernel call, run in this thread's quiet context, a
  ``contextvars.Context`` of ember's own whose error state is the silenced one. Entering it
  costs some 20 ns (``np.errstate`` builds a new state on every entry, about a microsecond,
  as much as a small ``add``). There an "invalid" error notes that the kernel made a NaN
  (``made_nan``) instead of warning. A kernel called by a kernel already running there (an op
  built on other ops) runs directly.
- ``silence()`` ... ``restore(token)``: a stretch of calls (a backward pass) in the caller's
  own context: users' hooks run in it and must see their own context variables. Its silenced
  state is built from the caller's (the buffer size kept) and rebuilt only when the caller's
  changes. ``silence_noting()`` is the same with "invalid" noted as in the quiet context: a
  stretch of kernels that would each run quietly (a compiled function's replay calls them
  bare, one after another, with no wrapper each).

CuPy reports no floating-point errors from its kernels: NumPy's state is the only one.
"""
from __future__ import annotations

import contextvars
import threading

import numpy

try:  # NumPy 2: the context variable np.errstate sets, and its state builder
    from numpy._core._ufunc_config import _extobj_contextvar as _STATE
    from numpy._core.umath import _make_extobj
except ImportError:  # pragma: no cover - another NumPy layout
    _STATE = None

_INSIDE = contextvars.ContextVar("ember_quiet", default=False)
inside = _INSIDE.get  # True while a kernel runs in this thread's quiet context


def _note_invalid(kind, flag):
    quiet_context.made_nan = True


def _enter_quiet_context():
    # (run once, inside the new context: what it sets stays there)
    if _STATE is not None:
        _STATE.set(_make_extobj(all="ignore", invalid="call", call=_note_invalid))
    else:  # pragma: no cover - another NumPy layout (NumPy 2's seterr is context-local)
        numpy.seterr(all="ignore", invalid="call")
        numpy.seterrcall(_note_invalid)
    _INSIDE.set(True)


class _QuietContext(threading.local):
    made_nan = False  # see made_nan()

    def __init__(self):
        # NOTE: an empty context, not a copy of the caller's: kernels read no context
        # variable but NumPy's error state.
        ctx = contextvars.Context()
        ctx.run(_enter_quiet_context)
        self.run = ctx.run


quiet_context = _QuietContext()  # this thread's: quiet_context.run(kernel, *args)


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


def quiet_lines(result, fn, args):
    """Lines of generated code running ``fn(args)`` as quietly() does, written out (hot paths
    save the call): ``result`` is what the value is assigned to ("out = ", or "" for none); the
    code's scope needs ``quiet_context`` and ``inside``."""
    return ["try:", f"    {result}quiet_context.run({fn}, {args})", "except RuntimeError:",
            "    if not inside():", "        raise  # (the kernel's own error)",
            f"    {result}{fn}({args})"]


def made_nan(ufunc, x):
    """``(ufunc(x), whether it made a NaN of a number)``: the floating point "invalid" flag,
    which NumPy reports after the call (in a quiet kernel; elsewhere False). A kernel that
    must fix the NaNs it makes (their sign) pays for it only when there are some."""
    quiet_context.made_nan = False
    out = ufunc(x)
    return out, quiet_context.made_nan


def _state_silencer(**errors):
    """A silence(): points NumPy's error state at one with ``errors`` built from the caller's
    state (the buffer size kept), rebuilt only when the caller's changes."""
    # (the state it was last built from, the silenced state): one tuple, so that threads
    # replacing it never pair a state with another's silenced one
    built = [(None, None)]

    def silence():
        current = _STATE.get()
        pair = built[0]
        if pair[0] is not current:
            pair = built[0] = (current, _make_extobj(**errors))
        return _STATE.set(pair[1])
    silence.built = built  # (read by silence_noting_lines's code)
    return silence


def _errstate_silencer(**errors):  # pragma: no cover - another NumPy layout
    def silence():
        quiet = numpy.errstate(**errors)
        quiet.__enter__()
        return quiet
    return silence


def _restore_errstate(quiet):  # pragma: no cover - another NumPy layout
    quiet.__exit__(None, None, None)


if _STATE is not None:
    silence = _state_silencer(all="ignore")  # -> a token for restore()
    silence_noting = _state_silencer(all="ignore", invalid="call", call=_note_invalid)
    restore = _STATE.reset
else:  # pragma: no cover - another NumPy layout
    silence = _errstate_silencer(all="ignore")
    silence_noting = _errstate_silencer(all="ignore", invalid="call", call=_note_invalid)
    restore = _restore_errstate


def silence_noting_lines(token):
    """Generated lines assigning ``token`` what ``silence_noting()`` gives, its usual case
    written out (the caller's error state the one its silenced state was built from: NumPy's
    two calls and no frame of its own); their scope needs ``NOTING_SCOPE``."""
    if _STATE is None:  # pragma: no cover - another NumPy layout
        return [f"{token} = silence_noting()"]
    return ["_silenced = noting_built[0]",
            f"{token} = (state_set(_silenced[1]) if state_get() is _silenced[0]"
            " else silence_noting())"]


NOTING_SCOPE = {"silence_noting": silence_noting, "restore": restore}
if _STATE is not None:
    NOTING_SCOPE.update(noting_built=silence_noting.built, state_get=_STATE.get,
                        state_set=_STATE.set)
