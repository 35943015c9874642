"""Without ml_dtypes, ember imports and names bfloat16 and the float8 types; using one says
which package to install."""
import subprocess
import sys

_PROGRAM = """
import sys
sys.modules["ml_dtypes"] = None  # as if it were not installed
import ember
assert repr(ember.bfloat16) == "ember.bfloat16"
assert ember.promote_types(ember.bfloat16, ember.float16) is ember.float32
for make in (lambda: ember.ones(2).bfloat16(), lambda: ember.zeros(2, dtype=ember.float8_e5m2),
             lambda: ember.finfo(ember.bfloat16)):
    try:
        make()
    except ModuleNotFoundError as e:
        assert "pip install ml_dtypes" in str(e), e
    else:
        raise AssertionError("no error without ml_dtypes")
assert (ember.ones(2, dtype=ember.uint16) * 2).tolist() == [2, 2]
print("ok")
"""


def test_without_ml_dtypes_the_error_names_the_package():
    out = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True,
                         env=None, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
