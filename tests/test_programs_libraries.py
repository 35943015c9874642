"""What libraries built on torch (captum, einops, torchdiffeq, vit-pytorch) need from it at
import and in their calls, each against torch (see docs/programs.md)."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import typing

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
