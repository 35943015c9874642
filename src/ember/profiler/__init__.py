"""``ember.profiler``: torch's profiler API for finding where time and memory go.

``profile(activities=[ProfilerActivity.CPU], schedule=..., on_trace_ready=...)`` records every
op in forward (``aten::mul``), every node in backward (``MulBackward0``) and every
``record_function`` range; read the results with ``key_averages().table()`` or write a Chrome
trace. The older ``ember.autograd.profiler.profile`` shares the same machinery.
"""
from ._events import DeviceType, EventList, FunctionEvent, FunctionEventAvg
from ._legacy import record_function
from .profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = [
    "DeviceType",
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "ProfilerAction",
    "ProfilerActivity",
    "kineto_available",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


def kineto_available() -> bool:
    """Whether torch's Kineto library backs the profiler (never: ember records in Python)."""
    return False
