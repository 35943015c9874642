"""``autograd.enforce_grad_layout_policy``: with ``False`` a leaf's first gradient is kept in
the layout it arrives in where the engine may keep it, instead of following torch's layout
contract (docs/gradients.md); copies still follow the contract."""
from __future__ import annotations

import pytest
from oracle import same

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
