"""What public PyTorch programs use and ember once lacked, each against torch (see
docs/programs.md)."""
from __future__ import annotations

import warnings

import pytest

from oracle import same


@pytest.mark.parametrize("key", [
    "range(3), [0, 2, 1]", "range(2)", "(0, 2), :", ":, (1, 3)", "range(1, 3), range(2)",
    "range(0)", "..., range(3)",
])
def test_ranges_and_tuples_index_as_sequences(key):
    def body(torch):
        x = torch.arange(12.).reshape(3, 4).requires_grad_()
        y = eval(f"x[{key}]", {"x": x})
        y.pow(2).sum().backward()
        return y, x.grad
    same(body)


def test_a_range_key_assigns_in_place():
    def body(torch):
        x = torch.zeros(3, 4)
        x[range(3), torch.tensor([1, 0, 3])] = x.max() + 1
        w = torch.ones(3, requires_grad=True)
        y = torch.zeros(3, 4)
        y[range(3), (0, 1, 2)] = w * 2
        y.sum().backward()
        return x, y, w.grad
    same(body)


@pytest.mark.parametrize("key", ["'a'", "1.5", "object()", "{1: 2}", "0, 1.5"])
@pytest.mark.parametrize("write", [False, True])
def test_what_cannot_index_raises_torchs_error(key, write):
    def body(torch):
        x = torch.ones(3, 3)
        if write:
            exec(f"x[{key}] = 1", {"x": x})
        return eval(f"x[{key}]", {"x": x})
    # (torch reads a lone string as a sequence of strings first and warns about that)
    same(body, check_warnings=key != "'a'")


@pytest.mark.parametrize("call", [
    "randint(9, size=(3,))", "randint(9, (3,))", "randint(3, 9, size=(2,))",
    "randint(high=9, size=(2,))", "randint(low=2, high=9, size=(2,))",
    "randint(size=(2,), high=4)", "randint(9, size=(4,), dtype=torch.int32)",
    "randint(5, size=(2, 2), generator=torch.Generator().manual_seed(3))", "randint(9)",
    "randint(size=(2,))", "randint(high=2)", "randint()", "randint(3, (2,), dtype=torch.int8)",
])
def test_randint_reads_each_of_torchs_argument_forms(call):
    def body(torch):
        torch.manual_seed(0)
        return eval(f"torch.{call}", {"torch": torch}), torch.rand(2)
    same(body)


def test_a_custom_functions_node_prints_as_torchs():
    def body(torch):
        import re

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

            @staticmethod
            def backward(ctx, g):
                return g
        y = Fn.apply(torch.ones(2, requires_grad=True))
        plain = torch.ones(1, requires_grad=True).exp()
        return [re.sub(r"0x[0-9a-f]+", "ADDR", repr(n)) for n in (y.grad_fn, plain.grad_fn)]
    same(body)


def test_vmap_of_vjp_fn_inside_the_vmap_the_vjp_was_made_in():
    """The neural-tangent-kernel pattern: per example, a vjp with respect to a dict of
    parameters, then vmap(vjp_fn) over basis vectors, then a jvp along each result."""
    def body(torch):
        jvp, vjp, vmap = torch.func.jvp, torch.func.vjp, torch.func.vmap
        torch.manual_seed(0)
        w = torch.randn(3, 4)

        def f(w, x):
            return (x.unsqueeze(0) @ w.T).tanh().squeeze(0)

        def ntk(x1, x2):
            out, vjp_fn = vjp(lambda p: f(p["w"], x1), {"w": w})

            def column(vec):
                vjps = vjp_fn(vec)  # ({"w": ...},): the primals' structure
                return vjps[0]["w"], jvp(lambda p: f(p["w"], x2), ({"w": w},), vjps)[1]
            return vmap(column)(torch.eye(out.numel()))
        x1, x2 = torch.randn(2, 4), torch.randn(5, 4)
        return vmap(vmap(ntk, (None, 0)), (0, None))(x1, x2)
    same(body, rtol=1e-5, atol=1e-6, check_warnings=False)  # (torch warns from its internals)


