"""ledger.dates: dates as ISO strings (YYYY-MM-DD)."""

from datetime import date


def parse_date(text):
    """The `datetime.date` of an ISO date string."""
    return date.fromisoformat(text.strip())
