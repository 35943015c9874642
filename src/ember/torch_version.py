"""``TorchVersion``: the type of ``ember.__version__``, a string that compares as a version.

Programs written for torch gate features on ``torch.__version__`` (``>= "1.7"``, ``<
(2, 0)``); as a plain string ``"2.13.0" >= "2.9"`` would be False. Comparisons here follow
torch's own ``TorchVersion`` (PEP 440 through ``packaging``): release numbers first, a
pre-release or dev release before its release, a local label (``+cpu``, ``+ember0.1.0``)
after it and part of equality; tuples are read as releases (``(2, 13)`` is ``"2.13"``);
strings that are no versions compare as strings; numbers refuse.
"""
from __future__ import annotations

import re

__all__ = ["TorchVersion"]

_VERSION = re.compile(r"^\s*v?(\d+(?:\.\d+)*)((?:[-_.]?(?:a|b|rc|alpha|beta|pre|preview|c|dev)"
                      r"[-_.]?\d*)*)(?:\+([a-z0-9.]+))?\s*$", re.IGNORECASE)


def _key(text: str):
    """(release, pre-release rank, local label) of a version string, or None."""
    match = _VERSION.match(text)
    if match is None:
        return None
    release = tuple(int(v) for v in match.group(1).split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    return release, (-1 if match.group(2) else 0), (match.group(3) or "").lower()


def _other_text(other):
    if isinstance(other, tuple):
        return ".".join(str(int(v)) for v in other)
    if isinstance(other, str):
        return str(other)
    return None


class TorchVersion(str):
    """A version string (``"2.13.0+ember0.1.0"``) that compares as a version."""

    def _compare(self, other, op):
        text = _other_text(other)
        if text is None:
            return NotImplemented
        mine, theirs = _key(str(self)), _key(text)
        if mine is None or theirs is None:
            return op(str(self), text)
        return op(mine, theirs)

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b)

    def __eq__(self, other):
        result = self._compare(other, lambda a, b: a == b)
        return False if result is NotImplemented else result

    # NOTE: ``!=`` stays str's, as in torch ("2.13.0" != "2.13" is True there too).

    __hash__ = str.__hash__
