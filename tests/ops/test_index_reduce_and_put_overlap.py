"""index_reduce_ and put_ where what they read shares self's memory, and their refusals in
torch's order, each checked against torch (``oracle.same``; skipped without torch)."""
from __future__ import annotations

import pytest

from oracle import same

_REDUCES = ("mean", "prod", "amax", "amin")


def _reduce_into_overlap(reduce, include_self, dtype, self_rows, source_rows, index, dim):
    """``base``'s ``self_rows`` reduced in place from ``base``'s ``source_rows`` (a strided
    view sharing elements with them) along ``dim``; the whole base is the result."""
    def body(t):
        base = t.arange(24, dtype=getattr(t, dtype)).reshape(6, 4) + 1
        if dim == 0:
            base = base[:, 0].contiguous()  # (1-D: torch's element-by-element loop)
            target, source = base[self_rows], base[source_rows]
        else:
            target, source = base[:, self_rows], base[:, source_rows]
        target.index_reduce_(dim if dim == 0 else 1, t.tensor(index), source, reduce,
                             include_self=include_self)
        return base
    return body


@pytest.mark.parametrize("reduce", _REDUCES)
@pytest.mark.parametrize("include_self", [False, True])
@pytest.mark.parametrize("self_rows, source_rows, index", [
    (slice(0, 3), slice(0, 6, 2), [0, 1, 2]),   # the tester's case: torch's [0, 0, 5]
    (slice(0, 3), slice(0, 6, 2), [2, 1, 0]),
    (slice(0, 3), slice(0, 6, 2), [0, 0, 1]),
    (slice(3, 6), slice(0, 6, 2), [0, 1, 2]),   # reads what the previous step wrote
    (slice(0, 3), slice(1, 6, 2), [2, 0, 2]),
])
def test_index_reduce_inplace_reads_an_overlapping_source_as_written(
        reduce, include_self, self_rows, source_rows, index):
    """Seed of the random-program tester: torch fills self's indexed elements with the
    reduction's identity first (without include_self), then reduces source's elements in
    order, each read as it is then, and divides the means last."""
    same(_reduce_into_overlap(reduce, include_self, "float64", self_rows, source_rows, index,
                              0), check_warnings=False)


