"""``ember.storage``: the storage classes (see ember._storage)."""
from ._storage import TypedStorage, UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]
