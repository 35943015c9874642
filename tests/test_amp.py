"""Autocast and GradScaler against torch: which ops run in which dtype on the CPU, the values,
nesting, the weight cache, the state functions, custom_fwd/custom_bwd, and GradScaler's
scaling, unscaling, inf checks, skipped steps and state_dict."""
import pickle

import pytest

import ember
from oracle import same

pytest.importorskip("ml_dtypes")


def _inputs(torch):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=g)
    w = torch.randn(5, 4, generator=g, requires_grad=True)
    b = torch.randn(5, generator=g, requires_grad=True)
    return x, w, b


# Each runs inside torch.autocast('cpu') on float32 inputs (F is torch.nn.functional).
CALLS = [
    "F.linear(x, w, b)", "torch.mm(x, w.t())", "x @ w.t()", "x.mm(w.t())", "x.matmul(w.t())",
    "torch.matmul(x, w.t())", "torch.bmm(x[None], w.t()[None])",
    "torch.addmm(b, x, w.t())", "torch.baddbmm(b[None, None], x[None], w.t()[None])",
    "F.conv1d(x[None], w[:, :, None])", "F.conv2d(x[None, None], w[None, None, :2, :2])",
    "F.prelu(x, torch.tensor([0.25]))",
    "F.scaled_dot_product_attention(x[None], x[None], x[None])",
    "F.linear(x, w, b).relu()", "F.linear(x, w, b).softmax(-1)",
    "F.linear(x, w, b).sum()", "F.linear(x, w, b).exp()",
    "F.cross_entropy(F.linear(x, w, b), torch.tensor([0, 1, 2]))",
    "F.mse_loss(F.linear(x, w, b), torch.zeros(3, 5))",
    "F.l1_loss(F.linear(x, w, b), torch.zeros(3, 5))",
    "F.binary_cross_entropy_with_logits(F.linear(x, w, b), torch.ones(3, 5))",
    "F.nll_loss(F.linear(x, w, b).log_softmax(-1), torch.tensor([0, 1, 2]))",
    "F.kl_div(F.linear(x, w, b), torch.ones(3, 5), reduction='batchmean')",
    "F.smooth_l1_loss(F.linear(x, w, b), torch.zeros(3, 5))",
    "F.huber_loss(F.linear(x, w, b), torch.zeros(3, 5))",
    "F.linear(x, w, b).prod()", "torch.cdist(x, w)", "torch.fft.rfft(F.linear(x, w, b))",
    "torch.linalg.inv(F.linear(x, w, b)[:, :3])", "torch.trace(F.linear(x, w, b))",
    "torch.cat([F.linear(x, w, b), x], 1)", "torch.stack([F.linear(x, w, b)[:, :4], x])",
    "torch.cat([F.linear(x, w, b), F.linear(x, w, b)])",
    "torch.mm(x.double(), w.double().t())", "torch.mm(x.half(), w.half().t())",
    "torch.nn.Conv2d(1, 2, 2)(x[None, None])", "torch.nn.Linear(4, 2)(x)",
    "torch.nn.MSELoss()(F.linear(x, w, b), torch.zeros(3, 5))",
    "torch.nn.CrossEntropyLoss()(F.linear(x, w, b), torch.tensor([0, 1, 2]))",
    # composites whose inner ops are on the lists
    "torch.nn.MultiheadAttention(4, 2)(x[:, None], x[:, None], x[:, None])[0]",
    "torch.tensordot(x, w, dims=([1], [1]))", "torch.einsum('ij,kj->ik', x, w)",
    "torch.nn.GRU(4, 3)(x[:, None])[0]", "torch.nn.Bilinear(4, 4, 2)(x, x)",
    "torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)(x[:, None])",
    "F.pad(F.linear(x, w, b), (1, 1), mode='reflect')",
    "F.pad(F.linear(x, w, b)[None], (1, 1, 1, 1), mode='replicate')",
    "F.pad(F.linear(x, w, b), (1, 1), mode='circular')",
    "torch.nn.ReflectionPad1d(1)(F.linear(x, w, b))",
]


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_cpu_autocast_casts_as_torch(call, dtype):
    def body(torch):
        F = torch.nn.functional  # noqa: F841 - used by the call
        torch.manual_seed(0)
        x, w, b = _inputs(torch)
        with torch.autocast("cpu", dtype=getattr(torch, dtype)):
            out = eval(call)
        if isinstance(out, torch.Tensor) and out.dtype.is_floating_point:
            out.float().sum().backward()
            return out, w.grad, torch.is_autocast_enabled("cpu")
        return out, torch.is_autocast_enabled("cpu")
    # (values are compared to torch's within a float16/bfloat16 rounding: torch's reduced
    # precision kernels sum in another order)
    same(body, rtol=2 ** -7, atol=1e-3, grad_fn=False)


