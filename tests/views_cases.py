"""Case tables for tests/test_views_inplace.py: view ops, in-place ops, the grid body, the
semantics and error bodies, and a runner.

Every case is written once as a function of the library module (``torch`` or ``ember``), so the
same code runs on PyTorch (the oracle) and on ember. :func:`outcome` runs such a body and turns
what it returns (nested dicts, lists and tuples of tensors, numbers and strings) or the
exception it raises into plain data; :func:`assert_same` compares two outcomes.
"""
from __future__ import annotations

import re

import numpy as np

# -- values ------------------------------------------------------------------------------------


def values(shape, lo=-0.9, hi=0.8, seed=0):
    """Deterministic, non-monotonic float64 values in [lo, hi] of the given shape."""
    n = int(np.prod(shape)) if shape else 1
    v = np.linspace(lo, hi, n)
    v = v[np.random.default_rng(seed).permutation(n)]
    return v.reshape(shape)


def leaf(lib, shape, lo=-0.9, hi=0.8, seed=0, requires_grad=True):
    # NOTE: built from a float64 ndarray (not a list) so that the values are exact float64 in
    # both libraries whatever the default dtype.
    return lib.tensor(values(shape, lo, hi, seed)).requires_grad_(requires_grad)


def const(lib, shape, lo=0.3, hi=1.7, seed=1):
    return lib.tensor(values(shape, lo, hi, seed))


# -- view ops: name -> (base shape, view function, kind) -----------------------------------------
# kind: "view" (ordinary view), "expand" (in-place on it overlaps itself: torch refuses most
# ops), "multi" (an output of a multi-output view op: torch refuses in-place when recording).
VIEWS = {
    "slice": ((3, 4), lambda lib, x: x[1:3], "view"),
    "slice_step": ((4, 3), lambda lib, x: x[::2], "view"),
    "select": ((3, 4), lambda lib, x: x[0], "view"),
    "select_col": ((3, 4), lambda lib, x: x[:, 1], "view"),
    "index_none": ((3, 4), lambda lib, x: x[None], "view"),
    "ellipsis": ((3, 4), lambda lib, x: x[..., 0], "view"),
    "view": ((3, 4), lambda lib, x: x.view(2, 6), "view"),
    "reshape": ((3, 4), lambda lib, x: x.reshape(4, 3), "view"),
    "t": ((3, 4), lambda lib, x: x.t(), "view"),
    "transpose": ((2, 3, 2), lambda lib, x: x.transpose(0, 2), "view"),
    "permute": ((2, 3, 2), lambda lib, x: x.permute(1, 2, 0), "view"),
    "unsqueeze": ((3, 4), lambda lib, x: x.unsqueeze(1), "view"),
    "squeeze": ((3, 1, 4), lambda lib, x: x.squeeze(), "view"),
    "squeeze_dim_of_view": ((3, 4), lambda lib, x: x.view(3, 1, 4).squeeze(1), "view"),
    "view_of_view": ((3, 4), lambda lib, x: x[1:].t()[1], "view"),
    "expand": ((3, 1), lambda lib, x: x.expand(3, 4), "expand"),
    "unbind": ((3, 4), lambda lib, x: x.unbind(0)[1], "multi"),
    "split": ((5, 2), lambda lib, x: x.split(2)[1], "multi"),
    "chunk": ((2, 4), lambda lib, x: x.chunk(2, dim=1)[1], "multi"),
}

# -- in-place ops: name -> (function(lib, v, b) -> value to compare, uses b) ---------------------
# ``b`` is a leaf requiring grad with the view's shape and values in [0.5, 1.5].


def _mask(lib, shape):
    m = (np.arange(int(np.prod(shape))).reshape(shape) % 3) != 1
    return lib.tensor(m.tolist(), dtype=lib.bool)


def _first_index(lib, v):
    # distinct indices: index_put_ with repeated indices is undefined in torch
    return lib.tensor([0] if v.shape[0] == 1 else [0, v.shape[0] - 1])


def _ret(r, v):
    return "self" if r is v else r


def _iadd(lib, v, b):
    v += b


def _isub(lib, v, b):
    v -= b


def _imul(lib, v, b):
    v *= b


def _idiv(lib, v, b):
    v /= b


def _iadd_scalar(lib, v, b):
    v += 0.5


def _set_basic(lib, v, b):
    v[0] = b[0] * 2


def _set_basic_scalar(lib, v, b):
    v[0] = 0.25


def _set_ellipsis(lib, v, b):
    v[...] = b


