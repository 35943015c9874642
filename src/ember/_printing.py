"""Tensor printing that reproduces PyTorch 2.13's ``repr(tensor)`` character for character.

This module mirrors the behaviour of ``torch/_tensor_str.py`` for dense CPU tensors, working
directly on NumPy arrays.  It is deliberately self-contained (no imports from the rest of
ember) so that it can be tested, and loaded, on its own.

The public pieces are the print-option API (``set_printoptions``, ``get_printoptions``,
``printoptions``) and ``tensor_str``, which builds the full ``tensor(...)`` text.
"""

import contextlib
import math

import numpy as np

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "tensor_str"]

# Option values set by each ``profile``; keys not listed are left untouched.
_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}

_OPTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}

# (bfloat16 and the float8 formats print through float32, which holds each of their values)
_NARROW_FLOAT_NAMES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                       "float8_e5m2fnuz", "float8_e8m0fnu")
_FLOAT_NAMES = ("float16", "float32", "float64") + _NARROW_FLOAT_NAMES
_COMPLEX_NAMES = ("complex64", "complex128")


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set the print options, with the same semantics as ``torch.set_printoptions``.

    The profile is applied first and explicit options override it.  Like torch,
    ``sci_mode`` is always assigned, so omitting it resets it to ``None`` (automatic).
    """
    _OPTS.update(_PROFILES.get(profile, {}))
    explicit = {"precision": precision, "threshold": threshold,
                "edgeitems": edgeitems, "linewidth": linewidth}
    _OPTS.update({key: value for key, value in explicit.items() if value is not None})
    _OPTS["sci_mode"] = sci_mode


def get_printoptions():
    """Return the current options as a dict accepted by ``set_printoptions(**opts)``."""
    return dict(_OPTS)


class printoptions(contextlib.ContextDecorator):  # noqa: N801 - name mirrors torch's API
    """Context manager (and decorator) that sets print options and restores them on exit."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._saved = []

    def __enter__(self):
        # A stack keeps a reused instance correct when it is nested within itself.
        self._saved.append(get_printoptions())
        set_printoptions(**self._kwargs)

    def __exit__(self, *exc_info):
        set_printoptions(**self._saved.pop())
        return False


class _Formatter:
    """Decides the common width and notation of every element, like torch's ``_Formatter``.

    ``values`` is the (possibly summarized) data; only it is inspected, so elements hidden
    behind ``...`` do not influence the format of the visible ones.
    """

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = np.asarray(values).reshape(-1)
        if not floating:
            # str() length grows with |value| within a sign, so the extremes are the widest.
            extremes = [flat.min().item(), flat.max().item()] if flat.size else []
            self.max_width = max([1] + [len(f"{v}") for v in extremes])
        else:
            self._scan_floats(flat.astype(np.float64))

    def _scan_floats(self, flat):
        nonzero = flat[np.isfinite(flat) & (flat != 0)]
        if nonzero.size == 0:
            # Torch returns early here: even a forced sci_mode is ignored.
            return
        magnitude = np.abs(nonzero)
        lo, hi = magnitude.min(), magnitude.max()
        self.int_mode = bool(np.all(nonzero == np.ceil(nonzero)))
        sci = _OPTS["sci_mode"]
        if sci is None:
            with np.errstate(over="ignore"):  # an infinite ratio is fine, as in torch
                sci = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        self.sci_mode = bool(sci)
        extra = 1 if self.int_mode and not self.sci_mode else 0  # room for the trailing "."
        widths = [len(self._plain(v)) + extra for v in _extreme_values(nonzero)]
        self.max_width = max(widths)

    def _plain(self, value):
        """Format a finite value without padding (and without the int-mode dot)."""
        precision = _OPTS["precision"]
        if self.sci_mode:
            return f"{value:.{precision}e}"
        if self.int_mode:
            return f"{value:.0f}"
        return f"{value:.{precision}f}"

    def format(self, value):
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{_OPTS['precision']}e}"
        else:
            text = self._plain(value)
            # The dot tells an integral float apart from an integer tensor.
            if self.int_mode and math.isfinite(value):
                text += "."
        return text.rjust(self.max_width)


def _extreme_values(values):
    """Smallest and largest magnitudes of each sign.

    Fixed-point width only grows with the magnitude, and the scientific width only changes
    when the exponent reaches three digits (very large or very small magnitudes), so the
    widest string of a sign is always at one of its two magnitude extremes.
    """
    picks = []
    for part in (values[values > 0], values[values < 0]):
        if part.size:
            picks += [part.min().item(), part.max().item()]
    return picks


def _summarized_flat(array, edge):
    """The elements that remain visible after summarization, flattened (torch's
    ``get_summarized_data``)."""
    if array.ndim == 0:
        return array.reshape(-1)
    if array.ndim == 1:
        if array.shape[0] > 2 * edge:
            # ``array[-0:]`` is the whole array, exactly as torch's slice behaves.
            return np.concatenate((array[:edge], array[-edge:]))
        return array
    if not edge:
        return array.reshape(-1)[:0]
    rows = _visible_rows(array.shape[0], edge, True)
    return np.concatenate([_summarized_flat(array[i], edge) for i in rows if i is not None])


