"""ember.save / ember.load: bit-exact round trips, and refusal of anything not ember's; ops
pickled and copied by reference, as torch's functions."""
from __future__ import annotations

import collections
import copy
import io
import json
import pickle
import zipfile

import numpy as np
import pytest

import ember
from oracle import error_of, same, torch_or_skip


def _roundtrip(obj, tmp_path=None):
    if tmp_path is None:
        buffer = io.BytesIO()
        ember.save(obj, buffer)
        buffer.seek(0)
        return ember.load(buffer)
    path = tmp_path / "obj.pt"
    ember.save(obj, path)
    return ember.load(path)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                   "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool",
                                   "complex64", "complex128", "float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3)])
def test_tensors_roundtrip_bit_exact(dtype, shape, tmp_path):
    rng = np.random.default_rng(0)
    data = np.asarray(rng.standard_normal(shape) * 100).astype(getattr(ember, dtype).np)
    t = ember.from_numpy(data.copy())
    back = _roundtrip(t, tmp_path)
    assert back.dtype == t.dtype and back.shape == t.shape
    # (bfloat16 and float8 tensors refuse .numpy(), as torch's: their array's bytes)
    assert np.asarray(back._data).tobytes() == data.tobytes()


def test_special_floats_and_noncontiguous_views():
    t = ember.tensor([float("nan"), float("inf"), -0.0, 1e-45])
    assert _roundtrip(t).numpy().tobytes() == t.numpy().tobytes()
    view = ember.arange(12.0).reshape(3, 4).t()
    back = _roundtrip(view)
    assert back.tolist() == view.tolist()


def test_state_dicts_keep_structure_parameters_and_sharing():
    model = ember.nn.Linear(3, 2)
    state = model.state_dict()
    back = _roundtrip(state)
    assert isinstance(back, collections.OrderedDict) and list(back) == list(state)
    for key in state:
        assert back[key].numpy().tobytes() == state[key].numpy().tobytes()
    p = ember.nn.Parameter(ember.randn(2))
    obj = {"a": p, "b": p, "grad": ember.ones(2, requires_grad=True)}
    back = _roundtrip(obj)
    assert back["a"] is back["b"] and isinstance(back["a"], ember.nn.Parameter)
    assert back["grad"].requires_grad and back["grad"].is_leaf


def test_optimizer_state_roundtrip_resumes_identically():
    def make():
        ember.manual_seed(0)
        model = ember.nn.Linear(4, 1)
        return model, ember.optim.Adam(model.parameters(), lr=0.1)

    def step(model, opt):
        opt.zero_grad()
        model(ember.ones(2, 4)).pow(2).sum().backward()
        opt.step()

    model, opt = make()
    step(model, opt)
    saved = _roundtrip({"model": model.state_dict(), "opt": opt.state_dict()})
    step(model, opt)
    model2, opt2 = make()
    model2.load_state_dict(saved["model"])
    opt2.load_state_dict(saved["opt"])
    step(model2, opt2)
    assert model2.weight.tolist() == model.weight.tolist()


def test_python_values_roundtrip():
    obj = {1: [None, True, 2, 2.5, "s", 1 + 2j, (3, 4)], (1, 2): "tuple key",
           "np": np.arange(3), "scalar": np.float32(1.5)}
    buffer = io.BytesIO()
    ember.save(obj, buffer)
    buffer.seek(0)
    back = ember.load(buffer, weights_only=False)  # (NumPy values need it, as in torch)
    assert back[1] == obj[1] and back[(1, 2)] == "tuple key"
    assert back["np"].tolist() == [0, 1, 2] and back["scalar"].dtype == np.float32


class _Net:
    """A module class the loads below must find by name (saved modules are found by class)."""


def _net(torch):
    global _Net

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)
            self.register_buffer("b", torch.ones(2))
            self.note = "kept"

        def forward(self, x):
            return self.fc(x) + self.b
    Net.__qualname__ = Net.__name__ = "_Net"  # (found as this module's _Net when unpickled)
    _Net = Net
    torch.manual_seed(0)
    return Net()


def _error(error):
    text = str(error).replace("generated/torch.load.html", "").replace("torch.", "ember.")
    return type(error).__name__, text


