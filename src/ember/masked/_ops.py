"""torch.masked's operations on strided tensors: the input with its masked-out elements
replaced by the operation's identity (0 for sums, -inf for maxima, ...), then the plain
operation, composed as torch composes them (so values, dtypes and grad_fn names agree)."""
from __future__ import annotations


import ember

# integer and bool inputs of sum and prod give int64 unless a dtype is asked for
_WIDENED = ("uint8", "bool", "int8", "int16", "int32")


def _identity(name, input):  # noqa: A002 - torch's argument name
    """The value that leaves operation ``name`` unchanged, as a 0-d tensor of input's dtype
    (torch's NotImplementedError where there is none: a max of bools or uint16s)."""
    dtype, floating = input.dtype, input.dtype.is_floating_point
    signed = input.is_signed() or dtype == ember.uint8
    value = None
    if name in ("sum", "cumsum"):
        value = 0
    elif name in ("prod", "cumprod"):
        value = 1
    elif name in ("amax", "argmax", "logsumexp"):
        if floating or (name == "logsumexp" and dtype.is_complex):
            value = -float("inf")
        elif signed:
            value = ember.iinfo(dtype).min
    elif name in ("amin", "argmin"):
        if floating:
            value = float("inf")
        elif signed:
            value = ember.iinfo(dtype).max
    if value is None:
        raise NotImplementedError(f"identity of {name} on {dtype} input")
    return ember.tensor(value, dtype=dtype, device=input.device)


def _canonical_dim(dim, ndim):
    """``dim`` as a sorted tuple of non-negative dims (None or () for all of them)."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(input, mask):  # noqa: A002
    """``mask`` broadcast to input's shape, dense and boolean."""
    if mask.shape != input.shape:
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask "
                             "dimensionality higher than of the input)")
        mask = ember.broadcast_to(mask.clone(), input.shape).to(dtype=ember.bool)
    if mask.layout != ember.strided:
        mask = mask.to_dense()
    return mask.to(dtype=ember.bool)


def _masked_input(name, input, mask):  # noqa: A002
    """``input`` with its masked-out elements replaced by ``name``'s identity."""
    if input.layout != ember.strided:
        raise NotImplementedError(f"ember.masked.{name} takes strided tensors only "
                                  f"(got {input.layout} tensor)")
    if mask is None:
        return input
    return ember.where(_input_mask(input, mask), input, _identity(name, input))


def _sum_dtype(input, dtype):  # noqa: A002
    if dtype is not None:
        return dtype
    return ember.int64 if str(input.dtype).split(".")[-1] in _WIDENED else input.dtype


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A001,A002
    """Sum of the masked-in elements over ``dim`` (all dims by default)."""
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    return ember.sum(_masked_input("sum", input, mask), dims, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """Product of the masked-in elements over ``dim``."""
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    result = _masked_input("prod", input, mask).to(dtype=dtype)
    for d in reversed(dims):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def _extremum(name):
    def reduce(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
        dtype = input.dtype if dtype is None else dtype
        masked = _masked_input(name, input, mask)
        dims = _canonical_dim(dim, masked.ndim)
        return getattr(ember, name)(masked, dims, bool(keepdim)).to(dtype=dtype)
    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"{name} of the masked-in elements over ``dim``."
    return reduce


amax, amin = _extremum("amax"), _extremum("amin")


def _arg_extremum(name):
    def reduce(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
        dtype = input.dtype if dtype is None else dtype
        masked = _masked_input(name, input, mask)
        return getattr(ember, name)(masked, dim, bool(keepdim)).to(dtype=dtype)
    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"{name} of the masked-in elements along ``dim``."
    return reduce


argmax, argmin = _arg_extremum("argmax"), _arg_extremum("argmin")


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """Mean of the masked-in elements over ``dim`` (nan where every element is masked out)."""
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    if input.layout != ember.strided:
        raise NotImplementedError(f"ember.masked.mean takes strided tensors only "
                                  f"(got {input.layout} tensor)")
    if mask is None:
        count = sum(ember.ones(input.shape, dtype=ember.int64, device=input.device), dim,
                    keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype)
    else:
        inmask = _input_mask(input, mask)
        count = inmask.sum(dim=dim, keepdim=bool(keepdim))
        total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """log(sum(exp)) of the masked-in elements over ``dim``."""
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    masked = _masked_input("logsumexp", input, mask)
    return ember.logsumexp(masked, dims, keepdim=keepdim).to(dtype=dtype)


def _scan(name, identity):
    def scan(input, dim, *, dtype=None, mask=None):  # noqa: A002
        dtype = input.dtype if dtype is None else dtype
        d = _canonical_dim(dim, input.ndim)[0]
        masked = _masked_input(identity, input, mask)
        return getattr(ember, name)(masked, d, dtype=dtype).to(dtype=dtype)
    scan.__name__ = scan.__qualname__ = name
    scan.__doc__ = f"{name} along ``dim`` with masked-out elements left out."
    return scan


cumsum, cumprod = _scan("cumsum", "sum"), _scan("cumprod", "prod")


def _normalization(name, identity):
    def normalize(input, dim, *, dtype=None, mask=None):  # noqa: A002
        dtype = input.dtype if dtype is None else dtype
        d = _canonical_dim(dim, input.ndim)[0]
        masked = _masked_input(identity, input, mask)
        return getattr(ember.nn.functional, name)(masked, d, dtype=dtype)
    normalize.__name__ = normalize.__qualname__ = name
    normalize.__doc__ = f"{name} along ``dim`` over the masked-in elements only."
    return normalize


softmax = _normalization("softmax", "amax")
log_softmax = _normalization("log_softmax", "amax")
softmin = _normalization("softmin", "amin")

