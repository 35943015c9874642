"""Conv, pooling, resampling and normalization layers against torch 2.13 (weights copied)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn as enn
import ember.nn.functional as EF
from oracle import same

torch = pytest.importorskip("torch")
tnn = torch.nn
TF = torch.nn.functional

TOL = {"float64": (1e-10, 1e-10), "float32": (1e-4, 1e-5)}


def _copy(tm, em):
    tp, ep = dict(tm.named_parameters()), dict(em.named_parameters())
    assert list(tp) == list(ep)
    for n, p in tp.items():
        ep[n]._data = p.detach().numpy().copy()
    tb, eb = dict(tm.named_buffers()), dict(em.named_buffers())
    assert list(tb) == list(eb)
    for n, b in tb.items():
        eb[n]._data = b.numpy().copy()


def _close(a, b, dtype, what):
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol, err_msg=what)


def check_module(ctor, shape, dtype="float64", train=True, seed=0):
    """Forward, input and parameter gradients (and buffers) of ember's module == torch's."""
    rng = np.random.default_rng(seed)
    tm, em = ctor(tnn), ctor(enn)
    if dtype == "float64":
        tm = tm.double()
        for p in list(em.parameters()) + [b for b in em.buffers() if b.dtype.is_floating_point]:
            p._data = p._data.astype(np.float64)
    _copy(tm, em)
    assert repr(em) == repr(tm)
    tm.train(train)
    em.train(train)
    x = rng.standard_normal(shape).astype(dtype)
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yt, ye = tm(xt), em(xe)
    yt, ye = (yt[0], ye[0]) if isinstance(yt, tuple) else (yt, ye)
    assert tuple(ye.shape) == tuple(yt.shape)
    assert str(ye.dtype).split(".")[-1] == str(yt.dtype).split(".")[-1]
    _close(ye.detach().numpy(), yt.detach().numpy(), dtype, "output")
    g = rng.standard_normal(tuple(yt.shape)).astype(dtype)
    yt.backward(torch.tensor(g))
    ye.backward(ember.tensor(g))
    _close(xe.grad.numpy(), xt.grad.numpy(), dtype, "input grad")
    for (n, p), q in zip(tm.named_parameters(), em.parameters()):
        _close(q.grad.numpy(), p.grad.numpy(), dtype, f"grad of {n}")
    for (n, b), c in zip(tm.named_buffers(), em.buffers()):
        _close(c.numpy(), b.numpy(), dtype, f"buffer {n}")


MODULES = {
    "conv1d": (lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), (2, 3, 9)),
    "conv2d": (lambda nn: nn.Conv2d(3, 4, 3, padding=1), (2, 3, 6, 5)),
    "conv2d_groups": (lambda nn: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), dilation=(1, 2),
                                           groups=2, bias=False), (2, 4, 7, 6)),
    "conv2d_same": (lambda nn: nn.Conv2d(2, 3, 4, padding="same"), (1, 2, 5, 6)),
    "conv2d_unbatched": (lambda nn: nn.Conv2d(2, 3, 2), (2, 4, 4)),
    "conv3d": (lambda nn: nn.Conv3d(2, 3, 2, padding=1), (1, 2, 3, 4, 3)),
    "conv_t1d": (lambda nn: nn.ConvTranspose1d(3, 2, 3, stride=2), (2, 3, 5)),
    "conv_t2d": (lambda nn: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1,
                                               groups=2), (2, 4, 3, 4)),
    "maxpool1d": (lambda nn: nn.MaxPool1d(3, 2, ceil_mode=True), (2, 3, 8)),
    "maxpool2d": (lambda nn: nn.MaxPool2d(3, 2, 1), (2, 3, 7, 6)),
    "avgpool1d": (lambda nn: nn.AvgPool1d(2), (2, 3, 8)),
    "avgpool2d": (lambda nn: nn.AvgPool2d(3, 2, 1, count_include_pad=False), (2, 3, 7, 6)),
    "adaptive_avg1d": (lambda nn: nn.AdaptiveAvgPool1d(3), (2, 3, 8)),
    "adaptive_avg2d": (lambda nn: nn.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 6)),
    "adaptive_max1d": (lambda nn: nn.AdaptiveMaxPool1d(3), (2, 3, 8)),
    "adaptive_max2d": (lambda nn: nn.AdaptiveMaxPool2d(3, return_indices=True), (2, 3, 7, 6)),
    "upsample": (lambda nn: nn.Upsample(scale_factor=2), (2, 3, 3, 4)),
    "upsample_bilinear": (lambda nn: nn.Upsample(size=(5, 7), mode="bilinear",
                                                 align_corners=True), (2, 3, 3, 4)),
    "pixel_shuffle": (lambda nn: nn.PixelShuffle(2), (2, 8, 3, 3)),
    "pixel_unshuffle": (lambda nn: nn.PixelUnshuffle(2), (2, 2, 4, 6)),
    "unfold": (lambda nn: nn.Unfold(2, padding=1), (2, 3, 4, 4)),
    "fold": (lambda nn: nn.Fold((4, 5), 2), (2, 12, 12)),
    "batchnorm1d": (lambda nn: nn.BatchNorm1d(3), (4, 3)),
    "batchnorm1d_3d": (lambda nn: nn.BatchNorm1d(3, momentum=None), (4, 3, 5)),
    "batchnorm2d": (lambda nn: nn.BatchNorm2d(3), (4, 3, 2, 3)),
    "batchnorm2d_noaffine": (lambda nn: nn.BatchNorm2d(3, affine=False), (4, 3, 2, 3)),
    "batchnorm2d_nostats": (lambda nn: nn.BatchNorm2d(3, track_running_stats=False),
                            (4, 3, 2, 3)),
    "layernorm": (lambda nn: nn.LayerNorm((3, 4)), (2, 3, 4)),
    "layernorm_nobias": (lambda nn: nn.LayerNorm(4, bias=False), (2, 3, 4)),
    "layernorm_noaffine": (lambda nn: nn.LayerNorm(4, elementwise_affine=False), (2, 3, 4)),
    "groupnorm": (lambda nn: nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    "instancenorm1d": (lambda nn: nn.InstanceNorm1d(3, affine=True), (2, 3, 6)),
    "instancenorm2d_stats": (lambda nn: nn.InstanceNorm2d(3, track_running_stats=True),
                             (2, 3, 4, 4)),
    "instancenorm_unbatched": (lambda nn: nn.InstanceNorm1d(3), (3, 6)),
    "lrn": (lambda nn: nn.LocalResponseNorm(3), (2, 5, 3, 3)),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(MODULES))
def test_module_matches_torch(name, dtype):
    ctor, shape = MODULES[name]
    check_module(ctor, shape, dtype)


@pytest.mark.parametrize("name", ["batchnorm2d", "batchnorm1d_3d", "instancenorm2d_stats"])
def test_norm_eval_mode(name):
    ctor, shape = MODULES[name]
    check_module(ctor, shape, "float64", train=False)


def test_batchnorm_running_stats_over_steps():
    tm, em = tnn.BatchNorm2d(3, momentum=None).double(), enn.BatchNorm2d(3, momentum=None).double()
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.standard_normal((4, 3, 2, 2))
        tm(torch.tensor(x))
        em(ember.tensor(x))
    for (n, b), c in zip(tm.named_buffers(), em.buffers()):
        np.testing.assert_allclose(c.numpy(), b.numpy(), rtol=1e-12, err_msg=n)
    assert em.num_batches_tracked.item() == 3


def test_conv_default_init_bounds():
    ember.manual_seed(0)
    m = enn.Conv2d(3, 8, 3)
    bound = 1 / np.sqrt(3 * 9)
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    assert np.abs(m.weight.detach().numpy()).max() > 0.8 * bound


def test_conv_transpose_output_size():
    tm, em = tnn.ConvTranspose2d(2, 3, 3, stride=2), enn.ConvTranspose2d(2, 3, 3, stride=2)
    _copy(tm, em)
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    yt = tm(torch.tensor(x), output_size=[10, 10])
    ye = em(ember.tensor(x), output_size=[10, 10])
    assert tuple(ye.shape) == tuple(yt.shape) == (1, 3, 10, 10)
    _close(ye.detach().numpy(), yt.detach().numpy(), "float32", "output")


def _errors(mod, f):
    try:
        f(mod)
    except Exception as e:  # noqa: BLE001 - the oracle's error is the expectation
        return type(e), str(e).replace("torch.", "ember.")
    return None


def _t(mod, *shape):
    return mod.zeros(shape)


ERRORS = {
    "conv2d_2d_input": lambda m: m.nn.functional.conv2d(_t(m, 2, 3), _t(m, 4, 3, 3, 3)),
    "conv2d_channels": lambda m: m.nn.functional.conv2d(_t(m, 2, 5, 8, 8), _t(m, 4, 3, 3, 3)),
    "conv2d_unbatched_channels": lambda m: m.nn.functional.conv2d(_t(m, 5, 8, 8),
                                                                 _t(m, 4, 3, 3, 3)),
    "conv1d_small": lambda m: m.nn.functional.conv1d(_t(m, 2, 3, 2), _t(m, 4, 3, 3)),
    "conv2d_small": lambda m: m.nn.functional.conv2d(_t(m, 1, 3, 2, 2), _t(m, 4, 3, 3, 3)),
    "conv_same_strided": lambda m: m.nn.functional.conv2d(_t(m, 2, 3, 8, 8), _t(m, 4, 3, 3, 3),
                                                         stride=2, padding="same"),
    "conv_bad_padding": lambda m: m.nn.functional.conv2d(_t(m, 2, 3, 8, 8), _t(m, 4, 3, 3, 3),
                                                        padding="foo"),
    "conv_groups_channels": lambda m: m.nn.functional.conv2d(_t(m, 2, 3, 8, 8),
                                                            _t(m, 4, 3, 3, 3), groups=2),
    "conv_groups_weight": lambda m: m.nn.functional.conv2d(_t(m, 2, 4, 8, 8),
                                                          _t(m, 3, 2, 3, 3), groups=2),
    "conv_bias": lambda m: m.nn.functional.conv2d(_t(m, 2, 3, 8, 8), _t(m, 4, 3, 3, 3),
                                                 bias=_t(m, 3)),
    "conv_stride0": lambda m: m.nn.functional.conv2d(_t(m, 2, 3, 8, 8), _t(m, 4, 3, 3, 3),
                                                    stride=0),
    "conv_negative_pad": lambda m: m.nn.functional.conv2d(_t(m, 2, 3, 8, 8), _t(m, 4, 3, 3, 3),
                                                         padding=-1),
    "conv_stride_len": lambda m: m.nn.functional.conv1d(_t(m, 2, 3, 8), _t(m, 4, 3, 3),
                                                       stride=[1, 1]),
    "conv_dtype": lambda m: m.nn.functional.conv2d(_t(m, 2, 3, 8, 8).double(),
                                                  _t(m, 4, 3, 3, 3)),
    "conv_t_channels": lambda m: m.nn.functional.conv_transpose2d(_t(m, 2, 3, 8, 8),
                                                                 _t(m, 4, 3, 3, 3)),
    "conv_t_2d_input": lambda m: m.nn.functional.conv_transpose2d(_t(m, 2, 3),
                                                                 _t(m, 3, 3, 3, 3)),
    "conv_t_opad": lambda m: m.nn.functional.conv_transpose2d(
        _t(m, 2, 3, 4, 4), _t(m, 3, 3, 3, 3), stride=2, output_padding=2),
    "Conv2d_2d_input": lambda m: m.nn.Conv2d(3, 4, 3)(_t(m, 2, 3)),
    "Conv2d_in_groups": lambda m: m.nn.Conv2d(3, 4, 3, groups=2),
    "Conv2d_out_groups": lambda m: m.nn.Conv2d(4, 3, 3, groups=2),
    "Conv2d_same_strided": lambda m: m.nn.Conv2d(4, 4, 3, padding="same", stride=2),
    "Conv2d_bad_padding": lambda m: m.nn.Conv2d(4, 4, 3, padding="foo"),
    "ConvT_padding_mode": lambda m: m.nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect"),
    "maxpool_2d_input": lambda m: m.nn.functional.max_pool2d(_t(m, 2, 3), 2),
    "maxpool_pad": lambda m: m.nn.functional.max_pool2d(_t(m, 2, 3, 4, 4), 3, padding=2),
    "maxpool_small": lambda m: m.nn.functional.max_pool2d(_t(m, 2, 3, 1, 1), 2),
    "maxpool_stride0": lambda m: m.nn.functional.max_pool2d(_t(m, 2, 3, 4, 4), 2, stride=0),
    "maxpool1d_1d": lambda m: m.nn.functional.max_pool1d(_t(m, 2), 2),
    "avgpool_pad": lambda m: m.nn.functional.avg_pool2d(_t(m, 2, 3, 4, 4), 3, padding=2),
    "avgpool1d_1d": lambda m: m.nn.functional.avg_pool1d(_t(m, 2), 2),
    "avgpool_divisor": lambda m: m.nn.functional.avg_pool2d(_t(m, 2, 3, 4, 4), 2,
                                                           divisor_override=0),
    "adaptive_avg_1d": lambda m: m.nn.functional.adaptive_avg_pool2d(_t(m, 2), 2),
    "adaptive_max_1d": lambda m: m.nn.functional.adaptive_max_pool2d(_t(m, 2), 2),
    "interp_both": lambda m: m.nn.functional.interpolate(_t(m, 1, 2, 4, 4), size=3,
                                                        scale_factor=2),
    "interp_none": lambda m: m.nn.functional.interpolate(_t(m, 1, 2, 4, 4)),
    "interp_bilinear_3d": lambda m: m.nn.functional.interpolate(_t(m, 1, 2, 4), scale_factor=2,
                                                               mode="bilinear"),
    "interp_align_nearest": lambda m: m.nn.functional.interpolate(
        _t(m, 1, 2, 4, 4), scale_factor=2, align_corners=True),
    "interp_size_len": lambda m: m.nn.functional.interpolate(_t(m, 1, 2, 4, 4), size=(3,),
                                                            mode="bilinear"),
    "pixel_shuffle_channels": lambda m: m.nn.functional.pixel_shuffle(_t(m, 1, 3, 2, 2), 2),
    "pixel_unshuffle_height": lambda m: m.nn.functional.pixel_unshuffle(_t(m, 1, 3, 3, 2), 2),
    "unfold_small": lambda m: m.nn.functional.unfold(_t(m, 2, 3, 2, 2), 3),
    "fold_blocks": lambda m: m.nn.functional.fold(_t(m, 2, 12, 3), (4, 4), 2),
    "fold_channels": lambda m: m.nn.functional.fold(_t(m, 2, 13, 3), (4, 4), 2),
    "bn_running_size": lambda m: m.nn.functional.batch_norm(_t(m, 2, 3, 4), _t(m, 4),
                                                           _t(m, 4)),
    "bn_one_value": lambda m: m.nn.functional.batch_norm(_t(m, 1, 3), None, None,
                                                        training=True),
    "ln_shape": lambda m: m.nn.functional.layer_norm(_t(m, 2, 3, 4), (3,)),
    "gn_groups": lambda m: m.nn.functional.group_norm(_t(m, 2, 6, 4), 4),
    # (one value per group: difftest 26000229)
    "gn_one_value": lambda m: m.nn.functional.group_norm(_t(m, 1, 1, 1), 1),
    "gn_one_value_per_group": lambda m: m.nn.functional.group_norm(_t(m, 1, 4), 4),
    "GroupNorm_one_value": lambda m: m.nn.GroupNorm(2, 2)(_t(m, 1, 2, 1, 1)),
    "BatchNorm2d_dim": lambda m: m.nn.BatchNorm2d(3)(_t(m, 2, 3, 4)),
    "BatchNorm1d_dim": lambda m: m.nn.BatchNorm1d(3)(_t(m, 2, 3, 4, 5)),
    "LayerNorm_shape": lambda m: m.nn.LayerNorm(4)(_t(m, 2, 3)),
    "GroupNorm_groups": lambda m: m.nn.GroupNorm(4, 6),
    "InstanceNorm_affine": lambda m: m.nn.InstanceNorm1d(4, affine=True)(_t(m, 2, 3, 5)),
    # an empty spatial dimension with a batch and channels (torch computes empty batches only)
    "conv1d_empty_padded": lambda m: m.nn.functional.conv1d(m.zeros(2, 1, 0), m.ones(2, 1, 2),
                                                           padding=1),
    "conv_transpose1d_empty": lambda m: m.nn.functional.conv_transpose1d(
        m.zeros(2, 1, 0), m.ones(1, 2, 2), stride=2, padding=1),
    "conv_transpose1d_empty_unbatched": lambda m: m.nn.functional.conv_transpose1d(
        m.zeros(1, 0), m.ones(1, 2, 2)),
    "conv_transpose2d_empty": lambda m: m.nn.functional.conv_transpose2d(
        m.zeros(2, 1, 0, 3), m.ones(1, 2, 1, 1)),
    "conv_transpose3d_empty": lambda m: m.nn.functional.conv_transpose3d(
        m.zeros(2, 1, 3, 0, 3), m.ones(1, 2, 1, 1, 1)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_matches_torch(name):
    expected = _errors(torch, ERRORS[name])
    assert expected is not None, "torch raised nothing"
    actual = _errors(ember, ERRORS[name])
    assert actual == expected


def test_same_padding_even_kernel_warns():
    # (once per process, as torch's TORCH_WARN_ONCE; every time with warnings always on)
    ember.set_warn_always(True)
    try:
        with pytest.warns(UserWarning, match="Using padding='same' with even kernel lengths"):
            EF.conv2d(ember.zeros(1, 1, 4, 4), ember.zeros(1, 1, 2, 2), padding="same")
    finally:
        ember.set_warn_always(False)


def test_conv_second_order_through_modules():
    """create_graph through Conv2d + MaxPool2d + BatchNorm2d matches torch (float64)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 6, 6))
    if not hasattr(enn, "Sequential"):
        pytest.skip("ember.nn.Sequential is not there yet")

    def ctor(nn):
        return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.MaxPool2d(2),
                             nn.Conv2d(3, 2, 2))
    tm, em = ctor(tnn).double(), ctor(enn)
    for p in list(em.parameters()) + list(em.buffers()):
        if p.dtype.is_floating_point:
            p._data = p._data.astype(np.float64)
    _copy(tm, em)
    outs = []
    for mod, m in ((torch, tm), (ember, em)):
        xi = mod.tensor(x, requires_grad=True)
        y = (m(xi) ** 2).sum()
        (g,) = mod.autograd.grad(y, xi, create_graph=True)
        (g * g).sum().backward()
        outs.append([xi.grad.numpy()] + [p.grad.numpy() for p in m.parameters()])
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-10)


