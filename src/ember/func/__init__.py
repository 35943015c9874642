"""``ember.func``: composable function transforms, as ``torch.func``.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd`` and ``hessian`` work on
functions of tensors (and of tuples, lists and dicts of tensors), built on ember's reverse mode
and forward-mode AD. They compose: ``grad(grad(f))``, ``jacfwd(jacrev(f))``.

``vmap`` is not provided: ember's ops have no batching rules, and a Python loop pretending to be
vmap would not be honest about its cost.
"""
from __future__ import annotations

from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]
