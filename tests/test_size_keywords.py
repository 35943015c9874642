"""Size-like arguments by keyword, as torch takes them: ``x.view(size=(6, 4))``,
``torch.zeros(size=(2, 3))``, ``x.new_zeros(size=(2,))`` (which once gave a 0-dim tensor
here: the keyword was swallowed), and torch's TypeError for both forms at once."""
from __future__ import annotations

import pytest

from oracle import same

_CALLS = [
    "x.flip(dims=(1,))", "x.permute(dims=(2, 0, 1))", "torch.permute(x, dims=(2, 0, 1))",
    "x.view(size=(6, 4))", "x.reshape(shape=(6, 4))", "torch.reshape(x, shape=(4, 6))",
    "x.repeat(repeats=(1, 2, 1))", "x[:, :1].expand(size=(2, 3, 4))", "x.tile(dims=(2,))",
    "x.new_zeros(size=(2,))", "x.new_ones(size=(2, 1))", "x.new_empty(size=(3,)).shape",
    "x.new_full(size=(2,), fill_value=3.0)", "x.clone().resize_(size=(24,))",
    "x.split(split_size=1, dim=0)", "x.split(split_size=[1, 2], dim=1)",
    "torch.split(x, split_size_or_sections=2, dim=2)", "torch.zeros(size=(2, 3))",
    "torch.ones(size=(2,), dtype=torch.int64)", "torch.empty(size=(2, 2)).shape",
    "torch.rand(size=(3,)).shape", "torch.randn(size=(3,)).shape",
]
_BOTH = ["torch.zeros(2, size=(3,))", "x.new_zeros(2, size=(3,))", "x.flip(0, dims=(1,))"]


@pytest.mark.parametrize("call", _CALLS + _BOTH)
def test_keyword_forms_as_torch(call):
    def body(torch):
        torch.manual_seed(0)
        x = torch.arange(24.0).reshape(2, 3, 4)
        return eval(call)
    same(body)


def test_view_given_both_forms_raises_a_type_error():
    import ember
    with pytest.raises(TypeError):  # (torch's message lists view's two signatures)
        ember.arange(24.0).view(2, size=(12,))
