"""Verifier of task ledger-parse-rows (hidden from the agent): behaviour + the conventions its reviewer checks."""

import logging

import verifylib as v

MODULE, NAME = "ledger.importer", "parse_rows"


def test_behaviour():
    f = v.function(MODULE, NAME)
    assert f("2024-03-05;12.50\n2024-03-06;3") == [("2024-03-05", 1250), ("2024-03-06", 300)]
    assert f("") == []


def test_skipped_input_is_logged(caplog):
    f = v.function(MODULE, NAME)
    with caplog.at_level(logging.WARNING):
        f("2024-03-05;1\nbogus;row")
    v.check_reported(caplog.records, MODULE, "bogus;row")


def test_exported():
    v.check_exported("ledger", MODULE, NAME)


def test_no_print():
    v.check_no_print(MODULE)
