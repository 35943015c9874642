"""ember.distributed's speed: all-reduce bandwidth against raw mpi4py, and W3 trained
data-parallel.

    python benchmarks/bench_distributed.py [--quick] [--latency]

starts the MPI jobs itself (mpiexec from the ``distributed`` extra) and prints five tables
(``--latency``: the first only):

* small all-reduces' latency (best of many short rounds) in 2 processes (4 KiB and 1 MiB also
  in 4), with ember's choice of MPICH's Iallreduce algorithm (ember.distributed._mpich_tuning)
  and without it, against mpi4py's ``Allreduce`` and ``Iallreduce().Wait()``;
* all_reduce (SUM, float32, 2 processes) of 1 KiB to 64 MiB: ember's ``dist.all_reduce``
  against mpi4py's ``Allreduce(IN_PLACE, ...)`` and ``Iallreduce(IN_PLACE, ...).Wait()`` on
  the very same buffer, interleaved (ember always starts the nonblocking collective, as MPI
  does not match a blocking collective with a nonblocking one another process may make);
* the same calls in a 1-process group, where MPI's own work is least: the time ember's
  Python path adds per call;
* blocking all-reduces off that path, in 2 processes: a strided float32 view, float16,
  bfloat16 (which MPI cannot reduce: an operation of ember's does), a group with a timeout;
* W3 (benchmarks/workloads.py: a 2048-2048-2048-10 MLP, global batch 512, SGD) trained with
  DistributedDataParallel in 2 processes of 1 thread each (256 samples per process) against
  one process of 1 thread on the whole batch: samples per second, and the share of the
  gradient all-reduce time hidden behind backward: 1 - (DDP's step time - the step time of
  the same two processes computing without communicating) / the time the step's all-reduces
  take alone; and, directly, 1 - the time DDP waits for the reductions after backward's last
  node / that same time alone.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))
sys.path.insert(0, HERE)

SIZES = [2 ** k for k in range(10, 27, 2)]  # 1 KiB .. 64 MiB


# -- inside the MPI processes -----------------------------------------------------------------

def _round_seconds(fns, rounds, calls, barrier, setup=None):
    """Seconds per call of each fn in each round, rounds interleaved (same counts on every
    rank); ``setup[name]()`` runs before each of name's rounds, untimed."""
    samples = {name: [] for name in fns}
    names = list(fns)
    setup = setup or {}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            if name in setup:
                setup[name]()
            barrier()
            t0 = time.perf_counter()
            for _ in range(calls):
                fns[name]()
            samples[name].append((time.perf_counter() - t0) / calls)
    return samples


def _median_seconds(fns, rounds, calls, barrier, setup=None):
    """Median seconds per call of each fn, rounds interleaved."""
    samples = _round_seconds(fns, rounds, calls, barrier, setup)
    return {name: statistics.median(s) for name, s in samples.items()}


def _raw_allreduces(comm, MPI, a):
    """mpi4py's blocking and nonblocking all-reduce of ``a``, and setups that give the
    nonblocking one MPICH's own algorithm (``mpi4py_nb``) or the one ember chooses for its
    size (``mpi4py_nb_ember``): MPICH's algorithm variable is the process's, and ember's
    calls set it (ember.distributed._mpich_tuning)."""
    from ember.distributed import _mpich_tuning
    choice = _mpich_tuning.algorithm_choice()
    fns = {"mpi4py": lambda: comm.Allreduce(MPI.IN_PLACE, a),
           "mpi4py_nb": lambda: comm.Iallreduce(MPI.IN_PLACE, a).Wait(),
           "mpi4py_nb_ember": lambda: comm.Iallreduce(MPI.IN_PLACE, a).Wait()}
    setup = {"mpi4py_nb": choice.reset, "mpi4py_nb_ember": lambda: choice(a.nbytes)}
    return fns, setup


