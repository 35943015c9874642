"""Where a compiled step's time goes: each line of a recorded program, timed on its own.

    python benchmarks/replay_profile.py            # W2 (the MLP step)
    python benchmarks/replay_profile.py w6 --top 15
    python benchmarks/replay_profile.py w2 --in-step   # each call alone and inside whole steps
    python benchmarks/replay_profile.py w1 --counts    # bytecodes and calls around the kernels

Builds a workload with its loss function compiled (benchmarks/workloads.py), runs it twice
(record, then replay), and walks the recording's forward and backward programs line by line:
each ``name = call(...)`` line's right-hand side is timed alone (best of a few repeats, CPU
time), then run once to bind its result, so the next line sees the values a replay sees. The
report lists the costliest lines with the kernel or formula each calls, the kernels' total,
and a whole step next to them: the difference is what the step spends outside the kernels
(guards, wrapping outputs, the backward node and engine pass, the optimizer's eager ops, and
caches a kernel timed alone keeps warm), with the hand-written NumPy step where there is one.

``--counts`` counts the bytecodes and Python calls of one compiled call and of its
``backward()``, and of the programs they run: what a replay adds around its kernels, in
figures that do not move with the machine's load.

``--outside`` also splits what a step spends outside the kernels: the recording's programs
are replaced by ones that hand back what they computed once (so the kernels cost nothing), and
each step is timed in three parts: the compiled call (guards, wrapping the outputs, the
backward node), ``backward()`` (the engine's pass over the compiled node and the leaves) and
the rest of the step (its own eager code: the optimizer's update, reading the loss).
``--outside --cold`` runs the real backward program inside ``backward()`` instead and takes
its time out: the engine's pass then runs where it runs in a step, right after the program's
last matrix product, with the caches that product left (W2: about three times the engine's
time with the program stubbed out).
"""
from __future__ import annotations

import argparse
import functools
import os
import statistics
import pathlib
import re
import sys
import textwrap
import time
import timeit

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from ember._compile.compiled import _ALL, CompiledFunction  # noqa: E402
from workloads import NUMPY_FLOOR, WORKLOADS, make_data  # noqa: E402

_ASSIGN = re.compile(r"^(\w+(?:, \w+)*) = (.+)$")


def recorded_entry(name):
    """A step of workload ``name`` with its loss function compiled, its recording, and the
    input tensors a replay of it was given."""
    step = WORKLOADS[name][3](ember, make_data(name), compiled=True)
    step()
    seen = {}

    def spy(entry, replay):  # (the replay's inputs are the step's own, in its closure)
        def replay_seen(tensors):
            seen[entry] = tensors
            return replay(tensors)
        return replay_seen
    # (each recording's replay is a generated function, an attribute of its entry)
    entries = [e for cf in list(_ALL) for e in cf.entries]
    replays = [e.replay for e in entries]
    calls = [e.call for e in entries]
    for entry, replay in zip(entries, replays):
        entry.replay = spy(entry, replay)
        entry.call = entry.call_in_two  # (the guard's call, then the replay's)
    try:
        step()
    finally:
        for entry, replay, call in zip(entries, replays, calls):
            entry.replay, entry.call = replay, call
    if not seen:
        raise SystemExit(f"{name}: no replay (the function runs eagerly)")
    return (step, *next(iter(seen.items())))


def _timed(code, scope, repeat):
    """Seconds per evaluation of ``code`` (best of three blocks of ``repeat``)."""
    return min(timeit.repeat(lambda: eval(code, scope), number=repeat, repeat=3,  # noqa: S307
                             timer=time.process_time)) / repeat


