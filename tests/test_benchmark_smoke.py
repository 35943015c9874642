"""The benchmark suite's smoke run (small sizes, seconds): it runs, its results are correct,
and its figures appear at the end of the test session's output. Times are never asserted."""
import pathlib
import subprocess
import sys

RUN = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "run.py"


def test_smoke_benchmark_runs_and_checks_its_results(request):
    done = subprocess.run([sys.executable, str(RUN), "--smoke"], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    eager, compiled = done.stdout.split("| compiled workload")
    rows = [line for line in eager.splitlines() if line.startswith("| W")]
    assert [r.split("|")[1].split()[0] for r in rows] == ["W1", "W2", "W3", "W4", "W4", "W5",
                                                          "W6"]
    compiled_rows = [line for line in compiled.splitlines() if line.startswith("| W")]
    assert [r.split("|")[1].split()[0] for r in compiled_rows] == ["W1", "W2", "W3", "W4",
                                                                   "W5", "W6"]
    # the last column checks each workload's loss and gradients (eager: against the NumPy
    # floor; compiled: against torch's eager step, or ember's without torch)
    checked = [r for r in rows + compiled_rows if "memory" not in r]
    assert all(r.rstrip(" |").endswith("ok") for r in checked), done.stdout
    # printed by conftest's terminal summary
    request.node.user_properties.append(("benchmark_smoke_report", done.stdout))


def test_replay_profile_walks_a_recording():
    """benchmarks/replay_profile.py times every line of W1's recorded programs (one repeat: the
    report's shape, not its times) and names the kernels the lines call."""
    tool = RUN.parent / "replay_profile.py"
    done = subprocess.run([sys.executable, str(tool), "w1", "--repeat", "1", "--top", "400",
                           "--outside", "--counts"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    head, *lines = done.stdout.splitlines()
    assert "program lines" in head and "whole step" in head
    # --outside: the step with its programs stubbed out, split in three
    (split,) = [line for line in lines if line.startswith("outside the kernels")]
    assert all(part in split for part in ("compiled call", "backward()", "rest of the step"))
    parts = {line.split()[2] for line in lines if " us  " in line}
    assert parts == {"forward", "backward"}
    assert any("numpy.sin" in line or "ember._ops.pointwise" in line for line in lines)
    # --counts: bytecodes of the compiled call and of backward(), their programs' apart
    counted = [line for line in lines if line.startswith(("call:", "backward:"))]
    assert len(counted) == 2 and all("outside the program" in line for line in counted)


def test_replay_overhead_compares_two_checkouts():
    """benchmarks/replay_overhead.py times compiled calls in this checkout and another, each
    in its own process (here: this checkout twice, a few calls, one round)."""
    tool = RUN.parent / "replay_overhead.py"
    done = subprocess.run([sys.executable, str(tool), "--against", str(RUN.parent.parent),
                           "--rounds", "1", "--calls", "16"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| small MLP loss, call |")]
    assert len(rows) == 1 and len(rows[0].split("|")) == 5


def test_replay_profile_sets_an_mlps_matrix_products_apart():
    """On W2 the report adds the program's matrix products and the same products timed alone
    (NumPy's, and torch's where installed), names the function each line calls (the replay
    forms': NumPy's matmul for the forward's products, the host product mm's gradient takes
    for the backward's), and (--in-step) times each call inside whole steps too."""
    tool = RUN.parent / "replay_profile.py"
    done = subprocess.run([sys.executable, str(tool), "w2", "--repeat", "1", "--top", "400",
                           "--in-step"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (products,) = [line for line in done.stdout.splitlines()
                   if line.startswith("matrix products")]
    assert "the program's" in products and "alone, NumPy's" in products
    lines = done.stdout.splitlines()
    assert any(line.rstrip().endswith("numpy.matmul") for line in lines)
    assert any(line.rstrip().endswith("ember._ops.linalg._host_mat2_grad") for line in lines)
    assert any(line.startswith("the calls inside whole steps") for line in lines)
    # each kernel's line: its time alone / inside the steps
    assert sum(" us / " in line for line in lines) >= 10


def test_backward_overhead_and_hvp_phases_count_steps():
    """benchmarks/backward_overhead.py and hvp_phases.py run (one round, ember alone) and
    report each row's bytecodes and calls."""
    for tool, args in (("backward_overhead.py", ["--calls", "4"]), ("hvp_phases.py", ["--smoke"])):
        done = subprocess.run([sys.executable, str(RUN.parent / tool), "--rounds", "1",
                               "--counts", "--no-torch", *args], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        rows = [line.split("|") for line in done.stdout.splitlines() if line.startswith("| ")]
        counted = [r for r in rows[1:] if len(r) >= 5]  # (rows[0]: the header)
        assert counted and all(int(r[-3]) > 0 and int(r[-2]) > 0 for r in counted), done.stdout


def test_mlp_phases_times_each_phase_of_a_w2_step():
    """benchmarks/mlp_phases.py runs (one round of two steps, ember alone) and reports each
    phase for ember and ember.compile, and each matrix product alone."""
    done = subprocess.run([sys.executable, str(RUN.parent / "mlp_phases.py"), "--rounds", "1",
                           "--steps", "2", "--no-torch"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in done.stdout.splitlines()
            if line.startswith("| ")]
    products = [r for r in rows if "@" in r[0]]
    headers = ("phase", "matrix product alone, µs")
    phases = [r for r in rows if "@" not in r[0] and r[0] not in headers]
    assert [r[0] for r in phases][-1] == "the step" and len(phases) == 6, done.stdout
    assert all(float(v) > 0 for r in phases for v in r[1:]), done.stdout
    assert len(products) == 5 and all(float(r[1]) > 0 for r in products), done.stdout


def test_mlp_phases_counts_each_phase_of_a_w2_step():
    """benchmarks/mlp_phases.py --counts gives each phase's bytecodes and calls, compiled and
    eager, the phases adding up to the step, beside the NumPy floor's."""
    done = subprocess.run([sys.executable, str(RUN.parent / "mlp_phases.py"), "--counts"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in done.stdout.splitlines()
            if line.startswith("| ") and not line.startswith("| phase")]
    figures = [[tuple(int(x.replace(",", "")) for x in c.split(" / ")) for c in r[1:]]
               for r in rows]
    assert len(figures) == 6 and all(o > 0 and c > 0 for r in figures for o, c in r), done.stdout
    for col in range(2):  # (the step: the phases' sum)
        assert figures[-1][col] == tuple(map(sum, zip(*(r[col] for r in figures[:-1]))))
    assert "the NumPy floor's whole step" in done.stdout


def test_resnet_step_times_both_libraries_and_profiles_ember():
    """benchmarks/resnet_step.py builds the same ResNet-18-like network in ember and torch
    (their first losses agree) and breaks ember's step down per op."""
    tool = RUN.parent / "resnet_step.py"
    done = subprocess.run([sys.executable, str(tool), "--smoke", "--rounds", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ember" in done.stdout
    if "torch" in done.stdout:
        assert "first losses agree" in done.stdout, done.stdout
    done = subprocess.run([sys.executable, str(tool), "--smoke", "--profile", "--steps", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ConvolutionBackward0" in done.stdout and "aten::native_batch_norm" in done.stdout


def test_graph_objects_counts_what_a_node_leaves_the_collector():
    """benchmarks/graph_objects.py counts the tracked objects a recorded chain adds per node:
    a count, not a time. A node makes its edge tuples, its tuple of them, a tuple of saved
    values and one of their versions (the latter untracked at the next collection), and its
    inputs' metadata comes shared (11.35 and 9.68 per node when each node made its own pairs
    and lists); more than a few more per node would be the collector's work growing again."""
    done = subprocess.run([sys.executable, str(RUN.parent / "graph_objects.py"), "--no-counts",
                           "--nodes", "600"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    per_node = {line.split(":")[0].strip(): float(line.split(":")[1].split()[0])
                for line in done.stdout.splitlines() if " per node " in line}
    assert set(per_node) == {"at creation", "after a collection"}, done.stdout
    assert per_node["at creation"] <= 7.0 and per_node["after a collection"] <= 5.5, done.stdout
