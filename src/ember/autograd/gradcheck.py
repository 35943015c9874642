"""gradcheck and gradgradcheck: analytical gradients against central finite differences.

The numerical Jacobian perturbs each input element by ``eps`` in both directions; the
analytical one is built row by row with ``autograd.grad``. ``fast_mode`` compares random
projections ``u^T J v`` instead of whole Jacobians, which is what large inputs need.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor, _wrap
from .function import Function
from .grad_mode import enable_grad, no_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients disagree."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,) if isinstance(x, Tensor) else tuple(x)


def _outputs(func, inputs):
    return tuple(o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor))


def _numerical_jacobian(func, inputs, wrt, out_index, eps):
    """d out[out_index] / d inputs[wrt] by central differences: shape (numel_in, numel_out).

    A complex input's entries are ``ds/dx + i ds/dy`` (torch's conjugate Wirtinger
    convention, for real outputs: gradcheck splits complex outputs into two real ones).
    """
    return _numerical_columns(func, inputs, wrt, out_index, eps, wirtinger=True)


def _numerical_columns(func, inputs, wrt, out_index, eps, wirtinger):
    """Central differences per input element. ``wirtinger``: a complex input element gives
    one row ``ds/dx + i ds/dy``; otherwise two rows ``ds/dx`` and ``ds/dy``."""
    x = inputs[wrt]._data
    cplx = x.dtype.kind == "c"
    rows = []
    with no_grad():
        # Index the input's own array (a strided view for a transposed or sliced input):
        # flattening would copy a non-contiguous one and perturb the copy. np.ndindex walks
        # the elements in the logical row-major order of the analytical Jacobian's rows.
        for index in np.ndindex(x.shape):
            diffs = [_difference(func, inputs, out_index, x, index, step)
                     for step in ((eps, 1j * eps) if cplx else (eps,))]
            if cplx and wirtinger:
                rows.append(diffs[0] + 1j * diffs[1])
            else:
                rows.extend(diffs)
    n_out = _outputs(func, inputs)[out_index]._data.size
    return np.array(rows).reshape(len(rows), n_out) if rows else np.zeros((0, n_out))


def _difference(func, inputs, out_index, x, index, step):
    """(f(x + step e_index) - f(x - step e_index)) / 2|step|, flattened; ``x`` is the
    input's array, perturbed in place."""
    orig = x[index]
    values = []
    for sign in (1, -1):
        x[index] = orig + sign * step
        out = _outputs(func, inputs)[out_index]._data
        values.append(out.astype(np.complex128 if out.dtype.kind == "c" else np.float64))
    x[index] = orig
    return ((values[0] - values[1]) / (2 * abs(step))).reshape(-1)


def _analytical_jacobians(func, inputs, diff, out_index):
    """d out[out_index] / d inputs[i] for each ``i`` of ``diff``, row by row (one backward
    per output element, for all the inputs at once): shapes (numel_in, numel_out)."""
    from . import grad as autograd_grad
    with enable_grad():
        out = _outputs(func, inputs)[out_index]
    n_out = out._data.size
    jacs = [np.zeros((inputs[i]._data.size, n_out),
                     np.complex128 if inputs[i]._data.dtype.kind == "c" else np.float64)
            for i in diff]
    if not out._requires_grad:
        return jacs
    for j in range(n_out):
        seed = np.zeros(n_out, out._data.dtype)
        seed[j] = 1
        grads = autograd_grad(out, [inputs[i] for i in diff],
                              _wrap(seed.reshape(out._data.shape)), retain_graph=True,
                              allow_unused=True)
        for jac, g in zip(jacs, grads):
            if g is not None:
                jac[:, j] = g._data.reshape(-1)
    return jacs


def _forward_jacobian(func, inputs, wrt, out_index):
    """d out[out_index] / d inputs[wrt] by forward-mode AD, one tangent per input element
    (two for a complex element: along its real and its imaginary axis)."""
    from . import forward_ad as fwAD
    x = inputs[wrt]
    steps = (1, 1j) if x._data.dtype.kind == "c" else (1,)
    cols = []
    for k in range(x._data.size):
        for step in steps:
            basis = np.zeros(x._data.size, x._data.dtype)
            basis[k] = step
            with fwAD.dual_level():
                args = list(inputs)
                args[wrt] = fwAD.make_dual(x, _wrap(basis.reshape(x._data.shape)))
                out = _outputs(func, args)[out_index]
                tangent = fwAD.unpack_dual(out).tangent
            n_out = out._data.size
            cols.append(np.zeros(n_out) if tangent is None else tangent._data.reshape(-1))
    n_out = _outputs(func, inputs)[out_index]._data.size
    return np.array(cols).reshape(len(cols), n_out) if cols else np.zeros((0, n_out))


