"""Devices: torch's behaviour without a GPU, and cuda tensors on the fake device.

Without a GPU (CuPy absent or seeing none) every cuda request gives torch's CPU-build answer.
With the ``cuda_device`` fixture, ``cuda`` is served by ember's CUDA backend on the CPU
stand-in for CuPy (tests/fake_cupy.py), so tensors, autograd, ember.cuda, save/load and the
profiler take their GPU paths.
"""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import ember
from oracle import same

NOT_COMPILED = "Torch not compiled with CUDA enabled"
MIXED = ("Expected all tensors to be on the same device, but found at least two devices, "
         "cuda:0 and cpu!")


# -- device objects ----------------------------------------------------------------------------
def test_device_objects_match_torch():
    def body(torch):
        out = []
        for args in (("cpu",), ("cuda",), ("cuda:1",), ("cuda", 0), ("cpu", 0), ("cuda:0",)):
            d = torch.device(*args)
            out.append((repr(d), str(d), d.type, d.index, hash(d) == hash(torch.device(*args))))
        out.append(torch.device("cuda:0") == torch.device("cuda", 0))
        out.append(torch.device("cpu") == "cpu")  # a device never equals a string
        out.append(torch.device(torch.device("cuda:2")).index)
        return out
    same(body)


@pytest.mark.parametrize("args", [("gpu",), ("cuda:x",), ("cuda:-1",), ("cuda:01",),
                                  ("cuda:1:2",), ("cuda:0", 1), ("CUDA",)])
def test_bad_device_strings_raise_torchs_errors(args):
    same(lambda torch: torch.device(*args))


# -- without a GPU: torch's CPU build ----------------------------------------------------------
def _no_gpu():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")


@pytest.mark.parametrize("call", [
    "torch.zeros(2, device='cuda')", "torch.ones(2).cuda()", "torch.ones(2).to('cuda')",
    "torch.ones(2).to(device=torch.device('cuda', 0))", "torch.nn.Linear(2, 2).to('cuda')",
    "torch.nn.Linear(2, 2).cuda()", "torch.randn(2, device='cuda')",
    "torch.cuda.current_device()", "torch.cuda.synchronize()", "torch.cuda.get_device_name()",
    "torch.cuda.get_device_properties(0)", "torch.cuda.get_device_capability()",
    "torch.cuda.get_rng_state()", "torch.cuda.initial_seed()", "torch.cuda.init()",
    "torch.Generator('cuda')", "torch.cuda.mem_get_info()", "torch.cuda.current_stream()", "torch.cuda.default_stream()",
    "torch.cuda.profiler.start()", "torch.cuda.Event(enable_timing=True)",
    "torch.cuda.Stream()", "torch.cuda.nvtx.range_push('a')", "torch.cuda.nvtx.mark('a')",
    "torch.ones(2).pin_memory()", "torch.tensor([1.0], device='cuda:0')",
    "torch.cuda.reset_peak_memory_stats()", "torch.cuda.reset_max_memory_allocated()",
    "torch.cuda.reset_accumulated_memory_stats()", "torch.cuda.memory_summary()",
    "type(torch.cuda.memory_stats()).__name__",
])
def test_cuda_requests_without_a_gpu_raise_as_torchs_cpu_build(call):
    _no_gpu()
    same(lambda torch: eval(call, {"torch": torch}))


def test_cuda_queries_without_a_gpu_answer_as_torchs_cpu_build():
    _no_gpu()

    def body(torch):
        c = torch.cuda
        c.manual_seed(1)
        c.manual_seed_all(1)
        c.seed()
        c.seed_all()
        c.empty_cache()
        x = torch.ones(2)
        with c.stream(None):
            pass
        return (c.is_available(), c.device_count(), c.is_initialized(),
                tuple(c.default_generators), c.memory_allocated(), c.max_memory_allocated(),
                c.memory_reserved(), c.max_memory_reserved(), dict(c.memory_stats()),
                x.is_cuda, x.get_device(), str(x.device), x.is_pinned(), x.cpu() is x,
                x.to("cpu") is x)
    same(body)


