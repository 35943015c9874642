"""torch.backends.opt_einsum: ember does not use the opt_einsum package (torch's answers when
it is not installed)."""
enabled = False
strategy = None


def is_available() -> bool:
    """Whether the opt_einsum package is used (never)."""
    return False
