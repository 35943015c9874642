"""Ops whose result's shape depends on the data, under vmap, against torch 2.13: argwhere and
nonzero_static run through torch's per-example fallback (its warning; examples whose results
differ in shape give stack's error), argwhere decomposed into nonzero where a grad or jvp runs
inside the vmap; nonzero, unique, unique_consecutive, masked_select with a batched mask and a
boolean-mask index raise torch's errors, word for word."""
import warnings

import pytest
from oracle import same

X = [[1.0, 0.0, 2.0], [0.0, 3.0, 4.0]]  # (two nonzeros in each example)
Y = [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]  # (two, then one)


def _argwhere_weighted(torch, v):
    return (v * torch.argwhere(v).sum()).sum()


CASES = {
    "argwhere": lambda torch, vmap: vmap(torch.argwhere)(torch.tensor(X)),
    "argwhere_method": lambda torch, vmap: vmap(lambda v: v.argwhere())(torch.tensor(X)),
    "argwhere_shapes_differ": lambda torch, vmap: vmap(torch.argwhere)(torch.tensor(Y)),
    "argwhere_in_dims": lambda torch, vmap: vmap(torch.argwhere, in_dims=1)(torch.tensor(X)),
    "argwhere_out_dims": lambda torch, vmap: vmap(torch.argwhere, out_dims=1)(torch.tensor(X)),
    "argwhere_2d": lambda torch, vmap: vmap(torch.argwhere)(torch.ones(2, 2, 2)),
    "argwhere_nested": lambda torch, vmap: vmap(vmap(torch.argwhere))(torch.ones(2, 2, 2)),
    "argwhere_0d": lambda torch, vmap: vmap(torch.argwhere)(torch.ones(2)),
    "argwhere_none": lambda torch, vmap: vmap(torch.argwhere)(torch.zeros(2, 3)),
    "argwhere_int": lambda torch, vmap: vmap(torch.argwhere)(torch.ones(2, 3, dtype=torch.int64)),
    "argwhere_under_grad": lambda torch, vmap: vmap(torch.func.grad(
        lambda v: _argwhere_weighted(torch, v)))(torch.tensor(X)),
    "argwhere_under_vmap_grad": lambda torch, vmap: vmap(vmap(torch.func.grad(
        lambda v: _argwhere_weighted(torch, v))))(torch.tensor([X])),
    "argwhere_under_jvp": lambda torch, vmap: vmap(lambda v: torch.func.jvp(
        lambda u: u * torch.argwhere(u).sum(), (v,), (v,)))(torch.tensor(X)),
    "argwhere_unbatched_under_grad": lambda torch, vmap: vmap(torch.func.grad(
        lambda v: (v * torch.argwhere(torch.ones(2)).sum()).sum()))(torch.tensor(X)),
    "grad_of_vmap_argwhere": lambda torch, vmap: torch.func.grad(
        lambda v: (v * vmap(torch.argwhere)(v).sum()).sum())(torch.tensor(X)),
    "nonzero_static": lambda torch, vmap: vmap(
        lambda v: torch.nonzero_static(v, size=3))(torch.tensor(Y)),
    "nonzero_static_cut": lambda torch, vmap: vmap(
        lambda v: torch.nonzero_static(v, size=1, fill_value=7))(torch.tensor(Y)),
    "nonzero_static_method": lambda torch, vmap: vmap(
        lambda v: v.nonzero_static(size=2))(torch.tensor(Y)),
    "nonzero_static_under_grad": lambda torch, vmap: vmap(torch.func.grad(
        lambda v: (v * torch.nonzero_static(v, size=2).sum()).sum()))(torch.tensor(X)),
    "nonzero": lambda torch, vmap: vmap(torch.nonzero)(torch.tensor(X)),
    "nonzero_method": lambda torch, vmap: vmap(lambda v: v.nonzero())(torch.tensor(X)),
    "nonzero_as_tuple": lambda torch, vmap: vmap(
        lambda v: torch.nonzero(v, as_tuple=True))(torch.tensor(X)),
    "where_condition_only": lambda torch, vmap: vmap(torch.where)(torch.tensor(X)),
    "unique": lambda torch, vmap: vmap(torch.unique)(torch.tensor(X)),
    "unique_counts": lambda torch, vmap: vmap(
        lambda v: torch.unique(v, return_counts=True))(torch.tensor(X)),
    "unique_dim": lambda torch, vmap: vmap(lambda v: torch.unique(v, dim=0))(torch.tensor(X)),
    "unique_consecutive": lambda torch, vmap: vmap(torch.unique_consecutive)(torch.tensor(X)),
    "masked_select_batched_mask": lambda torch, vmap: vmap(
        lambda v: torch.masked_select(v, v > 0))(torch.tensor(X)),
    "masked_select_shared_mask": lambda torch, vmap: vmap(
        lambda v: torch.masked_select(v, torch.tensor([True, False, True])))(torch.tensor(X)),
    "masked_select_unbatched_self": lambda torch, vmap: vmap(
        lambda m: torch.masked_select(torch.ones(3), m))(torch.tensor(X) > 0),
    "boolean_mask_index": lambda torch, vmap: vmap(lambda v: v[v > 0])(torch.tensor(X)),
    # (torch has no rule for tensor_split at a tensor of indices, nor a fallback)
    "tensor_split_tensor": lambda torch, vmap: vmap(
        lambda v: torch.tensor_split(v, torch.tensor([1])))(torch.tensor(X)),
    "tensor_split_batched_indices": lambda torch, vmap: vmap(
        lambda i: torch.tensor_split(torch.ones(3), i))(torch.tensor([[1], [2]])),
    "tensor_split_list": lambda torch, vmap: vmap(
        lambda v: torch.tensor_split(v, [1]))(torch.tensor(X)),
}


def _with_warnings(torch, case):
    """The case's result (or error) and its warnings (torch's without its C++ location)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            out = CASES[case](torch, torch.func.vmap)
        except RuntimeError as e:
            out = str(e).replace("torch.", "ember.")
    return out, [str(w.message).split(" (Triggered internally")[0] for w in seen
                 if not issubclass(w.category, DeprecationWarning)]  # (torch's import noise)


@pytest.mark.parametrize("case", CASES)
def test_dynamic_shape_ops_under_vmap_as_torch(case):
    same(lambda torch: _with_warnings(torch, case), check_warnings=False)
