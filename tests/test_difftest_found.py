"""Differences the random-program generator (tests/difftest) found, shrunk to the program
steps that show them, each checked against torch (``oracle.same``; skipped without torch).
The docstring of each test names the run that found it."""
from __future__ import annotations

import pytest

from oracle import same, torch_or_skip


def test_batch_norm_in_eval_with_a_negative_running_variance_is_quiet():
    """Seed 30000231: NaN where torch gives NaN, without NumPy's sqrt warning."""
    def body(t):
        m = t.nn.BatchNorm1d(4)
        m(t.tensor([[1.54, 0.22, 1.71, -0.6], [1.24, -1.44, 0.77, -0.44]], requires_grad=True))
        m.running_var.neg_()
        m.eval()
        return m(t.ones(4, 4, requires_grad=True))
    same(body)


def test_singular_matrix_error_is_torchs_class():
    """Seed 30000341: torch.linalg.LinAlgError is torch._C._LinAlgError, reported by that
    name."""
    def body(t):
        try:
            t.linalg.inv(t.zeros(2, 3, 3, dtype=t.float64))
        except t.linalg.LinAlgError as e:
            return type(e).__name__, str(e), isinstance(e, RuntimeError)
    same(body)


def _scatter_and_index_reduce_warnings(t):
    import warnings
    x = t.tensor([-1.62, 0.3, -1.21])
    index = t.tensor([2, 0, 2])
    t.scatter(x, -1, index, x, reduce="add")  # (the process's first warning)
    x.index_reduce(0, index[:1], x[:1], "prod")
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        out = t.scatter(x, -1, index, x, reduce="add"), x.index_reduce(0, index, x, "amax")
        t.set_warn_always(True)
        try:
            t.scatter(x, 0, index, x, reduce="multiply")
            x.index_reduce(0, index, x, "mean")
        finally:
            t.set_warn_always(False)
    return out, [str(w.message).split(" (Triggered")[0] for w in later]


