"""Verifier of task textkit-count-words (hidden from the agent): behaviour + the conventions its reviewer checks."""

import verifylib as v

MODULE, NAME = "textkit.stats", "count_words"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f("one two  three") == 3
    assert f("") == 0
    assert f("  a\tb\nc ") == 3


def test_type_hints():
    v.check_type_hints(MODULE, NAME)


def test_exported():
    v.check_exported("textkit", MODULE, NAME)


def test_no_print():
    v.check_no_print(MODULE)
