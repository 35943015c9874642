"""``x.conj()`` as torch's lazy view, against torch: the conjugate bit on ``x``'s memory.

A conjugate view shares ``x``'s memory, version counter and base; a write through it (or
through a view of it) conjugates back into ``x``, and it shows what is written into ``x``.
Its views carry the bit; ``x.conj().imag`` is a view with torch's negative bit. Autograd
sees ConjBackward0, CopySlices on the base after a write through it, and the view's history
regenerated with ConjBackward0, as torch's.
"""
from __future__ import annotations

import copy
import io
import pickle

import pytest

import ember
from tests.oracle import graph_tree, same

_X = [1 + 2j, 3 - 1j, -0.5 + 0.25j, 2 + 0j]


def _aliasing(t, y, x):
    return (y.is_conj(), y._is_view(), y._base is x, y.data_ptr() == x.data_ptr(),
            y._version == x._version, tuple(y.stride()), y.storage_offset())


def test_conj_is_a_view_of_its_input():
    def body(torch):
        x = torch.tensor(_X)
        y = x.conj()
        return _aliasing(torch, y, x), y, repr(y), y.tolist(), y.grad_fn is None

    same(body)


def test_conj_of_a_view_keeps_its_geometry():
    def body(torch):
        b = torch.tensor([_X, _X[::-1]])
        x = b.t()[1:, :]
        y = x.conj()
        return (_aliasing(torch, y, b), y.is_contiguous(), y._base is b, y,
                y.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())

    same(body)


@pytest.mark.parametrize("write", [
    "y.add_(1)", "y.mul_(2j)", "y[0] = 5 + 5j", "y[1:].copy_(torch.tensor([7 + 7j] * 3))",
    "y.zero_()", "y.fill_(1j)", "y[torch.tensor([0, 2])] = 9 - 1j", "y.imag.add_(1)",
    "y.real.mul_(3)", "y[0:2].sub_(1j)", "y.view(2, 2).t().add_(torch.ones(2, 2) * 1j)",
    "y.unsqueeze(0).div_(2)", "y.conj().add_(1j)", "y.detach().add_(10)",
    "y.data.mul_(-1)",
])
def test_a_write_through_the_view_conjugates_into_its_base(write):
    def body(torch):
        x = torch.tensor(_X)
        y = x.conj()
        exec(write, {"torch": torch, "y": y})
        return x, y, x._version, y._version

    same(body)


def test_the_view_shows_writes_into_its_base():
    def body(torch):
        x = torch.tensor(_X)
        y = x.conj()
        part = y[1:3]
        x.mul_(1j)
        x.numpy()[0] = 4 - 4j  # (not through the ops: still the same memory)
        return y, part, y.sum(), part.is_conj()

    same(body)


@pytest.mark.parametrize("view", [
    "y[0:1]", "y.view(2, 2)", "y.view(2, 2).T", "y.unsqueeze(0)", "y.expand(3, 4)",
    "y.flatten()", "y.reshape(2, 2)", "y[::2]", "y.narrow(0, 1, 2)", "y.conj()",
    "y.real", "y.imag", "y.detach()", "y.view(2, 2).diagonal()",
])
def test_views_of_the_view_carry_the_bit(view):
    def body(torch):
        x = torch.tensor(_X)
        y = x.conj()
        v = eval(view, {"torch": torch, "y": y})
        return (v, v.is_conj(), v.is_neg(), v._base is x, v.data_ptr() == x.data_ptr()
                or v.data_ptr() == x.imag.data_ptr(), tuple(v.stride()), v.storage_offset())

    same(body)


def test_resolving_copying_and_refusals():
    def body(torch):
        x = torch.tensor(_X)
        y = x.conj()
        out = [y.clone().is_conj(), y.clone(), y.resolve_conj().is_conj(),
               y.resolve_conj()._is_view(), y.resolve_conj().data_ptr() == x.data_ptr(),
               y.contiguous() is y, y.to(torch.complex64) is y,
               y.conj_physical().is_conj(), y.conj_physical(), y * 2, y[0].item(),
               torch.view_as_real(y.resolve_conj())]
        for f in (lambda: y.numpy(), lambda: y.imag.numpy(), lambda: torch.view_as_real(y),
                  lambda: y.view(torch.float64), lambda: y.imag.resolve_neg().numpy().tolist()):
            try:
                out.append(f())
            except RuntimeError as e:
                out.append(str(e))
        return out

    same(body)


