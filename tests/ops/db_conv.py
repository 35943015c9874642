"""Op table rows for convolution, pooling, resampling and normalization (ember._ops.conv,
pooling, normalization). Shapes stay tiny: every row runs gradcheck and gradgradcheck."""
from __future__ import annotations

import numpy as np

import ember.nn.functional as F
from ember._ops import attention as AT
from ember._ops import conv as CV
from ember._ops import normalization as NM
from ember._ops import pooling as PL
from ember._ops import upsample as UP

from .op_db import C, S, row

_CONV = [CV.convolution, CV.convolution_backward]
_F32 = {"float32": (1e-5, 1e-5)}


def _conv2d_samples(m):
    return [S("basic", m(2, 3, 5, 5), m(4, 3, 3, 3), m(4)),
            S("stride_pad", m(2, 2, 6, 5), m(3, 2, 3, 2), m(3), stride=2, padding=1),
            S("dilation_groups", m(1, 4, 7, 6), m(4, 2, 2, 3), None, stride=(1, 2),
              padding=(2, 0), dilation=(2, 1), groups=2),
            S("same_even", m(2, 2, 5, 4), m(3, 2, 2, 3), m(3), padding="same"),
            S("valid", m(1, 2, 5, 5), m(2, 2, 3, 3), padding="valid", stride=2),
            S("unbatched", m(2, 4, 4), m(3, 2, 2, 2), m(3)),
            S("1x1", m(2, 3, 3, 3), m(2, 3, 1, 1), m(2)),
            S("big_kernel", m(1, 1, 4, 4), m(1, 1, 4, 4), padding=1),
            S("groups_batch", m(3, 4, 5, 5), m(6, 2, 3, 3), m(6), padding=1, groups=2),
            S("empty_batch", m(0, 2, 4, 4), m(3, 2, 2, 2), m(3))]


row("conv2d", F.conv2d, "nn.functional.conv2d", _CONV, _conv2d_samples, tols=_F32)
row("conv1d", F.conv1d, "nn.functional.conv1d", _CONV,
    lambda m: [S("basic", m(2, 3, 7), m(4, 3, 3), m(4)),
               S("stride_dil", m(2, 2, 9), m(2, 1, 2), m(2), stride=2, padding=2, dilation=3,
                 groups=2),
               S("same", m(1, 2, 6), m(3, 2, 4), padding="same", dilation=2),
               S("unbatched", m(3, 5), m(2, 3, 2))], tols=_F32)
row("conv3d", F.conv3d, "nn.functional.conv3d", _CONV,
    lambda m: [S("basic", m(1, 2, 4, 3, 4), m(2, 2, 2, 2, 3), m(2)),
               S("stride_pad", m(2, 1, 3, 4, 3), m(2, 1, 2, 2, 2), None, stride=(1, 2, 1),
                 padding=1)], tols=_F32)


def _conv_t2d_samples(m):
    return [S("basic", m(2, 3, 3, 4), m(3, 2, 3, 3), m(2)),
            S("stride_opad", m(1, 2, 3, 3), m(2, 3, 3, 2), m(3), stride=2, padding=1,
              output_padding=1),
            S("groups_dil", m(2, 4, 3, 2), m(4, 1, 2, 2), None, stride=(2, 1), groups=2,
              dilation=2),
            S("opad_dil", m(1, 2, 3, 3), m(2, 2, 2, 2), stride=1, dilation=2,
              output_padding=1),
            S("unbatched", m(2, 3, 3), m(2, 2, 2, 2)),
            # (stride 1 runs as a plain convolution with the flipped kernel, unless the
            # padding crops more than the kernel spans)
            S("stride1_groups", m(2, 4, 3, 3), m(4, 2, 3, 3), m(4), padding=(1, 0), groups=2),
            S("pad_past_kernel", m(2, 2, 5, 5), m(2, 3, 2, 2), m(3), padding=2)]


row("conv_transpose2d", F.conv_transpose2d, "nn.functional.conv_transpose2d", _CONV,
    _conv_t2d_samples, tols=_F32)
row("conv_transpose1d", F.conv_transpose1d, "nn.functional.conv_transpose1d", _CONV,
    lambda m: [S("basic", m(2, 3, 5), m(3, 2, 3), m(2), stride=2, padding=1,
                 output_padding=1),
               S("groups", m(1, 4, 4), m(4, 3, 2), m(6), groups=2, dilation=2)], tols=_F32)


