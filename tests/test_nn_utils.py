"""ember.nn.utils against torch 2.13: gradient clipping, parameters <-> vector, packed sequences
(nn.utils.rnn) and stateless.functional_call."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

RNG = np.random.default_rng(0)


def same_ok(body, **kw):
    """``same``, and the body ran without an error (equal errors would also compare equal)."""
    e = same(body, **kw)
    assert e.error is None, e.error
    return e

SEQ = [RNG.standard_normal((n, 2)) for n in (3, 2, 1, 3)]


def _params(lib):
    a = lib.nn.Parameter(lib.tensor([[1.0, -2.0], [3.0, 4.0]]))
    b = lib.nn.Parameter(lib.tensor([0.5, -7.0]))
    c = lib.nn.Parameter(lib.ones(2))  # no gradient
    a.grad = lib.tensor([[0.1, -3.0], [2.0, 0.2]])
    b.grad = lib.tensor([5.0, -0.3])
    return a, b, c


# -- clipping -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [
    {"max_norm": 1.0}, {"max_norm": 1.0, "norm_type": 1}, {"max_norm": 2.0, "norm_type": "inf"},
    {"max_norm": 2.0, "norm_type": float("inf")}, {"max_norm": 100.0},
    {"max_norm": 1.0, "norm_type": 0.5}, {"max_norm": 1, "norm_type": 3},
    {"max_norm": 1.0, "norm_type": 0}, {"max_norm": 1.0, "norm_type": -float("inf")},
    {"max_norm": 1.0, "foreach": True}, {"max_norm": 1.0, "foreach": False}],
    ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_clip_grad_norm_matches_torch(kwargs):
    def body(lib):
        a, b, c = _params(lib)
        total = lib.nn.utils.clip_grad_norm_([a, b, c], **kwargs)
        return total, a.grad, b.grad, c.grad is None
    same_ok(body)


def test_clip_grad_norm_edge_cases_match_torch():
    def body(lib):
        out = []
        a, _, c = _params(lib)
        out += [lib.nn.utils.clip_grad_norm_(a, 0.1), a.grad]  # a single tensor
        out.append(lib.nn.utils.clip_grad_norm_([c], 0.1))  # no gradients at all
        a, b, _ = _params(lib)
        b.grad[0] = float("inf")  # a nan coefficient, silently (no NumPy warning)
        out += [lib.nn.utils.clip_grad_norm_([a, b], 1.0), a.grad]
        a, b, _ = _params(lib)
        b.grad[0] = float("nan")
        try:
            lib.nn.utils.clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)
        except RuntimeError as e:
            out.append(str(e))
        return out
    same_ok(body)


def test_get_total_norm_and_clip_grads_with_norm_match_torch():
    def body(lib):
        a, b, _ = _params(lib)
        u = lib.nn.utils
        norm = u.get_total_norm([a.grad, b.grad], 2.0)
        u.clip_grads_with_norm_([a, b], 1.0, norm)
        return (norm, a.grad, b.grad, u.get_total_norm([a.grad], "inf"),
                u.get_total_norm([], 2.0))
    same_ok(body)


def test_clip_grad_value_matches_torch():
    def body(lib):
        a, b, c = _params(lib)
        r = lib.nn.utils.clip_grad_value_([a, b, c], 0.5)
        a2, _, _ = _params(lib)
        lib.nn.utils.clip_grad_value_(a2, clip_value=1, foreach=True)
        return r, a.grad, b.grad, a2.grad
    same_ok(body)


@pytest.mark.parametrize("foreach", [None, False, True])
@pytest.mark.parametrize("params", ["none", "no-grads"])
def test_clip_grad_value_without_gradients_raises_as_torch(foreach, params):
    """torch groups the gradients by device and dtype first, which fails on an empty list."""
    def body(lib):
        ps = [] if params == "none" else [lib.nn.Parameter(lib.ones(2))]
        lib.nn.utils.clip_grad_value_(ps, 1.0, foreach=foreach)
    same(body)


def test_parameters_to_vector_and_back_match_torch():
    def body(lib):
        a, b, c = _params(lib)
        v = lib.nn.utils.parameters_to_vector([a, b, c])
        lib.nn.utils.vector_to_parameters(v * 2, [a, b, c])
        out = [v, a, b, c]
        try:
            lib.nn.utils.vector_to_parameters([1.0], [a])
        except TypeError as e:
            out.append(str(e))
        return out
    same_ok(body)


# -- packed sequences ---------------------------------------------------------------------------
def test_pad_sequence_matches_torch():
    def body(lib):
        R = lib.nn.utils.rnn
        seqs = [lib.tensor(s, requires_grad=True) for s in SEQ]
        outs = [R.pad_sequence(seqs), R.pad_sequence(seqs, batch_first=True, padding_value=-1.0),
                R.pad_sequence(seqs, padding_side="left"),
                R.pad_sequence(seqs[:2], True, 9.0, "left")]
        grads = lib.autograd.grad(sum((o * o).sum() for o in outs), seqs)
        return outs, grads, outs[0].grad_fn.name()
    same_ok(body)


def test_pack_pad_round_trip_matches_torch():
    def body(lib):
        R = lib.nn.utils.rnn
        seqs = [lib.tensor(s, requires_grad=True) for s in SEQ]
        padded = R.pad_sequence(seqs)
        lengths = [3, 2, 1, 3]
        out = []
        packed = R.pack_padded_sequence(padded, lengths, enforce_sorted=False)
        out.append(repr(packed))
        for batch_first in (False, True):
            unpacked, lens = R.pad_packed_sequence(packed, batch_first=batch_first,
                                                   total_length=5, padding_value=0.5)
            out += [unpacked, lens]
        sorted_packed = R.pack_padded_sequence(padded[:, [0, 3, 1, 2]],
                                               lib.tensor([3, 3, 2, 1]))
        bf = R.pack_padded_sequence(padded.transpose(0, 1), lib.tensor([3, 2, 1, 3]),
                                    batch_first=True, enforce_sorted=False)
        out += [tuple(sorted_packed), bf.data, bf.batch_sizes, bf.sorted_indices,
                bf.unsorted_indices]
        out.append(lib.autograd.grad((packed.data ** 2).sum() + bf.data.sum(), seqs))
        return out
    same_ok(body)


def test_pack_sequence_unpack_and_unpad_match_torch():
    def body(lib):
        R = lib.nn.utils.rnn
        seqs = [lib.tensor(s) for s in SEQ]
        packed = R.pack_sequence(seqs, enforce_sorted=False)
        padded = R.pad_sequence(seqs, batch_first=True)
        return (tuple(packed), R.unpack_sequence(packed),
                R.unpad_sequence(padded, lib.tensor([3, 2, 1, 3]), batch_first=True),
                R.unpad_sequence(R.pad_sequence(seqs), lib.tensor([3, 2, 1, 3])),
                R.invert_permutation(lib.tensor([2, 0, 3, 1])), R.invert_permutation(None),
                R.pack_sequence(seqs[:3]).batch_sizes)
    same_ok(body)


def test_packed_sequence_methods_match_torch():
    def body(lib):
        R = lib.nn.utils.rnn
        p = R.pack_sequence([lib.tensor(s) for s in SEQ], enforce_sorted=False)
        q = R.PackedSequence(p.data, p.batch_sizes, p.sorted_indices)
        r = R.PackedSequence((p.data, p.batch_sizes))
        return (q.unsorted_indices, tuple(r), p.double().data.dtype, p.float() is p,
                tuple(p.to(lib.float64)), p.long().data, p.is_cuda, type(p.cpu()).__name__,
                isinstance(p, tuple), p._fields)
    same_ok(body)


@pytest.mark.parametrize("case", [
    "len_lengths", "unsorted", "zero_length", "lengths_2d", "empty", "total_length",
    "pad_mismatch", "pad_empty", "pack_empty", "padding_side", "not_iterable", "ps_data",
    "unpad_zip"])
def test_packing_errors_match_torch(case):
    def body(lib):
        R = lib.nn.utils.rnn
        x = lib.zeros(3, 3, 1)
        return {
            "len_lengths": lambda: R.pack_padded_sequence(lib.zeros(3, 2, 1), [3, 2, 1, 1]),
            "unsorted": lambda: R.pack_padded_sequence(x, [1, 2, 3]),
            "zero_length": lambda: R.pack_padded_sequence(x, [3, 2, 0]),
            "lengths_2d": lambda: R.pack_padded_sequence(x, [[3, 2, 1]]),
            "empty": lambda: R.pack_padded_sequence(lib.zeros(3, 0, 1), []),
            "total_length": lambda: R.pad_packed_sequence(
                R.pack_padded_sequence(x, [3, 2, 1]), total_length=2),
            "pad_mismatch": lambda: R.pad_sequence([lib.zeros(2, 3), lib.zeros(2, 4)]),
            "pad_empty": lambda: R.pad_sequence([]),
            "pack_empty": lambda: R.pack_sequence([]),
            "padding_side": lambda: R.pad_sequence([lib.zeros(2, 3)], padding_side="mid"),
            "not_iterable": lambda: R.pad_sequence(3),
            "ps_data": lambda: R.PackedSequence(lib.ones(3)),
            "unpad_zip": lambda: R.unpad_sequence(lib.zeros(3, 2), lib.tensor([1, 2, 3])),
        }[case]()
    e = same(body)
    assert e.error is not None and e.error[0] != "AttributeError"


# -- stateless ----------------------------------------------------------------------------------
def test_stateless_functional_call_warns_and_substitutes():
    def body(lib):
        lib.manual_seed(0)
        lin = lib.nn.Linear(3, 2)
        w = lib.arange(6.0).reshape(2, 3)
        out = lib.nn.utils.stateless.functional_call(lin, {"weight": w, "bias": lib.ones(2)},
                                                     (lib.ones(3),))
        return out, lin.weight is not w, type(lin.weight).__name__
    same_ok(body)
