"""Verifier of task ledger-round-half-up (hidden from the agent): behaviour + the conventions its reviewer checks."""

import verifylib as v

MODULE, NAME = "ledger.money", "round_cents"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f(2.5) == 3
    assert f(-2.5) == -3
    assert f(0.5) == 1
    assert f(3.4) == 3
    assert f(3.6) == 4


def test_changelog():
    v.check_changelog(NAME)


def test_changelog_format():
    v.check_changelog_format(NAME, "Changed")


def test_unit_test():
    v.check_unit_test("tests/test_money.py", NAME, preexisting=('test_round_cents_rounds_to_nearest',))


def test_no_print():
    v.check_no_print(MODULE)
