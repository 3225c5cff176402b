"""One-line score histories for the terminal (`skillgit status`), drawn with Unicode block characters.

Contract: `sparkline(values, width)` returns exactly `min(len(values), width)` characters. Known values map
linearly from [lo, hi] (default: the known values' min and max) onto ▁▂▃▄▅▆▇█; a flat series draws ▄; unknown
values (None, NaN) draw `·`, so a gap is never mistaken for a low score. A series longer than `width` is
resampled into `width` equal buckets, each drawn as the mean of its known values (`·` if it has none).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

BLOCKS = "▁▂▃▄▅▆▇█"
UNKNOWN = "·"


def _finite(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def _buckets(values: Sequence[float | None], width: int) -> list[float | None]:
    if len(values) <= width:
        return list(values)
    out: list[float | None] = []
    for i in range(width):
        chunk = values[i * len(values) // width:(i + 1) * len(values) // width]
        known = [v for v in chunk if v is not None and _finite(v)]
        out.append(sum(known) / len(known) if known else None)
    return out


def sparkline(values: Sequence[float | None], width: int = 24, lo: float | None = None,
              hi: float | None = None) -> str:
    """Block-character sparkline of `values`; `lo`/`hi` pin the scale (e.g. 0 and 1 for scores)."""
    if width < 1:
        raise ValueError("sparkline width must be at least 1")
    points = _buckets(values, width)
    known = [v for v in points if v is not None and _finite(v)]
    if not known:
        return UNKNOWN * len(points)
    low = min(known) if lo is None else lo
    high = max(known) if hi is None else hi
    out = []
    for v in points:
        if v is None or not _finite(v):
            out.append(UNKNOWN)
        elif high <= low:
            out.append(BLOCKS[3])
        else:
            t = min(1.0, max(0.0, (v - low) / (high - low)))
            out.append(BLOCKS[min(len(BLOCKS) - 1, int(t * len(BLOCKS)))])
    return "".join(out)
