"""The gate's statistics: pure functions over numbers (no scores, no config), so that they can be checked by hand
and run by the thousand in tests and benchmarks.

The unit of evidence is the item. A val item scored R times gives one number per skill, the mean of its repeats;
the gate tests the per-item differences (candidate − incumbent), never the (item, repeat) cells: repeats of one
item say nothing about other items, and a student whose repeats come back identical (temperature 0) would
otherwise count each answer R times.

- `sign_flip_p`: the one-sided sign-flip permutation test over items (exact; see its docstring). Under any null
  in which each item's difference is as likely to be +d as −d — the same skill sampled again, or a candidate that
  re-draws items at random (the *trade-off* null: as many items broken as fixed) — it accepts at most α.
- `stderr_z`: mean difference over its standard error across items (a normal approximation; loose when few items
  differ, which is why it is not the default).
- `chance_of_drop` / `tail_at_least`: how likely noise alone makes an item drop by more than a tolerance, and how
  likely at least k such drops are; `per_item` calls an item broken beyond noise with them.
- `items_to_clear` / `min_detectable_effect`: what a val split of a given size can detect at all.
"""

from __future__ import annotations

import functools
import math
import random
from statistics import NormalDist
from typing import Sequence

EPS = 1e-12
_NORMAL = NormalDist()
POWER = 0.8  # `min_detectable_effect`: the power at which an effect counts as detectable
MAX_LATTICE = 720  # sign_flip_p: the largest denominator handled exactly by counting
MAX_STATES = 4_000_000  # …and the largest (items × sums) it counts through


def z_of(alpha: float) -> float:
    """The one-sided normal quantile whose upper tail is `alpha`."""
    return _NORMAL.inv_cdf(1 - alpha)


def corrected_k(k: float, candidates: int, share: float = 1.0) -> float:
    """The one-sided z bar for the best of `candidates`: the quantile whose tail is (the tail of `k`) × `share`
    (a run's spending: α_t / α, `loop/spending.py`) ÷ candidates (Bonferroni). `k` itself for one candidate and
    the whole share."""
    if candidates <= 1 and share >= 1:
        return k
    return _NORMAL.inv_cdf(1 - (1 - _NORMAL.cdf(k)) * min(1.0, share) / max(1, candidates))


def sign_flip_p(diffs: Sequence[float], *, seed: int = 0, rounds: int = 4000, lattice: int | None = None) -> float:
    """One-sided p-value of mean(diffs) > 0 under random signs: the share of the 2^m sign assignments of the m
    non-zero differences whose sum is at least the observed one. Exact by counting when every difference is a
    multiple of 1/`lattice` (0/1 scores averaged over R repeats are multiples of 1/R) or when m ≤ 14; otherwise
    `rounds` seeded random assignments (p = (hits + 1) / (rounds + 1))."""
    nonzero = [d for d in diffs if abs(d) > EPS]
    if not nonzero:
        return 1.0
    m = len(nonzero)
    size = abs(nonzero[0])
    if all(abs(abs(d) - size) <= 1e-9 for d in nonzero):  # the sign test
        positive = sum(d > 0 for d in nonzero)
        return sum(math.comb(m, i) for i in range(positive, m + 1)) / 2 ** m
    if lattice:
        exact = _lattice_p(nonzero, lattice)
        if exact is not None:
            return exact
    if m <= 14:
        return _enumerated_p(nonzero)
    rng = random.Random(seed)
    observed = sum(nonzero)
    hits = sum(sum(d if rng.random() < 0.5 else -d for d in nonzero) >= observed - 1e-9 for _ in range(rounds))
    return (hits + 1) / (rounds + 1)


def _lattice_p(nonzero: list[float], lattice: int) -> float | None:
    """The exact p by counting (`_count_at_least`) when every difference sits on the 1/`lattice` grid and the
    count stays small enough; None otherwise."""
    ints = [round(d * lattice) for d in nonzero]
    if all(abs(i - d * lattice) <= 1e-6 for i, d in zip(ints, nonzero)):
        total = sum(abs(i) for i in ints)
        if lattice <= MAX_LATTICE and len(nonzero) * (2 * total + 1) <= MAX_STATES:
            return _count_at_least(ints, sum(ints)) / 2 ** len(nonzero)
    return None


def _enumerated_p(nonzero: list[float]) -> float:
    """The exact p over all 2^m signings (small m)."""
    m, observed = len(nonzero), sum(nonzero)
    hits = 0
    for mask in range(1 << m):
        total_f = sum(-d if mask >> i & 1 else d for i, d in enumerate(nonzero))
        hits += total_f >= observed - 1e-9
    return hits / (1 << m)


def _count_at_least(values: list[int], observed: int) -> int:
    """How many of the 2^m signings of the m integers `values` sum to at least `observed`. The generating function
    Π (x^-v + x^v) is kept as one integer with a slot of m + 1 bits per exponent (no count reaches 2^(m+1)), so each
    item costs one shift and one addition; the tail's slots are summed by a remainder modulo 2^(m+1) − 1 (slot
    weights are ≡ 1, and the sum stays below the modulus)."""
    width = len(values) + 1
    poly, offset = 1, 0  # slot i holds the count of signings summing to i − offset
    for v in values:
        v = abs(v)
        poly += poly << (2 * v * width)
        offset += v
    first = observed + offset
    if first <= 0:
        return 1 << len(values)
    if first > 2 * offset:
        return 0
    return (poly >> (first * width)) % ((1 << width) - 1)


