"""The whole graph a composition records, node by node, against torch's: the op table compares
a result's node and the nodes one level down; torch's compositions (kron's views, combinations'
meshgrid, the trapezoidal rule's slices, the margin losses' scalar additions) differ deeper."""
from __future__ import annotations

import numpy as np
import pytest

import ember

_RNG = np.random.default_rng(7)
_M, _M2, _V = (_RNG.uniform(0.2, 0.9, s) for s in ((3, 4), (3, 4), (4,)))

CASES = {
    "kron": lambda t, a, b, v: t.kron(a, b[:2, :2]),
    "kron_vector": lambda t, a, b, v: t.kron(a, v),
    "combinations": lambda t, a, b, v: t.combinations(v, 3, with_replacement=True),
    "trapezoid": lambda t, a, b, v: t.trapezoid(a, dx=0.5),
    "trapezoid_x": lambda t, a, b, v: t.trapezoid(a, v),
    "cumulative_trapezoid_x": lambda t, a, b, v: t.cumulative_trapezoid(a, b, dim=0),
    "block_diag": lambda t, a, b, v: t.block_diag(a, v, v[0]),
    "margin_ranking_loss": lambda t, a, b, v: t.nn.functional.margin_ranking_loss(a, b, a),
    "triplet_margin_loss": lambda t, a, b, v: t.nn.functional.triplet_margin_loss(a, b, a),
    "gaussian_nll_loss": lambda t, a, b, v: t.nn.functional.gaussian_nll_loss(a, b, a),
    "slice_scatter": lambda t, a, b, v: t.slice_scatter(a, b[:, 1:3], 1, 1, 3),
    "ldexp": lambda t, a, b, v: t.ldexp(a, v),
    "cov": lambda t, a, b, v: t.cov(a),
    "cov_fweights": lambda t, a, b, v: t.cov(a, fweights=t.tensor([1, 2, 1, 3])),
    "cov_aweights": lambda t, a, b, v: t.cov(a, aweights=v.detach(), correction=0),
    "cov_complex": lambda t, a, b, v: t.cov(t.complex(a, b), fweights=t.tensor([1, 2, 1, 3])).real,
    "corrcoef": lambda t, a, b, v: t.corrcoef(a),
    "vander": lambda t, a, b, v: t.vander(v),
    "dropout3d_2d": lambda t, a, b, v: t.nn.functional.dropout3d(a, 0.5),
    "local_response_norm_3d": lambda t, a, b, v: t.nn.functional.local_response_norm(
        a.reshape(1, 3, 4), 2),
    "local_response_norm_4d": lambda t, a, b, v: t.nn.functional.local_response_norm(
        a.reshape(1, 3, 2, 2), 3),
    "vander_increasing": lambda t, a, b, v: t.vander(v, 3, increasing=True),
    # torch's *_copy functions: one node named after the view's, no clone after a view
    "view_copy": lambda t, a, b, v: t.view_copy(a.t(), (12,)),
    "expand_copy": lambda t, a, b, v: t.expand_copy(v, (2, 4)),
    "permute_copy": lambda t, a, b, v: t.permute_copy(a, (1, 0)),
    "t_copy": lambda t, a, b, v: t.t_copy(a),
    "transpose_copy": lambda t, a, b, v: t.transpose_copy(a, 0, 1),
    "squeeze_copy": lambda t, a, b, v: t.squeeze_copy(a[None]),
    "squeeze_copy_dim": lambda t, a, b, v: t.squeeze_copy(a[None], 0),
    "squeeze_copy_dims": lambda t, a, b, v: t.squeeze_copy(a[None], (0,)),
    "unsqueeze_copy": lambda t, a, b, v: t.unsqueeze_copy(a, 1),
    "diagonal_copy": lambda t, a, b, v: t.diagonal_copy(a, 1),
    "select_copy": lambda t, a, b, v: t.select_copy(a, 1, 2),
    "slice_copy": lambda t, a, b, v: t.slice_copy(a, 1, 1, 3),
    "unfold_copy": lambda t, a, b, v: t.unfold_copy(a, 1, 2, 1),
    "as_strided_copy": lambda t, a, b, v: t.as_strided_copy(a, (2, 2), (1, 2), 1),
    "alias_copy": lambda t, a, b, v: t.alias_copy(a),
    "split_copy": lambda t, a, b, v: t.split_copy(a, 3, 1)[1],
    "split_with_sizes_copy": lambda t, a, b, v: t.split_with_sizes_copy(a, [1, 3], 1)[1],
    "unbind_copy": lambda t, a, b, v: t.unbind_copy(a, 1)[2],
    # torch.fill's own nodes (FillBackward0 of a number, FillBackward1 of a tensor value)
    "fill_number": lambda t, a, b, v: t.fill(a, 2.5),
    "fill_tensor": lambda t, a, b, v: t.fill(a, v[1]),
    "fill_tensor_only": lambda t, a, b, v: t.fill(a.detach(), v[1]),
    "fill__tensor": lambda t, a, b, v: a.clone().fill_(v[1]),
    "as_strided_scatter": lambda t, a, b, v: t.as_strided_scatter(a, v[:2] * 2, (2,), (1,), 1),
    "as_strided_scatter_2d": lambda t, a, b, v: a.as_strided_scatter(b[:2, :2], (2, 2), (1, 4)),
    "as_strided_scatter_of_view": lambda t, a, b, v: t.as_strided_scatter(
        a[1:], v[:2], (2,), (1,)),
    # cosine_similarity: both inputs expanded where their shapes differ, the norms cloned
    "cosine_similarity": lambda t, a, b, v: t.nn.functional.cosine_similarity(a, v),
    "cosine_similarity_same_shapes": lambda t, a, b, v: t.cosine_similarity(a, b, dim=0),
    "frobenius_norm": lambda t, a, b, v: t.frobenius_norm(a, (0, 1)),
    "frobenius_norm_dim": lambda t, a, b, v: t.frobenius_norm(a, 1, keepdim=True),
    # quantile as torch's quantile_compute: sort, view, gather(s), lerp_, squeeze_
    **{f"{fn}_{mode}{form}": (lambda fn, mode, call: lambda t, a, b, v: call(
        getattr(t, fn), t, a, mode))(fn, mode, call)
       for fn in ("quantile", "nanquantile")
       for mode in ("linear", "lower", "higher", "midpoint", "nearest")
       for form, call in (
           ("", lambda f, t, a, m: f(a, 0.3, dim=1, interpolation=m)),
           ("_all", lambda f, t, a, m: f(a, 0.6, interpolation=m)),
           ("_q_dim0", lambda f, t, a, m: f(a, t.tensor([0.2, 0.7], dtype=t.float64), dim=0,
                                            keepdim=True, interpolation=m)))},
    # triangular_solve: one TriangularSolveBackward0 for the solution and the coefficient
    "triangular_solve": lambda t, a, b, v: t.triangular_solve(a[:, :2], a[:, 1:].triu())[0],
    "triangular_solve_coefficient": lambda t, a, b, v: t.triangular_solve(
        a[:, :2], b[:, 1:], upper=False, transpose=True)[1],
    # the triangular solvers' gradients with respect to the matrix keep its triangle with
    # torch's triu/tril (TriuBackward0, TrilBackward0), cholesky's halves its sum by a number
    **{f"{name}_gradient": (lambda solve: lambda t, a, b, v: _gradient_of_square(
        t, a, lambda m: solve(t, m, b[:, :2])))(solve)
       for name, solve in (
           ("solve_triangular_upper", lambda t, m, r: t.linalg.solve_triangular(
               m, r, upper=True)),
           ("solve_triangular_lower_unit", lambda t, m, r: t.linalg.solve_triangular(
               m, r, upper=False, unitriangular=True)),
           ("solve_triangular_right", lambda t, m, r: t.linalg.solve_triangular(
               m, r.mT, upper=False, left=False)),
           ("triangular_solve", lambda t, m, r: t.triangular_solve(r, m)[0]),
           ("triangular_solve_lower_transposed", lambda t, m, r: t.triangular_solve(
               r, m, upper=False, transpose=True)[0]),
           ("triangular_solve_unit", lambda t, m, r: t.triangular_solve(
               r, m, unitriangular=True)[0]),
           ("cholesky", lambda t, m, r: t.linalg.cholesky(m @ m.mT)),
           ("cholesky_upper", lambda t, m, r: t.linalg.cholesky(m @ m.mT, upper=True)))},
    # torch's C++ compositions add and subtract doubles with the Scalar overloads
    "rms_norm": lambda t, a, b, v: t.nn.functional.rms_norm(a, (4,), eps=1e-3),
    "cosine_embedding_loss": lambda t, a, b, v: t.nn.functional.cosine_embedding_loss(
        a, b, t.tensor([1.0, -1.0, 1.0]), margin=0.1),
    "poisson_nll_loss_rate": lambda t, a, b, v: t.nn.functional.poisson_nll_loss(
        a, b, log_input=False),
    "cross_entropy_label_smoothing": lambda t, a, b, v: t.nn.functional.cross_entropy(
        a, t.tensor([0, 3, 1]), label_smoothing=0.2, ignore_index=3),
    "view_as_real_copy": lambda t, a, b, v: t.view_as_real_copy(
        t.view_as_complex(a.reshape(3, 2, 2))),
    # the inverse in LAPACK's layout: matmul's reshapes of it are aliases (ReshapeAliasBackward0)
    "matrix_power_neg2_batch": lambda t, a, b, v: t.linalg.matrix_power(
        a.reshape(3, 2, 2) + t.eye(2, dtype=t.float64), -2),
    "inv_matmul_batch": lambda t, a, b, v: t.linalg.inv(
        a.reshape(3, 2, 2) + t.eye(2, dtype=t.float64)) @ b.reshape(3, 2, 2),
    # the solvers' solutions in torch's layout (column-major for A X = B, row-major for
    # X A = B): matmul's reshapes of them record what torch's record
    "solve_matmul_batch": lambda t, a, b, v: t.linalg.solve(
        _batch_of_2x2(t, a), b.reshape(3, 2, 2)) @ b.reshape(3, 2, 2),
    "solve_ex_right_matmul_batch": lambda t, a, b, v: t.linalg.solve_ex(
        _batch_of_2x2(t, a), b.reshape(3, 2, 2), left=False)[0] @ b.reshape(3, 2, 2),
    "solve_vector_matmul_batch": lambda t, a, b, v: t.linalg.solve(
        _batch_of_2x2(t, a), b[:, :2]) @ b.reshape(2, 6),
    "lu_solve_matmul_batch": lambda t, a, b, v: t.linalg.lu_solve(
        *t.linalg.lu_factor(_batch_of_2x2(t, a)), b.reshape(3, 2, 2)) @ b.reshape(3, 2, 2),
    "cholesky_solve_matmul_batch": lambda t, a, b, v: t.cholesky_solve(
        b.reshape(3, 2, 2), t.linalg.cholesky(_batch_of_2x2(t, a) @ _batch_of_2x2(t, a).mT)
    ) @ b.reshape(3, 2, 2),
    "svd_lowrank_batch": lambda t, a, b, v: _seeded(t).svd_lowrank(
        t.stack([a, b]), q=2)[2],
    "qr_svd_matmul": lambda t, a, b, v: t.linalg.qr(t.stack([a, b]).mT)[0] @ t.linalg.svd(
        t.stack([b, a]).mT)[2],
    # stft writes a shorter window into n_fft zeros (CopySlices)
    "stft_short_window": lambda t, a, b, v: t.stft(
        a.reshape(12), 4, 2, 3, v[:3], return_complex=True).abs(),
    # recurrent networks split their initial states with one unbind (UnbindBackward0)
    **{f"{cls.lower()}{suffix}": (lambda cls, kw: lambda t, a, b, v: _recurrent(
        t, cls, a, b, **kw))(cls, kw)
       for cls in ("LSTM", "GRU", "RNN")
       for suffix, kw in (("", {}), ("_relu", {"nonlinearity": "relu"}))
       if cls == "RNN" or not kw},
    "gru_functional": lambda t, a, b, v: t.gru(
        a.reshape(3, 1, 4), b.reshape(2, 1, 6)[:1, :, :3],
        [b.reshape(-1)[:9].reshape(9, 1).expand(9, 4), b[:, :3].repeat(3, 1), v[:3].repeat(3),
         v[1:].repeat(3)], True, 1, 0.0, True, False, False)[0],
}


