"""What libraries built on torch (captum, einops, torchdiffeq, vit-pytorch) need from it at
import and in their calls, each against torch (see docs/programs.md)."""
from __future__ import annotations

import collections
import importlib
import os
import subprocess
import sys
import typing
import warnings

import pytest

from oracle import error_of, same, torch_or_skip


def test_future_is_generic_and_exported_at_the_top():
    # captum annotates with ``Future[Tensor]`` at import and asks ``isinstance(x, torch.Future)``
    def body(torch):
        alias = torch.futures.Future[torch.Tensor]
        done = torch.futures.Future()
        done.set_result(torch.ones(2))

        def later(x) -> torch.futures.Future[torch.Tensor]:
            return x

        return (typing.get_args(alias) == (torch.Tensor,),
                typing.get_origin(alias) is torch.futures.Future,
                isinstance(done, torch.Future), isinstance(torch.ones(1), torch.Future),
                later(done).wait())
    same(body)


def test_scatter_gather_module_splits_what_is_not_a_tensor():
    # (captum imports scatter from here; tensors go to CUDA devices, not checked here)
    def body(torch):
        sg = importlib.import_module(torch.__name__ + ".nn.parallel.scatter_gather")
        return (sg.scatter((1, "a"), [0, 1]), sg.scatter([2, 3], [0, 1]),
                sg.scatter({"a": 1, "b": (2,)}, [0, 1, 2]),
                sg.scatter_kwargs((), {"k": 3}, [0, 1]), sg.scatter_kwargs((1,), {}, [0, 1]),
                sg.scatter_kwargs((1, 2), {"k": 3}, [0], 0),
                torch.nn.parallel.scatter is sg.scatter, torch.nn.parallel.gather is sg.gather)
    same(body)


def test_log_api_usage_once_takes_one_string():
    # torchmetrics' Metric calls it in its constructor
    def body(torch):
        log = torch._C._log_api_usage_once
        return (log("torchmetrics.metric.MulticlassAccuracy"), error_of(lambda: log(1)),
                error_of(lambda: log()), error_of(lambda: log("a", "b")))
    same(body)


def test_log_api_usage_once_prints_each_event_once_when_asked_at_start():
    torch_or_skip()
    code = ("import {0}, os; log = {0}._C._log_api_usage_once; log('tests.event'); "
            "log('tests.event'); log('tests.other'); os.environ.pop('PYTORCH_API_USAGE_STDERR', None); "
            "log('tests.late')")

    def events(lib, asked):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        env.pop("PYTORCH_API_USAGE_STDERR", None)
        if asked:
            env["PYTORCH_API_USAGE_STDERR"] = "1"
        err = subprocess.run([sys.executable, "-c", code.format(lib)], env=env,
                             capture_output=True, text=True, check=True).stderr
        return [line for line in err.splitlines() if line.startswith("PYTORCH_API_USAGE tests.")]

    for asked in (True, False):
        assert events("ember", asked) == events("torch", asked)
    assert events("ember", True) == ["PYTORCH_API_USAGE tests.event",
                                     "PYTORCH_API_USAGE tests.other",
                                     "PYTORCH_API_USAGE tests.late"]


Pair = collections.namedtuple("Pair", "first second")


class Triple(tuple):
    """A tuple subclass that is not a named tuple: a leaf to torch's pytree."""


def _pytree(torch):
    return importlib.import_module(torch.__name__ + ".utils._pytree")


def test_pytree_flattens_and_rebuilds_as_torchs():
    # (x-transformers imports tree_flatten, tree_unflatten and tree_map from torch.utils._pytree)
    def body(torch):
        pt = _pytree(torch)
        x = torch.arange(3.)
        tree = (x, [1, None, "s"], {"b": x * 2, "a": Pair(3, (4,))},
                collections.OrderedDict(k=5), collections.defaultdict(list, d=[6]),
                collections.deque([7, 8], maxlen=4), Triple((9, 10)), torch.max(x, 0), ())
        leaves, spec = pt.tree_flatten(tree)
        again = pt.tree_unflatten(leaves, spec)
        return (leaves, repr(spec), pt.treespec_pprint(spec), spec.num_leaves, spec.num_nodes,
                spec.num_children, spec.is_leaf(), spec.child(5).context, repr(again),
                type(again[7]).__name__, again[4].default_factory, again[5].maxlen,
                pt.tree_leaves(tree) == leaves, pt.tree_structure(tree) == spec,
                pt.tree_structure([1, 2]) == pt.tree_structure([3, 4]),
                pt.tree_structure([1, 2]) == pt.tree_structure((3, 4)),
                hash(pt.tree_structure({"a": [1]})) == hash(pt.tree_structure({"a": [2]})),
                repr(pt.tree_flatten(None)), repr(pt.tree_flatten(x)), pt.tree_is_leaf([1]),
                pt.tree_is_leaf([1], is_leaf=lambda t: isinstance(t, list)),
                repr(pt.tree_flatten([[1], [2]], is_leaf=lambda t: t == [2])))
    same(body)


