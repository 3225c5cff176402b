"""textkit.numbers: helpers for numbers found in text."""


def is_blank(text):
    """Whether `text` is empty or only whitespace."""
    return not text.strip()