def _conv_backward_samples(m):
    # (grad_output, input, weight, stride, padding, dilation, transposed, output_padding,
    # groups, output_mask), the padding as (before, after) pairs: every output asked for (torch returns None for one left out, ember
    # an empty array; the conv rows cover single gradients through F.conv*)
    return [S("conv2d", m(2, 4, 3, 3), m(2, 3, 5, 5), m(4, 3, 3, 3), (1, 1), ((0, 0), (0, 0)),
              (1, 1), False, (0, 0), 1, (True, True, True)),
            S("conv1d_groups", m(1, 4, 5), m(1, 2, 9), m(4, 1, 2), (2,), ((1, 1),), (2,), False,
              (0,), 2, (True, True, True)),
            # (torch's own double backward of it refuses an output_padding)
            S("transposed", m(1, 3, 4, 4), m(1, 2, 3, 3), m(2, 3, 2, 2), (2, 2), ((1, 1), (1, 1)),
              (1, 1), True, (0, 0), 1, (True, True, True))]


def _torch_conv_backward(torch):
    def fn(g, x, w, stride, padding, dilation, transposed, opad, groups, mask):
        bias_sizes = [w.shape[1] * groups if transposed else w.shape[0]]
        return torch.ops.aten.convolution_backward(g, x, w, bias_sizes, list(stride),
                                                   [lo for lo, _ in padding], list(dilation), transposed,
                                                   list(opad), groups, list(mask))
    return fn


# the convolution's gradient op on its own (its derivatives give third derivatives)
row("convolution_backward", CV.convolution_backward, _torch_conv_backward,
    [CV.convolution_backward], _conv_backward_samples, tols=_F32, public=False)

row("unfold", F.unfold, "nn.functional.unfold", [CV._im2col, CV._col2im],
    lambda m: [S("basic", m(2, 3, 4, 5), 2),
               S("params", m(1, 2, 5, 5), (2, 3), dilation=(1, 2), padding=1, stride=2),
               S("unbatched", m(2, 3, 3), 2)],
    np_ref=None)
row("fold", F.fold, "nn.functional.fold", [CV._col2im, CV._im2col],
    lambda m: [S("basic", m(2, 12, 12), (4, 5), 2),
               S("params", m(1, 8, 9), (4, 5), 2, dilation=(1, 2), padding=1, stride=2),
               S("unbatched", m(4, 9), (4, 4), 2)])

# -- pooling ------------------------------------------------------------------------------------
_MAXPOOL = [PL.max_pool2d_with_indices, PL.max_pool2d_with_indices_backward, PL.pool_gather]


def _max_pool2d_samples(m):
    return [S("basic", m(2, 3, 4, 4), 2),
            S("overlap_pad", m(1, 2, 5, 6), 3, stride=2, padding=1),
            S("ceil_dil", m(1, 2, 7, 6), (2, 3), stride=2, padding=(1, 0), dilation=(2, 1),
              ceil_mode=True),
            S("indices", m(2, 2, 4, 5), 2, return_indices=True),
            S("unbatched", m(2, 5, 5), 3, 1)]


row("max_pool2d", F.max_pool2d, "nn.functional.max_pool2d", _MAXPOOL, _max_pool2d_samples)
row("max_pool1d", F.max_pool1d, "nn.functional.max_pool1d", _MAXPOOL,
    lambda m: [S("basic", m(2, 3, 7), 3, stride=2, ceil_mode=True),
               S("indices", m(1, 2, 6), 2, padding=1, return_indices=True),
               S("unbatched", m(2, 6), 2)])
row("adaptive_max_pool2d", F.adaptive_max_pool2d, "nn.functional.adaptive_max_pool2d",
    [PL.adaptive_max_pool2d_op, PL.max_pool2d_with_indices_backward, PL.pool_gather],
    lambda m: [S("basic", m(2, 3, 5, 7), (2, 3)), S("int", m(1, 2, 4, 4), 3),
               S("indices", m(1, 2, 6, 5), (4, None), return_indices=True),
               S("unbatched", m(2, 5, 5), 2)])
