"""nll_loss's and cross_entropy's checks of their targets and weights against torch 2.13: the
exception and message, in torch's order, for each rank of input (1-D/2-D nll_loss, 4-D
nll_loss2d, 3-D and 5-D viewed as 4-D), target dtype and weight."""
from __future__ import annotations

import pytest
from oracle import same


def _nll(shape, tshape, tdtype="int64", weight=None, wgrad=False, fn="nll_loss", **kw):
    def body(lib):
        x = lib.zeros(shape, requires_grad=True)
        t = lib.zeros(tshape, dtype=getattr(lib, tdtype))
        w = None if weight is None else lib.ones(weight, requires_grad=wgrad)
        out = getattr(lib.nn.functional, fn)(x, t, weight=w, **kw)
        out.sum().backward()
        return out, x.grad
    return body


# (input shape, target shape, target dtype, weight shape, weight requires grad)
NLL_CASES = [
    ((3, 4), (3,), dt, w, False)
    for dt in ("int32", "int16", "int8", "bool", "float32", "float64", "uint8")
    for w in (None, (7,))
] + [
    ((4,), (), "int32", None, False), ((4,), (), "uint8", None, False),
    ((4,), (2,), "int64", None, False), ((4,), (2,), "int32", None, False),
    ((4,), (2,), "int64", (3,), False), ((4,), (2,), "int64", (3,), True),
    ((4,), (2, 2), "int64", None, False), ((3, 4), (), "int64", None, False),
    ((3, 4), (3, 2), "int32", None, False), ((3, 4), (3, 2), "int64", (3,), False),
    ((3, 4), (3,), "int32", (4,), True), ((3, 4), (3,), "int64", (2, 2), False),
    ((0, 4), (0,), "int32", None, False), ((0, 4), (0,), "uint8", None, False),
] + [
    (shape, tshape, dt, w, False)
    for shape, tshape in (((3, 4, 5), (3, 5)), ((3, 4, 5, 6), (3, 5, 6)),
                          ((3, 4, 5, 6, 2), (3, 5, 6, 2)))
    for dt in ("int32", "int16", "uint8", "float32", "int64")
    for w in (None, (7,), (2, 2))
] + [
    ((3, 4, 5, 6), (3, 5, 7), "uint8", None, False), ((3, 4, 5, 6), (3, 5, 7), "int16", (3,), False),
    ((3, 4, 5, 6), (3, 5), "int32", None, False), ((3, 4, 5, 6), (3, 5), "int64", (3,), False),
    ((3, 4, 5, 6), (3, 5), "int32", (4,), True), ((3, 4, 5, 6), (3, 5, 6, 1), "int64", None, False),
    ((3, 4, 5, 6), (3, 5, 6), "uint8", (4,), True), ((3, 4, 5, 6), (3, 5, 6), "int16", (4,), True),
    ((3, 4, 5), (3, 6), "int32", (4,), True), ((3, 4, 5), (3, 5), "int64", (3,), True),
    ((0, 4, 5), (0, 5), "uint8", None, False),
]


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("shape,tshape,tdtype,weight,wgrad", NLL_CASES)
def test_target_and_weight_checks_match_torch(fn, shape, tshape, tdtype, weight, wgrad):
    same(_nll(shape, tshape, tdtype, weight, wgrad, fn=fn))


CE_CASES = [
    # equal shapes: class probabilities, whose target must be floating point
    ((3, 4), (3, 4), "int32", None, {}), ((4,), (4,), "int64", None, {}),
    ((3, 4), (3, 4), "uint8", None, {}), ((3, 4), (3, 4), "bool", None, {}),
    ((3, 4), (3, 4), "complex64", None, {}), ((3, 4), (3, 4), "float64", None, {}),
    ((3, 4), (3, 4), "float32", None, {"ignore_index": 1}),
    ((3, 4), (3, 4), "float32", None, {"ignore_index": -1}),
    ((3, 4), (3, 4), "float32", (3,), {}), ((3, 4), (3, 4), "float32", (2, 2), {}),
    ((3, 4), (3, 4), "float32", (3,), {"label_smoothing": 2.0}),
    ((3, 4), (3, 4), "int32", None, {"label_smoothing": 2.0}),
    ((), (), "float32", None, {}), ((), (), "int64", None, {}),
    ((), (), "float32", None, {"label_smoothing": 2.0}),
    # label_smoothing: only a positive value is checked, printed as C++ prints a double
    ((3, 4), (3,), "int64", None, {"label_smoothing": -0.5}),
    ((3, 4), (3, 4), "float32", None, {"label_smoothing": -0.5}),
    ((3, 4), (3, 4), "float32", None, {"label_smoothing": float("nan")}),
    ((3, 4), (3, 4), "float32", None, {"label_smoothing": 1.25}),
    ((3, 4), (3,), "int64", None, {"label_smoothing": 2.0}),
    ((3, 4), (3,), "int64", None, {"label_smoothing": 123456789.0}),
    ((3, 4), (3,), "int64", None, {"label_smoothing": float("inf")}),
    # smoothed class indices go through nll_loss's checks too
    ((3, 4), (3,), "int32", None, {"label_smoothing": 0.1}),
    ((3, 4), (3,), "uint8", None, {"label_smoothing": 0.1}),
    ((3, 4), (3,), "int16", (3,), {"label_smoothing": 0.1}),
    ((3, 4), (3,), "float64", None, {"label_smoothing": 0.2}),
    ((3, 4, 5), (3, 5), "uint8", None, {"label_smoothing": 0.1}),
    ((3, 4, 5), (3, 6), "int32", None, {"label_smoothing": 0.2}),
    ((3, 4, 5, 6), (3, 6), "float32", None, {}),
    # a 0-d input: torch's log_softmax along dim 1
    ((), (3,), "int64", None, {}), ((), (3,), "int64", None, {"label_smoothing": 0.1}),
]


@pytest.mark.parametrize("shape,tshape,tdtype,weight,kw", CE_CASES)
def test_cross_entropy_target_checks_match_torch(shape, tshape, tdtype, weight, kw):
    same(_nll(shape, tshape, tdtype, weight, fn="cross_entropy", **kw))