def test_pytree_maps_as_torchs():
    def body(torch):
        pt = _pytree(torch)
        x = torch.ones(2, requires_grad=True)
        tree = {"h": [x * 2, x * 3], "n": 4, "c": (x, None)}
        detached = pt.tree_map(lambda t: t.detach() if torch.is_tensor(t) else t, tree)
        seen = []
        return (detached, pt.tree_map(lambda a, b: [a, b], [1, (2, 3)], [[4], ({"z": 5}, 6)]),
                pt.tree_map_only(int, lambda v: v + 1, [1, "a", (2.0, 3)]),
                pt.tree_map_only(torch.Tensor, lambda t: t.sum(), tree),
                pt.tree_map_(seen.append, [1, (2, 3)]), seen,
                pt.tree_all(lambda v: v > 0, [1, (2, 3)]), pt.tree_any(lambda v: v > 2, [1, (2,)]),
                pt.tree_all_only(int, lambda v: v > 0, [1, "a"]),
                pt.tree_any_only(str, lambda v: v == "a", [1, "a"]),
                list(pt.tree_iter({"a": [1, 2], "b": 3})),
                pt.tree_map(lambda a, b: a + b, {"a": 1, "b": 2},
                            collections.OrderedDict(b=20, a=10)))
    same(body)


@pytest.mark.parametrize("call", [
    lambda pt: pt.tree_map(lambda a, b: a, [1, 2], [1, 2, 3]),
    lambda pt: pt.tree_map(lambda a, b: a, [1, 2], (1, 2)),
    lambda pt: pt.tree_map(lambda a, b: a, {"a": 1}, {"b": 1}),
    lambda pt: pt.tree_map(lambda a, b: a, Pair(1, 2), (1, 2)),
    lambda pt: pt.tree_unflatten([1], pt.tree_structure([1, 2])),
    lambda pt: pt.tree_unflatten([1], [2]),
    lambda pt: pt.register_pytree_node(list, lambda x: (x, None), lambda v, c: v),
    lambda pt: pt.tree_map_only(3, lambda v: v, [1]),
])
def test_pytree_refuses_as_torchs(call):
    def body(torch):
        return call(_pytree(torch))
    same(body)


def test_pytree_registered_node_type():
    class Box:
        def __init__(self, items, label):
            self.items, self.label = items, label

    def body(torch):
        pt = _pytree(torch)
        if Box not in pt.SUPPORTED_NODES:  # (one registry per library, kept across runs)
            pt.register_pytree_node(Box, lambda b: (list(b.items), b.label),
                                    lambda values, label: Box(values, label))
        leaves, spec = pt.tree_flatten([Box([1, (2, 3)], "L"), 4])
        rebuilt = pt.tree_unflatten([v * 10 for v in leaves], spec)
        mapped = pt.tree_map(lambda v: -v, Box([5], "M"))
        return (leaves, repr(spec).replace(Box.__qualname__, "Box"), rebuilt[0].items,
                rebuilt[0].label, mapped.items, error_of(lambda: pt.tree_map(
                    lambda a, b: a, Box([1], "L"), Box([1], "K"))))
    same(body)


def test_script_of_a_function_runs_it_as_torchs_compiled_function_does():
    # (x-transformers decorates a helper with @torch.jit.script at import)
    def body(torch):
        jit = importlib.import_module(torch.__name__ + ".jit")
        Tensor = torch.Tensor

        def softclamp(t: Tensor, value: float):
            """Clamps softly."""
            return (t / value).tanh() * value

        def untyped(a, b):
            return a + b

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            scripted, plain = jit.script(softclamp), jit.script(untyped)
            again = jit.script(scripted)
        x = torch.tensor([3., -1.], requires_grad=True)
        y = scripted(x, 2.0)
        y.sum().backward()
        return (y.detach(), x.grad, scripted(x, value=2).detach(), again is scripted,
                isinstance(scripted, jit.ScriptFunction), scripted.name,
                scripted.qualified_name.rsplit(".", 1)[-1], scripted.__doc__,
                plain(torch.ones(1), torch.ones(1)),
                [error_of(call)[0] for call in (lambda: scripted(1.0, 2.0),
                                                lambda: plain(torch.ones(1), 2))],
                [error_of(call)[1].splitlines()[:3] for call in (lambda: scripted(1.0, 2.0),
                                                                 lambda: plain(torch.ones(1), 2))])
    same(body, grad_fn=False)  # (TorchScript's product is MulBackward1, ember's eager one not)


def test_allow_in_graph_returns_what_it_is_given():
    # (einx marks its operations with it when it first runs)
    def body(torch):
        def f(x):
            return x + 1

        compiler, dynamo = (importlib.import_module(torch.__name__ + name)
                            for name in (".compiler", "._dynamo"))
        return (compiler.allow_in_graph(f) is f, compiler.allow_in_graph([f, f]) == [f, f],
                compiler.allow_in_graph((f,)) == [f], dynamo.allow_in_graph(f) is f,
                error_of(lambda: compiler.allow_in_graph(3)))
    same(body)