def time_lines(fn, env, repeat):
    """``[(microseconds, line, callee)]`` for each line of generated function ``fn`` run on
    ``env`` (its arguments), and what the function returns. The timing's own cost (an
    evaluation of ``None``) is taken off each line."""
    scope = dict(fn.__globals__, **env)
    empty = _timed(compile("None", "<line>", "eval"), scope, repeat)
    rows = []
    lines = textwrap.dedent("\n".join(fn.source.splitlines()[1:])).splitlines()  # (the body)
    k = 0
    while k < len(lines):
        line = lines[k].strip()
        k += 1
        if line.startswith("if ") and line.endswith(":"):
            block = [lines[k - 1]]  # (an if statement: its body and any else, run as one)
            while k < len(lines) and (lines[k][:1].isspace() or lines[k] == "else:"):
                block.append(lines[k])
                k += 1
            if any(b.strip().startswith("return") for b in block):  # the gradients' check
                if eval(line[3:-1], scope):  # noqa: S307 - generated code
                    raise SystemExit(f"{line[3:-1]}: gradients not of the recorded type "
                                     "or dtype")
                continue
            code = compile("\n".join(block), "<line>", "exec")
            t0 = time.process_time()  # (a note written or not: run once, timed once)
            exec(code, scope)  # noqa: S102 - generated code
            rows.append(((time.process_time() - t0) * 1e6, line, ""))
            continue
        if line.startswith("return"):
            return rows, eval(line[len("return"):], scope)  # noqa: S307 - generated code
        m = _ASSIGN.match(line)
        if m is None:  # a write or a deletion: run once, timed once
            t0 = time.process_time()
            exec(line, scope)  # noqa: S102 - generated code
            rows.append(((time.process_time() - t0) * 1e6, line, ""))
            continue
        seconds = max(_timed(compile(m.group(2), "<line>", "eval"), scope, repeat) - empty, 0.0)
        exec(line, scope)  # noqa: S102 - generated code
        rows.append((seconds * 1e6, line, _callee(scope, m.group(2))))
    return rows, None


def _callee(scope, rhs):
    name = re.search(r"\b([kf]\d+)\(", rhs)
    fn = scope.get(name.group(1)) if name else None
    if fn is None:
        return ""
    code = getattr(fn, "__code__", None)
    if code is not None and "kernel" in code.co_freevars:  # (a kernel wrapped by the registry)
        fn = fn.__closure__[code.co_freevars.index("kernel")].cell_contents
    fn = getattr(fn, "bare", fn)  # (a quiet kernel: the kernel it runs silenced)
    while isinstance(fn, functools.partial):
        fn = fn.func
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", type(fn).__name__)
    return f"{getattr(fn, '__module__', '')}.{name}"


def step_time(step, repeat):
    return min(timeit.repeat(step, number=repeat, repeat=3, timer=time.process_time)) / repeat


def in_step_times(step, program, steps):
    """Median CPU microseconds of each kernel or formula call inside whole steps, by the
    generated function and the name it has there (``k4``, ``f21``): what a call costs among
    the others (after the large matrix products went through the caches), where time_lines
    times it alone and warm."""
    samples, patched = {}, []

    def timing(fn, into):
        def timed(*args):
            t0 = time.process_time()
            try:
                return fn(*args)
            finally:
                into.append(time.process_time() - t0)
        return timed
    for part, fn in (("forward", program.forward), ("backward", program.backward)):
        if fn is None:
            continue
        scope = fn.__globals__
        for name, value in list(scope.items()):
            if re.fullmatch(r"[kf]\d+", name) and callable(value):
                scope[name] = timing(value, samples.setdefault((part, name), []))
                patched.append((scope, name, value))
    try:
        for _ in range(steps):
            step()
    finally:
        for scope, name, value in patched:
            scope[name] = value
    return {key: statistics.median(v) * 1e6 for key, v in samples.items() if v}


def mlp_products(data):
    """The matrix products of an MLP step (W2, W3) on its own data: each layer's forward
    product, its weight's gradient and (but the first layer's, whose input needs none) its
    input's gradient, as ``[(label, a, b)]`` computing ``a @ b``."""
    rs = np.random.default_rng(0)
    hs, h = [data["x"]], data["x"]
    for W in data["Ws"][:-1]:
        h = np.maximum(h @ W, 0)
        hs.append(h)
    out = []
    for i, W in enumerate(data["Ws"]):
        g = rs.standard_normal((h.shape[0], W.shape[1]), dtype=np.float32)
        out.append((f"h{i} @ W{i}", hs[i], W))
        out.append((f"h{i}.T @ g{i}", hs[i].T, g))
        if i:
            out.append((f"g{i} @ W{i}.T", g, W.T))
    return out


