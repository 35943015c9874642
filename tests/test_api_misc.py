"""torch's smaller names ember has beside its op families, against torch 2.13: the removed
linear-algebra functions and Tensor methods (torch's errors), triangular_solve, adjoint,
slice_inverse, the view_as_*_copy functions, Tensor.resize/resize_as/module_load, the CPU
Stream and Event, get_device_module, the runtime error classes, the autograd switches,
func.rearrange and the small helpers of nn.utils and utils.data."""
import numpy as np
import pytest
from oracle import same

import ember

GEN = np.random.default_rng(3)
A = GEN.standard_normal((3, 3))
B = GEN.standard_normal((3, 2))
Z = GEN.standard_normal((2, 3)) + 1j * GEN.standard_normal((2, 3))
X4 = GEN.standard_normal((2, 6, 4, 3))


@pytest.mark.parametrize("name", ["eig", "symeig", "lstsq", "solve", "matrix_rank"])
def test_removed_functions_raise_torchs_error(name):
    def body(torch):
        a = torch.tensor(A)
        args = (a,) if name in ("eig", "symeig", "matrix_rank") else (a, a)
        return getattr(torch, name)(*args)
    same(body)


@pytest.mark.parametrize("name", ["eig", "symeig", "lstsq", "solve"])
def test_removed_methods_raise_torchs_error(name):
    same(lambda torch: getattr(torch.tensor(A), name)(torch.tensor(A)) if name in (
        "lstsq", "solve") else getattr(torch.tensor(A), name)())


def test_reinforce_raises_torchs_error():
    same(lambda torch: torch.tensor(A).reinforce(1.0))


@pytest.mark.parametrize("kw", [{}, {"upper": False}, {"transpose": True},
                                {"unitriangular": True, "upper": False, "transpose": True}])
