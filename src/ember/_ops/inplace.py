"""The in-place path: ``self.<op>_(...)`` computes, writes into self, bumps its version and
rebases its history (a view's base gets a CopySlices node).

``dispatch_inplace`` is the general path, with every check torch makes. ``inplace_method``
goes to a generated caller per op (``_compile_inplace``) that handles the usual update (a
plain tensor, an operand of its dtype or a Python number, no view, no overlap) without the
general path's calls, and hands everything else to ``dispatch_inplace``.
"""
from __future__ import annotations

import os
import sys
import warnings
import weakref

import numpy as np

from . import opmath
from .. import _dtype as D
from .._backend import data_address, get_xp, write_bit_values
from .._sparse.coo import CooArray
from .._state import (captured_write_check, forward_hook, intercepted, profiler_hook, state,
                      vmap_hook)
from .._tensor import DetachedCounter, Tensor, _wrap, shared_counter
from .._backend.fp_errors import inside, quiet_context, quiet_lines, quietly
from ..autograd.graph import follow_base, move_retained_grad, refuse_inference_save
from .registry import (FLOAT, GENERATED, INPUT, OPERANDS, RESULT, SAME, SCALAR_SCOPE, _MISSING,
                       method_failed,
                       PYTHON_NUMBERS, _arrays, _guards, broadcast_error, cached_scalar,
                       cached_scalar_lines, compute_dtype, number_dtype, scalar_array,
                       _with_slot, inplace_across_devices, number_dtype_code, plain_call_lines,
                       plain_operands, record, run_inplace)

_ndarray = np.ndarray
_LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
_VIEW_LEAF_INPLACE = ("a view of a leaf Variable that requires grad is being used in an "
                      "in-place operation.")


def check_inplace(self, recording):
    """torch's refusals for in-place ops on leaves that require grad (and views of them), in
    torch's order: a view that may not be rebased, a view of a leaf, a leaf."""
    if not recording:
        return
    base = self._base
    if base is not None:
        _views.check_view_inplace(self)
        if self._requires_grad and base._grad_fn is None:
            raise RuntimeError(_VIEW_LEAF_INPLACE)
    if self._grad_fn is None and self._requires_grad:
        raise RuntimeError(_LEAF_INPLACE)




def dispatch_inplace(op, args):
    """``self.<op>_(...)``: compute, write into self, bump its version, rebase its history.

    Refusals in torch's order: autograd's (a view that may not be modified, a leaf), then the
    kernel's argument checks (overlap, then shapes and dtypes), and only at the version bump,
    after the write, an inference tensor outside inference mode."""
    self = args[0]
    if not isinstance(self, Tensor):
        raise TypeError(f"{op.name}_(): argument 'self' must be Tensor, not "
                        f"{type(self).__name__}")
    check = captured_write_check[0]
    if check is not None:  # a torch.func transform runs its function (func/_captures.py)
        check(op, args)
    vm = vmap_hook[0]
    if vm is not None and vm.takes(op, args):  # a BatchedTensor argument: its batching rule
        return vm.dispatch_inplace(op, args)
    fw = forward_hook[0]
    if fw is not None:  # a forward AD level is active: the hook updates tangents too
        return fw.dispatch_inplace(op, args)
    # NOTE: as torch's, an integer or bool self joins the graph when what it is given requires
    # grad (``int_tensor[...] = w`` is fill_, index_put_ or masked_fill_, which record whatever
    # self's dtype), except through copy_ (``int_tensor[0:1] = w`` with w of the slice's
    # shape stays a plain tensor). Most ops then refuse it (registry's set_history check).
    refusal = _argument_refusal(op, args)
    recording = (state.grad_enabled and op.differentiable
                 and (op.name != "copy" or self._data.dtype.kind in "fc"
                      or self._data.dtype in D.REDUCED_NP)
                 and _any_requires_grad(op, args))
    check_inplace(self, recording)
    if (not recording and self._base is not None and (self._view_no_grad or self._view_inference)
            and state.grad_enabled
            and self._base._requires_grad):
        _views.check_view_inplace(self)
    if recording:
        _refresh_operands(op, args)
        _refuse_saved_inference(op, args)
    if refusal is not None:
        raise refusal
    if "_phys" in self.__dict__:  # a conjugate (or negative) view: written through
        return _write_through_bits(op, args, recording)
    hook = profiler_hook[0]
    if hook is not None:
        with hook(op.aten + "_", args):
            return _inplace_call(op, args, recording)
    return _inplace_call(op, args, recording)


