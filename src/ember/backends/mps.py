"""torch.backends.mps: ember has no Metal backend."""


def is_available() -> bool:
    """Whether MPS can be used (never)."""
    return False


def is_built() -> bool:
    """Whether ember was built with MPS (never)."""
    return False