def test_a_vjp_under_vmap_gives_its_primals_structure():
    def body(torch):
        vjp, vmap = torch.func.vjp, torch.func.vmap
        torch.manual_seed(0)
        params = {"w": torch.randn(3, 4), "b": torch.randn(3)}

        def per_example(x, ct):
            _, vjp_fn = vjp(lambda p: (p["w"] @ x + p["b"]).sin(), params)
            return vjp_fn(ct)
        return vmap(per_example)(torch.randn(5, 4), torch.randn(5, 3))
    same(body, rtol=1e-5, atol=1e-6, check_warnings=False)  # (torch warns from its internals)


@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_gradgradcheck_draws_its_grad_outputs_as_torch(dtype, noncontig):
    """Its random grad_outputs come from the default generator as torch's (make_tensor), so a
    program's later random numbers are torch's too."""
    def body(torch):
        torch.manual_seed(0)
        x = torch.rand(3, 2, dtype=getattr(torch, dtype), requires_grad=True)
        ok = torch.autograd.gradgradcheck(lambda t: (t * t, t.sum() * 2), x,
                                          gen_non_contig_grad_outputs=noncontig)
        return ok, torch.rand(3)
    same(body)


def test_gradcheck_stays_a_function_when_gradgradcheck_is_used_first():
    import subprocess
    import sys
    code = ("import ember; ember.autograd.gradgradcheck; "
            "print(callable(ember.autograd.gradcheck), callable(ember.autograd.gradgradcheck))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["True", "True"]


def test_core_classes_print_as_the_packages_own():
    def body(torch):
        classes = (torch.Tensor, torch.Size, torch.dtype, torch.device, torch.finfo,
                   torch.iinfo, torch.memory_format, torch.layout)
        return ([repr(cls) for cls in classes], repr(type(torch.ones(1))),
                repr(type(torch.strided)), repr(type(torch.ones(2).shape)))
    same(body)


def test_core_classes_pickle_under_the_packages_name():
    import pickle

    import ember
    for obj in (ember.Tensor, ember.Size, ember.dtype, ember.device, ember.finfo,
                ember.iinfo, ember.memory_format, ember.layout, ember.Size([2, 3])):
        assert pickle.loads(pickle.dumps(obj)) == obj


def test_the_cross_dim_warning_names_the_callers_line_once_per_process():
    """torch warns once per process (TORCH_WARN_ONCE), at the caller's line: each library
    runs in a fresh process, so that no earlier test has used the warning up."""
    pytest.importorskip("torch")
    code = ("import warnings, {lib} as torch\n"
            "for _ in range(2):\n"
            "    with warnings.catch_warnings(record=True) as record:\n"
            "        warnings.simplefilter('always')\n"
            "        out = torch.cross(torch.tensor([0., 1., 0.]), torch.tensor([1., 0., 0.]))\n"
            "    print(out.tolist(), [(w.category.__name__, str(w.message), w.filename) for w in record])\n")
    got = _printed_in_a_fresh_process(code, "ember").replace("ember.", "torch.")  # (the
    assert got == _printed_in_a_fresh_process(code, "torch")  # message names the package)
    assert got.splitlines()[1].endswith("[]")  # (the second call: no warning)


def _printed_in_a_fresh_process(code, lib):
    """What ``code`` (``{lib}`` standing for the library) prints in a new interpreter, torch's
    ``(Triggered internally at ...)`` suffixes left out (ember's warnings have none)."""
    import re
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", code.format(lib=lib)], capture_output=True,
                         text=True, check=True).stdout
    return re.sub(r" \(Triggered internally at [^)]*\)", "", out)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int16", "uint8"])
@pytest.mark.parametrize("start, end, steps", [
    (0., 6.283185307179586, 25), (-3.141592653589793, 3.141592653589793, 2000), (-3., 7., 37),
    (0.1, 0.7, 64), (2.7, 250.2, 101), (5., 1.5, 9), (3., 3., 4), (1., 2., 1), (0., 1., 0),
    (1.5, 2.5, 2),
])
def test_linspace_values_are_torchs_to_the_last_bit(start, end, steps, dtype):
    """torch's kernel counts up from start and down from end, each value one fused
    multiply-add in the result's precision (NumPy's linspace rounds differently)."""
    def body(torch):
        return torch.linspace(start, end, steps, dtype=getattr(torch, dtype))
    same(body, rtol=0, atol=0)