def two_sided_p(diffs: Sequence[float], *, seed: int = 0, lattice: int | None = None) -> float:
    """The two-sided sign-flip p-value: twice the smaller one-sided one, at most 1."""
    up = sign_flip_p(diffs, seed=seed, lattice=lattice)
    down = sign_flip_p([-d for d in diffs], seed=seed, lattice=lattice)
    return min(1.0, 2 * min(up, down))


def stderr_z(diffs: Sequence[float]) -> tuple[float, float, float | None]:
    """(mean, standard error over items, z = mean / se); z is None when there is no spread (se 0) or one item."""
    n = len(diffs)
    if n == 0:
        return 0.0, 0.0, None
    mean = sum(diffs) / n
    if n < 2:
        return mean, 0.0, None
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
    se = math.sqrt(var / n)
    return mean, se, (mean / se if se > 0 else None)


# ---------------------------------------------------------------------------------------------- per item
def chance_of_drop(before: Sequence[float], after: Sequence[float], tolerance: float) -> float:
    """How likely noise alone makes this item's mean drop by more than `tolerance`, judged from its own repeats:
    0 when both skills' repeats agree among themselves (no noise shows: an item that passed every repeat and now
    fails every repeat broke), else the chance under one pass rate for both skills — their pooled mean — with as
    many repeats as each had (0/1 scores), or the share of ways to deal the pooled scores into the two sides
    that drop that far (other scores)."""
    if len(set(before)) <= 1 and len(set(after)) <= 1:
        return 0.0
    rb, ra = len(before), len(after)
    pooled = [*before, *after]
    if all(v in (0.0, 1.0) for v in pooled):
        return _binary_chance(rb, ra, int(sum(pooled)), tolerance)
    import itertools

    total = sum(pooled)
    deals = list(itertools.combinations(range(len(pooled)), rb))
    if len(deals) > 5000:  # far more repeats than a gate uses: the pooled-mean approximation
        deals = random.Random(len(pooled)).sample(deals, 5000)
    hits = 0
    for deal in deals:
        b = sum(pooled[i] for i in deal)
        hits += b / rb - (total - b) / ra > tolerance + EPS
    return hits / len(deals)


@functools.lru_cache(maxsize=4096)
def _binary_chance(rb: int, ra: int, passes: int, tolerance: float) -> float:
    p = passes / (rb + ra)

    def pmf(r: int, x: int) -> float:
        return math.comb(r, x) * p ** x * (1 - p) ** (r - x)

    return sum(pmf(rb, x) * pmf(ra, y) for x in range(rb + 1) for y in range(ra + 1)
               if x / rb - y / ra > tolerance + EPS)


def tail_at_least(probs: Sequence[float], k: int) -> float:
    """P(at least `k` of independent events with these probabilities happen) (the Poisson-binomial tail)."""
    if k <= 0:
        return 1.0
    dist = [1.0]
    for p in probs:
        if p <= 0:
            continue
        new = [0.0] * (len(dist) + 1)
        for i, c in enumerate(dist):
            new[i] += c * (1 - p)
            new[i + 1] += c * p
        dist = new
    return sum(dist[k:])


# ---------------------------------------------------------------------------------------------- planning
def items_to_clear(items: int, test: str, bar: float) -> int | None:
    """The fewest of `items` val items that must flip from fail to pass (on every repeat, nothing else changing)
    for the significance test to pass at `bar` (a p-value bound for `permutation`, a z bar for `stderr`); None
    when even all of them would not. Repeats do not change it: the test is over items."""
    for m in range(1, items + 1):
        if test == "permutation":
            if 0.5 ** m < bar - EPS:
                return m
        elif m == items or math.sqrt(m * (items - 1) / (items - m)) > bar + EPS:
            return m if items > 1 else None
    return None


def min_detectable_effect(items: int, repeats: int, *, z_bar: float, clear: int | None,
                          deterministic: bool = False) -> float | None:
    """The smallest mean gain (0..1) the gate detects with `POWER` on `items` val items × `repeats` repeats:
    the larger of (a) what a clean gain must flip at least (`clear` items of `items`) and (b) the gain whose z
    clears `z_bar` with that power when every answer is a coin flip (the noisiest a 0/1 student can be: per-item
    difference variance 2 · 0.25 / repeats). A deterministic student (repeats identical) has no answer noise, so
    only (a) applies. None when no gain can pass (`clear` is None or the split is empty)."""
    if items < 1 or clear is None:
        return None
    floor = clear / items
    if deterministic:
        return floor
    sd = math.sqrt(2 * 0.25 / max(1, repeats))
    return min(1.0, max(floor, (z_bar + z_of(1 - POWER)) * sd / math.sqrt(items)))


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))