def _write_through_bits(op, args, recording):
    """An in-place op on a tensor with torch's conjugate or negative bit: the op reads and
    writes one array of its values (every read of ``_data`` in the op is that array), which
    is then written back into its memory with the bits undone, as torch writes through a
    conjugate view (``x.conj().add_(1)`` adds 1 to ``x``)."""
    self = args[0]
    d = self.__dict__
    values = d["_data"] = self._data
    try:
        hook = profiler_hook[0]
        if hook is not None:
            with hook(op.aten + "_", args):
                return _inplace_call(op, args, recording)
        return _inplace_call(op, args, recording)
    finally:
        del d["_data"]
        write_bit_values(d["_phys"], values, d.get("_conj_bit", False), d.get("_neg_bit", False))


def _refresh_operands(op, args):
    """Regenerate the history of operands that are views of a base changed in place since,
    before the op's own checks and the write, as torch collects a node's edges: a view that
    may not be regenerated (made in no_grad or inference mode) is refused first."""
    for k in range(1, op.n_tensors):
        a = args[k]
        if isinstance(a, Tensor) and a._base is not None:
            _views.refresh(a)


def _refuse_saved_inference(op, args):
    """torch saves a recorded in-place op's operands before its kernel runs: an inference
    tensor among those it saves (``x.mul_(t)`` saves ``t`` when ``x`` requires grad) is refused
    before the kernel's own checks (shapes, dtypes)."""
    guards = _guards(op)
    for j, (kind, i) in enumerate(op.saved_spec):
        a = args[i] if kind == INPUT and 0 < i < len(args) else None
        if not isinstance(a, Tensor) or not a._is_inference:
            continue
        k = guards.get(j)
        if k is None or (isinstance(args[k], Tensor) and args[k]._requires_grad):
            refuse_inference_save(args)


def _argument_refusal(op, args):
    """What the op's own argument check refuses, to raise after autograd's refusals (torch's
    kernel checks come after them); a TypeError is raised at once, as torch's argument
    parsing does, before anything else."""
    check = op.inplace_check or op.check
    if check is None:
        return None
    try:
        check(*args)
    except TypeError:
        raise
    except Exception as e:  # noqa: BLE001 - any refusal of the kernel's, raised later
        return e
    return None


def _any_requires_grad(op, args):
    for k in range(op.n_tensors):
        a = args[k]
        if isinstance(a, Tensor) and a._requires_grad:
            return True
    return False


_PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the "
                    "written-to tensor refer to a single memory location. Please clone() the "
                    "tensor before performing the operation.")


def _check_no_partial_overlap(op, args):
    """torch refuses an in-place op reading an operand that partly overlaps self (x += x.t()):
    the result would depend on the order elements are written. Like torch, it only tells
    when both are dense (a permutation of a contiguous layout): then their memory ranges
    either coincide with the same strides (fine), are disjoint, or overlap partly."""
    own = args[0]._data
    full = op.name in _NO_OVERLAP
    if op.name in _VALUE_READ_FIRST or op.name in _READ_AS_WRITTEN:
        return
    for a in args[1:op.n_tensors]:
        if full and a is args[0]:  # (torch: the same tensor overlaps itself, even empty)
            raise RuntimeError(_PARTIAL_OVERLAP)
        # (arrays of different kinds live on different devices: they cannot overlap)
        if isinstance(a, Tensor) and (full or a._data is not own) and type(a._data) is type(
                own) and get_xp(own).may_share_memory(own, a._data):
            if _partial_overlap(own, a._data, full):
                raise RuntimeError(_PARTIAL_OVERLAP)


# ops that read their (0-dim) value tensor as a number before writing: no overlap to fear
_VALUE_READ_FIRST = frozenset({"fill", "masked_fill", "index_fill", "index_put_masked"})
# ops torch checks no overlap of: they read their source as they write (see their kernels)
_READ_AS_WRITTEN = frozenset({"masked_scatter"})
# ops whose source may not even be self itself (torch's assert_no_overlap)
_NO_OVERLAP = frozenset({"index_copy", "index_add", "scatter", "scatter_add", "index_put",
                         "scatter_reduce", "index_reduce", "put"})


def _dense(a):
    """torch's is_non_overlapping_and_dense: the strides of the dimensions of size > 1, in
    increasing order, are those of a contiguous layout."""
    dims = sorted((st, n) for st, n in zip(a.strides, a.shape) if n != 1)
    expected = a.itemsize
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def _lowest_address(a):
    """Where the memory a dense array spans begins (its first element, unless a stride is
    negative)."""
    return data_address(a) + sum(st * (n - 1) for st, n in zip(a.strides, a.shape) if st < 0)


