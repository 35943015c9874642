"""Session-wide hooks: the smoke benchmark's figures close the test run's output (CI shows
them without asserting any time)."""


def pytest_terminal_summary(terminalreporter, config):
    try:
        from test_benchmark_smoke import REPORT
    except ImportError:  # tests/ not importable by name (e.g. --import-mode=importlib)
        return
    report = config.stash.get(REPORT, None)
    if report:
        terminalreporter.write_sep("=", "benchmark smoke run (figures only, not checked)")
        terminalreporter.write(report)
