"""ember: define-by-run automatic differentiation on NumPy, with PyTorch's autograd API.

``import ember as torch`` runs torch autograd code: tensors record what is done to them and
``backward()`` computes gradients.
"""
from __future__ import annotations

from .version import __version__
from . import version  # noqa: E402 - torch.version

from ._dtype import (bool, cdouble, cfloat, complex64, complex128, double, dtype, float,  # noqa: A004
                     float16, float32, float64, get_default_dtype, half, int, int8, int16,
                     int32, int64, long, promote_types, set_default_dtype, short, uint8,
                     uint16, uint32, uint64, bfloat16, float8_e4m3fn, float8_e5m2,
                     float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
from ._dtype import can_cast as _can_cast
from ._overloads import NO_VALUE as _NO_VALUE, choose as _choose_overload
from ._size import Size
from ._tensor import Tensor, device, is_tensor, strided, typename
from ._printing import get_printoptions, printoptions, set_printoptions
from ._creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full,
                        full_like, linspace, logspace, normal, ones, ones_like, rand, rand_like,
                        randint, randint_like, randn, randn_like, randperm, tensor, zeros,
                        zeros_like)
from ._random import Generator, default_generator
from . import _C  # noqa: F401 - (the Generator class prints as ember._C.Generator)
from ._threads import get_num_threads, set_num_threads
from .random import get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from . import random
from ._creation import cartesian_prod, meshgrid, tril_indices, triu_indices
from . import _ops
from ._legacy import *  # noqa: F401,F403 - FloatTensor, LongTensor, ...
# Each op family lists its public functions in __all__; ember's namespace is their union.
from ._ops.pointwise import *  # noqa: F401,F403
from ._ops.unary import *  # noqa: F401,F403
from ._ops.special import *  # noqa: F401,F403
from ._ops.binary import *  # noqa: F401,F403
from ._ops.reduction import *  # noqa: F401,F403
from ._ops.scan import *  # noqa: F401,F403
from ._ops.sorting import *  # noqa: F401,F403
from ._ops.shape import *  # noqa: F401,F403
from ._ops.strided import *  # noqa: F401,F403
from ._ops.complex import *  # noqa: F401,F403
from ._ops.bessel import *  # noqa: F401,F403
from ._ops.spectral import *  # noqa: F401,F403
from ._windows import *  # noqa: F401,F403
from ._linalg_factor import lu_unpack, orgqr  # noqa: F401
from ._linalg_factor import torch_matrix_exp as matrix_exp  # noqa: F401
from ._linalg_factor import torch_matrix_power as matrix_power  # noqa: F401
from ._linalg_factor import torch_lu as lu  # noqa: F401
from ._linalg_factor import torch_lu_solve as lu_solve  # noqa: F401
from ._ops.indexing import *  # noqa: F401,F403
from ._ops.linalg import *  # noqa: F401,F403
from ._ops.linalg_decomp import *  # noqa: F401,F403
from ._ops.nn_ops import *  # noqa: F401,F403
from ._ops.activation import *  # noqa: F401,F403
from ._ops.loss import *  # noqa: F401,F403
from ._ops.aten_losses import *  # noqa: F401,F403  (torch.kl_div...: aten signatures)
from ._ops.conv import *  # noqa: F401,F403
from ._ops.pooling import *  # noqa: F401,F403
from ._ops.grid_sample import *  # noqa: F401,F403
from ._ops.conv_tbc import *  # noqa: F401,F403
from ._ops.index_reduce import *  # noqa: F401,F403
from ._ops.segment_reduce import *  # noqa: F401,F403
from ._ops.sparse import *  # noqa: F401,F403
from ._tensor import sparse_coo  # noqa: F401
from ._ops.normalization import *  # noqa: F401,F403
from ._ops.native_norms import *  # noqa: F401,F403
from ._ops.batch_norm_parts import *  # noqa: F401,F403
from ._ops.linalg_geqrf import *  # noqa: F401,F403
from ._lowrank import *  # noqa: F401,F403
from ._lobpcg import lobpcg  # noqa: F401
from ._ops.random import *  # noqa: F401,F403
from ._ops.sampling import *  # noqa: F401,F403
from ._ops.sampling import (_dirichlet_grad, _sample_dirichlet, _standard_gamma,  # noqa: F401
                            _standard_gamma_grad)
