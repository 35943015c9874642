"""The hook-based reparameterizations torch keeps for old code: ``weight_norm`` and
``spectral_norm`` (and their ``remove_*``). Each replaces a parameter ``name`` by parameters
it is computed from, and a forward pre-hook recomputes ``module.<name>`` before each call."""
from __future__ import annotations

import warnings

from ...autograd.grad_mode import no_grad

__all__ = ["remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]


def _norm_except_dim(v, dim):
    """The 2-norm of ``v`` over every dim but ``dim`` (shaped to broadcast against ``v``);
    over all of ``v`` when ``dim`` is None."""
    if dim is None:
        return v.norm()
    d = dim % v.dim()
    others = tuple(k for k in range(v.dim()) if k != d)
    return v.norm(2, others, keepdim=True) if others else v.abs()


class WeightNorm:
    """The forward pre-hook of ``weight_norm``: ``weight = g * v / ||v||``."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, None if self.dim == -1 else self.dim))

    @staticmethod
    def apply(module, name, dim):
        from ..parameter import Parameter
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        norm = _norm_except_dim(weight, None if dim == -1 else dim)
        module.register_parameter(name + "_g", Parameter(norm.detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        from ..parameter import Parameter
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparameterize ``module.<name>`` as magnitude ``<name>_g`` times direction
    ``<name>_v``."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")


class SpectralNorm:
    """The forward pre-hook of ``spectral_norm``: ``weight = weight_orig / sigma``, sigma the
    largest singular value, estimated by power iteration (updated in training mode)."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.n_power_iterations, self.eps = (name, dim,
                                                                  n_power_iterations, eps)

    def reshape_weight_to_matrix(self, weight):
        w = weight
        if self.dim != 0:
            w = w.permute((self.dim,) + tuple(d for d in range(w.dim()) if d != self.dim))
        return w.reshape(w.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        from ..functional import normalize
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(mat.t().mv(u), dim=0, eps=self.eps))
                    u.copy_(normalize(mat.mv(v), dim=0, eps=self.eps))
                if self.n_power_iterations > 0:
                    u, v = u.clone(), v.clone()
        sigma = u.dot(mat.mv(v))
        return weight / sigma

    def remove(self, module):
        from ..parameter import Parameter
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module,
                                                        do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        from ..functional import normalize
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            mat = fn.reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm before every forward call."""
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