def test_normalization_dtype_rules_match_torch():
    # torch's CPU rule: parameters of the input's dtype, or all float32 under a float16 input.
    import itertools

    from oracle import same

    def body(lib):
        F = lib.nn.functional
        f32, f64, f16 = lib.float32, lib.float64, lib.float16
        out = []
        for xi, w, b, rm in itertools.product([f32, f64, f16], [None, f32, f64],
                                              [None, f32, f64], [None, f32, f64]):
            x = lib.ones(4, 2, dtype=xi)
            weight = None if w is None else lib.ones(2, dtype=w)
            bias = None if b is None else lib.ones(2, dtype=b)
            rmean = None if rm is None else lib.zeros(2, dtype=rm)
            rvar = None if rm is None else lib.ones(2, dtype=rm)
            for training in (True, False) if rm is not None else (True,):
                try:
                    out.append(str(F.batch_norm(x, rmean, rvar, weight, bias,
                                                training=training).dtype))
                except RuntimeError as e:
                    out.append(str(e))
        for f in (lambda: F.layer_norm(lib.ones(2, 3, dtype=f64), (3,), lib.ones(3)),
                  lambda: F.layer_norm(lib.ones(2, 3), (3,), lib.ones(3), lib.ones(3, dtype=f64)),
                  lambda: F.layer_norm(lib.ones(2, 3, dtype=f16), (3,), lib.ones(3)).dtype,
                  lambda: F.group_norm(lib.ones(2, 4, dtype=f64), 2, lib.ones(4)),
                  lambda: F.group_norm(lib.ones(2, 4), 2, lib.ones(4, dtype=f64)),
                  lambda: F.instance_norm(lib.ones(2, 4, 3, dtype=f64), weight=lib.ones(4),
                                          bias=lib.ones(4)),
                  lambda: F.layer_norm(lib.ones(2, 4), 4),
                  lambda: F.layer_norm(lib.ones(2, 4), [4.0])):
            try:
                out.append(str(f()))
            except (RuntimeError, TypeError) as e:
                out.append((type(e).__name__, str(e)))
        return out
    assert same(body).error is None


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_rms_norm_module_matches_torch(dtype):
    check_module(lambda nn: nn.RMSNorm((3, 4), eps=1e-3), (2, 3, 4), dtype)
    check_module(lambda nn: nn.RMSNorm(4, elementwise_affine=False), (2, 3, 4), dtype)


