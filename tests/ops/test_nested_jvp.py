"""Nested forward mode (``jvp`` of ``jvp``) against torch.func, op by op.

ember runs an op at a nested forward-mode level only when its name is in
``forward_ad._NESTED_VERIFIED`` (other ops raise NotImplementedError there). Each verified op
is exercised here by at least one op-table sample, whose nested jvp must give torch's values;
the sample also has to reach the ops it claims, so that the table cannot silently stop
covering them.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD

from .test_ops import (GRAD_TOLS, _ROWS, _samples, _seed, assert_close, call, dtype_name,
                       random_like, rebinder, row_tols)

# (op-table row, sample name, the verified ops its nested jvp runs): together they cover every
# op of _NESTED_VERIFIED except those below
CASES = [
    ("svd_lowrank", "batch", "_reshape_alias _unsafe_view bmm expand linalg_qr linalg_svd mm mul "
     "transpose unsqueeze view"),
    ("cosine_embedding_loss", "mean", "add clamp_min div mean sqrt sub sum where"),
    ("rsub_scalar", "matrix", "rsub"),
    ("ihfftn", "s", "_fft_c2c _fft_r2c conj_physical constant_pad_nd slice"),
    ("local_response_norm", "3d", "avg_pool2d constant_pad_nd pow squeeze"),
    ("cat", "dim0", "cat"),
    ("setitem_basic", "py_scalar", "clone copy select"),
    ("rnn_relu_cell", "bias", "addmm relu t"),
    ("cross_entropy_variants", "ls_none", "_log_softmax neg nll_loss"),
    ("hfft", "default", "_fft_c2r conj"),
    ("linalg_matrix_norm", "ord_1", "amax linalg_vector_norm"),
    ("lu_unpack", "square", "linalg_lu_factor_ex lu_unpack"),
    ("linalg_eig_vectors", "one", "abs linalg_eig"),
    ("view_as_complex_real", "vector", "view_as_complex view_as_real"),
    ("einsum", "diag", "diagonal permute"),
    ("triplet_margin_loss", "swap_p1", "minimum norm"),
    ("native_group_norm", "plain", "native_group_norm reciprocal"),
    ("maximum_method", "same", "maximum"),
    ("exp", "scalar", "exp"),
    ("log_method", "scalar", "log"),
    ("sin", "scalar", "sin"),
    ("cos_method", "scalar", "cos"),
    ("tanh", "scalar", "tanh"),
    ("sigmoid_backward", "same", "sigmoid_backward"),
    ("sigmoid_method", "scalar", "sigmoid"),
    ("sign", "scalar", "sign"),
    ("clamp", "both", "clamp"),
    ("max_all_method", "scalar", "max"),
    ("min_all_method", "scalar", "min"),
    ("take_along_dim_keep", "keep", "take_along_dim"),
    ("cast_float", "matrix", "_to_copy"),
    ("select_backward", "dim1", "select_backward"),
    ("getitem_list", "x", "index"),
    ("stack", "dim0", "stack"),
    ("unbind_method", "dim1", "unbind"),
    ("split_int", "even", "split"),
    ("unsafe_split_with_sizes", "rows", "unsafe_split_with_sizes"),
    ("as_strided_view_of_base", "select", "_view_of_base"),
    ("angle_complex", "vector", "angle"),
    ("complex", "same", "complex"),
    ("vdot_complex", "vector", "vdot"),
    ("conv2d", "valid", "convolution"),
    ("unfold", "basic", "im2col"),
    ("max_pool2d", "basic", "max_pool2d_with_indices"),
    ("adaptive_max_pool2d", "basic", "adaptive_max_pool2d"),
    ("adaptive_avg_pool2d", "basic", "adaptive_avg_pool2d"),
    ("interpolate_nearest", "scale2", "upsample_nearest2d"),
    ("interpolate_nearest", "1d", "upsample_nearest1d"),
    ("pixel_shuffle", "basic", "pixel_shuffle"),
    ("fftshift", "all", "roll"),
    ("tensor_unfold", "frames", "unfold"),
    ("nn.functional.fractional_max_pool3d", "basic", "fractional_max_pool3d"),
    ("affine_grid_generator", "2d", "affine_grid_generator"),
    ("gather", "dim1", "gather"),
    ("index_select", "dup", "index_select"),
    ("index_add", "dup", "index_add"),
    ("index_fill", "scalar", "index_fill"),
    ("masked_fill", "scalar", "masked_fill"),
    ("masked_select", "same", "masked_select"),
    ("take_method", "x", "take"),
    ("diag_embed", "vector", "diag_embed"),
    ("diag_method", "x", "diagonal_copy"),
    ("trace_method", "x", "trace"),
    ("pad_reflect", "1d", "reflection_pad1d"),
    ("pad_reflect", "2d", "reflection_pad2d"),
    ("pad_reflect", "3d", "reflection_pad3d"),
    ("pad_backward", "reflect1d", "pad_backward"),
    ("dot", "x", "dot"),
    ("linalg_cross", "vec", "linalg_cross"),
    ("inverse", "x", "linalg_inv"),
    ("linalg_solve", "matrix", "linalg_solve"),
    ("linalg_pinv", "tall", "linalg_pinv"),
    ("linalg_lstsq", "tall", "linalg_lstsq"),
    ("matrix_exp_method", "one", "linalg_matrix_exp"),
    ("linalg_solve_ex", "vector", "linalg_solve_ex"),
    ("celu", "vector", "celu"),
    ("silu", "vector", "silu"),
    ("softplus", "vector", "softplus"),
    ("hardtanh", "vector", "hardtanh"),
    ("hardswish", "wide", "hardswish"),
    ("hardshrink", "vector", "hardshrink"),
    ("_prelu_kernel_backward", "channels", "_prelu_kernel_backward"),
    ("softmax_backward_data", "rows", "_softmax_backward_data"),
    ("smooth_l1_loss", "mean", "smooth_l1_loss"),
    ("nextafter", "same", "nextafter"),
    ("sgn", "scalar", "sgn"),
    ("exp2_method", "scalar", "exp2"),
    ("expm1", "scalar", "expm1"),
    ("log2_method", "scalar", "log2"),
    ("log10", "scalar", "log10"),
    ("log1p_method", "scalar", "log1p"),
    ("rsqrt", "scalar", "rsqrt"),
    ("tan_method", "scalar", "tan"),
    ("asin", "scalar", "asin"),
    ("acos", "scalar", "acos"),
    ("atan", "scalar", "atan"),
    ("sinh", "scalar", "sinh"),
    ("cosh_method", "scalar", "cosh"),
    ("asinh", "scalar", "asinh"),
    ("acosh", "scalar", "acosh"),
    ("atanh", "scalar", "atanh"),
    ("sinc", "scalar", "sinc"),
    ("frac_method", "scalar", "frac"),
    ("floor", "scalar", "floor"),
    ("ceil_method", "scalar", "ceil"),
    ("trunc", "scalar", "trunc"),
    ("round_method", "scalar", "round"),
    ("logit_method", "eps", "logit"),
    ("nan_to_num", "scalar", "nan_to_num"),
    ("erf", "scalar", "erf"),
    ("erfc", "scalar", "erfc"),
    ("erfinv", "scalar", "erfinv"),
    ("lgamma", "scalar", "lgamma"),
    ("digamma", "scalar", "digamma"),
    ("polygamma", "n1", "polygamma"),
    ("remainder_scalar", "float", "remainder"),
    ("fmod_scalar", "float", "fmod"),
    ("atan2", "same", "atan2"),
    ("fmax_method", "same", "fmax"),
    ("fmin_method", "same", "fmin"),
    ("hypot_method", "same", "hypot"),
    ("logaddexp", "same", "logaddexp"),
    ("logaddexp2", "same", "logaddexp2"),
    ("copysign_method", "same", "copysign"),
    ("lerp_method", "scalar_w", "lerp"),
    ("addcmul", "same", "addcmul"),
    ("addcdiv_method", "same", "addcdiv"),
    ("clamp_max_method", "py_float", "clamp_max"),
    ("prod", "scalar", "prod"),
    ("logsumexp_method", "kw", "logsumexp"),
    ("amin_method", "kw", "amin"),
    ("std", "all", "std"),
    ("std_mean", "all", "std_mean"),
    ("cumsum_method", "kw", "cumsum"),
    ("cummax_method", "dim", "cummax"),
    ("cummin_method", "dim", "cummin"),
    ("sort_stable", "desc", "sort"),
    ("topk_method", "k2", "topk"),
    ("kthvalue_method", "k2", "kthvalue"),
    ("mode", "distinct", "mode"),
    ("tile", "short", "repeat"),
    ("flip_method", "x", "flip"),
    ("rot90_method", "x", "rot90"),
    ("narrow_copy", "dim0", "narrow_copy"),
    ("alias", "matrix", "alias"),
    ("special_i0", "vector", "i0"),
    ("special_i0e", "vector", "special_i0e"),
    ("special_i1", "vector", "special_i1"),
    ("special_i1e", "vector", "special_i1e"),
    ("special_erfcx", "vector", "special_erfcx"),
    ("special_ndtri", "vector", "special_ndtri"),
    ("special_log_ndtr", "vector", "special_log_ndtr"),
    ("special_entr", "vector", "special_entr"),
    ("special_multigammaln", "p1", "mvlgamma"),
    ("special_softmax", "dim", "_softmax"),
    ("as_strided", "window", "as_strided"),
    ("max_unpool2d", "batch", "max_unpool2d"),
    ("adaptive_avg_pool3d", "basic", "adaptive_avg_pool3d"),
    ("max_pool3d", "basic", "max_pool3d_with_indices"),
    ("tanh_backward", "same", "tanh_backward"),
    ("slice_backward", "step2", "slice_backward"),
    ("_index_put_impl", "rows", "_index_put_impl"),
    ("binary_cross_entropy_with_logits", "mean", "binary_cross_entropy_with_logits"),
    ("logcumsumexp", "neg", "logcumsumexp"),
    ("mse_loss_backward", "mean", "mse_loss_backward"),
    ("split_with_sizes", "rows", "split_with_sizes"),
    ("unsafe_split", "even", "unsafe_split"),
    ("view_scatter", "py_src", "view_scatter"),
    ("as_strided_backward", "select", "_view_of_base_backward"),
    ("polar", "same", "polar"),
    ("fold", "basic", "col2im"),
    ("interpolate_linear", "bilinear", "upsample_bilinear2d"),
    ("interpolate_linear", "linear", "upsample_linear1d"),
    ("pixel_unshuffle", "basic", "pixel_unshuffle"),
    ("nn.functional.fractional_max_pool2d", "basic", "fractional_max_pool2d"),
    ("masked_scatter", "same", "masked_scatter"),
    ("put", "0dim", "put"),
    ("tril", "square", "tril"),
    ("triu", "square", "triu"),
    ("diagonal_backward", "square", "diagonal_backward"),
    ("pad_replicate", "1d", "replication_pad1d"),
    ("pad_replicate", "2d", "replication_pad2d"),
    ("pad_replicate", "3d", "replication_pad3d"),
    ("linalg_solve_triangular", "upper", "linalg_solve_triangular"),
    ("linalg_lu", "square", "linalg_lu"),
    ("linalg_inv_ex", "one", "linalg_inv_ex"),
    ("leaky_relu", "vector", "leaky_relu"),
    ("elu", "vector", "elu"),
    ("gelu", "vector", "gelu"),
    ("mish", "vector", "mish"),
    ("logsigmoid", "vector", "log_sigmoid"),
    ("softshrink", "vector", "softshrink"),
    ("threshold", "matrix", "threshold"),
    ("_safe_softmax", "dim1", "_safe_softmax"),
    ("log_softmax_backward_data", "rows", "_log_softmax_backward_data"),
    ("embedding", "basic", "embedding"),
    ("smooth_l1_loss_backward", "mean", "smooth_l1_loss_backward"),
    ("nll_loss", "4d", "nll_loss2d"),
    ("rrelu", "vector", "rrelu_with_noise"),
    ("channel_shuffle", "4d", "channel_shuffle"),
    ("native_layer_norm_backward", "two_dims", "native_layer_norm_backward"),
    ("native_dropout", "train", "native_dropout"),
    ("frexp", "vector", "frexp"),
    ("var", "all", "var"),
    ("var_mean", "all", "var_mean"),
    ("special_ndtr", "vector", "special_ndtr"),
    ("special_xlog1py", "same", "special_xlog1py"),
    ("max_unpool3d", "batch", "max_unpool3d"),
    ("avg_pool3d", "basic", "avg_pool3d"),
    ("adaptive_max_pool3d", "basic", "adaptive_max_pool3d"),
    ("zero_", "vector", "zero"),
    ("linalg_lu_solve_left", "batch", "linalg_lu_solve"),
    ("leaky_relu_inplace", "matrix", "leaky_relu_"),
    ("elu_inplace", "matrix", "elu_"),
    ("celu_inplace", "matrix", "celu_"),
    ("threshold_inplace", "matrix", "threshold_"),
    ("fill_", "float", "fill"),
    ("linalg_cholesky", "3x3", "linalg_cholesky"),
    ("linalg_cholesky_ex", "spd", "linalg_cholesky_ex"),
    ("xlogy", "zeros", "xlogy"),
    ("median", "nan", "median"),
    ("nanmedian", "all_nan", "nanmedian"),
    ("mse_loss", "empty_mean", "mse_loss"),
    ("dist", "bcast_p3", "dist"),
    ("scatter_src", "src_bigger", "scatter"),
    ("scatter_add", "dup_dim0", "scatter_add"),
]
# (checked by tests/test_func_levels.py: unpack_dual's primal and an MLP's matrix-vector
# products)
COVERED_ELSEWHERE = {"_fw_primal", "mv"}


class _Recording(frozenset):
    """The verified set, noting each op name the nested level asks about."""

    def __new__(cls, names, seen):
        self = super().__new__(cls, names)
        self.seen = seen
        return self

    def __contains__(self, name):
        self.seen.add(name)
        return frozenset.__contains__(self, name)


def _flat(result):
    out = []
    for part in result:
        out += list(part) if isinstance(part, (tuple, list)) else [part]
    return out


def _nested_jvp(mod, row, sample, us, vs):
    """``jvp(lambda *ys: jvp(op, ys, vs)[1], xs, us)`` for the sample's floating inputs."""
    make, diff = rebinder(sample, mod)
    op = row.op if mod is ember else row.torch_fn(mod)

    def fn(*ts):
        args, kwargs = make(*ts)
        return call(op, args, kwargs)
    F = mod.func
    tangents = [mod.from_numpy(v.copy()) for v in vs]
    inner = lambda *ys: F.jvp(fn, ys, tuple(tangents))[1]  # noqa: E731
    return _flat(F.jvp(inner, tuple(x.detach() for x in diff),
                       tuple(mod.from_numpy(u.copy()) for u in us)))


