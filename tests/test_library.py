"""``ember.ops`` namespaces and ``ember.library`` custom operators, compared with torch 2.13."""
import warnings

import numpy as np
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


def test_operators_survive_deepcopy_as_themselves():
    import copy
    torch = torch_or_skip()
    for lib in (torch, ember):
        overload, packet = lib.ops.aten.mm.default, lib.ops.aten.mm
        assert copy.deepcopy(overload) is overload and copy.deepcopy(packet) is packet
        assert copy.deepcopy({"policy": [overload]})["policy"][0] is overload


def test_packet_of_overloads_without_schemas_calls_its_default():
    packet = ember.ops.testlib_noschema._packet("op")
    packet._add_overload("default", None, lambda x: x + 1)
    packet._add_overload("other", None, lambda x: x + 2)
    assert packet(1) == 2 and packet.other(1) == 3
    p = ember.ops.aten.bernoulli  # (ember.ops.aten's packets have no schemas)
    assert len(p.overloads()) > 1 and isinstance(p(ember.full((3,), 1.0), 1.0), ember.Tensor)


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
                  sc: torch.types.Number = 2,
                  *, fs: list[float], scs: list[torch.types.Number]) -> tuple[Tensor, Tensor]:
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
                                  "no_namespace", "tuple_default", "list_default_none"])
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
        def list_default_none(x: Tensor, k: int = 1, n: list[int] = None) -> Tensor: ...
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
            "list_default_none": lambda: op("testlib::e12", list_default_none, mutates_args=()),
        }
        try:
            calls[case]()
        except Exception as e:  # noqa: BLE001 - the first line is what is compared
            # (the signature and the list of valid types print torch's own class names)
            return type(e).__name__, str(e).split(" Got func")[0].split("The valid types")[0]
        return None
    same(body)


# -- calling, autograd ------------------------------------------------------------------------
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


# -- mutation, aliasing, argument binding ---------------------------------------------------------
def test_mutated_arguments_get_their_version_bumped():
    def body(torch):
        Tensor = torch.Tensor
        seen = []

        @torch.library.custom_op("testlib::add_one_", mutates_args={"y"})
        def add_one_(x: Tensor, y: Tensor, *, k: int = 1) -> None:
            seen.append(y._version)  # (bumped before the kernel runs, as torch does)
            y.add_(k)

        @torch.library.custom_op("testlib::touch_all", mutates_args="unknown")
        def touch_all(x: Tensor, ys: list[Tensor], n: int) -> None:
            pass

        a, b, c = torch.zeros(2), torch.zeros(2), torch.zeros(1)
        r = add_one_(a, b, k=2)
        versions = [a._version, b._version]
        touch_all(a, [b, c], 3)
        return r, b, seen, versions, [a._version, b._version, c._version]
    same(body)


def test_register_autograd_on_a_mutating_op_is_refused():
    def body(torch):
        @torch.library.custom_op("testlib::inc_", mutates_args={"x"})
        def inc_(x: torch.Tensor) -> None:
            x.add_(1)

        inc_.register_autograd(lambda ctx, g: g)
    same(body)


@pytest.mark.parametrize("kind", ["same", "view", "twice", "clone"])
def test_returning_an_alias_of_an_input_or_output_is_an_error(kind):
    def body(torch):
        Tensor = torch.Tensor

        @torch.library.custom_op(f"testlib::alias_{kind}", mutates_args=())
        def f(x: Tensor) -> tuple[Tensor, Tensor]:
            y = x.clone()
            return {"same": (x, y), "view": (x.view(2), y), "twice": (y, y),
                    "clone": (y, x.clone())}[kind]

        try:
            return f(torch.ones(2))
        except RuntimeError as e:
            # (the message names the module of torch's and ember's own wrapper)
            return str(e).split(" (with implementation in")[0], str(e).split(">): ")[1]
    same(body)


@pytest.mark.parametrize("call", ["missing", "too_many", "too_many_positional", "bad_type", "both",
                                  "unknown_kw", "float_for_int", "int_for_float", "kw_missing",
                                  "numpy_numbers", "bool_for_int"])