def _same_in_a_fresh_process(body_name):
    """``same(body)`` in a new Python process: a once-per-process warning's test needs a
    process where no other test has warned it (or made Python's warning registry skip it)."""
    import pathlib
    import subprocess
    import sys
    torch_or_skip()
    here = pathlib.Path(__file__).resolve().parent
    code = (f"import sys; sys.path[:0] = [{str(here)!r}]\n"
            "from oracle import same\n"
            f"from test_difftest_found import {body_name}\n"
            f"same({body_name})\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_scatter_with_a_reduce_and_index_reduce_warn_once_per_process():
    """Seeds 12 and 25 of the bounded run: torch's deprecation of ``scatter(..., reduce=)``
    with a tensor source and its beta warning of ``index_reduce`` are TORCH_WARN_ONCE (every
    time only under ``set_warn_always(True)``); ember's scatter warned at every call, its
    index_reduce never again even with warnings always on."""
    _same_in_a_fresh_process("_scatter_and_index_reduce_warnings")


def test_clamp_reads_a_0_dim_tensor_beside_a_number_as_a_number():
    """Seed 35 of the bounded run: torch's argument parser takes a 0-dim tensor that requires
    no grad for a Number, so ``clamp(x, -2, tensor(0.69))`` is clamp's Number overload (of the
    tensor's value and kind); ember refused the mix of a number and a tensor."""
    def body(t):
        x = t.tensor([[-1.95], [-0.5], [0.5]], requires_grad=True)
        out = [t.clamp(x, -2, t.tensor(0.69, dtype=t.float16)), x.clip(t.tensor(-1), 0.25),
               t.clamp(x.detach().long(), -2, t.tensor(0.5)),
               t.clamp(x.detach().long(), -2, t.tensor(True)),
               x.detach().clone().clamp_(max=t.tensor(0.0, dtype=t.float64), min=-1)]
        out[0].sum().backward()
        return out, x.grad
    same(body)


def test_clamp_refuses_a_number_beside_a_tensor_that_is_no_number():
    """A 0-dim tensor that requires grad, or one with dimensions, is no Number: both refuse
    the mix with torch's TypeError, which lists the arguments as they were passed
    (positionally or by keyword; the method's without ``self``, the in-place function's
    signatures without ``out``) and, for the signatures of as many parameters as given, why
    they did not match (seeds 42000199 and 42000382: ``t2.clip(t2, -2)``)."""
    def body(t):
        x = t.tensor([[-1.95], [-0.5], [0.5]], requires_grad=True)
        y = x.detach().clone()
        messages = []
        for bound in (t.tensor(0.69, requires_grad=True), t.tensor([0.69])):
            for call in (lambda: t.clamp(x, -2, bound), lambda: x.clip(bound, -2),
                         lambda: t.clip(x, min=bound, max=-2), lambda: x.clamp(max=-2, min=bound),
                         lambda: t.clamp(x, -2, max=bound), lambda: y.clamp_(bound, -2),
                         lambda: t.clamp_(y, -2, bound), lambda: y.clip_(min=bound, max=2),
                         lambda: t.clamp(x, bound, -2, out=y),
                         lambda: t.clamp(input=x, min=bound, max=1.5),
                         lambda: t.clamp(x, 1, 2, 3), lambda: x.clamp(1, "a")):
                try:
                    call()
                except TypeError as e:
                    messages.append(str(e))
        return messages, t.clamp_(input=y, min=-1, max=0.25), t.clip_(y, max=0.0)
    same(body)


def _same_padding_warnings(t):
    import warnings
    x = t.tensor([[[-1.96, 1.39], [0.08, 1.79]]], requires_grad=True)
    w = t.tensor([[[1.27, -0.39]], [[-1.49, 0.45]]], requires_grad=True)
    t.nn.functional.conv1d(x, w, groups=2, padding="same")  # (the process's first warning)
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        out = t.nn.functional.conv1d(x, w, groups=2, padding="same")
        t.set_warn_always(True)
        try:
            t.nn.functional.conv1d(x, w, groups=2, padding="same")
        finally:
            t.set_warn_always(False)
    return out, [str(w.message) for w in later]


def test_same_padding_of_an_even_kernel_warns_once_per_process():
    """Seed 42000150: torch's warning that ``padding='same'`` with an even kernel may copy the
    input is a TORCH_WARN_ONCE (with its internal origin); ember's came at every call."""
    _same_in_a_fresh_process("_same_padding_warnings")


def test_index_put_writes_what_torch_visits_before_an_index_out_of_range():
    """Seed 42000268: ``t.select(2, 0).index_put_((tensor([1, 3]),), v)`` on 3 rows: torch's
    kernel visits the indexing result in C order, writes row 1, then raises at index 3;
    ember wrote nothing. The error names the index tensor's position among the index
    tensors ('dimension 1' for ``x[i, :, j]``), also when accumulating (NumPy's 'axis')."""
    cases = [
        lambda t, x: x.index_put_((t.tensor([1, 3]),), t.tensor([1.5, 2.5, 3.5])),
        lambda t, x: x.index_put_((t.tensor([2, 0]), t.tensor([0, -9])), t.tensor(1.0), True),
        lambda t, x: x.__setitem__((slice(None), t.tensor([1, 3, 0])), 7.0),
        lambda t, x: x.__setitem__((t.tensor([[0], [1]]), t.tensor([0, 4, 1])), 5.0),
        lambda t, x: x.__setitem__(t.tensor([1, 1, 5]), t.arange(9.0).view(3, 3) + 1),
        lambda t, x: x.view(3, 1, 3).__setitem__((t.tensor([1, 0]), slice(None),
                                                  t.tensor([0, 3])), 5.0),
    ]

    def body(t):
        out = []
        for case in cases:
            x = t.zeros(3, 3)
            try:
                case(t, x)
            except IndexError as e:
                out.append((str(e), x.clone(), x._version))
        return out
    same(body)


def test_a_cube_and_a_power_of_minus_two_round_as_torchs_kernel():
    """Seed 43000167: torch's pow kernel multiplies out ``x ** 3`` (``x * x * x``, two
    roundings) and takes ``1 / (x * x)`` for ``x ** -2``; ember's C pow rounded once, a float32
    ulp apart (-2.3 ** 3), which ``float_power`` of the result magnified."""
    import numpy as np
    values = (np.random.default_rng(0).standard_normal(4000) * 3).astype(np.float32)

    def body(t):
        out = []
        for dtype in (t.float32, t.float64):
            x = t.tensor(values, dtype=dtype, requires_grad=True)
            cube, inverse_square = x ** 3, t.pow(x, -2.0)
            (x ** 4).sum().backward()  # (its gradient takes x ** 3)
            out += [cube, inverse_square, x.clone().pow_(3), x.grad]
        return out
    same(body, rtol=0, atol=0)


def test_softmin_to_a_dtype_negates_before_converting():
    """Seed 43000196: torch's softmin with ``dtype=`` is ``(-x).softmax(dim, dtype=dtype)``, a
    ToCopyBackward0 after NegBackward0; ember converted first."""
    def body(t):
        x = t.tensor([[0.99, 0.0, -0.2], [1.54, 0.72, 1.04]], requires_grad=True)
        y = t.nn.functional.softmin(x, -1, dtype=t.float64)
        first = y.grad_fn.next_functions[0][0]
        return y, first.name(), first.next_functions[0][0].name()
    same(body)


def test_a_multi_grad_hook_over_the_single_root_never_fires():
    """Seeds 40000205 and 43000343: torch's engine starts a backward pass of one root at the
    root's node, which ``_will_engine_execute_node`` does not count, so a multi-grad hook
    ("all") over the root tensor waits for no gradient and never fires (with a second root,
    or below the root, it does); ember's fired."""
    def body(t):
        x = t.tensor([[-0.8, -1.5], [1.23, -0.73]], requires_grad=True)
        unused = t.einsum("ij->j", x)
        calls = []

        def run(tag, tensors, go):
            handle = t.autograd.graph.register_multi_grad_hook(
                tensors, lambda gs: calls.append((tag, [None if g is None else g.clone()
                                                        for g in gs])), mode="all")
            go()
            handle.remove()
        gelu = t.nn.functional.gelu
        y = gelu(x)
        run("root", (y, unused), lambda: y.backward(t.ones(2, 2)))
        y = gelu(x)
        run("root, inputs", (y, x), lambda: y.backward(t.ones(2, 2), inputs=[x]))
        y = gelu(x)
        run("grad", (y,), lambda: t.autograd.grad(y, [x], t.ones(2, 2)))
        y = gelu(x)
        run("below the root", (y, unused), lambda: (y * 2).sum().backward())
        y = gelu(x)
        run("two roots", (y,), lambda: t.autograd.backward([y, y * 2], [t.ones(2, 2)] * 2))
        return calls
    same(body)


def test_the_version_error_names_bfloat16_and_complex_tensors_by_their_type_objects():
    """Seed 41000391: torch's "modified by an inplace operation" error names a bfloat16 or
    complex tensor ``CPUBFloat16Type``, ``CPUComplexFloatType``... (as a bool one,
    ``CPUBoolType``), the others by their legacy tensor types; ember's said
    ``BFloat16Tensor``."""
    def body(t):
        messages = []
        for dtype in (t.float32, t.float16, t.bfloat16, t.complex64, t.complex128):
            x = t.tensor([1.0, 2.0], requires_grad=True)
            y = x.to(dtype) * 1
            z = y * y
            y.add_(1)
            try:
                z.sum().abs().backward()
            except RuntimeError as e:
                messages.append(str(e))
        return messages
    same(body)


def test_batch_norm_of_a_batch_with_an_infinity_is_quiet():
    """Seed 41000184: ``BatchNorm1d`` of a float32 batch of (N, C, L) holding inf gives NaN
    statistics, as torch's, without NumPy's "invalid value encountered in subtract"."""
    def body(t):
        m = t.nn.BatchNorm1d(3)
        x = t.tensor([[[0.82, float("inf"), -0.28], [0.81, -1.72, -1.75], [2.0, 0.97, 0.5]],
                      [[-0.48, 1.51, -0.75], [1.15, -0.55, 1.8], [0.53, 1.3, -0.25]]],
                     requires_grad=True)
        out = m(x)
        out.sum().backward()
        return out, x.grad, m.running_mean, m.running_var
    same(body, atol=1e-6)  # (the finite channels' gradients cancel to float32 rounding)


def _error_of(call):
    """The message ``call()`` raises (None when it returns)."""
    try:
        call()
    except RuntimeError as e:
        return str(e)
    return None


def test_backward_with_a_non_leaf_input_runs_its_node():
    """Seeds 40000148 and 40000389: ``backward(inputs=[t])`` of a non-leaf ``t`` runs t's
    node, as torch's engine marks it needed: it computes no gradient for its children (its
    post hook sees None) but unpacks and frees what it saved, so a version error of a saved
    tensor is raised, and a later pass through the node refuses; ember only retained the
    gradient."""
    def body(t):
        calls = []
        x = t.tensor([-1.04, -0.86], requires_grad=True)
        y = t.nn.functional.l1_loss(x, x, reduction="none")
        y.grad_fn.register_prehook(lambda gs: calls.append(("pre", gs)))
        y.grad_fn.register_hook(lambda gi, go: calls.append(("post", gi, go)))
        t.autograd.backward([y], [t.tensor([-0.94, 0.37])], inputs=[y])
        again = _error_of(lambda: t.autograd.grad(y.sum(), [x], retain_graph=True))
        twice = _error_of(lambda: y.sum().backward(inputs=[y]))
        plus = x + 1  # (saves nothing: it runs again)
        plus.sum().backward(inputs=[plus])
        plus.sum().backward(inputs=[plus])
        b = x.clone()
        c = b * b
        b.add_(1)
        version = _error_of(lambda: t.autograd.backward([c], [t.ones(2)], inputs=[c]))
        return calls, y.grad, x.grad, again, twice, plus.grad, version, c.grad
    same(body)



def test_a_root_the_pass_does_not_run_calls_no_tensor_hook():
    """Seed 42000293: of several roots, one that leads to no input of ``autograd.grad`` (or
    of ``backward(inputs=)``) is never queued by torch's engine: its ``retain_grad()`` and
    tensor hooks see nothing (a sole root is queued, and they run); ember set its
    ``.grad``."""
    def body(t):
        calls = []
        x = t.tensor([1.0, 2.0], requires_grad=True)
        p = t.tensor([3.0, 4.0], requires_grad=True)
        b = p * 3
        b.retain_grad()
        b.register_hook(lambda g: calls.append(("b", g)))
        y = x * 5
        ones = [t.ones(2), t.ones(2)]
        got = t.autograd.grad([b, y], [x], ones, retain_graph=True)
        t.autograd.backward([b, y], ones, inputs=[x], retain_graph=True)
        alone = t.autograd.grad([b], [x], ones[:1], allow_unused=True)
        return calls, got, b.grad, x.grad, alone
    same(body)


def test_a_transform_under_no_grad_of_a_split_output_written_in_place():
    """Seeds 42000250 and 42000392: a ``split`` output written in place (under no_grad, or
    through ``detach()``) has a history that may not be read, yet under no_grad
    ``torch.func.grad`` and ``vjp`` differentiate it (torch's wrapper never reads it); with
    grad mode on, where the outer graph would record through it, they refuse it as torch's.
    ember refused it under no_grad too."""
    def body(t):
        x = t.tensor([-0.06, 1.85, -0.03, 0.21], requires_grad=True)
        part, other = x.split(2, 0)
        with t.no_grad():
            part.add_(part)
        other.detach().clamp_(0.5, 0.53)
        out = []
        for v in (part, other):
            with t.no_grad():
                value, vjp = t.func.vjp(lambda u: t.sinh(u).sum(), v)
                out += [value, vjp(t.ones_like(value)),
                        t.func.grad(lambda u: (t.exp(u) * x[:2]).sum())(v),
                        t.func.grad(t.func.grad(lambda u: t.exp(u).sum()))(v.sum())]
            out.append(_error_of(lambda: t.func.grad(lambda u: t.exp(u).sum())(v)))
        return out
    same(body)


def test_aminmax_of_an_inference_tensor_shows_its_kernels_writes():
    """Seed 43000420: outside inference mode, ``aminmax`` of an inference tensor runs
    torch's kernel alone, whose fill_ (a full reduction, a 0-d input) or unsqueeze_ and
    squeeze_ (along a dimension, without keepdim) show in its results' versions."""
    def body(t):
        with t.inference_mode():
            inputs = [t.tensor(2.0), t.tensor([[1.0, 3.0], [2.0, 0.5]]), t.zeros(2, 0),
                      t.tensor([1, 3])]
        versions = []
        for x in inputs:
            for kw in ({}, {"keepdim": True}, {"dim": 0}, {"dim": 0, "keepdim": True}):
                if x.numel() or "dim" in kw:
                    versions.append([r._version for r in t.aminmax(x, **kw)])
        plain = t.tensor([1.0, 2.0], requires_grad=True)
        return versions, [r._version for r in plain.aminmax(dim=0)]
    same(body)


def test_grad_output_mismatch_messages_find_positions_as_torchs_list_index():
    """Seed 41000230: torch's "Mismatch in shape" (and dtype) message finds its positions
    by ``grads.index(grad)`` and ``outputs.index(out)``, which compare the tensors before
    the match with ``==``: tensors that do not broadcast raise torch's size error, several
    elements its ambiguous-bool error, and one equal element gives an earlier position."""
    def body(t):
        x = t.ones(2, requires_grad=True)
        calls = [((t.ones(4), t.ones(3, 1)), (t.ones(4), t.ones(3, 2))),
                 ((t.ones(2), t.ones(3)), (t.ones(2), t.ones(2))),
                 ((t.ones(1), t.ones(1)), (None, t.ones(3))),
                 ((t.ones(1), t.ones(2)), (t.ones(1), t.ones(2, dtype=t.complex64))),
                 ((t.ones(1), t.ones(2)), (t.ones(1), t.ones(1)))]
        errors = []
        for outputs, grads in calls:
            outputs = [o.requires_grad_() * 1 for o in outputs]
            errors.append(_error_of(lambda: t.autograd.grad(outputs, [outputs[0]], grads)))
            errors.append(_error_of(lambda: t.autograd.backward(outputs, grads)))
        for grads in ((t.ones(3, 2), t.ones(3, 4)), (t.ones(3, 1, 1), t.ones(3, 2))):
            errors.append(_error_of(lambda: t.autograd.grad([x * 1, x * 2], [x], grads,
                                                            is_grads_batched=True)))
        try:
            t.autograd.grad([x.sum()], [x], [t.tensor(1.0)], is_grads_batched=True)
        except IndexError as e:
            errors.append(str(e))
        return errors
    same(body)


def test_argument_errors_of_registry_ops_are_torchs():
    """torch's parser refuses None where a tensor is required (``torch.add(t, None)``, a
    TypeError naming the argument; ember's kernel raised NumPy's error, ``bmm`` an
    AttributeError), counts "1 positional argument" and lists missing arguments its own way;
    scatter's shape check names ``self``, and a node's invalid gradient is numbered among
    the edges torch's node has (scatter_add's src is 1: its index has no edge)."""
    def body(t):
        x = t.ones(2, 2, 2)
        messages = []
        for call in (lambda: t.bmm(x, None), lambda: x.bmm(None), lambda: t.add(x, None),
                     lambda: x.add(None), lambda: t.add(None, x), lambda: t.mul(x, None),
                     lambda: t.exp(x, 1), lambda: t.tanh(x, 1, 2), lambda: t.sigmoid(),
                     lambda: t.atan2(),
                     lambda: t.scatter_add(t.zeros(3), 0, t.tensor([[0, 1]]), t.ones(4)),
                     lambda: t.zeros(3).scatter_(0, t.tensor([[0, 1]]), 1.0),
                     lambda: t.gather(t.zeros(3), 0, t.tensor([[0, 1]]))):
            try:
                call()
            except (TypeError, RuntimeError) as e:
                messages.append((type(e).__name__, str(e)))
        base = t.zeros(2, 3, requires_grad=True)
        src = t.ones(2, 4, requires_grad=True)
        try:
            t.scatter_add(base, 1, t.tensor([[0, 1, 2, 2]]), src).sum().backward()
        except RuntimeError as e:
            messages.append(str(e))
        return messages
    same(body)


def test_a_scalar_keyword_refuses_what_is_no_number():
    """torch's schemas declare add's and sub's ``alpha`` and addcmul's ``value`` a Number:
    ``alpha=None`` raises its TypeError (ember took it for the default 1, silently)."""
    def body(t):
        x = t.ones(2)
        messages = []
        for call in (lambda: t.add(x, x, alpha=None), lambda: t.add(x, x, alpha="a"),
                     lambda: x.add(x, alpha=None), lambda: t.sub(x, x, alpha=None),
                     lambda: x.clone().sub_(x, alpha=None), lambda: x.clone().add_(x, alpha=[1]),
                     lambda: t.addcmul(x, x, x, value=None),
                     lambda: x.addcdiv(x, x, value=t.ones(1))):
            try:
                call()
            except TypeError as e:
                messages.append(str(e))
        return messages, x.add(x, alpha=t.tensor(2.0)), x.add_(x, alpha=2)
    same(body)


def test_binary_cross_entropy_takes_weight_none_by_position():
    """Seed 42000247 of a run after 781a828: the refusal of None where a tensor is required
    took ``binary_cross_entropy``'s weight, which its op declares without a default, for
    one; None is refused only by a call that failed already."""
    def body(t):
        x = t.tensor([0.3, 0.6], dtype=t.float64, requires_grad=True)
        y = t.tensor([0.5, 0.2], dtype=t.float64)
        bce = t.nn.functional.binary_cross_entropy
        return bce(x, y, None), bce(x, y, weight=None, reduction="sum"), bce(x, y)
    same(body)


def test_where_with_one_of_input_and_other_refuses():
    """``where(c, x, None)`` (or ``None`` first, or one of them by keyword) fits none of
    torch's overloads: its TypeError lists them, the arguments as passed; ember's gave a
    tensor of Python objects that could not even be printed."""
    def body(t):
        x = t.ones(2)
        messages = []
        for call in (lambda: t.where(x > 0, x, None), lambda: t.where(x > 0, None, x),
                     lambda: x.where(x > 0, None), lambda: t.where(x > 0, other=x),
                     lambda: t.where(x > 0, input=x)):
            try:
                call()
            except TypeError as e:
                messages.append(str(e))
        return messages, t.where(x > 0, x, 2.0), t.where(x > 0)
    same(body)


def test_add_and_sub_with_an_alpha_refuse_none_and_their_in_place_forms_too():
    """``torch.sub(x, None, alpha=2)`` was NaN in ember (NumPy reads None as NaN where the
    fused multiply-add casts its number operand), silently; torch refuses the None. The
    in-place forms refuse a non-tensor operand with the method's message (``x.sub_(None)``:
    NumPy's casting error before)."""
    def body(t):
        x = t.ones(2)
        messages = []
        for call in (lambda: t.sub(x, None, alpha=2), lambda: x.add(None, alpha=2),
                     lambda: t.add(None, x, alpha=2), lambda: x.sub_(None, alpha=0.5),
                     lambda: x.sub_(None), lambda: x.mul_(None), lambda: x.add_("a"),
                     lambda: x.mul_([1, 2]), lambda: x.atan2_(None)):
            try:
                call()
            except TypeError as e:
                messages.append(str(e))
        return messages, x
    same(body)


def _float16_updates_by_numbers(t):
    b = t.tensor([0.1257, -0.1321, -0.7036, -0.3203], dtype=t.float16)
    return [b.clone().mul_(-0.37), b.clone().div_(-0.37), b.clone().add_(-0.37),
            b.clone().sub_(0.37), b * -0.37, b / -0.37]


def test_float16_update_by_a_number_while_ops_are_intercepted_keeps_it_in_float32():
    """Seed 47000088: ``b.mul_(-0.37)`` of a float16 ``b`` inside a forward AD level (or a
    compiled function's recording call) took the general in-place path, which gave NumPy the
    Python number to round to float16 first: torch's mul and div take it in float32."""
    def body(t):
        with t.autograd.forward_ad.dual_level():
            t.autograd.forward_ad.make_dual(t.ones(1), t.ones(1))
            return _float16_updates_by_numbers(t), _float16_updates_by_numbers(t)
    same(body, rtol=0, atol=0)


def test_float16_update_by_a_number_in_a_compiled_recording_call_is_eagers():
    """The same updates in a compiled function's recording call (its first) and in its
    replays give eager's values. (torch.compile's own kernels round differently from torch's
    eager ones, so the reference is eager, checked against torch above.)"""
    import warnings
    import ember
    import numpy as np
    eager = [x.numpy() for x in _float16_updates_by_numbers(ember)]
    compiled = ember.compile(_float16_updates_by_numbers)
    for _ in range(2):
        with warnings.catch_warnings():  # (it may decline to replay float16 mul: its warning)
            warnings.simplefilter("ignore")
            got = [x.numpy() for x in compiled(ember)]
        assert all(np.array_equal(g, e) and g.dtype == e.dtype for g, e in zip(got, eager))


def test_cosine_similarity_of_shapes_that_do_not_broadcast_is_torchs_error():
    """Seed 44000310: NumPy's ValueError where torch raises infer_size's RuntimeError."""
    def body(t):
        x = t.ones(3, 4, requires_grad=True)
        out = []
        for other, dim in ((t.ones(2, 4), 1), (t.ones(3, 5), 1), (t.ones(2, 4), 0)):
            try:
                t.nn.functional.cosine_similarity(x, other, dim=dim)
            except RuntimeError as e:
                out.append(str(e))
        return out
    same(body)


def test_clamp_backward_refuses_bounds_that_broadcast_past_self_and_the_other_bound():
    """Seed 47000172: ``clip`` of a (3,) input with bounds of shapes [] and (3, 1)
    backpropagated where torch refuses: its clamp_backward_min_max combines two masks in place
    (logical_and_), and the second does not fit in the first. Each of the three gradients'
    combination is checked alone (torch computes only those asked for)."""
    def body(t):
        out = []
        for wants in ((True, True, True), (False, True, False), (False, False, True)):
            for lo, hi in (((), (3, 1)), ((3, 1), ()), ((1, 3), (3, 1)), ((3, 1), (3, 1))):
                x = t.tensor([0.5, -1.0, 2.0], requires_grad=wants[0])
                bounds = t.full(lo, 0.0, requires_grad=wants[1]), t.full(hi, 1.0,
                                                                      requires_grad=wants[2])
                y = t.clip(x, *bounds)
                inputs = [a for a, w in zip((x,) + bounds, wants) if w]
                try:
                    out.append(t.autograd.grad(y.sum(), inputs))
                except RuntimeError as e:
                    out.append(str(e))
        return out
    same(body)


def test_integer_division_of_an_empty_tensor_by_zero_divides_nothing():
    """Seed 45000374: ``floor_divide`` of an empty int64 tensor by ``False`` raised torch's
    ZeroDivisionError, which torch's kernel raises only at a zero it divides by: none here."""
    def body(t):
        empty, zero = t.ones(0, 3, dtype=t.int64), t.zeros(3, dtype=t.int64)
        out = [t.floor_divide(empty, False), t.floor_divide(empty, zero), empty // 0,
               t.div(empty, 0, rounding_mode="trunc"), t.remainder(empty, 0),
               t.fmod(empty, zero), empty.clone().floor_divide_(False)]
        try:
            t.floor_divide(t.ones(2, 3, dtype=t.int64), zero)
        except RuntimeError as e:
            out.append(str(e))
        return out
    same(body)


@pytest.mark.parametrize("shapes", [((0, 4), (0, 4), (0, 4)), ((2, 3, 0), (2, 5, 0), (2, 5, 3)),
                                    ((2, 3, 4), (1, 0, 4), (1, 0, 3)),
                                    ((1, 2, 3, 0), (1, 2, 4, 0), (1, 2, 4, 2)),
                                    ((1, 1, 3, 4), (1, 1, 0, 4), (1, 1, 0, 2))])
def test_scaled_dot_product_attention_of_empty_inputs_is_torchs(shapes):
    """Seed 45000230: ZeroDivisionError for a query of last dimension 0 (torch's scale is then
    1/0 = inf); with no key or an empty output torch gives zeros joined to the graph through
    the inputs' sums times 0 (AddBackward0), which a NaN input still reaches."""
    def body(t):
        out = []
        for fill in (1.0, float("nan")):
            qkv = [t.full(s, fill, requires_grad=True) for s in shapes]
            y = t.nn.functional.scaled_dot_product_attention(*qkv)
            out.append((y, t.autograd.grad(y.sum(), qkv)))
        return out
    same(body)


def test_masked_scatter_in_place_reads_a_source_sharing_self_as_it_writes():
    """Seed 47000250: ``x.masked_scatter_(mask, x)`` read the whole source before writing, and
    refused a source partly overlapping self: torch's loop writes the masked elements in order,
    each read from the source as it is then (a non-contiguous source is copied first), and
    checks no overlap."""
    def body(t):
        out = []
        late = t.tensor([False, True, True, True])
        for write in (lambda x: x.masked_scatter_(late, x),
                      lambda x: x.masked_scatter_(late, x[:3]),
                      lambda x: x[2:].masked_scatter_(late[:2], x[:3]),
                      lambda x: x.masked_scatter_(late, x.flip(0)),
                      lambda x: x.view(2, 2).t().masked_scatter_(late.view(2, 2), x),
                      lambda x: x.view(2, 2).masked_scatter_(late.view(2, 2), x.view(2, 2).t()),
                      lambda x: x[::2].masked_scatter_(late[:2], x),
                      lambda x: x[0].masked_scatter_(t.tensor(True), x[1:])):
            x = t.tensor([1.0, 2.0, 3.0, 4.0])
            write(x)
            out.append(x)
        w = t.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = w * 1
        y.masked_scatter_(late, y)
        out.append((y, t.autograd.grad((y * t.arange(4.0)).sum(), w)))
        out.append(t.masked_scatter(w, late, w))
        return out
    same(body)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_soft_margin_loss_double_backward_is_torchs_node(reduction):
    """Seed 46000316: create_graph recorded MulBackward0 for soft_margin_loss's gradient where
    torch records SoftMarginLossBackwardBackward0, with its own second derivatives (in self
    and in the incoming gradient)."""
    def body(t):
        x = t.tensor([0.3, -1.2, 2.0], dtype=t.float64, requires_grad=True)
        y = t.tensor([1.0, -1.0, 1.0], dtype=t.float64)
        loss = t.nn.functional.soft_margin_loss(x, y, reduction=reduction)
        go = t.full(loss.shape, 1.5, dtype=t.float64, requires_grad=True)
        g, = t.autograd.grad(loss, x, go, create_graph=True)
        return g, t.autograd.grad((g * t.tensor([1.0, 2.0, 3.0], dtype=t.float64)).sum(), (x, go))
    same(body)


_OPTIMIZERS_NAN = ["Adam({p}, lr=0.01)", "Adam({p}, amsgrad=True, weight_decay=0.1)",
                   "AdamW({p})", "Adam({p}, foreach=True)", "Adamax({p})", "NAdam({p})",
                   "RAdam({p})", "Adagrad({p})", "RMSprop({p}, momentum=0.5, centered=True)",
                   "Rprop({p})", "Adadelta({p})", "SGD({p}, lr=0.1, momentum=0.9)"]


@pytest.mark.parametrize("kind", _OPTIMIZERS_NAN)
def test_optimizer_steps_making_nan_are_quiet(kind):
    """Seed 50000162: Adam's step of a float16 parameter with a zero gradient (eps rounds to
    0 in float16, so 0/0) made torch's NaN with NumPy's "invalid value" RuntimeWarning; an
    infinite gradient does so in most updates."""
    def body(t):
        out = []
        for grad in (0.0, float("inf")):
            p = t.tensor([1.0, -1.0, 0.0, 2.5], dtype=t.float16, requires_grad=True)
            p.grad = t.full_like(p, grad)
            o = eval("t.optim." + kind.format(p="[p]"))  # noqa: S307 - the table's text
            o.step()
            o.step()
            out.append(p.detach().clone())
        return out
    same(body)


def _reduced_by_0_dim_tensors(t):
    out = []
    for dtype in (t.float16, t.bfloat16):
        a = t.tensor([5.25, 1.0, -3.3, 0.7, 1234.0, 0.001], dtype=dtype)
        w = a.detach().clone().requires_grad_()
        for c in (t.tensor(0.157978), t.tensor(0.157978, dtype=t.float64), t.tensor(2049)):
            out += [a * c, a / c, a.clone().mul_(c), a.clone().div_(c), c * a, c / a,
                    t.floor_divide(a, c), w * c, w / c]
    return out


def test_float16_and_bfloat16_times_a_0_dim_tensor_round_once():
    """Seed 52000373 (clip_grad_norm_ scaling float16 gradients by its float32 coefficient):
    torch's mul and div read a 0-dim other operand of a float16 or bfloat16 computation in
    float32 (TensorIterator's scalar, as a Python number) and round the product once; ember
    rounded the 0-dim tensor to float16 first (0.8291 for torch's 0.8296)."""
    same(_reduced_by_0_dim_tensors, rtol=0, atol=0)


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 0.0, float("inf"), 3.0])
def test_clip_grad_norm_of_gradients_of_two_dtypes_is_in_their_promoted_dtype(norm_type):
    """Seed 52000373: the total norm of a float32 and a float64 gradient is torch.stack's
    promotion of the norms (float64); ember gave the first gradient's dtype."""
    def body(t):
        out = []
        for d1, d2 in [(t.float32, t.float64), (t.float16, t.bfloat16), (t.float16, t.float32)]:
            a = t.tensor([1.0, -2.0, 3.5], dtype=d1, requires_grad=True)
            b = t.tensor([0.5, 0.25], dtype=d2, requires_grad=True)
            a.grad, b.grad = a.detach() * 1.5, b.detach() * 2
            total = t.nn.utils.clip_grad_norm_([a, b], 1.0, norm_type=norm_type)
            out.append((total, a.grad, b.grad))
        return out
    same(body, rtol=1e-6)


