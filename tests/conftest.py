"""Session-wide hooks: the smoke benchmark's figures close the test run's output (CI shows
them without asserting any time)."""

SMOKE_REPORT = "benchmark_smoke_report"
_reports: list[str] = []


def pytest_runtest_logreport(report):
    # NOTE: read from the test report, not from the test's config: under pytest-xdist the test
    # runs in a worker process and only its report (user_properties included) reaches here.
    if report.when == "call":
        _reports.extend(value for key, value in report.user_properties if key == SMOKE_REPORT)


def pytest_terminal_summary(terminalreporter, config):
    for report in _reports:
        terminalreporter.write_sep("=", "benchmark smoke run (figures only, not checked)")
        terminalreporter.write(report)


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def cuda_device():
    """``"cuda:0"``, served for the test module by ember's CUDA backend on ``fake_cupy``
    (a CPU stand-in for CuPy that refuses what CuPy refuses): device code paths run in CI."""
    from fake_device import installed
    with installed():
        yield "cuda:0"
