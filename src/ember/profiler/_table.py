"""torch's profiler summary table, column for column (with the device columns when events
carry GPU time)."""
from __future__ import annotations

import math

from ._events import _format_memory, _format_time, _format_time_share

_COLUMN = 12
_SPACING = 2
_FLOP_UNITS = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]


class _Layout:
    """Accumulates the row format, the separator line and the line length column by column."""

    def __init__(self):
        self.row_format = ""
        self.separator = ""
        self.length = -_SPACING

    def add(self, width, align=">"):
        self.row_format += "{: " + align + str(width) + "}" + " " * _SPACING
        self.separator += "-" * width + " " * _SPACING
        self.length += width + _SPACING


def _sorted(events, sort_by):
    from ._events import EventList
    attr = sort_by.replace("cuda", "device").replace("xpu", "device").replace(
        "privateuse1", "device")
    # NOTE: an unknown key raises AttributeError from getattr, exactly as in torch.
    return EventList(sorted(events, key=lambda evt: getattr(evt, attr), reverse=True),
                     use_device=events._use_device, profile_memory=events._profile_memory,
                     with_flops=events._with_flops)


def _in_unit(time_us, unit):
    if unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if unit == "us":
        return f"{time_us:.3f}us"
    return _format_time(time_us)


def _trim_path(path, width):
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def _flops_scale(events):
    raw = [evt.flops for evt in events if evt.flops and evt.flops > 0]
    if not raw:
        return None, None
    log_flops = max(0, min(math.log10(min(raw)) / 3, float(len(_FLOP_UNITS) - 1)))
    return pow(10, math.floor(log_flops) * -3.0), _FLOP_UNITS[int(log_flops)]


def _columns(events, profile_memory, widths, device_name):
    """Headers and layout: name, the CPU (and device) columns, memory, calls, shapes, source,
    flops."""
    name_w, shapes_w, src_w, flops_header = widths
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if device_name is not None:
        headers += [f"Self {device_name}", f"Self {device_name} %", f"{device_name} total",
                    f"{device_name} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    layout = _Layout()
    layout.add(name_w)
    for _ in headers[1:]:
        layout.add(_COLUMN)
    if shapes_w is not None:
        headers.append("Input Shapes")
        layout.add(shapes_w)
    if src_w is not None:
        headers.append("Source Location")
        layout.add(src_w, "<")
    if flops_header is not None:
        headers.append(f"Total {flops_header}")
        layout.add(_COLUMN)
    return headers, layout


def _widths(events, max_name, max_shapes, max_src):
    name_w = max(len(evt.key) for evt in events) + 4
    if max_name is not None:
        name_w = min(name_w, max_name)
    shapes_w = None
    if any(evt.input_shapes is not None and len(evt.input_shapes) > 0 for evt in events):
        shapes_w = max(len(str(evt.input_shapes)) for evt in events) + 4
        if max_shapes is not None:
            shapes_w = min(shapes_w, max_shapes)
    src_w = None
    stacks = [evt.stack for evt in events if evt.stack]
    if stacks:
        src_w = max(max(len(entry) for entry in stack) for stack in stacks) + 4
        if max_src is not None:
            src_w = min(src_w, max_src)
    return name_w, shapes_w, src_w


def _row(evt, total, opts):
    """The cells of one event's row (percentages are stored on the event, as torch does)."""
    name = evt.key
    max_name = opts["max_name"]
    if max_name is not None and len(name) >= max_name - 3:
        name = name[:max_name - 3] + "..."
    unit = opts["time_unit"]
    evt.self_cpu_percent = _format_time_share(evt.self_cpu_time_total, total)
    evt.total_cpu_percent = _format_time_share(evt.cpu_time_total, total)
    row = [name, evt.self_cpu_percent, _in_unit(evt.self_cpu_time_total, unit),
           evt.total_cpu_percent, _in_unit(evt.cpu_time_total, unit),
           _in_unit(evt.cpu_time, unit)]
    if opts["device_total"] is not None:
        evt.total_device_percent = _format_time_share(evt.self_device_time_total,
                                                      opts["device_total"])
        row += [_in_unit(evt.self_device_time_total, unit), evt.total_device_percent,
                _in_unit(evt.device_time_total, unit), _in_unit(evt.device_time, unit)]
    if opts["profile_memory"]:
        row += [_format_memory(evt.cpu_memory_usage), _format_memory(evt.self_cpu_memory_usage)]
    row.append(evt.count)
    if opts["shapes_w"] is not None:
        row.append(str(evt.input_shapes)[:opts["shapes_w"]])
    if opts["src_w"] is not None:
        row.append(_trim_path(evt.stack[0], opts["src_w"]) if evt.stack else "")
    if opts["flops_scale"] is not None:
        row.append("--" if not evt.flops or evt.flops <= 0
                   else f"{evt.flops * opts['flops_scale']:8.3f}")
    return row


def build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, with_flops=False,
                profile_memory=False, top_level_events_only=False, time_unit=None):
    """Print a summary of events (FunctionEvents or FunctionEventAvgs) as torch does."""
    if len(events) == 0:
        return ""
    if sort_by is not None:
        events = _sorted(events, sort_by)
    name_w, shapes_w, src_w = _widths(events, max_name_column_width, max_shapes_column_width,
                                      max_src_column_width)
    scale, flops_header = _flops_scale(events) if with_flops else (None, None)
    use_device = getattr(events[0], "use_device", None)
    has_device_time = any(evt.self_device_time_total > 0 for evt in events)
    if not use_device and has_device_time:
        raise RuntimeError("use_device is None, but there is device performance data.")
    device_name = use_device.upper() if has_device_time else None
    headers, layout = _columns(events, profile_memory, (name_w, shapes_w, src_w, flops_header),
                               device_name)
    total = sum(evt.self_cpu_time_total for evt in events)
    device_total = (sum(evt.self_device_time_total for evt in events) if has_device_time
                    else None)
    opts = {"max_name": max_name_column_width, "time_unit": time_unit,
            "profile_memory": profile_memory, "shapes_w": shapes_w, "src_w": src_w,
            "flops_scale": scale, "device_total": device_total}
    lines = []
    if header is not None:
        lines += ["=" * layout.length, header]
    if top_level_events_only:
        lines += ["=" * layout.length, "This report only display top-level ops statistics"]
    lines += [layout.separator, layout.row_format.format(*headers), layout.separator]
    shown = 0
    for evt in events:
        if shown == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        shown += 1
        lines.append(layout.row_format.format(*_row(evt, total, opts)))
        if src_w is not None:
            blank = [""] * (len(headers) - 1)
            for entry in evt.stack[1:]:
                lines.append(layout.row_format.format(*(blank + [_trim_path(entry, src_w)])))
            lines.append(layout.row_format.format(*(blank + [""])))
    lines.append(layout.separator)
    lines.append(f"Self CPU time total: {_in_unit(total, time_unit)}")
    if device_total is not None:
        lines.append(f"Self {device_name} time total: {_in_unit(device_total, time_unit)}")
    return "".join(line + "\n" for line in lines)
