"""Process-level behaviour of `import ember`: glibc malloc thresholds, what loads lazily."""
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from ember._backend import _allocator

glibc = pytest.mark.skipif(sys.platform != "linux" or platform.libc_ver()[0] != "glibc",
                           reason="glibc on Linux only")


def _faults_of_repeated_allocations():
    """Page faults per round of allocating and freeing a few 2 MiB arrays."""
    import resource  # (POSIX only, as the tests using it)
    def one_round():
        a = [np.ones(1 << 19, np.float32) for _ in range(4)]
        return sum(float(x[-1]) for x in a)
    one_round()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        one_round()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20


@glibc
def test_thresholds_keep_freed_buffers_for_the_next_step():
    if os.environ.get("EMBER_MALLOC_TUNING") in ("0", "off", "false"):
        pytest.skip("switched off for this run")
    assert _allocator.tuned
    # 4 arrays of 2 MiB are 2,048 pages: untuned, glibc faults most of them in again each round.
    assert _faults_of_repeated_allocations() < 100


@glibc
def test_environment_variable_leaves_glibc_alone():
    code = ("import ember._backend._allocator as a, sys; sys.exit(0 if not a.tuned else 3)")
    env = dict(os.environ, EMBER_MALLOC_TUNING="0")
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 0
    env["EMBER_MALLOC_TUNING"] = "1"
    code = code.replace("not a.tuned", "a.tuned")
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 0


def test_import_leaves_heavy_modules_for_first_use():
    # `import ember` stays fast: nn, optim and numpy.random load when first touched.
    code = ("import sys, ember\n"
            "heavy = ('ember.nn', 'ember.optim', 'numpy.random')\n"
            "assert not [m for m in heavy if m in sys.modules], sorted(sys.modules)\n"
            "ember.manual_seed(0)\n"
            "assert 'numpy.random' not in sys.modules\n"
            "a = ember.rand(2)\n"
            "ember.manual_seed(0)\n"
            "assert ember.equal(a, ember.rand(2))\n"
            "assert ember.nn.Linear(2, 1)(a).shape == (1,)\n"
            "from ember import nn, optim\n"
            "assert nn is ember.nn and 'ember.optim' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_submodules_torch_imports_with_the_package_are_attributes_at_first_use():
    # torch's `import torch` loads torch.serialization and torch.storage, so programs write
    # `torch.serialization.safe_globals(...)` with no import of their own; a fresh process
    # whose first use is that attribute must find it.
    torch = pytest.importorskip("torch")
    for name in ("serialization", "storage"):
        assert hasattr(torch, name)
        code = (f"import ember\n"
                f"assert ember.{name}.__name__ == 'ember.{name}'\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