def test_rms_norm_functional_matches_torch():
    from oracle import same
    x = np.random.default_rng(6).standard_normal((2, 3, 4))

    def body(lib):
        F = lib.nn.functional
        out = []
        for dt in (lib.float32, lib.float64, lib.float16):
            xt = lib.tensor(x, dtype=dt, requires_grad=True)
            for kw in ({}, {"eps": 1e-2}, {"weight": lib.linspace(0.5, 2, 4, dtype=dt)}):
                y = F.rms_norm(xt, (4,), **kw)
                out.append((y, lib.autograd.grad((y * y).sum(), xt)))
        out.append(repr(lib.nn.RMSNorm([3, 4])))
        for bad in (lambda: F.rms_norm(lib.tensor(x), (3,)),
                    lambda: F.rms_norm(lib.tensor(x), (4,), lib.ones(3)),
                    lambda: F.rms_norm(lib.tensor(x), 4)):
            try:
                bad()
            except (RuntimeError, TypeError) as e:
                out.append((type(e).__name__, str(e)))
        return out
    assert same(body, rtol=1e-3, atol=1e-4).error is None


def test_convolution_of_an_input_with_no_channels():
    # torch's empty convolution: no channels out (the bias unused), zero gradients
    from oracle import same

    def body(t):
        x = t.ones(2, 0, 5, dtype=t.float64, requires_grad=True)
        w = t.ones(3, 0, 2, dtype=t.float64, requires_grad=True)
        b = t.ones(3, dtype=t.float64, requires_grad=True)
        y = t.nn.functional.conv1d(x, w, b, padding=1)
        y2 = t.nn.functional.conv2d(x[..., None], w[..., None], stride=2)
        y.sum().backward()
        return y, y.stride(), y2, x.grad, w.grad, b.grad
    assert same(body).error is None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", [
    "F.conv2d(cl(x4), w4)", "F.conv2d(x4, cl(w4))", "F.conv2d(x4, w4)",
    "F.conv_transpose2d(cl(x4), w4.transpose(0, 1))", "F.conv2d(cl(x4), w4g, groups=2)",
    "F.conv2d(cl(x4), w4d, groups=4)", "F.conv2d(x4, cl(w4[:, :, :1, :1]))",
    "F.conv3d(cl3(x5), w5)", "F.conv3d(x5, w5)", "F.conv1d(x4[0], w4[:, :, 0])",
    "F.conv2d(cl(x4), w4, bias)",
])
def test_convolution_result_is_channels_last_when_an_operand_is(case, dtype):
    """torch's CPU convolutions write a channels-last result (and input gradient) when the
    input or the weight suggests that format; 3-d ones only in float32."""
    def body(torch):
        F = torch.nn.functional
        torch.manual_seed(0)
        dt = getattr(torch, dtype)

        def cl(t):
            return t.to(memory_format=torch.channels_last)

        def cl3(t):
            return t.to(memory_format=torch.channels_last_3d)
        x4 = torch.randn(2, 4, 6, 6, dtype=dt)
        w4, w4g, w4d = (torch.randn(3, 4, 3, 3, dtype=dt), torch.randn(4, 2, 3, 3, dtype=dt),
                        torch.randn(4, 1, 3, 3, dtype=dt))
        x5, w5, bias = (torch.randn(2, 4, 5, 6, 6, dtype=dt),
                        torch.randn(3, 4, 3, 3, 3, dtype=dt), torch.randn(3, dtype=dt))
        names = {"F": F, "cl": cl, "cl3": cl3, "x4": x4, "w4": w4, "w4g": w4g, "w4d": w4d,
                 "x5": x5, "w5": w5, "bias": bias}
        x = x4 if "x4" in case else x5
        x.requires_grad_()
        out = eval(case, names)
        out.sum().backward()
        return out, out.stride(), x.grad.stride()
    same(body, rtol=1e-5, atol=1e-5)