def _matches(ana, num, fast_mode, rtol, atol):
    if fast_mode:
        u = np.random.default_rng(0).standard_normal(num.shape[1])
        v = np.random.default_rng(1).standard_normal(num.shape[0])
        num, ana = np.array([[v @ num @ u]]), np.array([[v @ ana @ u]])
    return np.allclose(ana, num, rtol=rtol, atol=atol)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of ``func`` at ``inputs`` against finite differences, then (as
    torch) the backward's reentrancy within ``nondet_tol``, batched gradients
    (``check_batched_grad``), that a zero grad_output gives zero gradients and that zero
    (undefined) output gradients are handled (``check_undefined_grad``)."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad "
                             "to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to "
                             "be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires "
                             "check_forward_ad to be True")
    try:
        return _gradcheck(func, _as_tuple(inputs), eps, atol, rtol, nondet_tol,
                          check_undefined_grad, check_batched_grad, check_forward_ad,
                          check_backward_ad, fast_mode, masked)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
               check_batched_grad, check_forward_ad, check_backward_ad, fast_mode, masked):
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")
    for i in diff:
        if inputs[i]._data.dtype not in (np.float64, np.complex128):
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", UserWarning,
                          stacklevel=3)
        _check_not_overlapping(inputs[i], i)
    outs = _outputs(func, inputs)
    if check_forward_ad:
        for o in _differentiable_outputs(outs):
            for i in diff:
                num = _numerical_columns(func, inputs, i, o, eps, wirtinger=False)
                if not _matches(_forward_jacobian(func, inputs, i, o), num, fast_mode, rtol,
                                atol):
                    raise GradcheckError(f"Jacobian computed with forward mode mismatch for "
                                         f"output {o} with respect to input {i},\n")
    if not check_backward_ad:
        return True
    complex_outs = [k for k, t in enumerate(outs) if t._data.dtype.kind == "c"]
    if not complex_outs:
        _check_backward(func, inputs, diff, eps, atol, rtol, fast_mode, nondet_tol)
    else:
        # torch's order: the imaginary parts of complex outputs first, then the real parts.
        for part, name in ((_imag_of, "imaginary"), (_real_of, "real")):
            prefix = f"While considering the {name} part of complex outputs only, "
            _check_backward(_split_outputs(func, part), inputs, diff, eps, atol, rtol,
                            fast_mode, nondet_tol, prefix, complex_outs)
    with enable_grad():
        outs = _outputs(func, inputs)
    checked = [outs[k] for k in _differentiable_outputs(outs)]
    wrt = [inputs[i] for i in diff]
    if check_batched_grad:
        for k, out in enumerate(checked):
            _check_batched_grad(out, k, wrt)
    _check_zero_grad_output(checked, wrt, masked)
    if check_undefined_grad:  # (graphs of its own: the checks above freed theirs)
        _check_undefined_grad(func, inputs, wrt)
    return True


def _check_not_overlapping(t, index):
    """Refuse an input with a stride-0 dimension (an expanded one), as torch does: perturbing
    one of its elements would perturb every element sharing its memory."""
    if not all(st > 0 or sz <= 1 for st, sz in zip(t.stride(), t.shape)):
        raise RuntimeError(f"The {index}th input has a dimension with stride 0. gradcheck only "
                           "supports inputs that are non-overlapping to be able to compute the "
                           "numerical gradients correctly. You should call .contiguous on the "
                           "input before passing it to gradcheck.")


def _differentiable_outputs(outs):
    """The positions of the outputs that require grad: the only ones torch checks (a float
    output autograd does not track, like native_batch_norm's statistics, is left out)."""
    return [k for k, t in enumerate(outs) if t._requires_grad]


