"""How much of torch's public API ember has, module by module.

    python tools/api_coverage.py              # the table, then the missing names per module
    python tools/api_coverage.py --table      # the table only
    python tools/api_coverage.py special fft  # only these modules (names as in the table)

A module's public names are its ``__all__`` together with what ``dir()`` shows that does not
start with an underscore, less submodules, objects defined outside torch (``typing.Optional``,
``warnings``, ``math`` brought in by imports), docstring fragments (string constants such as
``common_args``) and the exclusions below, each with its reason. ember "has" a name when the
matching ember module has an attribute of that name.

This is a development tool: it imports torch (the reference) and ember side by side.
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

# (table row, torch module, ember module); a Tensor row compares the Tensor classes.
MODULES = [
    ("torch", "torch", "ember"),
    ("Tensor", "torch.Tensor", "ember.Tensor"),
    ("nn", "torch.nn", "ember.nn"),
    ("nn.functional", "torch.nn.functional", "ember.nn.functional"),
    ("overrides", "torch.overrides", "ember.overrides"),
    ("nn.init", "torch.nn.init", "ember.nn.init"),
    ("nn.utils", "torch.nn.utils", "ember.nn.utils"),
    ("nn.utils.parametrize", "torch.nn.utils.parametrize", "ember.nn.utils.parametrize"),
    ("nn.utils.parametrizations", "torch.nn.utils.parametrizations",
     "ember.nn.utils.parametrizations"),
    ("nn.utils.prune", "torch.nn.utils.prune", "ember.nn.utils.prune"),
    ("nn.utils.rnn", "torch.nn.utils.rnn", "ember.nn.utils.rnn"),
    ("linalg", "torch.linalg", "ember.linalg"),
    ("optim", "torch.optim", "ember.optim"),
    ("optim.lr_scheduler", "torch.optim.lr_scheduler", "ember.optim.lr_scheduler"),
    ("func", "torch.func", "ember.func"),
    ("utils.data", "torch.utils.data", "ember.utils.data"),
    ("autograd", "torch.autograd", "ember.autograd"),
    ("amp", "torch.amp", "ember.amp"),
    ("special", "torch.special", "ember.special"),
    ("fft", "torch.fft", "ember.fft"),
    ("distributions", "torch.distributions", "ember.distributions"),
    ("quasirandom", "torch.quasirandom", "ember.quasirandom"),
    ("random", "torch.random", "ember.random"),
    ("testing", "torch.testing", "ember.testing"),
    ("autograd.graph", "torch.autograd.graph", "ember.autograd.graph"),
    ("utils.checkpoint", "torch.utils.checkpoint", "ember.utils.checkpoint"),
    ("utils.hooks", "torch.utils.hooks", "ember.utils.hooks"),
    ("nn.modules.utils", "torch.nn.modules.utils", "ember.nn.modules.utils"),
    ("sparse", "torch.sparse", "ember.sparse"),
    ("library", "torch.library", "ember.library"),
]

# Names left out of the count: (reason, patterns); a pattern is a regular expression matched
# against the whole name, in every module.
EXCLUDED = [
    ("TorchScript / jit: ember has no graph compiler or IR", [
        r"Script\w*", r"\w+Type", r"Type", r"AliasDb", r"Argument", r"ArgumentSpec", r"Block",
        r"CallStack", r"Capsule", r"Code", r"CompilationUnit", r"CompleteArgumentSpec",
        r"ConcreteModuleType\w*", r"DeepCopyMemoTable", r"ErrorReport", r"ExecutionPlan",
        r"FileCheck", r"FunctionSchema", r"Gradient", r"Graph", r"GraphExecutorState",
        r"IODescriptor", r"InferredType", r"JITException", r"LiteScriptModule",
        r"LockingLogger", r"LoggerBase", r"NoopLogger", r"Node", r"StaticModule",
        r"TracingState", r"Use", r"Value", r"import_ir_module\w*", r"parse_ir", r"parse_schema",
        r"parse_type_comment", r"merge_type_from_type_comment", r"unify_type_list", r"fork",
        r"wait", r"Future", r"BroadcastingList\d", r"boolean_dispatch", r"ScalingType",
        r"SwizzleType", r"DType", r"ModuleDict", r"ParameterDict", r"BufferDict",
    ]),
    ("torch.compile, its control-flow operators and symbolic shapes", [
        r"compile", r"cond", r"while_loop", r"Sym\w+", r"sym_\w+", r"functionalize",
        r"debug_unwrap", r"AVG", r"SUM", r"AggregationType", r"ThroughputBenchmark",
        r"Benchmark\w+", r"profiler_allow_cudagraph\w*", r"OperatorInfo", r"PRIVATE_OPS",
    ]),
    ("quantization", [
        r"q_\w+", r"qscheme", r"qint\d+", r"quint\w+", r"quantize\w*", r"quantized_\w+",
        r"dequantize", r"int_repr", r"per_(channel|tensor)_\w+", r"fake_quantize\w*",
        r"fused_moving_avg_obs_fake_quant", r"choose_qparams\w*", r"fbgemm_\w+",
        r"empty_quantized", r"is_quantized", r"Q\w+Storage",
    ]),
    ("sparse and nested layouts", [
        r"sparse_\w+", r"\w*sparse\w*", r"to_sparse\w*", r"is_sparse\w*", r"\w*indices_copy",
        r"values_copy", r"(crow|ccol|row|col)_indices", r"indices", r"values", r"coalesce",
        r"is_coalesced", r"dense_dim", r"to_dense", r"smm", r"spmm", r"hspmm", r"dsmm", r"hsmm",
        r"saddmm", r"sspaddmm", r"jagged", r"is_nested", r"to_padded_tensor",
        r"sparse_support_notes",
    ]),
    ("storages (ember tensors are arrays; untyped_storage() is kept for data_ptr checks)", [
        r"\w+Storage", r"Storage\w*", r"TypedStorage", r"UntypedStorage", r"is_storage",
        r"storage", r"storage_type", r"DeserializationStorageContext",
        r"SerializationStorageContext", r"from_file", r"PyTorchFile(Reader|Writer)",
        r"ScriptModuleSerializer", r"set_", r"is_set_to", r"record_stream",
    ]),
    ("dispatcher and __torch_function__ internals", [
        r"DispatchKey\w*", r"ExcludeDispatchKeyGuard", r"Tag",
        r"classproperty", r"hash_tensor", r"thread_safe_generator",
    ]),
    ("other accelerators and their libraries (CUDA itself is ember.cuda's)", [
        r"cudnn_\w+", r"miopen_\w+", r"mkldnn_\w+", r"to_mkldnn", r"is_mkldnn", r"\w*vulkan\w*",
        r"ipu", r"is_ipu", r"xpu", r"is_xpu", r"mtia", r"is_mtia", r"is_maia", r"is_mps",
        r"is_xla", r"\w+_(ipu|xla)_\w+", r"\w+_(ipu|xla)", r"get_autocast_(ipu|xla)_dtype",
        r"DataParallel", r"SyncBatchNorm", r"DistributedSampler", r"is_distributed",
        r"grouped_mm", r"scaled_grouped_mm", r"scaled_mm",
    ]),
    ("sub-byte integer and bit dtypes (no array storage for them)", [
        r"bits\w+", r"bit", r"u?int[1-7]",
    ]),
    ("build and linking flags of the C++ library", [
        r"USE_\w+", r"TYPE_CHECKING", r"compiled_with_cxx11_abi", r"get_file_path",
        r"prepare_multiprocessing_environment", r"has_(lapack|mkl|openmp|spectral)",
        r"init_num_threads",
    ]),
    ("the deprecated DataPipes (torchdata) and their type checking", [
        r"\w*DataPipe", r"DataChunk", r"functional_datapipe", r"guaranteed_datapipes_determinism",
        r"non_deterministic", r"runtime_validation\w*", r"argument_validation",
    ]),
    ("the legacy autograd profiler's C++ types (ember.profiler covers profiling)", [
        r"DeviceType", r"Profiler(Activity|Config|Event|State)", r"kineto_available",
    ]),
]
_EXCLUDED = [(reason, re.compile("|".join(f"(?:{p})" for p in pats)))
             for reason, pats in EXCLUDED]


def excluded(name):
    """The reason ``name`` is left out of the count, or None."""
    for reason, pattern in _EXCLUDED:
        if pattern.fullmatch(name):
            return reason
    return None


def _resolve(path):
    """A module or class from its dotted path (None when it does not exist)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _foreign(obj):
    """Whether ``obj`` came into the namespace by an import from outside torch."""
    if isinstance(obj, str):  # docstring fragments (reproducibility_notes)
        return True
    if isinstance(obj, dict) and obj and all(isinstance(v, str) for v in obj.values()):
        return True  # tables of docstring fragments (special's common_args, linalg's common_notes)
    if not callable(obj) and not isinstance(obj, type):
        return False
    mod = getattr(obj, "__module__", None)
    if not isinstance(mod, str):
        return False
    return not mod.startswith("torch")