def test_scatter_reduce_index_reduce_and_put_refuse_self_as_their_source():
    """Seed 52000397: ``t9.scatter_reduce_(-1, i, t9, 'amin', include_self=False)`` under
    no_grad: torch's scatter_reduce_, index_reduce_ and put_ assert that the source does not
    overlap self at all, self itself included; ember wrote self into itself."""
    import warnings

    def body(t):
        out = []
        i3 = t.tensor([1, 0, 2])
        for write in (lambda s, src: s.scatter_reduce_(0, i3, src, "amin", include_self=False),
                      lambda s, src: s.scatter_reduce_(0, i3, src, "sum"),
                      lambda s, src: s.index_reduce_(0, i3, src, "prod"),
                      lambda s, src: s.put_(i3, src),
                      lambda s, src: s.put_(i3, src, accumulate=True)):
            for source in (lambda b: b[:3], lambda b: b[1:4], lambda b: b[3:6],
                           lambda b: b[:3].clone()):
                b = t.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # (index_reduce's beta warning)
                        write(b[:3], source(b))
                    out.append(b)
                except RuntimeError as e:
                    out.append(str(e))
        return out
    same(body)


def test_lerp_names_a_bfloat16_or_complex_operand_in_its_dtype_error():
    """Seed 49000424: ``t.lerp_(u, 0.5)`` of a float32 ``t`` and a bfloat16 ``u`` (an autocast
    result) raised a KeyError where torch names c10::BFloat16 in its dtype error."""
    def body(t):
        out = []
        x = t.tensor([[0.32], [0.5]])
        for dtype in (t.bfloat16, t.float16, t.float64, t.complex64):
            u = t.tensor([[0.1, 0.2]]).to(dtype)
            for call in (lambda: x.clone().lerp_(u, 0.5), lambda: t.lerp(x, u, 0.5),
                         lambda: x.clone().lerp_(x, u)):
                try:
                    call()
                except RuntimeError as e:
                    out.append(str(e))
        return out
    same(body)


