"""Verifier of task textkit-strip-space (hidden from the agent): behaviour + the conventions its reviewer checks."""

import verifylib as v

MODULE, NAME = "textkit.strings", "normalize_space"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f("  a  b  ") == "a b"
    assert f("a\t\tb") == "a b"
    assert f("x") == "x"
    assert f("\n") == ""


def test_changelog():
    v.check_changelog(NAME)


def test_no_print():
    v.check_no_print(MODULE)
