"""Verifier of task ledger-fix-total (hidden from the agent): behaviour + the conventions its reviewer checks."""

import verifylib as v

MODULE, NAME = "ledger.money", "total"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f([100, 250]) == 350
    assert f([5]) == 5
    assert f([]) == 0


def test_unit_test():
    v.check_unit_test("tests/test_money.py", NAME, preexisting=('test_round_cents_rounds_to_nearest',))


def test_no_print():
    v.check_no_print(MODULE)
