"""The op library: the registry and one file per op family (importing them registers them)."""
from . import registry  # noqa: F401
from . import pointwise, shape, reduction, linalg, nn_ops, views  # noqa: F401