def _set_index(lib, v, b):
    i = _first_index(lib, v)
    v[i] = b[i] * 3


def _set_mask(lib, v, b):
    m = _mask(lib, tuple(v.shape))
    v[m] = b[m]


def _set_mask_scalar(lib, v, b):
    v[_mask(lib, tuple(v.shape))] = 0.0


INPLACE = {
    "add_": (lambda lib, v, b: _ret(v.add_(b), v), True),
    "add_alpha": (lambda lib, v, b: _ret(v.add_(b, alpha=-0.5), v), True),
    "add_scalar": (lambda lib, v, b: _ret(v.add_(2.0), v), False),
    "sub_": (lambda lib, v, b: _ret(v.sub_(b), v), True),
    "mul_": (lambda lib, v, b: _ret(v.mul_(b), v), True),
    "mul_scalar": (lambda lib, v, b: _ret(v.mul_(-3.0), v), False),
    "div_": (lambda lib, v, b: _ret(v.div_(b), v), True),
    "pow_": (lambda lib, v, b: _ret(v.pow_(2), v), False),
    "clamp_": (lambda lib, v, b: _ret(v.clamp_(-0.5, 0.4), v), False),
    "relu_": (lambda lib, v, b: _ret(v.relu_(), v), False),
    "sigmoid_": (lambda lib, v, b: _ret(v.sigmoid_(), v), False),
    "tanh_": (lambda lib, v, b: _ret(v.tanh_(), v), False),
    "exp_": (lambda lib, v, b: _ret(v.exp_(), v), False),
    "copy_": (lambda lib, v, b: _ret(v.copy_(b), v), True),
    "fill_": (lambda lib, v, b: _ret(v.fill_(2.5), v), False),
    "zero_": (lambda lib, v, b: _ret(v.zero_(), v), False),
    "setitem_basic": (_set_basic, True),
    "setitem_basic_scalar": (_set_basic_scalar, False),
    "setitem_ellipsis": (_set_ellipsis, True),
    "setitem_index": (_set_index, True),
    "setitem_mask": (_set_mask, True),
    "setitem_mask_scalar": (_set_mask_scalar, False),
    "iadd": (_iadd, True),
    "isub": (_isub, True),
    "imul": (_imul, True),
    "idiv": (_idiv, True),
    "iadd_scalar": (_iadd_scalar, False),
}

# How the view takes part in the loss: only after the mutation, or also before it (through
# ``exp``, which saves its output and not the view, so no version error is expected).
USAGE = ("after", "before")

# Where the base comes from: a function of a leaf requiring grad, or a plain tensor that does
# not require grad (then only the in-place op's operand ``b`` brings autograd in).
BASES = ("graph", "plain")
# The ops without an operand that are still run on a plain base (to check that nothing is
# recorded, and expand's fill_/zero_ which torch allows): the others add nothing new there.
PLAIN_NO_OPERAND = ("add_scalar", "relu_", "fill_", "zero_", "setitem_mask_scalar")


def variants(op_name):
    """The (usage, base kind) pairs the grid runs for an in-place op."""
    out = [("after", "graph"), ("before", "graph")]
    if INPLACE[op_name][1] or op_name in PLAIN_NO_OPERAND:
        out.append(("after", "plain"))
    return out


def name(t):
    """``type(t.grad_fn).__name__`` or None."""
    fn = t.grad_fn
    return None if fn is None else type(fn).__name__


def grid_body(view_name, op_name, usage, base_kind):
    """The grid case as a function of the library; returns what to compare."""
    shape, view_fn, _ = VIEWS[view_name]
    op_fn, _ = INPLACE[op_name]

    def body(lib):
        out = {}
        if base_kind == "graph":
            a = leaf(lib, shape)
            base = a * 1.5
        else:
            a = None
            base = const(lib, shape, -0.8, 0.9, seed=3)
        v = view_fn(lib, base)
        out["view_fn_before"] = name(v)
        b = leaf(lib, tuple(v.shape), 0.5, 1.5, seed=2)
        pre = v.exp() if usage == "before" else None
        out["returned"] = op_fn(lib, v, b)
        out["base"] = base
        out["view"] = v
        out["base_fn"] = name(base)
        out["view_fn"] = name(v)
        out["versions"] = (base._version, v._version, b._version,
                           None if a is None else a._version)
        out["requires_grad"] = (base.requires_grad, v.requires_grad, v.is_leaf)
        w_base = const(lib, shape, seed=4)
        w_view = const(lib, tuple(v.shape), seed=5)
        loss = (base * w_base).sum() + (v * w_view).sum() + (b * 0.5).sum()
        if pre is not None:
            loss = loss + pre.sum()
        out["loss"] = loss
        loss.backward()
        out["b_grad"] = b.grad
        out["a_grad"] = None if a is None else a.grad
        out["versions_after_backward"] = (base._version, v._version)
        return out
    return body


