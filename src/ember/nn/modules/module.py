"""``Module``: the base class of every layer, with torch's registration and traversal rules."""
from __future__ import annotations

__all__ = ['Module']

import warnings
import weakref

from ..._tensor import Tensor, typename
from ...autograd.grad_mode import no_grad
from ...autograd.graph import _HookDict
from ..parameter import Buffer, Parameter
from ._backward_hook import BackwardHook
from ._state_dict import StateDictMixin, _Handle, _IncompatibleKeys  # noqa: F401

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def _addindent(text, n):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    first = lines.pop(0)
    # NOTE: blank lines stay empty, as in torch 2.13.
    return first + "\n" + "\n".join((" " * n + line) if line.strip() else "" for line in lines)


def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                              '"forward" function')


def _converted_parameter(param, applied, grad, fn):
    """A new Parameter holding ``applied`` (and ``fn`` of the old gradient as its .grad)."""
    new = Parameter(applied, param.requires_grad)
    if grad is not None:
        with no_grad():
            new.grad = fn(grad).requires_grad_(grad.requires_grad)
    return new


def _hook_dict():
    return _HookDict()


class Module(StateDictMixin):
    """Base class for all neural network modules."""

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if self.call_super_init is False and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if self.call_super_init is False and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument "
                            f"but {len(args) + 1} were given")
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", {})
        setattr_("_buffers", {})
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_backward_pre_hooks", _hook_dict())
        setattr_("_backward_hooks", _hook_dict())
        setattr_("_is_full_backward_hook", None)
        setattr_("_forward_hooks", _hook_dict())
        setattr_("_forward_hooks_with_kwargs", _hook_dict())
        setattr_("_forward_hooks_always_called", _hook_dict())
        setattr_("_forward_pre_hooks", _hook_dict())
        setattr_("_forward_pre_hooks_with_kwargs", _hook_dict())
        setattr_("_state_dict_hooks", _hook_dict())
        setattr_("_state_dict_pre_hooks", _hook_dict())
        setattr_("_load_state_dict_pre_hooks", _hook_dict())
        setattr_("_load_state_dict_post_hooks", _hook_dict())
        setattr_("_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    # -- registration -------------------------------------------------------------------------
    def _check_new_name(self, what, store, name):
        """torch's checks of a buffer's or parameter's name before it is registered."""
        if store not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string. Got {typename(name)}")
        if "." in name:
            raise KeyError(f'{what} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{what} name can\'t be empty string ""')
        if hasattr(self, name) and name not in self.__dict__[store]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (state that is not a parameter) to the module."""
        self._check_new_name("buffer", "_buffers", name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter to the module."""
        self._check_new_name("parameter", "_parameters", name)
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                            "(ember.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must "
                f"be created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method.")
        else:
            self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module to the current module."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name, module):
        """Alias for :meth:`add_module`."""
        self.add_module(name, module)

    def get_submodule(self, target):
        """The submodule given by the dotted path ``target``."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")  # noqa: TRY004
        return mod

    def set_submodule(self, target, module, strict=False):
        """Set the submodule given by the dotted path ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")  # noqa: TRY004
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def _get_member(self, target, kind):
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        value = getattr(mod, name)
        if kind == "parameter" and not isinstance(value, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        if kind == "buffer" and name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return value

    def get_parameter(self, target):
        """The parameter given by the dotted path ``target``."""
        return self._get_member(target, "parameter")

    def get_buffer(self, target):
        """The buffer given by the dotted path ``target``."""
        return self._get_member(target, "buffer")

    def get_extra_state(self):
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
            "bug-report.yml to report this bug.")

    def set_extra_state(self, state):
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
            "bug-report.yml to report this bug.")

    # -- attributes -----------------------------------------------------------------------------
    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*stores):
            for s in stores:
                if name in s:
                    if isinstance(s, dict):
                        del s[name]
                    else:
                        s.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules,
                        self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                "(ember.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(self.__dict__, self._parameters, self._buffers,
                        self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as child module '{name}' "
                                "(ember.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                "(ember.nn.Buffer, ember.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
            return
        super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters)
                + list(self._modules) + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)

    # -- traversal ------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse=True):
        """An iterator over module parameters."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """An iterator over module parameters, yielding (name, parameter)."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse=True):
        """An iterator over module buffers."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """An iterator over module buffers, yielding (name, buffer)."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def children(self):
        """An iterator over immediate children modules."""
        for _, module in self.named_children():
            yield module

    def named_children(self):
        """An iterator over immediate children modules, yielding (name, module)."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate=True):
        """An iterator over all modules in the network."""
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """An iterator over all modules in the network, yielding (name, module)."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name,
                                            remove_duplicate)

    # -- modes and gradients --------------------------------------------------------------------
    def train(self, mode=True):
        """Set the module in training mode."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")  # noqa: TRY004
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """Set the module in evaluation mode."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Change if autograd should record operations on parameters in this module."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset gradients of all model parameters (to None by default)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    def share_memory(self):
        """Move the parameters and buffers (and gradients there are) to shared memory."""
        return self._apply(lambda t: t.share_memory_())

    def apply(self, fn):
        """Apply ``fn`` recursively to every submodule (as returned by .children()) and self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- conversions ----------------------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        if recurse:
            for module in self.children():
                module._apply(fn)
        from ... import __future__ as future  # (a from-import of it reads as Python's)
        overwrite = (future.get_overwrite_module_params_on_conversion()
                     and not future.get_swap_module_params_on_conversion())
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                applied = fn(param)
            grad = param.grad
            if overwrite:  # new Parameter objects, as torch.__future__ asks
                self._parameters[key] = _converted_parameter(param, applied, grad, fn)
                continue
            # NOTE: torch keeps the same Parameter object and swaps its data (set_data), so
            # optimizers built before .to()/.double() still hold the module's parameters.
            param._data = applied._data
            if grad is not None:
                with no_grad():
                    g = fn(grad)
                grad._data = g._data
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast the parameters and buffers (floating point ones change dtype)."""
        from ..._ops.shape import _parse_to
        for k in kwargs:
            if k not in ("dtype", "device", "non_blocking", "memory_format"):
                raise TypeError(f"to() received an invalid combination of arguments - got "
                                f"unexpected keyword '{k}'")
        kwargs = dict(kwargs)
        memory_format = kwargs.pop("memory_format", None)
        dtype, device, non_blocking, _ = _parse_to(args, kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")

        def convert(t):
            cast = dtype if dtype is not None and (t.is_floating_point() or t.is_complex()) \
                else None
            # (as torch: a memory format applies to the 4-d and 5-d tensors, the others keep
            # their layout)
            layout = memory_format if memory_format is not None and t.dim() in (4, 5) else None
            if cast is None and device is None and layout is None:
                return t
            if layout is None:
                return t.to(device=device, dtype=cast, non_blocking=non_blocking)
            return t.to(device=device, dtype=cast, non_blocking=non_blocking,
                        memory_format=layout)
        return self._apply(convert)

    def to_empty(self, *, device=None, recurse=True):
        """Move the parameters and buffers to ``device`` without copying their values."""
        from ..._creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cpu(self):
        """Move all model parameters and buffers to the CPU."""
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type):
        """Cast all parameters and buffers to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        """Cast all floating point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        """Cast all floating point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        """Cast all floating point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    # -- hooks ------------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Register a hook run before forward: ``hook(module, args)``."""
        handle = _Handle(self._forward_pre_hooks, (self._forward_pre_hooks_with_kwargs,))
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """Register a hook run after forward: ``hook(module, args, output)``."""
        handle = _Handle(self._forward_hooks, (self._forward_hooks_with_kwargs,
                                               self._forward_hooks_always_called))
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """Register a hook run when the gradients w.r.t. the module's outputs are computed."""
        handle = _Handle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """Register a hook run when the gradients w.r.t. the module's inputs are computed."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        handle = _Handle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """Deprecated: a hook on the grad_fn of the module's output."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = False
        handle = _Handle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def _get_backward_hooks(self):
        hooks = list(self._backward_hooks.values())
        if self._is_full_backward_hook is True:
            return hooks, []
        if self._is_full_backward_hook is False:
            return [], hooks
        return [], []

    _compiled_call_impl = None  # set by compile()

    def __call__(self, *args, **kwargs):
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        if not (self._backward_hooks or self._backward_pre_hooks or self._forward_hooks
                or self._forward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_impl(self, *args, **kwargs):
        """A call without compile(): forward, with the module's hooks around it."""
        if not (self._backward_hooks or self._backward_pre_hooks or self._forward_hooks
                or self._forward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def compile(self, *args, **kwargs):
        """Compile this module's calls in place with ``ember.compile(self._call_impl, ...)``
        (the arguments are ember.compile's)."""
        from ... import compile as compile_
        object.__setattr__(self, "_compiled_call_impl",
                           compile_(self._call_impl, *args, **kwargs))

    def _call_with_hooks(self, args, kwargs):
        called_always = set()
        result = None
        try:
            full_hooks, non_full_hooks = self._get_backward_hooks()
            pre_hooks = list(self._backward_pre_hooks.values())
            args, kwargs = self._run_forward_pre_hooks(args, kwargs)
            bw_hook = None
            if full_hooks or pre_hooks:
                bw_hook = BackwardHook(self, full_hooks, pre_hooks)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    r = hook(self, args, kwargs, result)
                else:
                    r = hook(self, args, result)
                if r is not None:
                    result = r
            if bw_hook:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a "
                                  f"Tensor or a tuple of Tensors but received {type(result)}",
                                  stacklevel=3)
                result = bw_hook.setup_output_hook(result)
            if non_full_hooks:
                self._attach_non_full_hooks(args, result, non_full_hooks)
            return result
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called_always:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            r = hook(self, args, kwargs, result)
                        else:
                            r = hook(self, args, result)
                        if r is not None:
                            result = r
                    except Exception as e:  # noqa: BLE001 - torch silences it with a warning
                        warnings.warn("module forward hook with ``always_call=True`` raised an "
                                      "exception that was silenced as another error was raised "
                                      f"in forward: {e}", stacklevel=3)
            raise

    def _run_forward_pre_hooks(self, args, kwargs):
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if isinstance(r, tuple) and len(r) == 2:
                        args, kwargs = r
                    else:
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {r}.")
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        return args, kwargs

    def _attach_non_full_hooks(self, args, result, hooks):
        var = result
        while not isinstance(var, Tensor):
            var = next(v for v in var.values() if isinstance(v, Tensor)) \
                if isinstance(var, dict) else var[0]
        grad_fn = var.grad_fn
        if grad_fn is not None:
            for hook in hooks:
                grad_fn.register_hook(_ModuleNodeHook(hook, self))
            self._maybe_warn_non_full_backward_hook(args, result, grad_fn)

    def _maybe_warn_non_full_backward_hook(self, inputs, result, grad_fn):
        """torch's FutureWarnings for a non-full backward hook that cannot see every gradient:
        the hook sits on one node, so it misses what other nodes (a layer's parameters', its
        other outputs') receive."""
        if isinstance(result, Tensor):
            result = (result,)
        elif not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
            return _warn_non_full("on a Module that does not return a single Tensor or a tuple "
                                  "of Tensors", "of the grad_output", True)
        if isinstance(inputs, Tensor):
            inputs = (inputs,)
        elif not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
            return _warn_non_full("on a Module that does not take as input a single Tensor or "
                                  "a tuple of Tensors", "of the grad_input", True)
        out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
        if not out_grad_fn or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
            return _warn_non_full("when outputs are nested in python data structure",
                                  "grad_output", False)
        if len(out_grad_fn) > 1:
            return _warn_non_full("when outputs are generated by different autograd Nodes",
                                  "grad_output", True)
        inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
        if inputs_grad_fn != {n[0] for n in grad_fn.next_functions}:
            _warn_non_full("when the forward contains multiple autograd Nodes", "grad_input",
                           True)

    # -- printing -------------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self) -> str:
        """Extra information printed inside the module's repr (override in layers)."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _warn_non_full(case, missing, advise):
    # (torch words the first two cases "hooks on a Module", the others "a ... hook when")
    start = "Using non-full backward hooks " if case.startswith("on ") else \
        "Using a non-full backward hook "
    advice = (" Please use register_full_backward_hook to get the documented behavior."
              if advise else "")
    warnings.warn(f"{start}{case} is deprecated and will be removed in future versions. This "
                  f"hook will be missing some {missing}.{advice}", FutureWarning, stacklevel=4)


class _ModuleNodeHook:
    """A node post-hook calling ``hook(module, grad_input, grad_output)``."""

    def __init__(self, hook, module):
        self.hook = hook
        self.module = weakref.ref(module)

    def __call__(self, grad_input, grad_output):
        module = self.module()
        if module is None:
            return None
        return self.hook(module, grad_input, grad_output)