from ._ops.counting import *  # noqa: F401,F403
from ._ops.composite import *  # noqa: F401,F403
from ._ops.numeric import *  # noqa: F401,F403
from ._info import finfo, iinfo
from ._namespace import (are_deterministic_algorithms_enabled, asarray, e,
                         fill, frombuffer, get_default_device, get_deterministic_debug_mode,
                         get_float32_matmul_precision, get_num_interop_threads, inf,
                         is_deterministic_algorithms_warn_only_enabled,
                         is_nonzero, is_same_size, is_signed, is_warn_always_enabled, nan,
                         newaxis, pi, range, scalar_tensor,
                         set_default_device, set_deterministic_debug_mode,
                         set_float32_matmul_precision, set_flush_denormal,
                         set_num_interop_threads, set_warn_always,
                         use_deterministic_algorithms)
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                 is_inference_mode_enabled, no_grad, set_grad_enabled)
from . import autograd

clip = clamp
concat = concatenate = cat
multiply, subtract, divide, true_divide, negative, absolute = mul, sub, div, div, neg, abs
swapdims = transpose
ger = outer
from ._tensor_extras import *  # noqa: E402,F401,F403
from ._tensor_extras import install as _install  # noqa: E402
_install()
from ._device_api import *  # noqa: E402,F401,F403
from ._legacy_linalg import *  # noqa: E402,F401,F403
from ._tensor_compat import install as _install  # noqa: E402
_install()
from ._storage import TypedStorage, UntypedStorage, is_storage  # noqa: E402,F401
del _install
from ._namespace import names as _names  # noqa: E402 - after every op is in the namespace
_names(globals())
del _names


def is_anomaly_enabled() -> bool:
    from .autograd.anomaly_mode import is_anomaly_enabled as enabled
    return enabled()


def is_anomaly_check_nan_enabled() -> bool:
    from .autograd.anomaly_mode import is_anomaly_check_nan_enabled as enabled
    return enabled()


def set_anomaly_enabled(enabled, check_nan=True) -> None:
    from .autograd.anomaly_mode import set_anomaly_enabled as set_enabled
    set_enabled(enabled, check_nan)


def save(obj, f, *args, **kwargs):
    """Save tensors, state dicts and nested containers (other objects pickled, as torch does)
    to a NumPy archive."""
    from .serialization import save as save_
    return save_(obj, f, *args, **kwargs)


def load(f, *args, **kwargs):
    """Load what ``ember.save`` wrote; refuses anything else (a pickled entry is unpickled only
    as torch.load does: ``weights_only=False`` or allowed classes)."""
    from .serialization import load as load_
    return load_(f, *args, **kwargs)


def can_cast(from_, to):
    """Whether a value of dtype ``from_`` may be cast to ``to`` by torch's casting rules."""
    return _can_cast(from_, to)


_RESULT_TYPE_OVERLOADS = ((("Tensor", "tensor"), ("Tensor", "other")),
                         (("Number", "scalar"), ("Tensor", "tensor")),
                         (("Tensor", "tensor"), ("Number", "other")),
                         (("Number", "scalar1"), ("Number", "scalar2")))


def result_type(_first=_NO_VALUE, _second=_NO_VALUE, /, *, tensor=_NO_VALUE, other=_NO_VALUE,
                scalar=_NO_VALUE, scalar1=_NO_VALUE, scalar2=_NO_VALUE):
    """The dtype an op on two operands would produce (torch's promotion); torch's overloads
    name them ``tensor``/``other``, ``scalar``/``tensor`` or ``scalar1``/``scalar2``."""
    from . import _dtype as D
    named = {"tensor": tensor, "other": other, "scalar": scalar, "scalar1": scalar1,
             "scalar2": scalar2}
    named = {k: v for k, v in named.items() if v is not _NO_VALUE}
    _, values = _choose_overload("result_type", _RESULT_TYPE_OVERLOADS, (_first, _second),
                                 named)
    key = []
    for a in values:
        if isinstance(a, Tensor):
            key.append((a.dtype, D.ZERO_DIM if a.ndim == 0 else D.DIM))
        else:
            key.append((D.scalar_dtype(a), D.SCALAR))
    return D.result_type_of(tuple(key))


def numel(input) -> int:
    return input.numel()


def is_floating_point(input) -> bool:
    return input.is_floating_point()