def test_triangular_solve(kw):
    def body(torch):
        a = torch.tensor(A + 3 * np.eye(3), requires_grad=True)
        b = torch.tensor(B, requires_grad=True)
        out = torch.triangular_solve(b, a, **kw)
        grads = torch.autograd.grad((out.solution ** 2).sum() + out.cloned_coefficient.sum(),
                                    (a, b))
        return out.solution.detach(), out.cloned_coefficient.detach(), grads, type(out).__name__
    same(body, check_warnings=False, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("b,a", [(np.zeros((3, 2), "float32"), A), (np.zeros((2, 2)), A)],
                         ids=["dtype", "sizes"])
def test_triangular_solve_errors(b, a):
    same(lambda torch: torch.triangular_solve(torch.tensor(b), torch.tensor(a)),
         check_warnings=False)


def test_adjoint_and_slice_inverse():
    def body(torch):
        z = torch.tensor(Z, requires_grad=True)
        adj = torch.adjoint(z)
        base = torch.arange(20.0).reshape(5, 4)
        inv = torch.slice_inverse(base[1:5:2], base, 0, 1, 5, 2)
        other = torch.arange(40.0).reshape(4, 10)[:, 1:5].slice_inverse(base, 1, 1, 5)
        return adj.detach(), adj.is_conj(), inv, inv._is_view(), other
    same(body)
    same(lambda torch: torch.adjoint(torch.ones(3)))


def test_view_as_copies():
    def body(torch):
        z = torch.tensor(Z, requires_grad=True)
        r = torch.view_as_real_copy(z)
        g, = torch.autograd.grad((r * torch.arange(12.0).reshape(2, 3, 2)).sum(), z)
        c = torch.view_as_complex_copy(torch.arange(6.0).reshape(3, 2))
        return r.detach(), r._is_view(), g, c, c._is_view()
    same(body, grad_fn=False)
    same(lambda torch: torch.view_as_complex_copy(torch.ones(3, 2, requires_grad=True)))


def test_resize_and_resize_as():
    def body(torch):
        x = torch.tensor(A[:, :2].copy(), requires_grad=True)
        y = x.resize(2, 3)
        z = x.resize_as(torch.ones(6))
        g, = torch.autograd.grad((y * torch.arange(6.0).reshape(2, 3)).sum() + z.sum(), x)
        return y, z, g
    same(body)
    same(lambda torch: torch.ones(2, 3, requires_grad=True).resize(4, 2))


def test_module_load():
    def body(torch):
        p = torch.nn.Parameter(torch.zeros(3))
        other = torch.ones(3, requires_grad=True)
        kept = p.module_load(other)
        assigned = p.module_load(other, assign=True)
        return kept, p.detach(), assigned, kept is p, assigned is other
    same(body)


def test_stream_and_event():
    def body(torch):
        s, e = torch.Stream(), torch.Event()
        out = [repr(s), repr(e), str(s.device), s.device_type, s.device_index, s.stream_id,
               s.query(), e.query(), s.synchronize(), e.synchronize(), e.wait(s),
               s.wait_event(e), s.is_capturing(), s == torch.Stream(), hash(s) == hash(
                   torch.Stream()), repr(torch.Event(enable_timing=True)),
               repr(torch.Stream(stream_id=3, device_index=-1, device_type=0))]
        with s as entered:
            out.append(entered is s)
        return out
    same(body)
    for fail in (lambda torch: torch.Event().record(), lambda torch: torch.Stream().record_event(),
                 lambda torch: torch.Stream().wait_stream(torch.Stream()),
                 lambda torch: torch.Stream(device="cuda"), lambda torch: torch.Stream(1),
                 lambda torch: torch.Event().elapsed_time(torch.Event()),
                 lambda torch: torch.Event(enable_timing=True).elapsed_time(
                     torch.Event(enable_timing=True)),
                 lambda torch: torch.Event().ipc_handle(),
                 lambda torch: torch.Stream().native_handle):
        same(fail)


def test_get_device_module():
    same(lambda torch: [torch.get_device_module(d).__name__ for d in
                        (None, "cpu", "cuda", torch.device("cpu"), "cpu:0")])
    for bad in ("meta", 3, "foo"):
        same(lambda torch: torch.get_device_module(bad))
    same(lambda torch: (torch.cpu.is_available(), torch.cpu.device_count(),
                        torch.cpu.current_device(), torch.cpu.synchronize(),
                        torch.cpu.current_stream() is torch.cpu.current_stream()))


def test_error_classes():
    same(lambda torch: [(c.__name__, [b.__name__ for b in c.__mro__[1:]])
                        for c in (torch.AcceleratorError, torch.OutOfMemoryError,
                                  torch.FatalError)])


def test_autograd_switches():
    def body(torch):
        A = torch.autograd
        out = [A.is_multithreading_enabled(), A.is_view_replay_enabled()]
        with A.set_multithreading_enabled(False):
            out.append(A.is_multithreading_enabled())
        out.append(A.is_multithreading_enabled())
        A.set_multithreading_enabled(False)
        out.append(A.is_multithreading_enabled())
        A.set_multithreading_enabled(True)
        x = torch.ones(3, requires_grad=True)
        y = x.exp()
        out.append(isinstance(y.grad_fn._raw_saved_result, A.SavedTensor))
        return out
    same(body)


REARRANGE = [("b h w c -> b h w c", {}), ("b h w c -> (b h) w c", {}),
             ("b h w c -> h (b w) c", {}), ("b h w c -> b c h w", {}),
             ("b h w c -> b (c h w)", {}), ("b (h1 h) (w1 w) c -> (b h1 w1) h w c",
                                            {"h1": 2, "w1": 2}),
             ("b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2, "w1": 2}),
             ("... c -> c ...", {}), ("b ... -> (b ...)", {}), ("b h w c -> b h w c 1", {}),
             ("b h w c -> b h w () c", {}), ("b 1 w c -> b w c", {}), ("... -> ...", {}),
             ("b ... 1 -> (... b)", {})]
REARRANGE_ERRORS = [("b h w c -> b h w", {}), ("b h -> h b", {}), ("b h w c -> b h w 2 c", {}),
                    ("b h w c -> b h w c", {"z": 3}), ("b h w c", {}),
                    ("b (h (w)) c -> b", {}), ("b h w c. -> b", {}),
                    ("b h w c -> b h w $", {}), ("b (h q) w c -> b h q w c", {}),
                    ("b h w c -> b h w c", {"h": 5}), ("b (h q) w c -> b h q w c", {"q": 4}),
                    ("b (h q) w c -> b h q w c", {"h": 2, "q": 2}),
                    ("(b h) w c -> b h w c", {"b": 0})]


@pytest.mark.parametrize("pattern,lengths", REARRANGE, ids=[p for p, _ in REARRANGE])
def test_rearrange(pattern, lengths):
    def body(torch):
        t = torch.tensor(X4, requires_grad=True)
        y = torch.func.rearrange(t, pattern, **lengths)
        w = torch.arange(float(y.numel()), dtype=torch.float64).reshape(y.shape)
        g, = torch.autograd.grad((y * w).sum(), t)
        return y.detach(), g, y._is_view()
    same(body, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("pattern,lengths", REARRANGE_ERRORS,
                         ids=[f"{p}{sorted(k.items())}" for p, k in REARRANGE_ERRORS])
def test_rearrange_errors(pattern, lengths):
    same(lambda torch: torch.func.rearrange(torch.zeros(2, 6, 4, 3), pattern, **lengths))


def test_rearrange_of_a_list():
    same(lambda torch: torch.func.rearrange([torch.arange(6.0), torch.ones(6)], "b (h w) -> w b h",
                                            h=2))


def test_small_helpers():
    def body(torch):
        parametrize, rnn = torch.nn.utils.parametrize, torch.nn.utils.rnn
        data = torch.utils.data

        class Sub(torch.Tensor):
            def __tensor_flatten__(self):
                return [], None

            @staticmethod
            def __tensor_unflatten__(*a):
                return None
        decorate = rnn.copy_method_params(torch.nn.Module.forward)

        def f(self, x):
            return x
        return (data._DatasetKind.Map, data._DatasetKind.Iterable,
                data.DataLoader(range(3))._dataset_kind, parametrize.Module is torch.nn.Module,
                parametrize.is_traceable_wrapper_subclass(torch.ones(1)),
                decorate(f) is f)
    same(body)


def test_geqrf_and_ormqr():
    def body(torch):
        a0 = torch.tensor(A[:, :2].copy(), requires_grad=True)
        a, tau = a0.geqrf()
        c = torch.tensor(B, requires_grad=True)
        h, t = a.detach().requires_grad_(), tau.detach().requires_grad_()
        outs = [h.ormqr(t, c), torch.ormqr(h, t, c, transpose=True),
                torch.ormqr(h, t, c.mT, left=False)]
        grads = torch.autograd.grad(sum((o ** 3).sum() for o in outs), (h, t, c))
        return a.detach(), tau.detach(), a.grad_fn.name(), [o.detach() for o in outs], grads
    same(body, rtol=1e-10, atol=1e-12)
    same(lambda torch: torch.geqrf(torch.tensor(A, requires_grad=True))[0].sum().backward())


@pytest.mark.parametrize("call", [
    lambda t: t.geqrf(t.ones(3)), lambda t: t.geqrf(t.ones(3, 3, dtype=t.long)),
    lambda t: t.ormqr(t.ones(3, 3), t.ones(3), t.ones(2, 2)),
    lambda t: t.ormqr(t.ones(3, 3), t.ones(2), t.ones(3, 3)),
    lambda t: t.ormqr(t.ones(3, 3, dtype=t.float64), t.ones(3, dtype=t.float64), t.ones(3, 2)),
])
def test_geqrf_and_ormqr_errors(call):
    same(call)


LOWRANK = {"svd": lambda t, a: t.svd_lowrank(a, q=3),
           "svd_niter": lambda t, a: t.svd_lowrank(a.mT, q=2, niter=1),
           "svd_M": lambda t, a: t.svd_lowrank(a, q=3, M=a[:1].detach() * 0.5),
           "svd_batch": lambda t, a: t.svd_lowrank(a.reshape(2, 4, 5), q=2),
           "pca": lambda t, a: t.pca_lowrank(a),
           "pca_uncentered": lambda t, a: t.pca_lowrank(a.mT, q=3, center=False, niter=3)}
A85 = GEN.standard_normal((8, 5))


@pytest.mark.parametrize("case", list(LOWRANK))
def test_lowrank(case):
    """Same random draws and steps as torch: the same singular values and (sign-invariant)
    factors and gradients; the signs of singular vector pairs come from linalg.svd of a wide
    matrix, where NumPy's LAPACK and torch's may choose differently."""
    def body(torch):
        torch.manual_seed(7)
        a = torch.tensor(A85, requires_grad=True)
        U, S, V = LOWRANK[case](torch, a)
        g, = torch.autograd.grad(S.sum() + (U[..., 0] ** 2).sum() + (V[..., 1] ** 2).sum(), a)
        return S.detach(), U.detach().abs(), V.detach().abs(), (U * S.unsqueeze(-2)).detach(
        ) @ V.detach().mT, g, [t.grad_fn.name() for t in (U, S, V)]
    same(body, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kw", [{"q": 9}, {"niter": -1}])
def test_pca_lowrank_errors(kw):
    same(lambda torch: torch.pca_lowrank(torch.tensor(A85), **kw))


def test_the_conjugate_bit_as_torchs():
    # what ember's copy with the conjugate bit shares with torch's lazy conjugate view (see
    # docs/torch_api.md for the rest): the flag, its resolution, values, and the refusals
    def body(torch):
        x = torch.tensor([1 + 2j, 3 - 1j])
        y = x.conj()
        plain = torch.tensor([1.0, 2.0]).conj()
        return (y.is_conj(), y.conj().is_conj(), y.resolve_conj().is_conj(),
                x.conj_physical().is_conj(), y, y.tolist(), repr(y), y.real, y.imag,
                torch.view_as_real_copy(y), torch.view_as_real(y.resolve_conj()),
                plain.is_conj(), plain._is_view(), x.resolve_conj() is x)
    same(body)


@pytest.mark.parametrize("refusal", ["numpy", "view_as_real", "aten_view_as_real"])
def test_a_conjugated_tensor_refused_as_torch(refusal):
    def body(torch):
        y = torch.tensor([1 + 2j, 3 - 1j]).conj()
        if refusal == "numpy":
            return y.numpy()
        if refusal == "view_as_real":
            return torch.view_as_real(y)
        return torch.ops.aten.view_as_real(y)
    same(body)
