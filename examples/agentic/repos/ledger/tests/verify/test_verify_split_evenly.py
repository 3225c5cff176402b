"""Verifier of task ledger-split-evenly (hidden from the agent): behaviour + the conventions its reviewer checks."""

import pytest

import verifylib as v

MODULE, NAME = "ledger.money", "split_evenly"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f(100, 3) == [34, 33, 33]
    assert f(10, 5) == [2, 2, 2, 2, 2]
    assert f(5, 2) == [3, 2]
    assert f(2, 4) == [1, 1, 0, 0]


def test_invalid_input_raises_valueerror():
    f = v.function(MODULE, NAME)
    with pytest.raises(ValueError):
        f(100, 0)


def test_type_hints():
    v.check_type_hints(MODULE, NAME)


def test_no_print():
    v.check_no_print(MODULE)
