"""prod's backward against torch 2.13's prod_backward: its paths with no zero (result /
input), one zero, and two or more zeros without grad mode (a fresh zero tensor, so +0.0)."""
import numpy as np
import pytest
from oracle import same


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("values", [[0.0, -0.0, 3.0, -2.0], [0.0, -1.5, 3.0, -2.0],
                                    [0.5, -1.5, 3.0, -2.0]])
def test_prod_all_backward_paths(values, create_graph):
    def body(torch):
        x = torch.tensor(np.array(values, dtype=np.float32).reshape(2, 2), requires_grad=True)
        g, = torch.autograd.grad(x.prod(), x, create_graph=create_graph)
        return g, torch.signbit(g)
    same(body, rtol=0, atol=0)