def products_alone(name, repeat):
    """CPU microseconds of the step's matrix products alone, with NumPy and (when installed)
    with torch, one thread each."""
    products = mlp_products(make_data(name))
    times = {"numpy": sum(step_time(lambda a=a, b=b: a @ b, repeat) for _, a, b in products)}
    try:
        import torch
    except ImportError:
        return times
    torch.set_num_threads(1)
    pairs = [(torch.from_numpy(np.ascontiguousarray(a.T)).t() if not a.flags.c_contiguous
              else torch.from_numpy(a), torch.from_numpy(np.ascontiguousarray(b.T)).t()
              if not b.flags.c_contiguous else torch.from_numpy(b)) for _, a, b in products]
    times["torch"] = sum(step_time(lambda a=a, b=b: a @ b, repeat) for a, b in pairs)
    return {k: v * 1e6 for k, v in times.items()}


def outside_split(step, entry, tensors, steps, cold=False):
    """Median CPU microseconds per step of the compiled call, ``backward()`` and the rest of
    the step, with the recording's programs handing back fixed results (``cold``: the real
    backward program runs in ``backward()``, its own time taken out)."""
    program = entry.program
    outs, saved = program.forward(tensors)
    grads = [np.ones_like(outs[k]) for k in entry.grad_outputs]
    fixed = program.backward(grads, saved) if program.backward is not None else None
    parts = {"call": [], "backward": [], "program": []}
    call, backward = CompiledFunction.__call__, ember.Tensor.backward
    generated = entry.replay, entry.call, program.backward, program.backward_into_leaves

    def timed(part, fn):
        def run(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                parts[part][-1] += time.process_time() - t0
        return run
    # NOTE: the backward stub hands over fresh copies made before each step (outside the
    # timing), held by nothing else: gradients the stub kept would look borrowed to the
    # engine, which would copy each into its leaf's .grad (the 784x256 one: some 50 us)
    pending = []
    entry.replay = lambda tensors: entry.finish(tensors, outs, saved)  # (no forward program)
    entry.call = entry.call_in_two
    # (both backward programs: the one-node pass runs the one without view notes)
    program.backward = program.backward_into_leaves = lambda grads, saved: pending.pop()
    if cold and fixed is not None:
        program.backward = timed("program", generated[2])
        program.backward_into_leaves = timed("program", generated[3])
    CompiledFunction.__call__ = timed("call", call)
    ember.Tensor.backward = timed("backward", backward)
    totals = []
    try:
        for _ in range(steps):
            parts["call"].append(0.0)
            parts["backward"].append(0.0)
            parts["program"].append(0.0)
            pending[:] = [[g.copy() for g in fixed]] if fixed is not None else []
            t0 = time.process_time()
            step()
            totals.append(time.process_time() - t0)
    finally:
        CompiledFunction.__call__, ember.Tensor.backward = call, backward
        (entry.replay, entry.call, program.backward,
         program.backward_into_leaves) = generated
    rest = [t - c - b for t, c, b in zip(totals, parts["call"], parts["backward"])]
    engine = [b - p for b, p in zip(parts["backward"], parts["program"])]
    return {k: statistics.median(v) * 1e6 for k, v in
            (("call", parts["call"]), ("backward", engine), ("rest", rest))}


def traced(fn, *args):
    """``(bytecodes, Python calls)`` of one call of ``fn`` (every frame below it counted;
    counts do not depend on the machine's load), and what it returns."""
    counts = [0, 0]

    def trace(frame, event, arg):
        if event == "opcode":
            counts[0] += 1
        elif event == "call":
            counts[1] += 1
            frame.f_trace_opcodes = True
        return trace
    sys.settrace(trace)
    try:
        result = fn(*args)
    finally:
        sys.settrace(None)
    return counts, result


def call_counts(step, entry, tensors):
    """Bytecodes and Python calls of a step's compiled call and of its ``backward()``, each
    beside the part its recorded program runs (the kernels and formulas): the difference is
    the replay's own work (guards, output wrapping, the backward node, the engine's pass)."""
    found = {}
    call, backward = CompiledFunction.__call__, ember.Tensor.backward

    def counted(part, fn):
        def run(*args, **kwargs):
            if part in found:
                return fn(*args, **kwargs)
            found[part], result = traced(lambda: fn(*args, **kwargs))
            return result
        return run
    CompiledFunction.__call__ = counted("call", call)
    ember.Tensor.backward = counted("backward", backward)
    try:
        step()
    finally:
        CompiledFunction.__call__, ember.Tensor.backward = call, backward
    program = entry.program
    found["forward program"], (outs, saved) = traced(program.forward, tensors)
    if program.backward is not None:
        grads = [np.ones_like(outs[k]) for k in entry.grad_outputs]
        found["backward program"], _ = traced(program.backward, grads, saved)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", default="w2", choices=sorted(WORKLOADS))
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--outside", action="store_true",
                        help="also split the time outside the kernels (programs stubbed out)")
    parser.add_argument("--cold", action="store_true",
                        help="with --outside: the real backward program in backward(), its "
                             "time taken out (the engine after its matrix products)")
    parser.add_argument("--in-step", action="store_true",
                        help="also time each call inside whole steps (not alone)")
    parser.add_argument("--counts", action="store_true",
                        help="also count the bytecodes and Python calls of the compiled call "
                             "and backward(), beside their programs'")
    args = parser.parse_args()
    step, entry, tensors = recorded_entry(args.workload)
    program = entry.program
    fwd, result = time_lines(program.forward, {"tensors": tensors}, args.repeat)
    rows = [("forward", *r) for r in fwd]
    if program.backward is not None:
        outs, saved = result
        grads = [np.ones_like(outs[k]) for k in entry.grad_outputs]
        bwd, _ = time_lines(program.backward, {"grads": grads, "saved": saved}, args.repeat)
        rows += [("backward", *r) for r in bwd]
    total = sum(r[1] for r in rows)
    whole = step_time(step, max(1, args.repeat // 4)) * 1e6
    print(f"{args.workload}: {len(rows)} program lines, kernels {total:.1f} us; whole step "
          f"{whole:.1f} us (outside the kernels: {whole - total:.1f} us)")
    if args.workload in NUMPY_FLOOR:
        floor = NUMPY_FLOOR[args.workload](make_data(args.workload))
        floor_us = step_time(floor, max(1, args.repeat // 4)) * 1e6
        print(f"the hand-written NumPy step (benchmarks/workloads.py): {floor_us:.1f} us")
    if args.workload in ("w2", "w3"):
        products = sum(r[1] for r in rows if ".linalg." in r[3])
        alone = products_alone(args.workload, max(1, args.repeat // 4))
        torch_part = (f", torch's {alone['torch']:.1f} us" if "torch" in alone else "")
        print(f"matrix products: the program's {products:.1f} us; alone, NumPy's "
              f"{alone['numpy']:.1f} us{torch_part}")
    if args.outside:
        split = outside_split(step, entry, tensors, max(3, args.repeat), args.cold)
        which = ("backward() without its real program's time" if args.cold
                 else "backward()")
        print("outside the kernels (programs stubbed out), medians per step: compiled call "
              f"{split['call']:.1f} us, {which} {split['backward']:.1f} us, rest of the "
              f"step {split['rest']:.1f} us")
    if args.counts:
        counts = call_counts(step, entry, tensors)
        for outer, inner in (("call", "forward program"), ("backward", "backward program")):
            if outer in counts:
                (ops, calls), (p_ops, p_calls) = counts[outer], counts.get(inner, (0, 0))
                print(f"{outer}: {ops} bytecodes, {calls} Python calls; its program "
                      f"{p_ops} and {p_calls}; outside the program {ops - p_ops} and "
                      f"{calls - p_calls}")
    inside = in_step_times(step, program, max(3, args.repeat)) if args.in_step else None
    if inside is not None:
        print(f"the calls inside whole steps: {sum(inside.values()):.1f} us (alone: "
              f"{total:.1f} us); per line: alone / in the step")
    for part, us, line, callee in sorted(rows, key=lambda r: -r[1])[:args.top]:
        name = re.search(r"\b([kf]\d+)\(", line)
        there = None if inside is None or name is None else inside.get((part, name.group(1)))
        both = f"{us:9.1f} us" + ("" if inside is None else
                                   f" / {there:7.1f} us" if there is not None else " /")
        print(f"{both}  {part:8s}  {line:50s}  {callee}")


if __name__ == "__main__":
    main()