def test_group_norm_of_one_value_per_group_is_refused_by_the_functional_only():
    """torch.nn.functional.group_norm refuses groups of one value ("Expected more than 1 value
    per channel when training"); the aten op (torch.group_norm, torch.native_group_norm) and
    groups of more than one value compute."""
    def body(t):
        x = t.tensor([[[1.5]], [[-0.5]]], requires_grad=True)
        return (t.group_norm(x, 1), t.native_group_norm(x, None, None, 2, 1, 1, 1, 1e-5)[0],
                t.nn.functional.group_norm(t.ones(1, 4) * x[0, 0], 2))
    same(body)


@pytest.mark.parametrize("per_sample_from", [0, 10 ** 9])
@pytest.mark.parametrize("small_weight_grad", [0, 10 ** 12])
@pytest.mark.parametrize("case", [
    dict(x=(3, 4, 7, 6), w=(6, 2, 3, 3), padding=1, groups=2),
    dict(x=(2, 3, 8, 8), w=(5, 3, 3, 2), stride=2, padding=(1, 0), dilation=(1, 2)),
    dict(x=(1, 4, 5, 5), w=(4, 4, 1, 1))])
def test_convolution_gemm_layouts_agree_with_torch(monkeypatch, per_sample_from,
                                                   small_weight_grad, case):
    """Each GEMM layout of ember's convolution kernels (per-sample or over the whole batch;
    the weight gradient summed over per-sample GEMMs or one GEMM) gives torch's values and
    gradients; which one runs depends on sizes, forced here by the thresholds."""
    from ember._ops import conv as CV
    monkeypatch.setattr(CV, "_PER_SAMPLE_POSITIONS", per_sample_from)
    monkeypatch.setattr(CV, "_SMALL_WEIGHT_GRAD", small_weight_grad)
    rng = np.random.default_rng(0)
    kw = {k: v for k, v in case.items() if k not in ("x", "w")}
    x, w = rng.standard_normal(case["x"]), rng.standard_normal(case["w"])
    b = rng.standard_normal(case["w"][0])
    results = []
    for lib in (torch, ember):
        xs, ws, bs = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        y = lib.nn.functional.conv2d(xs, ws, bs, **kw)
        # the transposed convolution of y back (stride 1 here runs as a plain convolution)
        z = lib.nn.functional.conv_transpose2d(y, ws, None, **kw)
        (z * z).sum().backward()
        results.append([y.detach().numpy(), z.detach().numpy(), xs.grad.numpy(),
                        ws.grad.numpy(), bs.grad.numpy()])
    for what, t, e in zip(("y", "z", "x.grad", "w.grad", "b.grad"), *results):
        _close(e, t, "float64", what)


