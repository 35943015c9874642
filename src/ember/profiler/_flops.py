"""FLOP estimates from input shapes, for the ops torch estimates (``with_flops=True``)."""
from __future__ import annotations

import math


def _broadcast_numel(shapes):
    dims = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(1, dims + 1):
        out.append(max((s[-k] for s in shapes if len(s) >= k), default=1))
    return math.prod(out)


def _mm(shapes):
    (m, k), (_, n) = shapes[0], shapes[1]
    return 2 * m * k * n


def _addmm(shapes):
    return _mm(shapes[1:3])


def _bmm(shapes):
    (b, m, k), (_, _, n) = shapes[0], shapes[1]
    return 2 * b * m * k * n


def _pointwise(shapes):
    return _broadcast_numel([s for s in shapes if s])


_FORMULAS = {"aten::mm": _mm, "aten::addmm": _addmm, "aten::bmm": _bmm,
             "aten::mul": _pointwise, "aten::add": _pointwise}


def estimate_flops(name, shapes):
    """Floating point operations of one call, or None where torch gives no estimate."""
    formula = _FORMULAS.get(name)
    if formula is None:
        return None
    try:
        return int(formula(shapes))
    except (ValueError, IndexError):
        return None
