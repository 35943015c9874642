"""Every keyword name torch's functions and Tensor methods take, ember takes: a program that
calls ``torch.clamp(input=x, min=0)`` or ``x.swapaxes(axis0=0, axis1=1)`` runs unchanged (see
signature_audit.py for how both sides' names are read), and no function accepts a keyword it
then ignores."""
from __future__ import annotations

import pytest
import signature_audit as audit
from oracle import same, torch_or_skip

# torch's keyword names ember does not take yet: {public name: the names} (none now; a name
# added here needs the reason ember cannot take it).
_REMAINING = {}

# Functions that read their ``**kwargs`` themselves (the audit cannot see their names): a call
# with a keyword they do not know must raise a TypeError.
_HAND_PARSED = {
    "Tensor.new": "x.new(2, zz=1)", "Tensor.random_": "x.random_(zz=1)",
    "Tensor.to": "x.to(zz=1)", "Tensor.type": "x.type(torch.float64, zz=1)",
    "Tensor.uniform_": "x.uniform_(zz=1)", "compile": "torch.compile(zz=1)",
    "empty_like": "torch.empty_like(x, zz=1)", "ones_like": "torch.ones_like(x, zz=1)",
    "zeros_like": "torch.zeros_like(x, zz=1)", "save": "torch.save(x, path, zz=1)",
    "load": "torch.load(path, zz=1)", "rand_like": "torch.rand_like(x, low=1)",
    "randn_like": "torch.randn_like(x, zz=1)", "randint_like": "torch.randint_like(x, 3, zz=1)",
    "Tensor.sum_to_size": "x.sum_to_size(2, zz=1)", "Tensor.set_": "x.set_(zz=1)",
    "Tensor.msort": "x.msort(zz=1)",
    **{f: f"torch.{f}(x, (x, x), [x], True, 1, 0.0, False, False, False, zz=1)"
       for f in ("lstm", "gru", "rnn_tanh", "rnn_relu")},
}


def test_torch_keyword_names_are_taken():
    torch = torch_or_skip()
    found = audit.mismatches(torch)
    for name in _HAND_PARSED:
        if found.get(name) == [audit.UNKNOWN]:
            del found[name]
    changed = {k: (v, _REMAINING.get(k)) for k, v in found.items() if _REMAINING.get(k) != v}
    fixed = sorted(set(_REMAINING) - set(found))
    assert not changed, f"keyword names ember refuses (found, listed): {changed}"
    assert not fixed, f"taken now, drop from _REMAINING: {fixed}"


@pytest.mark.parametrize("name", sorted(_HAND_PARSED))
def test_unknown_keyword_is_refused(name, tmp_path):
    import ember
    x = ember.zeros(2)
    path = str(tmp_path / "x.pt")
    ember.save(x, path)
    with pytest.raises(TypeError, match="unexpected keyword|invalid combination|takes no keyword"):
        eval(_HAND_PARSED[name], {"torch": ember, "x": x, "path": path})