def test_the_negative_bit():
    def body(torch):
        r = torch.tensor([1.0, -2.0, 3.0])
        n = r._neg_view()
        out = [r.conj() is r, r.conj_physical() is r, r.resolve_neg() is r, r.is_neg(),
               n, n.is_neg(), n._is_view(), n._base is r, n.data_ptr() == r.data_ptr(),
               n.resolve_neg().is_neg(), n.resolve_neg(), n[1:].is_neg(), repr(n)]
        n.add_(1)
        out.append(r)
        z = torch.tensor(_X)
        both = z._neg_view().conj()
        out += [both.is_neg(), both.is_conj(), both, z._neg_view()._neg_view().is_neg()]
        return out

    same(body)


def test_serialized_views_keep_their_bits():
    def body(torch):
        x = torch.tensor([_X, _X[::-1]])
        out = []
        for y in (x.conj(), x.t()[1:].conj(), x.conj().imag, torch.tensor([1.0, -2.0])._neg_view()):
            buf = io.BytesIO()
            torch.save(y, buf)
            buf.seek(0)
            loaded = torch.load(buf)
            again = pickle.loads(pickle.dumps(y))
            deep = copy.deepcopy(y)
            # (strides left out: ember's pickle and deepcopy lay any tensor out anew)
            out += [(t, t.is_conj(), t.is_neg()) for t in (loaded, again, deep)]
            out.append(tuple(loaded.stride()))
        return out

    same(body)


@pytest.mark.parametrize("writer", ["torch", "ember"])
def test_files_of_either_library_keep_the_bit(writer, tmp_path):
    torch = pytest.importorskip("torch")
    libs = {"torch": torch, "ember": ember}
    lib = libs[writer]
    other = libs["ember" if writer == "torch" else "torch"]
    lib.save({"c": lib.tensor(_X).conj(), "n": lib.tensor([1.0, -2.0])._neg_view()},
             tmp_path / "bits.pt")
    got = other.load(tmp_path / "bits.pt")
    assert got["c"].is_conj() and got["n"].is_neg()
    assert got["c"].resolve_conj().tolist() == [complex(z).conjugate() for z in _X]
    assert got["n"].resolve_neg().tolist() == [-1.0, 2.0]


# -- autograd ----------------------------------------------------------------------------------
def test_the_graph_of_conj_and_of_a_write_through_it():
    def body(torch):
        x = torch.tensor(_X, requires_grad=True)
        y = x.conj()
        a = x.clone()
        b = a.conj()
        b.mul_(2j)
        c = b[0:2]
        c.add_(1j)
        return (graph_tree(y.grad_fn), graph_tree(a.grad_fn), graph_tree(b.grad_fn),
                graph_tree(c.grad_fn), a, b, c, a._version)

    same(body)


@pytest.mark.parametrize("write", [
    "b.mul_(w)", "b.copy_(w * x)", "b[1:3].mul_(w[0])", "b.imag.mul_(3)", "b.real.add_(w.real)",
    "b.view(2, 2).t().mul_(w.view(2, 2))", "b.conj().mul_(w)",
])
def test_gradients_through_writes_into_a_conjugate_view(write):
    def body(torch):
        x = torch.tensor(_X, dtype=torch.complex128, requires_grad=True)
        w = torch.tensor([2 - 1j, 0.5j, 1 + 1j, -3 + 0j], dtype=torch.complex128,
                         requires_grad=True)
        a = x * 1
        b = a.conj()
        exec(write, {"torch": torch, "b": b, "w": w, "x": x})
        loss = (a * torch.tensor([1 + 2j, -1j, 0.5, 2 - 1j], dtype=torch.complex128)).real.sum()
        gx, gw = torch.autograd.grad(loss, (x, w), allow_unused=True)
        return a, gx, gw, a.grad_fn.name(), b.grad_fn.name()

    same(body, rtol=1e-12, atol=1e-12)


def test_a_saved_conjugate_view_checks_its_base_version():
    def body(torch):
        x = torch.tensor(_X, requires_grad=True)
        a = x * 1
        s = a.conj()
        w = s * s
        a.add_(1)
        try:
            w.abs().sum().backward()
        except RuntimeError as e:
            return str(e)

    same(body)


def test_gradcheck_of_functions_mixing_conjugate_views_and_writes():
    torch = pytest.importorskip("torch")

    def fn(lib):
        def f(x, w):
            a = x.clone()
            b = a.conj()
            b[1:].mul_(w[:-1])
            b.imag.add_(w.real)
            return (a * b.conj()[0:1].expand(4)).sum(), b.resolve_conj()
        return f

    for lib in (torch, ember):
        x = lib.tensor(_X, dtype=lib.complex128, requires_grad=True)
        w = lib.tensor([2 - 1j, 0.5j, 1 + 1j, -3 + 0j], dtype=lib.complex128, requires_grad=True)
        assert lib.autograd.gradcheck(fn(lib), (x, w))
        assert lib.autograd.gradgradcheck(fn(lib), (x, w))
