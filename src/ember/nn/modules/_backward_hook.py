"""Module full backward hooks: an identity Function around a module's inputs and outputs.

Its node on the outputs sees the gradients w.r.t. the outputs (grad_output, and the backward
pre-hooks may replace them); its node on the inputs sees the gradients w.r.t. the inputs
(grad_input), where the user's hooks run, as torch.utils.hooks.BackwardHook does.
"""
from __future__ import annotations

import warnings

from ..._state import state
from ..._tensor import Tensor
from ...autograd.function import Function


class BackwardHookFunction(Function):
    """Returns its inputs unchanged; its backward node carries the module's hooks."""

    @staticmethod
    def forward(ctx, *args):
        # NOTE: fresh tensors sharing the inputs' data (what ember's Function would make of
        # returned inputs anyway), so that the ones marked non-differentiable are the outputs.
        out = tuple(a.detach() for a in args)
        ctx.mark_non_differentiable(*[o for a, o in zip(args, out) if not a.requires_grad])
        return out

    @staticmethod
    def backward(ctx, *args):
        return args


def _pack_with_none(indices, values, size):
    res = [None] * size
    for idx, val in zip(indices, values):
        res[idx] = val
    return tuple(res)


class BackwardHook:
    """Sets up the identity nodes on a module call's inputs and outputs and runs the hooks."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    def _set_user_hook(self, grad_fn):
        def hook(grad_input, _):
            if self.grad_outputs is None:
                # The output node never ran: the inputs' gradients come from elsewhere.
                return None
            res = _pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return tuple(res[i] for i in self.input_tensors_index)
        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn, args):
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (any(t.requires_grad for t in tensors) and state.grad_enabled):
            return args, None
        new = BackwardHookFunction.apply(*tensors)
        if len(new) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input "
                               "Tensors.")
        grad_fns = [t.grad_fn for t in new if t.grad_fn is not None
                    and t.grad_fn.name() == "BackwardHookFunctionBackward"]
        if not grad_fns:
            raise RuntimeError("Error while setting up backward hooks. Please open an issue "
                               "with a code sample to reproduce this.")
        fn(grad_fns[0])
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return (tuple(out) if type(args) is tuple else type(args)(*out)), idx

    def setup_input_hook(self, args):
        res, idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def _output_hook(self, grad_fn):
        def hook(_, grad_output):
            self.grad_outputs = _pack_with_none(self.output_tensors_index, grad_output,
                                                self.n_outputs)
            expected = len(self.grad_outputs)
            for pre_hook in self.user_pre_hooks:
                r = pre_hook(self.module, self.grad_outputs)
                if r is None:
                    continue
                if len(r) != expected:
                    raise RuntimeError("Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(r)}, but expected {expected}")
                self.grad_outputs = r
            local = self.grad_outputs
            if self.input_tensors_index is None:
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients. See "
                              "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                              "#torch.nn.Module.register_full_backward_hook for more details.",
                              stacklevel=5)
                grad_inputs = _pack_with_none([], [], self.n_inputs)
                for user_hook in self.user_hooks:
                    r = user_hook(self.module, grad_inputs, self.grad_outputs)
                    if r is not None and not (isinstance(r, tuple)
                                              and all(e is None for e in r)):
                        raise RuntimeError("Backward hook for Modules where no input requires "
                                           "gradient should always return None or None for all "
                                           "gradients.")
                self.grad_outputs = None
            return tuple(local[i] for i in self.output_tensors_index)
        grad_fn.register_hook(hook)

    def setup_output_hook(self, args):
        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, idx = self._apply_on_tensors(self._output_hook, args)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]