def test_linspace_takes_0d_tensor_ends():
    def body(torch):
        return (torch.linspace(torch.tensor(-1.5), torch.tensor(2.25), 7, dtype=torch.float64),
                torch.linspace(-2, 2, 5, dtype=torch.complex64))
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("dtype, value", [
    ("uint8", -3.), ("uint8", 255.9), ("uint8", -0.5), ("int8", 300), ("int32", 1e10),
    ("float16", 1e6),
])
def test_linspace_refuses_ends_out_of_the_dtypes_range(dtype, value):
    def body(torch):
        return torch.linspace(value, 1, 3, dtype=getattr(torch, dtype))
    same(body)


def test_torch_functional_module():
    def body(torch):
        import importlib
        F = importlib.import_module(torch.__name__ + ".functional")
        x = torch.arange(6.).reshape(2, 3)
        missing = []
        for name in ("max_pool2d", "relu"):
            try:
                getattr(F, name)
            except AttributeError as error:
                missing.append(str(error))
        return (sorted(F.__all__), F.split(x, 2, 1), F.einsum("ij->j", x), F.norm(x),
                F.broadcast_shapes((2, 1), (3,)), F is torch.functional, missing)
    same(body)


def test_hook_registries_print_as_ordered_dicts():
    def body(torch):
        import re
        m = torch.nn.Linear(2, 2)
        m.register_forward_pre_hook(lambda mod, args: None)
        m.register_forward_hook(lambda mod, args, out: None)
        t = torch.ones(2, requires_grad=True)
        t.register_hook(lambda g: g)
        return [re.sub(r"0x[0-9a-f]+", "ADDR", repr(d)).split("[")[0]
                for d in (m._forward_pre_hooks, m._forward_hooks, m._backward_hooks)]
    same(body)


def test_dist_is_one_op_with_torchs_node():
    def body(torch):
        torch.manual_seed(0)
        x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
        y = torch.randn(3, dtype=torch.float64, requires_grad=True)
        d = torch.dist(x, y, 3)
        gx, gy = torch.autograd.grad(d, (x, y))
        return d, gx, gy, d.grad_fn.name(), sorted(a for a in dir(d.grad_fn)
                                                   if a.startswith("_saved"))
    same(body)


@pytest.mark.parametrize("call", [
    "torch.dist(torch.ones(3), 2.)", "torch.dist(torch.ones(3), torch.zeros(3), 'fro')",
    "torch.dist(torch.arange(3), torch.zeros(3, dtype=torch.long))",
    "torch.dist(torch.ones(3), torch.zeros(3, dtype=torch.float64))",
])
def test_dist_refuses_what_torch_refuses(call):
    def body(torch):
        return eval(call, {"torch": torch})
    same(body)


def test_dist_p0_gradient_fails_as_torchs():
    def body(torch):
        x = torch.randn(3, requires_grad=True)
        y = torch.randn(3, requires_grad=True)
        torch.dist(x, y, 0).backward()
    same(body)


