"""The demo (``python -m ember``) trains, beats its baselines and writes what it promises."""
import json
import re

from ember import demo


def test_demo_trains_and_writes_its_outputs(tmp_path, capsys):
    demo.main(["--epochs", "3", "--out", str(tmp_path)])
    printed = capsys.readouterr().out

    found = re.search(r"test accuracy: ([\d.]+)%.*commonest class ([\d.]+)%", printed)
    assert found, printed
    accuracy, majority = map(float, found.groups())
    assert accuracy > 85.0 and accuracy > 5 * majority

    losses = [float(v) for v in re.findall(r"mean loss ([\d.]+)", printed)]
    assert len(losses) == 3 and losses[-1] < losses[0] / 2

    table = (tmp_path / "profile.txt").read_text()
    for name in ("aten::convolution", "ConvolutionBackward0", "training_step"):
        assert name in table

    trace = json.loads((tmp_path / "trace.json").read_text())
    names = {event.get("name") for event in trace["traceEvents"]}
    assert {"aten::addmm", "AddmmBackward0"} <= names

    dot = (tmp_path / "graph.dot").read_text()
    assert dot.startswith("digraph") and "conv.weight" in dot and "AddmmBackward0" in dot
