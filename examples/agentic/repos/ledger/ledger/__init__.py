"""ledger: money and date helpers; amounts are whole numbers of cents, dates ISO strings."""

from ledger.dates import parse_date
from ledger.money import round_cents, total

__all__ = [
    "parse_date",
    "round_cents",
    "total",
]