@pytest.mark.parametrize("shape", [(1, 4, 4), (8, 3, 5), (2, 6, 7, 9), (3, 2, 2, 3, 4)])
@pytest.mark.parametrize("affine", [True, False])
def test_float32_batch_norm_training_output_is_torchs_to_the_last_bit(shape, affine):
    """torch's CPU kernel: statistics summed in float64, then x * alpha + beta with fused
    multiply-adds."""
    def body(torch):
        torch.manual_seed(0)
        x = torch.randn(*shape) * 5 + 3
        w = torch.randn(shape[1]) if affine else None
        b = torch.randn(shape[1]) if affine else None
        out, mean, invstd = torch.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)
        return out, mean, invstd
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(4, 16, 8, 8), (3, 5, 4, 2), (2, 3, 16), (2, 4, 2, 2, 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_float32_batch_norm_training_gradients_are_torchs_to_the_last_bit(shape, affine):
    """torch's CPU backward kernel: per sample and channel, float32 vector sums of dy and
    (x - mean) * dy added up in float64, then a fused (dy - mean_dy) - (x - mean) * k. Its
    rounding had left ResNet18's float32 gradients a few units apart from torch's."""
    def body(torch):
        torch.manual_seed(0)
        x = (torch.randn(*shape) * 3 + 1).requires_grad_()
        w = (torch.rand(shape[1]) + 0.5).requires_grad_() if affine else None
        b = torch.zeros(shape[1], requires_grad=True) if affine else None
        out = torch.nn.functional.batch_norm(x, None, None, w, b, training=True)
        out.backward(torch.randn(*shape))
        return x.grad, w.grad if affine else None, b.grad if affine else None
    same(body, rtol=0, atol=0)


def test_a_batch_norm_of_ragged_planes_keeps_its_close_gradients():
    # planes of 7 x 7 are not whole vectors: torch sums their tails otherwise, not emulated
    def body(torch):
        torch.manual_seed(0)
        x = (torch.randn(4, 3, 7, 7) * 3 + 1).requires_grad_()
        torch.nn.functional.batch_norm(x, None, None, training=True).backward(
            torch.randn(4, 3, 7, 7))
        return x.grad
    same(body, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", [
    "x.add(2, y)", "x.clone().add_(-0.5, y)", "x.sub(2, y)", "x.clone().sub_(3, y)",
    "x.addcmul(2, y, y)", "x.clone().addcmul_(0.5, y, x)", "x.addcdiv(2, y, x)",
    "x.clone().addcdiv_(-1, y, x)", "x.add(torch.tensor(2.), y)", "x.int().add(2, y.int())",
    "w.add(2, y)", "x.int().add(2.5, y.int())", "x.add(True, y)",
    # what fits neither signature: torch's TypeErrors (alpha and value are keyword-only)
    "x.add(y, 2)", "x.clone().add_(y, 2)", "x.addcmul(y, y, 2)", "x.add(torch.ones(2), y)",
    "x.add('a', y)", "x.sub(2, y, alpha=2)", "x.addcmul(2, y, y, value=3)",
    "x.add(1, 2, 3)", "x.add(2, y, y)", "x.addcmul(y, y, y, y)", "x.addcmul(1, y, y, y)",
    "x.add(2, 3)",
    # the matrix products: beta, or beta and alpha, first
    "m.addmm(2, m, n)", "m.clone().addmm_(2, 3, n, m)", "m.addmm(torch.tensor(2.), m, n)",
    "y.addmv(2, m, y)", "y.clone().addmv_(2, 3, m, x)", "m.addr(2, x, y)",
    "m.clone().addr_(2, 3, y, x)", "m.addbmm(2, b, b)", "m.clone().addbmm_(2, 3, b, b)",
    "b.baddbmm(2, b, b)", "b.clone().baddbmm_(2, 3, b, b)", "wm.addmm(-1, m, n)",
    "m.addmm(n, m, m)", "m.addmm(2, m, n, alpha=3)", "m.addmm(2, 3, 4, m, m)", "m.addmm(2, m)",
    "m.addmm(m, 2)", "m.addmv(2, 3, m, 4)",
    # the functions: torch.add(x, alpha, y), torch.sub, torch.addcmul(x, value, t1, t2)
    "torch.add(x, 2, y)", "torch.sub(x, 2, y)", "torch.add(w, -1, y)",
    "torch.add(x, torch.tensor(2.), y)", "torch.add(x, 2, 3)", "torch.add(x, 2, y, out=z)",
    "torch.addcmul(x, 2, y, y)", "torch.addcdiv(x, 0.5, y, x)",
    "torch.addcmul(x, 2, y, y, out=z)", "torch.sub(x, True, y)",
    "torch.add(x.long(), 2.5, y.long())", "torch.add(x, y, 2)", "torch.add(x, 2, y, alpha=3)",
    "torch.add(x, 2, y, 3)", "torch.add(x, torch.ones(3), y)", "torch.addcmul(x, y, y, 2)",
    "torch.addcmul(x, 2, y, y, value=3)", "torch.addcmul(x, 2, y, 3)",
    "torch.addmv(y, 2, m, y)", "torch.addbmm(m, 2, 3, b, b)", "torch.addr(m, 2, x, y)",
])
def test_deprecated_scalar_first_method_overloads(call):
    def body(torch):
        x, y = torch.ones(3), torch.arange(3.)
        w = torch.ones(3, requires_grad=True)
        m, n = torch.arange(9.).reshape(3, 3), torch.eye(3) - 1
        wm = torch.ones(3, 3, requires_grad=True)
        b, z = torch.arange(18.).reshape(2, 3, 3), torch.empty(0)
        out = eval(call, {"torch": torch, "x": x, "y": y, "w": w, "m": m, "n": n, "b": b,
                          "z": z, "wm": wm})
        if out.requires_grad:
            out.sum().backward()
        return out, w.grad, wm.grad, z
    same(body, check_warnings=False)  # (the warning comes once per process: see below)


