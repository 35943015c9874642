"""Helpers for the nn tests: build a module in torch and in ember from the same weights."""
from __future__ import annotations

import numpy as np
import pytest

import ember


def torch_mod():
    return pytest.importorskip("torch")


def to_ember(t, requires_grad=None):
    """An ember tensor with the values (and dtype) of a torch tensor."""
    e = ember.from_numpy(np.array(t.detach().numpy(), copy=True))
    if requires_grad if requires_grad is not None else t.requires_grad:
        e.requires_grad_()
    return e


def copy_weights(torch_module, ember_module):
    """Load the torch module's state_dict into the ember module (strict)."""
    state = {k: to_ember(v, False) for k, v in torch_module.state_dict().items()}
    result = ember_module.load_state_dict(state)
    assert not result.missing_keys and not result.unexpected_keys
    return ember_module


def close(e, t, rtol=1e-5, atol=1e-6, what="value"):
    a = e.detach().numpy() if hasattr(e, "detach") else np.asarray(e)
    b = t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    if hasattr(e, "dtype") and hasattr(t, "dtype"):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], what
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=what)


def repr_norm(text):
    return text.replace("torch.", "ember.")
