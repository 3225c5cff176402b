"""Verifier of task textkit-fix-chunk (hidden from the agent): behaviour + the conventions its reviewer checks."""

import verifylib as v

MODULE, NAME = "textkit.strings", "chunk"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
    assert f([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]
    assert f([], 3) == []
    assert f("abcde", 3) == ["abc", "de"]


def test_changelog():
    v.check_changelog(NAME)


def test_changelog_format():
    v.check_changelog_format(NAME, "Fixed")


def test_unit_test():
    v.check_unit_test("tests/test_strings.py", NAME, preexisting=('test_normalize_space_collapses_runs',))


def test_no_print():
    v.check_no_print(MODULE)
