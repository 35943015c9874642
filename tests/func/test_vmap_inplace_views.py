"""In-place view ops of examples under vmap (t_, transpose_, swapdims_, unsqueeze_,
squeeze_) against torch 2.13: the physical value takes the example's new geometry in place
(they read a BatchedTensor's missing array); values, shapes, grad_fn names, gradients."""
import pytest
from oracle import same

_CALLS = [("t_", ()), ("transpose_", (0, 1)), ("transpose_", (-1, 0)), ("swapdims_", (1, 0)),
          ("unsqueeze_", (0,)), ("unsqueeze_", (-1,)), ("squeeze_", ()), ("squeeze_", (0,)),
          ("squeeze_", ((0, 1),)), ("transpose_", (0, 2))]
_EXAMPLES = {"2-d": lambda x: x, "3-d": lambda x: x[:, :, None], "1-d": lambda x: x[:, 0]}


def _in_place(method, args):
    def f(v):
        v = v.clone()
        getattr(v, method)(*args)
        return v * 1
    return f


@pytest.mark.parametrize("example", list(_EXAMPLES))
@pytest.mark.parametrize("call", _CALLS, ids=[f"{m}{a}" for m, a in _CALLS])
def test_inplace_view_of_an_example(call, example):
    def body(t):
        x = t.arange(24., dtype=t.float64).reshape(2, 3, 4).requires_grad_()
        out = t.func.vmap(_in_place(*call))(_EXAMPLES[example](x))
        return out, t.autograd.grad((out * out).sum(), x)
    same(body, check_warnings=False)


def test_inplace_view_of_a_vmap_input():
    same(lambda t: t.func.vmap(lambda v: v.t_(), in_dims=1)(
        t.arange(24., dtype=t.float64).reshape(3, 2, 4)), check_warnings=False)