def test_expand_to_fewer_dimensions_names_the_tensor_as_torch_prints_it():
    """Seed 49000156: ``t1[-2] = t2`` (a 3-element bfloat16 tensor into one element) refused
    as torch, but named ember.BFloat16Tensor where torch's toString gives CPUBFloat16Type (as
    for bool and complex tensors)."""
    def body(t):
        out = []
        for dtype in (t.float32, t.bfloat16, t.float16, t.int64, t.bool, t.complex64):
            try:
                t.zeros(3, dtype=dtype).expand(())
            except RuntimeError as e:
                out.append(str(e))
        x = t.tensor([-0.8, 0.8, -0.71])
        try:
            x[-2] = t.tensor([-0.37, 1.0, 1.47], dtype=t.bfloat16)
        except RuntimeError as e:
            out.append(str(e))
        return out
    same(body)


def test_mark_dirty_of_a_leaf_view_refuses_it_as_a_leaf():
    """Seed 49000439 (with --leave-out compiled_function,compiled_again): a Function marking
    dirty a view that is a leaf requiring grad (what torch.func.hessian returned under
    no_grad, then requires_grad_()) raised the no_grad-view error where torch's set_history
    refuses a leaf first; views made in no_grad mode of a tensor requiring grad too."""
    def body(t):
        class Fn(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2
        w = t.tensor([1.0, 2.0], requires_grad=True)

        def no_grad_view(base):
            with t.no_grad():
                return base[:1]
        out = []
        for make in (lambda: w, lambda: w[:1], lambda: (w * 1)[:1],
                     lambda: no_grad_view(t.tensor([1.0, 2.0])).requires_grad_(),
                     lambda: no_grad_view(w), lambda: no_grad_view(w * 1),
                     lambda: t.tensor([1.0, 2.0])[:1].requires_grad_()):
            try:
                y = Fn.apply(make())
                out.append(y.grad_fn.name())
            except RuntimeError as e:
                out.append(str(e))
        return out
    same(body)


def test_pow_of_a_number_renorm_and_histc_of_inference_tensors_show_their_writes():
    """Seeds 51000197 (``2 ** t4``) and 49000273 (renorm, run without compiled steps): called
    outside inference mode on an inference tensor, torch's kernels run with no autograd layer
    and their results show the fill_ or copy_ they write through (version 1; histc's 2); ember
    showed these only for ops whose first operand is a tensor, and not for these three."""
    def body(t):
        with t.inference_mode():
            x = t.tensor([[0.42, -1.35], [0.3, 0.2]]) * 1
            n = t.tensor([1, 2])
        y = t.tensor([[0.42, -1.35], [0.3, 0.2]])
        made = [2 ** x, t.pow(1, x), t.pow(2.5, n), t.pow(t.tensor(2.0), x), x.renorm(2, 0, 1.0),
                t.renorm(x.double(), 1, 1, 0.5), x.histc(3), x.histc(3, 0, 1), 2 ** y,
                y.renorm(2, 0, 1.0), y.histc(3)]
        return [(r, r._version) for r in made]
    same(body)


@pytest.mark.parametrize("rows", [2, 30])
@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, float("inf")])
def test_cdist_refuses_inputs_of_two_dtypes_and_reduced_floats_as_torch(rows, p):
    """Seed 51000390: ``cdist`` of a float64 and a float32 tensor computed, where torch's
    distance kernel refuses ("expected scalar type Double but found Float"), its matrix
    product form too (p = 2 beyond 25 rows), and its kernel has no float16 or bfloat16."""
    def body(t):
        out = []
        dtypes = (t.float32, t.float64, t.float16, t.bfloat16, t.int64)
        for d1 in dtypes:
            for d2 in dtypes:
                x = (t.arange(rows * 4) % 5).reshape(rows, 4).to(d1)
                y = (t.arange(12) % 3).reshape(3, 4).to(d2)
                try:
                    out.append(t.cdist(x, y, p=p).dtype)
                except (RuntimeError, NotImplementedError) as e:
                    out.append((type(e).__name__, str(e)))
        out.append(t.cdist(t.zeros(0, 4, dtype=t.float64), t.zeros(3, 4), p=p))
        return out
    same(body)


