"""What an autocast region leaves behind: nothing. Ops first used inside one behave afterwards
as if the region had never been entered (here: the versions torch's kernels show on results
computed from inference tensors outside inference mode)."""
import pytest
from oracle import same

import ember
from ember._ops.registry import REGISTRY


def _first_use_inside(region, op_names):
    """Run ``region()`` after forgetting the generated paths of ``op_names``, so that it is
    their first use (as in a fresh process, whatever ran before in this one)."""
    for name in op_names:
        REGISTRY[name].caller = None
    region()


def _inference_matrix(t):
    with t.inference_mode():
        return t.tensor([[1., 4.], [3., 2.]]) * 1


def test_prod_after_a_cpu_autocast_region():
    pytest.importorskip("ml_dtypes")  # (CPU autocast's bfloat16)

    def region():
        with ember.autocast("cpu"):
            ember.rand(2, 2).prod(1)

    def body(t):
        if t is ember:
            _first_use_inside(region, ["prod"])
        x = _inference_matrix(t)
        return x.prod(1)._version, x.prod()._version
    same(body)


def test_einsum_trace_after_a_cuda_autocast_region():
    """The order that once failed: a cuda autocast region using einsum (it casts sum), then
    the trace of an inference tensor, whose sum lost the version torch's kernel shows."""
    from fake_device import installed

    def region():
        with installed():
            x = ember.rand(4, 4).to("cuda:0")
            with ember.autocast("cuda"):
                ember.einsum("ij,jk->ik", x, x).sum(0)

    def body(t):
        if t is ember:
            _first_use_inside(region, ["sum", "mm"])
        x = _inference_matrix(t)
        return t.einsum("ii", x)._version, x.sum(0)._version
    same(body)
