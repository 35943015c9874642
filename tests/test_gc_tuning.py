"""ember raises the garbage collector's full-collection threshold after a backward pass over a
deep graph, puts CPython's default back after a small one, and leaves a program's own
thresholds alone (autograd/_gc.py)."""
import gc
import os
import subprocess
import sys

import pytest

import ember
from ember.autograd import _gc


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    gc.set_threshold(*_gc.DEFAULT)
    yield
    gc.set_threshold(*before)


def _backward(n_nodes):
    x = ember.ones(2, requires_grad=True)
    h = x
    for _ in range(n_nodes - 1):
        h = h * 1.0
    h.sum().backward()


@pytest.mark.skipif(not _gc.enabled, reason="EMBER_GC_TUNING=0")
def test_deep_graphs_raise_the_threshold_small_ones_restore_it(thresholds):
    _backward(100)
    assert gc.get_threshold() == _gc.DEFAULT
    _backward(_gc.DEEP)
    assert gc.get_threshold() == _gc.RAISED
    _backward(_gc.SHALLOW + 10)  # in between: kept
    assert gc.get_threshold() == _gc.RAISED
    _backward(10)
    assert gc.get_threshold() == _gc.DEFAULT


def test_a_programs_own_thresholds_are_kept(thresholds):
    gc.set_threshold(1000, 15, 15)
    _backward(_gc.DEEP)
    assert gc.get_threshold() == (1000, 15, 15)


def test_a_programs_own_raised_threshold_is_kept(thresholds):
    """A program that set ember's raised thresholds itself keeps them after a small pass."""
    _backward(10)  # (whatever an earlier test left: ember's own raise put back)
    gc.set_threshold(*_gc.RAISED)
    _backward(10)
    assert gc.get_threshold() == _gc.RAISED


def test_the_tuning_can_be_turned_off():
    code = ("import gc, ember; x = ember.ones(1, requires_grad=True); h = x\n"
            f"for _ in range({_gc.DEEP}): h = h * 1.0\n"
            "h.sum().backward(); print(gc.get_threshold())")
    env = {**os.environ, "EMBER_GC_TUNING": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=False)
    assert out.stdout.strip() == str(_gc.DEFAULT), out.stderr
