"""Ops whose result's length depends on the values, which torch has no batching rule for and
runs through its per-example fallback under vmap (bincount, repeat_interleave with tensor
repeats): values, the fallback's performance warning, and the errors (stack's, where the
examples' results differ in length; the op's own) against torch 2.13."""
import warnings

import pytest
from oracle import same

CASES = {
    "bincount_minlength": lambda torch: torch.func.vmap(
        lambda x: torch.bincount(x, minlength=5))(torch.tensor([[0, 1, 1], [2, 0, 0]])),
    "bincount_same_length": lambda torch: torch.func.vmap(torch.bincount)(
        torch.tensor([[0, 1, 2], [2, 0, 1]])),
    "bincount_different_lengths": lambda torch: torch.func.vmap(torch.bincount)(
        torch.tensor([[0, 1, 1], [2, 0, 0]])),
    "bincount_weights": lambda torch: torch.func.vmap(
        lambda x, w: torch.bincount(x, w, minlength=4))(torch.tensor([[0, 1, 1], [2, 0, 0]]),
                                                        torch.ones(2, 3)),
    "bincount_unbatched_weights": lambda torch: torch.func.vmap(
        lambda x: x.bincount(torch.arange(3.0), minlength=4))(torch.tensor([[0, 1, 1],
                                                                           [2, 0, 0]])),
    "bincount_negative": lambda torch: torch.func.vmap(
        lambda x: torch.bincount(x, minlength=4))(torch.tensor([[0, 1], [-1, 0]])),
    "bincount_float": lambda torch: torch.func.vmap(torch.bincount)(torch.ones(2, 3)),
    "repeat_interleave_repeats": lambda torch: torch.func.vmap(torch.repeat_interleave)(
        torch.tensor([[1, 2, 0], [0, 1, 2]])),
    "repeat_interleave_negative": lambda torch: torch.func.vmap(torch.repeat_interleave)(
        torch.tensor([[1, 2, 0], [1, -2, 0]])),
    "repeat_interleave_batched_repeats": lambda torch: torch.func.vmap(
        lambda r: torch.arange(3.0).repeat_interleave(r))(torch.tensor([[1, 2, 0], [0, 1, 2]])),
    "repeat_interleave_different_lengths": lambda torch: torch.func.vmap(
        lambda r: torch.arange(3.0).repeat_interleave(r))(torch.tensor([[1, 2, 0], [0, 1, 1]])),
    "repeat_interleave_unbatched_repeats": lambda torch: torch.func.vmap(
        lambda x: x.repeat_interleave(torch.tensor([1, 2, 0]), dim=0))(torch.ones(2, 3)),
}


def _outcome(torch, case):
    """The result or error, and the warnings (torch's without its C++ source location)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            out, error = CASES[case](torch), None
        except RuntimeError as e:
            out, error = None, str(e)
    return out, error, [str(w.message).split(" (Triggered internally")[0] for w in seen]


@pytest.mark.parametrize("case", CASES)
def test_data_dependent_op_under_vmap_as_torch(case):
    same(lambda torch: _outcome(torch, case), check_warnings=False)