@pytest.mark.parametrize("call", [
    "torch.xpu.is_available()", "torch.xpu.device_count()", "torch.xpu.is_initialized()",
    "torch.xpu.is_bf16_supported()", "torch.xpu._is_compiled()", "torch.xpu.current_device()",
    "torch.xpu.synchronize()", "torch.xpu.get_device_name()", "torch.xpu.init()",
    "torch.xpu.set_device(0)", "torch.xpu.initial_seed()", "torch.xpu.get_rng_state()",
    "torch.xpu.current_stream()", "torch.xpu.manual_seed(0)", "torch.xpu.manual_seed_all(0)",
    "torch.xpu.seed()", "torch.xpu.empty_cache()", "torch.xpu.memory_allocated()",
    "torch.xpu.max_memory_allocated()", "torch.xpu.memory_reserved()",
    "torch.xpu.memory_stats()", "torch.xpu.reset_peak_memory_stats()",
    "torch.ones(2).to('xpu')",
])
def test_xpu_answers_as_torchs_build_without_xpu(call):
    same(lambda torch: eval(call, {"torch": torch}))


def test_default_cuda_device_without_a_gpu_raises_as_torchs_cpu_build():
    _no_gpu()

    def body(torch):
        torch.set_default_device("cuda")
        try:
            return torch.zeros(2)
        finally:
            torch.set_default_device(None)
    same(body)


def test_load_onto_cuda_without_a_gpu_raises_torchs_error():
    _no_gpu()

    def body(torch):
        out = []
        for where in ("cuda", torch.device("cuda:0"), {"cpu": "cuda:0"}):
            buf = io.BytesIO()
            torch.save({"w": torch.ones(2)}, buf)
            buf.seek(0)
            try:
                torch.load(buf, map_location=where)
            except RuntimeError as e:
                out.append(str(e))
        return out
    same(body)


# -- on the (fake) device --------------------------------------------------------------------------
def test_tensors_move_and_report_their_device(cuda_device):
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x.cuda()
    assert (y.device, y.is_cuda, y.is_cpu, y.get_device()) == (ember.device("cuda:0"), True,
                                                                False, 0)
    assert type(y.grad_fn).__name__ == "ToCopyBackward0"
    assert y.cuda() is y and y.to("cuda") is y and y.to("cuda:0") is y
    z = y.to(ember.float64)
    assert z.device == y.device and z.dtype == ember.float64
    w = ember.zeros(3).to(y)  # to(other): other's dtype and device
    assert w.device == y.device and w.dtype == y.dtype
    assert y.cpu().device == ember.device("cpu")
    assert y.to("cpu", non_blocking=True).tolist() == [1.0, 2.0]
    assert repr(y * 2) == "tensor([2., 4.], device='cuda:0', grad_fn=<MulBackward0>)"
    assert repr(ember.zeros(2, dtype=ember.int32, device="cuda")) == (
        "tensor([0, 0], device='cuda:0', dtype=ember.int32)")
    assert y.sum().item() == 3.0 and y.tolist() == [1.0, 2.0] and float(y[0].detach()) == 1.0
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy. "
                                        r"Use Tensor.cpu\(\) to copy the tensor to host memory "
                                        "first."):
        y.detach().numpy()
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor"):
        np.asarray(y.detach())
    assert isinstance(y.numpy(force=True), np.ndarray)
    with pytest.raises(RuntimeError, match="Invalid device, must be cuda device"):
        x.cuda("cpu")


def test_gradients_come_back_to_each_inputs_device(cuda_device):
    a = ember.randn(3, requires_grad=True)
    b = ember.randn(3, device="cuda", requires_grad=True)
    loss = (a.cuda() * b).sum()
    loss.backward()
    assert a.grad.device.type == "cpu" and b.grad.device == ember.device("cuda:0")
    np.testing.assert_allclose(a.grad.numpy(), b.detach().cpu().numpy())
    np.testing.assert_allclose(b.grad.cpu().numpy(), a.detach().numpy())
    g, = ember.autograd.grad((b * b).sum(), b, create_graph=True)
    gg, = ember.autograd.grad(g.sum(), b)
    assert g.device == gg.device == b.device
    np.testing.assert_allclose(gg.cpu().numpy(), 2.0)


