"""How an op is declared and dispatched: the one path every op call takes.

An op is a kernel on raw arrays plus, beside it, one derivative formula per differentiable
input::

    @op("mul", node="MulBackward0", method=True, inplace=True)
    def mul(self, other):
        return self * other

    @mul.grad("self")
    def _(grad, other):
        return grad * other

The formula's parameter names decide what a node saves: an input's name saves that input (with
its version, checked when unpacked), ``result`` saves the output, ``<input>_shape`` its shape,
``<input>_strides`` its strides (in bytes, as the array has them), any other name the forward
argument of that name. A joint formula (several inputs) may also read ``grad_input_mask``,
nothing saved: which of its inputs want a gradient in this pass (torch's
``grad_input_mask``), so that one fused call computes only those. Formulas use only Python operators and ember
op functions, and every op function accepts raw arrays: given no Tensor it runs the kernel
directly. So first-order backward runs formulas on arrays at NumPy speed, and with
``create_graph=True`` the engine hands the same formulas Tensors and they record a graph.

Broadcasting and dtype promotion are undone by the engine (it sums a gradient down to its
input's shape and casts it to its input's dtype), so formulas stay as short as the maths.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import traceback

import numpy as np

from .._numpy_keywords import NUMPY_KEYWORDS  # (x.sum(axis=1): a keyword not the op's own)
from .. import _dtype as D
from . import opmath
from .._backend import as_array, get_xp, is_array
from .._backend.fp_errors import inside, quiet_context, quiet_lines, quietly
from .._backend.layout import iterator_layout
from .._state import (forward_hook, function_mode, intercepted, profiler_hook, record_extras,
                      state, vmap_hook)
from .._sparse.coo import CooArray
from .._tensor import Tensor, _wrap, typename
from ..autograd._grad_versions import writing
from ..autograd.graph import (ERR_FREED, ERR_INFERENCE_SAVE, NO_EDGE, Node,
                              check_param, grad_accumulator, inference_save_allowed,
                              param_version, refuse_inference_save, unpack_data_output,
                              unpack_input, unpack_output)
from ..autograd.saved_tensors import (_Packed, check_register, pack_saved, raw_saved_property,
                                      unpack_saved)
from .saved_names import SCALAR_INPUTS, metadata_names, shown_names

# What a saved slot holds.
INPUT, RESULT, SHAPE, PARAM, SHAPES, STRIDES = range(6)
_KIND_NAMES = ("input", "result", "shape", "param", "shapes", "strides")  # (saved_names.py)
# How an op decides the dtype its kernel computes in.
SAME, FLOAT, NONE = "same", "float", "none"

# A joint formula's parameter that is no saved value: which of its inputs want a gradient.
MASK_NAME = "grad_input_mask"
_MISSING = object()
_sequence = itertools.count()


def peek_sequence() -> int:
    """The sequence number the next node will get (the profiler links ops to nodes by it)."""
    # NOTE: itertools.count has no peek; its repr is "count(N)" with N the next value.
    return int(repr(_sequence)[6:-1])
_ndarray = np.ndarray
_SPECIAL = D.SPECIAL_NP
# the file name of the code generated per op: warnings skip its frames to name the user's line
GENERATED = "<ember generated>"
_FLOATS = D.NATIVE_FLOAT_NP | frozenset(np.dtype(n) for n in ("complex64", "complex128"))
_FLOATING = D.NATIVE_FLOAT_NP | D.REDUCED_NP  # (a result of these dtypes takes a grad_fn)
_HALF, _SINGLE = np.dtype(np.float16), np.dtype(np.float32)
REGISTRY: dict[str, "OpDef"] = {}


# The private names torch's C++ nodes show in dir() (ember's nodes have some of them).
_TORCH_NODE_PRIVATE = frozenset({"_input_metadata", "_register_hook_dict", "_sequence_nr",
                                 "_set_sequence_nr"})


class OpNode(Node):
    """A built-in op's backward node; subclasses are made per op with torch's node name."""

    _op = None
    _saved = ()
    _vers = ()
    _meta = ()
    _out_meta = None
    _kept = None  # the non-tensor saved values, once the tensors were freed
    _hooked = False  # some saved slot holds a packed value (saved tensor hooks)
    # forward AD over this node's backward: its saved values' tangents (see forward_ad); a
    # default here, so that a create_graph pass tests it without making the instance's dict
    _saved_tangents = None

    _number_overload = False  # see OpDef.number_cls

    def __dir__(self):
        # torch's nodes list their saved values and a few private methods; ember's own
        # bookkeeping (_saved, _vers, _op, ...) stays usable but out of sight, as there
        return [n for n in super().__dir__() if (not n.startswith("_") or n.startswith(
            ("__", "_saved_", "_raw_saved_")) or n in _TORCH_NODE_PRIVATE)
            and n != "_saved_tangents"]

    def _edge_positions(self):
        if type(self).__name__ == "NotImplemented":
            # torch's has edges for the tensors that require grad: also (None, 0) for one no
            # edge leads to (a view made in inference mode), unlike NO_EDGE (not requiring)
            return tuple(k for k, e in enumerate(self._next) if e is not NO_EDGE)
        grad_inputs = self._op.grad_inputs()
        numbers = self._number_overload
        if not numbers and len(grad_inputs) == len(self._next):
            return None
        meta = self._meta
        return tuple(k for k in range(len(self._next))
                     if k in grad_inputs and not (numbers and meta[k] is None))

    def _output_positions(self):
        diff = self._op.diff_outputs
        return None if diff is None else tuple(k for k, d in enumerate(diff) if d)

    def _unpack(self, as_tensors):
        saved = self._saved
        if saved is None:
            raise RuntimeError(ERR_FREED)
        if self._hooked:
            return self._unpack_hooked(as_tensors)
        op = self._op
        env = list(saved)
        vers = self._vers
        for j, kind, idx in op.unpack_plan:
            if kind == INPUT:
                if vers[j] is not None:
                    t = saved[j]
                    vc = t._vc  # (None: never written, see _save_input_lines)
                    if (vc is not None and vc[0] != vers[j]) or as_tensors:
                        env[j] = unpack_input(t, vers[j], as_tensors)
                    else:
                        env[j] = t._data
            elif op.diff_outputs is None or op.diff_outputs[idx]:
                env[j] = unpack_output(self, idx, saved[j], vers[j], as_tensors)
            else:  # e.g. the indices of max(dim): data, never part of the graph
                env[j] = unpack_data_output(saved[j], vers[j], as_tensors)
        for j in op.param_slots:
            if vers[j] is not None:
                check_param(saved[j], vers[j])
        return env

    def _unpack_hooked(self, as_tensors):
        env = list(self._saved)
        for j, _, _ in self._op.unpack_plan:
            env[j] = self._unpack_slot(j, as_tensors)
        for j in self._op.param_slots:
            env[j] = self._unpack_slot(j, as_tensors)
        return env

    def _unpack_slot(self, j, as_tensors):
        """One saved value, as ``_unpack`` gives it (``grad_fn._saved_<name>`` reads one)."""
        saved = self._saved
        if saved is None:
            raise RuntimeError(ERR_FREED)
        value = saved[j]
        if type(value) is _Packed:
            return unpack_saved(value, self, as_tensors)
        op = self._op
        kind, idx = op.saved_spec[j]
        version = self._vers[j]
        if kind == INPUT:
            return value if version is None else unpack_input(value, version, as_tensors)
        if kind != RESULT:
            if kind == PARAM and version is not None:
                check_param(value, version)
            return value
        if op.diff_outputs is None or op.diff_outputs[idx]:
            return unpack_output(self, idx, value, version, as_tensors)
        return unpack_data_output(value, version, as_tensors)

    def _register_saved_hooks(self, j, hooks, _store=None):
        """``grad_fn._raw_saved_<name>.register_hooks(pack, unpack)``: pack slot ``j`` now."""
        saved = self._saved
        value = None if saved is None else saved[j]
        check_register(value, saved is None)
        kind, idx = self._op.saved_spec[j]
        if kind == INPUT:
            if not isinstance(value, Tensor):
                raise RuntimeError(f"ember saved the Python number {value!r} as a number, not "
                                   "as a tensor: there is no saved tensor to register hooks on")
            packed = pack_saved(value, hooks, hook_input=value.detach())
        elif self._op.diff_outputs is None or self._op.diff_outputs[idx]:
            t = _wrap(value[0])
            t._vc = value[1]
            packed = pack_saved(t, hooks, output_nr=idx)
            packed.requires_grad = True
        else:  # (a non-differentiable output, kept as itself)
            packed = pack_saved(value, hooks)
            packed.requires_grad = False
        self._saved = _with_slot(saved, j, packed)
        self._vers = _with_slot(self._vers, j, None)
        self._hooked = True

    def _apply(self, grads, graph, needed):
        # First call for this op: generate its first-order path and install it on the class
        # (see _compile_apply); the generic path below serves graphs and saved tensor hooks.
        cls = type(self)
        if "_apply" not in vars(cls) and cls._op is not None:
            cls._apply = _compile_apply(cls._op)
            return cls._apply(self, grads, graph, needed)
        return self._apply_generic(grads, graph, needed)

    def _apply_generic(self, grads, graph, needed, formulas=None):
        op = self._op
        if not op.saved_spec:
            env = ()
        elif self._saved is None:
            env = self._freed_env(formulas or op.formulas)
        else:
            env = self._unpack(graph)
        nxt = self._next
        outs = [None] * len(nxt)
        if op.n_outputs == 1:
            g = grads[0]
        elif op.undefined_grads:  # the formulas skip outputs that got no gradient
            g = tuple(grads)
        else:
            g = tuple(self._materialize(grads, graph))
        for inputs, fn, env_idx in formulas or op.formulas:
            if len(inputs) == 1:
                child = nxt[inputs[0]][0]
                if child is None or (needed is not None and child not in needed):
                    continue
            else:
                mask = tuple(nxt[i][0] is not None and (needed is None or nxt[i][0] in needed)
                             for i in inputs)
                if not any(mask):
                    continue
                if None in env_idx:  # the formula reads grad_input_mask
                    r = fn(g, *[mask if j is None else env[j] for j in env_idx])
                    for i, ri in zip(inputs, r):
                        outs[i] = ri
                    continue
            n = len(env_idx)
            if n == 0:
                r = fn(g)
            elif n == 1:
                r = fn(g, env[env_idx[0]])
            elif n == 2:
                r = fn(g, env[env_idx[0]], env[env_idx[1]])
            else:
                r = fn(g, *[env[j] for j in env_idx])
            if len(inputs) == 1:
                outs[inputs[0]] = r
            else:
                for i, ri in zip(inputs, r):
                    outs[i] = ri
        return outs

    def _formulas(self):
        """The formulas this node runs (see ``_ComplexOpNode``)."""
        return self._op.formulas

    def _freed_env(self, formulas):
        """The saved values after the tensors were freed (retain_graph=False): as torch, a
        second pass raises only where the node saved a tensor, which it does for the formulas
        of the inputs that require grad (x + c's node runs again; x * c's, which reads c,
        refuses). torch's node unpacks all of them whichever gradients the pass needs
        (``backward(inputs=[y])`` runs y's node for none)."""
        tensors = {j for j, _, _ in self._op.unpack_plan}.union(self._op.param_slots)
        nxt = self._next
        for inputs, _, env_idx in formulas:
            if any(nxt[i][0] is not None for i in inputs) and tensors.intersection(env_idx):
                raise RuntimeError(ERR_FREED)
        return self._kept or [None] * len(self._op.saved_spec)

    def _materialize(self, grads, graph):
        """Zeros for outputs that received no gradient (formulas expect every output's grad)."""
        xp = get_xp(*(g._data if graph else g for g in grads if g is not None))
        for g, (shape, dt) in zip(grads, self._out_meta):
            if g is None:
                z = xp.zeros(shape, dt)
                g = _wrap(z) if graph else z
            yield g

    def _release(self):
        # torch frees saved tensors only: a node that saved none (sum keeps a shape, view a
        # size) can run again, and its non-tensor values stay readable.
        # (an op's node class has the one of _RELEASES its saved values need: see _saved_slot)
        op = self._op
        if op.release:
            if op.release == 2 and self._saved is not None:
                kept = self._kept = list(self._saved)
                for j in op.freed_slots:
                    kept[j] = None
            self._saved = None


def _release_nothing(self):
    """``OpNode._release`` of a node that saved no tensor."""


def _release_saved(self):
    """``OpNode._release`` of a node that saved tensors only."""
    self._saved = None


# OpNode._release by what an op's node saved (OpDef.release): the engine calls it after every
# node of a backward without retain_graph, so each node class has its own case's
_RELEASES = (_release_nothing, _release_saved, OpNode._release)


class _ComplexOpNode(OpNode):
    """The node of an op whose output is complex and whose formulas are written for real
    (holomorphic) maths: it runs them conjugated (see ``conjugated``). ``complex_twin`` makes
    one per op node class, with the op's node name."""

    def _apply(self, grads, graph, needed):
        return self._apply_generic(grads, graph, needed)

    def _apply_generic(self, grads, graph, needed, formulas=None):
        return OpNode._apply_generic(self, grads, graph, needed,
                                     conjugated(self._op, formulas or self._op.formulas))

    def _formulas(self):
        return conjugated(self._op, self._op.formulas)


def complex_twin(cls):
    """The node class a call of ``cls``'s op with a complex output records."""
    twin = cls.__dict__.get("_complex_twin")
    if twin is None:
        twin = type(cls.__name__, (_ComplexOpNode, cls), {})
        cls._complex_twin = twin
    return twin


def conjugated(op, formulas):
    """``formulas`` in torch's convention for complex tensors.

    NOTE: torch's gradient of a real loss L w.r.t. z = x + iy is dL/dx + i dL/dy. For an op
    with complex derivative f' (mul, exp, matmul, sum, ...), that makes the input gradient
    grad * conj(f'), while the formula written for real maths computes grad * f'; both are
    linear in grad, so conj(formula(conj(grad))) is torch's. A real input's share is the real
    part, which the engine takes when it casts a gradient to its input's dtype.

    An op declared ``conj_saved`` has formulas whose derivative has real coefficients, so
    conj(f'(z)) = f'(conj(z)): they run on the conjugates of their saved values instead, as
    torch's formulas are written (``grad * other.conj()``, ``grad * result.conj()``), which under create_graph records torch's nodes (ConjBackward0 on a
    saved tensor, none on the gradient) and gives torch's signed zeros. A formula with a
    complex form of its own (``OpDef.complex_form``) runs that instead.
    """
    cache = op.__dict__.setdefault("_conjugated", {})
    hit = cache.get(id(formulas))
    if hit is None or hit[0] is not formulas:
        wrap = _conj_saved_formula if op.conj_saved else _conjugate_formula
        forms = op.__dict__.get("complex_forms", {})
        hit = cache[id(formulas)] = (formulas, [(idx, forms.get(fn) or wrap(fn), env)
                                                for idx, fn, env in formulas])
    return hit[1]


def _conjugate_formula(fn):
    def formula(grad, *env):
        return conj_any(fn(conj_any(grad), *env))
    return formula


def _conj_saved_formula(fn):
    def formula(grad, *env):
        return fn(grad, *[conj_value(v) for v in env])
    return formula


def conj_value(x):
    """A saved value's conjugate as torch's formulas take it (``self.conj()``): a complex
    Tensor's is conj's lazy view (ConjBackward0), an array's a new array; real values and
    non-tensor values are their own conjugates."""
    if type(x) is _ndarray:  # (a first-order pass's saved values: conj_any's case, no call)
        return x.conj() if x.dtype.kind == "c" else x
    if isinstance(x, Tensor):
        if x._data.dtype.kind != "c":
            return x
        from .complex import conj
        return conj(x)
    return conj_any(x)


def conj_any(x):
    """The complex conjugate of a gradient: an array, a Tensor, a number or a tuple of them
    (None and real values are their own conjugates)."""
    if isinstance(x, (tuple, list)):
        return type(x)(conj_any(v) for v in x)
    if isinstance(x, Tensor):
        if x._data.dtype.kind != "c":
            return x
        from .complex import conj_physical
        return conj_physical(x)
    if isinstance(x, complex):
        return x.conjugate()
    dt = getattr(x, "dtype", None)
    return x.conj() if dt is not None and dt.kind == "c" else x


# Nodes torch writes by hand (not generated from derivatives.yaml): their name() carries the
# C++ namespace.
_HAND_WRITTEN_NODES = frozenset({"CopyBackwards", "NotImplemented"})


def _qualified_name(node):
    return f"torch::autograd::{type(node).__name__}"


def _compile_apply(op):
    """Generate one op's backward, unrolled over its formulas.

    NOTE: what ``OpNode._apply_generic`` does (on raw arrays, or on Tensors in a create_graph
    pass), minus its loops and length checks: this runs once per node in every backward.
    Saved tensor hooks and ops with several outputs or joint formulas take the generic path.
    """
    generic = OpNode._apply_generic
    if op.n_outputs != 1 or any(len(inputs) != 1 for inputs, _, _ in op.formulas):
        return generic
    used = sorted({j for _, _, env_idx in op.formulas for j in env_idx})
    # a create_graph pass unpacks saved values as Tensors (what _unpack does for these slots);
    # an op with a data-only output (max(dim)'s indices) leaves it to the generic path
    graph_ok = op.diff_outputs is None or all(op.diff_outputs)
    lines = ["def apply(self, grads, graph, needed):",
             "    if self._hooked" + ("" if graph_ok else " or graph") + ":",
             "        return generic(self, grads, graph, needed)"]
    if used:
        lines += ["    saved = self._saved", "    if saved is None:",
                  "        return generic(self, grads, graph, needed)", "    vers = self._vers"]
    if graph_ok:
        lines += ["    if graph:"] + ["        " + line for line in _graph_unpack_lines(op, used)]
        lines += ["    else:"]
        indent = "        "
    else:
        indent = "    "
    first_order = []
    for j in used:
        kind, idx = op.saved_spec[j]
        if kind == INPUT:
            first_order += [f"e{j} = saved[{j}]", f"v = vers[{j}]", "if v is not None:",
                            f"    vc = e{j}._vc",
                            "    if vc is not None and vc[0] != v:",
                            f"        unpack_input(e{j}, v, False)",
                            f"    e{j} = e{j}._data"]
        elif kind == RESULT and not graph_ok and not op.diff_outputs[idx]:
            first_order += [f"e{j} = unpack_data_output(saved[{j}], vers[{j}], False)"]
        elif kind == RESULT:
            first_order += [f"e{j}, vc = saved[{j}]", f"if vc[0] != vers[{j}]:",
                            f"    unpack_output(self, {idx}, saved[{j}], vers[{j}], False)"]
        else:
            first_order += _plain_slot_lines(op, j, kind, idx)
    lines += [indent + line for line in first_order or ["pass"]]
    lines += ["    g = grads[0]", "    nxt = self._next"]
    outs = ["None"] * op.n_tensors
    for k, ((i,), _, env_idx) in enumerate(op.formulas):
        call = ", ".join(["g"] + [f"e{j}" for j in env_idx])
        lines += [f"    c = nxt[{i}][0]",
                  "    if c is not None and (needed is None or c in needed):",
                  f"        o{i} = f{k}({call})",
                  "    else:",
                  f"        o{i} = None"]
        outs[i] = f"o{i}"
    lines += [f"    return [{', '.join(outs)}]"]
    scope = {"generic": generic, "ERR_FREED": ERR_FREED, "unpack_input": unpack_input,
             "unpack_output": unpack_output, "unpack_data_output": unpack_data_output,
             "check_param": check_param, "Tensor": Tensor, "_new": object.__new__}
    scope.update({f"f{k}": fn for k, (_, fn, _) in enumerate(op.formulas)})
    exec(compile("\n".join(lines), GENERATED, "exec"), scope)  # noqa: S102 - the op's own code
    return scope["apply"]


def _plain_slot_lines(op, j, kind, idx):
    """Generated lines reading saved slot ``j`` that holds no tensor input or output."""
    if kind == PARAM and idx in op.checked_params:  # (may hold a versioned tensor)
        return [f"e{j} = saved[{j}]", f"if vers[{j}] is not None:",
                f"    check_param(e{j}, vers[{j}])"]
    return [f"e{j} = saved[{j}]"]


def _graph_unpack_lines(op, used):
    """Generated lines reading the saved slots ``used`` as Tensors for a create_graph pass
    (as ``OpNode._unpack(True)`` reads them)."""
    lines = []
    for j in used:
        kind, idx = op.saved_spec[j]
        if kind == INPUT:  # (unpack_input's check written out; it raises the error)
            lines += [f"e{j} = saved[{j}]", f"v = vers[{j}]", "if v is not None:",
                      f"    vc = e{j}._vc",
                      "    if vc is not None and vc[0] != v:",
                      f"        unpack_input(e{j}, v, True)"]
        elif kind == RESULT:  # (unpack_output written out, but for forward AD's tangents)
            lines += [f"a, vc = saved[{j}]",
                      f"if vc[0] != vers[{j}] or self._saved_tangents is not None:",
                      f"    e{j} = unpack_output(self, {idx}, saved[{j}], vers[{j}], True)",
                      "else:", f"    e{j} = _new(Tensor)", f"    e{j}._data = a",
                      f"    e{j}._grad_fn = self", f"    e{j}._output_nr = {idx}",
                      f"    e{j}._requires_grad = True", f"    e{j}._vc = vc"]
        else:
            lines += _plain_slot_lines(op, j, kind, idx)
    return lines or ["pass"]


_NUMBERS = (bool, int, float, complex)  # a Python number given for a tensor argument


def _element_strides(node, i, strides):
    """Saved byte strides (what mm's formula reads) as torch shows them: in elements."""
    meta = node._meta  # (the input's dtype; mm-like ops' inputs share theirs)
    dtype = next((m[1] for m in (*meta[i:i + 1], *meta) if m is not None), None)
    item = 1 if dtype is None else dtype.itemsize
    return tuple(s // item for s in strides)


def _saved_property(j, read, scalar=False):
    """``grad_fn._saved_<torch's name>``: slot ``j`` as torch's node returns it (``read``
    converts a stored shape or argument; ``scalar``: a number stays one), at access, never
    while a node is recorded."""
    def getter(node):
        kind, i = node._op.saved_spec[j]
        if kind in (INPUT, RESULT):
            value = node._unpack_slot(j, True)
            if (kind == INPUT and not scalar and not node._number_overload
                    and type(value) in _NUMBERS):
                return _wrap(np.asarray(value))  # torch's wrapped number: a 0-dim tensor
            return value
        saved = node._saved
        value = node._kept[j] if saved is None else saved[j]
        if kind == STRIDES:  # (read picks the input's recorded shape or its strides)
            meta = node._meta[i] if i < len(node._meta) else None
            return read((None if meta is None else meta[0], _element_strides(node, i, value)))
        return read(value, node) if kind == PARAM else read(value)
    return property(getter)


def registered_op(name, k=0):
    """The ``k``-th op declared under ``name`` (what a pickled op is loaded as: several ops,
    such as add's tensor and number forms, share a name)."""
    return _DECLARED[name][k]


_DECLARED: dict[str, list] = {}  # every declared op, by name, in the order of declaration


class OpDef:
    """One op: kernel, dispatch metadata, derivative formulas and its node class."""

    weak_scalars = False  # see op()
    listed = False  # a list op's copy for a call of n list items (see _specialize)
    # torch's kernel takes a Python number operand of a float16/bfloat16 tensor in float32 (its
    # opmath type: mul, div), where others round it to the tensor's dtype first. Such an op's
    # weak scalar for a float16 tensor is a float32 array (see number_dtype), and its kernel
    # rounds its float32 result to float16 once; for bfloat16 see opmath.widened.
    numbers_in_opmath = False
    ufunc = None  # see op()
    quiet = False
    elementwise = False  # see op()
    iterator_layout = False  # results laid out as torch's TensorIterator's (see op())
    undefined_grads = False  # see op()
    inplace_check = None  # the in-place form's check, where torch's differs from ``check``
    inplace_kernel = None  # the in-place form's kernel, where writing into self differs
    out_name = None  # torch's name of the op in out= errors, when its function takes out=
    out_rule = None  # how out='s dtype must match the result's (see ember._out)
    complex_grad = False  # see op()
    conj_saved = False  # see op()
    writes = 0  # see op()
    copies = False  # see op()
    # forward AD of inference duals (see ember.autograd.forward_ad): the out= function torch's
    # kernel writes its result through (a name, or a function of the call's arguments), and
    # whether torch runs this Scalar overload as its Tensor one with the number wrapped
    out_function = None
    wraps_number = False

    @property
    def __name__(self):  # (the name a __torch_function__ reads of the op it is handed)
        return self.name

    def __reduce_ex__(self, protocol):
        # Pickled and copied by reference, as torch's functions are (copy.deepcopy of a module
        # holding ``torch.tanh`` keeps that very function): a registered op is found again
        # by its name.
        key = self.__dict__.get("pickle_key")
        if key is not None:
            return (registered_op, key)
        return super().__reduce_ex__(protocol)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if name == "kernel":
            # What the generated caller of a quiet op runs in the quiet context: the kernel
            # without its quiet wrapper (a replaced kernel runs as it is, also quietly).
            object.__setattr__(self, "bare_kernel", getattr(value, "bare", value))
        elif name in ("params", "n_tensors", "n_outputs", "quiet"):
            # read by every call (see __call__): the number of parameters, and how many
            # leading arrays a call on raw arrays passes straight to the kernel (0: none)
            d = self.__dict__
            if "params" in d:
                object.__setattr__(self, "arity", len(d["params"]))
            n = d.get("n_tensors", 0)
            object.__setattr__(self, "array_args",
                               n if d.get("n_outputs") == 1 and n in (1, 2) else 0)
            object.__setattr__(self, "__class__", _call_class(self))

    def __init__(self, kernel, name, node, aten, n_tensors, promote, differentiable, view,
                 n_outputs, diff_outputs, result_type, check, number_node=None):
        self.kernel = kernel
        self.name = name
        self.aten = aten or f"aten::{name}"
        self.params, self.defaults = _parameters(kernel)
        # {number of positional args: the defaults that complete them} (see bind)
        self.tails = {k: tuple(self.defaults[k:]) for k in range(len(self.params))
                      if all(v is not _MISSING for v in self.defaults[k:])}
        self.index = {p: i for i, p in enumerate(self.params)}
        if self.params and self.params[0] == "self":
            self.index.setdefault("input", 0)
        self.n_tensors = n_tensors
        self.promote = promote
        self.differentiable = differentiable
        self.view = view
        self.n_outputs = n_outputs
        # None: every output is differentiable (also for a variable number of outputs)
        self.diff_outputs = diff_outputs
        self.result_type = result_type
        self.check = check
        self.output_names = ("result",) if n_outputs == 1 else tuple(
            f"result{k}" for k in range(max(n_outputs, 0)))
        self.formulas = []
        self.batched_formulas = []  # see batched_grad
        self.saved_names = []
        self.saved_spec = ()
        self.unpack_plan = ()
        self.checked_params = frozenset()  # params holding tensors torch saves (op(checked=))
        self.param_slots = ()  # the saved slots of those (see param_version)
        self.freed_slots = ()  # the saved slots holding tensors (unpack_plan's, param_slots)
        self.release = 0  # what _release frees: 0 nothing, 1 all, 2 the tensors only
        self.recorder = None  # generated on first use (see _compile_recorder)
        self.save_guards = None  # computed on first use (see _save_guards)
        self.caller = None  # generated on first use (see tensor_caller)
        self.inplace_caller = None  # generated on first use (see inplace._compile_inplace)
        self.node_name = node or f"{_camel(name)}Backward0"
        self.node_cls = type(self.node_name, (OpNode,), {"_op": self, **{
            f"_saved_{attr}": property(read)
            for attr, read in metadata_names(self.node_name)}})
        if self.node_name in _HAND_WRITTEN_NODES:
            self.node_cls.name = _qualified_name
        # A call with a Python number for a tensor operand, where torch has an overload taking
        # a number (rsub(x, 2): RsubBackward1): its node has that overload's name and no edge
        # for the number.
        self.number_cls = None
        if number_node is not None:
            self.number_cls = type(number_node, (self.node_cls,), {"_number_overload": True})
            if number_node in _HAND_WRITTEN_NODES:
                self.number_cls.name = _qualified_name
        self._specialized = {}

    # -- declaring derivatives --------------------------------------------------------------
    def grad(self, *inputs, writes=0, key=None):
        """Declare the derivative formula for the named input(s) (a tuple when several).

        ``writes``: how many times torch's formula writes its gradient in place (a zero
        tensor, then ``index_put_``/``scatter_``): the version a user sees on it (see
        autograd/_grad_versions.py).

        Formulas run in the sorted order of their keys, as torch's generated backward runs
        its derivatives.yaml entries ("other" before "self"): under create_graph that is the
        order their nodes are made in, which decides the order the engine runs them in. The
        key is the inputs' names joined by ", "; ``key`` names torch's entry where ember
        splits a joint one (clamp's "min, max")."""
        idx = tuple(self.index[n] for n in inputs)
        order = key or ", ".join(inputs)

        def register(fn):
            names = _parameters(fn)[0][1:]
            assert len(idx) > 1 or MASK_NAME not in names, "grad_input_mask: joint formulas only"
            env_idx = tuple(None if n == MASK_NAME else self._saved_slot(n) for n in names)
            self.formulas.append((idx, writing(fn, writes) if writes else fn, env_idx))
            refusal = getattr(fn, "forward_refusal", None)
            if refusal is not None:  # (no_derivative's: forward mode refuses these inputs too)
                self.jvp(*inputs)(refusal)
            keys = self.__dict__.setdefault("_formula_keys", {})
            keys[idx] = order
            self.formulas.sort(key=lambda f: keys[f[0]])
            # what is saved when may have changed (the generated caller records inline)
            self.recorder = self.save_guards = self.caller = None
            if "_apply" in vars(self.node_cls):  # regenerated with the new formula
                delattr(self.node_cls, "_apply")
            return fn
        return register

    def complex_form(self, *inputs):
        """Declare the formula for the named input(s) where the op's output is complex, in
        torch's convention (conjugating where torch's formula does: ``((self / other) /
        other).conj()``), for an op whose conjugated formula (see ``conjugated``) has the
        right values but records other nodes than torch's. It takes what the op's formula
        for those inputs takes; the op's formula (declared first) stays the real dtypes'."""
        idx = tuple(self.index[n] for n in inputs)

        def register(fn):
            plain = [f for i, f, _ in self.formulas if i == idx]
            assert plain and _parameters(fn)[0] == _parameters(plain[0])[0], (
                f"{self.name}: a complex form for {inputs} takes what its formula takes")
            self.__dict__.setdefault("complex_forms", {})[plain[0]] = fn
            self.__dict__.pop("_conjugated", None)
            return fn
        return register

    def grad_inputs(self):
        """The positions of the inputs that have a derivative formula."""
        cached = self.__dict__.get("_grad_inputs")
        if cached is None or cached[0] != len(self.formulas):
            cached = self._grad_inputs = (len(self.formulas), frozenset(
                i for inputs, _, _ in self.formulas for i in inputs))
        return cached[1]

    def batched_grad(self, *inputs):
        """Declare the formula for the named input(s) given a batch of output gradients: a
        ``grad`` with one leading batch dimension, for a batched backward (see
        autograd/_batched.py). It may use only what the op's own formula for those inputs uses
        (so that it is saved whenever it is needed)."""
        idx = tuple(self.index[n] for n in inputs)

        def register(fn):
            names = _parameters(fn)[0][1:]
            plain = [env for i, _, env in self.formulas if i == idx]
            env_idx = tuple(self._saved_slot(n) for n in names)
            assert plain and set(env_idx) <= set(plain[0]), (
                f"{self.name}: a batched formula for {inputs} uses what its formula does not")
            self.batched_formulas = [f for f in self.batched_formulas if f[0] != idx]
            self.batched_formulas.append((idx, fn, env_idx))
            return fn
        return register

    def batched(self):
        """The formulas a batched backward runs once for the whole batch, or None (then it
        runs the op's node once per row)."""
        if self.elementwise:
            return self.formulas
        if self.batched_formulas and (len(self.batched_formulas) == len(self.formulas)):
            return self.batched_formulas
        return None

    def jvp(self, *inputs, joint=False):
        """Declare an explicit forward-mode rule for the named input(s), overriding the one
        ember.autograd.forward_ad derives from the grad formulas (see forward_ad.jvp_rule).
        ``joint``: one rule for all of them, called once with their tangents (None for one
        without), as torch's formulas that are not a sum of one term per input."""
        def register(fn):
            rules = self.__dict__.setdefault("jvp_rules", {})
            if joint:
                fn.joint_inputs = inputs
            for name in inputs:
                rules[name] = fn
            return fn
        return register

    def specialize(self, n):
        """The op for a call with ``n`` tensors in its leading tensor list (cat, stack, ...)."""
        spec = self._specialized.get(n)
        if spec is None:
            spec = self._specialized[n] = _specialize(self, n)
        return spec

    def _saved_slot(self, name):
        if name not in self.saved_names:
            self.saved_names.append(name)
            self.saved_spec = tuple(self._classify(n) for n in self.saved_names)
            self.unpack_plan = tuple((j, k, i) for j, (k, i) in enumerate(self.saved_spec)
                                     if k in (INPUT, RESULT))
            self.param_slots = tuple(j for j, (k, i) in enumerate(self.saved_spec)
                                     if k == PARAM and i in self.checked_params)
            self.freed_slots = _freed_slots(self)
            freed = len(self.freed_slots)
            self.release = 0 if not freed else 1 if freed == len(self.saved_spec) else 2
            self.node_cls._release = _RELEASES[self.release]
            self.node_cls._releases = self.release  # (the same cases: see Node._releases)
            j = len(self.saved_names) - 1
            kind, i = self.saved_spec[j]
            scalar = name in SCALAR_INPUTS.get(self.node_name, ())
            for shown, read in shown_names(self.node_name, name, _KIND_NAMES[kind], i):
                setattr(self.node_cls, f"_saved_{shown}", _saved_property(j, read, scalar))
                if kind in (INPUT, RESULT) and not scalar:
                    setattr(self.node_cls, f"_raw_saved_{shown}", raw_saved_property(j))
            self.recorder = self.inplace_caller = self.caller = None
        return self.saved_names.index(name)

    def _classify(self, name):
        if name == "shapes":
            return (SHAPES, 0)
        if name in self.output_names:
            return (RESULT, self.output_names.index(name))
        if name.endswith("_shape") and name[:-6] in self.index:
            return (SHAPE, self.index[name[:-6]])
        if name.endswith("_strides") and name[:-8] in self.index:
            return (STRIDES, self.index[name[:-8]])
        i = self.index[name]
        return (INPUT, i) if i < self.n_tensors else (PARAM, i)

    # -- calling -----------------------------------------------------------------------------
    def bind(self, args, kwargs):
        """Full positional arguments (a tuple or list) from a call's args and kwargs."""
        if not kwargs:
            tail = self.tails.get(len(args))
            if tail is not None:  # trailing defaults left out (x + y: add without alpha)
                return args + tail
        n = len(self.params)
        if len(args) > n:
            raise TypeError(f"{self.name}() takes {n} positional argument{'s' * (n != 1)} but "
                            f"{len(args)} {'were' if len(args) != 1 else 'was'} given")
        full = list(args) + self.defaults[len(args):]
        for k, v in kwargs.items():
            i = self.index.get(k)
            if i is None:
                i = self.index.get(NUMPY_KEYWORDS.get(k))
                if i is None:
                    raise TypeError(f"{self.name}() got an unexpected keyword argument '{k}'")
                k = self.params[i]
            if i < len(args):
                raise TypeError(f"{self.name}() got multiple values for argument '{k}'")
            if k in _SCALAR_KEYWORDS and not _is_number(v) and _is_number(self.defaults[i]):
                raise TypeError(f"{self.name}(): argument '{k}' must be Number, not "
                                f"{_parser_typename(v)}")
            full[i] = v
        if any(v is _MISSING for v in full):  # (not `in`: an array argument compares by ==)
            raise self._missing_error(full)
        return full

    def _missing_error(self, full):
        """torch's parser's TypeError for required arguments left out (the first named
        ``input`` in the function form; its plural is "argument" for several, as torch's)."""
        names = [("input" if i == 0 and p == "self" else p)
                 for i, (p, v) in enumerate(zip(self.params, full)) if v is _MISSING]
        k = len(names)
        return TypeError(f"{self.name}() missing {k} required positional argument"
                         f"{'s' * (k == 1)}: " + ", ".join(f'"{n}"' for n in names))

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != self.arity:
            if kwargs and self.out_name is not None and "out" in kwargs:
                from .._out import call_with_out
                return call_with_out(self, self.out_name, args, kwargs, self.out_rule)
            args = self.bind(args, kwargs)
        # NOTE: the two commonest calls, done here as dispatch would do them (one call less
        # per op): a Tensor op with its generated path ready, and a backward formula's op on
        # arrays (cos(self) in sin's derivative, tanh_backward(grad, result) in tanh's).
        if self.n_tensors:
            t = type(args[0])
            if t is Tensor:
                call = self.caller
                if call is not None and forward_hook[0] is None and profiler_hook[0] is None:
                    return call(args)
            elif t is _ndarray and args[0].dtype not in _SPECIAL and (
                    self.array_args == 1 or (self.array_args == 2 and type(args[1]) is _ndarray
                                             and args[1].dtype not in _SPECIAL)):
                if self.quiet:  # (quietly() written out: see _backend/fp_errors.py)
                    try:
                        out = quiet_context.run(self.bare_kernel, *args)
                    except RuntimeError:
                        if not inside():
                            raise
                        out = self.bare_kernel(*args)
                else:
                    out = self.kernel(*args)
                return out if type(out) is _ndarray else as_array(out)
        return dispatch(self, args)

    def inplace(self, *args, **kwargs):
        if kwargs or len(args) != len(self.params):
            args = self.bind(args, kwargs)
        call = self.inplace_caller
        if call is None:
            call = self.inplace_caller = _compile_inplace(self)
        return run_inplace(self, call, args)


_CALL_CLASSES: dict = {}


def _call_class(op):
    """The class whose ``__call__`` serves ``op``: ``OpDef.__call__`` with the op's number of
    parameters, how many raw arrays go straight to its kernel, and whether that kernel is
    quiet written in (see _compile_call); OpDef itself for an op with no tensor input."""
    d = op.__dict__
    if not d.get("n_tensors") or "arity" not in d:
        return OpDef
    key = (d["arity"], d["array_args"], bool(op.quiet))
    cls = _CALL_CLASSES.get(key)
    if cls is None:
        cls = _CALL_CLASSES[key] = type("OpDef", (OpDef,), {
            "__call__": _compile_call(*key), "__module__": OpDef.__module__,
            "__qualname__": OpDef.__qualname__, "__doc__": OpDef.__doc__})
    return cls


def _compile_call(arity, array_args, quiet):
    """``OpDef.__call__`` for ops of ``arity`` parameters at least one of which is a tensor.

    NOTE: every op function call (a formula's ops, ``torch.tanh(x)``) starts here; with the
    op's constants written in, a call reads no attribute of the op to decide its path.
    """
    lines = ["def __call__(self, *args, **kwargs):",
             f"    if kwargs or len(args) != {arity}:",
             "        return generic(self, *args, **kwargs)",
             "    a0 = args[0]",
             "    t = type(a0)",
             "    if t is Tensor:",
             "        call = self.caller",
             "        if call is not None and forward_hook[0] is None and profiler_hook[0] is None:",
             "            return call(args)"]
    if array_args:
        cond = "t is ndarray and a0.dtype not in SPECIAL"
        if array_args == 2:
            cond += " and type(args[1]) is ndarray and args[1].dtype not in SPECIAL"
        run = (quiet_lines("out = ", "self.bare_kernel", "*args") if quiet else
               ["out = self.kernel(*args)"])
        lines += [f"    elif {cond}:"] + ["        " + line for line in run]
        lines += ["        return out if type(out) is ndarray else as_array(out)"]
    lines.append("    return dispatch(self, args)")
    scope = {"generic": OpDef.__call__, "Tensor": Tensor, "forward_hook": forward_hook,
             "profiler_hook": profiler_hook, "ndarray": _ndarray, "SPECIAL": _SPECIAL,
             "quiet_context": quiet_context, "inside": inside, "as_array": as_array,
             "dispatch": dispatch}
    exec(compile("\n".join(lines), GENERATED, "exec"), scope)  # noqa: S102 - generated code
    return scope["__call__"]


def _as_method(d, name, bind=None):
    """A Tensor method for op ``d``: ``self`` is a Tensor, so unless a forward-AD level or the
    profiler is active the call goes straight to the op's generated Tensor path.

    ``bind(args, kwargs)``: how the method's arguments become the op's (``d.bind`` by default,
    and then a call that gives all of them by position skips it); one of its own sees every
    call (see deprecated_overloads.py, whose methods take fewer by position than the op)."""
    if name in OPERATORS:
        return _as_operator(d, name)
    n = len(d.params) if bind is None else -1
    bind = bind or d.bind

    def method(*args, **kwargs):
        try:  # (a try costs nothing until it catches)
            if kwargs or len(args) != n:
                # (the bound arguments under another name: a failure reads those given)
                bound = bind(args, kwargs)
                if forward_hook[0] is None and profiler_hook[0] is None:
                    call = d.caller
                    if call is not None:
                        return call(bound)
                return dispatch(d, bound)
            if forward_hook[0] is None and profiler_hook[0] is None:
                call = d.caller
                if call is not None:
                    return call(args)
            return dispatch(d, args)
        except Exception:  # noqa: BLE001 - a failed call, read against torch's parser
            return method_failed(method, name, args, kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = d.kernel.__doc__
    method.parses_on_failure = True  # (see _arg_parser.install_methods)
    return method


def method_failed(method, name, args, kwargs):
    """In the ``except`` of Tensor method ``name``'s failed call (``args``: ``self`` and the
    arguments given): _arg_parser.failed_call's error (imported here, at the first failure:
    the parser module is made after the ops)."""
    from .._arg_parser import failed_call
    return failed_call(method, name, args, kwargs, True)


# Python's binary operators: an operand ember does not take (None, a string, a list, a NumPy
# array) makes them return NotImplemented, so that Python raises its TypeError (or, for ==,
# compares identity) as it does for torch. For an ndarray Python then runs the array's own
# reflected operator: NumPy computes from the tensor's __array__ and wraps its result with
# Tensor.__array_wrap__, torch's way (no graph: a tensor requiring grad refuses __array__).
OPERATORS = frozenset(f"__{n}__" for n in (
    "add radd iadd sub rsub isub mul rmul imul truediv rtruediv itruediv floordiv rfloordiv "
    "ifloordiv mod rmod imod pow rpow ipow matmul rmatmul imatmul and rand iand or ror ior xor "
    "rxor ixor lshift rlshift ilshift rshift rrshift irshift eq ne lt le gt ge").split())
OPERANDS = (Tensor, bool, int, float, complex, np.generic)
# the reflected operators (``2.0 * x`` calls x.__rmul__(2.0))
REFLECTED = frozenset(name for name in OPERATORS
                      if name.startswith("__r") and name != "__rshift__")
# the Python numbers the plain paths take, by exact type (a bool is no int there): one set
# lookup of ``type(other)`` instead of two tests
PYTHON_NUMBERS = frozenset((float, int))


def foreign_operand(name, self, other):
    """What operator ``name`` gives for an operand it does not take: NotImplemented, except
    that ``==`` compares with an ndarray as with the tensor made from it (as torch's does)."""
    if name == "__eq__" and isinstance(other, _ndarray):
        from .._creation import from_numpy
        return self.eq(from_numpy(other))
    return NotImplemented


def _as_operator(d, name):
    """``_as_method`` for a Python operator (``x + y``): ``other`` of a type ember does not
    take gives NotImplemented. An op whose kernel is its ufunc computes the calls that record
    nothing straight away (see ``plain_operands``)."""
    # what bind adds to (self, other), made once: add's alpha=1, nothing to a two-parameter op
    tail = () if len(d.params) == 2 else d.tails.get(2)
    assert tail is not None, f"{name}: {d.name} needs arguments the operator has not"
    plain = plain_operands(d)
    if plain is not None:
        return _compile_operator(d, name, tail, plain)

    def method(self, other):
        if type(other) is not Tensor and not isinstance(other, OPERANDS):
            return foreign_operand(name, self, other)
        args = (self, other) + tail  # (an empty tail gives the pair itself: no copy)
        if forward_hook[0] is None and profiler_hook[0] is None:
            call = d.caller
            if call is not None:
                return call(args)
        return dispatch(d, args)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = d.kernel.__doc__
    method._takes_operand = True
    return method


def plain_operands(op):
    """The dtypes a binary op computes with its ufunc alone when nothing records (no grad
    mode, or no input requiring grad): ``(for two tensors of one dtype, for a tensor with a
    Python number)``, the dtypes the generated caller's fast prelude takes, less those the
    op's check may refuse. None: the op has no such path (no ufunc that is its kernel at the
    operator's defaults, a check that does not say what it refuses).

    NOTE: autocast replaces ``op.caller`` of the ops it lists, which this path skips; no op
    it lists has one (tests/ops/test_plain_operators.py checks it)."""
    if (op.ufunc is None or op.n_tensors != 2 or op.n_outputs != 1 or op.view or op.writes
            or op.promote not in (SAME, FLOAT) or op.promote_from):
        return None
    tail = () if len(op.params) == 2 else op.tails.get(2)
    if tail is None or any(type(v) is not int or v != 1 for v in tail):
        return None  # (the ufunc is the kernel with alpha=1 only)
    pair = _FLOATS if op.promote == FLOAT else D.NATIVE_NP
    number = D.NATIVE_FLOAT_NP if op.weak_scalars else frozenset()
    if op.numbers_in_opmath:  # (a float16 tensor's number is float32: the kernel rounds back)
        number = number - {_HALF}
    if op.check is not None:
        kinds = getattr(op.check, "refuses_kinds", None)
        if kinds is None:
            return None
        pair, number = (frozenset(dt for dt in dts if dt.kind not in kinds)
                        for dts in (pair, number))
    return pair, number


def refuses_kinds(kinds):
    """Decorate an op's check that refuses only operands of the dtype kinds ``kinds`` (a
    Python bool counting as a bool tensor): the fast paths skip it for the others."""
    def mark(check):
        check.refuses_kinds = kinds
        return check
    return mark


def plain_call_lines(op, x0, x1, out, fallback):
    """Generated lines computing ``op.ufunc(x0, x1[, out])`` as the generated caller's kernel
    call does (quietly, for a quiet op), where ``plain_operands`` allows it: a ValueError
    (shapes that do not broadcast, a read-only ``out``) runs the lines ``fallback``, from
    before anything was written (the general path then raises torch's error)."""
    operands = f"{x0}, {x1}" + (f", {out}" if out else "")
    result = "" if out else "out = "
    call = (quiet_lines(result, "ufunc", operands) if op.quiet
            else [f"{result}ufunc({operands})"])
    return (["try:"] + ["    " + line for line in call]
            + ["except ValueError:  # (the general path raises torch's error)"]
            + ["    " + line for line in fallback])


def _compile_operator(d, name, tail, plain):
    """Generate operator ``name`` of op ``d`` (see ``_as_operator``): a call that records
    nothing, on plain NumPy arrays of a dtype in ``plain`` (``plain_operands``), runs the ufunc
    and wraps its result, as the generated caller would, without its argument tuple, dtype
    rules and recording; every other call goes the general way."""
    pair, number = plain

    def result(contiguous):
        # (a NumPy scalar, of 0-d operands, has ndim 0 too: read, not a type test)
        scalar = ["if not out.ndim:  # (a NumPy scalar: 0-d operands)",
                  "    out = asarray(out)"]
        if d.iterator_layout:  # (the caller's layout test, see _compile_caller)
            scalar = ["if out.ndim > 1:", f"    if not {contiguous}:",
                      "        out = iterator_layout(out, (x0, x1))",
                      "el" + scalar[0], scalar[1]]
        return scalar + ["res = _new(Tensor)", "res._data = out", "return res"]
    args = "(self, other) + tail" if tail else "(self, other)"
    general = ["call = d.caller", "if call is not None:", f"    return call({args})"]
    tensors = ["if type(other) is Tensor:",
               "    if (not (self._requires_grad or other._requires_grad)"
               " or not state.grad_enabled):",
               "        x0 = self._data",
               "        x1 = other._data",
               "        if (not state.inference and type(x0) is ndarray and type(x1) is "
               "ndarray and (dt := x0.dtype) == x1.dtype and dt in PAIR):"]
    tensors += ["            " + line
                for line in plain_call_lines(d, "x0", "x1", None, ["pass"]) + ["else:"]
                + ["    " + line
                   # (broadcast inputs and a result with a dimension of one element: the
                   # inputs' strides there can order the others, see iterator_strides)
                   for line in result("(x0.flags.c_contiguous and x1.flags.c_contiguous and "
                                      "(x0.shape == x1.shape or 1 not in out.shape))")]]
    tensors += ["    " + line for line in general]  # (a recorded op's usual way: no jump)
    numbers = ["if type(other) in PYTHON_NUMBERS:",
               "    if ((not self._requires_grad or not state.grad_enabled)"
               " and not state.inference",
               "            and type(x0 := self._data) is ndarray"
               " and (dt := x0.dtype) in NUMBER):"]
    numbers += ["        " + line
                for line in cached_scalar_lines("x1", "other", "dt")
                + plain_call_lines(d, "x0", "x1", None, ["pass"]) + ["else:"]
                + ["    " + line  # (a number's 0-d array is C-contiguous)
                   for line in result("x0.flags.c_contiguous")]]
    # (a reflected operator, ``2.0 * x``, is called with a tensor on the left only for a
    # subclass of Tensor: its usual operand is a number, tested first)
    blocks = [numbers, tensors] if name in REFLECTED else [tensors, numbers] if number else [tensors]
    chain = blocks[0] + [line if k else "el" + line
                         for block in blocks[1:] for k, line in enumerate(block)]
    lines = ["def operator(self, other):",
             "    if not intercepted[0] or (forward_hook[0] is None and profiler_hook[0] is None"
             " and function_mode[0] is None):"]
    lines += ["        " + line for line in chain]
    lines += ["        elif not isinstance(other, OPERANDS):",
              "            return foreign_operand(name, self, other)"]
    lines += ["        " + line for line in general]
    lines += ["    elif type(other) is not Tensor and not isinstance(other, OPERANDS):",
              "        return foreign_operand(name, self, other)",
              f"    return dispatch(d, {args})"]
    scope = {"d": d, "name": name, "tail": tail, "PAIR": pair, "NUMBER": number,
             "ufunc": d.ufunc, "Tensor": Tensor, "ndarray": _ndarray, "asarray": np.asarray,
             "iterator_layout": iterator_layout, "_new": object.__new__, "state": state,
             "forward_hook": forward_hook, "profiler_hook": profiler_hook,
             "intercepted": intercepted, "function_mode": function_mode,
             "quiet_context": quiet_context, "inside": inside, "OPERANDS": OPERANDS,
             "foreign_operand": foreign_operand, "dispatch": dispatch,
             "PYTHON_NUMBERS": PYTHON_NUMBERS, **SCALAR_SCOPE}
    exec(compile("\n".join(lines), GENERATED, "exec"), scope)  # noqa: S102 - the op's own code
    method = scope["operator"]
    method.__name__ = method.__qualname__ = name
    method.__doc__ = d.kernel.__doc__
    method._takes_operand = True
    return method


def guard_operators(cls):
    """Give every binary operator of ``cls`` not made by ``op()`` the operand check."""
    for name in OPERATORS:
        fn = cls.__dict__.get(name)
        if fn is None or getattr(fn, "_takes_operand", False):
            continue

        def operator(self, other, _fn=fn, _name=name):
            if type(other) is not Tensor and not isinstance(other, OPERANDS):
                return foreign_operand(_name, self, other)
            return _fn(self, other)
        operator.__name__ = operator.__qualname__ = name
        operator._takes_operand = True
        setattr(cls, name, operator)


def _quiet(kernel):
    """``kernel`` silent about floating point (torch gives inf and nan without a word): see
    _backend/fp_errors.py, which makes this cost some 50 ns a call."""
    quiet_kernel = functools.partial(quietly, kernel)
    quiet_kernel.bare = kernel
    quiet_kernel._ember_parameters = _parameters(kernel)
    quiet_kernel.__name__, quiet_kernel.__doc__ = kernel.__name__, kernel.__doc__
    return quiet_kernel


_STARRED = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _parameters(fn):
    """``(names, defaults)`` of ``fn``'s parameters (``_MISSING`` where there is no default).

    NOTE: read from the code object when ``fn`` is a plain function: inspect.signature costs
    tens of microseconds, and every op and formula asks once at import.
    """
    known = getattr(fn, "_ember_parameters", None)
    if known is not None:
        return known
    code = getattr(fn, "__code__", None)
    if (code is None or code.co_kwonlyargcount or code.co_flags & _STARRED
            or hasattr(fn, "__wrapped__") or hasattr(fn, "__signature__")):
        params = inspect.signature(fn).parameters
        return (list(params), [p.default if p.default is not inspect.Parameter.empty
                               else _MISSING for p in params.values()])
    names = list(code.co_varnames[:code.co_argcount])
    given = fn.__defaults__ or ()
    return names, [_MISSING] * (len(names) - len(given)) + list(given)


def _specialize(d, n):
    """A copy of list op ``d`` whose ``n`` list items are ordinary leading tensor params.

    Its formulas (declared for the list param) return one gradient per item.
    """
    kernel = d.kernel

    def flat_kernel(*args):
        return kernel(list(args[:n]), *args[n:])
    spec = object.__new__(OpDef)
    spec.__dict__.update(d.__dict__)
    spec.kernel = flat_kernel
    spec.n_tensors = n
    spec.listed = True
    spec.params = [f"tensor{i}" for i in range(n)] + d.params[1:]
    spec.defaults = [_MISSING] * n + d.defaults[1:]
    spec.index = {p: i for i, p in enumerate(spec.params)}
    saved_props = {k: v for k, v in vars(d.node_cls).items()
                   if k.startswith(("_saved_", "_raw_saved_"))}
    spec.node_cls = type(d.node_name, (OpNode,), {"_op": spec, **saved_props})
    spec.number_cls = None
    spec.saved_spec = tuple((kind, i + n - 1 if kind == PARAM else i)
                            for kind, i in d.saved_spec)
    spec.unpack_plan = tuple((j, k, i) for j, (k, i) in enumerate(spec.saved_spec)
                             if k in (INPUT, RESULT))
    spec.checked_params = frozenset(i + n - 1 for i in d.checked_params)
    spec.param_slots = tuple(j for j, (k, i) in enumerate(spec.saved_spec)
                             if k == PARAM and i in spec.checked_params)
    spec.freed_slots = _freed_slots(spec)
    spec.formulas, spec.batched_formulas = (
        [(tuple(range(n)), fn if n > 1 else _only_item(fn), env) for _, fn, env in formulas]
        for formulas in (d.formulas, d.batched_formulas))
    spec._specialized = {}
    spec.list_op = True  # torch guards no saved value of an op with a tensor list
    spec.recorder = spec.save_guards = None
    spec.caller = spec.inplace_caller = None
    return spec


def _freed_slots(op):
    """The saved slots that hold tensors (inputs, results, checked parameters): what a
    node's ``_release`` frees, as one tuple (one loop per backward step, not two)."""
    return tuple(j for j, _, _ in op.unpack_plan) + op.param_slots


def _only_item(fn):
    """A list op's formula for a one-item list: its one gradient, not a 1-sequence of them."""
    def formula(*args):
        r = fn(*args)
        return r if isinstance(r, Tensor) or r is None or is_array(r) else r[0]
    return formula


def _camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def op(name=None, *, node=None, aten=None, tensors=1, promote=SAME, differentiable=True,
       view=False, outputs=1, diff_outputs=None, result_type=None, method=False, inplace=False,
       check=None, promote_from=0, quiet=False, weak_scalars=False, ufunc=None,
       elementwise=False, undefined_grads=False, complex_grad=False, checked=(),
       number_node=None, writes=0, own_layout=False, conj_saved=False, copies=False,
       numbers_in_opmath=False):
    """Declare an op from its kernel. ``tensors``: how many leading params are tensors.

    ``checked``: non-tensor params that hold tensors torch saves (nll_loss's target and
    weight): a node keeping one checks at backward that it was not modified in place.

    ``method=True`` (or a name or tuple of names) also makes Tensor methods; ``inplace=True``
    makes the ``name_`` in-place method. ``view=True`` marks outputs that share the input's
    memory ("maybe" when the kernel only sometimes returns a view, like reshape).
    ``weak_scalars=True`` (plain arithmetic kernels only): a Python number operand reaches the
    kernel as a cached 0-d array of the compute dtype, which NumPy handles about twice as fast
    as a Python float and which gives the same result. ``numbers_in_opmath``: see
    OpDef.numbers_in_opmath. ``ufunc``: the NumPy ufunc the kernel
    is exactly (``np.multiply`` for mul, ``np.exp`` for exp), so the in-place variant writes
    into self directly. ``elementwise=True``: each output element depends on the input
    elements at its (broadcast) position only, and so do the formulas: they work unchanged on
    gradients with extra leading dimensions, and a batched backward runs them once per batch;
    their results of inputs not laid out in the C order are laid out as torch's TensorIterator
    lays them out (see iterator_layout), unless ``own_layout=True`` (a kernel that lays its
    result out itself, as torch's does: clone's memory formats, nan_to_num's empty_like).
    ``undefined_grads=True`` (several outputs): formulas get None for an output that received
    no gradient, instead of zeros, as torch's do where a zero would not be neutral (the
    standard deviation's gradient of one element is 0/0).
    ``complex_grad=True``: the formulas already give torch's gradients for complex tensors
    (conjugate Wirtinger: ``angle``, ``conj``, the FFTs); other ops' formulas are the
    derivative of the holomorphic extension, which ``conjugated_formulas`` turns into
    torch's convention where the output is complex.
    ``conj_saved=True``: the formulas' derivatives have real coefficients (mul, exp, tanh,
    mm...), so for a complex output they run on the conjugated saved values, as torch's own
    formulas do, instead of being conjugated as a whole (see ``conjugated``).
    ``number_node``: the node name torch gives a call with a Python number for a tensor operand
    (its overload taking a number; that number then has no edge).
    ``writes``: how many times torch's kernel writes its fresh result through in-place ops
    (a number, one per output in a tuple, or a function of the call's arguments giving
    either): torch's autograd layer hides these
    version bumps, except when it is skipped, for a call on inference tensors only outside
    inference mode, whose results then show them in ``_version``.
    ``copies``: whether torch's kernel copies ``self`` into its fresh result with ``copy_``
    (a bool, or a function of the call's arguments; ``"whole"``: into all of it, as clone and
    casts do): when no autograd layer runs for the call (on inference tensors outside
    inference mode), that copy_'s own still carries the tangent of a dual ``self``.
    """
    def declare(kernel):
        opname = name or kernel.__name__
        if quiet:
            kernel = _quiet(kernel)
        d = OpDef(kernel, opname, node, aten, tensors, promote, differentiable, view, outputs,
                  diff_outputs, result_type, check, number_node)
        d.promote_from = promote_from
        d.weak_scalars = weak_scalars
        d.numbers_in_opmath = numbers_in_opmath
        d.ufunc = ufunc
        d.quiet = quiet
        d.elementwise = elementwise
        d.iterator_layout = elementwise and not view and not own_layout
        d.undefined_grads = undefined_grads
        d.checked_params = frozenset(d.index[n] for n in checked)
        d.complex_grad = complex_grad or bool(view)
        d.conj_saved = conj_saved
        d.writes = writes
        d.copies = copies
        REGISTRY[opname] = d
        same_name = _DECLARED.setdefault(opname, [])
        d.pickle_key = (opname, len(same_name))
        same_name.append(d)
        methods = (opname,) if method is True else (method if isinstance(method, tuple)
                                                    else ((method,) if method else ()))
        for m in methods:
            setattr(Tensor, m, _as_method(d, m))
        if inplace:
            name_ = inplace if isinstance(inplace, str) else opname + "_"
            from .inplace import inplace_method
            setattr(Tensor, name_, inplace_method(d, name_))
        return d
    return declare


# -- dispatch ----------------------------------------------------------------------------------
def dispatch(op, args):
    """Run ``op`` on ``args``: raw arrays straight to the kernel, Tensors through autograd."""
    n = op.n_tensors
    for a in args[:n]:
        if isinstance(a, Tensor):
            break
    else:
        return _raw(op, args)
    vm = vmap_hook[0]
    if vm is not None and vm.takes(op, args):  # a BatchedTensor argument: its batching rule
        return vm.dispatch(op, args)
    fw = forward_hook[0]
    if fw is not None:  # a forward AD level is active: the hook computes tangents too
        return fw.dispatch(op, args)
    hook = profiler_hook[0]
    if hook is not None:
        with hook(op.aten, args):
            return _tensor_call(op, args)
    return _tensor_call(op, args)


def _raw(op, args):
    # NOTE: NumPy scalars count as arrays: raw formulas on 0-d inputs produce them.
    if not any(is_array(a) or isinstance(a, np.generic) for a in args[:op.n_tensors]):
        from ..overrides import foreign_overloaded, handle_foreign
        foreign = foreign_overloaded(args, None)
        if foreign:  # (no tensor, but an object with a __torch_function__: its call)
            return handle_foreign(op, foreign, args, None)
        raise not_tensor_error(op, 0, args[0])
    out = opmath.call(op, args)
    if op.n_outputs == 1:
        return out if type(out) is _ndarray else as_array(out)
    return tuple(as_array(o) for o in out)


def not_tensor_error(op, index, value):
    """torch's TypeError for an ndarray (or another non-tensor) where a Tensor argument goes,
    positions counted as the function form counts them (from 1 with the first argument).
    ``as_method`` gives the method form's (from 1 after ``self``), which methods raise
    instead."""
    if op.listed:  # (an item of the leading tensor list: torch names the item)
        return TypeError(f"expected Tensor as element {index} in argument 0, but got "
                         f"{typename(value)}")
    name = "input" if index == 0 else op.params[index]
    words = f"(): argument '{name}' (position {{}}) must be Tensor, not {typename(value)}"
    error = TypeError(op.name + words.format(index + 1))
    error.method_form = (words, index)
    return error


def refuse_non_tensor(op, args, error):
    """Raise torch's TypeError when ``error`` (an AttributeError or TypeError out of ``op``'s
    checks or dtype rules) comes of a non-tensor where a Tensor argument goes: the generated
    callers read tensor attributes (``_data``) unchecked, so that the usual call pays for no
    type test, and turn the AttributeError of a number or other object here."""
    obj = getattr(error, "obj", None)  # (the object an AttributeError read)
    for k, a in enumerate(args[:op.n_tensors]):
        if isinstance(a, Tensor) or (a is None and op.defaults[k] is not _MISSING):
            # (None where the tensor is optional: a weight, a bias. An op whose parameter
            # takes None without a default, binary_cross_entropy's weight, reaches here only
            # when its call failed already)
            continue
        if a is obj or not isinstance(a, _NUMBERS):  # (a number goes where torch takes one)
            raise not_tensor_error(op, k, a) from None


_NUMBERS = (bool, int, float, complex, np.generic)
# the keywords torch's schemas declare ``Scalar`` (add's alpha, addmm's beta, addcmul's value)
# where ember's op has a number default: torch's parser refuses anything but a Number there
_SCALAR_KEYWORDS = frozenset(("alpha", "beta", "value"))


def _parser_typename(v):
    """How torch's parser names a refused argument's type (any tensor is "Tensor")."""
    return "Tensor" if isinstance(v, Tensor) else typename(v)


def _is_number(v):
    """A Number to torch's parser: a Python or NumPy number, or a 0-dim tensor that requires
    no grad."""
    return isinstance(v, _NUMBERS) or (isinstance(v, Tensor) and v.ndim == 0
                                       and not v.requires_grad)


def as_method(error, name):
    """``error`` as method ``name`` raises it: a refused argument (``not_tensor_error``) counted
    from 1 after ``self``; any other error unchanged."""
    form = getattr(error, "method_form", None)
    if form is None or not form[1]:
        return error
    words, index = form
    return TypeError(name + words.format(index))


def method_refusals(fn, name):
    """``fn`` (a function form) as a Tensor method that refuses arguments as methods do."""
    @functools.wraps(fn)
    def method(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - a failed call, read against torch's parser
            return method_failed(method, name, args, kwargs)
    method.__name__ = method.__qualname__ = name
    method.parses_on_failure = True
    return method


def compute_dtype(op, args):
    """The dtype the kernel computes in, by torch's promotion rules (None: no promotion)."""
    if op.promote == NONE:
        return None
    n = op.n_tensors
    first = args[0]
    dt = None
    if isinstance(first, Tensor):
        dt = D._BY_NP[first._data.dtype]
        if n > 1:
            dt = _fast_pair(dt, args[1]) if n == 2 else None
    if dt is None:
        dt = _slow_result_type(op, args)
    if op.promote == FLOAT and dt.category < D.FLOATING:
        dt = D.get_default_dtype()
    return dt


def _fast_pair(dt, other):
    """Result dtype of (tensor of ``dt``, other) in the common cases, else None."""
    t = type(other)
    if t is float:
        return dt if dt.category >= D.FLOATING else None
    if t is int:
        return dt if dt.category >= D.INTEGRAL else None
    if isinstance(other, Tensor) and other._data.dtype == dt.np:
        return dt
    return None


def _slow_result_type(op, args):
    key = []
    try:
        for k, a in enumerate(args[op.promote_from:op.n_tensors], op.promote_from):
            if isinstance(a, Tensor):
                key.append((D._BY_NP[a._data.dtype], D.ZERO_DIM if a._data.ndim == 0 else D.DIM))
            elif isinstance(a, np.generic):  # a NumPy scalar promotes as a Python number
                # (np.bool_ as a float: torch's argument parser reads it as one)
                key.append((D.float64 if type(a) is np.bool_ else D.scalar_dtype(a.item()),
                            D.SCALAR))
            elif isinstance(a, _ndarray):  # beside a tensor (torch takes tensors and numbers)
                raise not_tensor_error(op, k, a)
            elif a is not None:
                key.append((D.scalar_dtype(a), D.SCALAR))
    except TypeError as e:  # (scalar_dtype's refusal of a string, a list...: not a number)
        refuse_non_tensor(op, args, e)
        raise
    return D.result_type_of(tuple(key))


def _arrays(op, args, dt):
    """Kernel arguments: tensors become arrays in the compute dtype; the rest pass through."""
    n = op.n_tensors
    target = None if dt is None else dt.np
    out = list(args)
    for k in range(n):
        a = out[k]
        if isinstance(a, Tensor):
            a = a._data
            if target is not None and a.dtype != target and k >= op.promote_from:
                a = a.astype(scalar_operand_dtype(op, k, a, target))
            out[k] = a
        elif isinstance(a, np.generic):  # a NumPy scalar is a Python number to torch
            out[k] = a.item()
        if type(out[k]) is int and target is not None and target.kind in "iu":
            out[k] = wrapped_int(out[k], target)
    return out


def scalar_operand_dtype(op, k, a, target):
    """The dtype ``a``, the ``k``-th operand, is cast to for a kernel computing in
    ``target``: ``target``, except a 0-dim other operand of mul or div (numbers_in_opmath)
    of a float16 or bfloat16 computation, which torch's kernel reads as a scalar in float32
    (TensorIterator's original_scalar_value: ``half * tensor(0.158)`` is not rounded twice).
    (bfloat16 kernels run in float32 and round once, see opmath.call; a float16 one does
    where it takes its numbers as weak scalars: mul's and div's in_own_dtype.)"""
    if (k == 1 and a.ndim == 0 and op.numbers_in_opmath
            and (target in D.REDUCED_NP or target == _HALF and op.weak_scalars)):
        return _SINGLE
    return target


_INT_RANGES: dict = {}


def wrapped_int(value, target):
    """A Python int operand of an integer op as torch passes it: converted to the compute
    dtype with wrap-around (``int8 tensor + 200`` adds -56), where NumPy would refuse it."""
    bounds = _INT_RANGES.get(target)
    if bounds is None:
        info = np.iinfo(target)
        bounds = _INT_RANGES[target] = (int(info.min), int(info.max))
    if bounds[0] <= value <= bounds[1]:
        return value
    if not -2**63 <= value < 2**64:
        raise OverflowError("int too big to convert")
    # (a Python int in range: it serves host and GPU operands alike)
    return int(np.array(value & (2**64 - 1), np.uint64).astype(target))


def _tensor_call(op, args):
    call = op.caller
    if call is None:
        call = tensor_caller(op)
    return call(args)


def tensor_caller(op):
    """``op.caller``, generated on first use: the one place that makes it, so that whoever
    wraps it for a while (autocast) puts back the whole path (the versions torch's kernel
    shows included, see _compile_caller), never a part that would outlive the wrapping.

    NOTE: read from the op's own attributes: while ``__torch_function__`` dispatch is on,
    ``op.caller`` is the path through it (ember.overrides), around this one."""
    call = op.__dict__["caller"]
    if call is None:
        call = op.caller = _compile_caller(op)
    return call


def _generic_showing_writes(op, args):
    """``_tensor_call_generic`` for an op whose kernel writes its results in place (see
    op()'s ``writes``): the versions torch's results show when no autograd layer runs."""
    out = _tensor_call_generic(op, args)
    a0 = args[0]
    if not state.inference and (not isinstance(a0, Tensor) or a0._is_inference):
        show_writes(op, args, out)
    return out


def show_writes(op, args, out):
    """A call on inference tensors outside inference mode (no autograd layer runs in
    torch): its results show the versions the kernel's in-place writes left. (The first
    operand may be a number: pow's base in ``2 ** x``.)"""
    tensors = [a for a in args[:op.n_tensors] if isinstance(a, Tensor)]
    if tensors and all(a._is_inference for a in tensors):
        writes = op.writes if type(op.writes) in (int, tuple) else op.writes(*args)
        outs = out if isinstance(out, tuple) else (out,)
        for r, w in zip(outs, writes if type(writes) is tuple else (writes,) * len(outs)):
            if isinstance(r, Tensor) and w and not r._is_inference:
                r._vc = [w]


def _compile_caller(op):
    """Generate the Tensor path of one op, unrolled over its tensor inputs.

    NOTE: the generated code does what ``_tensor_call_generic`` does, minus its loops; it
    exists because this path runs once per op call (see ``_compile_recorder``).
    """
    n = op.n_tensors
    if op.n_outputs != 1 or n > 3 or n < 1 or len(op.params) > 8:
        generic = _generic_showing_writes if op.writes else _tensor_call_generic
        return lambda args: generic(op, args)
    lines = ["def caller(args):"]
    if op.check is not None:  # (see _checked_first: the try costs the usual call nothing)
        lines.append("    op.check(*args)")
    # bfloat16 and the limited-support dtypes take the general path (see opmath.py)
    special = " or ".join(f"(isinstance(args[{k}], Tensor) and args[{k}]._data.dtype in SPECIAL)"
                          for k in range(n))
    slow = [f"if {special}:", "    return generic(op, args)",
            "dt = compute_dtype(op, args)", "target = None if dt is None else dt.np"]
    for k in range(n):
        slow += [f"a{k} = args[{k}]",
                 f"if isinstance(a{k}, Tensor):",
                 f"    x{k} = a{k}._data",
                 f"    dt{k} = x{k}.dtype",
                 f"    if target is not None and dt{k} != target"
                 + (f" and {k} >= {op.promote_from}:" if op.promote_from else ":"),
                 f"        x{k} = x{k}.astype(target)" if k != 1 or not op.numbers_in_opmath else
                 f"        x{k} = x{k}.astype(scalar_operand_dtype(op, {k}, x{k}, target))",
                 "else:",
                 f"    x{k} = a{k}.item() if isinstance(a{k}, np_generic) else a{k}",
                 f"    if type(x{k}) is int and target is not None and target.kind in 'iu':",
                 f"        x{k} = wrapped_int(x{k}, target)"]
        if op.weak_scalars:  # (a cached NumPy 0-d array serves host operands only)
            slow += [f"    if target is not None and target.kind == 'f' and "
                     f"(type(x{k}) is float or type(x{k}) is int) and on_host(args, {n}):",
                     f"        x{k} = scalar_array(x{k}, {number_dtype_code(op, 'target')})"]
    fast = _fast_prelude(op)
    # (two tensors found by the fast prelude's first test: recorded without type tests)
    both = fast is not None and n == 2 and "    both = True" in fast
    if both:
        lines.append("    both = False")
    if fast is None:
        lines += ["    " + line for line in slow]
    else:
        lines += ["    " + line for line in fast]
        lines += ["    else:"] + ["        " + line for line in slow]
    xs = [f"x{k}" for k in range(n)] + [f"args[{i}]" for i in range(n, len(op.params))]
    call = [f"out = op.kernel({', '.join(xs)})"]
    if op.quiet:  # (quietly() written out: see _backend/fp_errors.py)
        call = quiet_lines("out = ", "op.bare_kernel", ", ".join(xs))
    lines += ["    try:"] + ["        " + line for line in call]
    lines += ["    except ValueError as e:",
              "        if 'broadcast' in str(e):",
              "            raise (node_error(op, args)",
              f"                   or broadcast_error(args[:{n}])) from None",
              "        raise",
              "    except RuntimeError:  # (torch refuses the node first: see node_error)",
              "        refused = node_error(op, args)",
              "        if refused is not None:",
              "            raise refused from None",
              "        raise",
              "    except TypeError as e:  # (a GPU array refusing a host one)",
              "        again = across_devices(op, args)",
              "        if again is None:",
              "            refuse_non_tensor(op, args, e)",
              "            raise",
              "        return again",
              "    except AttributeError as e:  # (a list op's kernel reading a non-tensor)",
              "        refuse_non_tensor(op, args, e)",
              "        raise",
              "    res = _new(Tensor)",
              # (as_array written out for a NumPy scalar: what a full reduction gives)
              "    if type(out) is not ndarray:",
              "        out = asarray(out) if isinstance(out, np_generic) else as_array(out)",
              "    res._data = out"]
    if op.iterator_layout and n >= 1:  # (see iterator_layout: a flags test when all are C)
        # (C-contiguous inputs give NumPy's and torch's order alike, the C order, unless the
        # result has a dimension of one element: a broadcast input's stride there can order
        # the others (einsum('ij,jk->ki') of a (2, 1) and a (1, 3)); NOTE: the strides of
        # those dimensions themselves are not torch's everywhere. The rank first: a result
        # of one dimension or none has one layout, and costs one test)
        test = "out.ndim > 1 and not (" + " and ".join(
            f"(not hasattr(x{k}, 'flags') or x{k}.flags.c_contiguous)" for k in range(n)) + (
            " and 1 not in out.shape)")
        lines[-1:-1] = [f"    if {test}:",
                        f"        out = iterator_layout(out, ({', '.join(xs[:n])},))"]
    if op.view == "maybe":
        lines.append("    _mark_views(op, args, (res,))")
    elif op.view:  # (_mark_views written out for one output that is always a view)
        lines += ["    if args[0]._is_inference:", "        _mark_views(op, args, (res,))",
                  "        grad = state.grad_enabled",
                  "    else:", "        grad = mark_view(op, args[0], res, args, None)"]
    # (mark_view read the grad mode: a per-thread read costs as much as several attributes)
    lines.append("    if grad:" if op.view and op.view != "maybe" else "    if state.grad_enabled:")
    if op.differentiable:
        cond = " or ".join(f"(isinstance(a{k}, Tensor) and a{k}._requires_grad)"
                           for k in range(n))
        # record() written out for the usual case (no anomaly mode, no saved tensor hooks),
        # with the recorder's own lines (see _recorder_lines; grad() and _saved_slot make
        # the caller again when what a node saves changes)
        plain = ["            if record_extras[0] and (state.anomaly or state.saved_hooks):",
                 "                record(op, args, (res,))", "            else:"]
        if both:  # (the recorder's lines for two tensors, then for the rest)
            lines += ["        if both:", "            if a0._requires_grad or a1._requires_grad:"]
            lines += ["    " + line for line in plain + ["                r = res"]]
            lines += ["                " + line
                      for line in _recorder_lines(op, "a0", inline=True, tensors=(0, 1))]
            lines += [f"        elif {cond}:"] + plain
        else:
            lines += [f"        if {cond}:"] + plain
        if _records_inline(op):
            lines += ["                r = res"]
            lines += ["            " + line for line in _recorder_lines(op, "a0", inline=True)]
        else:
            lines += ["                record(op, args, (res,))"]
    else:
        lines.append("        pass")
    # (in inference mode a view of a normal tensor is a normal tensor, as torch's)
    made = "    elif state.inference and res._base is None:" if op.view else "    elif state.inference:"
    lines += [made, "        res._is_inference = True"]
    if op.writes:  # (_generic_showing_writes' check written out)
        lines += ["    if (not isinstance(a0, Tensor) or a0._is_inference) and not state.inference:",
                  "        show_writes(op, args, res)"]
    lines.append("    return res")
    if op.check is not None:
        lines = _checked_first(lines)
    scope = {"op": op, "check": op.check, "compute_dtype": compute_dtype, "Tensor": Tensor,
             "refuse_non_tensor": refuse_non_tensor,
             "kernel": op.kernel, "broadcast_error": broadcast_error,
             "iterator_layout": iterator_layout,
             "node_error": node_error, "_new": object.__new__,
             "ndarray": _ndarray, "as_array": as_array, "asarray": np.asarray,
             "_mark_views": _mark_views,
             "mark_view": _views.mark_view,
             "state": state, "record": record, "np_generic": np.generic,
             "record_extras": record_extras,
             "inside": inside, "quiet_context": quiet_context,
             "wrapped_int": wrapped_int, "on_host": on_host, **SCALAR_SCOPE,
             "scalar_operand_dtype": scalar_operand_dtype,
             "across_devices": across_devices, "SPECIAL": _SPECIAL,
             "FLOATS": _FLOATS, "NATIVE": D.NATIVE_NP, "NATIVE_FLOAT": D.NATIVE_FLOAT_NP,
             "generic": _generic_showing_writes if op.writes else _tensor_call_generic,
             "show_writes": show_writes, **_recorder_scope(op)}
    exec(compile("\n".join(lines), GENERATED, "exec"), scope)  # noqa: S102 - the op's own code
    return scope["caller"]


def _fast_prelude(op):
    """Generated code for the calls that need no promotion (no cast, no dtype lookup).

    One tensor of an op that never promotes, tensors of one dtype, or a float tensor with a
    Python number: the compute dtype is the tensor's own. Ends in an open ``if``/``elif``
    chain; the caller adds the general ``else``. Each branch leaves a tensor argument's array
    in ``x<k>`` and its dtype in ``dt<k>`` (the recorder's lines read them, see
    _recorder_lines), as the general path does; a branch that found two tensors sets
    ``both`` (the caller records them without type tests).
    """
    if op.promote == NONE and op.n_tensors == 1:  # (view ops, reductions, ...: no dtype)
        return ["a0 = args[0]",
                "if isinstance(a0, Tensor) and (dt0 := (x0 := a0._data).dtype) not in SPECIAL:",
                "    pass"]
    if op.promote == NONE and op.n_tensors == 2:  # (mv, mm, ...: two tensors as they are)
        return ["a0 = args[0]", "a1 = args[1]",
                "if isinstance(a0, Tensor) and isinstance(a1, Tensor) and "
                "(dt0 := (x0 := a0._data).dtype) not in SPECIAL and "
                "(dt1 := (x1 := a1._data).dtype) not in SPECIAL:",
                "    both = True"]
    if op.promote not in (SAME, FLOAT) or op.promote_from or op.n_tensors > 2:
        return None
    kinds = "FLOATS" if op.promote == FLOAT else "NATIVE"
    lines = ["a0 = args[0]"]
    if op.n_tensors == 1:
        return lines + [f"if isinstance(a0, Tensor) and (dt0 := (x0 := a0._data).dtype) in {kinds}:",
                        "    pass"]
    scalar = (f"{cached_scalar('a1', number_dtype_code(op, 'dt0'))} if type(x0) is ndarray "
              "else a1" if op.weak_scalars else "a1")
    return lines + [
        "a1 = args[1]",
        f"if isinstance(a0, Tensor) and isinstance(a1, Tensor) and "
        f"(dt0 := (x0 := a0._data).dtype) == (dt1 := (x1 := a1._data).dtype) and dt0 in {kinds}:",
        "    both = True",
        "elif isinstance(a0, Tensor) and (type(a1) is float or type(a1) is int) and "
        "(dt0 := (x0 := a0._data).dtype) in NATIVE_FLOAT:",
        f"    x1 = {scalar}"]


class _ScalarCache(dict):
    """scalar_array's cache of one dtype: ``_SCALARS[dtype][value]`` gives the array, made
    (and kept, as scalar_array keeps it) on a miss: generated code reads it by two
    subscripts, no call (and no key tuple: a third cheaper than ``[value, dtype]``)."""

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def __missing__(self, value):
        return scalar_array(value, self.dtype)


class _ScalarCaches(dict):
    """The dtypes' caches, each made on its first read."""

    def __missing__(self, dtype):
        cache = self[dtype] = _ScalarCache(dtype)
        return cache


_SCALARS = _ScalarCaches()


def on_host(args, n):
    """Whether the tensors among the first ``n`` arguments hold NumPy arrays."""
    return all(type(a._data) is _ndarray for a in args[:n] if isinstance(a, Tensor))


def number_dtype(op, dtype):
    """The dtype a weak scalar of ``op`` is held in for a compute dtype ``dtype``: float32
    for float16 where the op computes with the number in torch's opmath type (see
    OpDef.numbers_in_opmath), else ``dtype``."""
    return _SINGLE if op.numbers_in_opmath and dtype == _HALF else dtype


def number_dtype_code(op, dtype):
    """number_dtype(op, ``dtype``) as generated code (``dtype``: the expression); its scope
    needs SCALAR_SCOPE."""
    return f"(SINGLE if {dtype} == HALF else {dtype})" if op.numbers_in_opmath else dtype


def scalar_array(value, dtype):
    """A read-only 0-d array holding the Python number ``value`` in ``dtype``, cached.

    Zero and NaN are never cached (0.0 == -0.0 and nan != nan as dict keys), and the cache is
    bounded, since a schedule may feed a new number every step. A float16 one is rounded to
    float32 first, as torch converts a number to Half (through a float).
    """
    cache = _SCALARS[dtype]
    arr = cache.get(value)
    if arr is None:
        with np.errstate(all="ignore"):
            arr = np.asarray(np.float32(value) if dtype == _HALF else value, dtype)
        if value == 0 or value != value:
            return arr
        if len(cache) > 256:
            cache.clear()
        arr.flags.writeable = False
        cache[value] = arr
    return arr


def cached_scalar(value, dtype):
    """Generated code giving ``scalar_array(value, dtype)`` (``value`` and ``dtype``: the
    expressions), its cache read written out: a number a program uses again, as a learning
    rate or a constant factor is, costs no call. The code's scope needs SCALAR_SCOPE."""
    return f"scalars[{dtype}][{value}]"


def cached_scalar_lines(target, value, dtype):
    """``cached_scalar`` as a statement assigning ``target``."""
    return [f"{target} = {cached_scalar(value, dtype)}"]


SCALAR_SCOPE = {"scalars": _SCALARS, "scalar_array": scalar_array, "HALF": _HALF,
                "SINGLE": _SINGLE}


def _checked_first(lines):
    """Generated ``lines`` (a def, the op's check, then a body that returns) with the check
    in a try whose refusal of a non-tensor becomes torch's TypeError (refuse_non_tensor).

    NOTE: the try on the check's line and the body in its ``else``: CPython 3.11 then adds
    no instruction to the usual call (a try on a line of its own runs a NOP, and a body
    after the handlers a jump over them)."""
    assert lines[1] == "    op.check(*args)"
    handler = ["    try: op.check(*args)", "    except (AttributeError, TypeError) as e:",
               "        refuse_non_tensor(op, args, e)", "        raise",
               "    except RuntimeError:  # (torch refuses the node first: see node_error)",
               "        refused = node_error(op, args)",
               "        if refused is not None:",
               "            raise refused from None",
               "        raise", "    else:"]
    return lines[:1] + handler + ["    " + line for line in lines[2:]]


def _tensor_call_generic(op, args):
    if op.check is not None:
        try:
            op.check(*args)
        except (AttributeError, TypeError) as e:
            refuse_non_tensor(op, args, e)
            raise
        except RuntimeError:  # (torch refuses the node first: see node_error)
            refused = node_error(op, args)
            if refused is not None:
                raise refused from None
            raise
    dt = compute_dtype(op, args)
    special = opmath.special_dtype(op, args)
    try:
        if special is None:
            out = op.kernel(*_arrays(op, args, dt))
        else:
            opmath.check_limited(op, special if dt is None else dt, args)
            out = opmath.call(op, _arrays(op, args, dt))
    except ValueError as e:
        if "broadcast" in str(e):
            raise (node_error(op, args)
                   or broadcast_error(args[:op.n_tensors])) from None
        raise
    except RuntimeError:  # (torch refuses the node first: see node_error)
        refused = node_error(op, args)
        if refused is not None:
            raise refused from None
        raise
    except TypeError as e:  # (a GPU array refusing a host one)
        again = across_devices(op, args)
        if again is None:
            refuse_non_tensor(op, args, e)  # (a kernel refusing None: add(x, None))
            raise
        return again
    except AttributeError as e:  # (a list op's kernel reading a non-tensor)
        refuse_non_tensor(op, args, e)
        raise
    if op.n_outputs == 1:
        if op.iterator_layout and op.n_tensors >= 1 and getattr(out, "ndim", 0) > 1:
            out = iterator_layout(out, [a._data if isinstance(a, Tensor) else a
                                        for a in args[:op.n_tensors]])
        res = _wrap(out if type(out) is _ndarray else as_array(out))
        results = (res,)
    else:
        results = tuple(_wrap(as_array(o)) for o in out)
    if op.view:
        _mark_views(op, args, results)
    if state.grad_enabled:
        if op.differentiable:
            for k in range(op.n_tensors):
                a = args[k]
                if isinstance(a, Tensor) and a._requires_grad:
                    record(op, args, results)
                    break
    elif state.inference:
        for r in results:
            if r._base is None:  # (a view has its base's kind: see _mark_views)
                r._is_inference = True
    if op.n_outputs == 1:
        return res
    return op.result_type(*results) if op.result_type else results


def across_devices(op, args, inplace=False):
    """A call whose kernel refused its operands, looked at for devices: torch's error when
    its tensors are on different devices, or the call again with its 0-dim CPU tensors
    copied to the others' device (torch lets them mix). None when devices are not the
    problem."""
    tensors = [a for a in args[:op.n_tensors] if isinstance(a, Tensor)]
    if any(type(t._data) is CooArray for t in tensors):  # a sparse operand: its own route
        from .sparse import route
        return route(op, args, inplace)
    devices = [t.device for t in tensors]
    if any(d.type == "meta" for d in devices):
        return _across_meta(op, args, tensors, devices, inplace)
    common = next((d for d in devices if d.type != "cpu"), None)
    if common is None or all(d == common for d in devices):
        return None
    for t, d in zip(tensors, devices):
        if d != common and not (d.type == "cpu" and t._data.ndim == 0 and t is not args[0]):
            raise RuntimeError("Expected all tensors to be on the same device, but found at "
                               f"least two devices, {common} and {d}!")
    # NOTE: the copy is differentiable, so a 0-dim CPU input's gradient comes back to the
    # CPU through a ToCopyBackward0 node (torch's graph has no such node).
    moved = tuple(a.to(common) if isinstance(a, Tensor) and a._data.ndim == 0
                  and type(a._data) is _ndarray and k < op.n_tensors else a
                  for k, a in enumerate(args))
    return op.inplace(*moved) if inplace else op(*moved)


def _across_meta(op, args, tensors, devices, inplace):
    """``across_devices`` where meta tensors are among the operands: torch expects every
    tensor on the first one's device (0-dim tensors excepted, which are moved there)."""
    if inplace and devices[0].type == "meta":  # (torch writes nothing, so takes any operand)
        moved = tuple(a.to(devices[0]) if isinstance(a, Tensor) else a for a in args)
        return op.inplace(*moved)
    # (0-dim CPU tensors count as numbers, wherever they stand)
    expected = next((d for t, d in zip(tensors, devices)
                     if d.type != "cpu" or t._data.ndim), devices[0])
    if all(d == expected for d in devices):
        return None
    for t, d in zip(tensors, devices):
        if d != expected and not (t._data.ndim == 0 and (d.type == "cpu" or t is not args[0])):
            raise RuntimeError(f"Tensor on device {d} is not on the expected device "
                               f"{expected}!")
    moved = tuple(a.to(expected) if isinstance(a, Tensor) and k < op.n_tensors else a
                  for k, a in enumerate(args))
    return op.inplace(*moved) if inplace else op(*moved)


def run_inplace(op, call, args):
    """``call(args)``, an in-place call of ``op``, with torch's handling of devices."""
    try:
        return call(args)
    except TypeError as e:  # (a GPU array refusing a host one)
        again = inplace_across_devices(op, args, e)
        if again is None:
            raise
        return again


def inplace_across_devices(op, args, error):
    """What ``run_inplace`` does when its call raised the TypeError ``error``: the call again
    across devices, or None (then the caller raises ``error``)."""
    if hasattr(error, "method_form"):  # (an ndarray operand: x.add_(a) is a method call)
        raise as_method(error, op.name + "_") from None
    again = across_devices(op, args, inplace=True)
    if again is None:
        try:  # (a kernel refusing None or another non-tensor: x.sub_(None))
            refuse_non_tensor(op, args, error)
        except TypeError as refusal:
            raise as_method(refusal, op.name + "_") from None
    return again


def broadcast_error(operands):
    """torch's message for operands whose shapes don't broadcast."""
    return shapes_broadcast_error([a.shape for a in operands
                                   if isinstance(a, Tensor) or is_array(a)])


def shapes_broadcast_error(shapes):
    """torch's message (infer_size's) for shapes that don't broadcast."""
    result = tuple(shapes[0])
    for shape in shapes[1:]:
        n = max(len(result), len(shape))
        a = (1,) * (n - len(result)) + tuple(result)
        b = (1,) * (n - len(shape)) + tuple(shape)
        for i in range(n - 1, -1, -1):
            if a[i] != b[i] and 1 not in (a[i], b[i]):
                return RuntimeError(f"The size of tensor a ({a[i]}) must match the size of "
                                    f"tensor b ({b[i]}) at non-singleton dimension {i}")
        result = tuple(x if x != 1 else y for x, y in zip(a, b))
    return RuntimeError("shapes " + " and ".join(str(list(s)) for s in shapes) +
                        " cannot be broadcast together")


def _mark_views(op, args, results):
    base = args[0]
    multi = op.n_outputs != 1
    if base._is_inference:
        # torch: an inference tensor has no autograd metadata, so what a view op makes of it
        # shares its memory but is no view (no _base, no version counter): another inference
        # tensor, in inference mode or not
        for k, r in enumerate(results):
            if op.view != "maybe" or np.may_share_memory(r._data, base._data):
                r._is_inference = True
            if op.view is True and r._data.size == 0:
                r._data = _views.placed(op, base._data, r._data, args, k if multi else None)
        return
    for k, r in enumerate(results):
        if op.view == "maybe" and not np.may_share_memory(r._data, base._data):
            continue
        _views.mark_view(op, base, r, args, k if multi else None)


def _edge(t):
    # (the generated recorders have this written out: see _compile_recorder)
    if t._base is not None:
        _views.refresh(t)
    fn = t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return NO_EDGE


def record(op, args, results, snapshot=None):
    """Create the backward node for a call and attach it to the differentiable outputs."""
    fast = op.recorder
    if fast is None:
        fast = op.recorder = _compile_recorder(op)
    node = fast(args, results, snapshot)
    if record_extras[0]:  # (some thread has anomaly mode on or saved tensor hooks)
        if state.anomaly:
            node._trace = traceback.format_stack()[:-3]
        if state.saved_hooks:
            _pack_saved(node, op, results)
    return node


def record_all(op, args, results):
    """A node that saves every value its formulas may use, whatever requires grad, and that
    no saved tensor hook sees: forward AD runs the formulas of inputs that only carry a
    tangent."""
    return _record_generic(op, args, results, None, guarded=False)


def _pack_saved(node, op, results):
    """Saved tensor hooks are active: the innermost pack hook replaces each saved tensor."""
    hooks = state.saved_hooks[-1]
    saved, vers = list(node._saved), list(node._vers)
    diff = op.diff_outputs
    for j, kind, idx in op.unpack_plan:
        if kind == INPUT:
            value = saved[j]
            if not isinstance(value, Tensor):  # not saved (see _save_guards), or a number
                continue
            saved[j] = pack_saved(value, hooks)
        else:
            nr = idx if diff is None or diff[idx] else None
            saved[j] = pack_saved(results[idx], hooks, output_nr=nr)
        vers[j] = None
        node._hooked = True
    node._saved, node._vers = tuple(saved), tuple(vers)


def node_error(op, args):
    """The error torch raises while it makes the node of this call, if it would record one,
    else None: it does so before its kernel runs, so this comes before the kernel's own
    errors (shapes that don't broadcast). Checked only once the kernel has refused: first
    an input whose history may not be read (a view of a multi-output op, or one made in
    no_grad mode, whose base changed in place: torch collects the inputs' edges first), then
    an inference tensor the node would save."""
    if not (state.grad_enabled and op.differentiable):
        return None
    tensors = [a for a in args[:op.n_tensors] if isinstance(a, Tensor)]
    if any(a._requires_grad for a in tensors):
        for a in tensors:
            if a._base is not None and _views.history_refused(a):
                return _views.rebase_error(a, indirect=True)
    return saved_inference_error(op, args)


def saved_inference_error(op, args):
    """torch's refusal to save an inference tensor, if the node of this recorded call would
    save one, else None. torch saves a node's inputs before its kernel runs, so this comes
    before the kernel's own errors (shapes that don't broadcast), and before any write."""
    if not (state.grad_enabled and op.differentiable):
        return None
    tensors = [a for a in args[:op.n_tensors] if isinstance(a, Tensor)]
    if not any(a._is_inference for a in tensors) or not any(a._requires_grad for a in tensors):
        return None
    guards = _guards(op)
    for j, (kind, i) in enumerate(op.saved_spec):
        a = args[i] if kind == INPUT else None
        if not (isinstance(a, Tensor) and a._is_inference):
            continue
        k = guards.get(j)
        if k is None or (isinstance(args[k], Tensor) and args[k]._requires_grad):
            return None if inference_save_allowed[0](args) else RuntimeError(ERR_INFERENCE_SAVE)
    return None


def _guards(op):
    guards = op.save_guards
    if guards is None:
        guards = op.save_guards = _save_guards(op)
    return guards


def _save_guards(op):
    """``{slot: input}`` for saved inputs that only one input's gradient formula uses: they are
    saved only when that input needs a gradient, as torch's generated code does (MulBackward0
    saves ``self`` only when ``other`` requires grad). Same rules as torch's ``guard_for``: not
    for list ops, ``*_backward`` ops, ops with one differentiable input, or values that several
    formulas (or one formula of several inputs) use."""
    if getattr(op, "list_op", False) or "backward" in op.name:
        return {}
    if len({i for inputs, _, _ in op.formulas for i in inputs}) <= 1:
        return {}
    guards = {}
    for j, (kind, _) in enumerate(op.saved_spec):
        if kind != INPUT:
            continue
        users = [inputs for inputs, _, env_idx in op.formulas if j in env_idx]
        if len(users) == 1 and len(users[0]) == 1:
            guards[j] = users[0][0]
    return guards


def _compile_recorder(op):
    """Generate ``record`` for one op, unrolled over its inputs and saved values.

    NOTE: this is the hottest code in ember (it runs once per recorded op). Unrolling removes
    the per-input loops and the generic dispatch on what each slot saves; the generated code
    is exactly what the loop in ``_record_generic`` would do for this op. The generated
    Tensor path of the op has the same lines written out (see _compile_caller).
    """
    if not _records_inline(op):
        return lambda args, results, snapshot: _record_generic(op, args, results, snapshot)
    lines = (["def recorder(args, results, snapshot):", "    r = results[0]"]
             + _recorder_lines(op, "snapshot if snapshot is not None else args[0]")
             + ["    return node"])
    scope = _recorder_scope(op)
    exec(compile("\n".join(lines), GENERATED, "exec"), scope)  # noqa: S102 - the op's own code
    return scope["recorder"]


def _records_inline(op):
    """Whether the op's recording is generated (else _record_generic does it)."""
    return op.n_tensors <= 4 and op.n_outputs == 1


class _InternedMetas(dict):
    """``key -> make(key)``, made once per key: the input metadata that nodes share.

    A graph has a ``(shape, dtype)`` pair per input of each node, mostly of a few values; each
    pair or tuple of them a node made itself would be another object the garbage collector
    tracks (a tuple until a collection finds that it holds only untracked values). A lookup
    is a subscript (no call unless the value is new)."""

    KEPT = 4096  # distinct values kept, at most (a program of ever-new shapes starts over)

    def __init__(self, make):
        super().__init__()
        self.make = make

    def __missing__(self, key):
        if len(self) >= self.KEPT:
            self.clear()
        value = self[key] = self.make(key)
        return value


# (shape, dtype) -> ((shape, dtype),): the one pair per value every node's metadata holds, and
# the one-input tuple of it that a node of one tensor input holds as its metadata
_METAS = _InternedMetas(lambda meta: (meta,))
# a shared pair -> (pair, pair): the metadata of a node of two inputs alike (x * y)
_TWICE = _InternedMetas(lambda meta: (meta, meta))


def _recorder_scope(op):
    return {"node_cls": op.node_cls, "number_cls": op.number_cls, "Tensor": Tensor,
            "NO_EDGE": NO_EDGE, "METAS": _METAS, "TWICE": _TWICE,
            "refresh": _views.refresh, "grad_accumulator": grad_accumulator,
            "refuse_inference_save": refuse_inference_save, "param_version": param_version,
            "VERSIONED": VERSIONED,
            "_sequence": _sequence, "_shape_of": _shape_of, "_strides_of": _strides_of,
            "twin": complex_twin(op.node_cls), "REDUCED": D.REDUCED_NP, "op": op,
            "FLOATING": _FLOATING,
            "integer_history": integer_history}


def _recorder_lines(op, first_saved, inline=False, tensors=()):
    """The lines of ``record`` for one op (indented by four spaces), given ``args`` and its
    result ``r``; they leave the node in ``node``. ``first_saved``: what a saved first input
    is (a snapshot taken before an in-place call, or the first argument). ``inline``: the
    lines run inside the op's generated Tensor path, where ``a0``, ``a1``, ... already hold
    the tensor arguments, ``dt0``, ``dt1``, ... the dtypes of those that are tensors and
    ``out`` the result's array, and a one-tensor op's ``a0`` was found to be a Tensor that
    requires grad (so none of it is read again: a NumPy array's ``dtype`` is a call).
    ``tensors``: the positions of the inputs the generated path found to be Tensors (their
    type is not tested again)."""
    lines = ["    node = node_cls()"]
    if op.number_cls is not None:
        numbers = " or ".join(f"not isinstance(args[{k}], Tensor)" for k in range(op.n_tensors))
        lines[0] = f"    node = (number_cls if {numbers} else node_cls)()"
    guards = _save_guards(op)
    saved_inputs = {i for j, (kind, i) in enumerate(op.saved_spec)
                    if kind == INPUT and j not in guards}
    for k in range(op.n_tensors):
        # _edge written out; an input the node saves may not be an inference tensor
        # (checked on the no-edge path only: such a tensor never requires grad)
        no_edge = ([f"            if a{k}._is_inference:",
                    "                refuse_inference_save(args)"]
                   if k in saved_inputs else [])
        # (refresh's first test written out: a view whose base did not change since)
        tensor = [f"    if a{k}._base is not None and a{k}._view_version != a{k}._vc[0]:",
                  f"        refresh(a{k})",
                  f"    fn = a{k}._grad_fn",
                  "    if fn is not None:",
                  f"        e{k} = (fn, a{k}._output_nr)",
                  f"    elif a{k}._requires_grad:",
                  f"        e{k} = (grad_accumulator(a{k}), 0)",
                  "    else:"] + [line[4:] for line in no_edge] + [
                  f"        e{k} = NO_EDGE",
                  f"    d{k} = a{k}._data",
                  # (the input's (shape, dtype), one shared pair per value: see interned_meta)
                  f"    t{k} = METAS[d{k}.shape, {f'dt{k}' if inline else f'd{k}.dtype'}]",
                  f"    m{k} = t{k}[0]"]
        if inline and op.n_tensors == 1:  # (requires grad: an edge to a node, maybe None)
            lines += tensor[:5] + ["    else:", f"        e{k} = (grad_accumulator(a{k}), 0)"]
            lines += tensor[-3:]
            continue
        if k in tensors:
            lines += tensor
            continue
        lines += ([f"    a{k} = args[{k}]"] if not inline else [])
        lines += ([f"    if isinstance(a{k}, Tensor):"] + ["    " + line for line in tensor]
                  + ["    else:", f"        e{k} = NO_EDGE", f"        m{k} = None"])
    edges = ", ".join(f"e{k}" for k in range(op.n_tensors))
    metas = ", ".join(f"m{k}" for k in range(op.n_tensors))
    if op.n_tensors == 1 and (inline or 0 in tensors):
        metas = "t0"  # (the one tensor input's shared one-pair tuple)
    elif op.n_tensors == 2:  # (two inputs alike share their two-pair tuple too)
        metas = f"TWICE[m0] if m0 is m1 else ({metas},)"
    else:
        metas = f"({metas},)"
    lines += [f"    node._next = ({edges},)", f"    node._meta = {metas}",
              "    node._seq = next(_sequence)"]
    saved, vers = [], []
    for j, (kind, i) in enumerate(op.saved_spec):
        if kind == INPUT:
            lines += _save_input_lines(j, i, guards.get(j), i in saved_inputs,
                                       first_saved if i == 0 else
                                       f"a{i}" if inline else f"args[{i}]",
                                       (inline and op.n_tensors == 1) or i in tensors)
        elif kind == RESULT:
            lines += ["    vc = r._vc", "    if vc is None:",
                      "        vc = r._vc = [0]", f"    s{j} = (r._data, vc)", f"    v{j} = vc[0]"]
        elif kind == PARAM and i in op.checked_params:
            lines += [f"    s{j} = args[{i}]", f"    v{j} = None",
                      f"    if type(s{j}) in VERSIONED: v{j} = param_version(s{j})"]
        elif kind == PARAM:
            lines += [f"    s{j} = args[{i}]"]
        elif kind == SHAPE and i < op.n_tensors:  # (the shape its edge's metadata holds)
            lines += [f"    s{j} = m{i}[0]" if (inline and op.n_tensors == 1) or i in tensors else
                      f"    s{j} = _shape_of(args[{i}]) if m{i} is None else m{i}[0]"]
        elif kind == SHAPE:
            lines += [f"    s{j} = _shape_of(args[{i}])"]
        elif kind == STRIDES and i < op.n_tensors:  # (the array its edge's metadata read)
            lines += [f"    s{j} = d{i}.strides" if (inline and op.n_tensors == 1) or i in tensors else
                      f"    s{j} = _strides_of(args[{i}]) if m{i} is None else d{i}.strides"]
        elif kind == STRIDES:
            lines += [f"    s{j} = _strides_of(args[{i}])"]
        else:
            lines += [f"    s{j} = tuple(_shape_of(a) for a in args[:{op.n_tensors}])"]
        saved.append(f"s{j}")
        versioned = kind in (INPUT, RESULT) or (kind == PARAM and i in op.checked_params)
        vers.append(f"v{j}" if versioned else "None")
    if saved:
        # tuples, not lists: the collector untracks one holding no tensor (versions, shapes,
        # numbers), and the versions of slots that never have one are one shared constant
        lines += [f"    node._saved = ({', '.join(saved)},)",
                  f"    node._vers = ({', '.join(vers)},)"]
    differentiable = op.diff_outputs is None or op.diff_outputs[0]
    result_dtype = "    rdt = out.dtype" if inline else "    rdt = r._data.dtype"
    attach = ["        r._grad_fn = node", "        r._output_nr = 0",
              "        r._requires_grad = True"]
    if inline:  # (a new tensor: its output number is already the class's 0)
        del attach[1]
    # (an integer or bool result, which nothing attaches to, may still be refused)
    integer = ["    elif not r._requires_grad and r is not args[0]:",
               "        integer_history(op, args, r, node)"]
    # (a set lookup for the usual floating dtypes first: a dtype's ``kind`` is a call)
    if differentiable and op.complex_grad:
        lines += [result_dtype, "    if rdt in FLOATING or rdt.kind in 'fc' or rdt in REDUCED:"
                  ] + attach + integer
    elif differentiable:
        lines += [result_dtype, "    if rdt in FLOATING:"] + attach
        lines += ["    elif (kind := rdt.kind) == 'f' or rdt in REDUCED:"] + attach
        lines += ["    elif kind == 'c':", "        node.__class__ = twin"] + attach + integer
    return lines


def _save_input_lines(j, i, guard, edge_checked, src, tensor=False):
    """Recorder lines saving input ``i`` (the value ``src``) in slot ``j`` (only if input
    ``guard`` has an edge, when it is not None). ``edge_checked``: the edge code already
    refused an inference tensor. ``tensor``: ``src`` is known to be a Tensor."""
    # (a tensor without a version counter was never written: its version is 0, and it gets
    # a counter at its first write or view, which unpacking reads; the node keeps the tensor)
    body = [f"s{j} = {src}",
            f"if isinstance(s{j}, Tensor):",
            f"    vc = s{j}._vc",
            f"    v{j} = 0 if vc is None else vc[0]",
            "else:",
            f"    v{j} = None"]
    if not edge_checked:
        body[2:2] = [f"    if e{i} is NO_EDGE and s{j}._is_inference:",
                     "        refuse_inference_save(args)"]
    if tensor:
        body = [body[0]] + [line[4:] for line in body[2:-2]]
    if guard is None:
        return ["    " + line for line in body]
    return ([f"    if e{guard} is not NO_EDGE:"] + ["        " + line for line in body]
            + ["    else:", f"        s{j} = None", f"        v{j} = None"])


class IndexKey(tuple):
    """An index key (``x[i, mask]``) with arrays read from tensors, which ``tensors`` holds: an
    op declaring the key ``checked`` keeps their versions and checks them at backward, as torch
    checks the index tensors it saves."""

    tensors = ()


def index_key(parts, tensors):
    key = IndexKey(parts)
    key.tensors = tuple(tensors)
    return key


# What a checked plain argument may hold that has a version (see param_version).
VERSIONED = (Tensor, IndexKey)


def _shape_of(a):
    return a._data.shape if isinstance(a, Tensor) else np.shape(a)


def _strides_of(a):
    """An input's strides in bytes at the call (mm's gradient follows its layout)."""
    return a._data.strides if isinstance(a, Tensor) else a.strides


def _record_generic(op, args, results, snapshot, guarded=True):
    n = op.n_tensors
    node = (op.number_cls if op.number_cls is not None and not all(
        isinstance(a, Tensor) for a in args[:n]) else op.node_cls)()
    nxt, meta = [], []
    for k in range(n):
        a = args[k]
        if isinstance(a, Tensor):
            nxt.append(_edge(a))
            d = a._data
            meta.append(_METAS[d.shape, d.dtype][0])
        else:
            nxt.append(NO_EDGE)
            meta.append(None)
    node._next = tuple(nxt)
    node._meta = tuple(meta)
    node._seq = next(_sequence)
    if op.saved_spec:
        _save(node, op, args, results, snapshot, guarded)
    if op.n_outputs != 1:
        node._out_meta = tuple((r._data.shape, r._data.dtype) for r in results)
    diff = op.diff_outputs
    for k, r in enumerate(results):
        if (diff is None or diff[k]) and (r._data.dtype.kind in "fc"
                                          or r._data.dtype in D.REDUCED_NP):
            r._grad_fn = node
            r._output_nr = k
            r._requires_grad = True
            if r._data.dtype.kind == "c" and not op.complex_grad:
                node.__class__ = complex_twin(op.node_cls)
        elif (diff is None or diff[k]) and r is not args[0]:
            integer_history(op, args, r, node)
    return node


def integer_history(op, args, result, node):
    """An integer or bool result of a recorded call: of an integer tensor that requires grad
    (``int_tensor[...] = w`` with w requiring grad, see inplace.dispatch_inplace), or of a
    float one through a ``dtype=`` (``x.sum(dtype=torch.int64)``). torch's set_history
    refuses to give the result a history, so such calls are refused (a conversion,
    ``x.long()``, gives a result without history); but a view of an integer tensor
    regenerated after an in-place change (torch's as_strided node, made without that check)
    gets its node."""
    for a in args[:op.n_tensors]:
        if isinstance(a, Tensor) and a._requires_grad:
            if op.name == "_to_copy" and (a._data.dtype.kind in "fc"
                                          or a._data.dtype in D.REDUCED_NP):
                return
            if op.name == "_view_of_base" and (a._data.dtype.kind not in "fc"
                                               and a._data.dtype not in D.REDUCED_NP):
                result._grad_fn, result._output_nr, result._requires_grad = node, 0, True
                return
            raise RuntimeError("Autograd not support dtype: "
                               f"{D._BY_NP[result._data.dtype].scalar_name}")


def _save(node, op, args, results, snapshot, guarded):
    saved, vers = [], []
    guards = _guards(op)
    nxt = node._next
    for j, (kind, i) in enumerate(op.saved_spec):
        v = None
        if kind == INPUT:
            a = snapshot if (i == 0 and snapshot is not None) else args[i]
            k = guards.get(j) if guarded else None
            if k is not None and nxt[k][0] is None:
                a = None  # only input k's gradient needs it, and input k needs none
            if isinstance(a, Tensor):
                if a._is_inference:
                    refuse_inference_save(args)
                vc = a._vc  # (None: never written, see _save_input_lines)
                v = 0 if vc is None else vc[0]
            saved.append(a)
        elif kind == RESULT:
            r = results[i]
            vc = r._vc
            if vc is None:
                vc = r._vc = [0]
            # a differentiable output is kept as its array (the tensor would hold this node:
            # a cycle); another one as the tensor itself (see unpack_data_output)
            saved.append((r._data, vc) if op.diff_outputs is None or op.diff_outputs[i] else r)
            v = vc[0]
        elif kind == PARAM:
            a = args[i]
            saved.append(a)
            if i in op.checked_params and type(a) in VERSIONED:
                v = param_version(a)
        elif kind == SHAPE:
            saved.append(_shape_of(args[i]))
        elif kind == STRIDES:
            saved.append(_strides_of(args[i]))
        else:
            saved.append(tuple(_shape_of(a) for a in args[:op.n_tensors]))
        vers.append(v)
    node._saved = tuple(saved)
    node._vers = tuple(vers)


def _with_slot(values, j, value):
    """A node's saved values (or their versions: a tuple) with slot ``j`` holding ``value``."""
    return values[:j] + (value,) + values[j + 1:]


from . import views as _views  # noqa: E402  (views declares ops through this module)
from .inplace import _compile_inplace  # noqa: E402  (the in-place path builds on this one)
