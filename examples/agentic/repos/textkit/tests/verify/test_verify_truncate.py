"""Verifier of task textkit-truncate (hidden from the agent): behaviour + the conventions its reviewer checks."""

import pytest

import verifylib as v

MODULE, NAME = "textkit.strings", "truncate"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f("hello world", 8) == "hello..."
    assert f("hi", 8) == "hi"
    assert f("abcdef", 6) == "abcdef"
    assert f("abcdefg", 6) == "abc..."


def test_invalid_input_raises_valueerror():
    f = v.function(MODULE, NAME)
    with pytest.raises(ValueError):
        f("hello", 2)


def test_no_print():
    v.check_no_print(MODULE)
