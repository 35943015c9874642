"""Replay forms: how a compiled program may call a kernel or a gradient formula for good.

A kernel's first steps often only pick a path from its arguments' array types, dtypes and
shapes (a NumPy matrix of short rows, class indices without weights...). In a compiled
function's program those are the same at every replay: the guards fix the inputs' types,
shapes, dtypes and strides, each recorded kernel is called again on arrays made the same way,
and a backward program checks the array type and dtype of the output gradients it is handed
(the engine their shapes). So the program may call, once for all, what the path leads to.

``replay_form(fn)`` declares such a form of ``fn`` (a kernel, an op's kernel or a formula's
callee): ``form(*values)`` gets the recorded call's arguments (arrays, and the arrays of
tensor arguments) and returns ``(callee, positions)``: the program calls
``callee(*[arguments[k] for k in positions])`` (tensor arguments as their arrays) in place of
``fn(*arguments)`` (and takes its result as it is: a callee returns arrays, a 0-d result
as an array); ``(PASS, (k,))``: the result is argument ``k`` itself (no call: a
gradient formula that hands its gradient on). It returns None where the path may change from call to call. A callee
computes what ``fn`` computes on such arguments, the same operations in the same order (the
results are bit for bit eager's), and checks at each call what may change: the values (a
target's range), and the layout of an array that may derive from an output gradient (a
backward program's gradients are the caller's, of any strides).
"""
from __future__ import annotations

PASS = object()  # see above: the result is the argument named


def replay_form(fn):
    """Declare the decorated function as ``fn``'s replay form (``fn``: a function, or an op,
    whose kernel as a program calls it gets the form)."""
    target = getattr(fn, "bare_kernel", fn)

    def declare(form):
        target.replay_form = form
        return form
    return declare