# -- more semantics: several views, chains, self-referencing updates (name -> body) ------------
SEMANTICS = {}


def semantics(fn):
    SEMANTICS[fn.__name__] = fn
    return fn


@semantics
def sibling_view_regenerated(lib):
    a = leaf(lib, (3, 4))
    base = a * 2
    v1, v2 = base[0], base[:, 1]
    before = name(v2)
    v1.mul_(3)
    after = name(v2)
    ((v2 * v2).sum() + base.sum()).backward()
    return before, after, name(v1), name(base), v1._version, v2._version, a.grad


@semantics
def base_modified_then_old_view_used(lib):
    a = leaf(lib, (3, 4))
    base = a * 2
    v = base[1:, ::2]
    base.exp_()
    fns = (name(base), name(v))
    (v * const(lib, (2, 2))).sum().backward()
    return fns, v, a.grad, base._version, v._version


@semantics
def two_inplace_on_same_view(lib):
    a, b = leaf(lib, (3, 4)), leaf(lib, (4,), 0.5, 1.5, seed=2)
    base = a.clone()
    v = base[2]
    v.mul_(b)
    v.add_(b, alpha=2)
    v.sigmoid_()
    (base * const(lib, (3, 4))).sum().backward()
    return name(base), name(v), v._version, base, a.grad, b.grad


@semantics
def chain_on_different_views(lib):
    a, b = leaf(lib, (3, 4)), leaf(lib, (3, 4), 0.5, 1.5, seed=2)
    base = a * 1
    base[0].mul_(b[0])
    base[:, 1].add_(b[:, 1])
    base.t()[2].exp_()
    base[1:, 1:] = b[:2, :3] * 2
    (base * const(lib, (3, 4))).sum().backward()
    return name(base), base._version, base, a.grad, b.grad


@semantics
def view_of_view_of_view(lib):
    a = leaf(lib, (2, 3, 4))
    base = a * 1
    v = base.permute(2, 0, 1)[1:].reshape(3, 6)[:, 2:5]
    pre = v.exp()
    v.mul_(v.detach() + 1)
    ((base * const(lib, (2, 3, 4))).sum() + pre.sum() + v.sum()).backward()
    return name(base), name(v), v._base is base, base, a.grad


@semantics
def self_overlapping_update(lib):
    a = leaf(lib, (4, 3))
    base = a * 1
    base[1:].add_(base[:-1].detach() * 0.5)
    base[:, 0] = base[:, 2] + base[:, 1]  # add saves nothing: no version error
    (base * const(lib, (4, 3))).sum().backward()
    return base, a.grad, name(base), base._version


@semantics
def operand_is_view_of_same_base(lib):
    a = leaf(lib, (3, 4))
    base = a * 1
    base[0].add_(base[1])       # add saves nothing
    base[2].mul_(base[0].detach().clone())  # a detach() would share the version counter
    (base * const(lib, (3, 4))).sum().backward()
    return base, a.grad


@semantics
def inplace_on_base_directly(lib):
    a, b = leaf(lib, (3, 4)), leaf(lib, (3, 4), 0.5, 1.5, seed=2)
    base = a * 1
    v = base[1]
    base.mul_(b)
    fns = (name(base), name(v))
    base.tanh_()
    (base.sum() + (v * 3).sum()).backward()
    return fns, name(base), name(v), base._version, v._version, a.grad, b.grad


@semantics
def setitem_reaches_both(lib):
    x, y = leaf(lib, (4, 3)), leaf(lib, (2, 3), 0.5, 1.5, seed=2)
    h = x * 1
    h[lib.tensor([0, 2])] = y * 2
    h[:, 1] = 0.0
    h[h.detach() > 1.5] = -1.0
    (h * const(lib, (4, 3))).sum().backward()
    return h, name(h), h._version, x.grad, y.grad


