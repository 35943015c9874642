"""Activation modules: thin wrappers around ``ember.nn.functional``."""
from __future__ import annotations

__all__ = [
    'CELU',
    'ELU',
    'GELU',
    'GLU',
    'SELU',
    'Hardshrink',
    'Hardsigmoid',
    'Hardswish',
    'Hardtanh',
    'LeakyReLU',
    'LogSigmoid',
    'LogSoftmax',
    'Mish',
    'PReLU',
    'RReLU',
    'ReLU',
    'ReLU6',
    'SiLU',
    'Sigmoid',
    'Softmax',
    'Softmax2d',
    'Softmin',
    'Softplus',
    'Softshrink',
    'Softsign',
    'Tanh',
    'Tanhshrink',
    'Threshold',
]

from ..._creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


def _inplace_str(inplace, lead=", "):
    return f"{lead}inplace=True" if inplace else ""


class Threshold(Module):
    """Thresholds each element: x if x > threshold else value."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class ReLU(Module):
    """Applies the rectified linear unit function element-wise."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class RReLU(Module):
    """Randomized leaky ReLU (random slopes in training, their mean in evaluation)."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Hardtanh(Module):
    """Clips each element to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        super().__init__()
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError("max_val must be greater than min_val")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(0, x), 6), element-wise."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class _Simple(Module):
    """An activation with no parameters (and an optional ``inplace`` flag)."""

    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class Sigmoid(_Simple):
    """Applies the sigmoid function element-wise."""

    _fn = staticmethod(F.sigmoid)


class Tanh(_Simple):
    """Applies the hyperbolic tangent element-wise."""

    _fn = staticmethod(F.tanh)


class LogSigmoid(_Simple):
    """log(sigmoid(x)), element-wise."""

    _fn = staticmethod(F.logsigmoid)


class Softsign(_Simple):
    """x / (1 + |x|), element-wise."""

    _fn = staticmethod(F.softsign)


class Tanhshrink(_Simple):
    """x - tanh(x), element-wise."""

    _fn = staticmethod(F.tanhshrink)


class _Inplace(Module):
    _fn = None
    _show_inplace = True

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return ("inplace=True" if self.inplace else "") if self._show_inplace else ""


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6, element-wise."""

    _fn = staticmethod(F.hardsigmoid)
    _show_inplace = False


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6, element-wise."""

    _fn = staticmethod(F.hardswish)
    _show_inplace = False


class SiLU(_Inplace):
    """x * sigmoid(x), element-wise."""

    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """x * tanh(softplus(x)), element-wise."""

    _fn = staticmethod(F.mish)


class SELU(_Inplace):
    """Scaled ELU with the self-normalising constants."""

    _fn = staticmethod(F.selu)


class ELU(Module):
    """Exponential linear unit, element-wise."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(ELU):
    """Continuously differentiable exponential linear unit, element-wise."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class GLU(Module):
    """Gated linear unit: a * sigmoid(b) for the halves a, b of the input along ``dim``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class GELU(Module):
    """Gaussian error linear unit (``approximate='tanh'``: its tanh approximation)."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Hardshrink(Module):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """Shrinks each element towards 0 by lambd."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class LeakyReLU(Module):
    """max(0, x) + negative_slope * min(0, x), element-wise."""

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class Softplus(Module):
    """1/beta * log(1 + exp(beta * x)), linear above ``threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class PReLU(Module):
    """Leaky ReLU with a learnt slope (one, or one per channel)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _SoftmaxBase(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(_SoftmaxBase):
    """softmax(-x) along ``dim``."""

    _fn = staticmethod(F.softmin)


class Softmax(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along ``dim``."""

    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along ``dim``."""

    _fn = staticmethod(F.log_softmax)


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return F.softmax(input, -3, _stacklevel=5)