def test_cases_cover_every_verified_op():
    claimed = {name for _, _, ops in CASES for name in ops.split()}
    assert claimed | COVERED_ELSEWHERE == fwAD._NESTED_VERIFIED


@pytest.mark.parametrize("row_name,sample_name,ops", CASES,
                         ids=[f"{r}-{s}" for r, s, _ in CASES])
def test_nested_jvp_matches_torch(row_name, sample_name, ops, monkeypatch):
    torch = pytest.importorskip("torch")
    row = _ROWS[row_name]
    sample = next(s for s in _samples(row_name, "float64") if s.name == sample_name)
    _, diff = rebinder(sample, ember)
    rng = np.random.default_rng(_seed(row_name, sample_name, "nested"))
    us = [random_like(rng, tuple(x.shape), dtype_name(x)) for x in diff]
    vs = [random_like(rng, tuple(x.shape), dtype_name(x)) for x in diff]
    expected = _nested_jvp(torch, row, sample, us, vs)
    seen = set()
    monkeypatch.setattr(fwAD, "_NESTED_VERIFIED", _Recording(fwAD._NESTED_VERIFIED, seen))
    actual = _nested_jvp(ember, row, sample, us, vs)
    assert len(actual) == len(expected)
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, e, "float64", row_tols(row, GRAD_TOLS), what=f"output {k}")
    assert set(ops.split()) <= seen, f"the sample no longer runs {set(ops.split()) - seen}"
