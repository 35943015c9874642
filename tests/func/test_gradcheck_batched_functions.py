"""gradcheck(check_batched_grad=True) of custom autograd.Functions against torch 2.13: with
ctx in forward, with setup_context and no vmap rule, with generate_vmap_rule=True, with a
vmap staticmethod (torch's check never calls it: the batched backward is what is checked),
and one whose backward leaves the tensors (``.numpy()``): torch runs a Function's backward
once under vmap, so that one fails the check (it passed when run once per row)."""
import pytest
from oracle import torch_or_skip

import ember


def _functions(lib):
    F = lib.autograd.Function

    def square_backward(ctx, g):
        x, = ctx.saved_tensors
        return 2 * g * x

    def save_input(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def with_ctx(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    def numpy_backward(ctx, g):
        x, = ctx.saved_tensors
        return lib.tensor(2 * g.numpy() * x.numpy())

    def square(x):
        return x * x

    def vmap_rule(info, in_dims, x):
        return x * x, in_dims[0]

    def make(name, body, **extra):
        return type(name, (F,), {k: staticmethod(v) if callable(v) else v
                                 for k, v in {**body, **extra}.items()})
    setup = {"forward": square, "setup_context": save_input, "backward": square_backward}
    return {
        "ctx_in_forward": make("CtxInForward", {"forward": with_ctx,
                                                "backward": square_backward}),
        "setup_context": make("SetupContext", setup),
        "generate_vmap_rule": make("Generated", setup, generate_vmap_rule=True),
        "vmap_staticmethod": make("WithVmap", setup, vmap=vmap_rule),
        "numpy_in_backward": make("NumpyBackward", {"forward": with_ctx,
                                                    "backward": numpy_backward}),
    }


def _outcome(lib, name, **options):
    fn = _functions(lib)[name]
    x = lib.tensor([0.5, -1.2, 2.0], dtype=lib.float64, requires_grad=True)
    try:
        return lib.autograd.gradcheck(fn.apply, (x,), check_batched_grad=True, **options)
    except Exception as e:  # noqa: BLE001 - the type and the check's own words are compared
        return type(e).__name__, str(e).split("got:")[0]


@pytest.mark.parametrize("options", [{}, {"fast_mode": True}, {"raise_exception": False}],
                         ids=["default", "fast_mode", "no_raise"])
@pytest.mark.parametrize("name", list(_functions(ember)))
def test_batched_gradcheck_of_custom_functions(name, options):
    torch = torch_or_skip()
    assert _outcome(ember, name, **options) == _outcome(torch, name, **options)