def _partial_overlap(a, b, full=False):
    """torch's get_overlap_status(a, b) == Partial (or Full too, with ``full``), for two arrays
    sharing memory."""
    if full and a is b:
        return True
    if a.size == 0 or b.size == 0 or not (_dense(a) and _dense(b)):
        return False  # (torch: no overlap, or too hard to tell)
    a0, b0 = _lowest_address(a), _lowest_address(b)
    a1, b1 = a0 + a.nbytes, b0 + b.nbytes
    if a0 == b0 and a1 == b1:
        return full or a.strides != b.strides
    return a0 < b1 and b0 < a1


_INTERNAL_OVERLAP = ("unsupported operation: more than one element of the written-to tensor "
                     "refers to a single memory location. Please clone() the tensor before "
                     "performing the operation.")
# Writes torch still allows into a tensor whose elements share memory (an expanded view):
# each writes one value per location, whatever the order. {op name: its deprecation warnings}
# (index_put_ of one value at a mask warns as itself, then as the masked_fill_ it runs).
_OVERLAP_ALLOWED = {"fill": (), "zero": (), "masked_fill": ("masked_fill_",),
                    "index_fill": ("index_fill_",), "index_put": ("index_put_",),
                    "index_put_masked": ("index_put_", "masked_fill_")}


def _written(op, arrays):
    """Where an allowed write into an expanded view (self, ``arrays[0]``) changes it: a masked or
    indexed write must copy only those elements (a location shared with an unchanged element
    would otherwise get its old value back); fill and zero write everywhere (True)."""
    target = arrays[0]
    if op.name == "masked_fill":
        return arrays[1]
    if op.name == "index_fill" and target.ndim:
        # (self, index, dim, value), or (self, index, value, dim) with a value tensor
        dim = arrays[2] if op.n_tensors == 2 else arrays[3]
        written = get_xp(target).zeros(target.shape, bool)
        key = [slice(None)] * target.ndim
        key[dim % target.ndim] = arrays[1]
        written[tuple(key)] = True
        return written
    if op.name not in ("index_put", "index_put_masked"):
        return True
    written = get_xp(target).zeros(target.shape, bool)
    written[arrays[2]] = True  # (index_put's key)
    return written


def _copies_itself(op, args):
    """``x.copy_(y)`` with y the very elements of x (x itself, or a view of the same layout):
    torch's copy_ returns before its overlap checks (the version is still bumped)."""
    if op.name != "copy" or not isinstance(args[1], Tensor):
        return False
    return same_elements(args[0]._data, args[1]._data)


def same_elements(a, b):
    """Whether arrays ``a`` and ``b`` are the very same elements (one memory, one layout)."""
    return (a is b or (type(a) is type(b) and data_address(a) == data_address(b)
                       and a.strides == b.strides and a.shape == b.shape and a.dtype == b.dtype))


def has_internal_overlap(a):
    """Whether several elements of ``a`` are one location in memory (a zero stride over a
    dimension of more than one element: an expanded view)."""
    return a.size > 0 and any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape))


def _check_no_internal_overlap(op, args):
    """torch refuses in-place writes into an expanded view (a zero stride over several
    elements): which of the aliased results would win is undefined. (fill_ with a tensor is
    torch's copy_ of it, refused too; ``x[...] = 1.0`` is one.)"""
    if op.name not in _OVERLAP_ALLOWED or (op.name == "fill" and isinstance(args[1], Tensor)):
        raise RuntimeError(_INTERNAL_OVERLAP)
    for name in _OVERLAP_ALLOWED[op.name]:
        what, line = {"masked_fill_": ("tensor[mask] = scalar", 2450),
                      "index_fill_": ("tensor[mask] = scalar", 1913)}.get(
                          name, ("tensor[indices] = tensor", 976))
        warnings.warn(f"Use of {name} on expanded tensors is deprecated. Please clone() the "
                      "tensor before performing this operation. This also applies to advanced "
                      f"indexing e.g. {what} (Triggered internally at /__w/pytorch/pytorch/aten/"
                      f"src/ATen/native/TensorAdvancedIndexing.cpp:{line}.)", UserWarning,
                      stacklevel=_user_stacklevel())


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_GENERATED = GENERATED


