"""Verifier of task textkit-clamp (hidden from the agent): behaviour + the conventions its reviewer checks."""

import verifylib as v

MODULE, NAME = "textkit.numbers", "clamp"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f(5, 0, 3) == 3
    assert f(-1, 0, 3) == 0
    assert f(2, 0, 3) == 2
    assert f(1.5, 1, 2) == 1.5


def test_type_hints():
    v.check_type_hints(MODULE, NAME)


def test_no_print():
    v.check_no_print(MODULE)