def _warnings_twice(calls, values):
    """A program (``{lib}`` for the library) running ``calls`` twice, printing ``values`` and
    the warnings each round recorded (category, message, file and line)."""
    body = "".join(f"        {call}\n" for call in calls)
    return ("import warnings, {lib} as torch\n"
            "p, g = torch.ones(3), torch.arange(3.)\n"
            "for _ in range(2):\n"
            "    with warnings.catch_warnings(record=True) as record:\n"
            "        warnings.simplefilter('always')\n"
            + body +
            f"    print({values}, [(w.category.__name__, str(w.message), w.filename,"
            " w.lineno) for w in record])\n")


def test_deprecated_function_overload_warns_once_per_process():
    """The function forms' warning names torch's function signatures; it is the same one
    warning as the methods'."""
    pytest.importorskip("torch")
    code = _warnings_twice(["q = torch.addcmul(p, 2, g, g)", "p.add_(-0.5, g)",
                            "r = torch.sub(p, 2, g)"], "q.tolist(), r.tolist()")
    want = _printed_in_a_fresh_process(code, "torch")
    assert _printed_in_a_fresh_process(code, "ember") == want
    assert "addcmul(Tensor input, Number value" in want


def test_deprecated_overload_warns_once_per_process_at_the_callers_line():
    """One warning for all the deprecated overloads (torch's TORCH_WARN_ONCE), naming the
    overload that came first; each library runs in a fresh process."""
    pytest.importorskip("torch")
    code = _warnings_twice(["p.add_(-0.5, g)", "p.addcmul_(2, g, g)"], "p.tolist()")
    want = _printed_in_a_fresh_process(code, "torch")
    assert _printed_in_a_fresh_process(code, "ember") == want
    assert "This overload of add_ is deprecated" in want


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 4), (2, 3, 4, 5, 6), (2, 3, 1, 1),
                                   (2, 1, 4, 4), (2, 3, 4, 5, 1)])
@pytest.mark.parametrize("fmt", ["channels_last", "channels_last_3d", "contiguous_format",
                                 "preserve_format"])
def test_empty_lays_out_its_memory_format(shape, fmt):
    def body(torch):
        x = torch.empty(*shape, memory_format=getattr(torch, fmt), requires_grad=True)
        y = torch.empty(shape, memory_format=getattr(torch, fmt), device="meta")
        return x.shape, x.stride(), x.requires_grad, y.stride()
    same(body)


@pytest.mark.parametrize("make", [
    "torch.empty(4, 1, 4, 4)", "torch.empty(2, 3, 1, 1)", "torch.empty(2, 1, 1, 1)",
    "torch.empty(2, 3, 4, 4)", "torch.empty(2, 3, 4, 4).to(memory_format=torch.channels_last)",
    "torch.empty(4, 1, 4, 4).to(memory_format=torch.channels_last)",
    "torch.empty(2, 3, 4, 5).transpose(2, 3)", "torch.empty(3, 4).t()",
    "torch.empty(2, 3, 4, 5).permute(0, 2, 3, 1)", "torch.empty(2, 3, 4, 5, 6)",
    "torch.empty(2, 3, 4, 5, 6).permute(0, 2, 3, 4, 1)", "torch.empty(0, 3, 4, 4)",
])
@pytest.mark.parametrize("fmt", ["channels_last", "contiguous_format", "channels_last_3d"])
def test_to_memory_format_copies_unless_the_tensor_suggests_that_format(make, fmt):
    """torch's to() keeps the tensor itself when its suggested memory format is the one asked
    for: an ambiguous N1HW tensor is copied into channels-last strides, a transposed matrix
    asked for the contiguous format is returned as it is."""
    def body(torch):
        x = eval(make, {"torch": torch}).requires_grad_()
        try:
            y = x.to(memory_format=getattr(torch, fmt))
        except RuntimeError as e:
            return str(e)
        strides = y.stride() if y.numel() else None  # (empty tensors' strides: see docs)
        return y is x, strides, None if y.grad_fn is None else type(y.grad_fn).__name__
    same(body)


