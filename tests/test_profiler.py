"""The profilers: table rows, counts, nesting, memory, shapes, Chrome trace structure.

Timings are never checked, only structure (names, counts, parents, links).
"""
import json
import os
import sqlite3
import threading
import warnings

import pytest

import ember
from ember._state import profiler_hook
from ember.autograd import profiler as P
from oracle import same

EVALUATE = "autograd::engine::evaluate_function: "
ACC = "torch::autograd::AccumulateGrad"


def leaf(*values):
    return ember.tensor(list(values), requires_grad=True)


def run_pow():
    x = ember.tensor([[1.5]], requires_grad=True)
    with P.profile() as prof:
        y = x ** 2
        y.backward()
    return x, prof


def by_name(events, name):
    return [e for e in events if e.name == name]


# -- recording and the table ---------------------------------------------------------------
def test_forward_and_backward_are_recorded_with_torch_names():
    x, prof = run_pow()
    assert x.grad.tolist() == [[3.0]]
    keys = [e.key for e in prof.key_averages()]
    assert len(keys) == len(set(keys))
    for key in ("aten::pow", "PowBackward0", ACC, EVALUATE + "PowBackward0", EVALUATE + ACC):
        assert key in keys
    assert all(isinstance(e.count, int) and e.count == 1 for e in prof.key_averages())


def test_counts_add_up_over_calls():
    x = leaf(1.0, 2.0)
    with P.profile() as prof:
        for _ in range(3):
            y = x * 2.0
        y.sum().backward()
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["aten::mul"].count == 3
    assert avg["aten::sum"].count == 1
    assert avg["MulBackward0"].count == 1
    total = prof.total_average()
    assert total.key == "Total"
    assert total.count == len(prof.function_events)
    assert total.count == sum(e.count for e in prof.key_averages())


def test_table_has_torch_columns_rows_and_footer():
    _, prof = run_pow()
    table = prof.key_averages().table(sort_by="cpu_time_total")
    lines = table.splitlines()
    header = lines[1]
    for col in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                "# of Calls"):
        assert col in header
    assert "CPU Mem" not in header and "Input Shapes" not in header
    assert lines[0].startswith("-----") and lines[2].startswith("-----")
    assert lines[-1].startswith("Self CPU time total: ")
    names = {line.strip().split("  ")[0] for line in lines[3:-2] if line.strip()}
    assert {"aten::pow", "PowBackward0", ACC} <= names
    assert str(prof) == prof.table()
    assert prof.table().count("\n") == len(prof.function_events) + 5


def test_table_long_names_are_cut_and_row_limit_applies():
    _, prof = run_pow()
    table = prof.table(row_limit=2)
    assert len(table.splitlines()) == 2 + 5
    assert "autograd::engine::evaluate_function: torch::autograd..." in prof.table()


def test_table_header_and_top_level_only():
    x = leaf(1.0, 2.0)
    with P.profile() as prof, P.record_function("block"):
        y = (x * 2.0).sum()
    text = prof.table(header="My run", top_level_events_only=True)
    assert "My run" in text
    assert "This report only display top-level ops statistics" in text
    rows = text.splitlines()[7:-2]
    assert [r.split()[0] for r in rows] == ["block"]
    assert y.requires_grad


def test_sort_keys_and_unknown_key():
    x = leaf(1.0, 2.0)
    with P.profile(profile_memory=True) as prof:
        for _ in range(3):
            x * 2.0
        x.sum()
    avg = prof.key_averages()
    first = avg.table(sort_by="count").splitlines()[3].split()[0]
    assert first == "aten::mul"
    for key in ("cpu_time_total", "self_cpu_time_total", "cpu_time", "count",
                "cpu_memory_usage", "self_cpu_memory_usage", "cuda_time_total"):
        assert isinstance(avg.table(sort_by=key), str)
    with pytest.raises(AttributeError, match="'FunctionEventAvg' object has no attribute 'nope'"):
        avg.table(sort_by="nope")


def test_time_fields_are_numbers_and_self_time_excludes_children():
    x = leaf(1.0, 2.0)
    with P.profile() as prof, P.record_function("outer"), P.record_function("inner"):
        (x * x).sum()
    (outer,) = by_name(prof.function_events, "outer")
    (inner,) = by_name(prof.function_events, "inner")
    assert inner.cpu_parent is outer and outer.cpu_children == [inner]
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - inner.cpu_time_total)
    assert [c.name for c in inner.cpu_children] == ["aten::mul", "aten::sum"]
    assert isinstance(prof.self_cpu_time_total, float)
    assert prof.self_cpu_time_total == pytest.approx(
        sum(e.self_cpu_time_total for e in prof.function_events))


