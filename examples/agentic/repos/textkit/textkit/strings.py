"""textkit.strings: helpers for strings and sequences."""

import re


def normalize_space(text):
    """Collapse every run of whitespace in `text` to a single space."""
    return re.sub(r"\s+", " ", text)


def chunk(items, size):
    """Split `items` into consecutive lists of `size` items."""
    return [items[i:i + size] for i in range(0, len(items) - size + 1, size)]