def _batch_of_2x2(t, a):
    """Three invertible 2x2 matrices of ``a``."""
    return a.reshape(3, 2, 2) + t.eye(2, dtype=t.float64)


def _gradient_of_square(t, a, f):
    """The gradient (as a graph: create_graph) of ``f(m).sum()`` with respect to ``m``, a
    well-conditioned 3x3 matrix made of ``a``."""
    m = a[:, :3] + 2 * t.eye(3, dtype=t.float64)
    return t.autograd.grad(f(m).sum(), m, create_graph=True)[0]


def _seeded(t):
    t.manual_seed(0)
    return t


def _recurrent(t, cls, a, b, **kw):
    """A two-layer bidirectional network over ``a`` as 3 steps of 1 row, from states of ``b``."""
    t.manual_seed(0)
    net = getattr(t.nn, cls)(4, 3, num_layers=2, bidirectional=True, dtype=t.float64, **kw)
    h0 = b.reshape(4, 1, 3)
    out, h_n = net(a.reshape(3, 1, 4), (h0, h0 * 2) if cls == "LSTM" else h0)
    return out.sum() + (h_n[1] if cls == "LSTM" else h_n).sum()


def test_vander_gradient_raises_as_torchs():
    """torch's vander copies cumprod's result over its saved input: its backward raises."""
    torch = pytest.importorskip("torch")
    messages = []
    for mod in (ember, torch):
        x = mod.tensor(_V, dtype=mod.float64, requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            mod.autograd.grad(mod.vander(x).sum(), x)
        messages.append(str(info.value).replace("torch.", "ember."))
    assert messages[0] == messages[1]


def _nodes(out):
    """Every node of ``out``'s graph in breadth-first order (each once), by name."""
    names, queue, seen = [], [out.grad_fn], set()
    while queue:
        node = queue.pop(0)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name().replace("torch::autograd::", ""))
        queue.extend(n for n, _ in node.next_functions)
    return names


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_is_torchs(name):
    torch = pytest.importorskip("torch")
    graphs = []
    for mod in (ember, torch):
        args = [mod.tensor(a, dtype=mod.float64, requires_grad=True) for a in (_M, _M2, _V)]
        graphs.append(_nodes(CASES[name](mod, *args)))
    assert graphs[0] == graphs[1]


