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


_EXPANDED = {"0-dim": lambda t: t.tensor(1.), "one": lambda t: t.ones(1),
             "one_by_one": lambda t: t.ones(1, 1), "row": lambda t: t.ones(2),
             "strided": lambda t: t.ones(3)[::2], "empty": lambda t: t.ones(0),
             "transposed": lambda t: t.ones(2, 3).t()}


@pytest.mark.parametrize("name", sorted(_EXPANDED))
def test_expand_strides(name):
    """A new dimension of size 1 gets the stride that continues the next one (NumPy's 0 is
    not torch's); a 0-dim tensor's new dimensions all get 0."""
    def body(t):
        x = _EXPANDED[name](t)
        lead = [(0,), (1,), (2,), (1, 1), (1, 2), (0, 1)]
        return [x.expand(s + tuple(x.shape)).stride() for s in lead]
    same(body)


_SELF_COPIES = {  # torch's copy_ returns at once when the source is the very same elements
    "unsqueezed": lambda t, a: a.__setitem__((None, slice(None)), a),
    "none": lambda t, a: a.__setitem__(None, a),
    "ellipsis": lambda t, a: a.__setitem__(Ellipsis, a),
    "row_view": lambda t, a: a.__setitem__((None, slice(None)), a.view(1, 6)),
    "diagonal": lambda t, a: a.view(2, 3)[:, :2].diagonal().__setitem__(
        (None, slice(None)), a.view(2, 3)[:, :2].diagonal()),
    # these overlap in part: torch refuses them
    "shifted": lambda t, a: a.__setitem__(slice(0, 3), a[1:4]),
    "transposed": lambda t, a: a.view(2, 3).copy_(a.view(3, 2).t()),
}


@pytest.mark.parametrize("name", sorted(_SELF_COPIES))
def test_setitem_onto_itself(name):
    def body(t):
        a = t.arange(6.)
        _SELF_COPIES[name](t, a)
        return a, a._version
    same(body)


def test_setitem_onto_itself_recorded():
    def body(t):
        b = t.ones(3, requires_grad=True).exp()
        b[None, :] = b
        return b, b._version, b.grad_fn.next_functions[0][0].name()
    same(body)


def _sum_gradient(t):
    x = t.ones(2, 4, requires_grad=True)
    return x, t.autograd.grad(x.sum(), [x])[0]


_GRADIENT_WRITES = {  # sum's gradient is an expanded view the backward pass made (no_grad)
    "copy_tracked": lambda t, x, g: g.copy_(x * 0.7),
    "mul_tracked": lambda t, x, g: g.mul_(x),
    "fill_tracked": lambda t, x, g: g.fill_(x[0, 0]),
    "row_copy_tracked": lambda t, x, g: g[0].copy_(x[0] * 2),
    "copy_plain": lambda t, x, g: g.copy_(x.detach() * 0.7),
    "copy_no_grad": lambda t, x, g: t.no_grad()(g.copy_)(x * 2),
    "fill_number": lambda t, x, g: g.fill_(2.),
    "zero": lambda t, x, g: g.zero_(),
    "add_number": lambda t, x, g: g.add_(1.),
}


@pytest.mark.parametrize("name", sorted(_GRADIENT_WRITES))
def test_write_into_expanded_gradient(name):
    """Autograd's refusal of a view made in no_grad mode comes before the kernel's of a
    written-to tensor whose elements overlap."""
    def body(t):
        x, g = _sum_gradient(t)
        _GRADIENT_WRITES[name](t, x, g)
        return g, g._is_view()
    same(body)


_NUMBERS = [float("nan"), float("inf"), -float("inf"), 1e30, 70000.0, 300.0, 255.5, -0.5,
            -255, -256, 300, 2**63, -2**63, 2**64, -2**63 - 1, True, 1 + 2j, complex("nan")]
_TYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
          "complex64"]
_MASK = [True, False]
_NUMBER_WRITES = {  # each writes number v into tensor x (torch: Scalar.to<T>(), checked)
    "masked_fill_": lambda t, x, v: x.masked_fill_(t.tensor(_MASK), v),
    "masked_fill_empty_mask": lambda t, x, v: x.masked_fill_(t.tensor([False, False]), v),
    "masked_fill": lambda t, x, v: x.masked_fill(t.tensor(_MASK), v),
    "index_fill_": lambda t, x, v: x.index_fill_(0, t.tensor([1]), v),
    "fill_": lambda t, x, v: x.fill_(v),
    "setitem": lambda t, x, v: x.__setitem__(0, v),
    "setitem_empty": lambda t, x, v: x.__setitem__(slice(0, 0), v),
    "full": lambda t, x, v: t.full((2,), v, dtype=x.dtype),
    "new_full": lambda t, x, v: x.new_full((2,), v),
}
_TENSOR_WRITES = {  # the value a 0-dim tensor: read as a number (checked) or copied (not)
    "masked_fill_": lambda t, x, v: x.masked_fill_(t.tensor(_MASK), v),
    "index_fill_": lambda t, x, v: x.index_fill_(0, t.tensor([1]), v),
    "setitem_mask": lambda t, x, v: x.__setitem__(t.tensor(_MASK), v),
    "fill_": lambda t, x, v: x.fill_(v),
    "setitem": lambda t, x, v: x.__setitem__(0, v),
}


