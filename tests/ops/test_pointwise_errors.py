"""Pointwise ops refuse bad input with torch's exception type and message, word for word.

Each case runs on ember and (in the oracle test) on torch 2.13; the expected messages are
torch's ("torch." becomes "ember." for ember). ``prefix=True`` compares only the message's
start (torch's argument-parser errors go on to list every overload).
"""
from __future__ import annotations

from .error_cases import E, error_tests


def _bcast(a, b, dim=0):
    return (f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
            f"non-singleton dimension {dim}")


def _i(m, *values):
    return m.tensor(list(values))


def _b(m):
    return m.tensor([True, False])


def _f(m):
    return m.tensor([1.5, -2.5])


_SUB_ONE = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
_SUB_TWO = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
            "`^` or `logical_xor()` operator instead.")
_ALPHA = "For integral input tensors, argument alpha must not be a floating point number."
_CAST = "result type {} can't be cast to the desired output type {}"
_ADDCDIV = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv "
    "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
    "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
    "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
    "addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
    "tensor2), for all dtypes.")

CASES = [
    # -- shapes that don't broadcast --------------------------------------------------------
    E("bcast_atan2", lambda m: m.atan2(m.ones(3), m.ones(2)), RuntimeError, _bcast(3, 2)),
    E("bcast_fmod", lambda m: m.fmod(m.ones(3), m.ones(2)), RuntimeError, _bcast(3, 2)),
    E("bcast_remainder", lambda m: m.ones(2) % m.ones(3), RuntimeError, _bcast(2, 3)),
    E("bcast_floor_divide", lambda m: m.ones(2) // m.ones(3), RuntimeError, _bcast(2, 3)),
    E("bcast_xlogy", lambda m: m.xlogy(m.ones(3), m.ones(2)), RuntimeError, _bcast(3, 2)),
    E("bcast_hypot", lambda m: m.hypot(m.ones(2, 3), m.ones(2, 2)), RuntimeError,
      _bcast(3, 2, 1)),
    E("bcast_lerp", lambda m: m.lerp(m.ones(3), m.ones(2), 0.5), RuntimeError, _bcast(3, 2)),
    E("bcast_addcmul", lambda m: m.addcmul(m.ones(3), m.ones(2), m.ones(3)), RuntimeError,
      _bcast(3, 2)),
    E("bcast_clamp", lambda m: m.clamp(m.ones(3), m.ones(2)), RuntimeError, _bcast(3, 2)),
    E("bcast_logical_and", lambda m: m.logical_and(m.ones(2), m.ones(3)), RuntimeError,
      _bcast(2, 3)),
    E("bcast_fmax", lambda m: m.fmax(m.ones(4, 1), m.ones(3, 1)), RuntimeError, _bcast(4, 3)),
    # -- dtypes a kernel refuses --------------------------------------------------------------
    E("sub_bool_scalar", lambda m: m.sub(_b(m), 1), RuntimeError, _SUB_ONE),
    E("sub_bool_bool_scalar", lambda m: m.sub(_b(m), True), RuntimeError, _SUB_TWO),
    E("sub_int_bool", lambda m: m.sub(_i(m, 1, 2), _b(m)), RuntimeError, _SUB_ONE),
    E("rsub_bool", lambda m: 2 - _b(m), RuntimeError, _SUB_ONE),
    E("sub_inplace_bool", lambda m: m.ones(2).sub_(_b(m)), RuntimeError, _SUB_ONE),
    E("add_alpha_float", lambda m: m.add(_i(m, 1, 2), _i(m, 1, 2), alpha=0.5), RuntimeError,
      _ALPHA),
    E("add_alpha_bool", lambda m: m.add(_f(m), _f(m), alpha=True), RuntimeError,
      "Boolean alpha only supported for Boolean results."),
    E("pow_bool_bool", lambda m: m.pow(_b(m), _b(m)), NotImplementedError,
      "\"pow\" not implemented for 'Bool'"),
    E("rpow_bool", lambda m: True ** _b(m), NotImplementedError,
      "\"pow\" not implemented for 'Bool'"),
    E("pow_int_neg", lambda m: _i(m, 1, 2) ** -1, RuntimeError,
      "Integers to negative integer powers are not allowed."),
    E("relu_bool", lambda m: m.relu(_b(m)), RuntimeError,
      "Boolean inputs not supported for relu"),
    E("bitwise_float", lambda m: m.bitwise_and(_f(m), _f(m)), NotImplementedError,
      "\"bitwise_and_cpu\" not implemented for 'Float'"),
    E("bitwise_int_float_scalar", lambda m: _i(m, 1, 2) | 1.5, NotImplementedError,
      "\"bitwise_or_cpu\" not implemented for 'Float'"),
    E("bitwise_not_float", lambda m: m.bitwise_not(_f(m)), NotImplementedError,
      "\"bitwise_not_cpu\" not implemented for 'Float'"),
    E("invert_float", lambda m: ~_f(m), TypeError,
      "~ (operator.invert) is only implemented on integer and Boolean-type tensors"),
    E("lshift_float", lambda m: _i(m, 1, 2) << m.ones(2), NotImplementedError,
      "\"lshift_cpu\" not implemented for 'Float'"),
    E("where_long_cond", lambda m: m.where(_i(m, 1, 0), _f(m), _f(m)), RuntimeError,
      "where expected condition to be a boolean tensor, but got a tensor with dtype Long"),
    E("where_float_cond", lambda m: m.where(_f(m), _f(m), _f(m)), RuntimeError,
      "where expected condition to be a boolean tensor, but got a tensor with dtype Float"),
    E("floor_bool", lambda m: m.floor(_b(m)), NotImplementedError,
      "\"floor_vml_cpu\" not implemented for 'Bool'"),
    E("round_bool", lambda m: m.round(_b(m)), NotImplementedError,
      "\"round_vml_cpu\" not implemented for 'Bool'"),
    E("round_decimals_int", lambda m: m.round(_i(m, 1, 2), decimals=1), NotImplementedError,
      "\"round_cpu\" not implemented for 'Long'"),
    E("frac_int", lambda m: m.frac(_i(m, 1, 2)), NotImplementedError,
      "\"frac_cpu\" not implemented for 'Long'"),
    E("positive_bool", lambda m: m.positive(_b(m)), RuntimeError,
      "The `+` operator, on a bool tensor is not supported."),
    E("pos_bool", lambda m: +_b(m), RuntimeError,
      "The `+` operator, on a bool tensor is not supported."),
    E("hypot_int", lambda m: m.hypot(_i(m, 1, 2), _i(m, 1, 2)), NotImplementedError,
      "\"hypot_cpu\" not implemented for 'Long'"),
    E("logaddexp_bool", lambda m: m.logaddexp(_b(m), _b(m)), NotImplementedError,
      "\"logaddexp_cpu\" not implemented for 'Bool'"),
    E("lerp_int", lambda m: m.lerp(_i(m, 1), _i(m, 2), 0.5), NotImplementedError,
      "\"lerp_kernel_scalar\" not implemented for 'Long'"),
    E("lerp_int_tensor_w", lambda m: m.lerp(_i(m, 1), _i(m, 2), _i(m, 1)),
      NotImplementedError, "\"lerp_kernel_tensor\" not implemented for 'Long'"),
    E("lerp_end_dtype", lambda m: m.lerp(_f(m), _f(m).double(), 0.5), RuntimeError,
      "expected dtype float for `end` but got dtype double"),
    E("lerp_weight_dtype", lambda m: m.lerp(_f(m), _f(m), _f(m).double()), RuntimeError,
      "expected dtype float for `weight` but got dtype double"),
    E("lerp_end_int", lambda m: m.lerp(_f(m), _i(m, 1, 2), 0.5), RuntimeError,
      "expected dtype float for `end` but got dtype long int"),
    E("addcdiv_int", lambda m: m.addcdiv(_i(m, 1), _i(m, 1), _i(m, 1)), RuntimeError,
      _ADDCDIV),
    E("addcmul_bool", lambda m: m.addcmul(_b(m), _b(m), _b(m), value=2), NotImplementedError,
      "\"addcmul_cpu_out\" not implemented for 'Bool'"),
    E("div_mode_bool", lambda m: m.div(_b(m), _b(m), rounding_mode="trunc"),
      NotImplementedError, "\"div_trunc_cpu\" not implemented for 'Bool'"),
    E("div_mode_bad", lambda m: m.div(_i(m, 1), 2, rounding_mode="bad"), RuntimeError,
      "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'bad'"),
    E("fmod_bool", lambda m: m.fmod(_b(m), _b(m)), NotImplementedError,
      "\"fmod_cpu\" not implemented for 'Bool'"),
    E("remainder_bool", lambda m: m.remainder(_b(m), _b(m)), NotImplementedError,
      "\"remainder_cpu\" not implemented for 'Bool'"),
    # -- integer division by zero --------------------------------------------------------------
    E("floor_divide_zero", lambda m: m.floor_divide(_i(m, 1, 2), 0), RuntimeError,
      "ZeroDivisionError"),
    E("mod_zero", lambda m: _i(m, 3, -2) % 0, RuntimeError, "ZeroDivisionError"),
    E("fmod_zero", lambda m: m.fmod(_i(m, 3), _i(m, 0)), RuntimeError, "ZeroDivisionError"),
    E("div_floor_zero", lambda m: m.div(_i(m, 1), 0, rounding_mode="floor"), RuntimeError,
      "ZeroDivisionError"),
    # -- Python numbers where tensors are required -----------------------------------------
    E("maximum_scalar", lambda m: m.maximum(_f(m), 2), TypeError,
      "maximum(): argument 'other' (position 2) must be Tensor, not int"),
    E("minimum_scalar", lambda m: m.minimum(_f(m), 2.0), TypeError,
      "minimum(): argument 'other' (position 2) must be Tensor, not float"),
    E("maximum_method_scalar", lambda m: _f(m).maximum(2), TypeError,
      "maximum(): argument 'other' (position 1) must be Tensor, not int"),
    E("atan2_scalar", lambda m: m.atan2(_f(m), 2), TypeError,
      "atan2(): argument 'other' (position 2) must be Tensor, not int"),
    E("fmax_scalar", lambda m: m.fmax(_f(m), 2.0), TypeError,
      "fmax(): argument 'other' (position 2) must be Tensor, not float"),
    E("logical_xor_scalar", lambda m: m.logical_xor(_f(m), 2), TypeError,
      "logical_xor(): argument 'other' (position 2) must be Tensor, not int"),
    E("addcmul_scalar", lambda m: m.addcmul(_f(m), 2, _f(m)), TypeError,
      "addcmul(): argument 'tensor1' (position 2) must be Tensor, not int"),
    E("lerp_scalar_end", lambda m: m.lerp(_f(m), 2, 0.5), TypeError,
      "lerp() received an invalid combination of arguments", prefix=True),
    E("clamp_mixed", lambda m: m.clamp(_f(m), min=_f(m), max=2.0), TypeError,
      "clamp() received an invalid combination of arguments - got (Tensor, max=float, "
      "min=Tensor), but expected one of:", prefix=True),
    E("clamp_none", lambda m: m.clamp(_f(m)), RuntimeError,
      "torch.clamp: At least one of 'min' or 'max' must not be None"),
    E("polygamma_negative", lambda m: m.polygamma(-1, _f(m)), RuntimeError,
      "polygamma(n, x) does not support negative n."),
    # -- in-place results that don't fit self's dtype ------------------------------------------
    E("pow_inplace_int", lambda m: m.ones(2, dtype=m.long).pow_(1.5), RuntimeError,
      _CAST.format("Float", "Long")),
    E("fmod_inplace_int", lambda m: m.ones(2, dtype=m.long).fmod_(1.5), RuntimeError,
      _CAST.format("Float", "Long")),
    E("exp2_inplace_int", lambda m: m.ones(2, dtype=m.long).exp2_(), RuntimeError,
      _CAST.format("Float", "Long")),
    E("addcmul_inplace_int", lambda m: m.ones(2, dtype=m.long).addcmul_(m.ones(2), m.ones(2)),
      RuntimeError, _CAST.format("Float", "Long")),
    E("add_inplace_bool", lambda m: m.zeros(2, dtype=m.bool).add_(1, alpha=2), RuntimeError,
      _CAST.format("Long", "Bool")),
    E("float_power_inplace", lambda m: m.ones(2).float_power_(2), RuntimeError,
      "the base given to float_power_ has dtype Float but the operation's result requires "
      "dtype Double"),
    E("lerp_inplace_dtype", lambda m: m.ones(2).lerp_(m.ones(2, dtype=m.float64), 0.5),
      RuntimeError, "expected dtype float for `end` but got dtype double"),
    # -- derivatives torch does not implement ------------------------------------------------
    E("floor_divide_backward",
      lambda m: m.ones(2, requires_grad=True).floor_divide(m.ones(2)).sum().backward(),
      RuntimeError, "derivative for aten::floor_divide is not implemented"),
    E("rremainder_backward",
      lambda m: (2 % m.ones(2, requires_grad=True)).sum().backward(),
      RuntimeError, "derivative for aten::remainder is not implemented"),
]


test_case_ids_are_unique, test_ember_error, test_torch_error = error_tests(CASES)
