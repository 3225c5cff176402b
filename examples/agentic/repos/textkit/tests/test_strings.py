from textkit.strings import normalize_space


def test_normalize_space_collapses_runs():
    assert normalize_space("a  b\t\tc") == "a b c"