def test_argument_binding_errors_match_torch(call):
    def body(torch):
        Tensor = torch.Tensor

        seen = []

        @torch.library.custom_op(f"testlib::bind_{call}", mutates_args=())
        def f(x: Tensor, n: float, k: int = 2, *, m: bool) -> Tensor:
            seen.append((type(n).__name__, type(k).__name__, type(m).__name__))
            return x * n * k if m else x.clone()

        x = torch.ones(1)
        calls = {"missing": lambda: f(), "too_many": lambda: f(x, 1.0, 2, 3, m=True),
                 "too_many_positional": lambda: f(x, 1.0, 2, True),
                 "bad_type": lambda: f(3, 1.0, m=True), "both": lambda: f(x, 1.0, n=2, m=True),
                 "unknown_kw": lambda: f(x, 1.0, m=True, z=1),
                 "float_for_int": lambda: f(x, 1.0, 2.5, m=True),
                 "int_for_float": lambda: f(x, 3, k=4, m=True), "kw_missing": lambda: f(x, 3),
                 "numpy_numbers": lambda: f(x, np.float32(2), np.int64(3), m=True),
                 "bool_for_int": lambda: f(x, 1.0, True, m=True)}
        return calls[call](), seen
    same(body)


@pytest.mark.parametrize("ret", ["tuple_for_tensor", "tensor_for_tuple", "number_for_none",
                                 "number_for_tensor"])
def test_kernel_results_that_do_not_fit_the_schema(ret):
    def body(torch):
        Tensor = torch.Tensor
        ops = {
            "tuple_for_tensor": (Tensor, lambda x: (x.clone(),)),
            "tensor_for_tuple": (tuple[Tensor, Tensor], lambda x: x.clone()),
            "number_for_none": (None, lambda x: 3), "number_for_tensor": (Tensor, lambda x: 3)}
        hint, kernel = ops[ret]

        def f(x: Tensor):
            return kernel(x)
        f.__annotations__["return"] = hint
        op = torch.library.custom_op(f"testlib::ret_{ret}", f, mutates_args=())
        return op(torch.ones(1))
    same(body)


# -- kernels per device, fake kernels on the meta device ------------------------------------------
def test_fake_kernel_runs_on_meta_tensors():
    def body(torch):
        op = _numpy_sin(torch, "sin_meta")
        x = torch.ones(2, 3, device="meta")
        try:
            op(x)
        except RuntimeError as e:
            missing = str(e)
        op.register_fake(lambda x: torch.empty_like(x))
        y = op(x)
        return missing, tuple(y.shape), str(y.device), y.dtype
    same(body)


def test_mutating_op_without_returns_needs_no_fake_kernel():
    def body(torch):
        @torch.library.custom_op("testlib::fill_meta_", mutates_args={"x"})
        def fill_(x: torch.Tensor) -> None:
            x.fill_(1)
        x = torch.ones(2, device="meta")
        return fill_(x), x._version
    same(body)


def test_register_kernel_per_device_and_set_kernel_enabled():
    def body(torch):
        Tensor = torch.Tensor

        @torch.library.custom_op("testlib::by_device", mutates_args=())
        def f(x: Tensor, y: Tensor) -> Tensor:
            return x + y

        ones = torch.ones(1)
        default = f(ones, ones)

        @f.register_kernel("cpu")
        def _(x, y):
            return x - y

        cpu = f(ones, ones)
        with f.set_kernel_enabled("cpu", False):
            disabled = f(ones, ones)
        return default, cpu, disabled, f(ones, ones)
    same(body)


def test_op_without_a_kernel_for_the_device_refuses():
    def body(torch):
        @torch.library.custom_op("testlib::cuda_only", mutates_args=(), device_types="cuda")
        def f(x: torch.Tensor) -> torch.Tensor:
            return x.clone()
        try:
            f(torch.ones(1))
        except NotImplementedError as e:
            return str(e).split(" If you are a Facebook employee")[0]
    same(body)


