"""DDP communication hooks (``DistributedDataParallel.register_comm_hook``)."""
from . import default_hooks

__all__ = ["default_hooks"]