def test_autocast_node_names_match_torch():
    def body(torch):
        x, w, b = _inputs(torch)
        with torch.autocast("cpu"):
            y = F_linear(torch)(x, w, b)
            z = torch.nn.functional.mse_loss(y, torch.zeros(3, 5))
        return y, z, y.grad_fn.next_functions[1][0].name(), z.grad_fn.next_functions[0][0].name()
    same(body, rtol=2 ** -7, atol=1e-3)


def F_linear(torch):
    return torch.nn.functional.linear


def test_nesting_disable_and_state_functions():
    def body(torch):
        x, w, _ = _inputs(torch)
        seen = [torch.is_autocast_enabled("cpu"), str(torch.get_autocast_dtype("cpu")),
                str(torch.get_autocast_dtype("cuda")), torch.is_autocast_enabled(),
                torch.is_autocast_cache_enabled()]
        with torch.autocast("cpu"):
            a = torch.mm(x, w.t())
            with torch.autocast("cpu", enabled=False):
                b = torch.mm(x, w.t())
                seen.append(torch.is_autocast_enabled("cpu"))
            with torch.autocast("cpu", dtype=torch.float16, cache_enabled=False):
                c = torch.mm(x, w.t())
                seen.append(torch.is_autocast_cache_enabled())
            seen += [torch.is_autocast_enabled("cpu"), str(torch.get_autocast_dtype("cpu"))]
        seen.append(torch.is_autocast_enabled("cpu"))
        seen += [torch.autocast_increment_nesting(), torch.autocast_increment_nesting(),
                 torch.autocast_decrement_nesting(), torch.autocast_decrement_nesting()]
        torch.set_autocast_enabled("cpu", True)
        torch.set_autocast_dtype("cpu", torch.float16)
        d = torch.mm(x, w.t())
        torch.set_autocast_enabled("cpu", False)
        torch.set_autocast_dtype("cpu", torch.bfloat16)
        torch.clear_autocast_cache()
        return a, b, c, d, seen
    same(body, rtol=2 ** -7, atol=1e-3)


def test_weight_cache_matches_torch():
    # the cached bfloat16 weight is reused in a nested float16 region: torch then refuses the
    # mixed matmul, and so does ember; without the cache the region works
    def body(torch):
        x, w, b = _inputs(torch)
        with torch.autocast("cpu"):
            torch.nn.functional.linear(x, w, b)
            with torch.autocast("cpu", dtype=torch.float16):
                try:
                    torch.nn.functional.linear(x, w, b)
                    refused = None
                except RuntimeError as e:
                    refused = str(e)
        with torch.autocast("cpu", cache_enabled=False):
            torch.nn.functional.linear(x, w, b)
            with torch.autocast("cpu", dtype=torch.float16):
                ok = torch.nn.functional.linear(x, w, b)
        return refused, ok
    same(body, rtol=2 ** -7, atol=1e-3)


@pytest.mark.parametrize("make", [
    "torch.autocast('cpu', dtype=torch.float64)", "torch.autocast('cuda')",
    "torch.cpu.amp.autocast()", "torch.autocast(1)", "torch.autocast('xyz')",
    "torch.autocast('cpu')(3)", "torch.get_autocast_cpu_dtype()", "torch.get_autocast_gpu_dtype()",
    "torch.is_autocast_enabled('meta')", "torch.amp.is_autocast_available('cpu')",
    "torch.amp.is_autocast_available('cuda')", "torch.amp.is_autocast_available('meta')",
    "torch.amp.GradScaler()", "torch.cpu.amp.GradScaler()",
    "torch.amp.GradScaler('cpu', growth_factor=0.5)",
    "torch.amp.GradScaler('cpu', backoff_factor=2.0)",
])
def test_construction_warnings_and_errors_match_torch(make):
    def body(torch):
        made = eval(make)
        if hasattr(made, "is_enabled"):
            return made.is_enabled(), made.state_dict()
        if hasattr(made, "_enabled"):
            return made._enabled
        return str(made)
    same(body)


def test_decorator_and_cpu_amp_alias():
    def body(torch):
        x, w, _ = _inputs(torch)

        @torch.autocast("cpu")
        def f(a):
            return a @ w.t()
        with torch.cpu.amp.autocast():
            g = torch.mm(x, w.t())
        return f(x), g, torch.is_autocast_enabled("cpu")
    same(body, rtol=2 ** -7, atol=1e-3)