def test_index_reduce_without_self_names_the_index_out_of_bounds():
    """Seed 52000362: ``index_reduce(0, tensor([2, 0]), t7, 'amax', include_self=False)`` of
    two rows: torch fills the indexed slices with the identity first (index_fill_), whose
    check names the index ("index 2 is out of bounds for dimension 0 with size 2"); ember gave
    the message of include_self=True's kernel."""
    import warnings

    def body(t):
        out = []
        x = t.tensor([[1.0], [2.0]])
        for dim, idx, source in ((0, [2, 0], x), (0, [-3, 0], x), (0, [0, 5], x),
                                 (0, [-1, 0], x), (-2, [0, 3], x), (1, [0, 1], t.ones(2, 2)),
                                 (-1, [1, -2], t.ones(2, 2))):
            for include_self in (True, False):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # (its beta warning)
                        out.append(x.index_reduce(dim, t.tensor(idx), source, "amax",
                                                  include_self=include_self))
                except IndexError as e:
                    out.append(str(e))
        return out
    same(body)


def test_adaptive_avg_pool_to_one_value_is_a_mean_before_any_dim_check():
    """Seed 54000171: ``F.adaptive_avg_pool2d(a, 1)`` of a (2, 4) tensor, in a compiled
    function: torch pools any input of two or more dims to one value per plane as
    ``mean((-1, -2), keepdim=True)`` before checking for 3 or 4 dims (an empty one: NaN; fewer
    dims: mean's IndexError), ``adaptive_avg_pool3d`` so too, and a tuple size needs more
    input dims than it has (the functional's ValueError); ember refused every 2-D input."""
    def body(t):
        F = t.nn.functional
        x = t.arange(60.0).reshape(3, 4, 5).requires_grad_()
        out = []
        for f, inputs, sizes in (
                (F.adaptive_avg_pool2d, (x[0, 0], x[0], x, x[None, None], t.ones(2, 0)),
                 (1, (1, 1), (1, None), 2, (1,), (1, 1, 1))),
                (F.adaptive_avg_pool3d, (x[0], x, x[None, None, None], t.ones(2, 0, 3, 3)),
                 (1, (1, 1, 1), (1, 1), (None, 1, 1))),
                (F.adaptive_avg_pool1d, (x[0, 0], x[0], x, x[None]), (1, 2))):
            for a in inputs:
                for size in sizes:
                    try:
                        r = f(a, size)
                        out.append((r, r.grad_fn.next_functions[0][0].name()
                                    if r.grad_fn is not None else None))
                    except (RuntimeError, IndexError, ValueError) as e:
                        out.append((type(e).__name__, str(e)))
        r = F.adaptive_avg_pool2d(x[0], 1)
        return out, t.autograd.grad(r.sum(), x)
    same(body)