def _check_backward(func, inputs, diff, eps, atol, rtol, fast_mode, nondet_tol,
                    prefix="", complex_outs=()):
    with enable_grad():
        outs = _outputs(func, inputs)
    for o in _differentiable_outputs(outs):
        numerical = [_numerical_jacobian(func, inputs, i, o, eps) for i in diff]
        analytical = _reentrant_jacobians(func, inputs, diff, o, nondet_tol)
        for i, num, ana in zip(diff, numerical, analytical):
            if fast_mode:
                u = np.random.default_rng(0).standard_normal(num.shape[1])
                v = np.random.default_rng(1).standard_normal(num.shape[0])
                num, ana = np.array([[v @ num @ u]]), np.array([[v @ ana @ u]])
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                lead = prefix if o in complex_outs else ""
                raise GradcheckError(f"{lead}Jacobian mismatch for output {o} with respect to "
                                     f"input {i},\nnumerical:{_wrap(num)!r}\n"
                                     f"analytical:{_wrap(ana)!r}\n")


_FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""


def _reentrant_jacobians(func, inputs, diff, out_index, nondet_tol):
    """The analytical Jacobians of output ``out_index`` (one per input of ``diff``), the
    backward run twice over as torch runs it: results further apart than ``nondet_tol``
    are its GradcheckError (a nondeterministic backward)."""
    first = _analytical_jacobians(func, inputs, diff, out_index)
    again = _analytical_jacobians(func, inputs, diff, out_index)
    for a, b in zip(first, again):
        if a.size and np.abs(a - b).max() > nondet_tol:
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values, although analytical "
                "gradient matches numerical gradient."
                f"The tolerance for nondeterminism was {nondet_tol}." + _FAILED_NONDET_MSG)
    return first


_FAILED_BATCHED_GRAD_MSG = """
gradcheck or gradgradcheck failed while testing batched gradient computation.
This could have been invoked in a number of ways (via a test that calls
gradcheck/gradgradcheck directly or via an autogenerated test).

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `check_batched_grad=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `check_batched_grad=False` and/or `check_batched_gradgrad=False`.

If you're modifying an existing operator that supports batched grad computation,
or wish to make a new operator work with batched grad computation, please read
the following.

To compute batched grads (e.g., jacobians, hessians), we vmap over the backward
computation. The most common failure case is if there is a 'vmap-incompatible
operation' in the backward pass. Please see
NOTE: [How to write vmap-compatible backward formulas]
in the codebase for an explanation of how to fix this.
""".strip()


def _check_batched_grad(out, out_index, wrt):
    """Two vector-Jacobian products of ``out`` against one batched backward of both
    (``is_grads_batched``: the batched formulas ops declare), as torch's check compares them
    with a vmap over its backward; the grad_outputs are torch's draws (randn_like twice)."""
    from . import grad as autograd_grad
    from .._creation import randn_like
    from .._ops.shape import stack

    def vjp(v, batched=False):
        grads = autograd_grad(out, wrt, v, retain_graph=True, allow_unused=True,
                              is_grads_batched=batched)
        return [g if g is not None else _zeros_for(x, v.shape[:1] if batched else ())
                for g, x in zip(grads, wrt)]

    grad_outputs = [randn_like(out) for _ in range(2)]
    expected = [stack(rows) for rows in zip(*(vjp(v) for v in grad_outputs))]
    try:
        result = vjp(stack(grad_outputs), batched=True)
    except RuntimeError as ex:
        raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n"
                             f"{_FAILED_BATCHED_GRAD_MSG}") from ex
    for k, (res, exp) in enumerate(zip(result, expected)):
        if not np.allclose(res._data, exp._data, rtol=1e-5, atol=1e-8):
            raise GradcheckError(f"For output {out_index} and input {k}:\n\n"
                                 f"{_FAILED_BATCHED_GRAD_MSG}\n\nGot:\n{res}\n\n"
                                 f"Expected:\n{exp}")


def _zeros_for(x, batch):
    from .._creation import zeros
    return zeros(tuple(batch) + tuple(x.shape), dtype=x.dtype, device=x.device)


def _check_zero_grad_output(outs, wrt, masked):
    """torch's test that the backward multiplies by grad_output: zero grad_outputs must give
    zero gradients (close to zero under ``masked``) of the inputs' dtype and size."""
    from . import grad as autograd_grad
    from .._creation import zeros_like
    grads = autograd_grad(outs, wrt, [zeros_like(o) for o in outs], allow_unused=True)
    for g, x in zip(grads, wrt):
        if g is None:
            continue
        if g.layout != x.layout:
            raise GradcheckError(f"grad is incorrect layout ({g.layout} is not {x.layout})")
        values = g.to_dense()._data if g.is_sparse else g._data
        zero = np.allclose(values, 0, rtol=1e-5, atol=1e-8) if masked else not values.any()
        if not zero:
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != x.dtype:
            raise GradcheckError("grad is incorrect type")
        if g.device != x.device:
            raise GradcheckError("grad is incorrect device")
        if g.shape != x.shape:
            raise GradcheckError("grad is incorrect size")


