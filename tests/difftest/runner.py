"""Run a program against one library and record what a user could observe, as plain data.

The record is a list of events: each step's outcome (an exception's type and message, with
``torch.`` read as ``ember.``), the warnings it raised, snapshots of what it defined (or of
every live variable after a backward), the calls of hooks (``_rec``) in the order they came,
and a final snapshot of every variable. :func:`compare` walks two records and returns the
first difference.
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass

import numpy as np

from .program import ALL_LIVE, Program

_TORCH_DOT = re.compile(r"\btorch\.(?=[A-Za-z_])")
# Values are equal within these (rtol, atol): programs chain ops whose float summation order
# may differ from torch's.
TOLERANCES = {"float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2), "float32": (1e-4, 1e-5),
              "float64": (1e-7, 1e-10), "complex64": (1e-4, 1e-5),
              "complex128": (1e-7, 1e-10)}
NUMBER_TOL = (1e-4, 1e-6)  # Python floats (from .item(), ...) may come from float32 values
# An op's result may cancel to far below its inputs (x - y with x close to y, a normalised
# gradient): its rounding is then that of the inputs, not its own. So each value also passes
# within the loosest rtol among the float inputs a step reads, times their largest magnitude.
# A variable keeps that scale (its values keep their rounding) when a later step observes it
# without defining it anew (detach_, an in-place op, a backward); a step reading a variable
# compares at least at the rtol that variable was compared with (float32's for a float64
# result of float32 inputs), and a step reading a variable no larger than NOISE times the
# absolute tolerance it was compared with (rounding noise of a cancellation, e.g. layer_norm
# of a constant row) inherits that tolerance.
NO_SCALE = (0.0, 0.0)
NOISE = 10.0
_CODE_CACHE: dict[str, object] = {}
# torch gives these warnings once per process (TORCH_WARN_ONCE): a long run cannot compare
# them program by program, so neither side's is recorded (tests of their own check them).
WARN_ONCE = ("The use of `x.T` on tensors of dimension other than 2",
             "Tensor.T is deprecated on 0-D tensors", "Tensor.mT is deprecated on 0-D tensors",
             "Tensor.mH is deprecated on 0-D tensors", "adjoint() is deprecated on 0-D tensors",
             "Using backward() with create_graph=True will create a reference cycle",
             "The reduce argument of torch.scatter with Tensor src is deprecated",
             "The reduce argument of ember.scatter with Tensor src is deprecated",
             "index_reduce() is in beta", "Using padding='same' with even kernel lengths")
# ember.compile's warnings (a graph break: the function runs eagerly from now on; the recompile
# limit): torch's side runs eagerly and has none; what is compared is that values do not change
COMPILE_WARNINGS = ("ember.compile: ",)


def normalise(text: str, lib) -> str:
    return _TORCH_DOT.sub("ember.", text) if lib.__name__ == "torch" else text


def _attempt(fn, lib):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - what it raises is the observation
        return ("raises", type(e).__name__, normalise(str(e), lib))


INTERMEDIATE_VIEW = "a view of an intermediate"
# a view the program took of a compiled function's result: its base is torch's intermediate
# where ember's is the result itself (INTERMEDIATE_VIEW), so after a write into the result the
# node it leads to is the base's CopySlices in torch, the write's node in ember (55000220)
VIEW_OF_COMPILED = "view of a compiled result"


def snapshot(x, lib, depth=0, gradient=False, known=None, of_compiled=False):
    """What a user sees of ``x``: for a tensor its dtype, shape, values, autograd flags,
    grad_fn and next_functions names, version, and (for leaves and retained tensors) its
    ``.grad``. Containers are walked; other values are kept as they are.

    ``gradient=True``: ``x`` was made by the backward engine (a ``.grad``, what autograd.grad
    returns or a hook receives). Whether such a tensor is a view, and its version, follow
    from torch's buffer management (a gradient nobody else holds is taken over, else copied;
    two gradients for one input are summed in place when the buffer is free), not from
    autograd's rules, so these two are not compared; everything else is.

    ``known``: ``x`` was returned by a compiled function, and these are the ids of the
    program's tensors. torch's eager result may be a view of one of the function's
    intermediates, which torch.compile itself returns as a tensor of its own (where it
    requires grad; AOTAutograd's outputs), as ember.compile does: such a view's view-ness and
    version (its base's) are not compared.

    ``of_compiled``: ``x`` is a view the program took of a compiled function's result (see
    ``_observe``)."""
    if isinstance(x, lib.Tensor):
        return _tensor_snapshot(x, lib, depth, gradient, known, of_compiled)
    if isinstance(x, (tuple, list)):
        return tuple(snapshot(v, lib, depth, gradient, known, of_compiled) for v in x)
    if isinstance(x, lib.Size):
        return ("Size", tuple(x))
    if isinstance(x, lib.dtype):
        return normalise(repr(x), lib)
    if isinstance(x, str):
        return normalise(x, lib)
    if isinstance(x, lib.autograd.graph.Node):
        return ("Node", x.name())
    if callable(x) and not isinstance(x, (lib.nn.Module, type)):
        # a function, or its compiled form (ember's CompiledFunction; torch's side is eager)
        return ("function",)
    if x is None or isinstance(x, (bool, int, float, complex)):
        return x
    return ("object", type(x).__name__)


def _node_name(fn):
    return None if fn is None else fn.name()


def _tensor_snapshot(t, lib, depth, gradient, known=None, of_compiled=False):
    # NOTE: torch refuses to regenerate the history of some views (a view made in no_grad
    # mode whose base was modified in place): reading grad_fn, is_leaf... raises, and the
    # exception is what is compared.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = _attempt(lambda: t.grad_fn, lib)
        snap = {
            "dtype": normalise(str(t.dtype), lib),
            "shape": tuple(t.shape),
            "values": _values(t, lib),
            "requires_grad": _attempt(lambda: t.requires_grad, lib),
            "is_leaf": _attempt(lambda: t.is_leaf, lib),
            "grad_fn": fn if isinstance(fn, tuple) else _node_name(fn),
            "next_functions": None if fn is None or isinstance(fn, tuple) else tuple(
                (_node_name(f), nr) for f, nr in fn.next_functions),
            "is_view": t._base is not None,
            "_version": _attempt(lambda: t._version, lib),
            "retains_grad": _attempt(lambda: t.retains_grad, lib),
            "is_inference": t.is_inference(),
        }
        if gradient:
            del snap["is_view"], snap["_version"]
        elif known is not None and t._base is not None and id(t._base) not in known:
            snap["is_view"] = INTERMEDIATE_VIEW
        if of_compiled:
            snap[VIEW_OF_COMPILED] = True
        if depth == 0:
            grad = _attempt(lambda: t.grad, lib)
            snap["grad"] = grad if isinstance(grad, tuple) and grad[:1] == ("raises",) else (
                snapshot(grad, lib, depth + 1, gradient=True))
    return snap


def _values(t, lib):
    name = str(t.dtype).split(".")[-1]
    with lib.no_grad():
        d = t.detach()
        if getattr(d, "_is_zerotensor", bool)():
            # NOTE: torch's gradient of sgn of a real tensor is a ZeroTensor, whose storage is
            # never allocated: tolist() refuses it, while printing it (what a user sees) and
            # clone() give its zeros.
            d = d.clone()
        if name == "bfloat16":
            d, name = d.float(), "float32"
        values = d.tolist()
    return np.array(values, dtype=name).reshape(tuple(t.shape))


def namespace(lib, events):
    """The globals a program runs in: ``torch`` (the library), ``F`` and the hook recorder."""
    def _rec(key, *values):
        events.append(("hook", key, snapshot(values, lib, gradient=True)))
    return {"torch": lib, "F": lib.nn.functional, "_rec": _rec, "math": math,
            "_compile": compiler(lib)}


def compiler(lib):
    """What a program's ``_compile(f)`` is: ember's ``torch.compile``, and on torch's side the
    function itself. torch.compile's contract is eager's values, gradients, errors and side
    effects; its own tracing (dynamo) wraps an error raised while tracing in a
    ``TorchRuntimeError`` of other text, so eager mode is the reference."""
    return lib.compile if lib.__name__ != "torch" else (lambda f: f)


def _compiled(code):
    c = _CODE_CACHE.get(code)
    if c is None:
        if len(_CODE_CACHE) > 50_000:
            _CODE_CACHE.clear()
        c = _CODE_CACHE[code] = compile(code, "<program>", "exec")
    return c


def run_step(code, ns, lib):
    """Execute one step; returns (error or None, warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exec(_compiled(code), ns)  # noqa: S102 - the generated program is the test
            error = None
        except Exception as e:  # noqa: BLE001 - what it raises is the observation
            error = (type(e).__name__, normalise(str(e), lib))
    warns = tuple((w.category.__name__, normalise(str(w.message), lib)) for w in caught
                  if not issubclass(w.category, ResourceWarning)
                  and not str(w.message).startswith(WARN_ONCE + COMPILE_WARNINGS))
    return error, warns


def execute(program: Program, lib) -> list:
    """Run ``program`` with ``lib`` as ``torch``; the record of what it did."""
    events: list = []
    ns = namespace(lib, events)
    dead: set = set()
    defined: list = []
    gradients: set = set()  # names bound to gradients (see snapshot)
    compiled: set = set()  # names bound to what compiled functions returned (see snapshot)
    for i, step in enumerate(program.steps):
        if dead.intersection(step.uses):  # an earlier step failed (in both, or we stop there)
            dead.update(step.defines)
            continue
        events.append(("step", i))
        events.append(("scale", *input_scale(step.uses, ns, lib), step.defines))
        error, warns = run_step(step.code, ns, lib)
        events.append(("outcome", error))
        if warns:
            events.append(("warnings", warns))
        if error is not None:
            dead.update(step.defines)
            continue
        defined.extend(n for n in step.defines if n not in defined)
        if step.gradients:
            gradients.update(step.defines)
        if step.compiled:
            compiled.update(step.defines)
        for name in _observed(step, defined, ns):
            events.append(("obs", name, _observe(ns, name, lib, gradients, compiled)))
    events.append(("step", "end"))
    for name in defined:
        if name in ns and name not in dead:
            events.append(("obs", name, _observe(ns, name, lib, gradients, compiled)))
    return events


def _observe(ns, name, lib, gradients, compiled):
    known = None
    if name in compiled:  # (a view's base is its root base: a view among them gives its own,
        # but not a compiled function's result, whose base may be the intermediate; nor a view
        # defined after it, which may be a view of that result, of the same root base)
        known = {id(v) for v in ns.values()}
        for n, v in ns.items():  # (in the order the program bound them)
            if n == name:
                break
            if n not in compiled and isinstance(v, lib.Tensor) and v._base is not None:
                known.add(id(v._base))
    return snapshot(ns[name], lib, gradient=name in gradients, known=known,
                    of_compiled=_views_a_compiled_result(ns, name, lib, compiled))


def _views_a_compiled_result(ns, name, lib, compiled):
    t = ns[name]
    if name in compiled or not isinstance(t, lib.Tensor) or t._base is None:
        return False
    results = [ns[n] for n in compiled if isinstance(ns.get(n), lib.Tensor)]
    return any(t._base is r or (r._base is not None and t._base is r._base) for r in results)


def input_scale(names, ns, lib):
    """``(rtol, magnitude)`` of the float tensors among ``names``: the loosest rtol of their
    dtypes, and their largest finite absolute value; and that magnitude for each of them."""
    rtol = magnitude = 0.0
    each = {}
    for name in names:
        t = ns.get(name)
        if not isinstance(t, lib.Tensor) or not (t.is_floating_point() or t.is_complex()):
            continue
        try:
            values = np.abs(_values(t, lib))
        except Exception:  # noqa: BLE001 - e.g. a tensor whose storage was freed
            continue
        finite = values[np.isfinite(values)]
        rtol = max(rtol, TOLERANCES.get(str(t.dtype).split(".")[-1], (1e-7, 0))[0])
        each[name] = float(finite.max()) if finite.size else 0.0
        magnitude = max(magnitude, each[name])
    return (rtol, magnitude), each


def _observed(step, defined, ns):
    for name in step.observed():
        if name == ALL_LIVE:
            yield from (n for n in defined if n in ns)
        elif name in ns:
            yield name


# -- comparing two records --------------------------------------------------------------------
@dataclass
class Mismatch:
    """The first difference between ember's record and torch's."""

    step: object  # the step's index, or "end" for the final snapshot
    what: str  # "error", "warnings", "values", "grad_fn", "hook calls", ...
    where: str  # the variable and field ("t3.grad.values") or the hook's key
    ember: object
    torch: object

    def describe(self, program: Program) -> str:
        if self.step == "end":
            at = "in the final state"
        else:
            at = f"at step {self.step} ({program.steps[self.step].code.splitlines()[0]})"
        return (f"{self.what} differs {at}, {self.where}:\n"
                f"  ember: {_short(self.ember)}\n  torch: {_short(self.torch)}")

    def tag(self, program: Program) -> str:
        return "end" if self.step == "end" else program.steps[self.step].tag


def _short(x, limit=600):
    text = repr(x)
    return text if len(text) <= limit else text[:limit] + "..."


def compare(ember_events, torch_events) -> Mismatch | None:
    step = None
    scale, fresh = NO_SCALE, ()
    seen_at: dict = {}  # a variable's scale where it was last observed (the final state's)
    for e, t in zip(ember_events, torch_events):
        if t[0] == "step":
            step = t[1]
            scale = NO_SCALE
        if t[0] == "scale" and e[0] == "scale":
            scale, fresh = _step_scale(t[1], t[2], seen_at), t[3]  # torch's inputs: the reference
            continue
        here = scale
        if t[0] == "obs":
            if step == "end":
                here = seen_at.get(t[1], NO_SCALE)
            else:
                if t[1] not in fresh:
                    here = _looser(scale, seen_at.get(t[1], NO_SCALE))
                seen_at[t[1]] = here
        m = _compare_event(step, e, t, here)
        if m is not None:
            return m
    if len(ember_events) != len(torch_events):
        longer = "ember" if len(ember_events) > len(torch_events) else "torch"
        extra = (ember_events if longer == "ember" else torch_events)[
            min(len(ember_events), len(torch_events))]
        return Mismatch(step, "events", "record length", extra if longer == "ember" else None,
                        extra if longer == "torch" else None)
    return None


def _looser(a, b):
    """The scale of the two that allows the larger absolute difference."""
    return b if b[0] * b[1] > a[0] * a[1] else a


def _step_scale(scale, magnitudes, seen_at):
    """A step's scale: its inputs', each input's values at the rtol they were compared with
    (a float64 result of float32 inputs keeps float32's), or the tolerance a noise-sized
    input was compared with."""
    for name, magnitude in magnitudes.items():
        kept = seen_at.get(name, NO_SCALE)
        scale = _looser(scale, (kept[0], magnitude))
        if magnitude <= NOISE * kept[0] * kept[1]:
            scale = _looser(scale, kept)
    return scale


def _compare_event(step, e, t, scale=NO_SCALE):
    if e[0] != t[0] or (e[0] in ("hook", "obs", "step") and e[1] != t[1]):
        what = "hook calls" if "hook" in (e[0], t[0]) else (
            "warnings" if "warnings" in (e[0], t[0]) else "events")
        return Mismatch(step, what, "order", e, t)
    kind = t[0]
    if kind == "outcome":
        if e[1] != t[1]:
            what = ("error" if e[1] and t[1] else
                    "ember raises" if e[1] else "torch raises")
            return Mismatch(step, what, "exception", e[1], t[1])
    elif kind == "warnings":
        if e[1] != t[1]:
            return Mismatch(step, "warnings", "warnings", e[1], t[1])
    elif kind in ("obs", "hook"):
        diff = diff_values(e[2], t[2], t[1] if kind == "obs" else f"hook {t[1]}", scale)
        if diff is not None:
            what = diff[0] if kind == "obs" else f"hook {diff[0]}"
            return Mismatch(step, what, diff[1], diff[2], diff[3])
    return None


def diff_values(e, t, path, scale=NO_SCALE):
    """None when ``e`` (ember's snapshot) matches ``t`` (torch's), else
    (field, path, ember's, torch's) of the first difference. ``scale``: the ``(rtol,
    magnitude)`` of the step's inputs (see ``input_scale``)."""
    if isinstance(t, dict) and isinstance(e, dict):
        for key in t:
            if key in ("grad_fn", "next_functions") and (_compiled_node(e, t)
                                                         or _written_view_node(e, t)):
                continue
            if key in ("is_view", "_version") and INTERMEDIATE_VIEW in (e.get("is_view"),
                                                                        t.get("is_view")):
                continue
            if key == VIEW_OF_COMPILED:  # (a mark, not an observation: see _observe)
                continue
            if key == "next_functions" and (_next_functions_match(e[key], t[key])
                                            or t.get(VIEW_OF_COMPILED)
                                            or e.get(VIEW_OF_COMPILED)):
                continue
            if key == "values":
                if not _arrays_close(e[key], t[key], t["dtype"], scale):
                    return ("values", f"{path}.values", e[key], t[key])
                continue
            d = diff_values(e.get(key), t[key], f"{path}.{key}", scale)
            if d is not None:
                return (key,) + d[1:] if d[0] == "value" else d
        return None
    if isinstance(t, tuple) and isinstance(e, tuple) and len(e) == len(t):
        for k, (a, b) in enumerate(zip(e, t)):
            d = diff_values(a, b, f"{path}[{k}]", scale)
            if d is not None:
                return d
        return None
    if isinstance(t, float) and isinstance(e, float):
        if _floats_close(e, t):
            return None
        return ("value", path, e, t)
    if type(e) is not type(t) or e != t:
        return ("value", path, e, t)
    return None


# the node of a compiled function's outputs: torch.compile's name, where torch's eager side
# has the op's own node (whatever else of the tensor, and of its gradient, is compared)
COMPILED_NODE = "CompiledFunctionBackward"


def _compiled_node(e, t):
    """Whether ember's tensor has a compiled function's node where torch's has a node too."""
    return e.get("grad_fn") == COMPILED_NODE and isinstance(t.get("grad_fn"), str)


def _written_view_node(e, t):
    """Whether torch's tensor is a compiled function's result that eager returns as a view of
    an intermediate (INTERMEDIATE_VIEW), written into since: torch's node is then the view's
    (regenerated: AsStridedBackward0 or the view op's), ember's result is a tensor of its own,
    whose node after the write is the in-place op's (CopySlices through a view of it); each
    follows from the view-ness, which is not compared."""
    return t.get("is_view") == INTERMEDIATE_VIEW and e.get("is_view") is False


def _next_functions_match(e, t):
    """Node names pairwise equal, a compiled function's node standing for any of torch's."""
    if not (isinstance(e, tuple) and isinstance(t, tuple)) or len(e) != len(t):
        return False
    return all(a == b or (a[0] == COMPILED_NODE and b[0] is not None and a[1] == b[1])
               for a, b in zip(e, t))


def _floats_close(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    rtol, atol = NUMBER_TOL
    return a == b or abs(a - b) <= atol + rtol * abs(b)


def _arrays_close(a, b, dtype, scale=NO_SCALE):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind not in "fc":
        return bool(np.array_equal(a, b))
    rtol, atol = TOLERANCES.get(dtype.split(".")[-1], (1e-7, 1e-10))
    atol += scale[0] * scale[1]
    a64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    b64 = b.astype(a64.dtype)
    with np.errstate(all="ignore"):
        return bool(np.allclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True)
                    and np.array_equal(np.isinf(a64), np.isinf(b64))
                    and np.array_equal(a64[np.isinf(a64)], b64[np.isinf(b64)]))