def public_names(obj):
    """The public names of a torch module or class, before exclusions."""
    listed = getattr(obj, "__all__", ()) if isinstance(obj, types.ModuleType) else ()
    names = set()
    for name in {*listed, *dir(obj)}:
        if name.startswith("_") and name not in listed:
            continue
        try:
            value = getattr(obj, name)
        except Exception:  # noqa: BLE001 - a lazy attribute that fails is not usable API
            continue
        if isinstance(value, types.ModuleType) or _foreign(value):
            continue
        names.add(name)
    return sorted(names)


def measure(torch_path, ember_path):
    """(counted names, missing names) of one row."""
    torch_obj = _resolve(torch_path)
    ember_obj = _resolve(ember_path)
    counted = [n for n in public_names(torch_obj) if excluded(n) is None]
    missing = [n for n in counted if ember_obj is None or not hasattr(ember_obj, n)]
    return counted, missing


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="rows to measure (default: all)")
    parser.add_argument("--table", action="store_true", help="print the table only")
    args = parser.parse_args(argv)
    import torch  # noqa: F401 - the reference
    rows = [m for m in MODULES if not args.modules or m[0] in args.modules]
    results = [(row, *measure(tp, ep)) for row, tp, ep in rows]
    print("| module | ember has | of | missing |")
    print("|---|---:|---:|---:|")
    for row, counted, missing in results:
        have = len(counted) - len(missing)
        pct = 100.0 * have / len(counted) if counted else 100.0
        print(f"| {row} | {pct:.0f}% | {len(counted)} | {len(missing)} |")
    if args.table:
        return
    for row, _, missing in results:
        if missing:
            print(f"\n{row} ({len(missing)} missing):")
            print("  " + " ".join(missing))


if __name__ == "__main__":
    main()