def _check_undefined_grad(func, inputs, wrt):
    """torch's check that backward functions take undefined output gradients: with every
    output's gradient undefined, then (for several outputs) one at a time with the others'
    zero, the input gradients must be None or zero, without a RuntimeError (any other
    exception, as a backward doing arithmetic on None, propagates as in torch)."""
    with enable_grad():
        checked = _differentiable_outputs_of(func, inputs)
        cases = [[_UndefinedGrad.apply(o) for o in checked]]
        if len(checked) > 1:
            for k in range(len(checked)):
                outs = _differentiable_outputs_of(func, inputs)
                cases.append([_UndefinedGrad.apply(o) if j == k else o
                              for j, o in enumerate(outs)])
    for outs in cases:
        _check_undefined_grad_case(outs, wrt)


def _differentiable_outputs_of(func, inputs):
    outs = _outputs(func, inputs)
    return [outs[k] for k in _differentiable_outputs(outs)]


class _UndefinedGrad(Function):
    """The identity whose backward gives an undefined (None) gradient, torch's
    ``torch._C._functions.UndefinedGrad``: the nodes below it are reached with undefined
    gradients, and a custom Function's backward gets None where it does not materialize
    them."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return None


def _check_undefined_grad_case(outs, wrt):
    import warnings

    from . import grad as autograd_grad
    from .._creation import zeros_like

    def warn_bc_breaking():
        warnings.warn("Backwards compatibility: New undefined gradient support checking "
                      "feature is enabled by default, but it may break existing callers of "
                      "this function. If this is true for you, you can call this function "
                      'with "check_undefined_grad=False" to disable the feature',
                      stacklevel=2)

    notes = ('Please look at "Notes about undefined output gradients" in '
             '"tools/autograd/derivatives.yaml"')
    try:
        grads = autograd_grad(outs, wrt, [zeros_like(o) for o in outs], allow_unused=True)
    except RuntimeError as e:
        warn_bc_breaking()
        raise GradcheckError(f"Expected backward function to handle undefined output grads. "
                             f"{notes}") from e
    for g in grads:
        if g is not None and (g.to_dense() if g.is_sparse else g)._data.any():
            warn_bc_breaking()
            raise GradcheckError("Expected all input grads to be undefined or zero when all "
                                 f"output grads are undefined or zero. {notes}")


def _real_of(t):
    return t.real


def _imag_of(t):
    return t.imag


def _split_outputs(func, part):
    """``func`` with each complex output replaced by its real or imaginary part."""
    def split(*args):
        return tuple(part(o) if o._data.dtype.kind == "c" else o for o in _outputs(func, args))
    return split


def _random_grad_output(out, noncontiguous):
    """A gradient for ``out`` drawn as torch's gradgradcheck draws it (make_tensor: uniform
    in [-1, 1) from the default generator, every other element when ``noncontiguous``), so
    that a program's later random numbers are torch's too."""
    from .. import _dtype as D
    from .._creation import empty
    from .._ops.strided import view_as_real
    dtype = out.dtype if out.dtype.category in (D.FLOATING, D.COMPLEX) else D.float64
    shape = tuple(out.shape)
    if noncontiguous and shape:
        shape = shape[:-1] + (2 * shape[-1],)
    t = empty(shape, dtype=dtype, device=out.device)
    (view_as_real(t) if dtype.category == D.COMPLEX else t).uniform_(-1, 1)
    if noncontiguous and t.numel() > 1:
        t = t[..., ::2]
    return t.requires_grad_()


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check second derivatives: gradcheck of the (create_graph) gradient of ``func``, with
    gradcheck's options."""
    from . import grad as autograd_grad
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev "
                             "to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to "
                             "be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to "
                             "be True")
    inputs = _as_tuple(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    with enable_grad():
        outs = _outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs)
                             for o in outs if o._requires_grad)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_derivatives(*args):
        ins, gos = args[:n_in], args[n_in:]
        # NOTE: the numerical Jacobian evaluates this under no_grad; the first derivatives
        # need a graph of func all the same (torch's gradgradcheck does this too).
        with enable_grad():
            outs = [o for o in _outputs(func, ins) if o._requires_grad]
            grads = autograd_grad(outs, [ins[i] for i in diff], gos, create_graph=True,
                                  allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     fast_mode=fast_mode, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, masked=masked)