def test_script_needs_the_functions_source_as_torchs():
    def body(torch):
        jit = importlib.import_module(torch.__name__ + ".jit")
        no_source = eval("lambda x: x")  # (no file holds its source)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            kind, message = error_of(lambda: jit.script(no_source))
        return kind, message.startswith("Can't get source for <function <lambda> at 0x"), \
            message.endswith("TorchScript requires source access in order to carry out "
                             "compilation, make sure original .py files are available.")
    same(body)


def test_what_pyro_reads_from_torch_at_import():
    # (pyro's ParamStore annotates with serialization.MAP_LOCATION; its distributions skip
    # checks while _C._get_tracing_state() says a trace runs; it filters jit.TracerWarning)
    def body(torch):
        serialization = importlib.import_module(torch.__name__ + ".serialization")
        jit = importlib.import_module(torch.__name__ + ".jit")
        callable_type, *others = typing.get_args(serialization.MAP_LOCATION)
        with warnings.catch_warnings():
            jit.TracerWarning.ignore_lib_warnings()
            warnings.warn("traced", jit.TracerWarning)  # (from the caller's module: kept)
        return (typing.get_origin(callable_type).__name__, [str(t) for t in others],
                torch._C._get_tracing_state(), jit.TracerWarning.__mro__[1:])
    same(body)


def test_dlpack_module_and_torch_torch_as_torchs():
    # (kornia imports from_dlpack and to_dlpack from torch.utils.dlpack and annotates with
    # torch.torch.Tensor)
    def body(torch):
        dlpack = importlib.import_module(torch.__name__ + ".utils.dlpack")
        x = torch.arange(4.)
        back = dlpack.from_dlpack(dlpack.to_dlpack(x))
        back[0] = 7.
        return (dlpack.from_dlpack is torch.from_dlpack, dlpack.to_dlpack is torch.to_dlpack,
                dlpack.__all__, [(d.name, int(d)) for d in dlpack.DLDeviceType],
                x.__dlpack_device__()[0] == dlpack.DLDeviceType.kDLCPU, x,
                torch.torch is torch, torch.torch.Tensor is torch.Tensor)
    same(body)


@pytest.mark.parametrize("name", ["batchnorm", "instancenorm", "channelshuffle", "fold",
                                  "pixelshuffle", "upsampling"])
def test_nn_modules_submodules_hold_torchs_layers(name):
    # (kornia: from torch.nn.modules.batchnorm import _BatchNorm)
    def body(torch):
        module = importlib.import_module(f"{torch.__name__}.nn.modules.{name}")
        private = sorted(n for n in ("_BatchNorm", "_NormBase", "_InstanceNorm")
                         if hasattr(module, n))
        layers = [getattr(module, n) for n in module.__all__]
        return (module.__all__, private, all(layer is getattr(torch.nn, layer.__name__)
                                             for layer in layers),
                issubclass(torch.nn.BatchNorm2d, getattr(module, "_BatchNorm", object)))
    same(body)


def test_lu_and_lu_solve_deprecations_warn_once_per_process_as_torchs():
    # (normflows' tests call torch.lu and Tensor.lu many times: torch warned once)
    torch_or_skip()
    code = ("import warnings, {0} as t\n"
            "x = t.eye(3) + 0.1\n"
            "def calls():\n"
            "    for _ in range(3):\n"
            "        LU, p = t.lu(x); x.lu(); t.lu_solve(t.ones(3, 1), LU, p)\n"
            "        t.ones(3, 1).lu_solve(LU, p)\n"
            "with warnings.catch_warnings(record=True) as once:\n"
            "    warnings.simplefilter('always')\n"
            "    calls()\n"
            "t.set_warn_always(True)\n"
            "with warnings.catch_warnings(record=True) as always:\n"
            "    warnings.simplefilter('always')\n"
            "    calls()\n"
            "print([str(w.message).split()[0] for w in once])\n"
            "print(len(always))\n")

    def printed(lib):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        return subprocess.run([sys.executable, "-c", code.format(lib)], env=env,
                              capture_output=True, text=True, check=True).stdout

    assert printed("ember") == printed("torch").replace("torch.", "ember.")


def test_sparse_coo_tensor_of_a_size_alone_is_empty():
    # (skorch's to_tensor test: torch.sparse_coo_tensor(size=(5, 3)))
    def body(torch):
        made = [torch.sparse_coo_tensor(size=(5, 3)), torch.sparse_coo_tensor((2, 3, 4)),
                torch.sparse_coo_tensor([2, 3], dtype=torch.float64, requires_grad=True)]
        return ([(repr(t), t.shape, t.dtype, t.requires_grad, t.is_leaf, t._nnz(),
                  t.sparse_dim(), t.dense_dim(), t._indices(), t._values(), t.is_coalesced(),
                  t.to_dense()) for t in made],
                error_of(lambda: torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long))))
    same(body, check_warnings=False)  # (the invariants warning comes once a process)
