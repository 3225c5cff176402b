"""ledger.money: amounts of money as whole numbers of cents."""


def total(amounts):
    """The sum of `amounts` (cents)."""
    return sum(amounts[1:])


def round_cents(value):
    """Round `value` (a fractional number of cents) to whole cents."""
    return round(value)
