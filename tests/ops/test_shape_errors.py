"""Shape and indexing ops refuse bad input with torch's exception type and message.

Same scheme as test_op_errors.py: each case runs on ember and (in the oracle test) on torch
2.13; "torch." in a message stands for "ember.".
"""
from __future__ import annotations

import pytest

import ember

from .error_cases import E, error_tests


def F(m):
    return m.nn.functional


def _i(m, *v):
    return m.tensor(list(v) if len(v) != 1 or not isinstance(v[0], list) else v[0])


CASES = [
    E('getitem_oob', lambda m: m.ones(3)[5], IndexError,
      'index 5 is out of bounds for dimension 0 with size 3'),
    E('getitem_list_oob', lambda m: m.ones(3)[[0, 5]], IndexError,
      'index 5 is out of bounds for dimension 0 with size 3'),
    E('getitem_neg_step', lambda m: m.ones(3)[::-1], ValueError, 'step must be greater than zero'),
    E('select_oob', lambda m: m.ones(3).select(0, 5), IndexError,
      'select(): index 5 out of range for tensor of size [3] at dimension 0'),
    E('select_0dim', lambda m: m.tensor(1.0).select(-1, 0), IndexError,
      'select() cannot be applied to a 0-dim tensor.'),
    E('select_0dim_bad_dim', lambda m: m.select(m.tensor(1.0), 5, 0), IndexError,
      'select() cannot be applied to a 0-dim tensor.'),
    E('transpose_dim', lambda m: m.ones(2, 3).transpose(0, 2), IndexError,
      'Dimension out of range (expected to be in range of [-2, 1], but got 2)'),
    E('transpose_0dim', lambda m: m.tensor(1.0).transpose(0, 1), IndexError,
      'Dimension out of range (expected to be in range of [-1, 0], but got 1)'),
    E('gather_oob', lambda m: m.ones(3, 4).gather(1, m.tensor([[5]])), RuntimeError,
      'index 5 is out of bounds for dimension 1 with size 4'),
    E('gather_ndim', lambda m: m.ones(3, 4).gather(1, m.tensor([1])), RuntimeError,
      'Index tensor must have the same number of dimensions as input tensor'),
    E('gather_size', lambda m: m.ones(3, 4).gather(1, m.zeros(4, 1, dtype=m.long)), RuntimeError,
      'Size does not match at dimension 0 expected index [4, 1] to be no larger than self '
      '[3, 4] apart from dimension 1'),
    E('gather_float_index', lambda m: m.ones(3, 4).gather(1, m.zeros(3, 1)), RuntimeError,
      'gather(): Expected dtype int32/int64 for index'),
    E('scatter_oob', lambda m: m.ones(3, 4).scatter(1, m.full((3, 1), 4), 1.0), RuntimeError,
      'index 4 is out of bounds for dimension 1 with size 4'),
    E('scatter_dtype', lambda m: m.ones(3, 4, dtype=m.float64).scatter(
        1, m.zeros(3, 1, dtype=m.long), m.ones(3, 1)), RuntimeError,
      'scatter(): Expected self.dtype to be equal to src.dtype'),
    E('scatter_reduce_arg', lambda m: m.ones(3).scatter(0, m.tensor([0]), m.ones(1), reduce="sum"),
      RuntimeError, 'reduce argument must be either add or multiply.'),
    E('index_select_oob', lambda m: m.ones(3).index_select(0, m.tensor([5])), IndexError,
      'index out of range in self'),
    E('index_select_2d', lambda m: m.ones(3).index_select(0, m.zeros(2, 2, dtype=m.long)),
      IndexError, 'index_select(): Index is supposed to be a vector'),
    # more than one dimension: dimension 1, and any dimension of an empty input, have torch's
    # other checks
    E('index_select_dim1_oob', lambda m: m.ones(1, 3).index_select(1, m.tensor([3, 1])),
      RuntimeError, 'INDICES element is out of DATA bounds, id=3 axis_dim=3'),
    E('index_select_dim1_negative', lambda m: m.ones(2, 3, 4).index_select(-2, m.tensor([-1])),
      RuntimeError, 'INDICES element is out of DATA bounds, id=-1 axis_dim=3'),
    E('index_select_dim2_oob', lambda m: m.ones(2, 3, 4).index_select(2, m.tensor([4])),
      IndexError, 'index out of range in self'),
    E('index_select_empty_oob', lambda m: m.ones(2, 0, 4).index_select(2, m.tensor([4])),
      RuntimeError, 'INDICES element is out of DATA bounds, id=4 axis_dim=4'),
    E('index_select_empty_dim', lambda m: m.ones(0, 3).index_select(0, m.tensor([0])),
      RuntimeError, 'index_select(): self indexing axis dim should be positive'),
    E('index_add_oob', lambda m: m.ones(3, 4).index_add(0, m.tensor([5]), m.ones(1, 4)),
      RuntimeError, 'index 5 is out of bounds for dimension 0 with size 3'),
    E('index_add_count', lambda m: m.ones(3, 4).index_add(0, m.tensor([0, 1]), m.ones(1, 4)),
      RuntimeError, 'index_add_(): Number of indices (2) should be equal to source.size(dim): '
      '(1), for dim: 0'),
    E('index_copy_oob', lambda m: m.ones(3, 4).index_copy(0, m.tensor([5]), m.ones(1, 4)),
      IndexError, 'index_copy_(): index 5 is out of bounds for dimension 0 with size 3'),
    E('index_fill_oob', lambda m: m.ones(3, 4).index_fill(0, m.tensor([5]), 1.0), IndexError,
      'index 5 is out of bounds for dimension 0 with size 3'),
    E('masked_fill_float_mask', lambda m: m.ones(3).masked_fill(m.zeros(3), 1.0), RuntimeError,
      'masked_fill_ only supports boolean masks, but got mask with dtype float'),
    E('masked_fill_value_dim', lambda m: m.ones(3).masked_fill(m.ones(3) > 0, m.zeros(2)),
      RuntimeError, 'masked_fill_ only supports a 0-dimensional value tensor, but got tensor '
      'with 1 dimension(s).'),
    E('masked_scatter_few', lambda m: m.ones(3).masked_scatter(m.ones(3) > 0, m.zeros(2)),
      RuntimeError, 'Number of elements of source < number of ones in mask'),
    E('take_oob', lambda m: m.ones(3, 4).take(m.tensor([12])), IndexError,
      'out of range: tried to access index 12 on a tensor of 12 elements.'),
    E('take_along_dim_ndim', lambda m: m.take_along_dim(m.ones(3, 4), m.tensor([1]), 1),
      RuntimeError, 'torch.take_along_dim(): input and indices should have the same number of '
      'dimensions, but got 2 dimensions for input, and 1 dimensions for indices'),
    E('tril_1d', lambda m: m.ones(3).tril(), RuntimeError,
      'tril: input tensor must have at least 2 dimensions'),
    E('diag_3d', lambda m: m.ones(2, 2, 2).diag(), RuntimeError,
      'diag(): Supports 1D or 2D tensors. Got 3D'),
    E('diagonal_same', lambda m: m.ones(2, 2).diagonal(0, 1, 1), RuntimeError,
      'diagonal dimensions cannot be identical 1, 1'),
    E('trace_1d', lambda m: m.ones(3).trace(), RuntimeError,
      'trace: expected a matrix, but got tensor with dim 1'),
    E('narrow_len', lambda m: m.ones(3).narrow(0, 2, 2), RuntimeError,
      'start (2) + length (2) exceeds dimension size (3).'),
    E('narrow_start', lambda m: m.ones(3).narrow(0, 5, 0), IndexError,
      'start out of range (expected to be in range of [-3, 3], but got 5)'),
    E('narrow_neg_len', lambda m: m.ones(3).narrow(0, 0, -1), RuntimeError,
      'narrow(): length must be non-negative.'),
    E('flip_dup', lambda m: m.ones(2, 2).flip(0, 0), RuntimeError,
      'dim 0 appears multiple times in the list of dims'),
    E('fliplr_1d', lambda m: m.ones(3).fliplr(), RuntimeError, 'Input must be >= 2-d.'),
    E('rot90_dims', lambda m: m.ones(2, 2).rot90(1, [0]), RuntimeError,
      'expected total rotation dims == 2, but got dims = 1'),
    E('rot90_same', lambda m: m.ones(2, 2).rot90(1, [0, 0]), RuntimeError,
      'expected rotation dims to be different, but got dim0 = 0 and dim1 = 0'),
    E('roll_align', lambda m: m.ones(2, 2).roll((1, 2), (0,)), RuntimeError,
      'shifts and dimensions must align. shifts: 2, dims:1'),
    E('repeat_few', lambda m: m.ones(2, 2).repeat(2), RuntimeError,
      'Number of dimensions of repeat dims can not be smaller than number of dimensions of '
      'tensor'),
    E('repeat_interleave_neg', lambda m: m.ones(2).repeat_interleave(-1), RuntimeError,
      'Repeats must be non-negative'),
    E('repeat_interleave_size', lambda m: m.ones(3).repeat_interleave(m.tensor([1, 2]), dim=0),
      RuntimeError, 'repeats must have the same size as input along dim, but got '
      'repeats.size(0) = 2 and input.size(0) = 3'),
    E('unflatten_sizes', lambda m: m.ones(3, 4).unflatten(1, (3, 2)), RuntimeError,
      "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 1 (4) in the input "
      'tensor'),
    E('movedim_len', lambda m: m.ones(2, 3).movedim((0, 1), (0,)), RuntimeError,
      'movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the '
      'same number of dims as destination ([0] dims)'),
    E('movedim_repeat', lambda m: m.ones(2, 3).movedim((0, 0), (0, 1)), RuntimeError,
      'movedim: repeated dim in `source` ([0, 0])'),
    E('tensor_split_zero', lambda m: m.ones(3).tensor_split(0), RuntimeError,
      'number of sections must be larger than 0, got 0'),
    E('squeeze_dup', lambda m: m.ones(1, 2).squeeze((0, 0)), RuntimeError,
      'dim 0 appears multiple times in the list of dims'),
    E('mT_1d', lambda m: m.ones(2).mT, RuntimeError,
      'tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.'),
    E('H_3d', lambda m: m.ones(2, 2, 2).H, RuntimeError,
      'tensor.H is only supported on matrices (2-D tensors). Got 3-D tensor. For batches of '
      'matrices, consider using tensor.mH'),
    E('pad_odd', lambda m: F(m).pad(m.ones(2, 3), (1,)), RuntimeError,
      'Padding length must be divisible by 2'),
    E('pad_long', lambda m: F(m).pad(m.ones(2, 3), (1, 1, 1, 1, 1, 1)), RuntimeError,
      'Padding length should be less than or equal to two times the input dimension but got '
      'padding length 6 and input of dimension 2'),
    E('pad_reflect_big', lambda m: F(m).pad(m.ones(1, 3, 4), (4, 4), mode="reflect"),
      RuntimeError, 'Argument #4: Padding size should be less than the corresponding input '
      'dimension, but got: padding (4, 4) at dimension 2 of input [1, 3, 4]'),
    E('pad_reflect_dims', lambda m: F(m).pad(m.ones(3, 4), (1, 1, 1, 1), mode="reflect"),
      NotImplementedError, 'Padding size 4 is not supported for 2D input tensor.\nSupported '
      'combinations for non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last '
      'dimension)\n  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D '
      'input: padding size = 6 (pads last 3 dimensions)'),
    E('pad_mode', lambda m: F(m).pad(m.ones(3, 4), (1, 1), mode="foo"), NotImplementedError,
      'Unrecognised padding mode foo'),
    E('pad_value', lambda m: F(m).pad(m.ones(1, 3, 4), (1, 1), mode="reflect", value=1.0),
      RuntimeError, 'Padding mode "reflect" doesn\'t take in value argument'),
    E('pad_circular_wrap', lambda m: F(m).pad(m.ones(1, 3, 4), (5, 1), mode="circular"),
      RuntimeError, 'Padding value causes wrapping around more than once.'),
]


test_case_ids_are_unique, test_ember_error, test_torch_error = error_tests(CASES)


def test_scatter_reduce_arg_is_not_differentiable():
    """scatter(reduce=...) records a NotImplemented node whose backward raises, as torch."""
    x = ember.ones(3, requires_grad=True)
    y = x.scatter(0, ember.tensor([0]), 2.0, reduce="add")
    assert type(y.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        y.sum().backward()


def test_inplace_indexing_on_leaf_and_versions():
    x = ember.ones(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.masked_fill_(x > 0, 1.0)
    y = x.clone()
    v = y._version
    y.index_fill_(0, ember.tensor([1]), 0.0).tril_().scatter_add_(
        0, ember.tensor([[0, 0, 0]]), ember.ones(1, 3))
    assert y._version == v + 3
    assert type(y.grad_fn).__name__ == "ScatterAddBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]


def test_diagonal_is_a_writable_view():
    x = ember.zeros(3, 3)
    d = x.diagonal()
    assert d._base is x
    d.add_(1.0)
    assert x.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
