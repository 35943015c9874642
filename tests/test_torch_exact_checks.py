"""torch's checks where ember used to check otherwise: the shapes take_along_dim broadcasts
(infer_size's error), the degrees-of-freedom warning of var and std on empty tensors, the
strides of expand (what decides whether ``x[None, :] = x`` copies a tensor onto itself), and
the order of the checks of an in-place write.

Each body runs on PyTorch and on ember (``oracle.same``); the tests skip without torch.
"""
from __future__ import annotations

import pytest
from oracle import same


@pytest.mark.parametrize("shapes", [((4, 2), (2, 3), -1), ((1, 4, 4), (1, 3, 2), -2),
                                    ((2, 3), (5, 3), 1), ((2, 3), (2, 1), 0)])
def test_take_along_dim_broadcast_error(shapes):
    size, index_size, dim = shapes
    same(lambda t: t.take_along_dim(t.ones(size, requires_grad=True),
                                    t.zeros(index_size, dtype=t.long), dim))


_MOMENTS = {
    "var_rows_of_none": lambda t: t.zeros(0, 3).var(1),
    "var_rows_of_none_c0": lambda t: t.zeros(0, 3).var(1, correction=0),
    "var_none_of_rows": lambda t: t.zeros(3, 0).var(0),
    "var_columns_of_none": lambda t: t.zeros(0, 3).var(0),
    "var_keepdim": lambda t: t.zeros(0, 3).var(1, keepdim=True),
    "var_negative_correction": lambda t: t.zeros(0, 3).var(1, correction=-1),
    "var_half_correction": lambda t: t.zeros(0, 3).var(1, correction=0.5),
    "std": lambda t: t.zeros(0, 3, requires_grad=True).std(1),
    "std_mean": lambda t: t.std_mean(t.zeros(0, 3), 1),
    "var_mean": lambda t: t.var_mean(t.zeros(0, 3), 1, correction=0),
    "var_all": lambda t: t.zeros(0, 3).var(),
    "var_too_much_correction": lambda t: t.ones(2, 3).var(1, correction=3),
    "var_fractional_dof": lambda t: t.ones(2, 3).var(1, correction=2.5),
}


@pytest.mark.parametrize("name", sorted(_MOMENTS))
def test_degrees_of_freedom_warning(name):
    same(_MOMENTS[name])