def test_backward_node_nests_inside_evaluate_function():
    _, prof = run_pow()
    (node,) = by_name(prof.function_events, "PowBackward0")
    assert node.cpu_parent.name == EVALUATE + "PowBackward0"
    assert node.scope == 1 and node.cpu_parent.scope == 0
    (fwd,) = by_name(prof.function_events, "aten::pow")
    assert fwd.sequence_nr >= 0 and fwd.sequence_nr == node.sequence_nr
    (acc,) = by_name(prof.function_events, ACC)
    assert acc.sequence_nr == -1


def test_op_without_grad_has_no_sequence_number():
    x = ember.tensor([1.0, 2.0])
    with P.profile() as prof:
        x * 2.0
    (mul,) = by_name(prof.function_events, "aten::mul")
    assert mul.sequence_nr == -1


def test_record_function_as_decorator_and_outside_profiler():
    @P.record_function("my_fn")
    def f(t):
        return t * 3.0

    x = leaf(1.0)
    with P.record_function("nobody listens"):
        f(x)
    with P.profile() as prof:
        f(x)
        f(x)
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["my_fn"].count == 2
    assert all(e.cpu_parent.name == "my_fn" for e in by_name(prof.function_events, "aten::mul"))
    assert by_name(prof.function_events, "my_fn")[0].is_user_annotation


# -- options ---------------------------------------------------------------------------------
def test_record_shapes_and_group_by_input_shape():
    a, b = ember.ones(2, 3), ember.ones(4)
    with P.profile(record_shapes=True) as prof:
        a * 2.0
        b * 2.0
        a * a
    shapes = [e.input_shapes for e in by_name(prof.function_events, "aten::mul")]
    assert shapes == [[[2, 3], []], [[4], []], [[2, 3], [2, 3]]]
    grouped = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "aten::mul"]
    assert len(grouped) == 3
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" not in prof.key_averages().table()


def test_profile_memory_counts_new_arrays_not_views():
    x = ember.ones(2, 3, requires_grad=True)
    with P.profile(profile_memory=True) as prof:
        y = x * 2.0
        y.t()
        with P.record_function("block"):
            (y + 1.0).sum().backward()
    ev = prof.function_events
    assert by_name(ev, "aten::mul")[0].cpu_memory_usage == 24
    assert by_name(ev, "aten::t")[0].cpu_memory_usage == 0
    (block,) = by_name(ev, "block")
    assert block.cpu_memory_usage == 24 + 4 + sum(
        e.cpu_memory_usage for e in ev if e.scope == 1 and e.cpu_parent.cpu_parent is block)
    assert block.self_cpu_memory_usage == 0
    header = prof.table().splitlines()[1]
    assert "CPU Mem" in header and "Self CPU Mem" in header


def test_memory_wrappers_are_removed_after_profiling():
    from ember._ops import registry
    from ember.autograd import engine
    before = (registry._tensor_call, engine._run_node)
    with P.profile(profile_memory=True):
        ember.ones(2) * 2.0
    assert (registry._tensor_call, engine._run_node) == before


def test_with_stack_points_at_the_calling_line():
    x = leaf(1.0)
    with P.profile(with_stack=True) as prof:
        x * 2.0
    (mul,) = by_name(prof.function_events, "aten::mul")
    assert mul.stack[0].startswith(__file__ + "(")
    assert mul.stack[0].endswith(": test_with_stack_points_at_the_calling_line")
    assert "Source Location" in prof.table()
    assert prof.key_averages(group_by_stack_n=1)[0].stack


def test_with_flops_estimates_matrix_products():
    a, b = ember.ones(2, 3), ember.ones(3, 4)
    with P.profile(with_flops=True) as prof:
        ember.mm(a, b)
    (mm,) = by_name(prof.function_events, "aten::mm")
    assert mm.flops == 2 * 2 * 3 * 4
    assert "Total FLOPs" in prof.table()


def test_ops_in_other_threads_get_their_own_thread_id():
    x = leaf(1.0)
    with P.profile() as prof:
        x * 2.0
        t = threading.Thread(target=lambda: x * 3.0)
        t.start()
        t.join()
    threads = {e.thread for e in by_name(prof.function_events, "aten::mul")}
    assert len(threads) == 2


# -- the switch --------------------------------------------------------------------------------
def test_hook_installed_only_while_profiling():
    assert profiler_hook[0] is None
    with P.profile():
        assert profiler_hook[0] is not None
    assert profiler_hook[0] is None
    with pytest.raises(ValueError), P.profile():
        raise ValueError("boom")
    assert profiler_hook[0] is None


def test_disabled_profile_binds_none_and_records_nothing():
    with P.profile(enabled=False) as prof:
        assert profiler_hook[0] is None
        leaf(1.0) * 2.0
    assert prof is None


