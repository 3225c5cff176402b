"""Scoring a skill on a split, and the gate's decision.

Scoring: `Evaluator.score` runs the student on every item of a split and caches the result by the skill's git blob
id (plus split), so an identical skill is never scored twice in a run; an item whose run failed (API error after
retries, scorer crash) is *unknown*, retried `retries` more times first, and never counted as a failure. With
`repeats > 1` every (item, repeat) score is kept in `SplitScore.samples` (`per_item` holds their mean), so the
significance test sees the real sampling variance, not only per-item means.

Deciding: `decide(cfg, before, after, *, seed, items, train_before, train_after)` compares on the val items both
skills were scored on, and only when they cover at least `evaluation.min_val_coverage` of the split (`items`);
below that it rejects: it cannot judge. `evaluation.gate` names the checks (modes), all of which must pass:
- `strict`: mean(after) > mean(before) + `gate_margin`;
- `significance`: the paired mean Δ over items × repeats, less `gate_margin`, exceeds `gate_k` standard errors
  (`gate_test: stderr`), or its one-sided sign-flip permutation p-value is below `paired_alpha`
  (`gate_test: permutation`);
- `paired` (the older name, kept): `strict` and the permutation test;
- `per_item`: no val item's score drops by more than `item_tolerance`, and no item scored before is unknown now
  (SkillOpt #174: a rising mean must not hide an item going pass → fail);
- `two_split`: the step's own train batch, re-scored with the candidate (`train_after`), is not worse than it
  was with the current skill (`train_before`); not applicable to a candidate without one (slow update, …).
`per_item` and `two_split` are guards: without `strict`, `significance` or `paired` among the modes, `strict` is
implied, so a candidate is never accepted merely for not being worse. Every check runs and is recorded
(`GateResult.checks`, each with its numbers); `reason` is one line naming the decisive check (the first that
failed, else the improvement check) and the coverage. bench/gate_calibration.py measures the modes.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Callable, Mapping

from skillgit.config import EvaluationCfg
from skillgit.executor import Executor
from skillgit.llm.base import Student
from skillgit.llm.metering import bind_stage
from skillgit.loop.stages import Scorer, rollout_samples
from skillgit.records import Coverage
from skillgit.types import Item, Trajectory

IMPROVEMENT_CHECKS = ("strict", "significance", "paired")  # the checks that ask "is it better?"
_EPS = 1e-12


def blob_id(text: str) -> str:
    """The git blob id of `text` (what `git hash-object` prints), computed without touching git."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def metric_of(hard: float, soft: float, metric: str, mixed_weight: float = 0.5) -> float:
    if metric == "hard":
        return hard
    if metric == "soft":
        return soft
    return mixed_weight * hard + (1.0 - mixed_weight) * soft


