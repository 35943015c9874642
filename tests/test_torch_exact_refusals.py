"""Inputs torch refuses that ember used to accept: reflect and replicate padding of a tensor
with an empty channel (or unbatched first) dimension, renorm below two dimensions,
cartesian_prod of anything but 1-D tensors, repeat_interleave along a dimension of a 0-d
tensor, index_add of a source whose other dimensions differ from self's, and negative sizes
given to expand, max_pool1d of an empty channel or length, <, <=, >, >= of a real tensor and
a Python complex number; and what ember refused where torch computes: linear of an input with
no features. Each body runs on PyTorch and on ember
(``oracle.same``: the same exception type and message, or the same result); the tests skip
without torch.
"""
from __future__ import annotations

import pytest
from oracle import same

_PAD_CASES = [((0, 3), (1, 1)), ((2, 0, 3), (1, 1)), ((0, 2, 3), (1, 1)),
              ((2, 0, 3, 3), (1, 1, 1, 1)), ((0, 2, 3, 3), (1, 1, 1, 1)),
              ((2, 3, 0, 3), (1, 1, 0, 0)), ((2, 0, 2, 3, 3), (1,) * 6),
              ((0, 2, 2, 3, 3), (1,) * 6), ((3, 4), (2, 1))]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("case", _PAD_CASES, ids=str)
def test_pad_of_empty_dimensions(mode, case):
    shape, pad = case
    same(lambda t: t.nn.functional.pad(t.ones(shape, requires_grad=True), pad, mode=mode))