row("adaptive_max_pool1d", F.adaptive_max_pool1d, "nn.functional.adaptive_max_pool1d",
    [PL.adaptive_max_pool2d_op],
    lambda m: [S("basic", m(2, 3, 7), 3), S("indices", m(1, 2, 5), 4, return_indices=True)])

_AVG = [PL.avg_pool2d_op, PL.avg_pool2d_backward]
row("avg_pool2d", F.avg_pool2d, "nn.functional.avg_pool2d", _AVG,
    lambda m: [S("basic", m(2, 3, 4, 4), 2),
               S("pad", m(1, 2, 5, 6), 3, stride=2, padding=1),
               S("ceil_exclude", m(1, 2, 5, 6), 3, stride=2, padding=1, ceil_mode=True,
                 count_include_pad=False),
               S("ceil_include", m(1, 2, 5, 6), (3, 2), stride=2, padding=1, ceil_mode=True),
               S("divisor", m(1, 2, 4, 4), 2, divisor_override=3),
               S("unbatched", m(2, 4, 4), 2, 1)])
row("avg_pool1d", F.avg_pool1d, "nn.functional.avg_pool1d", _AVG,
    lambda m: [S("basic", m(2, 3, 7), 3, stride=2, padding=1, ceil_mode=True,
                 count_include_pad=False), S("unbatched", m(2, 6), 2)])
row("adaptive_avg_pool2d", F.adaptive_avg_pool2d, "nn.functional.adaptive_avg_pool2d",
    [PL.adaptive_avg_pool2d_op, PL.adaptive_avg_pool2d_backward],
    lambda m: [S("basic", m(2, 3, 5, 7), (2, 3)), S("grow", m(1, 2, 3, 3), 5),
               S("one", m(2, 2, 3, 3), 1), S("none", m(1, 2, 4, 5), (None, 2)),
               S("unbatched", m(2, 5, 5), 3)])
row("adaptive_avg_pool1d", F.adaptive_avg_pool1d, "nn.functional.adaptive_avg_pool1d",
    [PL.adaptive_avg_pool2d_op],
    lambda m: [S("basic", m(2, 3, 7), 3), S("unbatched", m(2, 5), 2)])

# -- resampling ---------------------------------------------------------------------------------
row("interpolate_nearest", F.interpolate, "nn.functional.interpolate",
    [UP.upsample_nearest2d, UP.upsample_nearest2d_backward, UP.upsample_nearest1d,
     UP.upsample_nearest1d_backward, UP.upsample_nearest3d, UP.upsample_nearest3d_backward],
    lambda m: [S("scale2", m(2, 2, 3, 4), scale_factor=2),
               S("size", m(1, 2, 5, 4), size=(3, 7)),
               S("frac_scale", m(1, 2, 4, 3), scale_factor=1.7),
               S("1d", m(2, 3, 4), scale_factor=2.5),
               S("1d_size", m(1, 2, 5), size=3),
               S("3d", m(1, 2, 2, 3, 2), scale_factor=(2, 1.5, 0.6)),
               S("3d_size", m(2, 1, 3, 2, 2), size=(2, 3, 4)),
               S("empty_batch", m(0, 2, 3, 3), size=(4, 2))])
row("interpolate_nearest_exact", F.interpolate, "nn.functional.interpolate",
    [UP.upsample_nearest_exact1d, UP.upsample_nearest_exact1d_backward,
     UP.upsample_nearest_exact2d, UP.upsample_nearest_exact2d_backward,
     UP.upsample_nearest_exact3d, UP.upsample_nearest_exact3d_backward],
    lambda m: [S("1d", m(2, 3, 4), scale_factor=2.5, mode="nearest-exact"),
               S("2d", m(1, 2, 5, 4), size=(3, 7), mode="nearest-exact"),
               S("2d_scale", m(2, 2, 3, 4), scale_factor=(1.7, 0.6), mode="nearest-exact"),
               S("3d", m(1, 2, 2, 3, 4), size=(3, 2, 5), mode="nearest-exact")])
