"""``ember.func``: composable function transforms, as ``torch.func``.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd`` and
``hessian`` work on functions of tensors (and of tuples, lists and dicts of tensors), built on
ember's reverse mode and forward-mode AD. They compose: ``grad(grad(f))``,
``jacfwd(jacrev(f))``. ``functional_call`` runs a module with other parameters, which makes a
module a function its parameters can be differentiated through; ``stack_module_state`` stacks
the parameters of several copies of a model. ``functionalize`` runs a function without
mutating its inputs while it runs (see _functionalize.py).

``vmap`` runs a function of one example on a whole batch: each op runs once on the batched
arrays through its batching rule (see _batching_rules.py), and it composes with the other
transforms (``vmap(grad(f))`` gives per-example gradients).
"""
from __future__ import annotations

from ._functionalize import debug_unwrap, functionalize
from ._module_api import functional_call, replace_all_batch_norm_modules_, stack_module_state
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ._rearrange import rearrange
from ._vmap import vmap

__all__ = ["rearrange", "debug_unwrap", "functionalize", "functional_call", "grad",
           "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize",
           "replace_all_batch_norm_modules_", "stack_module_state", "vmap"]
