"""F.interpolate's modes against torch: errors, node names, and float32/float64 values and
gradients to the last bit (torch's CPU kernels' source positions, weights and order of
additions)."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same


def _x(t, *shape, dtype="float32", seed=0):
    values = np.random.RandomState(seed).randn(*shape).astype(dtype)
    return t.tensor(values, requires_grad=True)


_ERRORS = {
    "zero_size_1d": lambda F, x: F.interpolate(x(2, 3, 4), size=0),
    "zero_scale_1d": lambda F, x: F.interpolate(x(2, 3, 4), scale_factor=0.1, mode="linear"),
    "zero_size_2d": lambda F, x: F.interpolate(x(2, 3, 4, 5), size=(0, 3), mode="bilinear"),
    "zero_size_bicubic": lambda F, x: F.interpolate(x(2, 3, 4, 5), size=(3, 0),
                                                    mode="bicubic"),
    "zero_size_3d": lambda F, x: F.interpolate(x(1, 2, 3, 4, 5), size=(3, 0, 2),
                                               mode="nearest-exact"),
    "negative_size": lambda F, x: F.interpolate(x(2, 3, 4, 5), size=(-1, 2)),
    "negative_scale": lambda F, x: F.interpolate(x(1, 1, 5), scale_factor=-0.5),
    "empty_input_dim": lambda F, x: F.interpolate(x(2, 3, 0, 4), size=3, mode="bicubic"),
    "empty_channels": lambda F, x: F.interpolate(x(2, 0, 4, 4), size=3, mode="bicubic"),
    "empty_channels_3d": lambda F, x: F.interpolate(x(2, 0, 4, 4, 4), size=3,
                                                    mode="trilinear"),
    "both": lambda F, x: F.interpolate(x(1, 2, 4, 4), size=3, scale_factor=2),
    "recompute_with_size": lambda F, x: F.interpolate(x(1, 2, 4, 4), size=3,
                                                      recompute_scale_factor=True),
    "float_size": lambda F, x: F.interpolate(x(1, 2, 4, 4), size=(3.0, 2)),
    "align_corners_area": lambda F, x: F.interpolate(x(1, 2, 4, 4), size=3, mode="area",
                                                     align_corners=False),
    "align_corners_exact": lambda F, x: F.interpolate(x(1, 2, 4), size=3,
                                                      mode="nearest-exact", align_corners=True),
    "antialias_linear": lambda F, x: F.interpolate(x(1, 2, 4), size=3, mode="linear",
                                                   antialias=True),
    "antialias_5d": lambda F, x: F.interpolate(x(1, 2, 4, 4, 4), size=3, mode="bilinear",
                                               antialias=True),
    "bicubic_3d": lambda F, x: F.interpolate(x(1, 2, 4), size=3, mode="bicubic"),
    "bicubic_5d": lambda F, x: F.interpolate(x(1, 2, 4, 4, 4), size=3, mode="bicubic"),
    "trilinear_4d": lambda F, x: F.interpolate(x(1, 2, 4, 4), size=3, mode="trilinear"),
    "linear_5d": lambda F, x: F.interpolate(x(1, 2, 4, 4, 4), size=3, mode="linear"),
    "nearest_2d_input": lambda F, x: F.interpolate(x(2, 4), size=3),
    "area_6d": lambda F, x: F.interpolate(x(1, 1, 2, 2, 2, 2), size=1, mode="area"),
    "lanczos_no_antialias": lambda F, x: F.interpolate(x(1, 2, 4, 4), size=3, mode="lanczos"),
    "lanczos_align": lambda F, x: F.interpolate(x(1, 2, 4, 4), size=3, mode="lanczos",
                                                align_corners=True, antialias=True),
    "antialias_zero_size": lambda F, x: F.interpolate(x(1, 2, 4, 4), size=(0, 3),
                                                      mode="bicubic", antialias=True),
}


@pytest.mark.parametrize("case", sorted(_ERRORS))
def test_errors_as_torch(case):
    same(lambda t: _ERRORS[case](t.nn.functional, lambda *s: _x(t, *s)))


@pytest.mark.parametrize("mode,shape", [
    ("nearest", (2, 3, 4)), ("nearest", (2, 3, 4, 5)), ("nearest", (1, 2, 3, 4, 5)),
    ("nearest-exact", (2, 3, 4)), ("nearest-exact", (2, 3, 4, 5)),
    ("nearest-exact", (1, 2, 3, 4, 5)), ("linear", (2, 3, 4)), ("bilinear", (2, 3, 4, 5)),
    ("trilinear", (1, 2, 3, 4, 5)), ("bicubic", (2, 3, 4, 5)), ("area", (2, 3, 7)),
    ("area", (2, 3, 7, 5)), ("area", (1, 2, 3, 4, 5))])
@pytest.mark.parametrize("size", [dict(scale_factor=1.5), dict(scale_factor=0.5), dict(size=1)])
def test_node_names_values_and_gradients(mode, shape, size):
    """Node names (and their backward's under create_graph), and bitwise values and
    gradients, area's (adaptive pooling's) within rounding."""
    def body(t):
        x = _x(t, *shape)
        y = t.nn.functional.interpolate(x, mode=mode, **size)
        g = t.tensor(np.random.RandomState(1).randn(*y.shape).astype(np.float32),
                     requires_grad=True)
        gx, = t.autograd.grad(y, x, g, create_graph=True)
        names = type(y.grad_fn).__name__, gx.grad_fn and type(gx.grad_fn).__name__
        return names, y, gx
    exact = mode in _BITWISE and size != dict(size=1)  # (area to 1: torch's mean shortcut)
    same(body, rtol=0 if exact else 1e-6, atol=0 if exact else 1e-6)


_BITWISE = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "bicubic", "area")


def _random_configs(mode, nd, count, seed):
    rs = np.random.RandomState(seed)
    for _ in range(count):
        shape = [int(v) for v in rs.randint(1, 7 if nd == 3 else 10, nd)]
        kw = dict(mode=mode)
        if mode in ("linear", "bilinear", "trilinear", "bicubic"):
            kw["align_corners"] = bool(rs.randint(2))
        if rs.rand() < 0.5:
            kw["size"] = [int(v) for v in rs.randint(1, 14 if nd < 3 else 8, nd)]
        else:
            factors = [float(np.round(rs.uniform(0.3, 3.2), 2)) for _ in range(nd)]
            if any(int(s * f) < 1 for s, f in zip(shape, factors)):
                kw["size"] = [max(1, int(s * f)) for s, f in zip(shape, factors)]
            else:
                kw["scale_factor"] = factors
                kw["recompute_scale_factor"] = bool(rs.rand() < 0.3)
        yield shape, kw


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,nd", [("nearest", 1), ("nearest", 2), ("nearest", 3),
                                     ("nearest-exact", 1), ("nearest-exact", 2),
                                     ("nearest-exact", 3), ("linear", 1), ("bilinear", 2),
                                     ("trilinear", 3), ("bicubic", 2), ("area", 1),
                                     ("area", 2), ("area", 3)])
def test_random_configurations_bitwise(mode, nd, dtype):
    """Random sizes, scales (per dim, recomputed or not) and align_corners: values and
    gradients are torch's to the last bit."""
    def body(t):
        results = []
        for k, (shape, kw) in enumerate(_random_configs(mode, nd, 12, seed=nd)):
            if mode == "area" and kw.get("size") == [1] * nd:
                continue  # (torch's mean shortcut: the reduction's own summation order)
            x = _x(t, 2, 2, *shape, dtype=dtype, seed=k)
            y = t.nn.functional.interpolate(x, **kw)
            g = np.random.RandomState(100 + k).randn(*y.shape).astype(dtype)
            y.backward(t.tensor(g))
            results.append((y, x.grad))
        return results
    same(body, rtol=0, atol=0)