# -- vmap, func transforms, compile ---------------------------------------------------------------
def test_vmap_without_a_rule_runs_each_example():
    def body(torch):
        op = _numpy_sin(torch, "sin_vmap_loop", autograd=False)
        x = torch.arange(6.0).reshape(2, 3)
        return torch.vmap(op)(x), torch.vmap(op, in_dims=1)(x)
    same(body, check_warnings=False)  # (torch's performance warning is a C++ log line)


def test_register_vmap_rule_gets_batch_size_and_in_dims():
    def body(torch):
        Tensor = torch.Tensor
        seen = []

        @torch.library.custom_op("testlib::mul_vmap", mutates_args=())
        def mul(x: Tensor, y: Tensor, n: int) -> tuple[Tensor, Tensor]:
            return x * y * n, x + n

        @mul.register_vmap
        def _(info, in_dims, x, y, n):
            seen.append((info.batch_size, info.randomness, in_dims[1:], n))
            x = x.movedim(in_dims[0], 0)
            return mul(x, y, n), (0, 0)

        x = torch.arange(6.0).reshape(2, 3)
        out = torch.vmap(mul, in_dims=(0, None, None))(x, torch.full((3,), 2.0), 5)
        return out, seen
    same(body)


@pytest.mark.parametrize("dims", [(1, None), (-1, 0), (2, 1)])
def test_vmap_rules_get_the_in_dims_vmap_was_given(dims):
    # torch hands a custom op's rule (and an autograd.Function's vmap staticmethod) each vmap
    # input as it was given, with its batch dimension (ember moved it first: in_dim 0); a
    # value computed under vmap by an op that moves the batch first has in_dim 0
    def body(torch):
        Tensor = torch.Tensor
        seen = []

        def rule(info, in_dims, x, y):
            seen.append((in_dims, tuple(x.shape), tuple(y.shape)))
            x = x.movedim(in_dims[0], 0)
            y = y.unsqueeze(0) if in_dims[1] is None else y.movedim(in_dims[1], 0)
            return x * y.reshape((y.shape[0],) + (1,) * (x.dim() - y.dim()) + y.shape[1:]), 0

        @torch.library.custom_op(f"testlib::in_dims_{dims[1]}_{dims[0] + 1}", mutates_args=())
        def mul(x: Tensor, y: Tensor) -> Tensor:
            return x * y
        mul.register_vmap(rule)

        class Mul(torch.autograd.Function):
            forward = staticmethod(lambda x, y: x * y)
            setup_context = staticmethod(lambda ctx, inputs, output: None)
            vmap = staticmethod(rule)

        x = torch.arange(60.0).reshape(3, 4, 5)
        y = torch.arange(20.0).reshape(5, 4) if dims[1] == 0 else (
            torch.arange(15.0).reshape(3, 5) if dims[1] == 1 else torch.arange(5.0))
        outs = []
        for f in (mul, Mul.apply):
            if dims == (2, 1):  # (nested: the inner level's input is an outer level's value)
                outs.append(torch.vmap(torch.vmap(f, in_dims=(1, None)), in_dims=(2, 1))(x, y))
            else:
                outs += [torch.vmap(f, in_dims=dims)(x, y),
                         torch.vmap(lambda a, b: f(a * 2, b), in_dims=dims)(x, y)]
        return outs, seen
    assert same(body).error is None


def test_vmap_rule_with_out_dims_none_and_list_arguments():
    def body(torch):
        Tensor = torch.Tensor

        @torch.library.custom_op("testlib::lsum_vmap", mutates_args=())
        def lsum(xs: list[Tensor], y: Tensor) -> Tensor:
            return sum(xs) + y

        @lsum.register_vmap
        def _(info, in_dims, xs, y):
            assert in_dims == ([0, None], None), in_dims
            return y * 10, None

        return torch.vmap(lsum, in_dims=([0, None], None))(
            [torch.ones(4, 3), torch.ones(3)], torch.arange(3.0))
    same(body)