def test_dropout3d_of_fewer_dimensions_drops_first_dimension_slices():
    """torch's dropout3d takes any input but a 5-D one as unbatched: a 2-D input's rows are its
    channels, each kept or zeroed whole (ember dropped its elements one by one)."""
    ember.manual_seed(0)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        out = ember.nn.functional.dropout3d(ember.ones(64, 50), 0.5)
    kept = (out != 0).sum(1)
    assert set(kept.tolist()) <= {0, 50} and 0 < int((kept == 50).sum()) < 64


_COPIES = ("view_copy", "expand_copy", "permute_copy", "t_copy", "unfold_copy",
           "as_strided_copy", "alias_copy", "unbind_copy")


@pytest.mark.parametrize("name", _COPIES)
def test_copy_functions_give_no_views(name):
    """A *_copy result is contiguous and shares no memory: writing into its input leaves it as
    it was, and its node saves what the view's shows (torch's ``_saved_*`` values)."""
    torch = pytest.importorskip("torch")
    seen = []
    for mod in (ember, torch):
        args = [mod.tensor(a, dtype=mod.float64, requires_grad=True) for a in (_M, _M2, _V)]
        out = CASES[name](mod, *args)
        before = out.tolist()
        with mod.no_grad():
            args[0].add_(1.0)
            args[2].add_(1.0)
        node = out.grad_fn
        saved = {k: getattr(node, k) for k in dir(node) if k.startswith("_saved_")}
        seen.append((out.is_contiguous(), out._base is None, out.tolist() == before, saved))
    assert seen[0] == seen[1] and seen[0][:3] == (True, True, True)


