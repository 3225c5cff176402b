from ledger.money import round_cents


def test_round_cents_rounds_to_nearest():
    assert round_cents(3.4) == 3
    assert round_cents(3.6) == 4