def test_mixing_devices_raises_torchs_error_but_cpu_scalars_mix(cuda_device):
    x = ember.ones(3, device="cuda", requires_grad=True)
    for bad in (lambda: x + ember.ones(3), lambda: ember.ones(3) * x,
                lambda: ember.cat([x, ember.ones(2)]), lambda: ember.ones(3, 3) @ x,
                lambda: x.detach().add_(ember.ones(3)),
                lambda: ember.ones(()).add_(x)):
        with pytest.raises(RuntimeError, match=MIXED):
            bad()
    s = ember.tensor(2.0, requires_grad=True)  # 0-dim CPU tensors and numbers mix
    y = x * s + 1.5
    assert y.device == x.device
    y.sum().backward()
    assert s.grad.device.type == "cpu" and s.grad.item() == 3.0
    assert x.grad.cpu().tolist() == [2.0, 2.0, 2.0]
    z = x.detach().clone()
    z.add_(ember.tensor(1.0))
    assert z.cpu().tolist() == [2.0, 2.0, 2.0]


def test_factories_and_like_forms_follow_device(cuda_device):
    x = ember.ones(2, 3, device="cuda")
    made = [ember.zeros(2, device="cuda"), ember.empty(2, device="cuda:0"),
            ember.full((2,), 3.0, device="cuda"), ember.eye(2, device="cuda"),
            ember.arange(3, device="cuda"), ember.linspace(0, 1, 3, device="cuda"),
            ember.tensor([1, 2], device="cuda"), ember.as_tensor([1.0], device="cuda"),
            ember.rand(2, device="cuda"), ember.randn(2, device="cuda"),
            ember.randint(0, 5, (2,), device="cuda"), ember.randperm(4, device="cuda"),
            ember.normal(0.0, 1.0, (2,), device="cuda"), ember.zeros_like(x),
            ember.ones_like(x), ember.empty_like(x), ember.full_like(x, 2.0),
            ember.rand_like(x), ember.randn_like(x), ember.randint_like(x, 3),
            x.new_zeros(2), x.new_ones(2), x.new_full((2,), 1.0), x.new_empty(2),
            x.new_tensor([1.0]), ember.tril_indices(3, 3, device="cuda"),
            ember.triu_indices(3, 3, device="cuda"), ember.logspace(0, 1, 3, device="cuda"),
            ember.empty_strided((2, 3), (1, 2), device="cuda"),
            ember.scalar_tensor(1.0, device="cuda"), ember.asarray([1.0], device="cuda"),
            ember.asarray(np.ones(2), device="cuda"), ember.asarray(ember.ones(2), device="cuda"),
            ember.hann_window(4, device="cuda"), ember.hamming_window(4, device="cuda"),
            ember.blackman_window(4, device="cuda"), ember.bartlett_window(4, device="cuda"),
            ember.kaiser_window(4, device="cuda"), ember.complex(x, x), ember.polar(x, x)]
    assert all(t.device == ember.device("cuda:0") for t in made)
    assert ember.zeros_like(x, device="cpu").device.type == "cpu"
    assert ember.tensor(x.tolist(), device=x.device).device == x.device
    assert ember.randperm(5, device="cuda").sort().values.cpu().tolist() == list(range(5))