def test_transposed_convolution_with_an_empty_output_refuses_in_torchs_slow_kernels():
    """Seed 55000302: ``F.conv_transpose1d`` of a float64 (4, 1, 1) input with a kernel of 2
    and ``padding=1`` (an output of length 0) under autocast: torch's slow kernel (float64,
    float16, float32 for one small image) refuses it ("Output size is too small", sizes of the
    2-d problem a 1-d one becomes); oneDNN's (bfloat16, a float32 batch, groups) return the
    empty result and refuse a negative size, as does an empty batch. ember returned an empty
    result for every dtype, and NumPy's ValueError for a negative size."""
    def body(t):
        F = t.nn.functional
        out = []
        for dtype in (t.float64, t.float32, t.float16, t.bfloat16):
            for n, c, groups, kw in ((1, 2, 1, {}), (4, 2, 1, {}), (1, 2, 2, {}),
                                     (1, 2, 1, {"padding": 3}), (4, 2, 1, {"padding": 3}),
                                     (1, 2, 1, {"dilation": 2, "padding": 2}),
                                     (1, 2, 1, {"stride": 2, "output_padding": 1, "padding": 2}),
                                     (0, 2, 1, {"padding": 2})):
                x = t.ones(n, c, 1, dtype=dtype)
                w = t.ones(c, 1, 2, dtype=dtype)
                for f, a, b in ((F.conv_transpose1d, x, w),
                                (F.conv_transpose2d, x[..., None], w[..., None]),
                                (F.conv_transpose3d, x[..., None, None], w[..., None, None])):
                    try:
                        out.append(f(a, b, groups=groups, **{"padding": 1, **kw}).shape)
                    except RuntimeError as e:
                        out.append(str(e))
        return out
    same(body)


