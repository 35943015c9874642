"""out= of the functions whose torch forms write into lists of tensors, several outs, or
outs of generated ops, compared with torch: dtype refusals (each op's own message), resizing
(and its warning), outs and inputs that require grad (refused, or a NotImplemented node on out
whose backward raises), outs of the wrong kind or length, and the versions outs end with."""
from __future__ import annotations

import re

import pytest
from oracle import assert_close, run, torch_or_skip

import ember

# name: (call(torch, x, out), number of outs)
_CALLS = {
    "alias_copy": (lambda t, x, out: t.alias_copy(x, out=out), 1),
    "as_strided_copy": (lambda t, x, out: t.as_strided_copy(x, (2,), (1,), out=out), 1),
    "detach_copy": (lambda t, x, out: t.detach_copy(x, out=out), 1),
    "diagonal_copy": (lambda t, x, out: t.diagonal_copy(x, out=out), 1),
    "expand_copy": (lambda t, x, out: t.expand_copy(x[:1], (3, 2), out=out), 1),
    "permute_copy": (lambda t, x, out: t.permute_copy(x, (1, 0), out=out), 1),
    "select_copy": (lambda t, x, out: t.select_copy(x, 0, 1, out=out), 1),
    "slice_copy": (lambda t, x, out: t.slice_copy(x, 1, 0, 1, out=out), 1),
    "t_copy": (lambda t, x, out: t.t_copy(x, out=out), 1),
    "transpose_copy": (lambda t, x, out: t.transpose_copy(x, 0, 1, out=out), 1),
    "unfold_copy": (lambda t, x, out: t.unfold_copy(x, 1, 1, 1, out=out), 1),
    "unsqueeze_copy": (lambda t, x, out: t.unsqueeze_copy(x, 0, out=out), 1),
    "view_as_real_copy": (lambda t, x, out: t.view_as_real_copy(t.complex(x, x), out=out), 1),
    "view_as_complex_copy": (lambda t, x, out: t.view_as_complex_copy(x, out=out), 1),
    "hardshrink": (lambda t, x, out: t.hardshrink(x, 0.3, out=out), 1),
    "F.hardshrink": (lambda t, x, out: t.nn.functional.hardshrink(x, 0.3, out=out), 1),
    "threshold": (lambda t, x, out: t.threshold(x, 0.3, 2.0, out=out), 1),
    "index_copy": (lambda t, x, out: t.index_copy(x, 0, t.tensor([1, 0]), x, out=out), 1),
    "scatter_add": (lambda t, x, out: t.scatter_add(x, 0, t.tensor([[1, 0]]), x, out=out), 1),
    "slice_scatter": (lambda t, x, out: t.slice_scatter(x, x[:1], 0, 0, 1, out=out), 1),
    "take": (lambda t, x, out: t.take(x, t.tensor([0, 3]), out=out), 1),
    "nansum": (lambda t, x, out: t.nansum(x, 0, out=out), 1),
    "log_softmax": (lambda t, x, out: t.log_softmax(x, 0, out=out), 1),
    "softmax": (lambda t, x, out: t.softmax(x, 0, out=out), 1),
    "log_softmax_dtype": (lambda t, x, out: t.log_softmax(x, 0, dtype=t.float64, out=out), 1),
    "orgqr": (lambda t, x, out: t.orgqr(x + t.eye(2), t.tensor([0.5, 0.2]), out=out), 1),
    "nonzero_static": (lambda t, x, out: t.nonzero_static(x, size=5, out=out), 1),
    "batch_norm_elemt": (lambda t, x, out: t.batch_norm_elemt(
        x, None, None, t.zeros(2), t.ones(2), 1e-5, out=out), 1),
    "slogdet": (lambda t, x, out: t.slogdet(x + t.eye(2), out=out), 2),
    "linalg.slogdet": (lambda t, x, out: t.linalg.slogdet(x + t.eye(2), out=out), 2),
    "linalg.lstsq": (lambda t, x, out: t.linalg.lstsq(x + t.eye(2), x + t.eye(2), out=out), 4),
    "split_copy": (lambda t, x, out: t.split_copy(x, 1, out=out), 2),
    "split_with_sizes_copy": (lambda t, x, out: t.split_with_sizes_copy(x, [1, 1], out=out), 2),
    "unbind_copy": (lambda t, x, out: t.unbind_copy(x, out=out), 2),
    "native_batch_norm": (lambda t, x, out: t.native_batch_norm(
        x, None, None, None, None, True, 0.1, 1e-5, out=out), 3),
}

