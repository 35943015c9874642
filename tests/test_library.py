"""``ember.ops`` namespaces and ``ember.library`` custom operators, compared with torch 2.13."""
import pytest
from oracle import error_of, same, torch_or_skip

import ember


def test_ops_namespace_is_created_on_first_access():
    mylib = ember.ops.testlib_namespace
    assert mylib is ember.ops.testlib_namespace
    assert repr(mylib) == "<module 'ember.ops.testlib_namespace' from 'ember.ops'>"
    assert mylib.name == "testlib_namespace"


def test_ops_unknown_operator_error_matches_torch():
    torch = torch_or_skip()
    assert (error_of(lambda: ember.ops.nolib_probe.nothing)
            == error_of(lambda: torch.ops.nolib_probe.nothing))


def test_ops_packet_and_overload_names():
    packet = ember.ops.testlib_names._packet("myop")
    overload = packet._add_overload("default", "(Tensor x) -> Tensor", lambda x: x + 1)
    assert ember.ops.testlib_names.myop is packet
    assert packet.default is overload
    assert (repr(packet), str(packet)) == ("<OpOverloadPacket(op='testlib_names.myop')>",
                                           "testlib_names.myop")
    assert (repr(overload), str(overload), overload.name(), overload.__name__) == (
        "<OpOverload(op='testlib_names.myop', overload='default')>",
        "testlib_names.myop.default", "testlib_names::myop", "myop.default")
    assert packet.overloads() == ["default"]
    assert packet(1) == overload(1) == 2
    assert error_of(lambda: packet.other) == (
        "AttributeError", "The underlying op of 'testlib_names.myop' has no overload name 'other'")


# -- custom_op: schema inference -----------------------------------------------------------------
def _schema_of(torch, fn, mutates_args=()):
    return torch.library.custom_op(f"testlib::{fn.__name__}", fn, mutates_args=mutates_args)._schema


def test_inferred_schemas_match_torch():
    from typing import Optional

    def body(torch):
        Tensor = torch.Tensor

        def kinds(x: Tensor, ys: list[Tensor], oy: list[Optional[Tensor]], w: Optional[Tensor],
                  n: int = 3, a: float = 2.5, b: bool = False, s: str = "hi",
                  lf: Optional[list[float]] = None, d: torch.dtype = torch.float32,
                  dv: torch.device = "cpu", so: Optional[int] = None,
                  *, fs: list[float]) -> tuple[Tensor, Tensor]:
            raise AssertionError("not called")

        def writes(x: Tensor, y: Tensor, *, k: int = 1) -> None:
            raise AssertionError("not called")

        def returns_list(x: Tensor) -> list[Tensor]:
            raise AssertionError("not called")

        def returns_int(x: Tensor) -> int:
            raise AssertionError("not called")

        return (_schema_of(torch, kinds), _schema_of(torch, writes, {"y"}),
                _schema_of(torch, writes, "unknown"), _schema_of(torch, returns_list),
                _schema_of(torch, returns_int),
                torch.library.infer_schema(returns_int, mutates_args=(), op_name="f"))
    assert same(body).value[0].startswith("(Tensor x, Tensor[] ys, Tensor?[] oy")


@pytest.mark.parametrize("case", ["no_hint", "varargs", "no_return", "bad_return", "dict",
                                  "mutated_int", "unknown_name", "bad_mutates", "kwarg_tensor",
                                  "no_namespace", "tuple_default"])
def test_schema_errors_match_torch(case):
    from typing import Optional

    def body(torch):
        Tensor = torch.Tensor

        def no_hint(x): ...
        def varargs(x: Tensor, *rest: Tensor) -> Tensor: ...
        def no_return(x: Tensor): ...
        def bad_return(x: Tensor) -> Optional[Tensor]: ...
        def dict_arg(x: Tensor, n: dict) -> Tensor: ...
        def mutated_int(x: Tensor, n: int) -> None: ...
        def kwarg_tensor(x: Tensor, *, k: Tensor) -> Tensor: ...
        def tuple_default(x: Tensor, n: list[int] = (1, 2)) -> Tensor: ...
        op = torch.library.custom_op
        calls = {
            "no_hint": lambda: op("testlib::e1", no_hint, mutates_args=()),
            "varargs": lambda: op("testlib::e2", varargs, mutates_args=()),
            "no_return": lambda: op("testlib::e3", no_return, mutates_args=()),
            "bad_return": lambda: op("testlib::e4", bad_return, mutates_args=()),
            "dict": lambda: op("testlib::e5", dict_arg, mutates_args=()),
            "mutated_int": lambda: op("testlib::e6", mutated_int, mutates_args={"n"}),
            "unknown_name": lambda: op("testlib::e7", mutated_int, mutates_args={"z"}),
            "bad_mutates": lambda: op("testlib::e8", mutated_int, mutates_args="all"),
            "kwarg_tensor": lambda: op("testlib::e9", kwarg_tensor, mutates_args=()),
            "no_namespace": lambda: op("e10", no_hint, mutates_args="unknown"),
            "tuple_default": lambda: op("testlib::e11", tuple_default, mutates_args=()),
        }
        try:
            calls[case]()
        except Exception as e:  # noqa: BLE001 - the first line is what is compared
            # (the signature and the list of valid types print torch's own class names)
            return type(e).__name__, str(e).split(" Got func")[0].split("The valid types")[0]
        return None
    same(body)