@semantics
def setitem_into_zeros_buffer(lib):
    """The RNN pattern: write time steps into a buffer that does not require grad."""
    w = leaf(lib, (3,))
    out = lib.zeros(4, 3, dtype=lib.float64)
    h = lib.zeros(3, dtype=lib.float64)
    for t in range(4):
        h = (h + w).tanh()
        out[t] = h
    (out * const(lib, (4, 3))).sum().backward()
    return out, name(out), out._version, w.grad


@semantics
def broadcast_operand(lib):
    a, row = leaf(lib, (3, 4)), leaf(lib, (4,), 0.5, 1.5, seed=2)
    base = a * 1
    base[1:].mul_(row)
    base.t()[1:3].add_(row[:3] * 0 + row[:2].sum())
    (base * const(lib, (3, 4))).sum().backward()
    return base, a.grad, row.grad


@semantics
def view_inplace_without_grad_mode(lib):
    """A view created with grad, modified under no_grad: no graph, only the version."""
    a = leaf(lib, (3, 4))
    base = a * 2
    v = base[0]
    with lib.no_grad():
        v.mul_(10)
    fns = (name(base), name(v))
    (base * const(lib, (3, 4))).sum().backward()
    return fns, base, base._version, a.grad


@semantics
def view_made_and_modified_in_no_grad(lib):
    a = leaf(lib, (3, 4))
    base = a * 2
    with lib.no_grad():
        v = base[1:]
        v.zero_()
    (base * const(lib, (3, 4))).sum().backward()
    return name(base), base._version, v._version, a.grad


@semantics
def inplace_results_are_integral_checked(lib):
    x = lib.arange(6).reshape(2, 3)
    v = x[1]
    v.add_(2)
    v.mul_(3)
    x[0] = 7
    return x, x._version, x.dtype, v.dtype


@semantics
def float_view_int_operand(lib):
    a = leaf(lib, (3, 4))
    base = a * 1
    base[1].add_(lib.arange(4))
    base[2] = lib.tensor([1, 2, 3, 4])
    (base * const(lib, (3, 4))).sum().backward()
    return base, a.grad, name(base)


@semantics
def retained_grad_on_view(lib):
    a = leaf(lib, (3, 4))
    base = a * 1
    v = base[1]
    v.retain_grad()
    base.exp_()
    (base * const(lib, (3, 4))).sum().backward()
    return a.grad


@semantics
def view_used_twice_before(lib):
    a, b = leaf(lib, (3, 4)), leaf(lib, (4,), 0.5, 1.5, seed=2)
    base = a * 1
    v = base[1]
    p1 = v.exp()
    p2 = v * 3
    v.copy_(b * b)
    q = v.exp()
    (p1.sum() + p2.sum() + q.sum() + base.sum()).backward()
    return name(v), a.grad, b.grad


# -- error cases (name -> body): the body raises, or returns what to compare -------------------
ERRORS = {}


def error_case(fn):
    ERRORS[fn.__name__] = fn
    return fn


@error_case
def leaf_add_(lib):
    leaf(lib, (3,)).add_(1)


@error_case
def leaf_mul_tensor(lib):
    leaf(lib, (3,)).mul_(leaf(lib, (3,)))


@error_case
def leaf_zero_(lib):
    leaf(lib, (3,)).zero_()


@error_case
def leaf_fill_(lib):
    leaf(lib, (3,)).fill_(1.0)


@error_case
def leaf_copy_(lib):
    leaf(lib, (3,)).copy_(lib.ones(3, dtype=lib.float64))


@error_case
def leaf_iadd(lib):
    a = leaf(lib, (3,))
    a += 1


@error_case
def leaf_setitem(lib):
    a = leaf(lib, (3,))
    a[0] = 1.0


@error_case
def leaf_setitem_mask(lib):
    a = leaf(lib, (3,))
    a[a > 0] = 1.0


@error_case
def leaf_relu_(lib):
    leaf(lib, (3,)).relu_()


@error_case
def view_of_leaf_add_(lib):
    leaf(lib, (3, 4))[0].add_(1)


@error_case
def view_of_leaf_setitem(lib):
    a = leaf(lib, (3, 4))
    a.t()[1] = 0.0


@error_case
def view_of_leaf_reshape_exp_(lib):
    leaf(lib, (3, 4)).view(-1).exp_()


@error_case
def view_of_view_of_leaf(lib):
    leaf(lib, (3, 4))[1:].t()[0].mul_(2)


@error_case
def view_of_leaf_iadd(lib):
    v = leaf(lib, (3, 4))[:, 1]
    v += 1


@error_case
def no_grad_view_modified_with_grad(lib):
    base = leaf(lib, (3, 4)) * 2
    with lib.no_grad():
        v = base[0]
    v.mul_(2)