@pytest.mark.parametrize("fill", ["fill", "fill_"])
def test_fill_refuses_a_value_of_dimensions(fill):
    """torch's fill and fill_ take a 0-dim value tensor only (ember filled with a broadcast)."""
    torch = pytest.importorskip("torch")
    messages = []
    for mod in (ember, torch):
        a, v = (mod.tensor(x, dtype=mod.float64) for x in (_M, _V))
        with pytest.raises(RuntimeError) as info:
            mod.fill(a, v[:1]) if fill == "fill" else a.fill_(v[None, :1])
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_fill_gradient_reaches_its_tensor_value():
    """The value's gradient is the sum of the output's, the input's zero, as torch's."""
    torch = pytest.importorskip("torch")
    grads = []
    for mod in (ember, torch):
        a, v = (mod.tensor(x, dtype=mod.float64, requires_grad=True) for x in (_M, _V))
        w = mod.tensor(_M2, dtype=mod.float64)
        grads.append([g.tolist() for g in mod.autograd.grad(mod.fill(a, v[2]), (a, v), w)])
    assert grads[0] == grads[1]


def test_as_strided_scatter_refuses_a_strided_input_requiring_grad():
    """torch asserts a contiguous ``input`` where it requires grad (in any grad mode); ember
    also refuses src's gradient of another layout, which torch reads from the wrong elements."""
    torch = pytest.importorskip("torch")
    messages = []
    for mod in (ember, torch):
        a, v = (mod.tensor(x, dtype=mod.float64, requires_grad=True) for x in (_M, _V))
        with mod.no_grad(), pytest.raises(RuntimeError) as info:
            mod.as_strided_scatter(a.t(), v[:2], (2,), (1,), 1)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    a, v = (ember.tensor(x, dtype=ember.float64, requires_grad=True) for x in (_M, _V))
    with pytest.raises(RuntimeError, match="contiguous input only"):
        ember.as_strided_scatter(a.detach().t(), v[:2], (2,), (1,), 1)


