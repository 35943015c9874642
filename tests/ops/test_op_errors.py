"""Bad input raises torch's exception type with torch's message, word for word.

Each case runs the same code on ember and (in the oracle test) on torch 2.13. The expected
messages are torch's, copied from torch 2.13; where torch names its own module ("torch.cat()"),
ember is expected to name itself ("ember.cat()"). A case whose ember message or type differs is
a known ember bug, marked as a strict xfail with the reason.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest

import ember


@dataclass(frozen=True)
class E:
    """One error case: ``fn(m)`` with ``m`` ember or torch must raise ``exc(message)``."""

    id: str
    fn: object
    exc: type
    message: str
    xfail: str = ""  # the known ember bug, when ember's type or text differs


def F(m):
    return m.nn.functional


CASES = [
    E('bcast_add', lambda m: m.ones(3) + m.ones(2), RuntimeError,
      'The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0'),
    E('bcast_mul_2d', lambda m: m.mul(m.ones(2, 3), m.ones(2, 2)), RuntimeError,
      'The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1'),
    E('bcast_sub', lambda m: m.sub(m.ones(4, 1), m.ones(3, 1)), RuntimeError,
      'The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 0'),
    E('bcast_div', lambda m: m.ones(3) / m.ones(2), RuntimeError,
      'The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0'),
    E('bcast_maximum', lambda m: m.maximum(m.ones(3), m.ones(2)), RuntimeError,
      'The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0'),
    E('bcast_eq', lambda m: m.ones(3) == m.ones(2), RuntimeError,
      'The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0'),
    E('bcast_where', lambda m: m.where(m.ones(3) > 0, m.ones(3), m.ones(2)), RuntimeError,
      'The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0'),
    E('bcast_pow', lambda m: m.ones(3) ** m.ones(2), RuntimeError,
      'The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0'),
    E('bcast_inplace_out', lambda m: m.zeros(3).add_(m.zeros(2, 3)), RuntimeError,
      "output with shape [3] doesn't match the broadcast shape [2, 3]"),
    E('bcast_mse', lambda m: F(m).mse_loss(m.ones(3), m.ones(2)), RuntimeError,
      'The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0'),
    E('mm_dtype', lambda m: m.mm(m.ones(2, 3), m.ones(3, 2, dtype=m.float64)), RuntimeError,
      'expected m1 and m2 to have the same dtype, but got: float != double'),
    E('mm_dtype_rev', lambda m: m.mm(m.ones(2, 3, dtype=m.float64), m.ones(3, 2)), RuntimeError,
      'expected m1 and m2 to have the same dtype, but got: double != float'),
    E('mm_shape', lambda m: m.mm(m.ones(2, 3), m.ones(4, 5)), RuntimeError,
      'mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)'),
    E('mm_1d', lambda m: m.mm(m.ones(3), m.ones(3, 2)), RuntimeError,
      'self must be a matrix'),
    E('mm_1d_rhs', lambda m: m.mm(m.ones(2, 3), m.ones(3)), RuntimeError,
      'mat2 must be a matrix'),
    E('mv_shape', lambda m: m.mv(m.ones(2, 3), m.ones(4)), RuntimeError,
      'size mismatch, got input (2), mat (2x3), vec (4)'),
    E('mv_2d', lambda m: m.mv(m.ones(2, 3), m.ones(3, 1)), RuntimeError,
      'vector + matrix @ vector expected, got 1, 2, 2'),
    E('mv_dtype', lambda m: m.mv(m.ones(2, 3), m.ones(3, dtype=m.float64)), RuntimeError,
      'addmv input tensors must have the same dtype, but got Double, Float, and Double'),
    E('dot_shape', lambda m: m.dot(m.ones(3), m.ones(4)), RuntimeError,
      'inconsistent tensor size, expected tensor [3] and src [4] to have the same number of '
      'elements, but got 3 and 4 elements respectively'),
    E('dot_2d', lambda m: m.dot(m.ones(2, 2), m.ones(2, 2)), RuntimeError,
      '1D tensors expected, but got 2D and 2D tensors'),
    E('dot_dtype', lambda m: m.dot(m.ones(3), m.ones(3, dtype=m.float64)), RuntimeError,
      'dot : expected both vectors to have same dtype, but found Float and Double'),
    E('bmm_shape', lambda m: m.bmm(m.ones(2, 3, 4), m.ones(2, 3, 4)), RuntimeError,
      'Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 3].'),
    E('bmm_batch', lambda m: m.bmm(m.ones(2, 3, 4), m.ones(3, 4, 5)), RuntimeError,
      'Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4].'),
    E('bmm_2d', lambda m: m.bmm(m.ones(3, 4), m.ones(2, 4, 5)), RuntimeError,
      'batch1 must be a 3D tensor'),
    E('bmm_dtype', lambda m: m.bmm(m.ones(2, 3, 4), m.ones(2, 4, 5, dtype=m.float64)), RuntimeError,
      'expected scalar type Float but found Double'),
    E('matmul_0d', lambda m: m.matmul(m.tensor(1.0), m.ones(3)), RuntimeError,
      'both arguments to matmul need to be at least 1D, but they are 0D and 1D'),
    E('matmul_shape', lambda m: m.ones(2, 3) @ m.ones(2, 3), RuntimeError,
      'mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)'),
    E('matmul_1d_shape', lambda m: m.ones(3) @ m.ones(4), RuntimeError,
      'inconsistent tensor size, expected tensor [3] and src [4] to have the same number of '
      'elements, but got 3 and 4 elements respectively'),
    E('addmm_shape', lambda m: m.addmm(m.ones(2, 2), m.ones(2, 3), m.ones(4, 2)), RuntimeError,
      'mat1 and mat2 shapes cannot be multiplied (2x3 and 4x2)'),
    E('linear_shape', lambda m: F(m).linear(m.ones(2, 3), m.ones(4, 5)), RuntimeError,
      'mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)'),
    E('view_size', lambda m: m.ones(2, 3).view(4), RuntimeError,
      "shape '[4]' is invalid for input of size 6"),
    E('view_infer', lambda m: m.ones(2, 3).view(-1, 4), RuntimeError,
      "shape '[-1, 4]' is invalid for input of size 6"),
    E('view_two_infer', lambda m: m.ones(2, 3).view(-1, -1), RuntimeError,
      'only one dimension can be inferred'),
    E('view_noncontig', lambda m: m.ones(2, 3).t().view(6), RuntimeError,
      "view size is not compatible with input tensor's size and stride (at least one dimension "
      'spans across two contiguous subspaces). Use .reshape(...) instead.'),
    E('reshape_size', lambda m: m.ones(2, 3).reshape(5), RuntimeError,
      "shape '[5]' is invalid for input of size 6"),
    E('dim_sum', lambda m: m.ones(2, 3).sum(2), IndexError,
      'Dimension out of range (expected to be in range of [-2, 1], but got 2)'),
    E('dim_sum_neg', lambda m: m.ones(2, 3).sum(-3), IndexError,
      'Dimension out of range (expected to be in range of [-2, 1], but got -3)'),
    E('dim_mean_tuple', lambda m: m.ones(2, 3).mean((0, 5)), IndexError,
      'Dimension out of range (expected to be in range of [-2, 1], but got 5)'),
    E('dim_max', lambda m: m.ones(2, 3).max(3), IndexError,
      'Dimension out of range (expected to be in range of [-2, 1], but got 3)'),
    E('dim_transpose', lambda m: m.ones(2, 3).transpose(0, 2), IndexError,
      'Dimension out of range (expected to be in range of [-2, 1], but got 2)'),
    E('dim_unsqueeze', lambda m: m.ones(2, 3).unsqueeze(4), IndexError,
      'Dimension out of range (expected to be in range of [-3, 2], but got 4)'),
    E('dim_squeeze', lambda m: m.ones(2, 3).squeeze(2), IndexError,
      'Dimension out of range (expected to be in range of [-2, 1], but got 2)'),
    E('dim_select', lambda m: m.ones(2, 3).select(2, 0), IndexError,
      'Dimension out of range (expected to be in range of [-2, 1], but got 2)'),
    E('dim_size', lambda m: m.ones(2, 3).size(2), IndexError,
      'Dimension out of range (expected to be in range of [-2, 1], but got 2)'),
    E('dim_0d_sum', lambda m: m.tensor(1.0).sum(1), IndexError,
      'Dimension out of range (expected to be in range of [-1, 0], but got 1)'),
    E('dim_cat', lambda m: m.cat([m.ones(2), m.ones(2)], 1), IndexError,
      'Dimension out of range (expected to be in range of [-1, 0], but got 1)'),
    E('dim_norm', lambda m: m.ones(2, 3).norm(dim=2), IndexError,
      'Dimension out of range (expected to be in range of [-2, 1], but got 2)'),
    E('dim_repeated', lambda m: m.ones(2, 3).sum((0, 0)), RuntimeError,
      'dim 0 appears multiple times in the list of dims'),
    E('permute_len', lambda m: m.ones(2, 3).permute(0, 1, 2), RuntimeError,
      'permute(sparse_coo): number of dimensions in the tensor input does not match the length of'
      ' the desired ordering of dimensions i.e. input.dim() = 2 is not equal to len(dims) = 3'),
    E('index_int', lambda m: m.ones(3)[5], IndexError,
      'index 5 is out of bounds for dimension 0 with size 3'),
    E('index_neg', lambda m: m.ones(3, 2)[-4], IndexError,
      'index -4 is out of bounds for dimension 0 with size 3'),
    E('index_col', lambda m: m.ones(3, 2)[:, 2], IndexError,
      'index 2 is out of bounds for dimension 1 with size 2'),
    E('index_select', lambda m: m.ones(3, 2).select(1, 7), IndexError,
      'select(): index 7 out of range for tensor of size [3, 2] at dimension 1'),
    E('index_list', lambda m: m.ones(3)[[0, 5]], IndexError,
      'index 5 is out of bounds for dimension 0 with size 3'),
    E('index_tensor', lambda m: m.ones(3)[m.tensor([0, 3])], IndexError,
      'index 3 is out of bounds for dimension 0 with size 3'),
    E('index_too_many', lambda m: m.ones(3, 2)[0, 0, 0], IndexError,
      'too many indices for tensor of dimension 2'),
    E('index_float', lambda m: m.ones(3)[m.tensor([0.5])], IndexError,
      'tensors used as indices must be long, int, byte or bool tensors'),
    E('index_neg_step', lambda m: m.ones(3)[::-1], ValueError,
      'step must be greater than zero'),
    E('setitem_index', lambda m: m.ones(3).__setitem__(4, 1.0), IndexError,
      'index 4 is out of bounds for dimension 0 with size 3'),
    E('t_3d', lambda m: m.ones(2, 3, 4).t(), RuntimeError,
      't() expects a tensor with <= 2 dimensions, but self is 3D'),
    E('mean_int', lambda m: m.tensor([1, 2]).mean(), RuntimeError,
      'mean(): could not infer output dtype. Input dtype must be either a floating point or '
      'complex dtype. Got: Long'),
    E('mean_int_dim', lambda m: m.tensor([[1, 2]]).mean(1), RuntimeError,
      'mean(): could not infer output dtype. Input dtype must be either a floating point or '
      'complex dtype. Got: Long'),
    E('mean_bool', lambda m: m.tensor([True]).mean(), RuntimeError,
      'mean(): could not infer output dtype. Input dtype must be either a floating point or '
      'complex dtype. Got: Bool'),
    E('pow_int_neg', lambda m: m.tensor([1, 2]) ** -1, RuntimeError,
      'Integers to negative integer powers are not allowed.'),
    E('pow_int_neg_fn', lambda m: m.pow(m.tensor([1, 2]), -2), RuntimeError,
      'Integers to negative integer powers are not allowed.'),
    E('inplace_cast_add', lambda m: m.tensor([1, 2]).add_(1.5), RuntimeError,
      "result type Float can't be cast to the desired output type Long"),
    E('inplace_cast_mul', lambda m: m.tensor([1, 2]).mul_(m.tensor([1.5, 2.0])), RuntimeError,
      "result type Float can't be cast to the desired output type Long"),
    E('inplace_cast_exp', lambda m: m.tensor([1, 2]).exp_(), RuntimeError,
      "result type Float can't be cast to the desired output type Long"),
    E('inplace_cast_div', lambda m: m.tensor([1, 2]).div_(2), RuntimeError,
      "result type Float can't be cast to the desired output type Long"),
    E('inplace_cast_bool', lambda m: m.tensor([True]).add_(1), RuntimeError,
      "result type Long can't be cast to the desired output type Bool"),
    E('inplace_cast_iadd', lambda m: m.tensor([1, 2]).__iadd__(0.5), RuntimeError,
      "result type Float can't be cast to the desired output type Long"),
    E('clamp_none', lambda m: m.clamp(m.ones(3)), RuntimeError,
      "torch.clamp: At least one of 'min' or 'max' must not be None"),
    E('sub_bool', lambda m: m.tensor([True]) - m.tensor([False]), RuntimeError,
      'Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or '
      '`logical_xor()` operator instead.'),
    E('neg_bool', lambda m: -m.tensor([True]), RuntimeError,
      'Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert'
      ' a mask, use the `~` or `logical_not()` operator instead.'),
    E('alpha_float_int', lambda m: m.add(m.tensor([1]), m.tensor([2]), alpha=0.5), RuntimeError,
      'For integral input tensors, argument alpha must not be a floating point number.'),
    E('bitwise_float', lambda m: m.bitwise_and(m.ones(2), m.ones(2)), NotImplementedError,
      '"bitwise_and_cpu" not implemented for \'Float\''),
    E('bitwise_not_float', lambda m: ~m.ones(2), TypeError,
      '~ (operator.invert) is only implemented on integer and Boolean-type tensors'),
    E('bitwise_not_fn_float', lambda m: m.bitwise_not(m.ones(2)), NotImplementedError,
      '"bitwise_not_cpu" not implemented for \'Float\''),
    E('max_empty', lambda m: m.ones(0).max(), RuntimeError,
      'max(): Expected reduction dim to be specified for input.numel() == 0. Specify the '
      "reduction dim with the 'dim' argument."),
    E('min_empty', lambda m: m.ones(0, 2).min(), RuntimeError,
      'min(): Expected reduction dim to be specified for input.numel() == 0. Specify the '
      "reduction dim with the 'dim' argument."),
    E('norm_int', lambda m: m.tensor([1, 2]).norm(), RuntimeError,
      'linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long'),
    E('expand_size', lambda m: m.ones(2, 3).expand(3, 3), RuntimeError,
      'The expanded size of the tensor (3) must match the existing size (2) at non-singleton '
      'dimension 0.  Target sizes: [3, 3].  Tensor sizes: [2, 3]'),
    E('expand_fewer', lambda m: m.ones(2, 3).expand(3), RuntimeError,
      'expand(torch.FloatTensor{[2, 3]}, size=[3]): the number of sizes provided (1) must be '
      'greater or equal to the number of dimensions in the tensor (2)'),
    E('expand_lead_minus1', lambda m: m.ones(3).expand(-1, 3), RuntimeError,
      "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"),
    E('cat_empty_list', lambda m: m.cat([]), ValueError,
      'torch.cat(): expected a non-empty list of Tensors'),
    E('cat_0d', lambda m: m.cat([m.tensor(1.0), m.tensor(2.0)]), RuntimeError,
      'zero-dimensional tensor (at position 0) cannot be concatenated'),
    E('cat_sizes', lambda m: m.cat([m.ones(2, 3), m.ones(2, 2)]), RuntimeError,
      'Sizes of tensors must match except in dimension 0. Expected size 3 but got size 2 for '
      'tensor number 1 in the list.'),
    E('cat_ndim', lambda m: m.cat([m.ones(2, 3), m.ones(3)]), RuntimeError,
      'Tensors must have same number of dimensions: got 2 and 1'),
    E('stack_sizes', lambda m: m.stack([m.ones(2), m.ones(3)]), RuntimeError,
      'stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1'),
    E('stack_empty', lambda m: m.stack([]), RuntimeError,
      'stack expects a non-empty TensorList'),
    E('split_sizes', lambda m: m.ones(4).split([1, 2]), RuntimeError,
      "split_with_sizes expects split_sizes to sum exactly to 4 (input tensor's size at dimension"
      ' 0), but got split_sizes=[1, 2]'),
    E('chunk_zero', lambda m: m.ones(4).chunk(0), RuntimeError,
      'chunk expects `chunks` to be greater than 0, got: 0'),
    E('where_cond_dtype', lambda m: m.where(m.tensor([1, 0]), m.ones(2), m.zeros(2)), RuntimeError,
      'where expected condition to be a boolean tensor, but got a tensor with dtype Long'),
    E('reduction_invalid', lambda m: F(m).mse_loss(m.ones(2), m.ones(2), reduction="avg"),
      ValueError,
      'avg is not a valid value for reduction'),
    E('bce_target_size', lambda m: F(m).binary_cross_entropy_with_logits(m.ones(3), m.ones(2)),
      ValueError,
      'Target size (torch.Size([2])) must be the same as input size (torch.Size([3]))'),
    E('flatten_order', lambda m: m.ones(2, 3, 4).flatten(2, 1), RuntimeError,
      'flatten() has invalid args: start_dim cannot come after end_dim'),
    E('requires_grad_int', lambda m: m.tensor([1, 2]).requires_grad_(), RuntimeError,
      'only Tensors of floating point dtype can require gradients'),
    E('item_many', lambda m: m.ones(2).item(), RuntimeError,
      'a Tensor with 2 elements cannot be converted to Scalar'),
]


def _params(for_ember):
    out = []
    for c in CASES:
        marks = [pytest.mark.xfail(reason=c.xfail, strict=True)] if c.xfail and for_ember else []
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


def _raised(fn, m):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as info:
            fn(m)
    return info.value


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("case", _params(for_ember=True))
def test_ember_error(case: E):
    """ember raises torch's exception type with torch's message (torch. -> ember.)."""
    err = _raised(case.fn, ember)
    expected = case.message.replace("torch.", "ember.")
    assert (type(err).__name__, str(err)) == (case.exc.__name__, expected)


@pytest.mark.parametrize("case", _params(for_ember=False))
def test_torch_error(case: E):
    """The expected text is still what torch 2.13 says (guards the table itself)."""
    torch = pytest.importorskip("torch")
    err = _raised(case.fn, torch)
    assert (type(err).__name__, str(err)) == (case.exc.__name__, case.message)