def test_module_to_memory_format_lays_out_its_4d_and_5d_tensors():
    def body(torch):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Conv2d(8, 4, 3), torch.nn.BatchNorm2d(4),
                                    torch.nn.Linear(2, 3))
        out = model.to(memory_format=torch.channels_last)
        x = torch.randint(1, 10, (2, 8, 4, 4), dtype=torch.float32)
        x = x.to(memory_format=torch.channels_last)
        model(x).sum().backward()
        return (out is model, [(n, p.stride()) for n, p in model.named_parameters()],
                model[0].weight.grad.stride(), model[0].weight.grad.sum())
    same(body, rtol=1e-5)  # (a float32 sum of the gradient's 288 values)


@pytest.mark.parametrize("form", ["Function", "InplaceFunction"])
def test_a_legacy_function_instance_warns_and_its_call_is_refused(form):
    # (old programs, such as the NumPy-extensions tutorial, instantiate their Function and
    # call the instance, with forward and backward as instance methods)
    def body(torch):
        class Legacy(getattr(torch.autograd.function, form)):
            def forward(self, x):
                return x * 2

        legacy = Legacy()
        try:
            legacy(torch.ones(2, requires_grad=True))
        except RuntimeError as e:
            # (the message ends with the address of torch's documentation in both libraries:
            # its anchor is the one place where ember writes torch's name)
            return str(e).replace("#torch.autograd.", "#")
        return "called"
    same(body)


def test_attention_classes_live_in_torchs_modules_and_a_saved_transformer_loads():
    # (word_language_model lists them by these paths in the safe_globals of its torch.load)
    def body(torch):
        import io
        nn = torch.nn
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
        model = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        buffer = io.BytesIO()
        torch.save(model, buffer)
        buffer.seek(0)
        allowed = [nn.modules.activation.MultiheadAttention, nn.modules.container.ModuleList,
                   nn.modules.dropout.Dropout, nn.modules.linear.Linear,
                   nn.modules.linear.NonDynamicallyQuantizableLinear,
                   nn.modules.normalization.LayerNorm, nn.modules.transformer.TransformerEncoder,
                   nn.modules.transformer.TransformerEncoderLayer, nn.functional.relu]
        with torch.serialization.safe_globals(allowed):
            loaded = torch.load(buffer)
        return (nn.MultiheadAttention.__module__,
                type(loaded.layers[0].self_attn.out_proj).__module__,
                loaded(torch.randn(3, 2, 8)))
    same(body)


def test_onnx_module_answers_that_no_export_is_running():
    # (training programs import torch.onnx at the top and export only when asked)
    def body(torch):
        import importlib
        onnx = importlib.import_module(torch.__name__ + ".onnx")
        return onnx.is_in_onnx_export(), issubclass(onnx.OnnxExporterError, RuntimeError)
    same(body)


def test_onnx_export_is_refused_with_the_exporters_error():
    import ember
    with pytest.raises(ember.onnx.OnnxExporterError, match="no ONNX exporter"):
        ember.onnx.export(ember.nn.Linear(2, 2), (ember.ones(1, 2),), "model.onnx")


def _add_one_to_the_values(*tensors):
    for t in tensors:
        t.data.add_(1)


def test_a_shared_models_parameters_are_written_by_the_process_it_is_sent_to():
    # (Hogwild training, pytorch/examples mnist_hogwild: each process steps the one model
    # whose parameters share_memory() put in shared memory; ember's share_memory did nothing,
    # so the main process tested an untrained model)
    def body(torch):
        model = torch.nn.Linear(3, 2)
        with torch.no_grad():
            model.weight.fill_(0.5)
            model.bias.zero_()
        before = model.weight.is_shared()
        model.share_memory()
        moved = torch.arange(6.).reshape(2, 3).t().share_memory_()
        context = torch.multiprocessing.get_context("spawn")
        worker = context.Process(target=_add_one_to_the_values,
                                 args=(model.weight, model.bias, moved))
        worker.start()
        worker.join()
        return (before, model.weight.is_shared(), moved.is_shared(), moved.stride(),
                worker.exitcode, model.weight, model.bias, moved)
    same(body)