def test_grad_transform_over_a_custom_op_refuses_as_torch():
    def body(torch):
        op = _numpy_sin(torch, "sin_functorch")
        return torch.func.grad(lambda x: op(x).sum())(torch.ones(3))
    same(body)


def test_compiled_function_calling_a_custom_op_matches_eager():
    def body(torch):
        op = _numpy_sin(torch, "sin_compiled")
        op.register_fake(lambda x: torch.empty_like(x))  # (torch.compile needs it; ember not)

        def f(x):
            return op(x * 2).sum() + x.sum()

        compiled = torch.compile(f, backend="eager")
        x = torch.tensor([0.1, 0.2, 0.3], requires_grad=True)
        outs = [compiled(x) for _ in range(3)]
        outs[-1].backward()
        return outs, x.grad
    # (ember runs a custom op on tensors that require grad eagerly, and says so)
    same(body, grad_fn=False, check_warnings=False)


def test_compiled_inference_records_the_custom_op_as_one_call():
    op = _numpy_sin(ember, "sin_replayed")
    compiled = ember.compile(lambda x: op(x + 1) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no graph break
        results = [compiled(ember.tensor([float(k), 1.0])) for k in range(4)]
    for k, r in enumerate(results):
        # (new values at every call: the NumPy kernel ran again at every replay)
        np.testing.assert_allclose(r.numpy(), 2 * np.sin(np.array([k + 1.0, 2.0])), rtol=1e-6)
    assert compiled.eager is None and len(compiled.entries) == 1  # one recording, replayed


def test_compiled_function_calling_a_mutating_custom_op_matches_eager():
    def body(torch):
        @torch.library.custom_op("testlib::twice_", mutates_args={"x"})
        def twice_(x: torch.Tensor) -> None:
            x.mul_(2)

        def f(x):
            y = x + 1
            twice_(y)
            return y

        compiled = torch.compile(f, backend="eager")
        return [compiled(torch.tensor([float(k)])) for k in range(3)]
    same(body, check_warnings=False)



def test_fullgraph_compile_of_a_custom_op_writing_its_tensor_arguments():
    # (the custom operators tutorial's numpy_sin(x, out) under compile(fullgraph=True))
    def body(torch):
        @torch.library.custom_op("testlib::sin_into", mutates_args={"output"})
        def sin_into(input: torch.Tensor, output: torch.Tensor) -> None:
            np.sin(input.numpy(), out=output.numpy())

        @torch.compile(fullgraph=True, backend="eager")
        def fresh(x):
            out = torch.empty(3)
            sin_into(x, out)
            return out

        @torch.compile(fullgraph=True, backend="eager")
        def given(x, out):
            sin_into(x + 1, out)
            return out * 2

        results = []
        for k in range(3):
            x = torch.tensor([0.5, 1.0, 2.0]) * (k + 1)
            out = torch.zeros(3)
            results.append((fresh(x), given(x, out), out))
        return results
    same(body)


def test_a_custom_op_writing_a_tensor_argument_is_recorded_and_replayed():
    op = ember.library.custom_op("testlib::add_one_into", mutates_args={"out"})(_add_one_into)
    compiled = ember.compile(lambda x, out: op(x * 2, out))
    outs = [ember.zeros(2) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no graph break
        for k, out in enumerate(outs):
            compiled(ember.tensor([float(k), 1.0]), out)
    for k, out in enumerate(outs):  # (each call's own tensor written, at every replay)
        np.testing.assert_array_equal(out.numpy(), [2.0 * k + 1, 3.0])
    assert compiled.eager is None and len(compiled.entries) == 1


def _add_one_into(x: ember.Tensor, out: ember.Tensor) -> None:
    np.add(x.numpy(), 1, out=out.numpy())

# -- registration by name, Library / define / impl ------------------------------------------------
def test_register_functions_by_name_and_by_overload():
    def body(torch):
        @torch.library.custom_op("testlib::by_name", mutates_args=())
        def f(x: torch.Tensor) -> torch.Tensor:
            return x.clone()

        lib = torch.library
        lib.register_fake("testlib::by_name")(lambda x: torch.empty_like(x).t())
        lib.register_kernel("testlib::by_name", "cpu")(lambda x: x * 3)
        three = f(torch.ones(1))
        lib.register_kernel(torch.ops.testlib.by_name.default, "cpu", lambda x: x * 5)
        five = f(torch.ones(1))
        lib.register_autograd(f, lambda ctx, g: g * 7)
        x = torch.ones(2, requires_grad=True)
        f(x).sum().backward()
        lib.register_vmap("testlib::by_name", lambda info, in_dims, x: (x * 4, in_dims[0]))
        return (three, five, x.grad, tuple(f(torch.ones(2, 3, device="meta")).shape),
                torch.vmap(f)(torch.ones(2, 1)))
    same(body)


def test_register_by_name_of_a_missing_operator():
    def body(torch):
        errors = []
        for register in (lambda: torch.library.register_autograd("testlib::nothere", print),
                         lambda: torch.library.register_fake("testlib::nothere", print)):
            errors.append(error_of(register))
        return errors
    same(body)


def test_library_define_impl_and_register_autograd():
    def body(torch):
        lib = torch.library.Library("testlib_def", "DEF")
        name = lib.define("mysin(Tensor x) -> Tensor")
        lib.impl("mysin", lambda x: x.sin() * 1, "CPU")
        x = torch.ones(2, requires_grad=True)
        recorded = torch.ops.testlib_def.mysin(x)  # no derivative: the kernel's ops record
        torch.library.register_autograd(
            "testlib_def::mysin", lambda ctx, g: g * ctx.x.cos(),
            setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]))
        y = torch.ops.testlib_def.mysin(x)
        y.sum().backward()
        errors = [error_of(lambda: lib.define("mysin(Tensor x) -> Tensor")),
                  error_of(lambda: torch.library.Library("testlib_def", "DEF")),
                  error_of(lambda: torch.library.Library("testlib_def", "WRONG"))]
        errors = [(t, m.split(" Duplicate registration")[0].split("  Previous registration")[0])
                  for t, m in errors]
        lib._destroy()
        return name, repr(lib), recorded, y, x.grad, errors
    same(body)


