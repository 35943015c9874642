"""gradcheck and gradgradcheck: analytical gradients against central finite differences.

The numerical Jacobian perturbs each input element by ``eps`` in both directions; the
analytical one is built row by row with ``autograd.grad``. ``fast_mode`` compares random
projections ``u^T J v`` instead of whole Jacobians, which is what large inputs need.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor, _wrap
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


def _analytical_jacobian(func, inputs, wrt, out_index):
    from . import grad as autograd_grad
    with enable_grad():
        out = _outputs(func, inputs)[out_index]
    x = inputs[wrt]._data
    n_in, n_out = x.size, out._data.size
    jac = np.zeros((n_in, n_out), np.complex128 if x.dtype.kind == "c" else np.float64)
    if not out._requires_grad:
        return jac
    for j in range(n_out):
        seed = np.zeros(out._data.size, out._data.dtype)
        seed[j] = 1
        (g,) = autograd_grad(out, inputs[wrt], _wrap(seed.reshape(out._data.shape)),
                             retain_graph=True, allow_unused=True)
        if g is not None:
            jac[:, j] = g._data.reshape(-1)
    return jac


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


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of ``func`` at ``inputs`` against finite differences."""
    inputs = _as_tuple(inputs)
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
                          stacklevel=2)
        _check_not_overlapping(inputs[i], i)
    outs = _outputs(func, inputs)
    if check_forward_ad:
        for o in _differentiable_outputs(outs):
            for i in diff:
                num = _numerical_columns(func, inputs, i, o, eps, wirtinger=False)
                if not _matches(_forward_jacobian(func, inputs, i, o), num, fast_mode, rtol,
                                atol):
                    return _fail(f"Jacobian computed with forward mode mismatch for output {o} "
                                 f"with respect to input {i},\n", raise_exception)
    if not check_backward_ad:
        return True
    complex_outs = [k for k, t in enumerate(outs) if t._data.dtype.kind == "c"]
    if not complex_outs:
        return _check_backward(func, inputs, diff, eps, atol, rtol, fast_mode, raise_exception)
    # torch's order: the imaginary parts of complex outputs first, then the real parts.
    for part, name in ((_imag_of, "imaginary"), (_real_of, "real")):
        prefix = f"While considering the {name} part of complex outputs only, "
        ok = _check_backward(_split_outputs(func, part), inputs, diff, eps, atol, rtol,
                             fast_mode, raise_exception, prefix, complex_outs)
        if not ok:
            return False
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


def _check_backward(func, inputs, diff, eps, atol, rtol, fast_mode, raise_exception,
                    prefix="", complex_outs=()):
    with enable_grad():
        outs = _outputs(func, inputs)
    for o in _differentiable_outputs(outs):
        for i in diff:
            num = _numerical_jacobian(func, inputs, i, o, eps)
            ana = _analytical_jacobian(func, inputs, i, o)
            if fast_mode:
                u = np.random.default_rng(0).standard_normal(num.shape[1])
                v = np.random.default_rng(1).standard_normal(num.shape[0])
                num, ana = np.array([[v @ num @ u]]), np.array([[v @ ana @ u]])
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                lead = prefix if o in complex_outs else ""
                return _fail(f"{lead}Jacobian mismatch for output {o} with respect to input "
                             f"{i},\nnumerical:{_wrap(num)!r}\nanalytical:{_wrap(ana)!r}\n",
                             raise_exception)
    return True


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
    """Check second derivatives: gradcheck of the (create_graph) gradient of ``func``."""
    from . import grad as autograd_grad
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
                     raise_exception=raise_exception, fast_mode=fast_mode)
