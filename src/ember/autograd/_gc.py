"""Python's garbage collector and deep graphs.

A backward graph is acyclic and freed by reference counting, yet its nodes, tensors, edge
tuples and the tuples of saved values that hold a tensor are all tracked by the cyclic garbage
collector (``benchmarks/graph_objects.py`` counts them). While a deep graph is built (20,000
ops: about 100,000 tracked objects) each full collection walks all of them, and CPython runs
one whenever the long-lived heap has grown by a quarter: on the W4 chain of ``benchmarks/``
that was half of the step.

After a backward pass over a deep graph (a program that builds one, as a training loop does,
builds the next one soon), ember raises the collector's last threshold so that a full
collection waits for 100 collections of the middle generation instead of 10; after a pass over
a small graph it puts CPython's default back. The young generations are collected as often as
before, so cyclic garbage still goes early; thresholds a program set itself are left alone.
Set ``EMBER_GC_TUNING=0`` before importing ember to keep CPython's thresholds.
"""
from __future__ import annotations

import gc
import os

DEEP = 5_000  # nodes: a pass over at least this many raises the threshold
SHALLOW = 500  # nodes: a pass over fewer puts the default back
DEFAULT = (700, 10, 10)  # CPython's
RAISED = (700, 10, 100)

enabled = os.environ.get("EMBER_GC_TUNING", "1") not in ("0", "off", "false")
# whether ember raised the threshold (so a pass over a small graph looks to put it back; a
# program that raised it itself keeps it). The engine calls after_backward only after a deep
# pass or while this is set: a small pass on CPython's default costs nothing here.
raised = False


def after_backward(n_nodes):
    """Adjust the thresholds to the size of the graph a backward pass just ran."""
    global raised
    if not enabled:
        return
    if n_nodes >= DEEP:
        if gc.get_threshold() == DEFAULT:
            gc.set_threshold(*RAISED)
            raised = True
    elif n_nodes < SHALLOW and raised:
        if gc.get_threshold() == RAISED:
            gc.set_threshold(*DEFAULT)
        raised = False
