"""The op library: the registry and one file per op family (importing them registers them)."""
from . import registry  # noqa: F401
from . import (activation, binary, conv, indexing, linalg, linalg_decomp, loss,  # noqa: F401
               normalization, nn_ops, pointwise, pooling, reduction, scan, shape, sorting,
               special, strided, unary, upsample, views)
from . import inplace_forms  # noqa: F401  (after shape and strided, whose ops it builds on)
from . import (bessel, complex, fft, linalg_eig, linalg_ldl, linalg_lu,  # noqa: F401
               polynomials, spectral)
from . import random  # noqa: F401
from . import sampling  # noqa: F401
from . import embedding_bag  # noqa: F401
from . import sparse  # noqa: F401
from . import rnn_layer  # noqa: F401
from . import attention  # noqa: F401
from . import deprecated_overloads  # noqa: F401  (remakes add, sub, addcmul, addcdiv methods)

registry.guard_operators(registry.Tensor)
