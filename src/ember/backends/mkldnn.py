"""torch.backends.mkldnn: ember's CPU kernels are NumPy's, not oneDNN's."""
enabled = True


def is_available() -> bool:
    """Whether oneDNN is used (never)."""
    return False