@pytest.mark.parametrize("allow", ["nothing", "the class", "weights_only=False"])
def test_whole_modules_save_and_load_as_torchs(allow):
    """torch.save(model) pickles the module; torch.load's default refuses the pickle's classes
    with torch's UnpicklingError (naming the first one to allow), weights_only=False loads it."""
    def outcome(lib):
        model = _net(lib)
        buffer = io.BytesIO()
        lib.save({"model": model, "step": 3, "w": model.fc.weight}, buffer)
        buffer.seek(0)
        try:
            if allow == "weights_only=False":
                back = lib.load(buffer, weights_only=False)
            else:
                with lib.serialization.safe_globals([_Net] if allow == "the class" else []):
                    back = lib.load(buffer)
        except Exception as error:  # noqa: BLE001 - compared with torch's
            return _error(error)
        m = back["model"]
        out = m(lib.ones(1, 3))
        return (type(m).__name__, repr(m), m.note, out.tolist(), out.grad_fn.name(),
                type(m.fc.weight).__name__, m.fc.weight.requires_grad, back["step"],
                back["w"] is m.fc.weight, sorted(m.state_dict()))
    torch = pytest.importorskip("torch")
    assert outcome(ember) == outcome(torch)


def test_objects_pickle_cannot_store_raise_pickles_error():
    def outcome(lib):
        try:
            lib.save({"f": lambda: 1}, io.BytesIO())
        except Exception as error:  # noqa: BLE001 - compared with torch's
            return type(error).__name__, str(error)
    torch = pytest.importorskip("torch")
    assert outcome(ember) == outcome(torch)


def test_an_object_of_a_class_gone_at_load_raises_pickles_error():
    def outcome(lib):
        global _Gone

        class _Gone:
            pass
        buffer = io.BytesIO()
        lib.save([_Gone()], buffer)
        del _Gone
        buffer.seek(0)
        try:
            lib.load(buffer, weights_only=False)
        except Exception as error:  # noqa: BLE001 - compared with torch's
            return type(error).__name__, str(error)
    torch = pytest.importorskip("torch")
    assert outcome(ember) == outcome(torch)


def test_load_refuses_pickles_and_foreign_archives(tmp_path):
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(RuntimeError, match="not an archive written by ember.save"):
        ember.load(path)
    np.savez(tmp_path / "plain.npz", a=np.ones(2))
    with pytest.raises(RuntimeError, match="it has no ember manifest"):
        ember.load(tmp_path / "plain.npz")


def _written_by_torch(tmp_path, make):
    """The path of a file torch.save wrote ``make(torch)`` to (pretrained weights that programs
    download are such files)."""
    torch = pytest.importorskip("torch")
    path = tmp_path / "torch.pt"
    torch.manual_seed(0)
    torch.save(make(torch), path)
    return path


def _checkpoint(torch):
    base = torch.arange(12.).reshape(3, 4)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    return {"state": model.state_dict(), "base": base, "view": base.t()[1:],
            "param": torch.nn.Parameter(torch.randn(2, 2, dtype=torch.float64)),
            "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
            "ints": torch.tensor([1, -2], dtype=torch.int16), "mask": torch.tensor([True, False]),
            "half": torch.randn(3).half(), "empty": torch.zeros(0, 3), "scalar": torch.tensor(2.5),
            "complex": torch.randn(2, dtype=torch.complex64), "graph": torch.ones(2) * 3,
            "size": torch.Size([2, 3]), "device": torch.device("cpu"), "dtype": torch.float16,
            "list": [1, 2.5, "a", None], "tuple": (torch.ones(1),),
            "uint16": torch.arange(3).to(torch.uint16),  # (torch's untyped storage)
            "meta": torch.empty(2, 3, device="meta")}


@pytest.mark.parametrize("weights_only", [True, False])
def test_load_reads_torch_save_files(tmp_path, weights_only):
    path = _written_by_torch(tmp_path, _checkpoint)

    def body(torch):
        got = torch.load(path, weights_only=weights_only)
        state = got["state"]
        got["base"][0, 1] = 100.  # the view was saved from the same memory: it sees the write
        named = [repr(got.pop(k)) for k in ("size", "device", "dtype")]
        return (got, list(state), getattr(state, "_metadata", None), type(got["param"]).__name__,
                got["view"].stride(), got["view"].storage_offset(), named)
    same(body)


