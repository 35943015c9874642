"""On a real GPU (``pytest -m cuda``): ember's CUDA results against its CPU results and against
torch CUDA. Every test skips cleanly without CuPy and a GPU (CI has none: there the same paths
run on the CPU stand-in for CuPy, in test_device*.py and ops/test_ops_device.py).

GPU kernels round differently from the CPU's (cuBLAS, fused reductions, CUDA's libm), so
values are compared to 1e-7 relative in float64 and 1e-4 in float32, not bit for bit.
"""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from ops.op_db import OP_DB
from ops.test_ops import _main_dtype, _samples, bind, outputs
from ops.test_ops_device import check_on_device, device_cases

import ember

pytestmark = pytest.mark.cuda
if not ember.cuda.is_available():
    pytest.skip("no GPU (CuPy with a CUDA device is needed)", allow_module_level=True)
GPU_TOL = {"rtol": 1e-7, "atol": 1e-9}
F32_TOL = {"rtol": 1e-4, "atol": 1e-5}


@pytest.fixture(scope="module")
def gpu():
    return "cuda:0"


@pytest.fixture(scope="module")
def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    return torch


# -- the op table: the GPU against the CPU, and against torch CUDA --------------------------------
@pytest.mark.parametrize("row,i,dt", device_cases())
def test_op_table_on_the_gpu(row, i, dt, gpu):
    check_on_device(row, i, dt, gpu, F32_TOL if dt in ("float32", "complex64") else GPU_TOL)


def _torch_cases():
    out = []
    for row in OP_DB:
        if row.random or "test_forward_torch" in row.skips:
            continue
        dt = _main_dtype(row)
        out += [pytest.param(row, i, dt, id=f"{row.name}-{i}")
                for i in range(len(_samples(row.name, dt)))]
    return out


def _on(value, dev):
    if hasattr(value, "to") and hasattr(value, "requires_grad"):
        return value.detach().to(dev).requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_on(v, dev) for v in value)
    return value


def _run_torch_form(lib, fn, sample, row, dev):
    """``fn`` on ``sample`` with its tensors on ``dev``: the outputs on the host, or what it
    raised as ``(type, message)``."""
    args, kwargs, _ = bind(sample, lib)
    args = [a if k in row.host_args else _on(a, dev) for k, a in enumerate(args)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args, **{k: _on(v, dev) for k, v in kwargs.items()})
    except Exception as err:  # noqa: BLE001 - torch refuses: ember must refuse alike
        return (type(err), str(err))
    return [o.detach().cpu().numpy() for o in outputs(out) if hasattr(o, "detach")]


def _differences(mine, theirs, row_tol=(0.0, 0.0)):
    """Why two runs' results differ ('' when they agree); ``row_tol`` is the op table row's
    (rtol, atol) for the dtype, where it gives one."""
    if isinstance(mine, tuple) or isinstance(theirs, tuple):
        same = isinstance(mine, tuple) and isinstance(theirs, tuple)
        return "" if same else f"ember: {_brief(mine)}; torch: {_brief(theirs)}"
    for k, (a, b) in enumerate(zip(mine, theirs)):
        tol = F32_TOL if a.dtype in (np.float32, np.complex64) else GPU_TOL
        try:
            if a.dtype.kind in "fc":
                np.testing.assert_allclose(a, b, equal_nan=True, err_msg=f"output {k}",
                                           rtol=max(tol["rtol"], 1e-6, row_tol[0]),
                                           atol=max(tol["atol"], row_tol[1]))
            else:
                np.testing.assert_array_equal(a, b, err_msg=f"output {k}")
        except AssertionError as err:
            return str(err)
    return ""


def _brief(result):
    return f"raised {result[0].__name__}: {result[1]}" if isinstance(result, tuple) else "ran"


@pytest.mark.parametrize("row,i,dt", _torch_cases())
def test_ops_match_torch_cuda(row, i, dt, gpu, torch_cuda):
    sample = _samples(row.name, dt)[i]
    mine = _run_torch_form(ember, row.op, sample, row, "cuda")
    theirs = _run_torch_form(torch_cuda, row.torch_fn(torch_cuda), sample, row, "cuda")
    row_tol = row.tols.get(dt, (0.0, 0.0))
    why = _differences(mine, theirs, row_tol)
    if not why:
        return
    if isinstance(theirs, tuple) and "Expected all tensors to be on the same device" in theirs[1]:
        pytest.skip("the row's torch form makes tensors of its own on the CPU")
    # Where torch's CUDA kernels part from its CPU ones (the order of ties, what an empty bag
    # or a failed factorization leaves, a missing CUDA kernel, their own rounding), ember's
    # GPU results follow the CPU's: they must match torch on the CPU then.
    on_cpu = _run_torch_form(torch_cuda, row.torch_fn(torch_cuda), sample, row, "cpu")
    assert _differences(on_cpu, theirs, row_tol) and not _differences(mine, on_cpu, row_tol), why


