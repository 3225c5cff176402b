"""Verifier of task ledger-parse-amount (hidden from the agent): behaviour + the conventions its reviewer checks."""

import pytest

import verifylib as v

MODULE, NAME = "ledger.money", "parse_amount"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f("12.5") == 1250
    assert f("$1,234.50") == 123450
    assert f("7") == 700
    assert f(" 0.05 ") == 5


def test_invalid_input_raises_valueerror():
    f = v.function(MODULE, NAME)
    with pytest.raises(ValueError):
        f("twelve")
    with pytest.raises(ValueError):
        f("1.234")


def test_exported():
    v.check_exported("ledger", MODULE, NAME)


def test_no_print():
    v.check_no_print(MODULE)