def test_load_of_a_torch_file_places_and_refuses_as_torch(tmp_path):
    path = _written_by_torch(tmp_path, lambda torch: {"model": torch.nn.Linear(2, 2)})

    def body(torch):
        placed = torch.load(path, map_location="meta", weights_only=False)["model"]
        try:
            torch.load(path)
        except Exception as error:  # noqa: BLE001 - compared with torch's
            return placed.weight.is_meta, type(error).__name__, str(error).split("\n")[-3:-1]
        return placed.weight.is_meta, None
    same(body)


_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
           "uint16", "uint32", "uint64", "bool", "complex64", "complex128", "float8_e4m3fn",
           "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"]


def _everything(lib):
    """What programs save: state dicts (BatchNorm buffers, tied weights), views, a tensor of
    each dtype, nested containers and Python values."""
    lib.manual_seed(0)
    first, second = lib.nn.Linear(3, 3), lib.nn.Linear(3, 3)
    second.weight = first.weight  # tied: one storage in the file
    model = lib.nn.Sequential(first, lib.nn.BatchNorm1d(3), second)
    checkpoint = _checkpoint(lib)
    checkpoint.update({
        "tied": model.state_dict(),
        "dtypes": {name: lib.tensor([[0.5, 1., 2.], [4., 8., 16.]]).to(getattr(lib, name))
                   for name in _DTYPES},
        "nested": {"a": [(1, "two", 3.5 + 1j, True), {"b": None}], 3: lib.arange(4.)[::2]},
        "requires_grad": lib.ones(2, requires_grad=True)})
    return checkpoint


def _pickle_bytes(path):
    with zipfile.ZipFile(path) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith("/data.pkl")))


@pytest.mark.parametrize("weights_only", [True, False])
def test_torch_loads_what_ember_saves_as_what_torch_saves(tmp_path, weights_only):
    """ember.save writes torch's zip format: torch.load (weights-only included) reads it as it
    reads torch.save's file of the same objects: values, dtypes, parameters, views sharing
    their storage with their base, tied weights one storage; the pickle is torch's byte for
    byte."""
    torch = pytest.importorskip("torch")

    def saved_and_loaded_by_torch(lib):
        path = tmp_path / lib.__name__ / "checkpoint.pt"
        path.parent.mkdir()
        lib.save(_everything(lib), path)
        got = torch.load(path, weights_only=weights_only)
        tied = got["tied"]
        shares = (tied["0.weight"].untyped_storage().data_ptr()
                  == tied["2.weight"].untyped_storage().data_ptr())
        got["base"][0, 1] = 100.  # the view was saved from the same memory: it sees the write
        with zipfile.ZipFile(path) as archive:
            records = [(info.filename, info.compress_type) for info in archive.infolist()
                       if not info.filename.endswith("serialization_id")]
            layout = [(name, archive.read(name)) for name, _ in records
                      if "/data/" in name or name.endswith(("version", "byteorder",
                                                            "alignment"))]
        return (repr(got), got["view"].stride(), got["view"].storage_offset(), shares,
                type(got["param"]).__name__, records, layout, _pickle_bytes(path))
    assert saved_and_loaded_by_torch(ember) == saved_and_loaded_by_torch(torch)


def test_ember_loads_what_ember_saves_as_torch_loads_it(tmp_path):
    """ember.save -> ember.load round trip agrees with torch.save -> torch.load."""
    def body(torch):
        path = tmp_path / f"{torch.__name__}.pt"
        torch.save(_everything(torch), path)
        got = torch.load(path)
        got["base"][0, 1] = 100.
        tied = got["tied"]
        named = [repr(got.pop(k)) for k in ("size", "device", "dtype", "meta")]
        return (got, named, tied["0.weight"] is tied["2.weight"],
                tied["0.weight"].data_ptr() == tied["2.weight"].data_ptr(),
                got["view"].stride(), type(got["param"]).__name__)
    same(body)


