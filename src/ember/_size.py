"""``ember.Size``: the tuple subclass torch returns for shapes."""


class Size(tuple):
    """A tensor's shape: a tuple of ints that prints as ``ember.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"ember.Size({list(self)!r})"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __reduce__(self):
        return (Size, (tuple(self),))


def args_or_keyword(args: tuple, value, fn: str, keyword: str) -> tuple:
    """The size-like arguments of ``fn`` as torch takes them: separately (``f(2, 3)``), as one
    sequence (``f((2, 3))``), or as that sequence by keyword (``f(size=(2, 3))``)."""
    if value is None:
        return args
    if args:
        raise TypeError(f"{fn}() got multiple values for argument '{keyword}'")
    return (value,)