# Calls by torch's keyword names that ember once refused (or took under other names).
_CALLS = [
    "x.swapaxes(axis0=0, axis1=1)", "torch.swapaxes(x, axis0=1, axis1=0)",
    "x.clone().swapaxes_(axis0=0, axis1=1)", "torch.swapdims(x, dim0=0, dim1=1)",
    "torch.dot(input=v, tensor=v)", "v.dot(tensor=v)", "torch.dot(v, v).grad_fn._saved_tensor",
    "torch.dropout(x, p=0.0, train=True)", "torch.alpha_dropout(x, p=0.0, train=False)",
    "torch.feature_alpha_dropout(x, 0.0, train=False)",
    "torch.tensor_split(v, sections=2)", "torch.tensor_split(v, indices=[1])",
    "v.tensor_split(tensor_indices_or_sections=torch.tensor(2))", "x.hsplit(sections=3)",
    "torch.vsplit(x, indices=[1])",
    "torch.flatten(input=x)", "torch.reshape(input=x, shape=(3, 2))",
    "torch.permute(input=x, dims=(1, 0))", "torch.squeeze(input=x[None])",
    "torch.max(v, other=v.flip(0))", "v.min(other=v.flip(0))", "x.max(dim=1, keepdim=True)",
    "torch.linalg.cholesky(input=m)", "torch.linalg.vector_norm(input=x)",
    "torch.linalg.matrix_norm(input=m)", "torch.linalg.pinv(m, rcond=0.5)",
    "torch.linalg.pinv(m @ m.T, 0.5, True)", "torch.linalg.matrix_rank(m, tol=1.5)",
    "torch.linalg.matrix_rank(m, 1.5)", "torch.linalg.tensorsolve(input=m, other=v[:2])",
    "torch.linalg.solve_triangular(input=m, B=m, upper=True)",
    "torch.linalg.lstsq(input=m, b=m).solution.round(decimals=4)", "torch.linalg.eigvalsh(input=m)",
    "torch.linalg.norm(torch.ones(2, 2, 2), ord=2)", "torch.ormqr(m, v[:2].detach(), m.double())",
    "torch.special.chebyshev_polynomial_t(x=v, n=2)", "torch.special.airy_ai(x=v)",
    "torch.special.hermite_polynomial_h(v, n=v)", "torch.orgqr(input=m, input2=v[:1])",
    "torch.zeros(2, pin_memory=True)", "torch.ones(2, pin_memory=False)",
    "torch.arange(3, pin_memory=True)", "torch.eye(2, pin_memory=False)",
    "torch.tril_indices(3, 3, requires_grad=True)", "torch.logspace(0, 1, 3, layout=torch.strided)",
    "torch.full_like(x, 2.0, pin_memory=True)", "torch.fft.fftfreq(4, pin_memory=False)",
    "x.uniform_(zz=1)", "x.type(torch.float64, zz=1)",
    "torch.randint_like(x, 5, high=7)", "torch.randint_like(x, low=2, high=7)",
    "torch.randint_like(x, high=3)", "x.sum_to_size(size=(1, 3))",
    "x[:1].expand(2, 3, implicit=True)",
    "torch.pow(input=v, exponent=2)", "torch.triangular_solve(input=m, A=m)",
    ("torch.lu_solve(input=m, LU_data=torch.linalg.lu_factor(m)[0], "
     "LU_pivots=torch.linalg.lu_factor(m)[1])"),
    "torch.rrelu(-v.detach(), training=True, generator=torch.Generator().manual_seed(3))",
    "torch.nn.functional.rrelu_(-x, 0.1, 0.3, True, torch.Generator().manual_seed(3))",
    "torch.split_with_sizes_copy(x, split_sizes=[1, 1])", "torch.linalg.matrix_exp(input=m)",
    "x.map_(other=x, callable=lambda a, b: a + b)",
    "torch.argmax(x, 1, out=torch.empty(0, dtype=torch.int64))",
    "torch.argmin(x, out=torch.empty(2, dtype=torch.int64))",
    "torch.argmax(x, 1, out=torch.empty(0, dtype=torch.int32))",
    "torch.isin(v, 2.0)", "torch.isin(2.0, v)", "torch.isin(elements=v, test_element=2.0)",
    "torch.isin(element=2.0, test_elements=v)", "torch.isin(v, test_element=2.0, invert=True)",
    "torch.isin(v, test_elements=v.detach())", "torch.isin(2, 3)", "torch.isin(True, v)",
    "torch.isin(1j, v)", "torch.isin(v, [1.0])", "torch.isin(elements=v, test_elements=2.0)",
    "torch.result_type(tensor=v, other=1.0)", "torch.result_type(scalar=1, tensor=x)",
    "torch.result_type(scalar1=1, scalar2=2.0)", "torch.result_type(x, other=v)",
    "torch.result_type(1, tensor=x)", "torch.result_type(v, None)", "torch.result_type(v)",
    "x.clone().copy_(other=v)", "x.lstsq(other=x)", "m.solve(other=m)",
    "torch.mm(m, m, out_dtype=1)", "torch.addmm(m, m, m, 1)", "torch.bmm(m[None], m[None], 2)",
    "torch.mm(m, m, torch.float32, out=torch.empty(0, requires_grad=True))",
    "torch.from_dlpack(x, copy=True)", "torch.from_dlpack(x, device='cpu', copy=False)",
    "torch.from_dlpack(x, device=torch.device('cpu'))", "torch.from_dlpack(x, device=0)",
    "torch.from_dlpack(x, device='meta')", "torch.from_dlpack(x.__dlpack__())",
    "torch.from_dlpack(x.__dlpack__(), copy=False)", "torch.from_dlpack(v)",
    "torch.from_dlpack(torch.to_dlpack(v))",
]


@pytest.mark.parametrize("call", _CALLS)
def test_keyword_call_as_torch(call):
    def body(torch):
        torch.manual_seed(0)
        x = torch.arange(6.0).reshape(2, 3)
        v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        m = torch.tensor([[2.0, 1.0], [0.0, 3.0]])
        return eval(call)
    # (torch's warnings from its C++ code end with their source location)
    same(body, check_warnings="_solve(" not in call and "out=" not in call)


@pytest.mark.parametrize("call", ["torch.mm(m, m, out_dtype=torch.float32)",
                                  "torch.bmm(m[None], m[None], torch.float16)",
                                  "torch.addmm(m, m, m, torch.float32, beta=2)",
                                  "torch.baddbmm(m[None], m[None], m[None], out_dtype=torch.float32)",
                                  "torch.mm(m.requires_grad_(), m, torch.float32, out=torch.empty(0))"])
def test_out_dtype_has_no_cpu_kernel(call):
    """torch's CPU build has no kernel for the out_dtype overloads: its NotImplementedError (the
    first sentences; torch then lists its backends)."""
    torch = torch_or_skip()
    import ember
    got = []
    for lib in (torch, ember):
        with pytest.raises(NotImplementedError) as e:
            eval(call, {"torch": lib, "m": lib.ones(2, 2)})
        got.append(str(e.value))
    assert got[0].startswith(got[1]) and got[1].endswith("(if using custom build).")


@pytest.mark.parametrize("copy", [True, False, None])
def test_from_dlpack_copy_shares_as_torch(copy):
    """``copy=True`` gives a tensor of its own, otherwise it shares the producer's memory."""
    import numpy as np
    torch = torch_or_skip()
    import ember
    seen = []
    for lib in (torch, ember):
        a = np.arange(3.0)
        t = lib.from_dlpack(a, copy=copy)
        a[0] = 9.0
        seen.append(t.tolist())
    assert seen[0] == seen[1]