@pytest.mark.parametrize("weights_only", [True, False])
def test_attributes_of_the_programs_own_on_tensors_and_parameters_are_saved_as_torchs(
        tmp_path, weights_only):
    """A tensor's or parameter's own attributes are kept (torch's _rebuild_from_type_v2 and
    _rebuild_parameter_with_state): the same pickle as torch's, read back by both."""
    torch = pytest.importorskip("torch")

    def saved(lib):
        parameter, tensor = lib.nn.Parameter(lib.ones(2)), lib.arange(3.)
        parameter.note, tensor.label = "kept", (1, 2)
        path = tmp_path / f"{lib.__name__}.pt"
        lib.save({"parameter": parameter, "tensor": tensor}, path)
        loaded = [(loader.load(path, weights_only=weights_only)) for loader in (torch, ember)]
        return _pickle_bytes(path), [(type(got["parameter"]).__name__, got["parameter"].note,
                                      got["tensor"].label, got["tensor"].tolist())
                                     for got in loaded]
    assert saved(ember) == saved(torch)


def test_saving_views_of_one_storage_as_two_dtypes_raises_as_torch():
    def error(lib):
        a = lib.ones(4)
        return error_of(lambda: lib.save([a, a.view(lib.int32)], io.BytesIO()))
    torch = pytest.importorskip("torch")
    assert error(ember) == error(torch) is not None


def test_legacy_format_is_refused():
    """torch's legacy (pre-zip) format is neither written nor read by ember."""
    with pytest.raises(ValueError, match="legacy format"):
        ember.save(ember.ones(2), io.BytesIO(), _use_new_zipfile_serialization=False)


def test_files_of_earlier_ember_versions_still_load(tmp_path):
    """ember.save used to write a NumPy archive with a JSON manifest; ember.load reads it."""
    path = tmp_path / "old.pt"
    base = np.arange(6, dtype=np.float32)
    tensor = {"t": "tensor", "storage": "a0", "dtype": "float32", "device": "cpu",
              "requires_grad": False, "parameter": False}
    manifest = {"format": "ember.save/2", "object": {"t": "dict", "items": [
        [{"t": "py", "v": "base"}, dict(tensor, offset=0, shape=[2, 3], strides=[12, 4])],
        [{"t": "py", "v": "column"}, dict(tensor, offset=4, shape=[2], strides=[12])]]}}
    with open(path, "wb") as handle:
        np.savez(handle, a0=base.view(np.uint8),
                 __ember_manifest__=np.frombuffer(json.dumps(manifest).encode(), np.uint8))
    got = ember.load(path)
    got["base"][1, 1] = -1.
    assert got["base"].tolist() == [[0., 1., 2.], [3., -1., 5.]]
    assert got["column"].tolist() == [1., -1.]  # a view of the same storage again


_NUMPY_VALUES = {"array": "np.arange(3.0)", "int_array": "np.arange(3)",
                 "scalar": "{'a': np.float64(1.5)}", "in_a_list": "[np.float32(2.0)]"}
_ALLOW = {"none": "[]", "reconstruct": "[_reconstruct]",
          "no_dtype_class": "[_reconstruct, scalar, np.ndarray, np.dtype]",
          "all": "[_reconstruct, scalar, np.ndarray, np.dtype, np.dtypes.Float64DType, "
                 "np.dtypes.Int64DType, np.dtypes.Float32DType]"}


@pytest.mark.parametrize("allow", _ALLOW)
@pytest.mark.parametrize("value", _NUMPY_VALUES)
def test_weights_only_load_refuses_numpy_values_as_torch(value, allow):
    """torch.load's default (weights_only=True) refuses saved NumPy arrays and scalars with an
    UnpicklingError naming the first global to allowlist; safe_globals allows them, and
    weights_only=False loads them."""
    from numpy._core.multiarray import _reconstruct, scalar  # noqa: F401 (read by eval)

    def outcome(lib):
        buffer = io.BytesIO()
        lib.save(eval(_NUMPY_VALUES[value]), buffer)
        loaded = []
        for weights_only in (True, False):
            buffer.seek(0)
            try:
                with lib.serialization.safe_globals(eval(_ALLOW[allow])):
                    loaded.append(repr(lib.load(buffer, weights_only=weights_only)))
            except Exception as error:  # noqa: BLE001 - compared with torch's
                # (names as ember spells them; the documentation link is torch's in both)
                text = str(error).replace("generated/torch.load.html", "")
                loaded.append((type(error).__name__, text.replace("torch.", "ember.")))
        return loaded
    torch = pytest.importorskip("torch")
    assert outcome(ember) == outcome(torch)


