"""Tables of error cases: each runs on ember and (in the oracle test) on torch 2.13.

A test module lists its ``CASES`` and takes its tests from :func:`error_tests`::

    test_case_ids_are_unique, test_ember_error, test_torch_error = error_tests(CASES)

The expected messages are torch's ("torch." stands for "ember." on ember's side).
``prefix=True`` compares only the start of the message (torch's argument-parser errors go on
to list every overload); ``xfail`` names a known ember bug (strict, ember's test only).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest

import ember


@dataclass(frozen=True)
class E:
    """One error case: ``fn(m)`` with ``m`` ember or torch must raise ``exc(message)``."""

    id: str
    fn: object
    exc: type
    message: str
    xfail: str = ""
    prefix: bool = False


def raised(fn, m):
    """The exception ``fn(m)`` raises (warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as info:
            fn(m)
    return info.value


def check(case, err, expected):
    text = str(err)
    if case.prefix:
        text = text[:len(expected)]
    assert (type(err).__name__, text) == (case.exc.__name__, expected)


def _params(cases, for_ember):
    return [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(reason=c.xfail, strict=True)]
                         if c.xfail and for_ember else []) for c in cases]


def error_tests(cases):
    """The three tests of a case table (new function objects for each calling module)."""
    def test_case_ids_are_unique():
        ids = [c.id for c in cases]
        assert len(ids) == len(set(ids))

    @pytest.mark.parametrize("case", _params(cases, for_ember=True))
    def test_ember_error(case):
        """ember raises torch's exception type with torch's message (torch. -> ember.)."""
        check(case, raised(case.fn, ember), case.message.replace("torch.", "ember."))

    @pytest.mark.parametrize("case", _params(cases, for_ember=False))
    def test_torch_error(case):
        """The expected text is still what torch 2.13 says (guards the table itself)."""
        torch = pytest.importorskip("torch")
        check(case, raised(case.fn, torch), case.message)

    return test_case_ids_are_unique, test_ember_error, test_torch_error
