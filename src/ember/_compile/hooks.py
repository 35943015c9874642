"""The points outside the op registry that ember.compile's recorder must see.

Every op call reaches the recorder through the registry's op interceptor
(``_state.forward_hook``). What does not pass there, and would make a replay differ from an
eager run if it went unseen, calls one of these: data read into Python (a graph break),
random draws and other calls that must run again at every replay, version bumps made outside
an op, and tensors made from Python values (constants). Outside a recording each costs one
list read.
"""
from __future__ import annotations

import functools

from .._state import recording


def read_data(what):
    """A tensor's values are read into Python (``.item()``, ``bool()``, printing...): what
    follows may depend on them, so a recording cannot stand for later calls."""
    rec = recording[0]
    if rec is not None:
        rec.graph_break(what)


def backward_pass(what):
    """A backward pass (``backward()``, ``autograd.grad``) starts: inside a recorded call that
    is a graph break (a replay runs the recorded kernels, not a pass over a graph, and the
    function's own backward could not be recorded once its graph is used)."""
    rec = recording[0]
    if rec is not None:
        rec.graph_break(f"it runs a backward pass inside ({what})")


def grad_accessed(what):
    """A tensor's ``.grad`` is read or set outside a backward pass (an optimizer's step or
    ``zero_grad()``, ``p.grad = None``): what a function does then depends on, or changes,
    state a replay neither guards nor repeats (a step that found no gradient on its first call
    would be recorded as doing nothing), so it is a graph break."""
    rec = recording[0]
    if rec is not None:
        rec.graph_break(f"it reads or sets a tensor's .grad ({what})")


def tensor_state_set(what):
    """A tensor's ``requires_grad`` or ``.data`` is changed outside an op: a replay runs the
    recorded kernels only and would not change it again (nor see that it changed)."""
    rec = recording[0]
    if rec is not None:
        rec.graph_break(f"it changes a tensor's {what}")


def random_draw(what):
    """A generator is drawn from: fine inside a ``replayed`` call, a graph break elsewhere
    (a replay would not draw again)."""
    rec = recording[0]
    if rec is not None:
        rec.random_draw(what)


def version_bumped(tensor):
    """A tensor was modified in place: the recorder checks that it was by a recorded op."""
    rec = recording[0]
    if rec is not None:
        rec.version_bumped(tensor)


def constant(value):
    """``value`` (a tensor or an array) holds data made from Python values and shapes only
    (``ember.zeros(3)``, ``ember.tensor([1., 2.])``): a recording may keep it as a constant.
    Returns ``value``."""
    rec = recording[0]
    if rec is not None:
        rec.constant(value)
    return value


def replayed(fn):
    """Decorate a function that makes or fills tensors outside the op registry (random
    sampling): while recording, a call is recorded whole and runs again at every replay, so
    each replay draws fresh numbers from the generator, in the order eager mode would."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        rec = recording[0]
        if rec is None:
            return fn(*args, **kwargs)
        return rec.replayed_call(fn, args, kwargs)
    return call
