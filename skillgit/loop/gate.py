"""Scoring a skill on a split, and the gate's decision.

`Evaluator.score` runs the student on every item of a split and caches the result by the skill's git blob id
(plus split and sample), so an identical skill is never scored twice in a run; an item whose run failed (API error
after retries, scorer crash) is *unknown*, retried `retries` more times first, and never counted as a failure.
`decide` compares on the items both skills were scored on, and only when they cover at least
`evaluation.min_val_coverage` of the split (else it rejects: it cannot judge); it accepts a candidate only if it is
strictly better than the current skill on the selection split (plus `gate_margin`); `gate: paired` also asks a
one-sided paired permutation test over the per-item scores to clear `paired_alpha`, for noisy students. Every
reason names the coverage when an item was left unscored.
"""

from __future__ import annotations

import hashlib
import random
import threading
from dataclasses import dataclass, field
from typing import Callable

from skillgit.config import EvaluationCfg
from skillgit.llm.base import Student
from skillgit.loop.stages import Scorer, rollout
from skillgit.records import Coverage
from skillgit.types import Item, Trajectory


def blob_id(text: str) -> str:
    """The git blob id of `text` (what `git hash-object` prints), computed without touching git."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


@dataclass
class SplitScore:
    """Per-item (hard, soft) over the items that could be scored; `errors` lists the unknown ones."""

    split: str
    blob: str
    per_item: dict[str, tuple[float, float]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    trajectories: list[Trajectory] = field(default_factory=list)

    def item_metric(self, item_id: str, metric: str, mixed_weight: float = 0.5) -> float:
        hard, soft = self.per_item[item_id]
        if metric == "hard":
            return hard
        if metric == "soft":
            return soft
        return mixed_weight * hard + (1.0 - mixed_weight) * soft

    def mean(self, metric: str, mixed_weight: float = 0.5, ids: set[str] | None = None) -> float:
        keys = [k for k in self.per_item if ids is None or k in ids]
        if not keys:
            return 0.0
        return sum(self.item_metric(k, metric, mixed_weight) for k in keys) / len(keys)

    def to_record(self) -> dict:
        return {"split": self.split, "blob": self.blob,
                "per_item": {k: [round(h, 4), round(s, 4)] for k, (h, s) in sorted(self.per_item.items())},
                "errors": dict(sorted(self.errors.items()))}


class Evaluator:
    def __init__(self, student: Student, scorer: Scorer, splits: dict[str, list[Item]], *, workers: int,
                 repeats: int = 1, retries: int = 0):
        self.student = student
        self.scorer = scorer
        self.splits = splits
        self.workers = workers
        self.repeats = max(1, repeats)
        self.retries = max(0, retries)
        self.retried = 0  # unknown item runs tried again
        self._cache: dict[tuple[str, str], SplitScore] = {}
        self._lock = threading.Lock()
        self.cache_hits = 0

    def score(self, skill: str, split: str, on_progress: Callable[[int, int], None] | None = None) -> SplitScore:
        """Mean over `repeats` samples per item; errors (unknown runs) are excluded, not counted as zero."""
        key = (blob_id(skill), split)
        with self._lock:
            if key in self._cache:
                self.cache_hits += 1
                return self._cache[key]
        items = self.splits[split]
        result = SplitScore(split, key[0])
        sums: dict[str, list[float]] = {}
        for sample in range(self.repeats):
            trajs = rollout(self.student, skill, items, self.scorer, workers=self.workers, sample=sample,
                            on_progress=on_progress)
            # Unknown runs are tried again before anything is decided on them (errors are never cached).
            for _ in range(self.retries):
                failed = [i for i, t in enumerate(trajs) if not t.ok]
                if not failed:
                    break
                with self._lock:
                    self.retried += len(failed)
                again = rollout(self.student, skill, [items[i] for i in failed], self.scorer, workers=self.workers,
                                sample=sample)
                for i, t in zip(failed, again):
                    trajs[i] = t
            for t in trajs:
                if t.ok:
                    acc = sums.setdefault(t.item_id, [0.0, 0.0, 0])
                    acc[0] += t.score.hard
                    acc[1] += t.score.soft
                    acc[2] += 1
                else:
                    result.errors[t.item_id] = t.error or "unknown"
            if sample == 0:
                result.trajectories = trajs
        for item_id, (hard, soft, n) in sums.items():
            result.per_item[item_id] = (hard / n, soft / n)
            result.errors.pop(item_id, None)
        with self._lock:
            self._cache[key] = result
        return result


@dataclass(frozen=True)
class GateResult:
    accept: bool
    before: float
    after: float
    reason: str
    p_value: float | None = None
    coverage: Coverage | None = None

    @property
    def delta(self) -> float:
        return self.after - self.before


def paired_p_value(diffs: list[float], seed: int, rounds: int = 2000) -> float:
    """One-sided sign-flip permutation test of mean(diffs) > 0 (exact when there are few non-zero diffs)."""
    nonzero = [d for d in diffs if abs(d) > 1e-12]
    if not nonzero:
        return 1.0
    observed = sum(nonzero)
    n = len(nonzero)
    if n <= 14:
        count = 0
        for mask in range(1 << n):
            total = sum(-d if mask >> i & 1 else d for i, d in enumerate(nonzero))
            count += total >= observed - 1e-12
        return count / (1 << n)
    rng = random.Random(seed)
    count = sum(sum(d if rng.random() < 0.5 else -d for d in nonzero) >= observed - 1e-12 for _ in range(rounds))
    return (count + 1) / (rounds + 1)


def coverage(before: SplitScore, after: SplitScore, items: list[str] | None = None) -> Coverage:
    """The items both skills were scored on, out of the split's items (`items`; default: all either saw)."""
    universe = list(items) if items is not None else sorted(set(before.per_item) | set(after.per_item)
                                                            | set(before.errors) | set(after.errors))
    common = set(before.per_item) & set(after.per_item)
    return Coverage(sum(1 for i in universe if i in common), len(universe),
                    tuple(i for i in universe if i not in common))


