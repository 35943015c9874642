"""torch.backends.mkl: ember calls MKL only through NumPy, never directly."""


def is_available() -> bool:
    """Whether ember uses MKL itself (never)."""
    return False