def allreduce_rows(quick):
    import numpy as np
    from mpi4py import MPI

    import ember
    import ember.distributed as dist
    dist.init_process_group("gloo")
    comm = MPI.COMM_WORLD
    rows = []
    for nbytes in SIZES:
        a = np.zeros(nbytes // 4, np.float32)  # zeros: repeated sums stay finite
        t = ember.from_numpy(a)  # the same memory
        calls = max(2, min(300, 2 ** 26 // nbytes)) // (4 if quick else 1) or 1
        raw, setup = _raw_allreduces(comm, MPI, a)
        fns = {"ember": lambda t=t: dist.all_reduce(t), **raw}
        times = _median_seconds(fns, 3 if quick else 7, calls, comm.Barrier, setup)
        rows.append({"bytes": nbytes, **times})
    dist.destroy_process_group()
    return rows


LATENCY_SIZES = [2 ** 10, 2 ** 12, 2 ** 14, 2 ** 16, 2 ** 20, 2 ** 24]  # 1 KiB .. 16 MiB


def latency_rows(quick):
    """Best seconds per call over many short rounds (the rounds in which every process held
    a core), interleaved: ember's all_reduce, mpi4py's Allreduce, and its Iallreduce+Wait
    with MPICH's algorithm and with the one ember chooses."""
    import numpy as np
    from mpi4py import MPI

    import ember
    import ember.distributed as dist
    dist.init_process_group("gloo")
    comm = MPI.COMM_WORLD
    sizes = [int(s) for s in os.environ.get("BENCH_LATENCY_SIZES", "").split(",") if s]
    rows = []
    for nbytes in sizes or LATENCY_SIZES:
        a = np.zeros(nbytes // 4, np.float32)
        t = ember.from_numpy(a)
        raw, setup = _raw_allreduces(comm, MPI, a)
        fns = {"ember": lambda t=t: dist.all_reduce(t), **raw}
        calls = 30 if nbytes <= 2 ** 16 else 5
        rounds = (60 if quick else 300) if nbytes <= 2 ** 16 else (20 if quick else 60)
        if comm.Get_size() > 2:  # more processes than cores here: every call takes ms
            rounds = min(rounds, 40)
        samples = _round_seconds(fns, rounds, calls, comm.Barrier, setup)
        rows.append({"bytes": nbytes, **{name: min(s) for name, s in samples.items()}})
    dist.destroy_process_group()
    return rows


def overhead_rows(quick):
    """Seconds per call in a 1-process group, where MPI's own work is least: what ember's
    Python path adds to mpi4py's (best of many rounds: the least disturbed)."""
    import timeit

    import numpy as np
    from mpi4py import MPI

    import ember
    import ember.distributed as dist
    dist.init_process_group("gloo")
    comm = MPI.COMM_WORLD
    rows = []
    for nbytes in (1024, 65536):
        a = np.zeros(nbytes // 4, np.float32)
        t = ember.from_numpy(a)
        fns = {"ember": lambda t=t: dist.all_reduce(t),
               "mpi4py": lambda a=a: comm.Allreduce(MPI.IN_PLACE, a),
               "mpi4py_nb": lambda a=a: comm.Iallreduce(MPI.IN_PLACE, a).Wait()}
        rows.append({"bytes": nbytes, **{
            name: min(timeit.repeat(f, number=2000, repeat=10 if quick else 40)) / 2000
            for name, f in fns.items()}})
    dist.destroy_process_group()
    return rows


SLOW_SIZES = [2 ** 12, 2 ** 20, 2 ** 24]  # 4 KiB, 1 MiB, 16 MiB


def slow_path_rows(quick):
    """Seconds per blocking all_reduce (SUM) of the calls off the contiguous float32 path:
    a strided float32 view (every other element), float16, bfloat16, and a group with a
    timeout; contiguous float32 alongside, interleaved."""
    from datetime import timedelta

    from mpi4py import MPI

    import ember
    import ember.distributed as dist
    dist.init_process_group("gloo")
    timed = dist.new_group(timeout=timedelta(seconds=60))
    rows = []
    for nbytes in SLOW_SIZES:
        n = nbytes // 4
        f32 = ember.zeros(n)
        strided = ember.zeros(2 * n)[::2]
        f16 = ember.zeros(2 * n, dtype=ember.float16)  # the same number of bytes
        bf16 = ember.zeros(2 * n, dtype=ember.bfloat16)
        calls = max(2, min(300, 2 ** 26 // nbytes)) // (4 if quick else 1) or 1
        fns = {"float32": lambda t=f32: dist.all_reduce(t),
               "strided": lambda t=strided: dist.all_reduce(t),
               "float16": lambda t=f16: dist.all_reduce(t),
               "bfloat16": lambda t=bf16: dist.all_reduce(t),
               "timeout": lambda t=f32: dist.all_reduce(t, group=timed)}
        times = _median_seconds(fns, 3 if quick else 7, calls, MPI.COMM_WORLD.Barrier)
        rows.append({"bytes": nbytes, **times})
    dist.destroy_process_group()
    return rows


def _w3_model(ember, data):
    nn = ember.nn
    layers = []
    for k, (w, b) in enumerate(zip(data["Ws"], data["bs"])):
        lin = nn.Linear(*w.shape)
        with ember.no_grad():
            lin.weight.copy_(ember.from_numpy(w.T.copy()))
            lin.bias.copy_(ember.from_numpy(b))
        layers += [lin] if k == len(data["Ws"]) - 1 else [lin, nn.ReLU()]
    return nn.Sequential(*layers)


def ddp_row(quick):
    from workloads import make_data

    import ember
    import ember.distributed as dist
    import ember.nn.functional as F
    from ember.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    data = make_data("w3")
    batch = len(data["x"])
    per = batch // size
    x = ember.from_numpy(data["x"][rank * per:(rank + 1) * per])
    y = ember.from_numpy(data["y"][rank * per:(rank + 1) * per])
    local = _w3_model(ember, data)  # the same work with no communication at all
    model = DDP(_w3_model(ember, data)) if size > 1 else local
    steps = 4 if quick else 12
    row = {"processes": size, "threads": int(os.environ.get("OMP_NUM_THREADS", "0"))}
    # rounds alternate the two runs (a shared machine's drift hits both alike)
    times = {"ddp": [], "local": []}
    waits = []  # per step: DDP's wait for the reductions after backward's last node
    for _ in range(2 if quick else 3):
        for name, net in (("ddp", model), ("local", local)):
            waited = model.reducer.wait_seconds if size > 1 else 0.0
            times[name].append(_seconds_per_step(ember, F, net, x, y, steps, dist))
            if size > 1 and name == "ddp":
                waits.append((model.reducer.wait_seconds - waited) / (steps + 1))  # + warm
    row["samples_per_s"] = batch / statistics.median(times["ddp"])
    if size > 1:
        row["local_step_s"] = statistics.median(times["local"])
        row["ddp_step_s"] = statistics.median(times["ddp"])
        row["end_wait_s"] = statistics.median(waits)
        row["allreduce_alone_s"] = _buckets_alone(model.reducer, steps, dist)
    dist.destroy_process_group()
    return row


def _seconds_per_step(ember, F, model, x, y, steps, dist):
    from workloads import LR
    opt = ember.optim.SGD(model.parameters(), lr=LR)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    step()  # (warm)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    return (time.perf_counter() - t0) / steps


def _buckets_alone(reducer, steps, dist):
    """Seconds per step that the step's bucket all-reduces take when nothing else runs."""
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        works = [dist.all_reduce(b.flat_tensor, async_op=True) for b in reducer.buckets]
        for w in works:
            w.wait()
    return (time.perf_counter() - t0) / steps


# -- the driver ------------------------------------------------------------------------------

def _run_job(n, part, quick, threads=1, env=None):
    from ember.distributed._mpiexec import mpiexec_path
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), **(env or {}))
    cmd = [mpiexec_path(), "-n", str(n), sys.executable, os.path.abspath(__file__), "--part",
           part] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=900)
    return json.loads(next(line for line in out.stdout.splitlines() if line.startswith("{")))


def _machine():
    model = "unknown CPU"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True,
                                    check=False).stdout.splitlines():
            if line.startswith("Model name"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical CPUs, load average {os.getloadavg()[0]:.1f}"


def _size(nbytes):
    return f"{nbytes // 2 ** 20} MiB" if nbytes >= 2 ** 20 else f"{nbytes // 1024} KiB"


def print_latency(quick):
    """Small all-reduces: ember with and without its choice of MPICH's algorithm (an
    algorithm set in the environment turns it off), 2 processes, then 4."""
    from ember.distributed._mpich_tuning import CVAR
    print("all_reduce, SUM, float32: best seconds per call over rounds of 30 calls (5 from "
          "1 MiB; 300 rounds, 60 from 1 MiB, at most 40 in 4 processes), interleaved; ember's choice of MPICH's Iallreduce algorithm on and off\n")
    print("| processes | size | ember | ember, MPICH's algorithm | mpi4py Allreduce | "
          "mpi4py Iallreduce+Wait | the same, ember's algorithm | ember / Allreduce | "
          "ember / Iallreduce | off / Allreduce |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, sizes in ((2, ""), (4, f"{2 ** 12},{2 ** 20}")):
        env = {"BENCH_LATENCY_SIZES": sizes}
        on = _run_job(n, "latency", quick, env=env)["rows"]
        off = _run_job(n, "latency", quick, env={**env, CVAR: "auto"})["rows"]
        for r, o in zip(on, off):
            print(f"| {n} | {_size(r['bytes'])} | {r['ember'] * 1e6:.2f} us | "
                  f"{o['ember'] * 1e6:.2f} us | {r['mpi4py'] * 1e6:.2f} us | "
                  f"{r['mpi4py_nb'] * 1e6:.2f} us | {r['mpi4py_nb_ember'] * 1e6:.2f} us | "
                  f"{r['mpi4py'] / r['ember']:.2f}x | {r['mpi4py_nb'] / r['ember']:.2f}x | "
                  f"{o['mpi4py'] / o['ember']:.2f}x |")
    print()


def main():
    quick = "--quick" in sys.argv
    print(f"CPU: {_machine()}\n")
    print_latency(quick)
    if "--latency" in sys.argv:
        return
    rows = _run_job(2, "allreduce", quick)["rows"]
    print("all_reduce, SUM, float32, 2 processes (median seconds per call; bandwidth = "
          "bytes / time)\n")
    print("| size | ember | mpi4py Allreduce | mpi4py Iallreduce+Wait | ember GB/s | "
          "mpi4py GB/s | ember / Allreduce | ember / Iallreduce |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {_size(r['bytes'])} | {r['ember'] * 1e6:.1f} us | {r['mpi4py'] * 1e6:.1f} us | "
              f"{r['mpi4py_nb'] * 1e6:.1f} us | {r['bytes'] / r['ember'] / 1e9:.2f} | "
              f"{r['bytes'] / r['mpi4py'] / 1e9:.2f} | {r['mpi4py'] / r['ember']:.2f}x | "
              f"{r['mpi4py_nb'] / r['ember']:.2f}x |")
    print("\nall_reduce in a 1-process group: the time ember's Python path adds (best of many "
          "rounds)\n")
    print("| size | ember | mpi4py Allreduce | mpi4py Iallreduce+Wait | ember's added time |")
    print("|---:|---:|---:|---:|---:|")
    for r in _run_job(1, "overhead", quick)["rows"]:
        print(f"| {r['bytes'] // 1024} KiB | {r['ember'] * 1e6:.2f} us | "
              f"{r['mpi4py'] * 1e6:.2f} us | {r['mpi4py_nb'] * 1e6:.2f} us | "
              f"{(r['ember'] - r['mpi4py_nb']) * 1e6:.2f} us |")
    print("\nall_reduce (SUM, 2 processes) off the contiguous float32 path: median seconds per "
          "call (the same number of bytes in each column)\n")
    print("| size | float32 | float32 strided (1 of 2) | float16 | bfloat16 | float32, group "
          "with a timeout |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in _run_job(2, "slow_paths", quick)["rows"]:
        print(f"| {_size(r['bytes'])} | " + " | ".join(
            f"{r[k] * 1e6:.1f} us" for k in ("float32", "strided", "float16", "bfloat16",
                                              "timeout")) + " |")
    one = _run_job(1, "ddp", quick)
    two = _run_job(2, "ddp", quick)
    exposed = two["ddp_step_s"] - two["local_step_s"]
    hidden = 1 - exposed / two["allreduce_alone_s"]
    print(f"\nW3 data-parallel training (global batch 512, float32)\n\n"
          f"| run | samples/s | speed-up |\n|---|---:|---:|\n"
          f"| 1 process x 1 thread | {one['samples_per_s']:.0f} | 1.00x |\n"
          f"| 2 processes x 1 thread (DDP) | {two['samples_per_s']:.0f} | "
          f"{two['samples_per_s'] / one['samples_per_s']:.2f}x |\n\n"
          f"2 processes, seconds per step: {two['ddp_step_s'] * 1e3:.0f} ms with DDP, "
          f"{two['local_step_s'] * 1e3:.0f} ms for the same work with no communication; the "
          f"step's all-reduces alone take {two['allreduce_alone_s'] * 1e3:.0f} ms: "
          f"{100 * hidden:.0f}% of them hidden behind backward. DDP waits "
          f"{two['end_wait_s'] * 1e3:.1f} ms per step for the reductions after backward's "
          f"last node (that wait also holds the processes' difference in speed): "
          f"{100 * (1 - two['end_wait_s'] / two['allreduce_alone_s']):.0f}% hidden by that "
          f"measure")


if __name__ == "__main__":
    if "--part" in sys.argv:
        part = sys.argv[sys.argv.index("--part") + 1]
        quick = "--quick" in sys.argv
        parts = {"allreduce": allreduce_rows, "latency": latency_rows, "overhead": overhead_rows,
                 "slow_paths": slow_path_rows}
        result = {"rows": parts[part](quick)} if part in parts else ddp_row(quick)
        if int(os.environ.get("PMI_RANK", "0")) == 0:
            print(json.dumps(result), flush=True)
    else:
        main()