def decide(cfg: EvaluationCfg, before: SplitScore, after: SplitScore, *, seed: int = 0,
           items: list[str] | None = None) -> GateResult:
    """Compare on the items both skills could be scored on, if they cover enough of the split (`items`)."""
    cov = coverage(before, after, items)
    common = set(before.per_item) & set(after.per_item)
    b = before.mean(cfg.gate_metric, cfg.mixed_weight, common)
    a = after.mean(cfg.gate_metric, cfg.mixed_weight, common)
    note = "" if cov.complete else f" ({cov.describe()})"
    if not common:
        return GateResult(False, b, a, "cannot judge: no validation item could be scored for both skills", None, cov)
    if cov.fraction + 1e-12 < cfg.min_val_coverage:
        return GateResult(False, b, a, f"cannot judge: only {cov.describe()} for both skills (evaluation."
                                       f"min_val_coverage is {cfg.min_val_coverage:.0%})", None, cov)
    result = _decide(cfg, before, after, common, b, a, seed)
    return GateResult(result.accept, b, a, result.reason + note, result.p_value, cov)


def _decide(cfg: EvaluationCfg, before: SplitScore, after: SplitScore, common: set[str], b: float, a: float,
            seed: int) -> GateResult:
    if not cfg.use_gate:
        return GateResult(True, b, a, "gate disabled (evaluation.use_gate=false)")
    if a <= b + cfg.gate_margin:
        margin = f" + margin {cfg.gate_margin:g}" if cfg.gate_margin else ""
        word = "a tie" if abs(a - b) < 1e-12 else ("worse" if a < b else "not better enough")
        return GateResult(False, b, a, f"{word} on {before.split} {cfg.gate_metric}: {a:.4f} vs {b:.4f}{margin}")
    if cfg.gate == "paired":
        diffs = [after.item_metric(k, cfg.gate_metric, cfg.mixed_weight)
                 - before.item_metric(k, cfg.gate_metric, cfg.mixed_weight) for k in sorted(common)]
        p = paired_p_value(diffs, seed)
        if p >= cfg.paired_alpha:
            return GateResult(False, b, a, f"better on average but not significant (paired p={p:.3f} ≥ "
                                           f"{cfg.paired_alpha:g})", p)
        return GateResult(True, b, a, f"better on {before.split} (paired p={p:.3f})", p)
    return GateResult(True, b, a, f"better on {before.split} {cfg.gate_metric}: {a:.4f} vs {b:.4f}")
