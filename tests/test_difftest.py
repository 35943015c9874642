"""A bounded run of the differential test (tests/difftest): fixed program seeds, each run with
torch and with ember, must agree on everything a user could observe. A long run is
``python -m tests.difftest --programs N --seed S`` (docs/difftest.md)."""
from __future__ import annotations

import pytest

from difftest.__main__ import program_seed
from oracle import torch_or_skip

BASE_SEED = 0
PROGRAMS = 40
# Programs of this run that still disagree with torch, and why (the difference and its step).
KNOWN = {
    14: "x[key] = v checks memory overlap before torch's shape check",
    22: "torch's gradient of sum() is an expanded tensor, and index_put_ into it warns",
    26: "x[list] = v into an integer tensor from a float one: torch's dtype error",
}


def _cases():
    for k in range(PROGRAMS):
        marks = [pytest.mark.xfail(reason=KNOWN[k], strict=False)] if k in KNOWN else []
        yield pytest.param(program_seed(BASE_SEED, k), id=f"seed{program_seed(BASE_SEED, k)}",
                           marks=marks)


@pytest.mark.parametrize("seed", list(_cases()))
def test_program_agrees_with_torch(seed):
    torch = torch_or_skip()
    import ember
    from difftest.check import check_seed
    program, failure = check_seed(seed, ember, torch)
    assert failure is None, failure.report()