def test_library_fragment_define_and_impl_by_device():
    def body(torch):
        lib = torch.library.Library("testlib_frag", "FRAGMENT")
        torch.library.define("testlib_frag::twice", "(Tensor x, int n=2) -> Tensor", lib=lib)

        @torch.library.impl("testlib_frag::twice", "cpu", lib=lib)
        def _(x, n=2):
            return x * n

        @torch.library.register_fake("testlib_frag::twice", lib=lib)
        def _(x, n=2):
            return torch.empty_like(x)

        out = (torch.ops.testlib_frag.twice(torch.ones(2)),
               torch.ops.testlib_frag.twice(torch.ones(2), 3),
               tuple(torch.ops.testlib_frag.twice(torch.ones(2, device="meta")).shape),
               torch.ops.testlib_frag.twice(torch.ones(2, requires_grad=True)))
        lib._destroy()
        return out, error_of(lambda: torch.ops.testlib_frag.twice)
    same(body)


def test_kernels_get_no_trailing_arguments_that_equal_their_defaults():
    def body(torch):
        lib = torch.library.Library("testlib_defaults", "FRAGMENT")
        lib.define("f(Tensor x, int n=2, float a=1.5, *, int k=0) -> Tensor")
        seen = []

        def kernel(*args, **kwargs):
            seen.append((args[1:], kwargs))
            return args[0].clone()

        lib.impl("f", kernel, "CPU")
        f, x = torch.ops.testlib_defaults.f, torch.ones(1)
        f(x), f(x, 2), f(x, 3), f(x, 2, 2.5), f(x, 3, 1.5), f(x, k=0), f(x, k=1), f(x, a=2.5)
        lib._destroy()
        return seen
    same(body)