# -- calling, autograd ------------------------------------------------------------------------------
def _numpy_sin(torch, name, autograd=True):
    """torch's documented example: a NumPy kernel with a registered derivative."""
    import numpy as np

    @torch.library.custom_op(f"testlib::{name}", mutates_args=())
    def numpy_sin(x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(np.sin(x.detach().numpy()))

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.cos()

    if autograd:
        numpy_sin.register_autograd(backward, setup_context=setup_context)
    return numpy_sin


def test_custom_op_forward_backward_and_node_name():
    def body(torch):
        op = _numpy_sin(torch, "sin_fb")
        x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
        y = op(x)
        z = torch.ops.testlib.sin_fb(x)
        w = torch.ops.testlib.sin_fb.default(x)
        (y * z * w).sum().backward()
        return (y, z, w, x.grad, repr(op), str(torch.ops.testlib.sin_fb.default),
                type(y.grad_fn).__name__, op._schema)
    same(body)


def test_backward_without_register_autograd_raises_torchs_error():
    def body(torch):
        op = _numpy_sin(torch, "sin_noad", autograd=False)
        x = torch.ones(3, requires_grad=True)
        y = op(x)
        name = y.grad_fn.name()
        try:
            y.sum().backward()
        except RuntimeError as e:
            return name, str(e)
        return name, None
    same(body)


def test_no_grad_and_inputs_without_grad_record_nothing():
    def body(torch):
        op = _numpy_sin(torch, "sin_ng")
        x = torch.ones(2, requires_grad=True)
        with torch.no_grad():
            a = op(x)
        b = op(torch.ones(2))
        return a, b
    same(body)


def test_multiple_outputs_with_a_number_and_keyword_only_setup_context():
    def body(torch):
        Tensor = torch.Tensor
        seen = []

        @torch.library.custom_op("testlib::two_out", mutates_args=())
        def two(x: Tensor, n: int, *, scale: float = 1.0) -> tuple[Tensor, Tensor, int]:
            return x * n * scale, x.sin(), 7

        def setup_context(ctx, inputs, keyword_only_inputs, output):
            seen.append((len(inputs), inputs[1], dict(keyword_only_inputs), len(output)))
            ctx.n, ctx.scale = inputs[1], keyword_only_inputs["scale"]
            ctx.save_for_backward(inputs[0])

        def backward(ctx, g1, g2, g3):
            seen.append((g3, ctx.needs_input_grad))
            x, = ctx.saved_tensors
            return g1 * ctx.n * ctx.scale + g2 * x.cos(), None

        two.register_autograd(backward, setup_context=setup_context)
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        a, b, k = two(x, 3, scale=2)
        a.sum().backward()  # b's gradient: zeros, as in a custom Function
        return a, b, k, x.grad, seen
    same(body)


def test_list_inputs_and_outputs_get_gradients_per_tensor():
    def body(torch):
        Tensor = torch.Tensor
        seen = []

        @torch.library.custom_op("testlib::scale_all", mutates_args=())
        def scale_all(xs: list[Tensor], w: float) -> list[Tensor]:
            return [t * w for t in xs]

        def setup_context(ctx, inputs, output):
            ctx.w = inputs[1]
            seen.append((type(inputs[0]).__name__, type(output).__name__))

        def backward(ctx, grads):
            seen.append((type(grads).__name__, ctx.needs_input_grad))
            return [g * ctx.w for g in grads], None

        scale_all.register_autograd(backward, setup_context=setup_context)
        a = torch.ones(2, requires_grad=True)
        b = torch.ones(3)
        c = torch.ones(1, requires_grad=True)
        r = scale_all([a, b, c], 2.0)
        (r[0].sum() + 3 * r[2].sum()).backward()
        return r, a.grad, c.grad, seen
    same(body)


def test_list_gradient_structure_error():
    def body(torch):
        Tensor = torch.Tensor

        @torch.library.custom_op("testlib::lst_bad", mutates_args=())
        def lst(xs: list[Tensor]) -> Tensor:
            return xs[0] + xs[1]

        lst.register_autograd(lambda ctx, g: g, setup_context=lambda ctx, inputs, output: None)
        a = torch.ones(2, requires_grad=True)
        try:
            lst([a, a]).sum().backward()
        except RuntimeError as e:
            return str(e).split(" Got:")[0]
    same(body)


def test_wrong_number_of_gradients():
    def body(torch):
        Tensor = torch.Tensor

        @torch.library.custom_op("testlib::nwrong", mutates_args=())
        def f(x: Tensor, y: Tensor) -> Tensor:
            return x * y

        f.register_autograd(lambda ctx, g: g, setup_context=lambda ctx, inputs, output: None)
        x = torch.ones(2, requires_grad=True)
        f(x, torch.ones(2)).sum().backward()
        return x.grad
    same(body)
