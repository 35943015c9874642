"""jvp and jacfwd of every differentiable row of the op table (its first float64 sample, each
floating output) against torch 2.13: where torch has no forward-mode formula for an op it
raises its NotImplementedError ("Trying to use forward AD with ... not implemented yet"), and
so must ember, never computing a tangent or a Jacobian torch has none of; where torch computes
one, ember's has its shape and dtype (values: tests/ops/test_ops.py's test_forward_ad)."""
import warnings

import numpy as np
import pytest
from ops.op_db import DT, OP_DB, C
from ops.test_ops import _has_array, _tensor, outputs
from oracle import norm, torch_or_skip

import ember

# rows where ember and torch part ways, each a known gap (kept strict, so that a fix shows up)
_KNOWN = {
    "jvp": {
        "_fw_primal": "torch refuses the dual API inside a transform's level; ember runs it",
        "view_copy_of_transposed": "torch's tangent keeps the primal's strides and view_copy "
                                   "then fails; ember's tangent is contiguous",
    },
    "jacfwd": {
        "_fw_primal": "torch refuses the dual API inside a transform's level; ember runs it",
        "view_copy_of_transposed": "torch's tangent keeps the primal's strides; ember's does not",
        # torch's jacfwd is vmap of jvp: its batching rules' refusals; ember's jacfwd
        # pushes a batch of tangents without vmap
        "unsafe_split_with_sizes": "torch has no batching rule nor fallback for it",
        "svd_lowrank": "torch's vmap refuses random ops (randomness='error')",
        "pca_lowrank": "torch's vmap refuses random ops (randomness='error')",
        "native_dropout": "torch's vmap refuses random ops (randomness='error')",
        "rrelu": "torch's vmap refuses rrelu_with_noise",
        "rrelu_inplace": "torch's vmap refuses rrelu_with_noise_ before its forward AD does",
        "as_strided_scatter": "torch has no batching rule for as_strided_scatter",
        "as_strided_": "torch's Jacobian of an in-place as_strided_ under its vmap has the "
                       "input's shape twice",
    },
}


def _rebind(sample, lib, given):
    """The sample's arguments for ``lib`` with ``given`` in the places of its float arrays, in
    order (jvp's inputs do not require grad: the op table's binder places by that flag)."""
    it = iter(given)

    def convert(value):
        if isinstance(value, C):
            return _tensor(lib, value.value, False)
        if isinstance(value, np.ndarray):
            return next(it) if value.dtype.kind in "fc" else _tensor(lib, value, False)
        if _has_array(value):
            return type(value)(convert(v) for v in value)
        if isinstance(value, DT):
            return getattr(lib, value.name)
        return value
    return [convert(a) for a in sample.args], {k: convert(v) for k, v in sample.kwargs.items()}


def _primals(sample, lib):
    def collect(value, out):
        if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
            out.append(_tensor(lib, value, False))
        elif _has_array(value):
            for v in value:
                collect(v, out)
    found = []
    for v in list(sample.args) + list(sample.kwargs.values()):
        collect(v, found)
    return found


def _leaves(lib, tree):
    if isinstance(tree, lib.Tensor):
        return [tree]
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _leaves(lib, t)]
    return []


def _outcome(lib, row, sample, transform):
    fn = row.torch_fn(lib) if lib is not ember else row.op

    def f(*ts):
        args, kwargs = _rebind(sample, lib, ts)
        return tuple(o for o in outputs(fn(*args, **kwargs)) if isinstance(o, lib.Tensor)
                     and (o.is_floating_point() or o.is_complex()))
    primals = _primals(sample, lib)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if transform == "jvp":
                result = lib.func.jvp(f, tuple(primals), tuple(lib.ones_like(p)
                                                               for p in primals))[1]
            else:
                result = lib.func.jacfwd(f, argnums=tuple(range(len(primals))))(*primals)
    except Exception as e:  # noqa: BLE001 - the type and text are what is compared
        return type(e).__name__, norm(str(e)).split("\n")[0]
    return [(tuple(t.shape), str(t.dtype).split(".")[-1]) for t in _leaves(lib, result)]


def _rows(transform):
    for row in OP_DB:
        if row.differentiable and "float64" in row.dtypes:
            known = _KNOWN[transform].get(row.name)
            marks = () if known is None else pytest.mark.xfail(strict=True, reason=known)
            yield pytest.param(row, id=row.name, marks=marks)


@pytest.mark.parametrize("row", list(_rows("jvp")))
def test_jvp_matches_torch(row):
    _check(row, "jvp")


@pytest.mark.parametrize("row", list(_rows("jacfwd")))
def test_jacfwd_matches_torch(row):
    _check(row, "jacfwd")


def _check(row, transform):
    torch = torch_or_skip()
    samples = row.make_samples("float64")
    if not samples or not _primals(samples[0], ember):
        pytest.skip("no sample with a floating input")
    assert _outcome(ember, row, samples[0], transform) == _outcome(torch, row, samples[0],
                                                                     transform)
