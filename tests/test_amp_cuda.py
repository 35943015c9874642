"""Autocast on a cuda device follows torch's CUDA op lists (float16 by default; float32 for
the precision-sensitive ops, with the ``dtype=`` ones left alone when given one; the widest
argument for the promote ops). torch's CUDA autocast cannot run without a GPU, so these are
checked against the dtypes torch's CUDA lists give; on the CPU the lists differ (test_amp.py).
Without a GPU, ``cuda`` is the CPU stand-in for CuPy (the ``cuda_device`` fixture)."""
import pytest

import ember

# (call, dtype of the result) inside ember.autocast("cuda") on float32 inputs x, w
CASES = [
    ("ember.mm(x, w)", "float16"), ("x @ w", "float16"), ("ember.nn.functional.linear(x, w)",
                                                        "float16"),
    ("ember.einsum('ij,jk->ik', x, w)", "float16"), ("ember.mv(x, w[0])", "float16"),
    ("x.exp()", "float32"), ("ember.log(x.abs())", "float32"), ("x.softmax(-1)", "float32"),
    ("x.sum()", "float32"), ("x.sum(dtype=ember.float64)", "float64"), ("x.cumsum(0)", "float32"),
    ("ember.nn.functional.layer_norm(x, (4,))", "float32"), ("x.relu()", "float32"),
    ("ember.mm(x, w).relu()", "float16"), ("ember.mm(x, w).exp()", "float32"),
    ("ember.addcmul(x, ember.mm(x, w), x)", "float32"),
    ("ember.addcmul(x.half(), x.half(), x.half())", "float16"),
    ("ember.mm(x.double(), w.double())", "float64"),
]


@pytest.mark.parametrize("call,expected", CASES)
def test_cuda_autocast_follows_torchs_cuda_lists(cuda_device, call, expected):
    g = ember.Generator().manual_seed(0)
    x = ember.rand(4, 4, generator=g).to(cuda_device)
    w = ember.rand(4, 4, generator=g).to(cuda_device)
    with ember.autocast("cuda"):
        out = eval(call)
    assert out.dtype is getattr(ember, expected) and out.device.type == "cuda"
    assert not ember.is_autocast_enabled("cuda")


def test_cpu_tensors_are_not_cast_in_a_cuda_region(cuda_device):
    x = ember.rand(3, 3)
    with ember.autocast("cuda"):
        assert ember.mm(x, x).dtype is ember.float32


def test_grad_scaler_on_cuda(cuda_device):
    model = ember.nn.Linear(3, 2).to(cuda_device)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cuda", init_scale=2.0 ** 8)
    loss = model(ember.ones(4, 3, device=cuda_device)).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.is_enabled() and scaler.get_scale() == 2.0 ** 8
    assert model.weight.device.type == "cuda"
