"""Anomaly mode: the switches, the forward traceback of a failing node, the NaN check."""
import math
import warnings

import pytest

import ember
from ember.autograd import anomaly_mode as A

ENABLED_MSG = ("Anomaly Detection has been enabled. This mode will increase the runtime and "
               "should only be enabled for debugging.")


@pytest.fixture(autouse=True)
def anomaly_off():
    A.set_anomaly_enabled(False, True)
    yield
    A.set_anomaly_enabled(False, True)


def messages(record):
    return [str(w.message) for w in record]


class Fails(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("Some error in backward")


def build_failing_graph(x):
    out = Fails.apply(x)  # the line the forward traceback must show
    return out.sum()


# -- switches ----------------------------------------------------------------------------------
def test_detect_anomaly_warns_and_sets_the_mode_inside_only():
    with pytest.warns(UserWarning, match=ENABLED_MSG):
        cm = A.detect_anomaly(check_nan=False)
    assert not A.is_anomaly_enabled()
    with cm:
        assert A.is_anomaly_enabled() and not A.is_anomaly_check_nan_enabled()
    assert not A.is_anomaly_enabled() and A.is_anomaly_check_nan_enabled()


def test_detect_anomaly_is_not_a_decorator_in_torch_either():
    with pytest.warns(UserWarning):
        cm = A.detect_anomaly()
    with pytest.raises(TypeError, match="'detect_anomaly' object is not callable"):
        cm(lambda: None)


def test_set_detect_anomaly_as_function_and_context_manager():
    A.set_detect_anomaly(True, check_nan=False)
    assert A.is_anomaly_enabled() and not A.is_anomaly_check_nan_enabled()
    A.set_detect_anomaly(False)
    assert not A.is_anomaly_enabled() and A.is_anomaly_check_nan_enabled()
    with A.set_detect_anomaly(True):
        assert A.is_anomaly_enabled()
    assert not A.is_anomaly_enabled()


def test_mode_is_thread_local():
    import threading
    seen = []
    with A.set_detect_anomaly(True):
        t = threading.Thread(target=lambda: seen.append(A.is_anomaly_enabled()))
        t.start()
        t.join()
    assert seen == [False]


def test_exported_from_autograd():
    assert ember.autograd.detect_anomaly is A.detect_anomaly
    assert ember.autograd.set_detect_anomaly is A.set_detect_anomaly


# -- the forward traceback -----------------------------------------------------------------------
def test_failing_backward_shows_the_forward_traceback_then_reraises():
    x = ember.ones(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with A.detect_anomaly():
            out = build_failing_graph(x)
            with pytest.raises(RuntimeError, match="^Some error in backward$"):
                out.backward()
    msgs = messages(record)
    assert msgs[0] == ENABLED_MSG
    (msg,) = [m for m in msgs if m.startswith("Error detected in")]
    head, trace = msg.split("\n", 1)
    assert head == "Error detected in FailsBackward. Traceback of forward call that caused the " \
                   "error:"
    assert f'File "{__file__}"' in trace
    assert "out = Fails.apply(x)  # the line the forward traceback must show" in trace
    assert "out = build_failing_graph(x)" in trace
    assert "ember" not in trace.replace(__file__, "")  # no frames from inside ember
    # the innermost frame comes last, as in a Python traceback
    assert trace.index("build_failing_graph(x)") < trace.index("Fails.apply(x)")


def test_warning_points_at_the_user_code():
    x = ember.ones(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with A.set_detect_anomaly(True):
            out = build_failing_graph(x)
            with pytest.raises(RuntimeError):
                out.backward()
    (w,) = [w for w in record if str(w.message).startswith("Error detected")]
    assert w.filename == __file__ and w.category is UserWarning


def test_node_created_outside_anomaly_mode_has_no_forward_information():
    x = ember.ones(3, requires_grad=True)
    out = build_failing_graph(x)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with A.set_detect_anomaly(True):
            with pytest.raises(RuntimeError, match="Some error in backward"):
                out.backward()
    assert "Error detected in FailsBackward. No forward pass information available. Enable " \
           "detect anomaly during forward pass for more information." in messages(record)


def test_without_anomaly_mode_there_is_no_warning():
    x = ember.ones(3, requires_grad=True)
    out = build_failing_graph(x)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Some error in backward"):
            out.backward()
    assert not [m for m in messages(record) if m.startswith("Error detected")]


# -- NaN check -----------------------------------------------------------------------------------
def nan_backward(check_nan=True):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with A.set_detect_anomaly(True, check_nan=check_nan):
            x = ember.tensor([-1.0], requires_grad=True)
            y = x.sqrt()  # sqrt(-1) is NaN: so is its gradient
            y.sum().backward()
    return x, messages(record)


def test_nan_in_backward_raises_with_torch_message():
    with pytest.raises(RuntimeError) as info:
        nan_backward()
    assert str(info.value) == "Function 'SqrtBackward0' returned nan values in its 0th output."


def test_nan_check_names_the_output_index():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with A.set_detect_anomaly(True):
            a = ember.tensor([0.0], requires_grad=True)
            # d(a/a)/d(numerator) = 1/0 = inf; d/d(denominator) = -0/0 = NaN: output 1
            with pytest.raises(RuntimeError, match="^Function 'DivBackward0' returned nan values "
                                                   r"in its 1th output\.$"):
                (a / a).sum().backward()


def test_nan_error_also_shows_the_forward_traceback():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with A.set_detect_anomaly(True):
            x = ember.tensor([-1.0], requires_grad=True)
            y = x.sqrt()  # sqrt(-1) is NaN: so is its gradient
            with pytest.raises(RuntimeError, match="returned nan values"):
                y.sum().backward()
    (msg,) = [m for m in messages(record) if m.startswith("Error detected in SqrtBackward0")]
    assert "y = x.sqrt()  # sqrt(-1) is NaN: so is its gradient" in msg


def test_check_nan_false_lets_nan_through():
    x, _ = nan_backward(check_nan=False)
    assert math.isnan(x.grad.tolist()[0])


def test_infinite_gradients_are_not_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with A.set_detect_anomaly(True):
            x = ember.tensor([0.0], requires_grad=True)
            x.sqrt().sum().backward()
    assert x.grad.tolist() == [float("inf")]


def test_anomaly_mode_does_not_change_results():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x * x).exp().sum().backward()
    plain = x.grad.tolist()
    x.grad = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with A.detect_anomaly():
            (x * x).exp().sum().backward()
    assert x.grad.tolist() == plain


def test_matches_torch_messages():
    torch = pytest.importorskip("torch")

    def nan_message(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.set_detect_anomaly(True):
                x = lib.tensor([-1.0], requires_grad=True)
                try:
                    x.sqrt().sum().backward()
                except RuntimeError as e:
                    return str(e)

    assert nan_message(ember) == nan_message(torch)


def test_double_backward_failure_names_the_node_that_induced_it():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with A.set_detect_anomaly(True):
            x = ember.tensor([0.0], requires_grad=True)
            y = x.sqrt()  # SqrtBackward0's backward builds the node that fails below
            g, = ember.autograd.grad(y.sum(), x, create_graph=True)
            with pytest.raises(RuntimeError, match="Function 'DivBackward0' returned nan"):
                (g * 0.0).sum().backward()
    msgs = [m for m in messages(record) if "Div" in m or "Previous" in m]
    assert msgs[0].startswith("Error detected in DivBackward0. Traceback of forward call")
    assert "ember.autograd.grad(y.sum(), x, create_graph=True)" in msgs[0]
    assert msgs[1].startswith("\n\nPrevious calculation was induced by SqrtBackward0. Traceback "
                              "of forward call that induced the previous calculation:\n")
    assert "y = x.sqrt()  # SqrtBackward0's backward" in msgs[1]
