"""Verifier of task textkit-parse-bool (hidden from the agent): behaviour + the conventions its reviewer checks."""

import pytest

import verifylib as v

MODULE, NAME = "textkit.convert", "parse_bool"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f("yes") is True
    assert f(" TRUE ") is True
    assert f("On") is True
    assert f("1") is True
    assert f("no") is False
    assert f("Off") is False
    assert f("0") is False


def test_invalid_input_raises_valueerror():
    f = v.function(MODULE, NAME)
    with pytest.raises(ValueError):
        f("maybe")
    with pytest.raises(ValueError):
        f("")


def test_changelog():
    v.check_changelog(NAME)


def test_changelog_format():
    v.check_changelog_format(NAME, "Added")


def test_no_print():
    v.check_no_print(MODULE)
