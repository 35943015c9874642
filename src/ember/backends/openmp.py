"""torch.backends.openmp: ember runs no OpenMP code of its own."""


def is_available() -> bool:
    """Whether ember uses OpenMP itself (never)."""
    return False
