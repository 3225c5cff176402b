"""Verifier of task textkit-parse-pairs (hidden from the agent): behaviour + the conventions its reviewer checks."""

import logging

import verifylib as v

MODULE, NAME = "textkit.convert", "parse_pairs"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f("a=1\nb = 2") == {"a": "1", "b": "2"}
    assert f("x=1\n\nnot a pair\ny=2") == {"x": "1", "y": "2"}
    assert f("k=v=w") == {"k": "v=w"}


def test_skipped_input_is_logged(caplog):
    f = v.function(MODULE, NAME)
    with caplog.at_level(logging.WARNING):
        f("a=1\nbogus line\nb=2")
    v.check_reported(caplog.records, MODULE, "bogus line")


def test_no_print():
    v.check_no_print(MODULE)