@dataclass
class SplitScore:
    """Per-item (hard, soft) over the items that could be scored; `errors` lists the unknown ones. `samples` holds
    each repeat's (hard, soft) for items scored more than once; `per_item` is always their mean."""

    split: str
    blob: str
    per_item: dict[str, tuple[float, float]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    trajectories: list[Trajectory] = field(default_factory=list)
    samples: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # agentic: setup / agent / verify, summed over runs

    def item_metric(self, item_id: str, metric: str, mixed_weight: float = 0.5) -> float:
        hard, soft = self.per_item[item_id]
        return metric_of(hard, soft, metric, mixed_weight)

    def item_samples(self, item_id: str, metric: str, mixed_weight: float = 0.5) -> list[float]:
        """The item's score per repeat (one value when it was scored once)."""
        rows = self.samples.get(item_id)
        if not rows:
            return [self.item_metric(item_id, metric, mixed_weight)]
        return [metric_of(h, s, metric, mixed_weight) for h, s in rows]

    def mean(self, metric: str, mixed_weight: float = 0.5, ids: set[str] | None = None) -> float:
        keys = [k for k in self.per_item if ids is None or k in ids]
        if not keys:
            return 0.0
        return sum(self.item_metric(k, metric, mixed_weight) for k in keys) / len(keys)

    def to_record(self) -> dict:
        record: dict[str, Any] = {
            "split": self.split, "blob": self.blob,
            "per_item": {k: [round(h, 4), round(s, 4)] for k, (h, s) in sorted(self.per_item.items())},
            "errors": dict(sorted(self.errors.items()))}
        if self.seconds:
            record["seconds"] = dict(sorted(self.seconds.items()))
        if self.samples:
            record["samples"] = {k: [[round(h, 4), round(s, 4)] for h, s in rows]
                                 for k, rows in sorted(self.samples.items())}
        return record

    @classmethod
    def from_trajectories(cls, split: str, blob: str, trajectories: list[Trajectory]) -> SplitScore:
        """The score of runs already made (one sample each), e.g. a step's train batch for `two_split`."""
        result = cls(split, blob, trajectories=list(trajectories))
        for t in trajectories:
            if t.ok and t.score is not None:
                result.per_item[t.item_id] = (t.score.hard, t.score.soft)
                result.errors.pop(t.item_id, None)
            elif t.item_id not in result.per_item:
                result.errors[t.item_id] = t.error or "unknown"
        return result


class Evaluator:
    """Scores skills on named splits (`score`) or on a given list of items (`score_items`, e.g. a step's train
    batch for `two_split`), `repeats` samples per item."""

    def __init__(self, student: Student, scorer: Scorer, splits: dict[str, list[Item]], *, workers: int,
                 repeats: int = 1, retries: int = 0, executor: Executor | None = None):
        self.student = student
        self.scorer = scorer
        self.splits = splits
        self.workers = workers
        self.executor = executor  # None: the thread pool
        self.repeats = max(1, repeats)
        self.retries = max(0, retries)
        self.retried = 0  # unknown item runs tried again
        self._cache: dict[tuple[str, ...], SplitScore] = {}
        self._lock = threading.Lock()
        self.cache_hits = 0
        self._unbooked: dict[str, float] = {}  # phase seconds not yet taken into the run's progress

    def take_seconds(self) -> dict[str, float]:
        """The setup / agent / verify seconds of every rollout made since the last call (retries included)."""
        with self._lock:
            out, self._unbooked = self._unbooked, {}
        return out

    def score(self, skill: str, split: str, on_progress: Callable[[int, int], None] | None = None) -> SplitScore:
        """Mean over `repeats` samples per item; errors (unknown runs) are excluded, not counted as zero."""
        return self._score(skill, split, self.splits[split], self.repeats, (), on_progress)

    def score_items(self, skill: str, items: list[Item], split: str = "train", *, repeats: int = 1,
                    on_progress: Callable[[int, int], None] | None = None) -> SplitScore:
        """`skill` on exactly `items` (labelled `split`), `repeats` samples each; cached like `score`."""
        ids = hashlib.sha1("\x1f".join(i.id for i in items).encode("utf-8")).hexdigest()
        return self._score(skill, split, items, max(1, repeats), (ids, str(repeats)), on_progress)

    def _score(self, skill: str, split: str, items: list[Item], repeats: int, extra: tuple[str, ...],
               on_progress: Callable[[int, int], None] | None) -> SplitScore:
        key = (blob_id(skill), split, *extra)
        with self._lock:
            if key in self._cache:
                self.cache_hits += 1
                return self._cache[key]
        student = bind_stage(self.student, "gate" if split == "val" else split)
        result = SplitScore(split, key[0])
        rows: dict[str, list[tuple[float, float]]] = {}
        # One wave: every (item, repeat) pair at once, sample-major so that `trajs[:len(items)]` is sample 0.
        jobs = [(item, sample) for sample in range(repeats) for item in items]
        trajs = rollout_samples(student, skill, jobs, self.scorer, workers=self.workers, on_progress=on_progress,
                                executor=self.executor)
        # Unknown runs are tried again before anything is decided on them (errors are never cached).
        result.seconds = phase_seconds(trajs)
        for _ in range(self.retries):
            failed = [i for i, t in enumerate(trajs) if not t.ok]
            if not failed:
                break
            with self._lock:
                self.retried += len(failed)
            again = rollout_samples(student, skill, [jobs[i] for i in failed], self.scorer, workers=self.workers,
                                    executor=self.executor)
            result.seconds = add_seconds(result.seconds, phase_seconds(again))
            for i, t in zip(failed, again):
                trajs[i] = t
        with self._lock:
            self._unbooked = add_seconds(self._unbooked, result.seconds)
        for t in trajs:
            if t.ok and t.score is not None:
                rows.setdefault(t.item_id, []).append((t.score.hard, t.score.soft))
            else:
                result.errors[t.item_id] = t.error or "unknown"
        result.trajectories = trajs[:len(items)]
        for item_id, scores in rows.items():
            result.per_item[item_id] = (sum(h for h, _ in scores) / len(scores),
                                        sum(s for _, s in scores) / len(scores))
            result.errors.pop(item_id, None)
        if repeats > 1:
            result.samples = rows  # the significance test's real variance: every (item, repeat) score
        with self._lock:
            self._cache[key] = result
        return result


def phase_seconds(trajs: list[Trajectory]) -> dict[str, float]:
    """Summed setup / agent / verify seconds of rollouts (empty for students that do not report them)."""
    out: dict[str, float] = {}
    for t in trajs:
        for phase, value in t.timings.items():
            out[phase] = round(out.get(phase, 0.0) + float(value), 3)
    return out


def add_seconds(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    return {k: round(a.get(k, 0.0) + b.get(k, 0.0), 3) for k in sorted({*a, *b})}


# ---------------------------------------------------------------------------------------------- verdicts
@dataclass(frozen=True)
class GateCheck:
    """One check's verdict: `detail` says it in words, `numbers` holds what it computed (JSON-ready)."""

    name: str
    passed: bool
    detail: str
    numbers: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail, "numbers": dict(self.numbers)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateCheck:
        return cls(str(data.get("name", "")), bool(data.get("passed")), str(data.get("detail", "")),
                   dict(data.get("numbers") or {}))


@dataclass(frozen=True)
class GateResult:
    accept: bool
    before: float
    after: float
    reason: str
    p_value: float | None = None
    coverage: Coverage | None = None
    checks: tuple[GateCheck, ...] = ()

    @property
    def delta(self) -> float:
        return self.after - self.before

    def to_dict(self) -> dict[str, Any]:
        return {"accept": self.accept, "before": round(self.before, 6), "after": round(self.after, 6),
                "reason": self.reason, "p_value": self.p_value,
                "coverage": self.coverage.to_dict() if self.coverage else None,
                "checks": [c.to_dict() for c in self.checks]}


def paired_p_value(diffs: list[float], seed: int, rounds: int = 2000) -> float:
    """One-sided sign-flip permutation test of mean(diffs) > 0. Exact when every non-zero diff has the same size
    (the sign test: 0/1 scores) or there are at most 14 of them; else `rounds` seeded random flips."""
    nonzero = [d for d in diffs if abs(d) > _EPS]
    if not nonzero:
        return 1.0
    n = len(nonzero)
    size = abs(nonzero[0])
    if all(abs(abs(d) - size) <= 1e-9 for d in nonzero):
        positive = sum(d > 0 for d in nonzero)
        return sum(math.comb(n, i) for i in range(positive, n + 1)) / 2 ** n
    observed = sum(nonzero)
    if n <= 14:
        count = 0
        for mask in range(1 << n):
            total = sum(-d if mask >> i & 1 else d for i, d in enumerate(nonzero))
            count += total >= observed - _EPS
        return count / (1 << n)
    rng = random.Random(seed)
    count = sum(sum(d if rng.random() < 0.5 else -d for d in nonzero) >= observed - _EPS for _ in range(rounds))
    return (count + 1) / (rounds + 1)


def coverage(before: SplitScore, after: SplitScore, items: list[str] | None = None) -> Coverage:
    """The items both skills were scored on, out of the split's items (`items`; default: all either saw)."""
    universe = list(items) if items is not None else sorted(set(before.per_item) | set(after.per_item)
                                                            | set(before.errors) | set(after.errors))
    common = set(before.per_item) & set(after.per_item)
    return Coverage(sum(1 for i in universe if i in common), len(universe),
                    tuple(i for i in universe if i not in common))


def planned_checks(modes: tuple[str, ...] | str) -> tuple[str, ...]:
    """The checks `evaluation.gate` asks for, in order: `paired` is strict + the permutation test; without an
    improvement check (strict, significance, paired) strict is implied."""
    names: list[str] = []
    for mode in EvaluationCfg.parse_gate(modes):
        for name in (("strict", "paired") if mode == "paired" else (mode,)):
            if name not in names:
                names.append(name)
    if not any(n in IMPROVEMENT_CHECKS for n in names):
        names.insert(0, "strict")
    return tuple(names)


def decide(cfg: EvaluationCfg, before: SplitScore, after: SplitScore, *, seed: int = 0,
           items: list[str] | None = None, train_before: SplitScore | None = None,
           train_after: SplitScore | None = None, candidates: int = 1) -> GateResult:
    """Compare on the items both skills could be scored on, if they cover enough of the split (`items`), with
    every check `cfg.gate` names; `train_before`/`train_after` are the step's train batch for `two_split`.
    `candidates`: how many candidates of one step are gated together (`optimizer.proposals`), of which the best
    that passes is kept. The significance bar is raised for it (Bonferroni: α/candidates, the same k for one),
    so keeping the best of P does not multiply the false accepts by P."""
    cov = coverage(before, after, items)
    common = set(before.per_item) & set(after.per_item)
    b = before.mean(cfg.gate_metric, cfg.mixed_weight, common)
    a = after.mean(cfg.gate_metric, cfg.mixed_weight, common)
    if not common or cov.fraction + _EPS < cfg.min_val_coverage:
        reason = ("cannot judge: no validation item could be scored for both skills" if not common else
                  f"cannot judge: only {cov.describe()} for both skills (evaluation.min_val_coverage is "
                  f"{cfg.min_val_coverage:.0%})")
        check = GateCheck("coverage", False, reason.removeprefix("cannot judge: "),
                          {"scored": cov.scored, "total": cov.total, "min_val_coverage": cfg.min_val_coverage})
        return GateResult(False, b, a, reason, None, cov, (check,))
    ctx = _Context(cfg, before, after, common, b, a, seed, items, train_before, train_after, max(1, candidates))
    checks = tuple(_CHECKS[name](ctx) for name in planned_checks(cfg.gate))
    p_values = [c.numbers["p"] for c in checks if c.numbers.get("p") is not None]
    p_value = p_values[0] if p_values else None
    where = f" ({cov.describe()})"
    failed = [c for c in checks if not c.passed]
    if not cfg.use_gate:
        would = f"; it would have rejected: {failed[0].name}: {failed[0].detail}" if failed else ""
        return GateResult(True, b, a, "gate disabled (evaluation.use_gate=false)" + would + where, p_value, cov,
                          checks)
    if failed:
        reason = f"{failed[0].name}: {failed[0].detail}"
        if len(failed) > 1:
            reason += f"; also failed: {', '.join(c.name for c in failed[1:])}"
        return GateResult(False, b, a, reason + where, p_value, cov, checks)
    decisive = next(c for c in checks if c.name in IMPROVEMENT_CHECKS)
    passed = [c.name for c in checks if c is not decisive and c.numbers.get("applicable", True)]
    idle = [c.name for c in checks if c is not decisive and not c.numbers.get("applicable", True)]
    reason = f"{decisive.name}: {decisive.detail}" + (f"; passed {', '.join(passed)}" if passed else "")
    reason += "".join(f"; {name} not applicable" for name in idle)
    return GateResult(True, b, a, reason + where, p_value, cov, checks)


# ---------------------------------------------------------------------------------------------- checks
@dataclass(frozen=True)
class _Context:
    cfg: EvaluationCfg
    before: SplitScore
    after: SplitScore
    common: set[str]
    b: float
    a: float
    seed: int
    items: list[str] | None
    train_before: SplitScore | None
    train_after: SplitScore | None
    candidates: int = 1

    @property
    def on(self) -> str:
        return f"{self.before.split} {self.cfg.gate_metric}"


def _r(x: float) -> float:
    return round(x, 6)


def _strict(ctx: _Context) -> GateCheck:
    cfg, a, b = ctx.cfg, ctx.a, ctx.b
    margin = f" + margin {cfg.gate_margin:g}" if cfg.gate_margin else ""
    passed = a > b + cfg.gate_margin
    word = "better" if passed else ("a tie" if abs(a - b) < _EPS else ("worse" if a < b else "not better enough"))
    return GateCheck("strict", passed, f"{word} on {ctx.on}: {a:.4f} vs {b:.4f}{margin}",
                     {"before": _r(b), "after": _r(a), "margin": cfg.gate_margin})


def paired_cells(cfg: EvaluationCfg, before: SplitScore, after: SplitScore, ids: set[str]) -> tuple[list[float], int]:
    """The paired differences after − before per (item, repeat), and the most repeats any item had. Repeats pair
    up in order (independent samples, so any pairing is as good); an item with one score on either side gives
    one cell, the difference of its means."""
    cells: list[float] = []
    repeats = 1
    for k in sorted(ids):
        xs = after.item_samples(k, cfg.gate_metric, cfg.mixed_weight)
        ys = before.item_samples(k, cfg.gate_metric, cfg.mixed_weight)
        if len(xs) == 1 or len(ys) == 1:
            cells.append(sum(xs) / len(xs) - sum(ys) / len(ys))
            continue
        m = min(len(xs), len(ys))
        repeats = max(repeats, m)
        cells.extend(x - y for x, y in zip(xs[:m], ys[:m]))
    return cells, repeats


def corrected_k(k: float, candidates: int) -> float:
    """The one-sided z bar for the best of `candidates`: the quantile whose tail is (the tail of `k`) ÷
    candidates (Bonferroni). `k` itself for one candidate."""
    if candidates <= 1:
        return k
    normal = NormalDist()
    return normal.inv_cdf(1 - (1 - normal.cdf(k)) / candidates)


def items_to_clear(items: int, repeats: int, k: float) -> int | None:
    """How many of `items` val items must flip from fail to pass on every repeat (the rest unchanged) for the
    stderr test to clear the bar `k`; None when even all of them would not. The cells are (item, repeat) pairs,
    so m flipped items give z = sqrt(mR(nR−1) / (nR − mR))."""
    n, r = items * repeats, max(1, repeats)
    for m in range(1, items + 1):
        if m == items:
            return m if n > 1 else None  # every cell +1: zero variance, the gain is certain
        if math.sqrt(m * r * (n - 1) / (n - m * r)) >= k:
            return m
    return None


def small_val_warning(cfg: EvaluationCfg, items: int, candidates: int) -> str | None:
    """A readable warning when gating the best of `candidates` on `items` val items raises what a step must fix
    to a quarter of val or more (measured in bench/README: proposals > 1 hurt with 4 val items)."""
    if candidates <= 1 or cfg.gate_test != "stderr" or items < 1:
        return None
    one = items_to_clear(items, cfg.gate_repeats, cfg.gate_k)
    many = items_to_clear(items, cfg.gate_repeats, corrected_k(cfg.gate_k, candidates))
    if one is None or many is None or (many > one and many * 4 >= items):
        need = f"{many} of them" if many is not None else "more than all of them"
        return (f"optimizer.proposals is {candidates}: the gate keeps the best of {candidates}, so its bar rises; "
                f"with {items} val item(s) a step must now fix {need} outright to be accepted "
                f"({one if one is not None else 'more than all'} with proposals: 1). "
                f"Use 10 or more val items, or set optimizer.proposals: 1")
    return None


def _significance(ctx: _Context, name: str = "significance", test: str | None = None) -> GateCheck:
    cfg = ctx.cfg
    test = test or cfg.gate_test
    cells, repeats = paired_cells(cfg, ctx.before, ctx.after, ctx.common)
    n = len(cells)
    mean = sum(cells) / n
    excess = mean - cfg.gate_margin
    shape = f"{len(ctx.common)} items" + (f" × {repeats} repeats" if repeats > 1 else "")
    gain = f"{mean:+.4f} on {ctx.on} ({shape})"
    numbers: dict[str, Any] = {"mean_delta": _r(mean), "cells": n, "items": len(ctx.common), "repeats": repeats,
                               "margin": cfg.gate_margin, "test": test}
    best_of = f" for the best of {ctx.candidates}" if ctx.candidates > 1 else ""
    if ctx.candidates > 1:
        numbers["candidates"] = ctx.candidates
    if test == "permutation":
        alpha = cfg.paired_alpha / ctx.candidates
        p = paired_p_value([d - cfg.gate_margin for d in cells], ctx.seed)
        passed = excess > _EPS and p < alpha
        numbers.update(p=_r(p), alpha=_r(alpha))
        verdict = "significant" if passed else "not significant"
        return GateCheck(name, passed, f"{gain}: {verdict} (paired p={p:.3f}, needs < {alpha:.3g}{best_of})",
                         numbers)
    k = corrected_k(cfg.gate_k, ctx.candidates)
    var = sum((d - mean) ** 2 for d in cells) / (n - 1) if n > 1 else 0.0
    se = math.sqrt(var / n)
    numbers.update(se=_r(se), k=_r(k), z=_r(excess / se) if se > 0 else None)
    if n < 2:
        return GateCheck(name, False, f"{gain}: one paired score has no spread to test against", numbers)
    if excess <= _EPS:
        word = "a tie" if abs(mean) < _EPS else ("worse" if mean < 0 else "not above the margin")
        return GateCheck(name, False, f"{gain}: {word}", numbers)
    if se == 0:
        return GateCheck(name, True, f"{gain}: every paired score rose alike (no spread)", numbers)
    z = excess / se
    passed = z > k + _EPS
    margin = f" above margin {cfg.gate_margin:g}" if cfg.gate_margin else ""
    if passed:
        return GateCheck(name, True, f"{gain}{margin} is {z:.2f} standard errors (> {k:.3g}{best_of})", numbers)
    return GateCheck(name, False, f"{gain}{margin} is only {z:.2f} standard errors (needs > {k:.3g}{best_of}): "
                                  f"could be noise", numbers)


def _paired(ctx: _Context) -> GateCheck:
    return _significance(ctx, "paired", "permutation")


def _per_item(ctx: _Context) -> GateCheck:
    cfg, before, after = ctx.cfg, ctx.before, ctx.after
    tau = cfg.item_tolerance
    order = list(ctx.items) if ctx.items is not None else sorted(set(before.per_item) | set(after.per_item))
    drops: list[tuple[str, float, float]] = []
    lost: list[str] = []
    for k in order:
        if k in ctx.common:
            was, now = (s.item_metric(k, cfg.gate_metric, cfg.mixed_weight) for s in (before, after))
            if was - now > tau + _EPS:
                drops.append((k, was, now))
        elif k in before.per_item:  # scored before, unknown now: it may have broken; never a free pass
            lost.append(k)
    numbers = {"regressed": len(drops), "unknown_now": len(lost), "tolerance": tau,
               "worst_drop": _r(max((w - n for _, w, n in drops), default=0.0)),
               "items": [k for k, _, _ in drops] + lost}
    if not drops and not lost:
        return GateCheck("per_item", True, f"no {before.split} item dropped by more than {tau:g}", numbers)
    named = [f"{k} {w:.2f} → {n:.2f}" for k, w, n in drops]
    named += [f"{k} unknown now ({(after.errors.get(k) or 'not scored')[:60]})" for k in lost]
    shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    count = len(named)
    rise = f" while the mean went {ctx.b:.4f} → {ctx.a:.4f}" if ctx.a > ctx.b else ""
    return GateCheck("per_item", False, f"{count} {before.split} item{'s' if count > 1 else ''} regressed (tolerance "
                                        f"{tau:g}): {shown}{rise}", numbers)


def _two_split(ctx: _Context) -> GateCheck:
    cfg, tb, ta = ctx.cfg, ctx.train_before, ctx.train_after
    if tb is None or ta is None:
        return GateCheck("two_split", True, "not applicable: no train batch was re-scored for this candidate",
                         {"applicable": False})
    common = set(tb.per_item) & set(ta.per_item)
    if not common:
        return GateCheck("two_split", False, "cannot judge: no train item was scored for both skills",
                         {"applicable": True, "items": 0})
    b = tb.mean(cfg.gate_metric, cfg.mixed_weight, common)
    a = ta.mean(cfg.gate_metric, cfg.mixed_weight, common)
    passed = a >= b - _EPS
    word = "not worse" if passed else "worse"
    return GateCheck("two_split", passed, f"{word} on the step's {tb.split} batch ({len(common)} items, "
                                          f"{cfg.gate_metric}): {a:.4f} vs {b:.4f}",
                     {"applicable": True, "items": len(common), "before": _r(b), "after": _r(a)})


_CHECKS: dict[str, Callable[[_Context], GateCheck]] = {
    "strict": _strict, "significance": _significance, "paired": _paired, "per_item": _per_item,
    "two_split": _two_split,
}
