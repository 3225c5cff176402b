"""Verifier of task ledger-add-days (hidden from the agent): behaviour + the conventions its reviewer checks."""

import verifylib as v

MODULE, NAME = "ledger.dates", "add_days"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f("2024-02-28", 2) == "2024-03-01"
    assert f("2024-12-31", 1) == "2025-01-01"
    assert f("2024-03-10", -10) == "2024-02-29"


def test_exported():
    v.check_exported("ledger", MODULE, NAME)


def test_changelog():
    v.check_changelog(NAME)


def test_changelog_format():
    v.check_changelog_format(NAME, "Added")


def test_no_print():
    v.check_no_print(MODULE)