@error_case
def no_grad_view_setitem_with_grad(lib):
    base = leaf(lib, (3, 4)) * 2
    with lib.no_grad():
        v = base.t()
    v[0] = 1.0


@error_case
def no_grad_view_of_leaf_modified_with_grad(lib):
    a = leaf(lib, (3, 4))
    with lib.no_grad():
        v = a[0]
    v.add_(1)


@error_case
def no_grad_view_operand_requires_grad(lib):
    base = lib.zeros(3, 4, dtype=lib.float64)
    with lib.no_grad():
        v = base[0]
    v.add_(leaf(lib, (4,)))
    return name(base), name(v)


@error_case
def no_grad_view_modified_in_no_grad(lib):
    base = leaf(lib, (3, 4)) * 2
    with lib.no_grad():
        v = base[0]
        v.mul_(2)
    return name(base), base._version, v._version


@error_case
def no_grad_view_requires_grad(lib):
    base = leaf(lib, (3, 4)) * 2
    with lib.no_grad():
        v = base[0]
        inside = (v.requires_grad, name(v))
    return inside, v.requires_grad, v.is_leaf


@error_case
def no_grad_view_grad_fn_after_base_inplace(lib):
    base = leaf(lib, (3, 4)) * 2
    with lib.no_grad():
        v = base[0]
        v.mul_(2)
    return name(v)


@error_case
def no_grad_view_grad_fn_after_base_inplace_with_grad(lib):
    base = leaf(lib, (3, 4)) * 2
    with lib.no_grad():
        v = base[0]
    base.mul_(2)
    return name(base), name(v)


@error_case
def no_grad_view_read_in_no_grad_after_inplace(lib):
    base = leaf(lib, (3, 4)) * 2
    with lib.no_grad():
        v = base[0]
        v.mul_(2)
        return name(v), base._version


@error_case
def unbind_output_add_(lib):
    base = leaf(lib, (3, 4)) * 2
    base.unbind(1)[2].add_(1)


@error_case
def unbind_output_iadd_tensor(lib):
    base = leaf(lib, (3, 4)) * 2
    u = base.unbind()[0]
    u += leaf(lib, (4,))


@error_case
def split_list_output_mul_(lib):
    base = leaf(lib, (5, 2)) * 2
    base.split([2, 3])[1].mul_(2)


@error_case
def unbind_output_in_no_grad_ok(lib):
    base = leaf(lib, (3, 4)) * 2
    with lib.no_grad():
        base.unbind()[1].zero_()
    return base


@error_case
def unbind_output_view_of_view(lib):
    base = leaf(lib, (3, 4)) * 2
    base.unbind()[1][1:].exp_()


@error_case
def split_int_output_name(lib):
    base = leaf(lib, (5, 2)) * 2
    base.split(2)[1].mul_(2)


@error_case
def chunk_output_name(lib):
    base = leaf(lib, (2, 4)) * 2
    base.chunk(2, 1)[0].zero_()


@error_case
def saved_input_modified(lib):
    a = leaf(lib, (3, 4))
    b = a * 2
    c = b.sin()
    b.add_(1)
    c.sum().backward()


@error_case
def saved_output_modified(lib):
    a = leaf(lib, (3,))
    y = a.exp()
    y.mul_(2)
    y.sum().backward()


@error_case
def saved_output_sigmoid_modified(lib):
    a = leaf(lib, (3,))
    y = a.sigmoid()
    z = y + 1
    y.zero_()
    z.sum().backward()


@error_case
def saved_leaf_modified_under_no_grad(lib):
    p = leaf(lib, (3,))
    loss = (p * p).sum()
    with lib.no_grad():
        p -= 0.1
    loss.backward()


@error_case
def saved_view_base_modified(lib):
    a = leaf(lib, (3, 4))
    b = a * 2
    v = b[1]
    c = v.sin()
    b.mul_(2)
    c.sum().backward()


@error_case
def saved_through_detach_modified(lib):
    a = leaf(lib, (3,))
    b = a * 2
    c = b.cos()
    b.detach().add_(1)
    c.sum().backward()


@error_case
def saved_twice_modified(lib):
    a = leaf(lib, (2, 2))
    b = a * 1
    c = b.tanh() * b.log()
    b.add_(1)
    b.add_(1)
    c.sum().backward()