def test_float64_position_just_below_an_element_takes_it():
    """torch floors a float64 source position through float32 (floorf): 4 -> 12 places
    output 4 at 1 - 2**-53, which it takes as element 1 (weight 1 and 0)."""
    def body(t):
        x = _x(t, 1, 1, 4, dtype="float64")
        y = t.nn.functional.interpolate(x, size=12, mode="linear")
        y.backward(t.ones_like(y))
        return y, x.grad
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,shape,size", [
    ("bilinear", (1, 40, 3, 4), (5, 6)), ("bilinear", (2, 12, 3, 4), (5, 6)),
    ("bilinear", (1, 5, 5, 6), (70, 60)), ("trilinear", (1, 20, 3, 4, 3), (5, 6, 7)),
    ("nearest", (1, 5, 3, 4, 3), (6, 8, 7)), ("nearest", (1, 2, 40, 30), (80, 60)),
    ("nearest-exact", (1, 5, 6, 4), (7, 9)), ("bicubic", (1, 5, 6, 4), (7, 9))])
@pytest.mark.parametrize("channels_last", [False, True])
def test_channels_and_layouts(mode, shape, size, channels_last, dtype):
    """torch's channels-last kernel (a channels-last input of more than 3 channels, or a
    2-d output of height + width <= 128) rounds its vector lanes and its scalar tail of
    channels differently, and reads nearest_idx's indices; results are laid out as the
    input."""
    def body(t):
        x = _x(t, *shape, dtype=dtype).detach()
        if channels_last:
            x = x.contiguous(memory_format=t.channels_last if x.ndim == 4
                             else t.channels_last_3d)
        x.requires_grad_()
        y = t.nn.functional.interpolate(x, size=size, mode=mode)
        g = np.random.RandomState(2).randn(*y.shape).astype(dtype)
        y.backward(t.tensor(g))
        return y, y.stride(), x.grad
    same(body, rtol=0, atol=0)