def _visible_rows(length, edge, summarize):
    """Row indices to print; ``None`` marks where the ``...`` goes."""
    if summarize and length > 2 * edge:
        return list(range(edge)) + [None] + list(range(length - edge, length))
    return list(range(length))


class _Printer:
    """Renders the bracketed data for one array with a fixed set of formatters."""

    def __init__(self, array, summarize, is_complex, floating):
        self.summarize = summarize
        self.edge = _OPTS["edgeitems"]
        visible = _summarized_flat(array, self.edge) if summarize else array
        if is_complex:
            self.formatters = (_Formatter(visible.real, True), _Formatter(visible.imag, True))
        else:
            self.formatters = (_Formatter(visible, floating),)

    def element(self, value):
        if len(self.formatters) == 1:
            return self.formatters[0].format(value)
        real = self.formatters[0].format(value.real)
        imag = (self.formatters[1].format(value.imag) + "j").lstrip()
        # A sign (including that of -0.0) already separates the parts.
        return real + imag if imag[0] in "+-" else real + "+" + imag

    def render(self, array, indent):
        if array.ndim == 0:
            return self.element(array.item())
        if array.ndim == 1:
            return self._vector(array, indent)
        blocks = [self.render(array[i], indent + 1) if i is not None else "..."
                  for i in _visible_rows(array.shape[0], self.edge, self.summarize)]
        # Higher-dimensional blocks are separated by (ndim - 1) newlines.
        separator = "," + "\n" * (array.ndim - 1) + " " * (indent + 1)
        return "[" + separator.join(blocks) + "]"

    def _vector(self, array, indent):
        element_length = sum(f.max_width for f in self.formatters) + 2
        element_length += len(self.formatters) - 1  # the "j" of complex numbers
        per_line = max(1, math.floor((_OPTS["linewidth"] - indent) / element_length))
        if self.summarize and not self.edge:
            items = ["..."]
        elif self.summarize and array.shape[0] > 2 * self.edge:
            items = ([self.element(v) for v in array[:self.edge].tolist()] + [" ..."]
                     + [self.element(v) for v in array[-self.edge:].tolist()])
        else:
            items = [self.element(v) for v in array.tolist()]
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _data_str(array, dtype_name, indent):
    if array.size == 0:
        return "[]"
    summarize = array.size > _OPTS["threshold"]
    printer = _Printer(array, summarize, dtype_name in _COMPLEX_NAMES,
                       dtype_name in _FLOAT_NAMES)
    return printer.render(array, indent)


def _auto_suffixes(array, dtype_name, default_float_name, dtype_prefix):
    """The size/dtype suffixes torch adds on its own, in torch's order."""
    default_complex = "complex128" if default_float_name == "float64" else "complex64"
    implicit = (default_float_name, default_complex, "int64", "bool")
    size = "size=" + str(tuple(array.shape))
    dtype = "dtype=" + dtype_prefix + dtype_name
    if array.size == 0:
        # Empty tensors show every dtype except the default float (nothing to infer from).
        return ([size] if array.ndim != 1 else []) + (
            [dtype] if dtype_name != default_float_name else [])
    return ([size] if not _OPTS["edgeitems"] else []) + (
        [dtype] if dtype_name not in implicit else [])


def meta_str(shape, *, dtype_name, default_float_name, suffixes=(), prefix="tensor(",
             dtype_prefix="ember."):
    """``repr`` of a meta tensor: no values, so ``...``, and always its size; its dtype
    unless it is the default float one."""
    every = ["device='meta'", "size=" + str(tuple(shape))]
    if dtype_name != default_float_name:
        every.append("dtype=" + dtype_prefix + dtype_name)
    return _add_suffixes(prefix + "...", every + list(suffixes), len(prefix))


def _add_suffixes(text, suffixes, indent, force_newline=False):
    """Append ``, suffix`` items, wrapping onto a new line when one would pass linewidth
    (``force_newline``: the first one always starts a line, as a sparse tensor's do)."""
    parts = [text]
    # Torch's estimate of the last line's length is 2 too large; kept for identical output.
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if force_newline or last_line_len + len(suffix) + 2 > _OPTS["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
            force_newline = False
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    return "".join(parts) + ")"


def tensor_str(array, *, dtype_name, default_float_name, suffixes=(), prefix="tensor(",
               dtype_prefix="ember.", device=None):
    """Return what ``repr`` of a torch tensor holding ``array`` would print.

    ``suffixes`` (e.g. ``"requires_grad=True"``) follow torch's automatic size/dtype ones;
    ``device`` (a device other than the CPU) comes before them.
    """
    array = np.asarray(array)
    if dtype_name in _NARROW_FLOAT_NAMES:
        array = array.astype(np.float32)
    indent = len(prefix)
    body = _data_str(array, dtype_name, indent)
    every = _auto_suffixes(array, dtype_name, default_float_name, dtype_prefix)
    if device is not None:
        every.insert(0, f"device='{device}'")
    return _add_suffixes(prefix + body, every + list(suffixes), indent)