# What each trial puts at one position of out (the other outs empty float32 tensors).
_TRIALS = ("empty", "three", "long", "requires_grad", "double", "cfloat", "int", "input_grad",
           "no_grad", "short", "tensor")


def _outcome(t, name, trial, pos):
    fn, k = _CALLS[name]
    x = t.tensor([[0.25, 0.5], [0.75, 1.0]])

    def o(dt=t.float32, n=0, rg=False):
        if name == "split_copy":  # (its outs are written by copy_: never resized)
            return t.zeros(1, 2, dtype=dt).requires_grad_(rg)
        return t.zeros(n, dtype=dt, requires_grad=rg)
    outs = [o() for _ in range(k)]
    made = {"three": lambda: o(n=3), "long": lambda: o(t.long),
            "requires_grad": lambda: o(rg=True), "double": lambda: o(t.float64),
            "cfloat": lambda: o(t.complex64), "int": lambda: o(t.int32)}.get(trial)
    if made is not None:
        outs[pos] = made()
    if trial in ("input_grad", "no_grad"):
        x.requires_grad_()
    if trial == "short":
        outs = outs[:-1] or outs
    out = tuple(outs) if k > 1 else outs[0]
    if trial == "tensor":
        out = o()
    with t.set_grad_enabled(trial != "no_grad"):
        r = fn(t, x, out)
    if k == 1:
        assert r is out
    written = (r, tuple(outs) if k > 1 else out)
    versions = [a._version for a in outs]
    backward = None
    if trial == "input_grad" and k == 1 and out.requires_grad:
        try:
            out.sum().backward()
        except RuntimeError as e:
            backward = str(e)
    return written, versions, backward


def _first_sentences(error):
    """torch's error without the list of backends that follows "Could not run ..."."""
    if error is None or not error[1].startswith("Could not run"):
        return error
    end = "(if using custom build)."
    return error[0], error[1][:error[1].index(end) + len(end)]


@pytest.mark.parametrize("trial", _TRIALS)
@pytest.mark.parametrize("name", sorted(_CALLS))
def test_out_as_torch(name, trial):
    torch = torch_or_skip()
    for pos in range(_CALLS[name][1]):
        want = run(lambda t: _outcome(t, name, trial, pos), torch)
        got = run(lambda t: _outcome(t, name, trial, pos), ember)
        assert got.error == _first_sentences(want.error), (pos, got.error, want.error)
        # (lstsq's solution differs from LAPACK's gelsy in the last bits)
        assert_close(want.value, got.value, rtol=1e-5, atol=1e-6)
        strip = re.compile(r" \(Triggered internally at [^)]*\)")
        assert [strip.sub("", m) for _, m in got.warnings] == [
            strip.sub("", m) for _, m in want.warnings]


def test_generated_out_node_refuses_backward():
    """torch's out= of generated ops gives out a NotImplemented node on the inputs that require
    grad: a gradient through it raises rather than being silently wrong."""
    x = ember.ones(2, 2, requires_grad=True)
    out = ember.empty(0)
    ember.slice_scatter(x, x[:1] * 2, 0, 0, 1, out=out)
    assert out.grad_fn.name() == "torch::autograd::NotImplemented"
    assert len(out.grad_fn.next_functions) == 2
    with pytest.raises(RuntimeError, match="derivative for aten::slice_scatter is not impl"):
        ember.autograd.grad(out.sum(), x)
