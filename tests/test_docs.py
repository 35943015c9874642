"""The Python examples in README.md and docs/guide.md run, and print what their comments say.

A ``print(...)`` line's output is written in the comment after it (``print(x)  # tensor(...)``)
or, when it spans lines, in the comment lines right below it. A block whose comment starts
``# SomeError: message`` must raise that error with that message.
"""
from __future__ import annotations

import contextlib
import io
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ["README.md", "docs/guide.md"]
_ERROR = re.compile(r"^# (\w+Error): (.*)$")


def python_blocks(text):
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def expected_output(block):
    """What the block's comments say it prints, line by line."""
    lines = block.splitlines()
    out = []
    for i, line in enumerate(lines):
        if not line.lstrip().startswith("print("):
            continue
        code, _, comment = line.partition("  #")
        if comment.strip():
            out.append(comment.strip())
            continue
        for follow in lines[i + 1:]:
            if not follow.startswith("# "):
                break
            out.append(follow[2:])
    return out


def expected_error(block):
    for line in block.splitlines():
        m = _ERROR.match(line)
        if m:
            return m.groups()
    return None


def cases():
    for doc in DOCS:
        blocks = python_blocks((ROOT / doc).read_text())
        yield pytest.param(doc, blocks, id=doc)


@pytest.mark.parametrize("doc, blocks", cases())
def test_examples_run_and_print_what_they_say(doc, blocks, tmp_path, monkeypatch):
    assert blocks, f"{doc} has no python examples"
    monkeypatch.chdir(tmp_path)
    scope = {}
    for block in blocks:
        if not block.lstrip().startswith("import") and "torch" not in scope:
            exec("import ember as torch", scope)  # noqa: S102 - the README's own convention
        printed = io.StringIO()
        error = expected_error(block)
        with contextlib.redirect_stdout(printed):
            if error is None:
                exec(block, scope)  # noqa: S102 - the documentation's examples
            else:
                with pytest.raises(Exception) as raised:
                    exec(block, scope)  # noqa: S102
                assert type(raised.value).__name__ == error[0]
                message = error[1].rstrip(" .")
                assert str(raised.value).startswith(message.removesuffix("; ...")), block
        lines = [line.rstrip() for line in printed.getvalue().splitlines()]
        want = [line.rstrip() for line in expected_output(block)]
        assert lines == want, f"{doc} example:\n{block}"
