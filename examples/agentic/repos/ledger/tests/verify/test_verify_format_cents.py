"""Verifier of task ledger-format-cents (hidden from the agent): behaviour + the conventions its reviewer checks."""

import verifylib as v

MODULE, NAME = "ledger.money", "format_cents"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f(123450) == "1,234.50"
    assert f(5) == "0.05"
    assert f(100) == "1.00"
    assert f(0) == "0.00"


def test_docstring():
    v.check_docstring(MODULE, NAME)


def test_unit_test():
    v.check_unit_test("tests/test_money.py", NAME, preexisting=('test_round_cents_rounds_to_nearest',))


def test_no_print():
    v.check_no_print(MODULE)