def test_unfinished_reentrant_and_nested_profilers():
    prof = P.profile()
    assert str(prof) == repr(prof) == "<unfinished ember.autograd.profile>"
    with prof:
        with pytest.raises(RuntimeError, match="Profiler context manager is not reentrant"):
            prof.__enter__()
        with pytest.raises(RuntimeError, match="cannot be nested"), P.profile():
            pass
    assert prof.function_events == []
    assert prof.table() == ""


def test_device_options_warn_as_torch():
    if not ember.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available, disabling CUDA profiling"):
            with pytest.warns(FutureWarning, match="use_cuda"):
                P.profile(use_cuda=True)
    with pytest.warns(UserWarning, match="The npu is not a valid device option."):
        P.profile(use_device="npu")
    with pytest.raises(AssertionError, match="Device-only events supported only with Kineto"):
        P.profile(use_cpu=False)


def test_exception_inside_an_op_closes_its_range():
    with P.profile() as prof:
        with pytest.raises(RuntimeError):
            ember.mm(ember.ones(2, 3), ember.ones(2, 3))
        ember.ones(1) * 2.0
    (mul,) = by_name(prof.function_events, "aten::mul")
    assert mul.cpu_parent is None


# -- Chrome trace ------------------------------------------------------------------------------
def trace_of(prof, tmp_path):
    path = tmp_path / "trace.json"
    assert prof.export_chrome_trace(str(path)) is None
    with open(path) as f:
        return json.load(f)


def test_chrome_trace_structure(tmp_path):
    x = leaf(1.0, 2.0)
    with P.profile(record_shapes=True) as prof:
        with P.record_function("fwd"):
            y = (x * x).sum()
        y.backward()
    data = trace_of(prof, tmp_path)
    events = data["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == len(prof.function_events)
    for e in complete:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "cat", "args"} <= set(e)
        assert e["dur"] >= 0
    names = [e["name"] for e in complete]
    assert names.index("fwd") < names.index("aten::mul") < names.index("MulBackward0")
    assert [e["cat"] for e in complete if e["name"] == "fwd"] == ["user_annotation"]
    (mul,) = [e for e in complete if e["name"] == "aten::mul"]
    assert mul["args"]["Input Dims"] == [[2], [2]]
    fwd = next(e for e in complete if e["name"] == "fwd")
    assert fwd["ts"] <= mul["ts"] and mul["ts"] + mul["dur"] <= fwd["ts"] + fwd["dur"]


def test_chrome_trace_links_forward_ops_to_their_backward_nodes(tmp_path):
    x = leaf(1.0, 2.0)
    with P.profile() as prof:
        y = (x.exp() * 2.0).sum()
        y.backward()
    events = trace_of(prof, tmp_path)["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(finishes) and len(starts) == 3
    links = set()
    for fid, s in starts.items():
        f = finishes[fid]
        assert s["cat"] == f["cat"] == "fwdbwd" and f["bp"] == "e"
        fwd = [e for e in complete if e["ts"] == s["ts"] and e["tid"] == s["tid"]
               and e["name"].startswith("aten::")]
        bwd = [e for e in complete if e["ts"] == f["ts"] and e["tid"] == f["tid"]
               and not e["name"].startswith(EVALUATE)]
        assert fwd[0]["args"]["Sequence number"] == bwd[0]["args"]["Sequence number"]
        links.add((fwd[0]["name"], bwd[0]["name"]))
    assert links == {("aten::exp", "ExpBackward0"), ("aten::mul", "MulBackward0"),
                     ("aten::sum", "SumBackward0")}


def test_event_list_export_uses_torch_legacy_list_format(tmp_path):
    _, prof = run_pow()
    path = tmp_path / "legacy.json"
    prof.function_events.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    assert isinstance(data, list) and all(e["ph"] == "X" for e in data)


def test_export_stacks(tmp_path):
    x = leaf(1.0)
    with P.profile(with_stack=True) as prof:
        for _ in range(50):
            x * 2.0
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path))
    lines = path.read_text().splitlines()
    assert lines and all(line.rsplit(" ", 1)[1].isdigit() for line in lines)
    with pytest.raises(ValueError, match="metric should be one of"):
        prof.export_stacks(str(path), "cpu_time")


# -- emit_nvtx, load_nvprof, ember.cuda --------------------------------------------------------
def test_emit_nvtx_disabled_is_a_no_op_and_enabled_needs_cuda():
    x = leaf(1.0, 2.0)
    with P.emit_nvtx(enabled=False) as nv:
        y = (x * x).sum()
    assert nv is None
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0]
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
        with P.emit_nvtx():
            pass
    assert profiler_hook[0] is None


def test_cuda_module_on_a_cpu_only_install():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    assert ember.cuda.device_count() == 0
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        with ember.cuda.profiler.profile():
            pass
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        ember.cuda.synchronize()