def _user_stacklevel():
    """The ``stacklevel`` that makes a warning name the user's line: the first caller outside
    ember (the in-place path is reached through several layers, some generated)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE)
                                 or frame.f_code.co_filename == _GENERATED):
        frame, level = frame.f_back, level + 1
    return level


def _inplace_call(op, args, recording):
    self = args[0]
    expanded = 0 in self._data.strides and has_internal_overlap(self._data)
    if expanded and not _copies_itself(op, args):
        _check_no_internal_overlap(op, args)
    if op.n_tensors > 1:
        _check_no_partial_overlap(op, args)
    arrays = _same_dtype_arrays(op, args)
    if arrays is None:  # operands of other dtypes: promote, and refuse what can't be cast
        if _sparse_operand(op, args):  # (the sparse route casts and refuses as torch's)
            from .sparse import route
            return route(op, args, inplace=True)
        dt = compute_dtype(op, args)
        if dt is not None and not D.can_cast(dt, self.dtype):
            raise RuntimeError(f"result type {dt.scalar_name} can't be cast to the desired "
                               f"output type {self.dtype.scalar_name}")
        arrays = _arrays(op, args, dt)
    snapshot = None
    if recording and _saves_self(op, args):
        # The formula needs self as it was before being overwritten: as torch, save a clone
        # (CloneBackward0 on self's old history, what a create_graph pass differentiates).
        snapshot = _views.clone(self)
    special = opmath.special_dtype(op, args)
    if special is not None:
        opmath.check_limited(op, special, args)
    if not (special is None and op.ufunc is not None and _ufunc_into(op, arrays, self._data)):
        try:
            out = ((op.inplace_kernel or op.kernel)(*arrays) if special is None
                   else opmath.call(op, arrays))
        except ValueError as e:
            if "broadcast" in str(e):
                raise broadcast_error(args[:op.n_tensors]) from None
            raise
        except (RuntimeError, IndexError) as e:  # (scatter's and index_put's kernels write
            # part before refusing, as torch's)
            written = getattr(e, "written", None)
            if written is not None:
                e.written = None
                np.copyto(self._data, written, casting="unsafe")
            raise
        if out is not self._data:
            if np.shape(out) != self._data.shape:
                _check_inplace_shape(self._data.shape, np.shape(out))
            np.copyto(self._data, out, casting="unsafe", where=_written(op, arrays) if expanded else True)
    held = _views_of_self(op, args) if recording else ()
    self._bump_version()
    if recording:
        old_fn, old_nr = self._grad_fn, self._output_nr
        gained = not self._requires_grad
        node = _record_holding(op, args, self, snapshot, held)
        if snapshot is not None and snapshot._grad_fn is not None:
            # torch makes the op's node first, then the clone: numbered in that order
            node._seq, snapshot._grad_fn._seq = snapshot._grad_fn._seq, node._seq
        if self._grad_fn is not node:
            # an integer self (the recorder attaches float results only): torch's
            # rebase_history does not look at the dtype
            self._grad_fn, self._output_nr, self._requires_grad = node, 0, True
        if op.unpack_plan:
            _unbump_saved_inputs(node, op, shared_counter(self._vc))
        if self._base is not None:
            _views.rebase_view(self, node)
            _name_view_in_errors(op, node, self)
        elif gained and self._following_views is not None:
            follow_base(self)
        if self._retains_grad:
            move_retained_grad(self, old_fn, old_nr)
    return self


def _name_view_in_errors(op, node, view):
    """torch's node saving the result of an in-place op on a view names, in its version error,
    the view's regenerated node ("output 0 of AsStrided") while that node lives (held by a
    later op on the view, or by a later in-place op's node while the graph is retained), then
    its own: the node keeps a weak reference to it."""
    if any(kind == RESULT for _, kind, _ in op.unpack_plan) and view._grad_fn is not None:
        node._view_fn_ref = weakref.ref(view._grad_fn)


def _views_of_self(op, args):
    """The other operands that are views sharing self's storage, brought up to date before
    the write: the node's edges are their histories as they were then (torch takes the
    edges before bumping the version), though after it they regenerate."""
    out = []
    self = args[0]
    if self._base is not None:  # (its edge too: the node holds the view's node as it was)
        _views.refresh(self)
        out.append((self, self._view_version))
    for a in args[1:op.n_tensors]:
        if isinstance(a, Tensor) and a._base is not None and (
                shared_counter(a._vc) is shared_counter(self._vc)):
            _views.refresh(a)
            out.append((a, a._view_version))
    return out


def _record_holding(op, args, self, snapshot, held):
    """``record`` with the views in ``held`` taken as they were before the write (self
    among them, ``v.add_(v)``, gets its new history right after)."""
    for a, _ in held:
        a._view_version = self._vc[0]
    try:
        return record(op, args, (self,), snapshot)
    finally:
        for a, version in held:
            if a is not self:
                a._view_version = version


def _sparse_operand(op, args):
    return any(isinstance(a, Tensor) and type(a._data) is CooArray
               for a in args[1:op.n_tensors])


def _same_dtype_arrays(op, args):
    """The kernel's arguments when no operand needs promoting: a float self with a Python
    number, or tensors all of self's dtype (the usual in-place update). Else None.

    The in-place path's form of the rule _fast_prelude generates for out-of-place calls."""
    if op.promote_from or op.promote not in (SAME, FLOAT):
        return None
    own = args[0]._data
    dtype = own.dtype
    if op.promote == FLOAT and dtype.kind not in "fc":
        return None
    out = [own]
    for k in range(1, op.n_tensors):
        a = args[k]
        if isinstance(a, Tensor):
            if a._data.dtype != dtype:
                return None
            out.append(a._data)
        elif (type(a) is float or type(a) is int) and dtype.kind == "f":
            # (as the generated caller: NumPy would round a Python number to float16 first,
            # where torch's mul and div take it in float32)
            out.append(scalar_array(a, number_dtype(op, dtype))
                       if op.weak_scalars and type(own) is _ndarray else a)
        else:
            return None
    out.extend(args[op.n_tensors:])
    return out


