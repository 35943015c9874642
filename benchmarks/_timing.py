"""Interleaved timing: every peer sampled once per round, the order rotating, medians kept."""
from __future__ import annotations

import platform
import statistics
import sys
import time


def calibrate(fn, target_s):
    """How many calls of ``fn`` fill about ``target_s`` seconds (at least one)."""
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(target_s / once))


def interleaved(fns, rounds, target_s, clock=time.perf_counter):
    """Median seconds per call for each ``name -> fn``, sampled in rotating rounds so that a
    noisy machine's drift hits every peer alike. ``clock=time.process_time`` counts this
    process's CPU time instead of wall time (steadier on a machine shared with other work)."""
    inner = {name: calibrate(fn, target_s) for name, fn in fns.items()}
    samples = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, n = fns[name], inner[name]
            t0 = clock()
            for _ in range(n):
                fn()
            samples[name].append((clock() - t0) / n)
    return {name: statistics.median(s) for name, s in samples.items()}


def counts(step, prepare=None):
    """Python bytecodes (``sys.settrace`` opcode events) and Python function calls
    (``sys.setprofile``) of one call of ``step()``, or of ``step(prepare())`` with
    ``prepare()`` run untraced: what the machine's load does not change."""
    ops = calls = 0

    def tracer(frame, event, arg):
        nonlocal ops
        frame.f_trace_opcodes = True
        if event == "opcode":
            ops += 1
        return tracer

    def profiler(frame, event, arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    def once(hook_setter=None, hook=None):
        args = () if prepare is None else (prepare(),)
        if hook_setter is not None:
            hook_setter(hook)
        try:
            step(*args)
        finally:
            if hook_setter is not None:
                hook_setter(None)
    once()  # (a first call warms what a step caches)
    once(sys.settrace, tracer)
    once(sys.setprofile, profiler)
    return ops, calls


def peers(ember, no_torch=False):
    """``{"ember": ember, "torch": torch}``: torch on one thread, left out with ``no_torch``
    or when it is not installed (the scripts then time ember alone)."""
    libs = {"ember": ember}
    if not no_torch:
        try:
            import torch
        except ImportError:
            return libs
        torch.set_num_threads(1)
        libs["torch"] = torch
    return libs


def cpu_model():
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
