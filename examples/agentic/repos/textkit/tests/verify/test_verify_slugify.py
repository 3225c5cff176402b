"""Verifier of task textkit-slugify (hidden from the agent): behaviour + the conventions its reviewer checks."""

import pytest

import verifylib as v

MODULE, NAME = "textkit.strings", "slugify"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f("Hello, World!") == "hello-world"
    assert f("  Many   spaces -- here ") == "many-spaces-here"
    assert f("ABC 123") == "abc-123"


def test_invalid_input_raises_valueerror():
    f = v.function(MODULE, NAME)
    with pytest.raises(ValueError):
        f("!!!")
    with pytest.raises(ValueError):
        f("")


def test_docstring():
    v.check_docstring(MODULE, NAME)


def test_exported():
    v.check_exported("textkit", MODULE, NAME)


def test_no_print():
    v.check_no_print(MODULE)