# -- training: the benchmark workloads against torch CUDA ---------------------------------------
@pytest.mark.parametrize("name", ["w1", "w2", "w5", "w6"])
def test_workloads_match_torch_cuda(name, gpu, torch_cuda):
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from workloads import WORKLOADS, make_data
    build = WORKLOADS[name][3]
    data = {**make_data(name, small=True), "device": "cuda"}
    mine, theirs = build(ember, dict(data))(), build(torch_cuda, dict(data))()
    np.testing.assert_allclose(mine[0], theirs[0], **F32_TOL)
    np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", ["plain_autograd", "legendre", "nn_sequential", "nn_optim",
                                  "custom_module", "dynamic_net"])
def test_tutorials_on_the_gpu(name, gpu):
    import test_tutorials
    example = getattr(test_tutorials, name)
    on_gpu, printed = example(ember, gpu)
    on_cpu, cpu_printed = example(ember)
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-3)
    assert printed == cpu_printed


def test_the_demo_and_the_gpu_doc_example_on_the_gpu(gpu, tmp_path, capsys):
    import re

    from test_device import run_gpu_doc_example

    from ember import demo
    printed = run_gpu_doc_example()
    assert re.fullmatch(r"tensor\(2\.\d{4}, device='cuda:0', grad_fn=<NllLossBackward0>\)",
                        printed), printed
    demo.main(["--epochs", "1", "--out", str(tmp_path), "--device", "cuda"])
    printed = capsys.readouterr().out
    assert "training on" in printed and "test accuracy" in printed
    assert "Self CUDA" in (tmp_path / "profile.txt").read_text()


# -- devices, memory, timing ----------------------------------------------------------------------
def test_device_semantics_on_the_gpu(gpu):
    x = ember.randn(64, 64, requires_grad=True)
    y = x.cuda()
    assert y.is_cuda and y.device == ember.device(gpu) and y.get_device() == 0
    (y @ y).tanh().sum().backward()
    assert x.grad.device.type == "cpu"
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        y + x
    assert (y * ember.tensor(2.0)).is_cuda
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        y.detach().numpy()
    assert repr(ember.ones(2, device=gpu)) == "tensor([1., 1.], device='cuda:0')"


def test_cuda_module_on_the_gpu(gpu):
    c = ember.cuda
    assert c.device_count() >= 1 and c.current_device() == 0
    props = c.get_device_properties(0)
    assert props.total_memory > 0 and c.get_device_capability() == (props.major, props.minor)
    c.reset_peak_memory_stats()
    base = c.memory_allocated()
    x = ember.empty(1 << 20, device=gpu)
    assert c.memory_allocated() >= base + (1 << 22)
    assert c.max_memory_allocated() >= c.memory_allocated()
    del x
    start, end = c.Event(enable_timing=True), c.Event(enable_timing=True)
    a = ember.randn(1024, 1024, device=gpu)
    start.record()
    for _ in range(10):
        a = a @ a / 1024
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0
    s = c.Stream()
    with c.stream(s):
        b = a + 1
    s.synchronize()
    assert b.is_cuda
    c.manual_seed(3)
    r1 = ember.rand(5, device=gpu)
    c.manual_seed(3)
    assert ember.rand(5, device=gpu).tolist() == r1.tolist()
    host = ember.ones(1000).pin_memory()
    assert host.is_pinned() and host.to(gpu, non_blocking=True).sum().item() == 1000


def test_random_draws_on_the_gpu(gpu):
    from test_cuda_random import check_distributions, check_every_sampler_repeats
    check_every_sampler_repeats(gpu)
    check_distributions(gpu)
    state = ember.get_rng_state()
    ember.rand(100, device=gpu).sum().item()
    assert ember.get_rng_state().tolist() == state.tolist()  # (the CPU stream did not move)


def test_save_load_and_modules_on_the_gpu(gpu):
    model = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.BatchNorm1d(8)).cuda()
    buf = io.BytesIO()
    ember.save(model.state_dict(), buf)
    buf.seek(0)
    state = ember.load(buf)
    assert all(v.is_cuda for v in state.values())
    buf.seek(0)
    assert not ember.load(buf, map_location="cpu")["0.weight"].is_cuda
    opt = ember.optim.Adam(model.parameters())
    model(ember.randn(4, 8, device=gpu)).sum().backward()
    opt.step()
    assert opt.state[model[0].weight]["exp_avg"].is_cuda


def test_profiler_cuda_time_on_the_gpu(gpu):
    from ember.profiler import ProfilerActivity, profile
    a = ember.randn(512, 512, device=gpu, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        (a @ a).relu().sum().backward()
    mm = next(e for e in prof.key_averages() if e.key == "aten::mm")
    assert mm.device_time_total > 0
    assert "Self CUDA" in prof.key_averages().table()
    with ember.autograd.profiler.emit_nvtx():
        (a * 2).sum().backward()