def is_complex(input) -> bool:
    return input.is_complex()


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``ember.func.vmap``: run a function of one example on a whole batch."""
    from .func import vmap as vmap_
    return vmap_(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


from ._out import install as _install_out  # noqa: E402  (once the namespace is complete)

_install_out("", globals())

from ._out_dtype import install as _install_out_dtype  # noqa: E402

_install_out_dtype(globals())

from ._numpy_operands import install as _install_numpy_operands  # noqa: E402 - after out=

_install_numpy_operands(globals())

from .amp.autocast_mode import (autocast, autocast_decrement_nesting,  # noqa: E402
                                autocast_increment_nesting, clear_autocast_cache,
                                get_autocast_cpu_dtype, get_autocast_dtype,
                                get_autocast_gpu_dtype, is_autocast_cache_enabled,
                                is_autocast_cpu_enabled, is_autocast_enabled,
                                set_autocast_cache_enabled, set_autocast_cpu_dtype,
                                set_autocast_cpu_enabled, set_autocast_dtype,
                                set_autocast_enabled, set_autocast_gpu_dtype)
from .amp.grad_scaler import GradScaler  # noqa: E402
from . import amp  # noqa: E402
from . import overrides  # noqa: E402
from .overrides import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: E402,F401
import sys as _sys  # noqa: E402
from ._numpy_keywords import accept_numpy_keywords as _accept_numpy  # noqa: E402
# the functions torch's argument parser binds take NumPy's names (axis=, keepdims=) there
_NUMPY_NAMED = ("max", "min", "std", "var", "prod", "logsumexp", "all", "any", "cumsum",
                "cumprod", "logcumsumexp", "cummax", "cummin", "softmax", "log_softmax",
                "squeeze", "nansum", "nanmean", "median", "nanmedian", "mode", "kthvalue",
                "aminmax", "quantile", "nanquantile", "sort", "argsort", "topk", "flatten",
                "select", "narrow", "index_select", "gather", "take_along_dim", "roll",
                "diff", "cross", "count_nonzero", "movedim", "moveaxis", "unbind",
                "repeat_interleave", "chunk", "tensor_split")
_accept_numpy(Tensor, _NUMPY_NAMED)
_accept_numpy(_sys.modules[__name__], _NUMPY_NAMED + ("std_mean", "var_mean", "cat", "concat",
                                                     "concatenate", "stack"))
del _accept_numpy, _NUMPY_NAMED, _sys
from ._arg_parser import install_methods as _install_parser_methods  # noqa: E402
_install_parser_methods(Tensor)  # (torch's parser errors for the methods' refused calls)
del _install_parser_methods
from ._tensor import seal_read_only_attributes as _seal  # noqa: E402 - after every property
_seal()
del _seal
from ._ops.deprecated_overloads import install as _install_deprecated  # noqa: E402

_install_deprecated(globals())
del _install_deprecated
from ._arg_parser import install as _install_parser  # noqa: E402
# torch's parser errors for the calls its parser refuses (a missing or mistyped argument)
_install_parser(globals())
del _install_parser
# (torch.functional's functions are named there, broadcast_tensors in its handlers' calls)
from . import functional  # noqa: E402
from ._by_reference import name_where_found as _name_where_found  # noqa: E402 - after every function
_name_where_found(globals())
del _name_where_found

# torch's core classes print as the package's own (``<class 'torch.Tensor'>``, ``torch.Size``);
# pickle finds them again under that name, as each is exported here
for _cls, _name in ((Tensor, "Tensor"), (Size, "Size"), (dtype, "dtype"), (device, "device"),
                    (finfo, "finfo"), (iinfo, "iinfo"), (memory_format, "memory_format"),
                    (layout, "layout")):
    _cls.__module__, _cls.__name__, _cls.__qualname__ = __name__, _name, _name
del _cls, _name
from ._by_reference import name_methods_where_found as _name_methods  # noqa: E402
_name_methods(Tensor)
del _name_methods

_SUBMODULES = ("nn", "cuda", "accelerator", "backends", "profiler", "utils", "optim", "func", "linalg", "datasets",
               "distributions", "compiler", "_dynamo", "distributed", "futures",
               "multiprocessing", "fft", "special", "signal", "cpu", "sparse", "functional",
               "xpu", "testing", "masked", "onnx", "quasirandom", "ops", "library", "types",
               "serialization", "storage", "_inductor", "jit")


def compile(model=None, **kwargs):  # noqa: A001 - torch's name
    """Record ``model``'s kernel calls once and replay them (see ember.compiler.compile)."""
    from ._compile.api import compile as compile_
    return compile_(model, **kwargs)


# torch's functional recurrent networks live with nn's recurrent modules (imported on first use)
_NN_FUNCTIONS = ("gru", "gru_cell", "lstm", "lstm_cell", "rnn_relu", "rnn_relu_cell",
                 "rnn_tanh", "rnn_tanh_cell")


def __getattr__(name):
    """Import the heavier submodules on first use (``import ember`` stays fast)."""
    if name in _NN_FUNCTIONS:
        from .nn import _functional_rnn
        fn = globals()[name] = getattr(_functional_rnn, name)
        return fn
    if name == "torch":  # (torch.torch is torch itself: kornia annotates with torch.torch.Tensor)
        import sys
        return sys.modules[__name__]
    if name == "Future":  # (torch.Future: the class of torch.futures' futures)
        from .futures import Future
        return Future
    if name in _SUBMODULES:
        import importlib
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'ember' has no attribute '{name}'")
