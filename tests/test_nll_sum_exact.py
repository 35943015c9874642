"""nll_loss and cross_entropy on the CPU give torch's numbers to the last bit: the reduced
loss is summed in the input's dtype in torch's order (not a wider or pairwise sum), the mean
divides by torch's total weight, and the gradient uses that same total."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

DTYPES = ["float16", "float32", "float64"]


def _loss_and_grad(shape, dtype, reduction, weighted, ignore, seed):
    """A body for ``same``: the loss, the input's gradient and their sign bits."""
    def body(torch):
        rs = np.random.RandomState(seed)
        c = shape[1] if len(shape) > 1 else shape[0]
        tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
        t = rs.randint(0, c, tshape)
        ignore_index = -100
        if ignore == "every 16th":  # (at the samples where torch's partial sums move up)
            t.reshape(-1)[::16] = -100
        elif ignore == "a class":
            ignore_index = 1
        elif ignore in (-1, 255):  # (an index that wraps around, one past the classes)
            ignore_index = ignore
            t.reshape(-1)[1::3] = ignore
        x = torch.tensor((rs.randn(*shape) * 3).astype(dtype), requires_grad=True)
        w = torch.tensor((rs.rand(c) * 2).astype(dtype)) if weighted else None
        loss = torch.nn.functional.nll_loss(x, torch.tensor(t), w, ignore_index=ignore_index,
                                            reduction=reduction)
        up = torch.tensor(np.asarray(rs.randn(*loss.shape) * 2).astype(dtype))
        loss.backward(up)
        return loss, torch.signbit(loss), x.grad, torch.signbit(x.grad)
    return body


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 9, 17, 33, 64, 100, 257, 4097])  # (every level-1 case)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [None, "every 16th", "a class"])
def test_a_batch_reduces_as_torch(dtype, n, weighted, ignore):
    for reduction in ("mean", "sum"):
        same(_loss_and_grad((n, 5), dtype, reduction, weighted, ignore, n), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [17, 64])
@pytest.mark.parametrize("ignore_index", [-1, 255])
def test_ignored_samples_of_other_indices(dtype, n, ignore_index):
    # the gradient of the usual batch is written straight into its zeros unless a sample is
    # ignored: -1 would wrap around to the last class, 255 stops the write
    for reduction in ("mean", "sum"):
        same(_loss_and_grad((n, 5), dtype, reduction, False, ignore_index, n), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (4, 3, 9), (2, 3, 9, 7), (2, 3, 2, 3, 4)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_other_ranks_reduce_as_torch(dtype, shape, reduction):
    for weighted in (False, True):
        for ignore in (None, "a class"):
            same(_loss_and_grad(shape, dtype, reduction, weighted, ignore, len(shape)),
                 rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nll_loss_of_log_softmax_output(dtype):
    # log_softmax itself may differ from torch's in the last bit (torch's own exp): feed
    # both the same log-probabilities through nll_loss's path of cross_entropy's graph
    def body(torch):
        rs = np.random.RandomState(3)
        logp = torch.tensor(rs.randn(64, 10).astype(dtype)).log_softmax(1)
        logp = torch.tensor(logp.detach().numpy(), requires_grad=True)
        loss = torch.nn.functional.nll_loss(logp, torch.tensor(rs.randint(0, 10, 64)))
        loss.backward()
        return loss, logp.grad
    same(body, rtol=0, atol=0)


def test_special_values_and_empty_batches():
    def body(torch):
        big = torch.full((40, 3), -3e38)  # (the float32 sum overflows, as torch's)
        nan = torch.zeros(5, 3)
        nan[2, 1] = float("nan")
        t5 = torch.tensor([0, 1, 1, 0, 2])
        empty = torch.zeros(0, 3)
        none = torch.zeros(0, dtype=torch.int64)
        F = torch.nn.functional
        return (F.nll_loss(big, torch.zeros(40, dtype=torch.int64), reduction="sum"),
                F.nll_loss(nan, t5), F.nll_loss(-torch.zeros(5, 3), t5, reduction="sum"),
                F.nll_loss(empty, none), F.nll_loss(empty, none, reduction="sum"),
                F.nll_loss(nan, torch.full((5,), -100)),
                F.nll_loss(torch.ones(4, 2), torch.tensor([0, 1, 0, 1]),
                           torch.tensor([1.0, -1.0])),
                [torch.signbit(F.nll_loss(empty, none))])
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(64, 10), (512, 10), (200, 40), (5, 3), (20, 24),
                                   (16, 16), (100, 32)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_paths_of_a_matrix(shape, dtype):
    """The row paths of softmax and log_softmax (few rows, many short rows: a transposed
    copy, rows summed by a matrix-vector product, long rows, a transposed input) and
    cross_entropy's gradient through them."""
    def body(torch):
        rs = np.random.RandomState(shape[0])
        x = torch.tensor((rs.randn(*shape) * 4).astype(dtype), requires_grad=True)
        xt = torch.tensor((rs.randn(*shape[::-1]) * 4).astype(dtype)).t()
        loss = torch.nn.functional.cross_entropy(x, torch.tensor(rs.randint(0, shape[1],
                                                                             shape[0])))
        loss.backward()
        w = torch.tensor(rs.randn(*shape).astype(dtype))
        gs, = torch.autograd.grad((x.softmax(1) * w).sum(), x)
        return (x.log_softmax(1), x.softmax(-1), xt.log_softmax(1), xt.softmax(1), loss,
                x.grad, gs)
    same(body, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6)
