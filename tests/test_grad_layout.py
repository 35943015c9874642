"""``autograd.enforce_grad_layout_policy``: with ``False`` a leaf's first gradient is kept in
the layout it arrives in where the engine may keep it, instead of following torch's layout
contract (docs/gradients.md); copies still follow the contract."""
from __future__ import annotations

import inspect
import subprocess
import sys
import warnings

import pytest
from oracle import same, torch_or_skip

_LEAVES = {
    "permuted": lambda t: t.zeros(2, 3, 4).permute(2, 0, 1),
    "transposed": lambda t: t.zeros(3, 4).t(),
    "sliced": lambda t: t.zeros(4, 4)[:, ::2],
    "contiguous": lambda t: t.zeros(3, 4),
}
_LOSSES = {
    "mul": lambda t, p: (p * 2).sum().backward(),
    "matmul": lambda t, p: (p.reshape(-1, p.shape[-1]) @ t.ones(p.shape[-1], 2)).sum().backward(),
    "twice": lambda t, p: ((p * 2).sum().backward(), (p * 3).sum().backward()),
    "create_graph": lambda t, p: (p * p).sum().backward(create_graph=True),
}


# Cases whose layout still differs from torch's, and why (none at present).
_DIFFERS: dict = {}


@pytest.mark.parametrize("leaf,loss,enforce", [
    pytest.param(*case, marks=pytest.mark.xfail(reason=_DIFFERS[case], strict=True))
    if case in _DIFFERS else case
    for case in [(leaf, loss, enforce) for leaf in sorted(_LEAVES) for loss in sorted(_LOSSES)
                 for enforce in (True, False)]])
def test_grad_layout_as_torch(leaf, loss, enforce):
    def body(t):
        p = _LEAVES[leaf](t).requires_grad_()
        with t.autograd.enforce_grad_layout_policy(enforce):
            _LOSSES[loss](t, p)
        return p.grad.detach(), p.grad.stride(), p.grad.is_contiguous()
    same(body, check_warnings=False)  # (create_graph's reference-cycle warning)


def test_policy_is_a_setting_and_a_context():
    import ember
    from ember.autograd.engine import _layout_policy
    with ember.autograd.enforce_grad_layout_policy(False):
        assert _layout_policy.enforce is False
    assert _layout_policy.enforce is True
    ember.autograd.enforce_grad_layout_policy(False)
    assert _layout_policy.enforce is False
    ember.autograd.enforce_grad_layout_policy(True)
    assert _layout_policy.enforce is True


_SUMMED = {
    "transposed .grad": lambda t: (t.ones(4, 3), t.ones(3, 4).t()),
    "transposed leaf": lambda t: (t.ones(3, 4).t(), t.ones(4, 3)),
    "size-1 dimension": lambda t: (t.ones(1, 3), t.ones(3, 1).t()),
    "0-d": lambda t: (t.tensor(2.0), t.tensor(1.0)),
    "contiguous": lambda t: (t.ones(2, 3), t.ones(2, 3)),
}


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", sorted(_SUMMED))
def test_a_sum_into_grad_that_breaks_the_layout_contract_warns(case, create_graph):
    # torch checks the .grad a gradient was summed into against the layout contract and
    # warns (TORCH_WARN_ONCE: here every time, under set_warn_always) where it does not obey
    # it, with the sizes and strides in elements and the line of its check
    def body(t):
        t.set_warn_always(True)
        try:
            data, grad = _SUMMED[case](t)
            p = data.detach().requires_grad_()
            p.grad = grad
            with warnings.catch_warnings():
                # (create_graph's reference-cycle warning: not this test's)
                warnings.filterwarnings("ignore", message="Using backward")
                (p * p).sum().backward(create_graph=create_graph)
            return p.grad.detach(), p.grad.stride()
        finally:
            t.set_warn_always(False)
    same(body)


@pytest.mark.parametrize("grad", ["transposed", "sparse", "none"])
def test_a_sparse_gradient_summed_into_grad_checks_the_dense_result(grad):
    # a sparse embedding gradient added into a dense .grad (in place) or into a sparse one
    # (a sparse sum: not checked), as torch's CHECK_RESULT
    def body(t):
        t.set_warn_always(True)
        try:
            e = t.ones(5, 3, requires_grad=True)
            if grad == "transposed":
                e.grad = t.ones(3, 5).t()
            for _ in range(1 if grad == "transposed" else 2):
                t.nn.functional.embedding(t.tensor([1, 2]), e, sparse=True).sum().backward()
            return str(e.grad.layout), e.grad.to_dense()
        finally:
            t.set_warn_always(False)
    same(body)


def test_the_layout_warning_once_per_process_and_check(monkeypatch):
    # once at each of torch's two checks (without and with create_graph), as a subprocess of
    # torch shows; given again while set_warn_always is on, which does not use up the once
    torch_or_skip()
    import ember
    from ember.autograd import engine

    def script(t):
        seen = []
        for warn_always in (True, False, False):
            t.set_warn_always(warn_always)
            for create_graph in (False, False, True, True):
                p = t.ones(4, 3).requires_grad_()
                p.grad = t.ones(3, 4).t()
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    (p * 2).sum().backward(create_graph=create_graph)
                seen.append([str(c.message)[-12:] for c in w if "layout" in str(c.message)])
        t.set_warn_always(False)
        return seen
    source = ("import warnings, torch, inspect\n" + inspect.getsource(script).replace(
        "    def script", "def script").replace("\n    ", "\n") + "\nprint(script(torch))\n")
    expected = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                              check=True).stdout.strip()
    monkeypatch.setattr(engine, "_warned_layouts", set())
    assert repr(script(ember)) == expected