@pytest.mark.parametrize("call", [
    "F.interpolate(x, size=6, mode='linear')",
    "F.interpolate(x, scale_factor=0.5, mode='linear', align_corners=True)",
    "F.interpolate(x, size=7, mode='linear', align_corners=True)",
    "F.interpolate(x, scale_factor=2)", "F.adaptive_avg_pool1d(x, 2)",
    "F.interpolate(x[None], scale_factor=2, mode='bilinear')",
    "F.adaptive_avg_pool2d(x[None], 1)"])
@pytest.mark.parametrize("special", [float("inf"), float("nan")])
def test_resampling_reads_only_each_outputs_own_taps(call, special):
    """Interpolation and adaptive average pooling read, for each output element, only its own
    source elements (linear: the two either side, a zero weight included), as torch's kernels:
    an inf or NaN elsewhere stays out of it, in the values and in the gradients (the dense
    product of a resampling matrix multiplied it by the zeros around, making every output NaN;
    difftest 28000000's F.interpolate of a tangent with infinities)."""
    def body(torch):
        F = torch.nn.functional
        x = torch.tensor([[[1.0, special, 2.0, 3.0, -0.5]]], dtype=torch.float64,
                         requires_grad=True)
        y = eval(call)
        g, = torch.autograd.grad(y, x, torch.ones_like(y))
        return y, g
    same(body)