@error_case
def saved_plain_tensor_modified(lib):
    w = leaf(lib, (3,))
    x = lib.ones(3, dtype=lib.float64)
    y = (x * w).sum()
    x[0] = 5.0
    y.backward()


@error_case
def saved_result_overwritten_by_other_view(lib):
    a = leaf(lib, (3, 4))
    base = a * a
    base[0].tanh_()
    base[:, 1].mul_(2)  # overlaps base[0], whose tanh result was saved
    base.sum().backward()


@error_case
def self_as_operand_mul_(lib):
    b = leaf(lib, (3, 4)) * 1
    b.mul_(b)
    b.sum().backward()


@error_case
def operand_view_of_same_base_mul_(lib):
    base = leaf(lib, (3, 4)) * 1
    base[0].mul_(base[1])
    base.sum().backward()


@error_case
def detach__on_view(lib):
    base = leaf(lib, (3, 4)) * 2
    base[0].detach_()


@error_case
def detach__on_view_no_grad(lib):
    base = lib.zeros(3, 4)
    base.t().detach_()


@error_case
def detach__on_non_view(lib):
    base = leaf(lib, (3, 4)) * 2
    r = base.detach_()
    return r is base, base.requires_grad, name(base), base.is_leaf


@error_case
def int_inplace_float_result(lib):
    lib.arange(3).add_(1.5)


@error_case
def int_view_inplace_float_result(lib):
    lib.arange(6).view(2, 3)[0].mul_(0.5)


@error_case
def inplace_broadcast_grows_self(lib):
    lib.zeros(4, dtype=lib.float64).add_(lib.ones(3, 4, dtype=lib.float64))


@error_case
def inplace_broadcast_mismatch_on_view(lib):
    lib.zeros(4, 3, dtype=lib.float64)[1:3].add_(lib.ones(3, 1, dtype=lib.float64))


# -- running a body and comparing ----------------------------------------------------------------
_TORCH_DOT = re.compile(r"\btorch\.(?=[A-Za-z_])")


def norm(text):
    """torch's text as ember writes it (``torch.DoubleTensor`` -> ``ember.DoubleTensor``)."""
    return _TORCH_DOT.sub("ember.", text)


def plain(x, lib):
    if isinstance(x, lib.Tensor):
        return ("tensor", tuple(x.shape), str(x.dtype).split(".")[-1],
                np.array(x.detach().tolist(), dtype=np.float64))
    if isinstance(x, (list, tuple)):
        return type(x)(plain(y, lib) for y in x)
    if isinstance(x, dict):
        return {k: plain(y, lib) for k, y in x.items()}
    if isinstance(x, str):
        return norm(x)
    if isinstance(x, lib.dtype):
        return norm(str(x))
    return x


def outcome(body, lib):
    """``("ok", plain value)`` or ``("error", type name, normalised message)``."""
    try:
        return ("ok", plain(body(lib), lib))
    except Exception as e:  # noqa: BLE001 - the error is what we compare
        return ("error", type(e).__name__, norm(str(e)))


def assert_same_plain(t, e, path="value"):
    if isinstance(t, tuple) and t and t[0] == "tensor":
        assert isinstance(e, tuple) and e and e[0] == "tensor", f"{path}: {e!r} vs torch {t!r}"
        assert e[1:3] == t[1:3], f"{path}: shape/dtype {e[1:3]} vs torch {t[1:3]}"
        np.testing.assert_allclose(e[3], t[3], rtol=1e-7, atol=1e-10, err_msg=path)
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t), f"{path}: {e!r} vs torch {t!r}"
        for k, (x, y) in enumerate(zip(t, e)):
            assert_same_plain(x, y, f"{path}[{k}]")
    elif isinstance(t, dict):
        assert isinstance(e, dict) and e.keys() == t.keys(), f"{path}: {e!r} vs torch {t!r}"
        for k in t:
            assert_same_plain(t[k], e[k], f"{path}[{k!r}]")
    elif isinstance(t, float):
        assert isinstance(e, float) and np.isclose(e, t, rtol=1e-7, atol=1e-10), \
            f"{path}: {e!r} vs torch {t!r}"
    else:
        assert e == t, f"{path}: ember {e!r} vs torch {t!r}"


def assert_same(body, torch, ember):
    """Run ``body`` on both libraries; same error (type and text) or the same values."""
    t = outcome(body, torch)
    e = outcome(body, ember)
    if t[0] == "error" or e[0] == "error":
        assert e == t, f"\nember: {e}\ntorch: {t}"
        return t
    assert_same_plain(t[1], e[1])
    return t