def test_nearest_forward_computes_doubled_sizes_its_backward_shortcuts():
    """torch's nearest forward takes floor(o / scale) even where the size doubles (2 ->
    4 at scale 2.19 reads element 0 twice); its backward's nearest_idx takes o // 2."""
    def body(t):
        x = _x(t, 1, 1, 2)
        y = t.nn.functional.interpolate(x, scale_factor=2.19)
        y.backward(t.tensor([[[1.0, 2.0, 4.0, 8.0]]]))
        return y, x.grad
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode,shape", [("nearest", (1, 2, 3, 4, 5)),
                                        ("nearest-exact", (2, 3, 4, 5)),
                                        ("trilinear", (1, 2, 3, 4, 5)),
                                        ("bicubic", (2, 3, 4, 5))])
def test_low_precision_inputs(mode, shape, dtype):
    def body(t):
        x = _x(t, *shape).to(getattr(t, dtype)).detach().requires_grad_()
        y = t.nn.functional.interpolate(x, scale_factor=1.7, mode=mode)
        y.backward(t.ones_like(y))
        return y, x.grad
    same(body, rtol=1e-2, atol=1e-2)


def test_empty_batch():
    def body(t):
        out = []
        for mode, shape in [("nearest", (0, 2, 3, 3, 3)), ("bicubic", (0, 2, 3, 3)),
                            ("nearest-exact", (0, 2, 3)), ("area", (0, 2, 4, 4))]:
            x = _x(t, *shape)
            y = t.nn.functional.interpolate(x, size=2, mode=mode)
            y.sum().backward()
            out.append((y, x.grad))
        return out
    same(body)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "trilinear"])
def test_upsample_module(mode):
    def body(t):
        m = t.nn.Upsample(scale_factor=(2, 1.5, 0.5), mode=mode)
        return repr(m), m(_x(t, 1, 2, 3, 4, 4))
    same(body, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(3, 5), (9, 2), (4, 4), (7, 1), (2, 11)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_antialias(mode, size, align_corners, dtype):
    """antialias=True: torch's nodes, its window weights (gradients to the last bit) and
    values within a unit or two in the last place (torch sums windows of five taps or more
    in an order not yet reproduced). A one-wide output keeps torch's result: its vertical
    pass reads the first row's taps for every row."""
    def body(t):
        x = _x(t, 2, 3, 6, 5, dtype=dtype)
        y = t.nn.functional.interpolate(x, size=size, mode=mode, antialias=True,
                                        align_corners=align_corners)
        g = np.random.RandomState(3).randn(*y.shape).astype(dtype)
        gx, = t.autograd.grad(y, x, t.tensor(g), create_graph=True)
        names = type(y.grad_fn).__name__, type(gx.grad_fn).__name__
        return names, y, gx.detach()
    tol = 3e-7 if dtype == "float32" else 1e-15
    same(lambda t: body(t)[:2], rtol=tol, atol=tol)
    same(lambda t: body(t)[2], rtol=0, atol=0)


@pytest.mark.parametrize("mode,shape,size", [("bicubic", (2, 3, 4, 5), (7, 3)),
                                             ("area", (2, 3, 7, 5), (3, 4)),
                                             ("area", (1, 2, 5, 4, 6), (2, 3, 4))])
def test_float16_weights_and_accumulation_as_torch(mode, shape, size):
    """torch's generic kernel keeps float16 weights (bicubic's rounded to float16, summed in
    float32); its adaptive average pooling backward rounds g / kh / kw and each addition to
    float16."""
    def body(t):
        x = _x(t, *shape).half().detach().requires_grad_()
        y = t.nn.functional.interpolate(x, size=size, mode=mode)
        g = np.random.RandomState(4).randn(*y.shape).astype(np.float16)
        y.backward(t.tensor(g))
        return y, x.grad
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("call", ["upsample", "upsample_nearest", "upsample_bilinear"])
def test_deprecated_upsample_functions_warn(call):
    def body(t):
        x = _x(t, 1, 2, 3, 4)
        kw = dict(size=5) if call == "upsample_bilinear" else dict(scale_factor=2)
        return getattr(t.nn.functional, call)(x, **kw)
    same(body, rtol=0, atol=0)