def test_cuda_module_on_the_device(cuda_device):
    c = ember.cuda
    assert (c.is_available(), c.device_count(), c.current_device(), c.is_initialized()) == (
        True, 1, 0, True)
    props = c.get_device_properties(0)
    assert c.get_device_name() == props.name and c.get_device_capability() == (
        props.major, props.minor)
    assert repr(props).startswith(f"_CudaDeviceProperties(name='{props.name}', major=")
    c.set_device(0)
    with c.device(0):
        assert c.current_device() == 0
    with c.device_of(ember.ones(1, device="cuda")):
        assert c.current_device() == 0
    c.synchronize()
    c.reset_peak_memory_stats()
    before = c.memory_allocated()
    x = ember.zeros(1 << 16, device="cuda")
    assert c.memory_allocated() >= before + x.numel() * 4
    peak = c.max_memory_allocated()
    del x
    assert c.memory_allocated() < peak == c.max_memory_allocated()
    assert c.memory_reserved() >= c.memory_allocated()
    assert set(c.memory_stats()) >= {"allocated_bytes.all.current", "allocated_bytes.all.peak"}
    assert "Allocated memory" in c.memory_summary()
    c.empty_cache()
    start, end = c.Event(enable_timing=True), c.Event(enable_timing=True)
    start.record()
    ember.ones(100, device="cuda").sum()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0 and end.query()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        c.Event().elapsed_time(end)
    s = c.Stream()
    with c.stream(s):
        assert c.current_stream() == s
        y = ember.ones(2, device="cuda") + 1
    assert c.current_stream() == c.default_stream() and s.query()
    s.synchronize()
    assert y.cpu().tolist() == [2.0, 2.0]
    assert c.nvtx.range_push("step") == 0 and c.nvtx.range_pop() == 0
    with c.nvtx.range("step {}", 1):
        pass


def test_save_and_load_with_map_location(cuda_device):
    model = ember.nn.Linear(2, 2).cuda()
    buf = io.BytesIO()
    ember.save(model.state_dict(), buf)
    cases = [(None, "cuda:0"), ("cpu", "cpu"), (ember.device("cpu"), "cpu"),
             ({"cuda:0": "cpu"}, "cpu"), (lambda t, loc: t, "cpu"),
             (lambda t, loc: t.cuda(0), "cuda:0"), ("cuda", "cuda:0")]
    for where, expected in cases:
        buf.seek(0)
        state = ember.load(buf, map_location=where)
        assert {str(v.device) for v in state.values()} == {expected}, where
        np.testing.assert_array_equal(state["weight"].cpu().numpy(),
                                      model.weight.detach().cpu().numpy())
    cpu_buf = io.BytesIO()
    ember.save({"w": ember.ones(2)}, cpu_buf)
    cpu_buf.seek(0)
    assert ember.load(cpu_buf, map_location={"cpu": "cuda:0"})["w"].is_cuda
    base = ember.arange(6.0, device="cuda")
    views = io.BytesIO()
    ember.save([base, base[2:5]], views)
    for where in (None, lambda storage, loc: storage.cuda()):
        views.seek(0)
        b, v = ember.load(views, map_location=where)
        assert b.is_cuda and v.is_cuda
        b[3] = 100.0  # a view of its base on the device, as when it was saved
        assert v.tolist() == [2.0, 100.0, 4.0]


def test_module_to_moves_parameters_and_buffers_in_place(cuda_device):
    model = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.BatchNorm1d(3))
    weight = model[0].weight
    optimizer = ember.optim.Adam(model.parameters(), lr=0.1)
    model.to("cuda")
    assert model[0].weight is weight and weight.is_cuda
    assert model[1].running_mean.is_cuda and model[1].num_batches_tracked.is_cuda
    model(ember.randn(4, 2, device="cuda")).sum().backward()
    assert weight.grad.is_cuda
    optimizer.step()
    assert optimizer.state[weight]["exp_avg"].is_cuda
    assert not optimizer.state[weight]["step"].is_cuda  # torch keeps step on the CPU
    model.cpu()
    assert not weight.is_cuda and not weight.grad.is_cuda
    assert not model[1].running_var.is_cuda
    model.cuda()
    assert model[0].bias.is_cuda
    model.to(ember.float64)
    assert weight.dtype == ember.float64 and weight.is_cuda
    built = ember.nn.Conv2d(1, 2, 3, device="cuda")
    assert built.weight.is_cuda and built.bias.is_cuda