def _check_inplace_shape(own, result):
    """torch's refusal of an in-place op whose result would not fit in self."""
    try:
        full = np.broadcast_shapes(own, result)
    except ValueError:
        full = result
    if tuple(full) != tuple(own):
        raise RuntimeError(f"output with shape {list(own)} doesn't match the broadcast shape "
                           f"{list(full)}")


def _ufunc_into(op, arrays, target):
    """Write ``op``'s result straight into ``target`` with its ufunc (no temporary, no copy).

    Only for an op whose kernel is exactly that ufunc (``alpha`` of add/sub at 1), on arrays
    already in ``target``'s dtype; NumPy handles operands that overlap ``target``.
    Returns False when the general path must run (it also gives torch's shape errors).
    """
    n = op.n_tensors
    for extra in arrays[n:]:
        if not (extra == 1 and type(extra) is not bool):
            return False
    if arrays[0] is not target:
        return False
    if n == 2:
        b = arrays[1]
        if type(b) is _ndarray and (b.dtype != target.dtype or b.ndim > target.ndim):
            return False
    try:
        if op.quiet:
            quietly(op.ufunc, *arrays[:n], target)
        else:
            op.ufunc(*arrays[:n], out=target)
    except ValueError:  # not broadcastable into target: let the general path raise
        return False
    return True


def _unbump_saved_inputs(node, op, vc):
    """Saved inputs sharing self's version counter were saved as they were before the write.

    NOTE: the node is recorded after the in-place write, so such an input (``y.mul_(y)``,
    ``y.mul_(y.detach())``) would otherwise be saved at the bumped version and backward would
    silently use the overwritten values; torch saves it first and raises the version error.
    """
    saved, vers = node._saved, node._vers
    for j, kind, _ in op.unpack_plan:
        if kind == INPUT and vers[j] is not None and shared_counter(saved[j]._vc) is vc:
            vers = _with_slot(vers, j, vers[j] - 1)
    node._vers = vers