def test_elementwise_out_partly_overlapping_an_input_refuses_before_resizing():
    """Found while the generator grew its ``out=`` steps: ``torch.add(x, 1, out=x[0])`` of a
    (2, 3) ``x``: torch's TensorIterator refuses an out that partly overlaps an input, as an
    in-place op does, before it resizes out; ember resized the view ``x[0]`` to (2, 3) and
    wrote the result over all of ``x``, silently. Disjoint views, the input itself and
    layouts torch cannot judge (not dense) are written."""
    def body(t):
        out = []
        for e in ("t.exp(x, out=x[0])", "t.add(x, 1, out=x[0])", "t.exp(x, out=x.t())",
                  "t.pow(x, 2, out=x[:, :2])", "t.where(x > 2, x, 0.5 * x, out=x[1])",
                  "t.clamp(x, 2, 4, out=x.view(3, 2))", "t.mul(x[0], x[1], out=x[1, :2])",
                  "t.exp(x, out=x)", "t.add(x[0], 1, out=x[1])", "t.exp(x[:, 1:], out=x[:, :2])",
                  "t.maximum(x, x[0], out=x)", "t.sin(x, out=y[0])"):
            x = t.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
            y = t.zeros(2, 3)
            try:
                r = eval(e)  # noqa: S307 - the calls above
                out.append((r, x, y, x._version))
            except RuntimeError as err:
                out.append((str(err), x, x._version))
        return out
    same(body, check_warnings=False)


def test_in_place_ops_write_through_unfold_views():
    """Seed 57000263 (the generator's view_write steps): ``t6.unfold(0, 1, 1).clamp_min_(...)``
    raised NumPy's "assignment destination is read-only" (unfold's frames were a read-only
    sliding window); torch writes through them, into the base, with a CopySlices node.
    Frames that share elements take a write of one value (fill_, zero_) as torch does."""
    def body(t):
        out = []
        for write in (lambda v: v.mul_(2), lambda v: v.fill_(3), lambda v: v.neg_(),
                      lambda v: v[0].add_(1), lambda v: v.clamp_min_(t.tensor(5.0))):
            for dim, size, step in ((0, 2, 2), (0, 1, 1), (1, 1, 2), (1, 3, 1)):
                y = t.arange(12.0).reshape(4, 3).requires_grad_()
                z = y * 1
                v = z.unfold(dim, size, step)
                write(v)
                z.sum().backward()
                out.append((z, v, z._version, y.grad))
        x = t.arange(12.0).reshape(4, 3)
        x.unfold(1, 2, 1).fill_(5)
        x.unfold(0, 3, 1).zero_()
        return out, x
    same(body)


def test_out_resized_warns_with_torchs_full_text():
    """Seed 59000253 (the generator's out= steps): ``torch.sigmoid(t9, out=t11)`` of a (2, 0)
    ``t9`` into a (1,) ``t11``: torch's resize warning ends with where its C++ raised it
    ("(Triggered internally at .../Resize.cpp:30.)"), as its other C++ warnings ember gives."""
    def body(t):
        x = t.ones(2, 3)
        return (t.sigmoid(t.zeros(2, 0), out=t.empty(1)), t.add(x, 1, out=t.empty(4)),
                t.sum(x, 0, out=t.empty(5)), t.cat([x, x], out=t.empty(1)),
                t.sort(x[0], out=(t.empty(1), t.empty(1, dtype=t.int64))))
    same(body)