@pytest.mark.parametrize("call", [
    "x.sum(1, keepdims=True)", "torch.sum(x, axis=0, keepdims=True)", "x.sum(axis=(0, 1))",
    "x.mean(axis=1, keepdims=True)", "torch.mean(x, dim=1, keepdims=True)",
    "x.max(axis=1, keepdims=True).values", "torch.min(x, 1, keepdims=True).indices",
    "x.amax(1, keepdims=True)", "x.argmax(axis=1)", "x.std(axis=1, keepdims=True)",
    "torch.var_mean(x, axis=1)", "x.prod(1, keepdims=True)", "x.logsumexp(axis=1)",
    "x.cumsum(axis=1)", "x.softmax(axis=1)", "torch.log_softmax(x, axis=0)",
    "x.unsqueeze(axis=0)", "x[:1].squeeze(axis=0)", "torch.cat([x, x], axis=1)",
    "torch.stack([x, x], axis=2)", "x.median(axis=1, keepdims=True).values",
    "torch.linalg.vector_norm(x, dim=1, keepdims=True)",
    "x.sort(axis=0, descending=True).values", "x.all(axis=1)",
])
def test_numpy_keyword_names(call):
    """torch's argument parser takes NumPy's axis= and keepdims= for dim= and keepdim=."""
    def body(torch):
        x = torch.tensor([[1., -2., 3.], [0.5, 4., -1.]], requires_grad=True)
        y = eval(call, {"torch": torch, "x": x})
        y.sum().backward()
        return y, x.grad
    same(body)


@pytest.mark.parametrize("call", [
    "x.norm(dim=1, keepdims=True)", "torch.nn.functional.softmax(x, axis=1)",
    "x.flip(axis=1)", "x.sum(1, axis=1)",
])
def test_numpy_keyword_names_where_torch_refuses_them(call):
    """torch's Python-level functions take only their own names, and a dim given twice is
    refused: TypeError in both (the messages name each library's function)."""
    def body(torch):
        try:
            eval(call, {"torch": torch, "x": torch.ones(2, 3)})
        except TypeError:
            return "TypeError"
        return "ran"
    same(body)


@pytest.mark.parametrize("key", ["torch.arange(3), y", "m, torch.arange(3).reshape(3, 1), y[:2]",
                                 "torch.tensor(1), y, m"])
def test_index_tensors_that_do_not_broadcast(key):
    """torch's message lists the index tensors' shapes as lists."""
    def body(torch):
        x = torch.zeros(4, 5, 6)
        y, m = torch.tensor([0, 1, 2, 3]), torch.zeros(2, 4, dtype=torch.long)
        return eval(f"x[{key}]", {"torch": torch, "x": x, "y": y, "m": m})
    same(body)


def test_fresh_inductor_cache_wraps_a_first_compiled_call():
    # the regional compilation recipe times a compiled model's first call inside
    # torch._inductor.utils.fresh_inductor_cache(); a CPU run leaves cache_entries empty
    def body(torch):
        def f(x):
            return torch.sigmoid(x @ x.T).sum(0)
        x = torch.arange(6.).reshape(2, 3) / 6
        torch.compiler.reset()
        entries = {}
        with torch._inductor.utils.fresh_inductor_cache(entries):
            got = torch.compile(f, backend="eager")(x)
        try:
            with torch._inductor.utils.fresh_inductor_cache({"kernel.so": 1}):
                pass
            refused = None
        except AssertionError as e:
            refused = str(e)
        return got, entries, refused
    same(body)