def test_as_strided_scatter_gradient_is_the_derivative():
    """self's gradient outside the region, src's inside it (torch's gives self the region's:
    its own gradcheck refuses it); a transposed input not requiring grad keeps its layout."""
    a = ember.tensor(_M, dtype=ember.float64, requires_grad=True)
    v = ember.tensor(_V[:2], dtype=ember.float64, requires_grad=True)
    w = ember.tensor(_M2, dtype=ember.float64)
    ga, gv = ember.autograd.grad(ember.as_strided_scatter(a, v, (2,), (3,), 1), (a, v), w)
    expected = _M2.copy()
    expected.flat[[1, 4]] = 0
    assert np.array_equal(ga.numpy(), expected) and gv.tolist() == _M2.flat[[1, 4]].tolist()
    assert ember.autograd.gradgradcheck(
        lambda x, s: ember.as_strided_scatter(x, s, (2,), (3,), 1), (a, v))
    torch = pytest.importorskip("torch")
    outs = [mod.as_strided_scatter(mod.tensor(_M).t(), mod.tensor(_V[:2]), (2,), (2,), 1)
            for mod in (ember, torch)]
    assert outs[0].stride() == outs[1].stride() and outs[0].tolist() == outs[1].tolist()


def test_cosine_similarity_of_a_tiny_norm_as_torchs():
    """torch clamps the norms in place outside autograd: a norm below eps still passes its
    gradient (ember's clamp_min node stopped it); integer inputs take the common dtype."""
    torch = pytest.importorskip("torch")
    seen = []
    for mod in (ember, torch):
        a = mod.tensor([[1e-9, 0.0], [0.0, 0.0], [1.0, 2.0]], dtype=mod.float64,
                       requires_grad=True)
        b = mod.tensor([[1.0, 2.0], [3.0, 1.0], [1.0, -1.0]], dtype=mod.float64,
                       requires_grad=True)
        out = mod.nn.functional.cosine_similarity(a, b)
        grads = mod.autograd.grad(out.sum(), (a, b))
        mixed = mod.cosine_similarity(mod.tensor([1, 2]), mod.tensor([2.0, 3.0]), dim=0)
        with pytest.raises(RuntimeError) as info:
            mod.cosine_similarity(mod.tensor([1, 2]), mod.tensor([2, 3]), dim=0)
        seen.append((out.tolist(), [g.tolist() for g in grads], mixed.item(),
                     str(mixed.dtype).split(".")[-1], str(info.value)))
    assert seen[0] == seen[1]


@pytest.mark.filterwarnings("ignore:at::frobenius_norm is deprecated")
def test_frobenius_norm_refusals_as_torchs():
    torch = pytest.importorskip("torch")
    for call in (lambda t, x: t.frobenius_norm(x), lambda t, x: t.frobenius_norm(x, (0, 1, 2)),
                 lambda t, x: t.frobenius_norm(x.long(), 0)):
        errors = []
        for mod in (ember, torch):
            with pytest.raises((TypeError, RuntimeError)) as info:
                call(mod, mod.ones(2, 3, 4))
            errors.append((info.type, str(info.value)))
        assert errors[0] == errors[1]


@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
def test_quantile_refusals_as_torchs(fn):
    """torch's checks in torch's order, each message saying quantile() (nanquantile's too)."""
    torch = pytest.importorskip("torch")
    calls = [lambda t: (t.zeros(0).long(), 0.5, {}),
             lambda t: (t.ones(3).long(), t.ones(2, 2), {}),
             lambda t: (t.ones(3), 1.5, {"interpolation": "x"}),
             lambda t: (t.ones(3), 0.5, {"interpolation": "x"}),
             lambda t: (t.ones(3), t.tensor([0.5, float("nan")]), {}),
             lambda t: (t.ones(3), t.tensor(0.5, dtype=t.float64), {}),
             lambda t: (t.ones(3).half(), 0.5, {})]
    for call in calls:
        errors = []
        for mod in (ember, torch):
            x, q, kw = call(mod)
            with pytest.raises(RuntimeError) as info:
                getattr(mod, fn)(x, q, **kw)
            errors.append(str(info.value))
        assert errors[0] == errors[1]