# -- opcheck ----------------------------------------------------------------------------------
def _opcheck_results(torch, op, args, **kwargs):
    """opcheck's results with each failure as (type name, message)."""
    results = torch.library.opcheck(op, args, raise_exception=False, **kwargs)
    return {k: v if isinstance(v, str) else (type(v).__name__, str(v))
            for k, v in results.items()}


def test_opcheck_passes_a_correct_operator():
    def body(torch):
        Tensor = torch.Tensor

        @torch.library.custom_op("testlib::oc_good", mutates_args=())
        def good(x: Tensor, n: int) -> Tensor:
            return x * n

        good.register_fake(lambda x, n: torch.empty_like(x))
        good.register_autograd(lambda ctx, g: (g * ctx.n, None),
                               setup_context=lambda ctx, inputs, output: setattr(
                                   ctx, "n", inputs[1]))
        x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        return (_opcheck_results(torch, good, (x, 2)),
                _opcheck_results(torch, torch.ops.testlib.oc_good.default, (x.detach(), 2),
                                 test_utils="ALL"))
    same(body)


@pytest.mark.parametrize("fault", ["undeclared_write", "fake_shape", "fake_dtype", "fake_stride",
                                   "no_fake"])
def test_opcheck_finds_what_torchs_finds(fault):
    def body(torch):
        Tensor = torch.Tensor

        @torch.library.custom_op(f"testlib::oc_{fault}", mutates_args=())
        def f(x: Tensor) -> Tensor:
            if fault == "undeclared_write":
                x.add_(1)
            return x.clone()

        fakes = {"undeclared_write": lambda x: torch.empty_like(x),
                 "fake_shape": lambda x: x.new_empty(5),
                 "fake_dtype": lambda x: torch.empty_like(x, dtype=torch.float64),
                 "fake_stride": lambda x: torch.empty_like(x).t().contiguous().t()}
        if fault in fakes:
            f.register_fake(fakes[fault])
        return _opcheck_results(torch, f, (torch.ones(3, 2),))
    same(body)


def test_opcheck_autograd_registration_of_a_backend_kernel():
    def body(torch):
        lib = torch.library.Library("testlib_oc", "FRAGMENT")
        lib.define("noad(Tensor x) -> Tensor")
        lib.impl("noad", lambda x: x * 2, "CPU")
        lib.define("decomposed(Tensor x) -> Tensor")
        lib.impl("decomposed", lambda x: x * 2, "CompositeImplicitAutograd")
        x = torch.ones(3, requires_grad=True)
        checks = ("test_schema", "test_autograd_registration")
        out = (_opcheck_results(torch, torch.ops.testlib_oc.noad.default, (x,), test_utils=checks),
               _opcheck_results(torch, torch.ops.testlib_oc.decomposed.default, (x,),
                                test_utils=checks))
        lib._destroy()
        return out
    same(body)


def test_opcheck_argument_errors_and_raising():
    def body(torch):
        @torch.library.custom_op("testlib::oc_args", mutates_args=())
        def f(x: torch.Tensor) -> torch.Tensor:
            return x.clone()

        x = torch.ones(2)
        opcheck = torch.library.opcheck
        return [error_of(lambda: opcheck(f, (x,), test_utils="nothing")),
                error_of(lambda: opcheck(f, (x,), rtol=1.0)),
                error_of(lambda: opcheck(f, (x,), test_utils="test_faketensor")),
                # (torch names its own class: ember.ops.OpOverload here)
                error_of(lambda: opcheck(lambda x: x, (x,)))[1].split(" must be")[0]]
    same(body)


def test_mutating_op_on_tensors_that_require_grad_as_torch():
    def body(torch):
        @torch.library.custom_op("testlib::add_one_grad_", mutates_args={"x"})
        def add_one_(x: torch.Tensor) -> None:
            x.add_(1)

        leaf = torch.ones(2, requires_grad=True)
        y = leaf.clone()
        z = y * y  # saves y: the bumped version makes its backward refuse
        add_one_(y)
        try:
            z.sum().backward()
        except RuntimeError as e:
            err = str(e)
        add_one_(leaf)  # (the kernel runs below autograd: a leaf is written without error)
        return y, leaf, y._version, err
    same(body)