def test_custom_function_returning_its_input_gives_a_view_of_it():
    """Seeds 61000210, 61000230 (the generator's new custom Function steps): a forward that
    returns its input as it is gives, in torch, a view of the input with the Function's node
    (refused an in-place op, as any view a custom Function returns: "This view was created
    inside a custom Function ..."), a detached alias where nothing is recorded, and a view
    made without grad for an input requiring none; ember gave a tensor of its own, and under
    no_grad the input itself (requires_grad=True)."""
    def body(t):
        class Same(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g + 1

        class View(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.view_as(x)

            @staticmethod
            def backward(ctx, g):
                return g * 3

        out = []
        leaf = t.tensor([1.5, -2.0], requires_grad=True)
        for fn in (Same, View):
            a = leaf * 1
            y = fn.apply(a)
            out.append((y, y._base is a, y.is_leaf))
            try:
                y.mul_(2)
            except RuntimeError as e:
                out.append(str(e))
            a.add_(1)
            try:
                out.append(y.grad_fn.name())
            except RuntimeError as e:
                out.append(str(e))
            with t.no_grad():
                z = fn.apply(a)
            out.append((z, z._base is a, z.requires_grad))
            plain = t.ones(2)
            w = fn.apply(plain)
            w.add_(1)
            out.append((w, w is plain, w._base is plain, plain))
        y = Same.apply(leaf)
        y.sum().backward()
        return out, leaf.grad
    same(body)


def test_regenerated_view_through_view_as_real_replays_its_view_functions():
    """Seeds 57000237, 57000242 (the generator's new view_write steps; test_difftest's seed
    16): a view through ``view_as_real(view_as_complex(x))`` written in place, or whose base
    was: torch regenerates it by replaying those two ops (ViewAsRealBackward0 over
    ViewAsComplexBackward0), an as_strided only for the ops after them; ember gave one
    AsStridedBackward0 on the base."""
    def body(t):
        out = []
        for cut in (lambda v: v, lambda v: v[..., 0], lambda v: v[1:]):
            for write_view in (True, False):
                leaf = t.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
                x = leaf * 1
                v = cut(t.view_as_real(t.view_as_complex(x)))
                (v if write_view else x).mul_(2)
                fn = v.grad_fn
                out.append((v, fn.name(), [f.name() for f, _ in fn.next_functions],
                            [f.name() for f, _ in fn.next_functions[0][0].next_functions]))
                v.sum().backward()
                out.append(leaf.grad)
        return out
    same(body)


def test_elementwise_out_that_is_an_input_is_not_resized():
    """Seed 61000228 (the generator's out= steps): ``torch.atan2(t8, t3, out=t8)`` of a (3,)
    ``t8`` and a (4, 3, 1) ``t3``: torch's TensorIterator writes an out that is also an input
    in place, never resizing it, so a larger broadcast result is refused ("output with shape
    [3] doesn't match the broadcast shape [4, 3, 3]"); ember resized ``t8``."""
    def body(t):
        out = []
        for e in ("t.atan2(a, b, out=a)", "t.add(b, a, out=a)", "t.where(a > 0, a, b, out=a)",
                  "t.exp(a, out=a)", "t.add(a, a, out=a)", "t.add(b, 1, out=b)"):
            a, b = t.tensor([1.0, 2.0, 3.0]), t.ones(4, 1, 3)
            try:
                out.append((eval(e), a))  # noqa: S307 - the calls above
            except RuntimeError as err:
                out.append((str(err), a))
        return out
    same(body)


def test_cross_entropy_with_probabilities_of_no_classes_and_label_smoothing():
    """Seed 60000209: ``F.cross_entropy`` of a (2, 0) input with (2, 0) probabilities and
    ``label_smoothing=0.1``: torch's smoothing term is ``0.1 / 0`` in doubles (inf, added to
    no element), so the loss is NaN for ``mean`` and -0 otherwise; ember raised Python's
    ZeroDivisionError."""
    def body(t):
        F = t.nn.functional
        out = []
        for reduction in ("mean", "sum", "none"):
            a = t.zeros(2, 0, requires_grad=True)
            r = F.cross_entropy(a, t.zeros(2, 0), label_smoothing=0.1, reduction=reduction)
            out.append(r)
            if reduction != "none":
                r.backward()
                out.append(a.grad)
        return out
    same(body)


def test_baddbmm_reads_the_batch_sizes_first():
    """Seed 56000272: ``torch.baddbmm(t3, t3, t3.mT)`` of 2-D tensors: torch's meta function
    expands self to ``(batch1.size(0), batch1.size(1), batch2.size(2))`` first, so a batch of
    fewer dims raises size()'s IndexError; ember gave "batch1 must be a 3D tensor"."""
    def body(t):
        a0, a1, a2, a3 = t.tensor(1.0), t.ones(2), t.ones(2, 2), t.ones(2, 2, 2)
        out = []
        for args in ((a2, a2, a2), (a3, a2, a3), (a3, a3, a2), (a3, a1, a3), (a3, a0, a3),
                     (a3, a3, a0), (a2, a3, a3), (a3, a3.double(), a3)):
            try:
                out.append(t.baddbmm(*args))
            except (RuntimeError, IndexError) as e:
                out.append((type(e).__name__, str(e)))
        return out
    same(body)


def test_out_of_a_bfloat16_result_refuses_grad_before_its_dtype():
    """Seed 61000184 (the generator's out= steps): ``torch.amax(t, 0, out=o)`` of a bfloat16
    ``t`` and a float32 ``o``, both requiring grad: torch refuses out= under grad before it
    looks at out's dtype; ember took bfloat16 (NumPy kind 'V') for a dtype without gradients,
    so it gave amax's dtype error, and ``mean``/``exp``/``add`` wrote into ``o``."""
    def body(t):
        out = []
        for e in ("t.amax(x, 0, out=o)", "t.amin(x, 0, out=o)", "t.sum(x, 0, out=o)",
                  "t.max(x, 0, out=(o, t.zeros(2, dtype=t.int64)))", "t.mean(x, 0, out=o)",
                  "t.logsumexp(x, 0, out=o)", "t.exp(x, out=o)", "t.add(x, x, out=o)",
                  "t.argmax(x, 0, out=o)"):
            for x_grad, o_grad in ((True, True), (False, True), (True, False)):
                x = t.ones(3, 2, dtype=t.bfloat16, requires_grad=x_grad)
                o = t.zeros(2, requires_grad=o_grad)
                try:
                    out.append((eval(e), o))  # noqa: S307 - the calls above
                except RuntimeError as err:
                    out.append((str(err), o))
        return out
    same(body)


def test_scatter_reduce_with_an_index_out_of_bounds_writes_what_torch_writes_first():
    """Seed 58000249: ``scatter_reduce_(..., include_self=False)`` with an index out of
    bounds: torch scatters the reduction's identity (-inf for ``amax``) into the positions
    it visits before that index, then raises, leaving them in self; with
    ``include_self=True`` its kernel has reduced the elements before it (mean not yet
    divided). ember raised before writing anything."""
    def body(t):
        out = []
        for reduce in ("sum", "prod", "mean", "amax", "amin"):
            for include_self in (False, True):
                for inplace in (True, False):
                    for index, dim in (([[0, 2, 5], [1, 1, 0]], 1), ([[1, 0, 1], [-1, 0, 0]], 0),
                                       ([[0, 1, 1], [0, 0, 3]], 1)):
                        x = t.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]).mul(2)
                        src = t.tensor([[7.0, 8.0, -9.0], [1.5, 2.5, 3.5]])
                        try:
                            (x.scatter_reduce_ if inplace else x.scatter_reduce)(
                                dim, t.tensor(index), src, reduce, include_self=include_self)
                        except RuntimeError as e:
                            out.append((str(e), x, x._version))
        return out
    same(body)


def test_a_refused_history_comes_before_the_kernels_error():
    """Seed 54000293: ``torch.logaddexp(t4, t2)`` where ``t4`` is a ``chunk`` of ``t2`` written
    in place under ``no_grad`` and the shapes do not broadcast: torch collects the inputs'
    edges before its kernel runs, so the multi-output view's error comes first; ember's
    kernel raised the shape error (and ``mm``'s check its own). Without grad (no node) the
    kernel's error stays."""
    def body(t):
        out = []
        for e in ("t.logaddexp(t4, t2)", "t.add(t2, t4)", "t4.atan2(t.ones(5))",
                  "t.cat([t4, t.ones(2, 4)])", "t.logaddexp(t4, t.ones(2, 3))",
                  "t.mul(v, t.ones(5))", "t.mm(t4, t2)", "t.matmul(t2, t4)"):
            for grad in (True, False):
                t2 = t.ones(4, 3, requires_grad=True) * 1
                t4 = t2.chunk(2)[0]
                with t.no_grad():
                    v = t2[1:]  # (a view made in no_grad mode: refused alike)
                    t4.mul_(2)
                try:
                    with t.set_grad_enabled(grad):
                        out.append(eval(e))  # noqa: S307 - the calls above
                except RuntimeError as err:
                    out.append(str(err))
        return out
    same(body)
