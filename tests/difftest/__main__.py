"""``python -m tests.difftest --programs 20000 --seed 1``: a long differential run.

Prints the agreement rate, then the disagreements grouped by cause (the kind of difference
and the step that shows it), most frequent first, each with a shrunk reproducer.
"""
from __future__ import annotations

import argparse
import collections
import multiprocessing
import multiprocessing.connection
import sys
import time


def _libs():
    import torch

    import ember
    return ember, torch


def program_seed(base: int, k: int) -> int:
    """The seed of the ``k``-th program of a run started with ``--seed base``."""
    return base * 1_000_003 + k


def _check(seed):
    from .check import check_seed
    ember, torch = _libs()
    try:
        _, failure = check_seed(seed, ember, torch)
    except Exception as e:  # noqa: BLE001 - a crash of the tester itself is reported too
        return seed, ("tester crash", f"{type(e).__name__}: {e}"), None
    if failure is None:
        return seed, None, None
    return seed, failure.cause(), failure


def _shrunk(failure):
    from .check import shrink
    ember, torch = _libs()
    return shrink(failure, ember, torch)


def _worker(seeds, conn):
    for seed in seeds:
        conn.send(_check(seed))
    conn.close()


def _results(seeds, jobs):
    """``_check`` of every seed, computed in ``jobs`` child processes; a seed whose process
    died (a crash in native code) comes back as ("process crash", exit code)."""
    ctx = multiprocessing.get_context("fork")
    chunks = [seeds[k:k + 50] for k in range(0, len(seeds), 50)]
    running = []
    while chunks or running:
        while chunks and len(running) < jobs:
            todo = chunks.pop(0)
            receive, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_worker, args=(todo, send), daemon=True)
            proc.start()
            send.close()
            running.append([proc, receive, todo])
        for entry in multiprocessing.connection.wait([r for _, r, _ in running]):
            job = next(j for j in running if j[1] is entry)
            proc, receive, todo = job
            try:
                result = receive.recv()
            except EOFError:  # the child is done, or died
                proc.join()
                running.remove(job)
                if todo:
                    yield todo[0], ("process crash", f"exit code {proc.exitcode}"), None
                    if todo[1:]:
                        chunks.insert(0, todo[1:])
                continue
            todo.pop(0)
            yield result


def leave_out(names):
    """Drop the generator features called ``names`` (before the workers fork)."""
    from .gen import FEATURES
    wanted = {n for n in names.split(",") if n}
    unknown = wanted - {make.__name__ for make, _ in FEATURES}
    if unknown:
        raise SystemExit(f"no such feature: {', '.join(sorted(unknown))}")
    FEATURES[:] = [(make, w) for make, w in FEATURES if make.__name__ not in wanted]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tests.difftest", description=__doc__)
    p.add_argument("--programs", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1, help="the run's base seed")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--shrink", type=int, default=2,
                   help="reproducers shrunk and shown per cause")
    p.add_argument("--only", type=int, help="check one program seed and print its program")
    p.add_argument("--leave-out", default="", metavar="FEATURES",
                   help="features the generator leaves out (comma-separated names, e.g. "
                        "compiled_function,compiled_again: the programs of the generator "
                        "without them)")
    args = p.parse_args(argv)
    leave_out(args.leave_out)
    if args.only is not None:
        return _only(args.only)
    seeds = [program_seed(args.seed, k) for k in range(args.programs)]
    start = time.time()
    groups = collections.defaultdict(list)
    crashes = []
    done = 0
    for seed, cause, failure in _results(seeds, args.jobs):
        done += 1
        if cause is not None and failure is None:
            crashes.append((seed, cause))
        elif cause is not None:
            groups[cause].append(failure)
        if done % 1000 == 0:
            bad = sum(map(len, groups.values())) + len(crashes)
            print(f"... {done} programs, {100 * (done - bad) / done:.2f}% agree "
                  f"({time.time() - start:.0f} s)", file=sys.stderr, flush=True)
    failed = sum(map(len, groups.values())) + len(crashes)
    n = len(seeds)
    print(f"{n - failed}/{n} programs agree ({100 * (n - failed) / n:.2f}%), base seed "
          f"{args.seed}, {time.time() - start:.0f} s")
    for cause, failures in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"\n=== {len(failures)} x {cause[0]} at {cause[1]} "
              f"(seeds {', '.join(str(f.program.seed) for f in failures[:8])}"
              f"{' ...' if len(failures) > 8 else ''})")
        todo = sorted(failures, key=lambda f: len(f.program.steps))[:args.shrink]
        for f in map(_shrunk, todo):
            print(f.report())
    for seed, (what, text) in crashes:
        print(f"\n=== {what} on seed {seed}: {text}")
    return 0 if failed == 0 else 1


def _only(seed):
    from .check import check_seed, shrink
    ember, torch = _libs()
    program, failure = check_seed(seed, ember, torch)
    print(program.source())
    if failure is None:
        print("# agrees")
        return 0
    print(failure.mismatch.describe(program))
    print("\n# shrunk:")
    print(shrink(failure, ember, torch).report())
    return 1


if __name__ == "__main__":
    sys.exit(main())