def test_jit_imports_and_eager_answers_are_torchs():
    # (the chatbot tutorial imports script and trace from torch.jit without calling them;
    # model code asks is_scripting() and decorates methods for the compiler)
    def body(torch):
        import importlib
        jit = importlib.import_module(torch.__name__ + ".jit")
        from_import = importlib.import_module(torch.__name__ + ".jit")
        assert callable(from_import.script) and callable(from_import.trace)

        def f(x):
            return x * 2

        x = torch.arange(3.)
        decorated = [jit.ignore(f), jit.unused(f), jit.export(f), jit.ignore(drop=False)(f)]
        wrapped = jit.script_if_tracing(f)
        future = jit.fork(torch.add, x, 1)
        return (jit.is_scripting(), jit.is_tracing(), jit.annotate(list, [x]),
                [d is f for d in decorated], wrapped is f, wrapped.__wrapped__ is f,
                wrapped.__name__, wrapped(x), type(future).__name__, jit.wait(future),
                jit.Attribute(x, torch.Tensor).value, jit.Final)
    same(body)


def test_jit_deprecations_name_the_librarys_file_as_torchs_do():
    # (so that Python's default filters hide them from a program's output, as torch's)
    def body(torch):
        import importlib
        import os
        jit = importlib.import_module(torch.__name__ + ".jit")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            jit.wait(jit.fork(torch.add, torch.ones(1), 1))
        home = os.path.dirname(torch.__file__)
        return [(str(w.message), w.filename.startswith(home)) for w in caught]
    same(body)


@pytest.mark.parametrize("call", [lambda jit: jit.ignore(3), lambda jit: jit.ignore(drop=True)])
def test_jit_ignore_refuses_and_warns_as_torchs(call):
    def body(torch):
        import importlib
        return callable(call(importlib.import_module(torch.__name__ + ".jit")))
    same(body)


@pytest.mark.parametrize("name", ["script", "trace", "save", "load"])
def test_jit_compilation_is_refused(name):
    import ember
    args = {"script": (ember.nn.Linear(2, 2),), "trace": (ember.nn.Linear(2, 2), ember.ones(1, 2)),
            "save": (ember.nn.Linear(2, 2), "m.pt"), "load": ("m.pt",)}[name]
    with pytest.raises(RuntimeError, match="no TorchScript compiler"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (script and trace warn first)
        getattr(ember.jit, name)(*args)


@pytest.mark.parametrize("mode, padding_idx, weighted", [
    ("sum", None, False), ("mean", None, False), ("mean", 2, False), ("sum", 2, True)])
def test_embedding_bag_sparse_gives_a_sparse_gradient(mode, padding_idx, weighted):
    # (the text classification tutorial trains EmbeddingBag(sparse=True) with SGD: torch's
    # weight gradient is a COO tensor with one entry per index; ember's was dense)
    def body(torch):
        torch.manual_seed(0)
        bag = torch.nn.EmbeddingBag(10, 3, mode=mode, sparse=True, padding_idx=padding_idx)
        text, offsets = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4, 6])
        weights = torch.rand(8) if weighted else None
        bag(text, offsets, per_sample_weights=weights).pow(2).sum().backward()
        grad = bag.weight.grad
        before = bag.weight.detach().clone()
        torch.optim.SGD(bag.parameters(), lr=0.5).step()
        return (str(grad.layout), grad.is_coalesced(), grad._indices(), grad._values(),
                bag.weight - before)
    same(body)


def test_torch_embedding_bag_sparse_gives_a_sparse_gradient():
    def body(torch):
        weight = torch.rand(6, 2, requires_grad=True)
        out = torch.embedding_bag(weight, torch.tensor([0, 5, 5, 1]), torch.tensor([0, 2]),
                                  False, 1, True)[0]
        out.sum().backward()
        return str(weight.grad.layout), weight.grad.to_dense()
    same(body)


def test_embedding_bag_sparse_gradient_under_create_graph_refuses_its_derivative():
    # (torch's sparse gradient keeps a graph whose derivative is not implemented; ember's
    # backward crashed on the saved index tensors)
    def body(torch):
        torch.manual_seed(0)
        bag = torch.nn.EmbeddingBag(10, 3, mode="sum", sparse=True)
        weights = torch.rand(8, requires_grad=True)
        out = bag(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4]),
                  per_sample_weights=weights)
        grad, = torch.autograd.grad(out.pow(2).sum(), bag.weight, create_graph=True)
        dense = grad.to_dense()
        return str(grad.layout), grad.requires_grad, dense, torch.autograd.grad(dense.sum(), weights)
    same(body)
