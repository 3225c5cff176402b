"""textkit: small text helpers."""

from textkit.numbers import is_blank
from textkit.strings import chunk, normalize_space

__all__ = ["chunk", "is_blank", "normalize_space"]