@pytest.mark.parametrize("reduce", _REDUCES)
@pytest.mark.parametrize("include_self", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_index_reduce_inplace_reads_overlapping_source_slices_as_written(
        reduce, include_self, dtype):
    """Slices along dim 1 of a 2-D base: each source column is read after the columns before
    it were reduced into self."""
    same(_reduce_into_overlap(reduce, include_self, dtype, slice(2, 4), slice(0, 4, 2),
                              [1, 0], 1), check_warnings=False)


@pytest.mark.parametrize("case", [
    lambda t, x: x.put_(t.tensor([0, 1]), x),                  # self, of the wrong size
    lambda t, x: x.put_(t.tensor([0, 1]), x[1:]),              # a view of it, the same
    lambda t, x: x.put_(t.tensor([0, 1], dtype=t.int32), x),   # an index that is not long
    lambda t, x: x[:0].put_(t.tensor([0]), x[:1]),             # into an empty tensor
    lambda t, x: t.put(x, t.tensor([0, 1]), x),                # the out-of-place form
    lambda t, x: x.put_(t.tensor([0, 1]), x[1:3]),             # the right size: overlap
    lambda t, x: x.put_(t.tensor([0, 1, 2, 9]), x),            # overlap before the range
])
def test_put_checks_its_arguments_before_the_overlap_of_its_source(case):
    """torch's put_ checks the index's dtype, the dtypes, the sizes and an empty self before
    it refuses a source sharing self's memory (and that before an index out of range)."""
    same(lambda t: case(t, t.arange(4.)))


@pytest.mark.parametrize("shape, dim, source", [((0,), 0, (1,)), ((0, 3), 0, (1, 3)),
                                                ((2, 0), -1, (2, 1)), ((0, 2, 3), 0, (1, 2, 3))])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_index_reduce_of_an_empty_self_refuses_with_torchs_error(shape, dim, source,
                                                                 include_self, dtype):
    """torch's kernel: without include_self, index_fill_ views self with the indexed dim of
    stride 0, which its empty storage refuses (setStorage); with it, a self of more than one
    dim has its first slice selected before any index is checked."""
    def body(t):
        dt = getattr(t, dtype)
        return t.ones(shape, dtype=dt).index_reduce_(dim, t.tensor([0]), t.ones(source, dtype=dt),
                                                     "amax", include_self=include_self)
    same(body, check_warnings=False)


@pytest.mark.parametrize("stop", [1, 2])
def test_index_reduce_of_an_empty_view_fills_what_its_storage_holds(stop):
    """An empty view whose storage holds the filled elements: index_fill_'s own index check
    (row 1); past the storage's end, the setStorage refusal (row 2)."""
    def body(t):
        base = t.ones(2, 3)
        base[stop:stop].index_reduce_(0, t.tensor([0]), t.ones(1, 3), "prod", include_self=False)
        return base
    same(body, check_warnings=False)


@pytest.mark.parametrize("case", [
    lambda t: t.ones(3).put_(t.tensor([0]), 1.0),
    lambda t: t.ones(3).put_([0], t.ones(1)),
    lambda t: t.ones(3).put(t.tensor([0]), 1.0),               # counted after self
    lambda t: t.put(t.ones(3), t.tensor([0]), 1.0),
    lambda t: t.ones(3).put(t.tensor([0]), t.tensor([2.0]), accumulate=True),
])
def test_put_refuses_a_non_tensor_as_torchs_parser(case):
    """put_ and put refuse a number or a list where a tensor goes with torch's TypeError,
    naming the argument and its position (after self, for the methods)."""
    same(case)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("case", [
    lambda t, s: t.ones(3, 2).index_reduce_(0, t.tensor([5, 0]), t.ones(2, 3), "prod", **s),
    lambda t, s: t.ones(3).index_reduce_(0, t.tensor([5, 0]), t.ones(3), "prod", **s),
    lambda t, s: t.ones(3).index_reduce_(0, t.tensor([5]), t.ones(1).double(), "prod", **s),
    lambda t, s: t.ones(()).index_reduce_(0, t.tensor([1]), t.ones(1), "prod", **s),
    lambda t, s: t.ones(()).index_reduce_(0, t.tensor([1]), t.ones(()), "prod", **s),
    lambda t, s: t.ones(3).index_reduce_(0, t.tensor([0]), 1.0, "sum", **s),
    lambda t, s: t.ones(3).index_reduce(0, [0], t.ones(1), "prod", **s),
    lambda t, s: t.index_reduce(t.ones(3), 0, t.tensor([0]), 1.0, "prod", **s),
])
def test_index_reduce_checks_its_arguments_before_its_index_range(case, include_self):
    """torch's order: the parser's refusal of a non-tensor, the meta function's of the
    sizes and dtypes, and only then the kernel's of an index out of range."""
    same(lambda t: case(t, {"include_self": include_self}), check_warnings=False)


@pytest.mark.parametrize("case", [
    lambda t: t.ones(2, 3)[1:1].index_reduce(0, t.tensor([0]), t.ones(1, 3), "prod",
                                             include_self=False),
    lambda t: t.ones(3, 2).t()[:, 1:1].index_reduce(1, t.tensor([0]), t.ones(2, 1), "amin",
                                                    include_self=False),
    lambda t: t.ones(3, 2).t()[:, 3:3].index_reduce_(1, t.tensor([0]), t.ones(2, 1), "amin",
                                                     include_self=False),
])
def test_index_reduce_of_an_empty_view_fills_its_result(case):
    """Out of place, torch's index_fill_ views a new empty result (no storage, contiguous
    strides), whatever storage the input view has; in place, self's storage."""
    same(case, check_warnings=False)
