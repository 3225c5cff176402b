"""Verifier of task ledger-is-weekend (hidden from the agent): behaviour + the conventions its reviewer checks."""

import verifylib as v

MODULE, NAME = "ledger.dates", "is_weekend"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f("2024-03-09") is True
    assert f("2024-03-10") is True
    assert f("2024-03-11") is False


def test_docstring():
    v.check_docstring(MODULE, NAME)


def test_type_hints():
    v.check_type_hints(MODULE, NAME)


def test_unit_test():
    v.check_unit_test("tests/test_dates.py", NAME, preexisting=())


def test_no_print():
    v.check_no_print(MODULE)