def test_dataloader_pin_memory_is_accepted(cuda_device):
    data = [ember.tensor([float(i)]) for i in range(4)]
    batches = list(ember.utils.data.DataLoader(data, batch_size=2, pin_memory=True))
    assert [b.tolist() for b in batches] == [[[0.0], [1.0]], [[2.0], [3.0]]]
    assert all(b.is_pinned() for b in batches)
    assert batches[0].to("cuda", non_blocking=True).is_cuda


def test_profiler_measures_cuda_time_per_op(cuda_device):
    from ember.profiler import ProfilerActivity, profile
    x = ember.randn(32, 32, device="cuda", requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        (x @ x).relu().sum().backward()
    events = {e.key: e for e in prof.key_averages()}
    assert events["aten::mm"].device_time_total > 0
    assert events["aten::mm"].self_device_time_total > 0
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=5)
    assert "Self CUDA" in table and "CUDA time avg" in table
    assert "Self CUDA time total:" in table
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with ember.autograd.profiler.profile(use_cuda=True) as legacy:
            (x * 2).sum()
    assert any(e.device_time_total > 0 for e in legacy.function_events)


def test_emit_nvtx_pushes_a_range_per_op_and_node(cuda_device):
    import fake_cupy
    log = fake_cupy.module().cuda.nvtx.log
    log.clear()
    x = ember.ones(2, device="cuda", requires_grad=True)
    with ember.autograd.profiler.emit_nvtx():
        (x * 2).sum().backward()
    pushed = [m for kind, m in log if kind == "push"]
    assert pushed[0].startswith("aten::mul, seq = ")
    seq = pushed[0].split("= ")[1]
    assert f"MulBackward0, stashed seq = {seq}" in pushed
    assert len(pushed) == len([1 for kind, _ in log if kind == "pop"])
    ember.cuda.profiler.start()
    ember.cuda.profiler.stop()
    with ember.cuda.profiler.profile():
        pass


def test_the_demo_trains_on_the_device(cuda_device, tmp_path, capsys):
    from ember import demo
    demo.main(["--epochs", "1", "--out", str(tmp_path), "--device", "cuda"])
    printed = capsys.readouterr().out
    assert "training on" in printed and "test accuracy" in printed
    table = (tmp_path / "profile.txt").read_text()
    assert "aten::convolution" in table and "Self CUDA" in table


def run_gpu_doc_example():
    """docs/gpu.md's example (torch's device idiom), run; what it printed."""
    import contextlib
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "gpu.md").read_text()
    (block,) = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(block, {})  # noqa: S102 - the documentation's example
    return printed.getvalue().strip()


def test_the_gpu_doc_example_trains_on_the_device(cuda_device):
    import re
    printed = run_gpu_doc_example()
    assert re.fullmatch(r"tensor\(2\.\d{4}, device='cuda:0', grad_fn=<NllLossBackward0>\)",
                        printed), printed


def test_python_callables_refuse_gpu_tensors_as_torch(cuda_device):
    x = ember.ones(2, device="cuda")
    with pytest.raises(TypeError, match="^apply_ is only implemented on CPU tensors$"):
        x.apply_(lambda v: v)
    with pytest.raises(TypeError, match="^map_ is only implemented on CPU tensors$"):
        x.map_(x, lambda a, b: a)


def test_python_callables_refuse_tensors_that_require_grad():
    def body(torch):
        x = torch.ones(2, requires_grad=True)
        out = []
        for f in (lambda: x.apply_(lambda v: v), lambda: x.map_(x, lambda a, b: a)):
            try:
                f()
            except RuntimeError as e:
                out.append(str(e))
        return out
    same(body)


def test_lazy_modules_build_where_their_placeholders_are(cuda_device):
    nn = ember.nn
    for make, x in [(lambda: nn.LazyLinear(3).to("cuda"), ember.ones(2, 4, device="cuda")),
                    (lambda: nn.LazyLinear(3, device="cuda"), ember.ones(2, 4, device="cuda")),
                    (lambda: nn.LazyBatchNorm1d().cuda(), ember.ones(2, 4, device="cuda")),
                    (lambda: nn.LazyConv1d(2, 3, device="cuda").cpu(), ember.ones(1, 2, 5))]:
        m = make()
        y = m(x)
        assert y.device == x.device
        assert all(t.device == x.device for t in [*m.parameters(), *m.buffers()])
    norm = nn.InstanceNorm1d(3, affine=True, track_running_stats=True).to("cuda")
    assert norm(ember.ones(2, 3, 4, device="cuda")).is_cuda and norm.running_mean.is_cuda