def test_register_autocast_casts_floating_inputs_on_its_device():
    def body(torch):
        Tensor = torch.Tensor
        seen = []

        @torch.library.custom_op("testlib::mm_autocast", mutates_args=())
        def mm(x: Tensor, y: Tensor, n: int) -> Tensor:
            seen.append((x.dtype, y.dtype, torch.is_autocast_enabled("cpu")))
            return (x.float() * y.float()).to(x.dtype) * n

        torch.library.register_autocast("testlib::mm_autocast", "cpu", torch.float16)
        x, y = torch.ones(2), torch.ones(2, dtype=torch.float64)
        i = torch.ones(2, dtype=torch.int64)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            inside = [mm(x, x, 1), mm(x, y, 2), mm(x, i, n=3)]
        outside = mm(x, x, 1)
        errors = [error_of(lambda: torch.library.register_autocast(mm, 3, torch.float16)),
                  error_of(lambda: mm.register_autocast(3, torch.float16))]
        return inside, outside, seen, errors
    same(body)


def test_impl_abstract_is_register_fake_with_a_warning():
    def body(torch):
        @torch.library.custom_op("testlib::old_fake", mutates_args=())
        def f(x: torch.Tensor) -> torch.Tensor:
            return x.clone()

        torch.library.impl_abstract("testlib::old_fake")(lambda x: torch.empty_like(x))
        return tuple(f(torch.ones(3, device="meta")).shape)
    same(body)


def test_library_overloads_by_name_and_by_arguments():
    def body(torch):
        lib = torch.library.Library("testlib_overloads", "FRAGMENT")
        lib.define("scale(Tensor x) -> Tensor")
        lib.define("scale.by(Tensor x, float s) -> Tensor")
        lib.impl("scale", lambda x: x * 2, "CPU")
        lib.impl("scale.by", lambda x, s: x * s, "CPU")
        p = torch.ops.testlib_overloads.scale
        x = torch.ones(1, requires_grad=True)
        torch.library.register_autograd(
            "testlib_overloads::scale.by", lambda ctx, g: (g * ctx.s, None),
            setup_context=lambda ctx, inputs, output: setattr(ctx, "s", inputs[1]))
        y = p.by(x, 5.0)
        y.backward()
        out = (sorted(p.overloads()), str(p.by), repr(p.by), p.by.name(), p.by.__name__,
               p(torch.ones(1)), p(torch.ones(1), 3.0), p.default(torch.ones(1)), y, x.grad,
               error_of(lambda: p.by(torch.ones(1))), error_of(lambda: p(torch.ones(1), "a")),
               error_of(lambda: torch.library.register_autograd("testlib_overloads::scale.no",
                                                                print)))
        lib._destroy()
        return out
    same(body)


def test_vmap_of_a_custom_op_on_tensors_that_require_grad():
    def body(torch):
        op = _numpy_sin(torch, "sin_vmap_grad")
        x = torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], requires_grad=True)
        y = torch.vmap(op)(x)
        y.sum().backward()
        per_example = error_of(lambda: torch.vmap(torch.func.grad(lambda v: op(v).sum()))(x))
        return y, x.grad, per_example
    # (torch's output node is a view of its stacked examples, ember's the stack itself)
    same(body, grad_fn=False, check_warnings=False)


def test_factory_op_picks_its_kernel_by_its_device_argument():
    def body(torch):
        @torch.library.custom_op("testlib::factory", mutates_args={}, device_types="cpu")
        def bar(device: torch.device, n: int) -> torch.Tensor:
            return torch.ones(n)

        def no_device(n: int) -> torch.Tensor:
            return torch.ones(n)

        anywhere = torch.library.custom_op("testlib::factory_any", no_device, mutates_args=())
        return (bar("cpu", 2), error_of(lambda: bar(torch.device("meta"), 2)), anywhere(3),
                error_of(lambda: torch.library.custom_op("testlib::factory_nodev", no_device,
                                                         mutates_args=(), device_types="cpu")))
    same(body)