_CASES = {
    "renorm_1d": lambda t: t.tensor([1.0, 2.0]).renorm(2, 0, 1.0),
    "renorm_0d": lambda t: t.renorm(t.tensor(1.0), 2, 0, 1.0),
    "renorm_2d": lambda t: t.tensor([[1.0, 2.0], [3.0, 4.0]]).renorm(2, 0, 1.0),
    "cartesian_0d": lambda t: t.cartesian_prod(t.tensor(1.0), t.tensor(2.0)),
    "cartesian_one_0d": lambda t: t.cartesian_prod(t.tensor(1.0)),
    "cartesian_one_2d": lambda t: t.cartesian_prod(t.ones(2, 2)),
    "cartesian_mixed": lambda t: t.cartesian_prod(t.ones(2), t.tensor(2.0)),
    "cartesian_1d": lambda t: t.cartesian_prod(t.arange(2.0), t.arange(3.0)),
    "repeat_interleave_0d_dim": lambda t: t.tensor(2.0).repeat_interleave(2, dim=0),
    "repeat_interleave_0d_dim_last": lambda t: t.tensor(2.0).repeat_interleave(2, dim=-1),
    "repeat_interleave_0d_bad_dim": lambda t: t.tensor(2.0).repeat_interleave(2, dim=1),
    "repeat_interleave_0d_tensor": lambda t: t.tensor(2.0).repeat_interleave(
        t.tensor([2]), dim=0),
    "repeat_interleave_0d_flat": lambda t: t.tensor(2.0).repeat_interleave(2),
    "repeat_interleave_0d_tensor_flat": lambda t: t.tensor(2.0).repeat_interleave(
        t.tensor([3])),
    "index_add_0d_source": lambda t: t.zeros(3).index_add(0, t.tensor([1]), t.tensor(2.0)),
    "index_add__0d_source": lambda t: t.zeros(3).index_add_(0, t.tensor(1), t.tensor(2.0)),
    "index_add_0d_self": lambda t: t.zeros(()).index_add(0, t.tensor([0]), t.tensor([2.0])),
    "index_add_0d_both": lambda t: t.zeros(()).index_add(0, t.tensor([0]), t.tensor(2.0)),
    "index_add_other_dims": lambda t: t.zeros(3, 2).index_add(0, t.tensor([1]), t.ones(1, 3)),
    "index_add_more_dims": lambda t: t.zeros(3, 2).index_add(0, t.tensor([1]),
                                                            t.ones(1, 2, 1)),
    "index_add_dim_beyond_source": lambda t: t.zeros(3, 1).index_add(1, t.tensor([0]),
                                                                    t.ones(3)),
    "index_add_ok": lambda t: t.zeros(3, 2).index_add(1, t.tensor([1]), t.ones(3, 1),
                                                      alpha=2),
    "index_copy_0d_source": lambda t: t.zeros(3).index_copy(0, t.tensor([1]), t.tensor(2.0)),
    **{f"expand_{list(shape)}_to_{list(size)}": (
        lambda t, shape=shape, size=size: t.ones(shape, requires_grad=True).expand(*size))
       for shape, size in [((), (-1,)), ((), (-2,)), ((), (2, -1)), ((2,), (-1, 2)),
                           ((2,), (-2, 2)), ((2,), (3, -2)), ((2,), (-1,)), ((2,), (-2,)),
                           ((1,), (-3,)), ((2, 1), (2, -2)), ((2, 1), (-1, 3, -2)),
                           ((), ()), ((), (0,)), ((1,), (0,)), ((), (3,))]},
    "index_reduce_other_dims": lambda t: t.zeros(3, 2).index_reduce(
        0, t.tensor([1]), t.ones(1, 3), "prod"),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_refused_as_torch(name):
    same(_CASES[name])


_POOL_SHAPES = [(2, 0), (1, 2, 0), (1, 0, 3), (0, 3), (0, 2, 3), (2, 3), (4,), (1, 1, 1, 4)]


@pytest.mark.parametrize("return_indices", [False, True])
@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("shape", _POOL_SHAPES, ids=str)
def test_max_pool1d_of_empty_and_wrong_dimensions(shape, requires_grad, return_indices):
    same(lambda t: t.nn.functional.max_pool1d(t.zeros(shape, requires_grad=requires_grad), 2,
                                              1, return_indices=return_indices))


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("case", [((0,), (2, 0)), ((0,), (0, 0)), ((3, 0), (2, 0)),
                                  ((2, 3, 0), (2, 0)), ((2, 0, 3), (4, 3))], ids=str)
def test_linear_with_no_input_features(case, bias):
    # (ember refused a 1-D input with no elements: the rows it flattens to were given as -1)
    shape, weight = case

    def body(t):
        x = t.zeros(shape, requires_grad=True)
        out = t.nn.functional.linear(x, t.zeros(weight), t.ones(weight[0]) if bias else None)
        out.sum().backward()
        return out, out.grad_fn.name(), x.grad
    same(body)


_ORDER_WITH_COMPLEX = {
    "int_ge": lambda t: t.tensor([1, 2]) >= (2 + 1j),
    "reflected_le": lambda t: (2 + 1j) <= t.tensor([1, 2]),
    "half_gt": lambda t: t.tensor([1.0, 2.0], dtype=t.float16) > (1 + 0j),
    "bfloat16_lt": lambda t: t.tensor([1.0], dtype=t.bfloat16) < 1j,
    "double_lt": lambda t: t.lt(t.tensor([1.0], dtype=t.float64), 1j),
    "bool_le": lambda t: t.le(t.tensor([True]), 0j),
    "int_lt_": lambda t: t.tensor([1, 2]).lt_(1j),
    "complex_tensor": lambda t: t.tensor([1 + 1j]) < t.tensor([2 + 0j]),
    "eq_allowed": lambda t: t.tensor([1, 2]) == (2 + 0j),
}


@pytest.mark.parametrize("name", list(_ORDER_WITH_COMPLEX))
def test_ordering_with_a_complex_number(name):
    """<, <=, >, >= of a real tensor and a Python complex number: torch compares in the
    complex result dtype, which it has no loop for."""
    # (torch warns, once per process, that its ComplexHalf is experimental)
    same(_ORDER_WITH_COMPLEX[name], check_warnings=name != "half_gt")


_DTYPE_ARGUMENT = ["x.sum(dtype=torch.int32)", "x.sum(0, dtype=torch.bool)",
                   "x.cumsum(1, dtype=torch.int32)", "torch.nansum(x, 1, dtype=torch.int64)",
                   "x.prod(dtype=torch.bool)", "torch.cumprod(x, 1, dtype=torch.int64)",
                   "x.mean(dtype=torch.int64)", "torch.mean(x.detach(), 0, dtype=torch.bool)",
                   "x.sum(dtype=torch.float64)", "x.long()", "x.to(torch.uint8)",
                   "x.detach().sum(dtype=torch.int64)"]


@pytest.mark.parametrize("expr", _DTYPE_ARGUMENT)
def test_a_reduction_to_an_integer_dtype_of_a_tensor_that_requires_grad(expr):
    # torch's set_history refuses an integer result a history ("Autograd not support
    # dtype"), a conversion excepted; mean takes a float or complex dtype only
    def body(torch):
        x = torch.tensor([[0.5, 1.5], [-2.5, 3.0]], requires_grad=True)
        r = eval(expr, {"torch": torch, "x": x})  # noqa: S307 - the expression under test
        return r, r.requires_grad
    same(body)
