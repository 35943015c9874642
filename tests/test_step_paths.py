"""The Tensor-level calls of a training step, against torch: ``h @ W``, ``h + b``, ``relu``,
``p -= lr * p.grad`` under no_grad, ``p.grad = ...``, ``.item()``, ``.numpy()``.

These calls have short paths for their usual arguments (two matrices, an operand of self's
dtype, a gradient of the tensor's dtype and shape); each case here gives them the arguments
those paths must hand on to the general one, and compares values, versions, graphs and
errors with torch's.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from oracle import error_of, same, torch_or_skip

A = [[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]
B = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


@pytest.mark.parametrize("left, right, kwargs", [
    (A, B, {}),
    (A, B, {"dtype": "float64"}),
    (A, A, {}),  # shapes that don't fit
    ([[True, False]], [[True], [False]], {}),  # bool: no kernel
    ([1.0, 2.0, 3.0], B, {}),  # 1-D @ 2-D: matmul's squeeze
    ([[[1.0, 2.0, 3.0]]], B, {}),  # batched
])
def test_matmul_operator(left, right, kwargs):
    def body(torch):
        dt = getattr(torch, kwargs.get("dtype", "float32"))
        if isinstance(left[0][0], bool) if isinstance(left[0], list) else False:
            dt = torch.bool
        x = torch.tensor(left, dtype=dt)
        w = torch.tensor(right, dtype=dt, requires_grad=dt.is_floating_point)
        out = x @ w
        if out.requires_grad:
            out.sum().backward()
            return out, w.grad, out.grad_fn.name()
        return out
    same(body)


@pytest.mark.parametrize("left, right, dtypes", [
    (A, [1.0, 2.0, 3.0], ("float32", "float32")),
    (A, [1.0, 2.0, 3.0], ("float64", "float64")),
    (A, [1.0, 2.0], ("float32", "float32")),  # sizes that don't fit
    (A, [1.0, 2.0, 3.0], ("float32", "float64")),  # dtypes that differ
    (A, [1.0, 2.0, 3.0], ("int64", "int64")),
    (A, [1.0, 2.0, 3.0], ("complex64", "complex64")),
    # torch checks dims, dtypes and sizes before it finds no bool kernel
    (A, [1.0, 2.0, 3.0], ("bool", "bool")),
    (A, [1.0, 2.0, 3.0], ("float32", "bool")),
    (A, [1.0, 2.0, 3.0], ("bool", "float32")),
    (A, [1.0, 2.0], ("bool", "bool")),
    (A, [[1.0], [2.0], [3.0]], ("bool", "bool")),
    ([[[1.0, 2.0, 3.0]]], [1.0, 2.0, 3.0], ("bool", "bool")),
])
def test_matrix_at_vector(left, right, dtypes):
    # x @ v goes straight to mv's generated path, whose checks pass the usual call in one
    # test: every other call gets torch's errors in torch's order
    def body(torch):
        x = torch.tensor(left).to(getattr(torch, dtypes[0]))
        v = torch.tensor(right).to(getattr(torch, dtypes[1]))
        errors = [error_of(fn) for fn in (lambda: x @ v, lambda: torch.mv(x, v),
                                          lambda: x.mv(v), lambda: torch.matmul(x, v))]
        if errors[0] is not None:
            return errors
        w = x.detach().requires_grad_(x.dtype.is_floating_point or x.dtype.is_complex)
        out = w @ v
        if out.requires_grad:
            (g,) = torch.autograd.grad(out.abs().sum(), [w])
            return errors, out, g, out.grad_fn.name()
        return errors, out
    same(body)


def test_matrix_at_vector_under_autocast_no_grad_and_vmap():
    def body(torch):
        x = torch.tensor(A, requires_grad=True)
        v = torch.tensor([1.0, 2.0, 3.0])
        with torch.no_grad():
            plain = x @ v
        with torch.autocast("cpu", dtype=torch.bfloat16):
            cast = x @ v
        batched = torch.func.vmap(lambda u: x.detach() @ u)(torch.stack([v, -v]))
        return plain, cast.dtype, cast.grad_fn.name(), batched
    same(body, rtol=1e-2, atol=1e-2)


def test_matmul_operands_that_are_not_tensors():
    # torch's @ takes no number (not even a 0-dim NumPy one): NotImplemented, then Python's
    # TypeError; matmul() and .matmul() name the argument
    def body(torch):
        x = torch.tensor(A)
        errors = []
        for other in (torch.tensor(B, dtype=torch.float64), 2.0, 3, True, np.float32(2), "w",
                      None, [1.0, 2.0, 3.0]):
            for fn in (lambda: x @ other, lambda: other @ x, lambda: torch.matmul(x, other),
                       lambda: torch.matmul(other, x), lambda: x.matmul(other),
                       lambda: x.__matmul__(other), lambda: x.__rmatmul__(other)):
                errors.append(error_of(fn))
        return errors, x.__matmul__(2.0), x.__rmatmul__(None)
    same(body)


def test_matmul_operator_with_parameters_and_under_vmap():
    def body(torch):
        x = torch.tensor(A, requires_grad=True)
        p = torch.nn.Parameter(torch.tensor(B))
        out = x @ p
        back = p.t() @ x.t()
        (out.sum() + back.sum()).backward()
        batched = torch.func.vmap(lambda w: x.detach() @ w)(torch.stack([p.detach(), -p.detach()]))
        return out, back, x.grad, p.grad, out.grad_fn.name(), back.grad_fn.name(), batched
    same(body)


def test_matmul_operator_under_autocast_and_no_grad():
    def body(torch):
        x = torch.tensor(A)
        w = torch.tensor(B, requires_grad=True)
        with torch.no_grad():
            plain = x @ w
        with torch.autocast("cpu", dtype=torch.bfloat16):
            cast = x @ w
        return plain, cast.dtype, cast.grad_fn.name()
    same(body, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", ["float32", "int64", "complex64", "bool"])
def test_relu(dtype):
    def body(torch):
        x = torch.tensor([[-1.0, 0.0, 2.0]]).to(getattr(torch, dtype))
        return x.relu()
    same(body)


def test_bias_add_records_like_torch():
    def body(torch):
        h = torch.tensor(A, requires_grad=True) @ torch.tensor(B)
        b = torch.tensor([0.5, -0.5], requires_grad=True)
        out = (h + b).relu()
        out.sum().backward()
        return out, b.grad, out.grad_fn.name(), out.grad_fn.next_functions[0][0].name()
    same(body)


def test_sgd_update_under_no_grad():
    def body(torch):
        w = torch.tensor(B, requires_grad=True)
        b = torch.tensor([0.5, -0.5], requires_grad=True)
        loss = (torch.tensor(A) @ w + b).relu().sum()
        loss.backward()
        versions = []
        with torch.no_grad():
            for p in (w, b):
                p -= 0.1 * p.grad
                versions.append(p._version)
                p.grad = None
        return w, b, versions, w.grad is None, loss.item(), torch.is_grad_enabled()
    same(body)


@pytest.mark.parametrize("op", ["isub", "iadd", "imul"])
def test_inplace_operators_refuse_like_torch(op):
    def body(torch):
        def apply(p, other):
            if op == "isub":
                p -= other
            elif op == "iadd":
                p += other
            else:
                p *= other
            return p
        leaf = torch.tensor(B, requires_grad=True)
        x = torch.ones(4)
        cases = [
            lambda: apply(leaf, 1.0),  # a leaf requiring grad, in grad mode
            lambda: apply(torch.ones(2, 3), torch.ones(3, 2)),  # shapes
            lambda: apply(torch.ones(2, 3, dtype=torch.int64), 1.5),  # result type
            lambda: apply(torch.ones(2, 3), "s"),  # an operand ember does not take
            lambda: apply(x[1:], x[:-1]),  # partial overlap
            lambda: apply(torch.ones(1, 3).expand(2, 3), 1.0),  # internal overlap
        ]
        if op == "isub":
            cases.append(lambda: apply(torch.ones(2, dtype=torch.bool), True))
        errors = [error_of(case) for case in cases]
        with torch.no_grad():
            ok = apply(leaf, 2.0)
        y = torch.arange(6.0)
        apply(y, y)  # self itself as the operand: no partial overlap
        return errors, ok, ok._version, y
    same(body)


def test_inplace_operator_records_in_grad_mode():
    def body(torch):
        w = torch.tensor(B, requires_grad=True)
        h = w * 1.0
        h -= torch.tensor(2.0)
        h += w
        h *= w
        h.sum().backward()
        return h, w.grad, h.grad_fn.name(), h._version
    same(body)


def test_no_grad_modes():
    def body(torch):
        seen = []
        with torch.no_grad():
            seen.append(torch.is_grad_enabled())
            with torch.enable_grad():
                seen.append(torch.is_grad_enabled())
            seen.append(torch.is_grad_enabled())
        seen.append(torch.is_grad_enabled())
        with torch.inference_mode():
            with torch.no_grad():
                seen.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
            seen.append(torch.is_grad_enabled())

        @torch.no_grad()
        def f():
            return torch.is_grad_enabled()

        @torch.no_grad
        def g():
            return torch.is_grad_enabled()

        class Quiet(torch.no_grad):
            pass

        with Quiet():
            seen.append(torch.is_grad_enabled())
        try:
            with torch.no_grad():
                raise KeyError("k")
        except KeyError:
            seen.append(torch.is_grad_enabled())
        return seen, f(), g(), torch.is_grad_enabled()
    same(body)


def test_grad_setter_item_numpy():
    def body(torch):
        p = torch.tensor(B, requires_grad=True)
        out = []
        for value in (torch.ones(3, 2), torch.ones(3, 2, dtype=torch.float64), torch.ones(2, 3),
                      [1.0], None):
            out.append(error_of(lambda: setattr(p, "grad", value)))
            out.append(None if p.grad is None else p.grad.shape)
        out.append(error_of(p.numpy))
        out.append(error_of(torch.ones(2).item))
        out += [torch.tensor([[2.5]]).item(), torch.tensor(3).item()]
        with torch.no_grad():
            out.append(p.numpy().tolist())
        return out
    same(body)


def test_numpy_shares_memory():
    torch_or_skip()
    t = ember.ones(3)
    t.numpy()[0] = 5.0
    assert t[0].item() == 5.0 and np.shares_memory(t.numpy(), t._data)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64", "bool", "complex64"])
def test_power_operator_and_sum(dtype):
    # x ** <Python number> goes straight to pow_scalar's generated path (and its kernel takes
    # a float tensor's usual exponents in one test), x.sum() straight to sum's: every other
    # operand keeps pow()'s and the op's own rules
    def body(torch):
        x = torch.tensor([[0.0, -1.5, 2.0], [4.0, -0.0, 3.0]]).to(getattr(torch, dtype))
        if x.dtype.is_floating_point or x.dtype.is_complex:
            x.requires_grad_()
        out = []
        # (not here: float16 ** -0.5 at -0.0, also in the gradient of ** 0.5, and a NumPy
        # scalar exponent, which promotes: ember's differ from torch's there)
        halves = () if dtype == "float16" else (0.5, -0.5)
        for e in (2, 3, 0, 1, -1, -2, 2.0, *halves, 1.5, -2.5, True, torch.tensor(2), "2",
                  None):
            try:
                y = x ** e
            except Exception as error:  # noqa: BLE001 - compared with torch's
                out.append((type(error).__name__, str(error)))
                continue
            s = y.sum()
            out.append((y, s, s.grad_fn.name() if s.grad_fn is not None else None))
            if s.requires_grad and s.dtype.is_floating_point:
                out.append(torch.autograd.grad(s, [x])[0])
        p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
        out += [p ** 2, p.sum(), (p ** 2).sum().grad_fn.name()]
        return out
    same(body, rtol=1e-3, atol=1e-3)


def test_expand_of_tensors_and_sums_gradient_graph():
    # x.expand(...) on a Tensor goes straight to expand's generated path: its sizes as every
    # form gives them, its errors, and the expand a create_graph pass through sum records
    def body(torch):
        x = torch.tensor([[1.0], [2.0]], requires_grad=True)
        p = torch.nn.Parameter(torch.tensor([3.0]))
        out = [x.expand(2, 3), x.expand((2, 3)), x.expand(size=(3, 2, -1)), x.expand([2, 2]),
               p.expand(4), x.expand(np.int64(2), 3)]
        for bad in ((3, 3), (-1, -1, 2), (2,)):
            out.append(error_of(lambda: x.expand(*bad)))
        (g,) = torch.autograd.grad((x * x).sum(), [x], create_graph=True)
        out += [g, g.grad_fn.name(), g.grad_fn.next_functions[0][0].name()]
        return out
    same(body)


def test_expand_of_a_0d_tensor_and_reductions_gradient_graphs():
    # a 0-d tensor's expansion (every sum's gradient) tests its sizes by the array call, and
    # sum's and mean's formulas expand to their input's saved shape without expand()'s parsing
    def body(torch):
        s = torch.tensor(2.0)
        out = [s.expand(3), s.expand(2, 3), s.expand([4]), s.expand(0), s.expand(()),
               s.expand(3).stride(), s.expand(3)._base is s]
        for bad in ((-1,), (2, -1), (3, -2)):
            out.append(error_of(lambda: s.expand(*bad)))
        x = torch.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
        for f in (lambda t: t.sum(), lambda t: t.mean(), lambda t: t.sum(1).sum(),
                  lambda t: t.mean(0).sum(), lambda t: t.sum(1, keepdim=True).sum()):
            (g,) = torch.autograd.grad(f(torch.tanh(x)), [x], create_graph=True)
            (h,) = torch.autograd.grad((g * g).sum(), [x])
            out += [g, h, g.grad_fn.name()]
            out.append([None if n is None else n.name() for n, _ in g.grad_fn.next_functions])
        return out
    same(body)


def test_views_a_create_graph_pass_makes_of_tensors_not_requiring_grad():
    # W.t() in mv's formula and sum's expanded seed: views of tensors that do not require
    # grad, whose requires_grad follows their base's (mark_view's following views)
    def body(torch):
        x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        W = torch.arange(9, dtype=torch.float32).reshape(3, 3) / 10
        seen = []
        y = torch.tanh(W @ x)
        y.register_hook(lambda g: seen.append((g.stride(), g._base is not None,
                                               g.requires_grad)))
        (g,) = torch.autograd.grad((y ** 2).sum(), [x], create_graph=True)
        saved = g.grad_fn._saved_self
        out = [g, seen, saved, saved._base is W, saved.requires_grad, saved.is_leaf]
        W.requires_grad_()
        out += [saved.requires_grad, saved.grad_fn, saved.is_leaf]
        for _ in range(70):  # (past the count at which a base's list of views is pruned)
            W.detach().t()
            torch.autograd.grad((torch.tanh(W.detach() @ x) ** 2).sum(), [x], create_graph=True)
        W.requires_grad_(False)
        out += [saved.requires_grad, W.t().requires_grad]
        return out
    same(body)


def test_what_a_backward_without_retain_graph_frees():
    # each op's node class releases what its op saved: all of it (mul), its tensors only
    # (pow keeps its exponent), nothing (sum keeps its shape and runs again)
    def body(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * torch.tensor([3.0, 4.0])
        p = x ** 3
        s = x.sum()
        (y + p).sum().backward()
        out = [error_of(lambda: y.grad_fn._saved_other), p.grad_fn._saved_exponent,
               error_of(lambda: p.grad_fn._saved_self), error_of(lambda: y.sum().backward())]
        s.backward()
        s.backward()
        out += [s.grad_fn._saved_self_sym_sizes, x.grad]
        return out
    same(body)


def test_a_power_of_one_is_a_copy():
    # pow's gradient takes self ** (exponent - 1) of every x ** 2: torch copies its input for a
    # power of 1, and so does ember for a contiguous float array (other layouts keep the power)
    def body(torch):
        x = torch.tensor([[1.0, -0.0, float("nan")], [float("inf"), -2.5, 3.0]],
                         requires_grad=True)
        out = []
        for y in (x, x.t(), x[:, :1].expand(2, 3), x.to(torch.float16), x.double(),
                  torch.tensor(2.0, requires_grad=True)):
            for p in (y ** 1, y.pow(1.0), y.detach() ** 1):
                out += [p, p.stride(), p._version, p.is_contiguous(),
                        p.data_ptr() != y.data_ptr()]
        out.append(torch.tensor([1, 2]) ** 1)
        (g,) = torch.autograd.grad((x.nan_to_num() ** 2).sum(), [x], create_graph=True)
        (h,) = torch.autograd.grad(g.sum(), [x])
        return out + [g, h]
    same(body)


def test_tanh_and_sigmoid_gradients_and_what_autograd_grad_returns():
    # tanh_backward and sigmoid_backward take 1 as a 0-d array of the output's dtype; a
    # first-order autograd.grad returns a gradient array of its own without the general path
    def body(torch):
        out = []
        for dtype in (torch.float16, torch.float32, torch.float64):
            x = torch.tensor([0.5, -1.5, 3.0], dtype=dtype, requires_grad=True)
            for f in (torch.tanh, torch.sigmoid):
                (g,) = torch.autograd.grad(f(x).sum(), [x], create_graph=True)
                (h,) = torch.autograd.grad((g * g).sum(), [x])
                out += [g, h, g.grad_fn.name(), h._version, h.is_leaf]
        x = torch.tensor([0.5, -1.5], requires_grad=True)
        y = torch.tanh(x) * x  # (x's gradient summed in place from two uses)
        (g,) = torch.autograd.grad(y.sum(), [x])
        seed = torch.ones(2)
        (same_seed,) = torch.autograd.grad(x * 1, [x], grad_outputs=seed)
        return out + [g, g._version, same_seed is seed, same_seed._version]
    same(body, rtol=1e-3, atol=1e-3)
