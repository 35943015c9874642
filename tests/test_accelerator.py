"""ember.accelerator against torch.accelerator: on the CPU (no accelerator) as torch's CPU build,
and on the CPU stand-in for a GPU (tests/fake_device.py) as a CUDA accelerator."""
from __future__ import annotations

import pytest

import ember
from oracle import same


def _no_gpu():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")


def test_without_an_accelerator_the_queries_answer_as_torchs_cpu_build():
    _no_gpu()

    def body(torch):
        a = torch.accelerator
        with a.device_index(None):
            pass
        return a.is_available(), a.current_accelerator(), a.current_accelerator(True), \
            a.device_count()
    same(body)


@pytest.mark.parametrize("call", [
    "a.current_device_index()", "a.current_device_idx()", "a.set_device_index(0)",
    "a.synchronize()", "a.current_stream()", "a.empty_cache()", "a.memory_allocated()",
    "a.max_memory_allocated()", "a.memory_reserved()", "a.max_memory_reserved()",
    "a.memory_stats()", "a.reset_peak_memory_stats()", "a.get_memory_info()",
    "a.device_index(0).__enter__()",
])
def test_without_an_accelerator_device_calls_raise_torchs_error(call):
    _no_gpu()
    same(lambda torch: eval(call, {"a": torch.accelerator}))


def test_a_program_picks_the_cpu_through_accelerator():
    _no_gpu()

    def body(torch):
        use = torch.accelerator.is_available()
        device = torch.accelerator.current_accelerator() if use else torch.device("cpu")
        return torch.nn.Linear(2, 1).to(device).weight.device.type
    same(body)


def test_the_accelerator_is_cuda_on_the_device(cuda_device):
    a = ember.accelerator
    assert a.is_available() and a.device_count() == 1
    assert a.current_accelerator() == ember.device("cuda")
    assert a.current_accelerator(check_available=True).type == "cuda"
    assert a.current_device_index() == 0
    with pytest.warns(FutureWarning, match="current_device_index"):
        assert a.current_device_idx() == 0
    a.set_device_index(0)
    with a.device_index(0):
        assert a.current_device_index() == 0
    a.synchronize()
    assert a.current_stream() == ember.cuda.current_stream()
    a.reset_peak_memory_stats()
    x = ember.zeros(1 << 14, device=a.current_accelerator())
    assert a.memory_allocated() >= x.numel() * 4
    assert a.max_memory_allocated() >= a.memory_allocated()
    assert a.memory_reserved() >= a.memory_allocated()
    assert "allocated_bytes.all.current" in a.memory_stats()
    free, total = a.get_memory_info()
    assert 0 <= free <= total
    a.empty_cache()
