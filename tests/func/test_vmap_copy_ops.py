"""torch's *_copy ops under vmap run through batching rules, as torch's: view_copy is the
view's rule with the copy in its place, permute_copy and unsqueeze_copy end in a view of the
copy (ViewBackward0), alias_copy and unfold_copy are the view then a clone (CloneBackward0);
the per-example gradients through them are views where torch's are. Against torch 2.13 (ember
ran them once per example, with the fallback's warning and stacked, non-view gradients)."""
import warnings

import pytest
from oracle import same

_ARGS = {"view_copy": ((3, 2),), "permute_copy": ((1, 0),), "unsqueeze_copy": (0,),
         "alias_copy": (), "unfold_copy": (1, 2, 1)}


def _facts(torch, name):
    x = torch.arange(12.0, dtype=torch.float64).reshape(2, 2, 3).requires_grad_()
    args = _ARGS[name]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        y = torch.func.vmap(lambda v: getattr(torch, name)(v, *args))(x)
        grad_view = None
        if name != "unfold_copy":  # (torch's unfold_backward runs per example: a gap left)
            grad_view = torch.func.vmap(torch.func.grad(
                lambda v: getattr(torch, name)(v, *args).sum()))(x.detach())._is_view()
    # (torch's fallback warning, without the C++ location it names)
    said = [str(w.message).split(" (Triggered internally")[0] for w in seen
            if not issubclass(w.category, DeprecationWarning)]
    return y, y._is_view(), y.stride(), grad_view, said


@pytest.mark.parametrize("name", _ARGS)
def test_copy_ops_under_vmap_as_torch(name):
    same(lambda torch: _facts(torch, name), check_warnings=False)


_SPLITS = {
    "unsafe_split_with_sizes": lambda torch, v: torch.unsafe_split_with_sizes(v, [1, 3]),
    "split_copy": lambda torch, v: torch.split_copy(v, 2),
    "split_with_sizes_copy": lambda torch, v: torch.split_with_sizes_copy(v, [1, 3]),
    "unsafe_split": lambda torch, v: torch.unsafe_split(v, 2),
    "unbind_copy": lambda torch, v: torch.unbind_copy(v),
}


@pytest.mark.parametrize("name", _SPLITS)
def test_split_ops_under_vmap_as_torch(name):
    """unsafe_split_with_sizes and split_copy have no batching rule in torch, nor a fallback
    (a list of results): its error; the others run."""
    same(lambda torch: torch.func.vmap(lambda v: _SPLITS[name](torch, v))(
        torch.ones(2, 4, 3, dtype=torch.float64)), check_warnings=False)
