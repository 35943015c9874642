"""Smaller public names torch users import, against torch: torch.nn.modules.utils (``_pair``,
``consume_prefix_in_state_dict_if_present``), torch.utils.hooks, torch.random's generator
names, torch.testing.assert_allclose, torch.utils.checkpoint's helpers."""
from __future__ import annotations

import collections
import importlib

import pytest

from tests.oracle import error_of, same


def test_ntuple_helpers():
    def body(torch):
        u = importlib.import_module(f"{torch.__name__}.nn.modules.utils")
        return [u._single(3), u._pair(3), u._pair([1, 2]), u._pair("ab"), u._triple((1, 2, 3)),
                u._quadruple(0), u._ntuple(5)(1), u._ntuple(2, "x")(7), u._pair.__name__,
                u._reverse_repeat_tuple((1, 2, 3), 2), u._list_with_default([1, None], (5, 6, 7)),
                u._list_with_default(4, [1]), error_of(lambda: u._list_with_default([1, 2], [3]))]
    same(body)


def test_consume_prefix_in_state_dict_if_present():
    """A DataParallel checkpoint's keys without "module.", its metadata's too (the wrapped
    module's own entry, keyed "module", becomes the root's)."""
    def body(torch):
        u = importlib.import_module(f"{torch.__name__}.nn.modules.utils")
        sd = collections.OrderedDict([("module.a", 1), ("b", 2), ("module.c.d", 3)])
        sd._metadata = collections.OrderedDict([("", {"v": 1}), ("module", {"v": 2}),
                                                ("module.c", {"v": 3}), ("other", {"v": 4})])
        u.consume_prefix_in_state_dict_if_present(sd, "module.")
        plain = {"module.x": 1, "y": 2}
        u.consume_prefix_in_state_dict_if_present(plain, "module.")
        return list(sd.items()), list(sd._metadata.items()), plain
    same(body)


def test_utils_hooks():
    class Hook:
        def __call__(self, grad):
            return grad

        def __repr__(self):
            return "<a hook>"

    def body(torch):
        hooks = importlib.import_module(f"{torch.__name__}.utils.hooks")
        x = torch.ones(2, requires_grad=True)
        handle = x.register_hook(Hook())
        marked = hooks.unserializable_hook(Hook())
        x.register_hook(marked)
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            hooks.warn_if_has_hooks(x)
        handle.remove()
        return (isinstance(handle, hooks.RemovableHandle), marked.__torch_unserializable__,
                [str(w.message) for w in caught])
    same(body)


def test_random_default_generator():
    same(lambda torch: torch.random.default_generator is torch.default_generator)


@pytest.mark.parametrize("case", [
    "t.ones(2), [1, 1]", "t.ones(2), t.tensor([1, 1.1])", "t.ones(2), t.ones(2).double()",
    "1.0, 1.01", "1.0, 1.00001", "t.tensor([1.0, float('nan')]), [1.0, float('nan')]",
    "t.tensor([1.0, float('nan')]), [1.0, float('nan')], equal_nan=False",
    "t.ones(2).half(), t.ones(2).half() + 0.0005", "t.ones(2), t.ones(2) + 0.5, rtol=0, atol=1",
    "t.ones(2), t.ones(2) + 0.5, rtol=0", "t.ones(2), t.ones(3)",
    "t.ones(2), t.ones(2) * 2, msg='custom'", "[1, 2], [1, 2]",
])
def test_assert_allclose(case):
    """Deprecated (a FutureWarning each call) and looser than assert_close: its own default
    tolerances, no dtype check, NaNs equal by default."""
    def body(torch):
        return eval(f"t.testing.assert_allclose({case})", {"t": torch})
    same(body)


def test_checkpoint_helpers():
    def body(torch):
        c = importlib.import_module(f"{torch.__name__}.utils.checkpoint")
        x = torch.ones(2, requires_grad=True)
        detached = c.detach_variable((x, 3, torch.zeros(1)))
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            c.check_backward_validity([torch.ones(1), 2])
            c.check_backward_validity([x])
        contexts = c.noop_context_fn()
        return (detached, detached[0] is x, detached[0]._base is None, error_of(
            lambda: c.detach_variable([x])), [str(w.message) for w in caught],
            [type(m).__name__ for m in contexts], issubclass(c.CheckpointError, RuntimeError))
    same(body)
