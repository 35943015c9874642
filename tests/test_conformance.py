"""The specification's conformance cases (../shared/conformance), when that folder is present:
every case must print what PyTorch 2.13 printed."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNNER = ROOT.parent / "shared" / "conformance" / "conform.py"


@pytest.mark.skipif(not RUNNER.exists(), reason="the shared conformance cases are not here")
def test_conformance_cases_match_pytorch():
    env = {**os.environ, "EMBER_SRC": str(ROOT / "src")}
    done = subprocess.run([sys.executable, str(RUNNER), "--impl", "ember", "-j", "2"],
                          capture_output=True, text=True, env=env, timeout=900)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, f"conformance: {summary}\n{done.stdout[-3000:]}"
    assert summary.endswith(" 0 failed"), summary