row("interpolate_linear", F.interpolate, "nn.functional.interpolate",
    [UP.upsample_bilinear2d, UP.upsample_bilinear2d_backward, UP.upsample_linear1d,
     UP.upsample_linear1d_backward, UP.upsample_trilinear3d, UP.upsample_trilinear3d_backward],
    lambda m: [S("bilinear", m(2, 2, 3, 4), scale_factor=2, mode="bilinear"),
               S("align", m(1, 2, 4, 3), size=(5, 7), mode="bilinear", align_corners=True),
               S("down", m(1, 2, 6, 5), scale_factor=0.6, mode="bilinear"),
               S("linear", m(2, 3, 4), size=7, mode="linear"),
               S("linear_align", m(1, 2, 5), scale_factor=1.5, mode="linear",
                 align_corners=True),
               S("trilinear", m(1, 2, 2, 3, 2), scale_factor=(1.5, 0.7, 2), mode="trilinear"),
               S("trilinear_align", m(1, 1, 3, 2, 2), size=(2, 4, 3), mode="trilinear",
                 align_corners=True),
               S("recompute", m(1, 2, 3, 4), scale_factor=1.7, mode="bilinear",
                 recompute_scale_factor=True)], tols=_F32)
row("interpolate_bicubic", F.interpolate, "nn.functional.interpolate",
    [UP.upsample_bicubic2d, UP.upsample_bicubic2d_backward],
    lambda m: [S("up", m(2, 2, 3, 4), scale_factor=2, mode="bicubic"),
               S("align", m(1, 2, 4, 3), size=(5, 7), mode="bicubic", align_corners=True),
               S("down", m(1, 2, 6, 5), scale_factor=(0.6, 0.8), mode="bicubic"),
               S("same", m(1, 2, 3, 3), size=3, mode="bicubic")], tols=_F32)
row("interpolate_antialias", F.interpolate, "nn.functional.interpolate",
    [UP.upsample_bilinear2d_aa, UP.upsample_bilinear2d_aa_backward, UP.upsample_bicubic2d_aa,
     UP.upsample_bicubic2d_aa_backward],
    lambda m: [S("bilinear_down", m(1, 2, 6, 5), size=(3, 2), mode="bilinear", antialias=True),
               S("bilinear_up", m(2, 1, 3, 4), scale_factor=1.5, mode="bilinear",
                 antialias=True),
               S("bicubic_down", m(1, 2, 7, 6), size=(3, 4), mode="bicubic", antialias=True),
               S("bicubic_align", m(1, 2, 4, 3), size=(5, 2), mode="bicubic",
                 align_corners=True, antialias=True)], tols={"float32": (1e-5, 1e-5),
                                                             "float64": (1e-12, 1e-12)})
row("interpolate_area", F.interpolate, "nn.functional.interpolate",
    [PL.adaptive_avg_pool2d_op, PL.adaptive_avg_pool2d_backward, PL.adaptive_avg_pool3d_op,
     PL.adaptive_avg_pool3d_backward],
    lambda m: [S("1d", m(2, 3, 7), size=3, mode="area"),
               S("2d", m(1, 2, 5, 4), scale_factor=0.6, mode="area"),
               S("2d_up", m(1, 2, 2, 3), size=(3, 5), mode="area"),
               S("mean", m(2, 2, 3, 3), size=1, mode="area"),
               S("3d", m(1, 2, 4, 3, 2), size=(2, 2, 1), mode="area")], tols=_F32)
row("pixel_shuffle", F.pixel_shuffle, "nn.functional.pixel_shuffle",
    [PL._pixel_shuffle, PL._pixel_unshuffle],
    lambda m: [S("basic", m(2, 8, 2, 3), 2), S("3d", m(9, 2, 2), 3),
               S("5d", m(2, 1, 4, 2, 2), 2)])
row("pixel_unshuffle", F.pixel_unshuffle, "nn.functional.pixel_unshuffle",
    [PL._pixel_unshuffle, PL._pixel_shuffle],
    lambda m: [S("basic", m(2, 2, 4, 6), 2), S("3d", m(1, 6, 3), 3)])

# -- normalization ------------------------------------------------------------------------------
_BN = [NM.batch_norm_op, NM.native_batch_norm_backward]


def _bn_samples(m):
    rm, rv = C(m(3)), C(m(3, low=0.5, high=2.0))
    return [S("train", m(4, 3, 2, 2), rm, rv, m(3), m(3), training=True),
            S("train_2d", m(5, 3), rm, rv, m(3), m(3), True, 0.3),
            S("eval", m(4, 3, 2), rm, rv, m(3), m(3)),
            S("no_affine", m(3, 3, 2), None, None, training=True),
            S("eval_no_affine", m(2, 3, 3), rm, rv)]


