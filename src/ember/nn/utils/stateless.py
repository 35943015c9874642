"""Calling a module with other parameters and buffers, as ``torch.nn.utils.stateless``."""
from __future__ import annotations

import contextlib
import warnings

from ..._tensor import Tensor

__all__ = ["functional_call"]

_MISSING = object()


def _swap_tensor(module, name, tensor, allow_missing=False):
    """Put ``tensor`` at ``module.<name>`` (a parameter or buffer slot when there is one) and
    return what was there (``_MISSING`` when nothing was)."""
    from ..modules.module import Module
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of ember.nn.Module")
    if tensor is not _MISSING and not isinstance(tensor, Tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of ember.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    for store in (module._parameters, module._buffers):
        if name in store:
            orig = store[name]
            if tensor is not _MISSING:
                store[name] = tensor
            else:
                del store[name]
            return orig
    if hasattr(module, name):
        orig = getattr(module, name)
    else:
        if not allow_missing:
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        orig = _MISSING
    if orig is not _MISSING and not isinstance(orig, Tensor) and orig is not None:
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of ember.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


class _Accessor:
    """torch's NamedMemberAccessor: dotted names resolved to (submodule, attribute)."""

    def __init__(self, module):
        self.module = module
        self.memo = {}

    def get_submodule(self, name):
        if not name:
            return self.module
        if name not in self.memo:
            prefix, _, attr = name.rpartition(".")
            parent = self.get_submodule(prefix)
            from ..modules.module import Module
            try:
                sub = getattr(parent, attr)
            except AttributeError as ex:
                raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from ex
            if not isinstance(sub, Module):
                raise TypeError(f"submodule `{name}`: {sub} is not an instance of "
                                "ember.nn.Module")
            self.memo[name] = sub
        return self.memo[name]

    def swap_tensor(self, name, value, allow_missing=False):
        prefix, _, attr = name.rpartition(".")
        return _swap_tensor(self.get_submodule(prefix), attr, value, allow_missing)

    def swap_tensors_dict(self, named_tensors, allow_missing=False):
        orig, missing = {}, []
        try:
            for name, tensor in named_tensors.items():
                old = self.swap_tensor(name, tensor, allow_missing=True)
                if old is _MISSING:
                    missing.append(name)
                orig[name] = old
        except Exception:
            for name, old in orig.items():
                self.swap_tensor(name, old, allow_missing=True)
            raise
        if missing and not allow_missing:
            for name, old in orig.items():
                self.swap_tensor(name, old, allow_missing=True)
            raise RuntimeError(f"Missing key(s): {', '.join(map(repr, missing))}.")
        return orig, missing

    def check_keys(self, keys):
        keys = set(keys)
        valid = {n for n, _ in self.module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in self.module.named_buffers(remove_duplicate=False)}
        return sorted(valid - keys), sorted(keys - valid)


def _untie_named_tensors_map(module, parameters_and_buffers):
    """``parameters_and_buffers`` with the value given for one of several tied names (the same
    tensor reached under several names) given for all of them."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    by_tensor = {}
    for name, tensor in named.items():
        by_tensor.setdefault(id(tensor), set()).add(name)
    tied = {n: names for names in by_tensor.values() if len(names) > 1 for n in names}
    given = set(parameters_and_buffers)
    given_tied = {n for n in given if n in tied}
    for name in given_tied:
        names = tied[name]
        values = {id(parameters_and_buffers[n]) for n in names if n in parameters_and_buffers}
        if len(names & given_tied) > 1 and len(values) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given_tied:
        for other in tied[name]:
            untied[other] = parameters_and_buffers[name]
    return untied


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    untied = (_untie_named_tensors_map(module, parameters_and_buffers) if tie_weights
              else parameters_and_buffers)
    accessor = _Accessor(module)
    if strict:
        missing, unexpected = accessor.check_keys(untied)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(msgs)))
    orig = {}
    try:
        orig, _ = accessor.swap_tensors_dict(untied, allow_missing=True)
        yield
    finally:
        new, _ = accessor.swap_tensors_dict(orig, allow_missing=True)
        # NOTE: as torch, tensors the module replaced in place of the given ones during the call
        # (e.g. batch-norm running stats assigned anew) are written back into the dict.
        parameters_and_buffers.update({k: new[k] for k in parameters_and_buffers if k in new})


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                     tie_weights=True, strict=False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Deprecated: use ``ember.func.functional_call`` (the same call)."""
    warnings.warn("`ember.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`ember.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