def test_custom_fwd_and_bwd_match_torch():
    def body(torch):
        x, w, _ = _inputs(torch)
        seen = []

        class Mul(torch.autograd.Function):
            @staticmethod
            @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
            def forward(ctx, a, b):
                seen.append((str(a.dtype), torch.is_autocast_enabled("cpu")))
                ctx.save_for_backward(a, b)
                return a.mm(b)

            @staticmethod
            @torch.amp.custom_bwd(device_type="cpu")
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                seen.append(torch.is_autocast_enabled("cpu"))
                return grad.mm(b.t()), a.t().mm(grad)

        class Plain(torch.autograd.Function):
            @staticmethod
            @torch.amp.custom_fwd(device_type="cpu")
            def forward(ctx, a):
                seen.append(torch.is_autocast_enabled("cpu"))
                return a * 2

            @staticmethod
            @torch.amp.custom_bwd(device_type="cpu")
            def backward(ctx, grad):
                seen.append(torch.is_autocast_enabled("cpu"))
                return grad * 2

        with torch.autocast("cpu"):
            out = Mul.apply(x.bfloat16(), w.t())
            p = Plain.apply(w)
        (out.sum() + p.sum()).backward()
        return out, w.grad, seen
    same(body, rtol=2 ** -7, atol=1e-3)


def _train(torch, steps, scaler_kwargs, poison=()):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", **scaler_kwargs)
    g = torch.Generator().manual_seed(1)
    record = []
    for step in range(steps):
        x = torch.randn(8, 4, generator=g)
        if step in poison:
            x[0, 0] = float("inf")
        opt.zero_grad()
        with torch.autocast("cpu"):
            loss = model(x).float().pow(2).mean()
        scaled = scaler.scale(loss)
        scaled.backward()
        if step % 2:
            scaler.unscale_(opt)
            record.append(model.weight.grad.clone())
        scaler.step(opt)
        scaler.update()
        record.append((scaled, scaler.get_scale(), scaler._get_growth_tracker()))
    return record, model.weight, model.bias, scaler.state_dict()


def test_grad_scaler_training_matches_torch():
    same(lambda torch: _train(torch, 6, {"init_scale": 2.0 ** 10, "growth_interval": 2},
                              poison=(3,)), rtol=2 ** -7, atol=1e-4)


def test_grad_scaler_growth_stops_at_float32_overflow():
    same(lambda torch: _train(torch, 3, {"init_scale": 2.0 ** 126, "growth_interval": 1,
                                         "growth_factor": 4.0}), rtol=2 ** -7, atol=1e-4)


def test_grad_scaler_errors_and_state_dict_match_torch():
    def body(torch):
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu", init_scale=8.0)
        errors = []
        for bad in (lambda: scaler.step(opt), lambda: scaler.unscale_(opt),
                    lambda: scaler.update()):
            try:
                bad()
            except (RuntimeError, AssertionError) as e:
                errors.append((type(e).__name__, str(e)))
        scaler.scale(model(torch.ones(1, 2)).sum()).backward()
        scaler.unscale_(opt)
        for bad in (lambda: scaler.unscale_(opt), lambda: scaler.step(opt, closure=None)):
            try:
                bad()
            except RuntimeError as e:
                errors.append(str(e))
        scaler.step(opt)
        try:
            scaler.step(opt)
        except RuntimeError as e:
            errors.append(str(e))
        scaler.update(2.0)
        other = torch.amp.GradScaler("cpu")
        other.load_state_dict(scaler.state_dict())
        try:
            other.load_state_dict({})
        except RuntimeError as e:
            errors.append(str(e))
        half = torch.nn.Linear(2, 1).half()
        hopt = torch.optim.SGD(half.parameters(), lr=0.1)
        scaler.scale(half(torch.ones(1, 2).half()).sum()).backward()
        try:
            scaler.unscale_(hopt)
        except ValueError as e:
            errors.append(str(e))
        return errors, scaler.get_scale(), other.state_dict(), model.weight
    same(body)


def test_grad_scaler_pickles_between_iterations():
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0)
    scaler.scale(ember.ones(1))
    copy = pickle.loads(pickle.dumps(scaler))
    assert copy.get_scale() == 4.0 and copy.state_dict() == scaler.state_dict()


def test_autocast_wrappers_are_removed_outside_regions():
    mm = ember.mm
    with ember.autocast("cpu"):
        assert ember.mm is not mm
    assert ember.mm is mm and ember.Tensor.__matmul__.__name__ == "__matmul__"


@pytest.mark.parametrize("make", [
    "torch.cuda.amp.autocast()", "torch.cuda.amp.GradScaler()",
    "torch.cpu.amp.autocast(dtype=torch.float16)", "torch.cpu.amp.GradScaler(init_scale=4.0)",
    "torch.cuda.amp.custom_fwd(lambda ctx, a: a)", "torch.cuda.amp.custom_bwd(lambda ctx, g: g)",
])
def test_deprecated_spellings_warn_as_torch(make):
    def body(torch):
        made = eval(make)
        if hasattr(made, "is_enabled"):
            return made.is_enabled(), made.state_dict()
        return getattr(made, "_enabled", callable(made))
    same(body)