def _write_all(t, write, values, as_tensor):
    out = []
    for name in _TYPES:
        for v in values:
            x = t.zeros(2, dtype=getattr(t, name))
            try:
                r = write(t, x, t.tensor(v) if as_tensor else v)
                got = repr((r if r is not None and r is not x else x).tolist())  # (NaN)
                # (an integer's value after NaN or an overflow is the C cast's, unspecified)
                out.append(got if name[0] in "bfc" or not _wild(v) else "written")
            except Exception as e:  # noqa: BLE001 - the type and text are what is compared
                out.append((type(e).__name__, str(e)))
    return out


def _wild(v):
    return isinstance(v, (float, complex)) and not abs(v) < 2**31


@pytest.mark.parametrize("name", sorted(_NUMBER_WRITES))
def test_number_out_of_range(name):
    same(lambda t: _write_all(t, _NUMBER_WRITES[name], _NUMBERS, False))


@pytest.mark.parametrize("name", sorted(_TENSOR_WRITES))
def test_zero_dim_value_out_of_range(name):
    # (a complex tensor copied into a real one: torch warns once per process)
    values = [v for v in _NUMBERS if (type(v) is not int or -2**63 <= v < 2**63) and not (
        type(v) is complex and name in ("fill_", "setitem"))]
    same(lambda t: _write_all(t, _TENSOR_WRITES[name], values, True))


def _scatter_case(t, rng, op):
    """A scatter into a tensor (permuted in memory half the time) with one index out of
    bounds somewhere: what torch's kernel wrote before refusing it, and its message."""
    nd = rng.randint(1, 4)
    shape = [rng.randint(1, 4) for _ in range(nd)]
    perm = rng.sample(range(nd), nd)
    x = t.zeros([shape[p] for p in perm]).permute([perm.index(i) for i in range(nd)])
    dim = rng.randrange(nd)
    ishape = [rng.randint(1, s) for s in shape]
    ishape[dim] = rng.randint(1, 4)
    n = 1
    for s in ishape:
        n *= s
    values = [rng.randrange(shape[dim]) for _ in range(n)]
    values[rng.randrange(n)] = rng.choice([-1, shape[dim] + rng.randint(0, 3)])
    index = t.tensor(values).reshape(ishape)
    src = t.arange(1., n + 1).reshape(ishape)
    try:
        if op == "scatter_value":
            x.scatter_(dim, index, 7.)
        elif op == "scatter_multiply":
            x.add_(1).scatter_(dim, index, src, reduce="multiply")
        else:
            getattr(x, op)(dim, index, src)
        error = None
    except RuntimeError as e:
        error = str(e)
    return error, x, x._version


@pytest.mark.parametrize("op", ["scatter_add_", "scatter_", "scatter_value",
                                "scatter_multiply"])
def test_scatter_writes_before_out_of_bounds(op):
    import random
    same(lambda t: [_scatter_case(t, random.Random(seed), op) for seed in range(40)],
         check_warnings=False)  # (reduce='multiply': torch's deprecation warning, once)


def _scatter_reduce_warnings(t):
    """The warnings (text, and whether on this file's line) of scatter and scatter_ calls with
    ``reduce=``, with warn_always on, and what each call raised."""
    import warnings
    x, index, src = t.zeros(3, 3), t.tensor([[0, 1, 2]]), t.ones(1, 3)
    calls = [lambda: t.scatter(x, 0, index, src, reduce="add"),
             lambda: x.clone().scatter_(0, index, src, reduce="multiply"),
             lambda: x.scatter(0, index, src=src, reduce="add"),
             lambda: x.scatter(0, index, 2.0, reduce="add"),
             lambda: x.scatter_(0, index, 2.0, reduce="add"),
             lambda: x.scatter(0, index, src),
             lambda: x.scatter(0, index, src, reduce="max"),
             lambda: x.scatter_(5, index, src, reduce="add"),
             lambda: x.scatter_(0, index, src, reduce=5)]
    out = []
    t.set_warn_always(True)
    try:
        for call in calls:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    call()
                    raised = None
                except Exception as e:  # noqa: BLE001 - compared with torch's
                    raised = type(e).__name__
            out.append((raised, [(str(w.message), w.filename == __file__) for w in caught]))
    finally:
        t.set_warn_always(False)
    return out


def test_scatter_reduce_with_a_tensor_src_warns_as_torchs():
    """torch's deprecation warning for scatter and scatter_ with a Tensor src and reduce=,
    on the caller's line, before the kernel's checks, not for a call its parser refuses."""
    same(_scatter_reduce_warnings)


def test_scatter_reduce_warning_is_once_per_process():
    """One flag for scatter and scatter_, as torch's TORCH_WARN_ONCE."""
    import subprocess
    import sys
    pytest.importorskip("torch")
    code = ("import sys, warnings\n"
            "warnings.simplefilter('always')\n"
            "t = __import__(sys.argv[1])\n"
            "x, i, s = t.zeros(3, 3), t.tensor([[0, 1, 2]]), t.ones(1, 3)\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    x.scatter_(0, i, s, reduce='add'); t.scatter(x, 0, i, s, reduce='add')\n"
            "    x.scatter(0, i, s, reduce='multiply')\n"
            "print(len(caught))\n")
    counts = [subprocess.run([sys.executable, "-c", code, name], capture_output=True,
                             text=True, timeout=600).stdout.strip()
              for name in ("torch", "ember")]
    assert counts == ["1", "1"]