def test_set_default_device_places_the_factories_tensors(cuda_device):
    host = np.ones(2)
    ember.set_default_device("cuda")
    try:
        assert ember.get_default_device() == ember.device("cuda:0")
        made = [ember.zeros(2), ember.ones(2), ember.tensor([1.0]), ember.arange(3),
                ember.as_tensor(host), ember.full((2,), 1.0), ember.eye(2), ember.empty(2),
                ember.nn.Linear(2, 2).weight, ember.linspace(0, 1, 3)]
        assert all(t.device == ember.device("cuda:0") for t in made)
        ember.cuda.manual_seed(4)
        state = ember.get_rng_state()
        drawn = ember.rand(3)  # (from the GPU's generator: the CPU's stays where it was)
        assert drawn.is_cuda and ember.get_rng_state().tolist() == state.tolist()
        ember.cuda.manual_seed(4)
        assert ember.rand(3, device="cuda").tolist() == drawn.tolist()
        cpu = ember.zeros(2, device="cpu")
        assert not ember.ones_like(cpu).is_cuda and not cpu.new_ones(2).is_cuda
        assert not ember.from_numpy(host).is_cuda
    finally:
        ember.set_default_device(None)
    assert ember.get_default_device() == ember.device("cpu") and not ember.zeros(1).is_cuda



def test_lstsq_takes_the_devices_default_driver_and_refuses_others_on_cuda(cuda_device):
    # torch's default driver is gelsy on the CPU (no residuals) and gels on CUDA (residuals
    # when m > n), and CUDA has gels alone.
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    on_cpu = ember.linalg.lstsq(ember.tensor(a), ember.tensor(b))
    A, B = ember.tensor(a, device="cuda"), ember.tensor(b, device="cuda")
    on_gpu = ember.linalg.lstsq(A, B)
    np.testing.assert_allclose(on_gpu.solution.cpu().numpy(), on_cpu.solution.numpy())
    assert on_cpu.residuals.shape == (0,)
    expected = ((a @ on_cpu.solution.numpy() - b) ** 2).sum(0)
    np.testing.assert_allclose(on_gpu.residuals.cpu().numpy(), expected)
    assert on_gpu.residuals.is_cuda
    with pytest.raises(RuntimeError, match="`driver` other than `gels` is not supported on CUDA"):
        ember.linalg.lstsq(A, B, driver="gelsd")


def test_tensor_split_wants_its_index_tensor_on_the_cpu(cuda_device):
    x = ember.arange(6.0, device="cuda")
    parts = ember.tensor_split(x, ember.tensor([2, 4]))
    assert [p.tolist() for p in parts] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    with pytest.raises(RuntimeError, match="tensor_split expected tensor_indices_or_sections "
                                           "to be on cpu, but it's on cuda:0"):
        ember.tensor_split(x, ember.tensor([2, 4], device="cuda"))


@pytest.mark.parametrize("own, other", [("cpu", "cuda"), ("cuda", "cpu")])
def test_grad_from_another_device_is_refused_as_torch(cuda_device, own, other):
    """torch's check of the device type (its wording checked against torch on the meta
    device in test_tensor.py); a gradient on the tensor's device is taken."""
    x = ember.ones(2, device=own, requires_grad=True)
    with pytest.raises(RuntimeError) as e:
        x.grad = ember.ones(2, device=other)
    assert str(e.value) == (
        f"attempting to assign a gradient with device type '{other}' to a tensor with device "
        f"type '{own}'. Please ensure that the gradient and the tensor are on the same device")
    assert x.grad is None
    x.grad = ember.full((2,), 3.0, device=own)
    assert x.grad.device.type == own and x.grad.tolist() == [3.0, 3.0]

