"""ember.backends against torch.backends (torch's CPU build): the queries and the switches
programs set (``cudnn.benchmark = True``, ``cuda.matmul.allow_tf32 = True``, ...)."""
from __future__ import annotations

import pytest

import ember
from oracle import same


def _no_gpu():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")


def test_queries_answer_as_torchs_cpu_build():
    _no_gpu()

    def body(torch):
        import importlib
        b = importlib.import_module(torch.__name__ + ".backends")
        return (b.cudnn.is_available(), b.cudnn.version(), b.cudnn.is_acceptable(torch.ones(1)),
                b.mps.is_available(), b.mps.is_built(), b.cuda.is_built(),
                b.opt_einsum.is_available(), b.opt_einsum.enabled, b.opt_einsum.strategy)
    same(body)


def test_switches_keep_what_is_set_and_flags_restores_them():
    def body(torch):
        import importlib
        b = importlib.import_module(torch.__name__ + ".backends")
        cudnn, matmul = b.cudnn, b.cuda.matmul
        before = (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32,
                  cudnn.benchmark_limit, matmul.allow_tf32,
                  matmul.allow_fp16_reduced_precision_reduction,
                  matmul.allow_bf16_reduced_precision_reduction, b.cuda.flash_sdp_enabled(),
                  b.cuda.mem_efficient_sdp_enabled(), b.cuda.math_sdp_enabled())
        old = cudnn.benchmark, cudnn.deterministic, matmul.allow_tf32
        try:
            cudnn.benchmark, cudnn.deterministic, matmul.allow_tf32 = True, True, True
            b.cuda.enable_flash_sdp(False)
            set_ = cudnn.benchmark, cudnn.deterministic, matmul.allow_tf32, \
                b.cuda.flash_sdp_enabled()
            with cudnn.flags(enabled=False, deterministic=True):
                inside = cudnn.enabled, cudnn.benchmark, cudnn.deterministic
            after = cudnn.enabled, cudnn.benchmark, cudnn.deterministic
        finally:
            cudnn.benchmark, cudnn.deterministic, matmul.allow_tf32 = old
            b.cuda.enable_flash_sdp(True)
        return before, set_, inside, after
    same(body)


@pytest.mark.parametrize("code", ["matmul.foo", "setattr(matmul, 'foo', 1)"])
def test_unknown_matmul_switches_raise_torchs_error(code):
    def body(torch):
        import importlib
        matmul = importlib.import_module(torch.__name__ + ".backends").cuda.matmul
        return eval(code, {"matmul": matmul})
    same(body)


def test_every_backend_module_torch_has_imports():
    import importlib
    for name in ("cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"):
        assert importlib.import_module(f"ember.backends.{name}").__name__.endswith(name)


def test_tensors_answer_torchs_device_and_layout_flags():
    flags = ("is_cpu", "is_cuda", "is_xpu", "is_mps", "is_ipu", "is_maia", "is_mtia", "is_xla",
             "is_vulkan", "is_mkldnn", "is_quantized", "is_nested", "is_sparse",
             "is_sparse_csr", "is_meta")
    same(lambda torch: [getattr(torch.ones(2, requires_grad=True) * 2, f) for f in flags])