def make_nvprof_db(path):
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE StringTable (_id_ INTEGER, value TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER (id INTEGER, name INTEGER, timestamp INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (_id_ INTEGER, cbid INTEGER, start INTEGER,
            end INTEGER, correlationId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (start INTEGER, end INTEGER,
            name TEXT, correlationId INTEGER);
        INSERT INTO StringTable VALUES (1, 'aten::mul, seq = 0'), (2, 'MulBackward0');
        INSERT INTO CUPTI_ACTIVITY_KIND_MARKER VALUES (10, 1, 100), (10, 0, 200),
            (11, 2, 300), (11, 0, 450);
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 211, 120, 130, 7);
        INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL VALUES (140, 160, 'mul_kernel', 7);
    """)
    conn.commit()
    conn.close()


def test_load_nvprof_reads_markers_and_kernels(tmp_path):
    path = str(tmp_path / "trace.prof")
    make_nvprof_db(path)
    events = P.load_nvprof(path)
    assert isinstance(events, P.EventList)
    assert [e.name for e in events] == ["aten::mul, seq = 0", "MulBackward0"]
    assert [e.cpu_time_total for e in events] == [100, 150]
    assert events[0].kernels == [P.Kernel("mul_kernel", 0, 20)]


def test_load_nvprof_missing_file_fails_as_torch(tmp_path):
    with pytest.raises(sqlite3.OperationalError, match="no such table: StringTable"):
        P.load_nvprof(str(tmp_path / "missing.prof"))


# -- the newer ember.profiler API ------------------------------------------------------------
def test_new_api_schedule_and_on_trace_ready(tmp_path):
    from ember.profiler import ProfilerActivity, profile, schedule
    ready = []
    x = leaf(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched = schedule(wait=1, warmup=1, active=2, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched,
                 on_trace_ready=lambda p: ready.append(
                     (p.step_num, {e.key: e.count for e in p.key_averages()}))) as p:
        for _ in range(6):
            x * 2.0
            p.step()
    assert len(ready) == 1
    step, counts = ready[0]
    assert step == 4
    assert counts["ProfilerStep*"] == 2 and counts["aten::mul"] == 2
    names = [e.trace_name for e in p.events() if e.name == "ProfilerStep*"]
    assert names == ["ProfilerStep#2", "ProfilerStep#3"]


def test_new_api_default_records_everything_and_trace_handler(tmp_path):
    from ember.profiler import profile, record_function, tensorboard_trace_handler
    x = leaf(1.0)
    with profile(on_trace_ready=tensorboard_trace_handler(str(tmp_path), "worker")) as p:
        with record_function("step"):
            (x * 2.0).sum().backward()
    assert {"step", "aten::mul", "MulBackward0"} <= {e.key for e in p.key_averages()}
    (name,) = os.listdir(tmp_path)
    assert name.startswith("worker.") and name.endswith(".pt.trace.json")
    data = json.loads((tmp_path / name).read_text())
    assert any(e.get("name") == "aten::mul" for e in data["traceEvents"])


def test_schedule_matches_torch():
    torch = pytest.importorskip("torch")
    from ember.profiler import schedule
    kwargs = {"wait": 2, "warmup": 1, "active": 3, "repeat": 2, "skip_first": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = schedule(**kwargs), torch.profiler.schedule(**kwargs)
    assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]
    with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
        schedule(wait=0, warmup=0, active=1)


# -- against torch -----------------------------------------------------------------------------
def test_op_and_node_keys_are_a_subset_of_torchs():
    torch = pytest.importorskip("torch")

    def program(lib, prof_mod):
        x = lib.tensor([[1.0, 2.0]], requires_grad=True)
        w = lib.tensor([[0.5], [-1.0]], requires_grad=True)
        with prof_mod.profile() as prof:
            y = (lib.mm(x, w).exp() * 2.0).sum()
            y.backward()
        return {e.key for e in prof.key_averages()}

    ours = program(ember, P)
    theirs = program(torch, torch.autograd.profiler)
    assert ours <= theirs
    assert {"aten::mm", "aten::exp", "aten::mul", "aten::sum", "MmBackward0", ACC,
            EVALUATE + "MmBackward0"} <= ours


def test_schedule_warns_once_that_each_cycle_clears_the_events():
    def body(torch):
        import importlib
        importlib.import_module(torch.__name__ + ".profiler.profiler")._WARNINGS_SHOWN.clear()
        steps = []
        sched = torch.profiler.schedule(wait=1, warmup=1, active=2)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    schedule=sched,
                                    on_trace_ready=lambda p: steps.append(p.step_num)) as p:
            for _ in range(8):
                torch.ones(2).sin()
                p.step()
        return steps
    same(body)