def test_load_of_an_empty_or_cut_short_file_says_what_torch_says():
    """An empty file is torch's bare EOFError; an archive cut short (its zip directory lost)
    torch's RuntimeError, word for word."""
    torch = pytest.importorskip("torch")

    def error(lib, data):
        try:
            lib.load(io.BytesIO(data))
        except Exception as e:  # noqa: BLE001 - the type and text are what is compared
            return type(e).__name__, str(e)
        return None

    for lib in (torch, ember):
        saved = io.BytesIO()
        lib.save({"w": lib.ones(64)}, saved)
        data = saved.getvalue()
        if lib is torch:
            want = [error(torch, b""), error(torch, data[:len(data) // 2])]
        else:
            got = [error(ember, b""), error(ember, data[:len(data) // 2])]
    assert got == want and want[0] == ("EOFError", "")


_OP_NAMES = ["tanh", "add", "mul", "abs", "relu", "sigmoid", "exp", "squeeze", "masked_fill", "div",
             "pow", "sum", "mean", "max", "stack", "matmul", "cat"]


@pytest.mark.parametrize("name", _OP_NAMES)
def test_ops_pickle_and_copy_by_reference(name):
    """An op is pickled and copied as torch's functions are: by reference, so a module holding
    one (an activation attribute) keeps that very function through deepcopy and save/load."""
    def body(lib):
        f = getattr(lib, name)
        m = lib.nn.Module()
        m.act = f
        buf = io.BytesIO()
        lib.save(m, buf)
        buf.seek(0)
        return (pickle.loads(pickle.dumps(f)) is f, copy.deepcopy(f) is f, copy.copy(f) is f,
                copy.deepcopy(m).act is f, lib.load(buf, weights_only=False).act is f)
    assert same(body).value == (True,) * 5


_NAMESPACES = ("", "nn.functional", "linalg", "special", "fft")


def _public_callables(lib, namespace):
    """{name: callable} of ``lib``'s namespace (``""``: the top level), classes left out."""
    module = lib
    for part in filter(None, namespace.split(".")):
        module = getattr(module, part)
    return module, {name: getattr(module, name) for name in dir(module)
                    if not name.startswith("_") and callable(getattr(module, name))
                    and not isinstance(getattr(module, name), type)}


def _by_reference(fn) -> bool:
    try:
        return (pickle.loads(pickle.dumps(fn)) is fn and copy.copy(fn) is fn
                and copy.deepcopy(fn) is fn)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False


def test_every_tensor_method_pickles_by_reference_as_torch():
    """``pickle.dumps(Tensor.eq)`` works as torch's method descriptors do: each method that
    pickles and copies by reference in torch does in ember."""
    torch = torch_or_skip()
    differing = [name for name in sorted(dir(torch.Tensor))
                 if callable(getattr(torch.Tensor, name, None)) and hasattr(ember.Tensor, name)
                 and not isinstance(getattr(torch.Tensor, name), type)
                 and _by_reference(getattr(torch.Tensor, name))
                 and not _by_reference(getattr(ember.Tensor, name))]
    assert differing == []


@pytest.mark.parametrize("namespace", _NAMESPACES)
def test_every_public_function_pickles_by_reference_as_torch(namespace):
    """Each public function whose torch counterpart pickles and copies by reference does too
    (the in-place function forms such as ``abs_``, the ``*_like`` creators, ``mm``...)."""
    torch = torch_or_skip()
    _, torch_functions = _public_callables(torch, namespace)
    ember_module, _ = _public_callables(ember, namespace)
    differing = [name for name, fn in sorted(torch_functions.items())
                 if hasattr(ember_module, name) and _by_reference(fn)
                 and not _by_reference(getattr(ember_module, name))]
    assert differing == []