def inplace_method(d, name, bind=None):
    """The Tensor method ``name`` (``mul_``) running op ``d`` in place (``bind``: as for
    registry._as_method)."""
    n = len(d.params) if bind is None else -1
    bind = bind or d.bind

    def method(*args, **kwargs):
        try:  # (a try costs nothing until it catches)
            call = d.inplace_caller
            if call is None:
                call = d.inplace_caller = _compile_inplace(d)
            if kwargs or len(args) != n:
                # (the bound arguments under another name: a failure reads those given)
                return run_inplace(d, call, bind(args, kwargs))
            return run_inplace(d, call, args)
        except Exception:  # noqa: BLE001 - a failed call, read against torch's parser
            return method_failed(method, name, args, kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = d.kernel.__doc__
    method.parses_on_failure = True  # (see _arg_parser.install_methods)
    return method


def inplace_operator(d, name):
    """The augmented assignment ``name`` running op ``d`` in place (``__isub__``: ``x -= y`` is
    ``x.sub_(y)``), straight to its generated in-place call: an update step's ``p -= lr * g``
    skips the method's argument binding. An operand ember does not take gives NotImplemented
    (Python then raises its TypeError), as every binary operator's does.

    A call that records nothing (no grad mode, or no input requiring grad) on a tensor that
    is no view, of a plain NumPy array, with a Python number or a tensor of its dtype that
    does not overlap it, runs the ufunc into self and bumps its version, nothing else (see
    ``_compile_operator``): every check that could refuse it passes there."""
    tail = tuple(d.defaults[2:])  # (alpha=1: the operator passes only the operand)
    assert _MISSING not in tail, f"{name}: {d.name} needs arguments the operator has not"
    return _compile_operator(d, name, tail, plain_operands(d))


def _compile_operator(d, name, tail, plain):
    """Generate ``inplace_operator``'s operator: the plain path (``_plain_lines``) where
    ``plain`` allows one, else the op's generated in-place call."""
    lines = (["def operator(self, other):"] + ["    " + line for line in _plain_lines(d, plain)]
             + ["    if type(other) is not Tensor and not isinstance(other, OPERANDS):",
                "        return NotImplemented",
                "    call = d.inplace_caller",
                "    if call is None:",
                "        call = d.inplace_caller = compile_inplace(d)",
                "    args = (self, other) + tail",
                "    try:  # (run_inplace's lines: a call fewer per update of a parameter)",
                "        return call(args)",
                "    except TypeError as e:  # (a GPU array refusing a host one)",
                "        again = inplace_across_devices(d, args, e)",
                "        if again is None:",
                "            raise",
                "        return again"])
    scope = {"d": d, "tail": tail, "OPERANDS": OPERANDS, "compile_inplace": _compile_inplace,
             "inplace_across_devices": inplace_across_devices, **_plain_scope(d, plain)}
    # The code is generated from the op's own declaration; named so warnings can skip it.
    exec(compile("\n".join(lines), _GENERATED, "exec"), scope)  # noqa: S102
    operator = scope["operator"]
    operator.__name__ = operator.__qualname__ = name
    operator._takes_operand = True
    return operator


def _plain_lines(op, plain):
    """Generated lines of the plain in-place path of ``self`` and ``other`` (a call that
    records nothing, on a tensor that is no view of a plain NumPy array, with a Python number
    or a tensor of its dtype that does not overlap it, see ``registry.plain_operands``): the
    ufunc into self and the version bump. Every check that could refuse such a call passes;
    any other call, and a ufunc that raises before writing, goes on after these lines.

    NOTE: the usual update (``p -= lr * p.grad`` under no_grad) is the order of the tests:
    the grad mode first (off there, where ``p`` requires grad), and the overlap test needs no
    call when both arrays own their memory (NumPy's ``base`` is None): two such arrays are one
    or disjoint, so only an array with a base (a view in NumPy's terms) is asked about."""
    if plain is None:
        return []
    pair, number = plain
    # (vc[0] = vc[0] + 1: two bytecodes fewer than +=, the same item calls)
    done = ["else:", "    vc = self._vc", "    if vc is None:", "        self._vc = [1]",
            "    else:", "        vc[0] = vc[0] + 1", "    return self"]
    # (an owner's array is never expanded: one with a base, from NumPy, may be; an operand
    # of more dimensions than self makes the ufunc refuse to write into it)
    fits = "(own.base is None or 0 not in own.strides)"
    apart = "(x1 is own or not host_may_share(own, x1))"
    lines = ["if (not intercepted[0] and self._base is None and not self._is_inference):",
             "    own = self._data",
             "    if type(other) is Tensor:",
             "        x1 = other._data",
             "        if ((not state.grad_enabled"
             " or not (self._requires_grad or other._requires_grad))",
             "                and type(own) is ndarray and type(x1) is ndarray"
             " and (dt := own.dtype) == x1.dtype and dt in PAIR",
             "                and not other._is_inference and (other._base is None"
             " or other._view_version == other._vc[0])",
             f"                and ((own.base is None and (x1.base is None or {apart}))",
             f"                     or (0 not in own.strides and {apart}))):"]
    lines += ["            " + line
              for line in plain_call_lines(op, "own", "x1", "own", ["pass"]) + done]
    if number:
        lines += ["    elif type(other) in PYTHON_NUMBERS:",
                  "        if ((not state.grad_enabled or not self._requires_grad)",
                  "                and type(own) is ndarray and (dt := own.dtype) in "
                  f"NUMBER and {fits}):"]
        lines += ["            " + line
                  for line in cached_scalar_lines("x1", "other", "dt")
                  + plain_call_lines(op, "own", "x1", "own", ["pass"]) + done]
    return lines


def _plain_scope(op, plain):
    """What ``_plain_lines`` read."""
    pair, number = plain or ((), ())
    return {"PAIR": pair, "NUMBER": number, "ufunc": op.ufunc, "Tensor": Tensor,
            "ndarray": np.ndarray, "state": state, "forward_hook": forward_hook,
            "profiler_hook": profiler_hook, "host_may_share": _host_may_share,
            "intercepted": intercepted,
            "captured_write_check": captured_write_check,
            "quiet_context": quiet_context, "inside": inside, "PYTHON_NUMBERS": PYTHON_NUMBERS,
            **SCALAR_SCOPE}


# np.may_share_memory without its __array_function__ dispatch (a Python call, several times
# the test itself): for two NumPy arrays, which need no dispatch.
_host_may_share = getattr(np.may_share_memory, "_implementation", np.may_share_memory)


def _compile_inplace(op):
    """Generate the in-place call of one op for the usual update, unrolled over its operands.

    NOTE: this is ``dispatch_inplace`` specialised to a tensor that is not a view, not
    expanded, with an operand of its own dtype (or a Python number with a float self) that
    does not overlap it, and whose node will not need a copy of self: exactly the checks
    those cases need, in the same order, so the errors are the same. Any other call is
    handed to ``dispatch_inplace`` before anything is written.
    """
    n = op.n_tensors
    if (op.n_outputs != 1 or n not in (1, 2) or op.promote not in (SAME, FLOAT)
            or op.promote_from or len(op.params) > 8 or op.name in _NO_OVERLAP):
        return lambda args: dispatch_inplace(op, args)
    general = "return dispatch_inplace(op, args)"
    lines = ["def inplace(args):",
             "    self = args[0]"]
    plain = plain_operands(op)
    if plain is not None:  # (the plain path, for alpha=1: see plain_operands)
        ones = "".join(f"args[{i}] == 1 and type(args[{i}]) is int and "
                       for i in range(2, len(op.params)))
        lines += [f"    if {ones}isinstance(self, Tensor):", "        other = args[1]"]
        lines += ["        " + line for line in _plain_lines(op, plain)]
    lines += ["    if (forward_hook[0] is not None or profiler_hook[0] is not None",
              "            or captured_write_check[0] is not None",
              "            or not isinstance(self, Tensor) or self._base is not None",
              "            or self._is_inference):",
              f"        {general}"]
    lines += ["    own = self._data",
             "    if own.base is not None and 0 in own.strides:  # (an owner is never expanded)",
             f"        {general}",
             "    if own.dtype in SPECIAL:  # (see opmath.py)", f"        {general}"]
    if op.promote == FLOAT:
        lines += ["    if own.dtype.kind not in 'fc':", f"        {general}"]
    if n == 1:
        lines.append("    wants = self._requires_grad")
        xs = ["own"]
    else:
        scalar = (f"{cached_scalar('a1', number_dtype_code(op, 'own.dtype'))} "
                  "if type(own) is ndarray else a1" if op.weak_scalars else "a1")
        lines += ["    a1 = args[1]",
                  "    if isinstance(a1, Tensor):",
                  "        x1 = a1._data",
                  "        if x1.dtype != own.dtype or (x1 is not own and ("
                  "host_may_share(own, x1) if type(own) is ndarray and type(x1) is ndarray "
                  "else may_share_memory(own, x1))) or (a1._base is not None and "
                  "a1._view_version != a1._vc[0]) or a1._is_inference:",
                  f"            {general}  # (a view to regenerate, inference to refuse)",
                  "        wants = self._requires_grad or a1._requires_grad",
                  "    elif (type(a1) is float or type(a1) is int) and own.dtype.kind == 'f':",
                  f"        x1 = {scalar}",
                  "        wants = self._requires_grad",
                  "    else:",
                  f"        {general}"]
        xs = ["own", "x1"]
    xs += [f"args[{i}]" for i in range(n, len(op.params))]
    recording = "wants and state.grad_enabled" if op.differentiable else "False"
    lines += [f"    recording = {recording}",
              "    if recording and self._grad_fn is None and self._requires_grad:",
              f"        {general}  # (it orders this refusal and the op's argument checks)"]
    if (op.inplace_check or op.check) is not None:  # (after autograd's refusals, as in torch)
        lines.append("    check(*args)")
    snapshot = _snapshot_lines(op, general)
    if snapshot:
        lines += ["    if recording:"] + snapshot
    lines += ["    " + line for line in _write_lines(op, xs)]
    lines += ["    vc = self._vc",
              "    if vc is None:",
              "        self._vc = [1]",
              "    else:",
              "        vc[0] += 1",
              "    if recording:",
              "        old_fn, old_nr = self._grad_fn, self._output_nr",
              "        gained = not self._requires_grad",
              "        node = record(op, args, (self,), None)",
              "        if gained and self._following_views is not None:",
              "            follow_base(self)",
              "        if self._retains_grad:",
              "            move_retained_grad(self, old_fn, old_nr)"]
    if n == 2 and op.unpack_plan:
        # (a tensor detached in place reads its counter through a DetachedCounter window)
        lines += ["        if isinstance(a1, Tensor) and (a1._vc is self._vc or "
                  "type(self._vc) is DetachedCounter):",
                  "            _unbump_saved_inputs(node, op, shared_counter(self._vc))"]
    lines.append("    return self")
    scope = {**_plain_scope(op, plain),
             "op": op, "check": op.inplace_check or op.check, "Tensor": Tensor, "state": state,
             "DetachedCounter": DetachedCounter, "shared_counter": shared_counter,
             "SPECIAL": D.SPECIAL_NP,
             "forward_hook": forward_hook, "captured_write_check": captured_write_check,
             "profiler_hook": profiler_hook, "dispatch_inplace": dispatch_inplace,
             "may_share_memory": np.may_share_memory, "host_may_share": _host_may_share,
             **SCALAR_SCOPE, "quiet_context": quiet_context, "inside": inside,
             "_LEAF_INPLACE": _LEAF_INPLACE, "record": record,
             "_unbump_saved_inputs": _unbump_saved_inputs, "np": np,
             "move_retained_grad": move_retained_grad, "follow_base": follow_base,
             "broadcast_error": broadcast_error,
             "_check_inplace_shape": _check_inplace_shape, "ndarray": np.ndarray,
             "quietly": quietly}
    # The code is generated from the op's own declaration; named so warnings can skip it.
    exec(compile("\n".join(lines), _GENERATED, "exec"), scope)  # noqa: S102
    return scope["inplace"]


def _snapshot_lines(op, general):
    """Generated lines handing the call to the general path when the node will save self
    (it then needs a copy of self from before the write); see ``_saves_self``."""
    guards = _self_guards(op)
    if None in guards:
        return [f"        {general}"]
    names = ["self" if k == 0 else f"a{k}" for k in sorted(set(guards))]
    conds = [f"(isinstance({a}, Tensor) and {a}._requires_grad)" for a in names]
    if not conds:
        return []
    return [f"        if {' or '.join(conds)}:", f"            {general}"]


def _self_guards(op):
    """For each slot in which ``op``'s node saves self: the input that must require grad for
    it to be saved (None: always saved). Recomputed when the op's formulas change."""
    cached = op.__dict__.get("self_slots")
    if cached is None or cached[0] is not op.saved_spec:
        guards = _guards(op)
        cached = op.self_slots = (op.saved_spec, [guards.get(j) for j, (kind, i)
                                                  in enumerate(op.saved_spec)
                                                  if kind == INPUT and i == 0])
    return cached[1]


def _saves_self(op, args):
    """Whether an in-place call's node will save self (then a copy from before the write is
    needed): ``mul_`` by a number or by a tensor that does not require grad does not."""
    for k in _self_guards(op):
        if k is None or (isinstance(args[k], Tensor) and args[k]._requires_grad):
            return True
    return False


def _write_lines(op, xs):
    """Generated lines writing the op's result into ``own``: its ufunc straight into self
    when the kernel is exactly that ufunc (``alpha`` of add/sub at 1), else the kernel and a
    copy. A result that does not fit self goes to the general path, which raises torch's
    error."""
    kernel = [f"out = op.kernel({', '.join(xs)})",
              "if out is not own:",
              "    if (type(out) is not ndarray or out.shape != own.shape) and "
              "np.shape(out) != own.shape:",
              "        return dispatch_inplace(op, args)",
              "    own[...] = out"]
    kernel = (["try:"] + ["    " + line for line in kernel]
              + ["except ValueError as e:",
                 "    if 'broadcast' in str(e):",
                 f"        raise broadcast_error(args[:{op.n_tensors}]) from None",
                 "    raise"])
    if op.ufunc is None:
        return kernel
    operands = ", ".join(xs[:op.n_tensors])
    into = [f"op.ufunc({operands}, own)"]
    if op.quiet:  # (quietly() written out: see _backend/fp_errors.py)
        into = quiet_lines("", "op.ufunc", f"{operands}, own")
    if op.n_tensors == 1:
        return into
    fits = "(type(x1) is not ndarray or x1.ndim <= own.ndim)"
    if len(xs) > 2:
        fits += f" and {xs[2]} == 1 and type({xs[2]}) is not bool"
    return ([f"if {fits}:", "    try:"] + ["        " + line for line in into]
            + ["    except ValueError:  # not broadcastable into self",
               "        return dispatch_inplace(op, args)",
               "else:"] + ["    " + line for line in kernel])


from . import views as _views  # noqa: E402  (views declares ops through the registry)