row("batch_norm", F.batch_norm, "nn.functional.batch_norm", _BN, _bn_samples, tols=_F32)
row("layer_norm", F.layer_norm, "nn.functional.layer_norm",
    [NM.layer_norm_op, NM.native_layer_norm_backward],
    lambda m: [S("affine", m(2, 3, 4), (4,), m(4), m(4)),
               S("two_dims", m(2, 3, 4), (3, 4), m(3, 4), m(3, 4), eps=1e-3),
               S("plain", m(3, 5), [5]), S("weight_only", m(2, 4), (4,), m(4)),
               S("all_dims", m(2, 3), (2, 3), m(2, 3), m(2, 3))], tols=_F32)
row("rms_norm", F.rms_norm, "nn.functional.rms_norm", [],
    lambda m: [S("last", m(2, 3, 4), (4,)), S("two_dims", m(2, 3, 4), [3, 4], eps=1e-3),
               S("weight", m(3, 4), (4,), m(4, low=0.5, high=2.0)), S("vector", m(5), [5])])
row("group_norm", F.group_norm, "nn.functional.group_norm", [NM.group_norm_op],
    lambda m: [S("affine", m(2, 4, 3), 2, m(4), m(4)),
               S("4d", m(2, 6, 2, 2), 3, m(6), m(6)), S("plain", m(3, 4, 6), 2),
               S("one_group", m(2, 3, 2, 2), 1, m(3), None)], tols=_F32)
row("instance_norm", F.instance_norm, "nn.functional.instance_norm", _BN,
    lambda m: [S("plain", m(2, 3, 4)),
               S("affine_stats", m(2, 3, 2, 2), C(m(3)), C(m(3, low=0.5)), m(3), m(3)),
               S("eval_stats", m(2, 3, 4), C(m(3)), C(m(3, low=0.5)), m(3), m(3),
                 use_input_stats=False)], tols=_F32)
row("local_response_norm", F.local_response_norm, "nn.functional.local_response_norm",
    [PL.avg_pool2d_op], lambda m: [S("3d", m(2, 5, 3), 3),
                                   S("4d", m(1, 6, 2, 3), 4, alpha=0.5, beta=0.6, k=2.0),
                                   S("size1", m(2, 3, 2), 1)], tols=_F32)


def _sdpa_samples(m):
    return [S("basic", m(2, 3, 4), m(2, 5, 4), m(2, 5, 3)),
            S("causal", m(1, 2, 4, 3), m(1, 2, 4, 3), m(1, 2, 4, 2), is_causal=True),
            S("float_mask", m(2, 3, 4), m(2, 3, 4), m(2, 3, 2), attn_mask=C(m(3, 3)),
              scale=0.3),
            S("bool_mask", m(2, 3, 4), m(2, 4, 4), m(2, 4, 2),
              attn_mask=C(np.array([[True, False, True, True]] * 3)))]


row("scaled_dot_product_attention", F.scaled_dot_product_attention,
    "nn.functional.scaled_dot_product_attention", [], _sdpa_samples, tols=_F32)


def _flash_samples(m):
    """4-D inputs without dropout: torch's CPU flash kernel."""
    return [S("plain", m(1, 2, 3, 4), m(1, 2, 5, 4), m(1, 2, 5, 4)),
            S("causal", m(1, 2, 4, 3), m(1, 2, 4, 3), m(1, 2, 4, 3), is_causal=True),
            S("float_mask", m(2, 1, 3, 4), m(2, 1, 3, 4), m(2, 1, 3, 4),
              attn_mask=C(m(3, 3)), scale=0.3),
            S("bool_mask_gqa", m(1, 4, 3, 2), m(1, 2, 4, 2), m(1, 2, 4, 2), enable_gqa=True,
              attn_mask=C(np.array([[True, False, True, True]] * 3)))]


row("scaled_dot_product_attention_flash", F.scaled_dot_product_attention,
    "nn.functional.scaled_dot_product_attention",
    [AT.flash_attention, AT.flash_attention_backward], _flash_samples, tols=_F32,
    gradgrad=False,  # (tests/test_attention.py checks torch's error for it)
    skips={"test_forward_ad": "torch's flash kernel has no forward-mode rule"})
