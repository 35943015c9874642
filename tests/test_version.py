"""``ember.__version__`` compares as torch's ``TorchVersion`` does (programs gate features on
``torch.__version__``), and ``ember.version`` has torch.version's names."""
from __future__ import annotations

import operator

import pytest

import ember
from ember.torch_version import TorchVersion
from oracle import torch_or_skip

_OPS = (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne)
_BASES = ("2.13.0+cpu", "2.13.0", "2.1.0a0+git", "1.7.1", "2.13.0+ember0.1.0")
_OTHERS = ("2.13.0", "2.13", "2.13.0+cpu", "2.9", "1.7", "2.14.0a0", "2.13.1", (2, 13),
           (2, 13, 0), (1, 7), "abc", "2.13.0.post1", 3, 2.1)


def _outcome(op, a, b):
    try:
        return op(a, b)
    except TypeError:
        return TypeError


@pytest.mark.parametrize("base", _BASES)
def test_comparisons_are_torchs(base):
    torch = torch_or_skip()
    from torch.torch_version import TorchVersion as Theirs
    for other in _OTHERS:
        for op in _OPS:
            assert _outcome(op, TorchVersion(base), other) == _outcome(op, Theirs(base), other), (
                base, other, op.__name__)


def test_version_is_torchs_api_level_labelled_with_embers_release():
    v = ember.__version__
    assert isinstance(v, TorchVersion) and v == f"2.13.0+ember{ember.version.ember}"
    assert v >= "1.7" and v >= "2.9" and v >= (2, 13) and v < "2.14" and not v < "2.13.0"
    assert ember.version.__version__ is v
    assert ember.version.cuda is None and ember.version.hip is None
    assert ember.version.debug is False


def test_version_module_has_torchs_names():
    torch = torch_or_skip()
    theirs = {n for n in dir(torch.version) if not n.startswith("_") and n != "Optional"}
    assert theirs <= set(dir(ember.version))
