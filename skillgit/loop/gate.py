"""The gate's decision: is a candidate skill better than the incumbent on val, on evidence that can carry it?

Scoring lives in `loop/evaluate.py` (re-exported here), the numbers in `loop/stats.py`.

`decide(cfg, before, after, *, seed, items, train_before, train_after, candidates, controls)` compares on the val
items both skills were scored on, and only when they cover at least `evaluation.min_val_coverage` of the split
(`items`); below that it rejects: it cannot judge. **The item is the unit of evidence**: each item's repeats are
averaged first, and the tests run over the per-item differences, so repeats never pass for more items, and a
student whose repeats are copies (temperature 0) gives one sample per item, as it should. `evaluation.gate` names
the checks (modes), all of which must pass:
- `strict`: mean(after) > mean(before) + `gate_margin`;
- `significance`: the mean per-item Δ, less `gate_margin`, is significant: the one-sided sign-flip permutation
  test over items has p < `paired_alpha` (`gate_test: permutation`, the default: exact, so at most α false accepts
  under any null where an item is as likely to lose as to gain — resampling, or items re-drawn at random), or it
  exceeds `gate_k` standard errors over items (`gate_test: stderr`: a normal approximation); in a run, α is the
  step's share of the run's α (`spent`, `evaluation.across_steps`: loop/spending.py), and the reason names it;
- `paired` (the older name, kept): `strict` and the permutation test;
- `per_item`: no val item dropped by more than `item_tolerance` beyond what noise explains (an item that passed
  every repeat and fails every repeat now broke; drops among items whose repeats disagree are compared with the
  chance of that many by noise: `stats.chance_of_drop`), and no item scored before is unknown now (SkillOpt #174:
  a rising mean must not hide an item going pass → fail);
- `two_split`: the step's own train batch, re-scored with the candidate (`train_after`), is not worse than it
  was with the current skill (`train_before`); not applicable to a candidate without one (slow update, …).
`per_item` and `two_split` are guards: without `strict`, `significance` or `paired` among the modes, `strict` is
implied, so a candidate is never accepted merely for not being worse.

**Null controls** come first and can refuse to judge: `controls` are other scorings of the incumbent (its earlier
scoring, a byte-identical copy scored in this round); when one disagrees with `before` beyond the bar (two-sided,
the same test), the student or the round moved and the gate says so instead of judging. When both scorings carry a
student fingerprint (agent CLI version, config hash) and they differ, it refuses too: that is drift. Every check
runs and is recorded (`GateResult.checks`, each with its numbers); `reason` is one line naming the decisive check,
the items fixed and broken, and the coverage in items and samples. bench/gate_calibration.py measures the modes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from skillgit.config import EvaluationCfg
from skillgit.loop import spending, stats
from skillgit.loop.evaluate import (  # noqa: F401
    Evaluator,
    SplitScore,
    add_seconds,
    blob_id,
    metric_of,
    phase_seconds,
    student_fingerprint,
)
from skillgit.loop.stats import corrected_k, wilson  # noqa: F401 - part of the gate's vocabulary
from skillgit.records import Coverage, GateCheck, to_float  # (GateCheck: a gate note's record)
from skillgit.records.notes import Spending

if TYPE_CHECKING:
    from skillgit.config import Config

IMPROVEMENT_CHECKS = ("strict", "significance", "paired")  # the checks that ask "is it better?"
NULL_CHECKS = ("controls", "fingerprint")  # a failure means "cannot judge", not "worse"
MDE_WARN = 0.20  # a val split that cannot detect 20 points is said before money is spent
_EPS = stats.EPS


def paired_p_value(diffs: list[float], seed: int, rounds: int = 4000) -> float:
    """The one-sided sign-flip p-value of mean(diffs) > 0 (see `stats.sign_flip_p`)."""
    return stats.sign_flip_p(diffs, seed=seed, rounds=rounds)


# ---------------------------------------------------------------------------------------------- verdicts
@dataclass(frozen=True)
class GateResult:
    accept: bool
    before: float
    after: float
    reason: str
    p_value: float | None = None
    coverage: Coverage | None = None
    checks: tuple[GateCheck, ...] = ()
    fixed: tuple[str, ...] = ()  # val items that went from failing to passing (item mean < 0.5 → ≥ 0.5)
    broke: tuple[str, ...] = ()  # … and from passing to failing
    spending: Spending | None = None  # in a run: the α this candidate was judged at (`loop/spending.py`)

    @property
    def delta(self) -> float:
        return self.after - self.before

    @property
    def refused(self) -> bool:
        """The gate could not judge (coverage, or a null control or the student's fingerprint disagreed)."""
        return self.reason.startswith("cannot judge")

    def check(self, name: str) -> GateCheck | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {"accept": self.accept, "before": round(self.before, 6), "after": round(self.after, 6),
                "reason": self.reason, "p_value": self.p_value,
                "coverage": self.coverage.to_dict() if self.coverage else None,
                "checks": [c.to_dict() for c in self.checks], "fixed": list(self.fixed), "broke": list(self.broke),
                "spending": self.spending.to_dict() if self.spending else None}


def coverage(before: SplitScore, after: SplitScore, items: list[str] | None = None) -> Coverage:
    """The items both skills were scored on, out of the split's items (`items`; default: all either saw), and
    the samples of the side that has fewer of its own (copies of an item count once)."""
    universe = list(items) if items is not None else sorted(set(before.per_item) | set(after.per_item)
                                                            | set(before.errors) | set(after.errors))
    common = set(before.per_item) & set(after.per_item)
    known = set(universe)
    sides = [(s.sample_count(known), len(universe) * _asked(s)) for s in (before, after)]
    samples, samples_total = min(sides, key=lambda x: (x[0] / x[1] if x[1] else 1.0, x[0]))
    return Coverage(sum(1 for i in universe if i in common), len(universe),
                    tuple(i for i in universe if i not in common), samples, samples_total)


def _asked(score: SplitScore) -> int:
    """Samples asked per item: 1 when the repeats are copies."""
    if score.identical:
        return 1
    return max(1, score.repeats, *(len(rows) for rows in score.samples.values()))


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


def flips(cfg: EvaluationCfg, before: SplitScore, after: SplitScore, ids: set[str] | list[str]
          ) -> tuple[list[str], list[str]]:
    """(fixed, broke): items whose mean crossed 0.5 upwards / downwards (pass = item mean ≥ 0.5)."""
    fixed, broke = [], []
    for k in sorted(ids):
        was, now = (s.item_metric(k, cfg.gate_metric, cfg.mixed_weight) for s in (before, after))
        if was < 0.5 <= now:
            fixed.append(k)
        elif now < 0.5 <= was:
            broke.append(k)
    return fixed, broke


def _named(label: str, ids: list[str], limit: int = 5) -> str:
    shown = ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
    return f"{label} {len(ids)} ({shown})"


def decide(cfg: EvaluationCfg, before: SplitScore, after: SplitScore, *, seed: int = 0,
           items: list[str] | None = None, train_before: SplitScore | None = None,
           train_after: SplitScore | None = None, candidates: int = 1,
           controls: Sequence[SplitScore] = (), spent: Spending | None = None) -> GateResult:
    """Compare on the items both skills could be scored on, if they cover enough of the split (`items`), with
    every check `cfg.gate` names, after the null checks (`controls`: other scorings of the incumbent; the
    students' fingerprints); `train_before`/`train_after` are the step's train batch for `two_split`.
    `candidates`: how many candidates of one step are gated together (`optimizer.proposals`), of which the best
    that passes is kept. The significance bar is raised for it (Bonferroni: α/candidates, or the z bar of that
    tail), so keeping the best of P does not multiply the false accepts by P. `spent`: in a run, how it spends α
    across its steps (`loop/spending.py`): the significance test runs at `spent.step_alpha` instead of
    `paired_alpha` (÷ candidates on top; for `stderr`, the z bar of that tail), and the reason says so."""
    cov = coverage(before, after, items)
    common = set(before.per_item) & set(after.per_item)
    b = before.mean(cfg.gate_metric, cfg.mixed_weight, common)
    a = after.mean(cfg.gate_metric, cfg.mixed_weight, common)
    if not common or cov.fraction + _EPS < cfg.min_val_coverage:
        return dataclasses.replace(_uncovered(cfg, cov, bool(common), b, a), spending=spent)  # a refusal spends
    ctx = _Context(cfg, before, after, common, b, a, seed, items, train_before, train_after, max(1, candidates),
                   tuple(controls), spent.step_alpha if spent is not None else cfg.paired_alpha)
    nulls = tuple(c for c in (_controls(ctx), _fingerprint(ctx)) if c is not None)
    checks = nulls + tuple(_CHECKS[name](ctx) for name in planned_checks(cfg.gate))
    p_values = [p for c in checks if c.name not in NULL_CHECKS and (p := to_float(c.numbers.get("p"))) is not None]
    fixed, broke = flips(cfg, before, after, common)
    moved = "".join(f"; {_named(label, ids)}" for label, ids in (("fixed", fixed), ("broke", broke)) if ids)
    accept, reason = _verdict(cfg, checks, moved)
    if spent is not None and cfg.use_gate and any(c.name in ("significance", "paired") for c in checks):
        reason += "; " + spending.words(spent, ctx.candidates)
    return GateResult(accept, b, a, reason + f" ({cov.describe()})", p_values[0] if p_values else None, cov, checks,
                      tuple(fixed), tuple(broke), spent)


def _uncovered(cfg: EvaluationCfg, cov: Coverage, any_common: bool, b: float, a: float) -> GateResult:
    """The refusal when too few items were scored for both skills to judge."""
    reason = ("cannot judge: no validation item could be scored for both skills" if not any_common else
              f"cannot judge: only {cov.describe()} for both skills (evaluation.min_val_coverage is "
              f"{cfg.min_val_coverage:.0%})")
    check = GateCheck("coverage", False, reason.removeprefix("cannot judge: "),
                      {"scored": cov.scored, "total": cov.total, "min_val_coverage": cfg.min_val_coverage})
    return GateResult(False, b, a, reason, None, cov, (check,))


def _verdict(cfg: EvaluationCfg, checks: tuple[GateCheck, ...], moved: str) -> tuple[bool, str]:
    """Accept or not, and the reason (without the coverage): a disabled gate accepts saying what it would have
    done; a failed null check refuses; a failed check rejects naming it (and the others that failed); else the
    decisive improvement check accepts, naming the checks that passed and those that did not apply."""
    failed = [c for c in checks if not c.passed]
    refusals = [c for c in failed if c.name in NULL_CHECKS]
    if not cfg.use_gate:
        would = (f"; it would have refused: {refusals[0].detail}" if refusals else
                 f"; it would have rejected: {failed[0].name}: {failed[0].detail}" if failed else "")
        return True, "gate disabled (evaluation.use_gate=false)" + would
    if refusals:
        return False, f"cannot judge: {refusals[0].detail}"
    if failed:
        also = f"; also failed: {', '.join(c.name for c in failed[1:])}" if len(failed) > 1 else ""
        return False, f"{failed[0].name}: {failed[0].detail}{also}{moved}"
    return True, _accepted(checks, moved)


def _accepted(checks: tuple[GateCheck, ...], moved: str) -> str:
    decisive = next(c for c in checks if c.name in IMPROVEMENT_CHECKS)
    passed = [c.name for c in checks if c is not decisive and c.numbers.get("applicable", True)]
    idle = [c.name for c in checks if c is not decisive and not c.numbers.get("applicable", True)]
    reason = f"{decisive.name}: {decisive.detail}" + moved + (f"; passed {', '.join(passed)}" if passed else "")
    return reason + "".join(f"; {name} not applicable" for name in idle)


# ---------------------------------------------------------------------------------------------- evidence
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
    controls: tuple[SplitScore, ...] = ()
    alpha: float = 0.05  # the significance test's α for this step (`paired_alpha`, or the run's spending)

    @property
    def on(self) -> str:
        return f"{self.before.split} {self.cfg.gate_metric}"

    @functools.cached_property
    def rows(self) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        """(before, after) samples of the compared items, in the gate metric."""
        return sample_rows(self.cfg, self.before, self.common), sample_rows(self.cfg, self.after, self.common)

    @functools.cached_property
    def evidence(self) -> Evidence:
        return item_evidence(self.cfg, self.before, self.after, self.common, rows=self.rows)


@dataclass(frozen=True)
class Evidence:
    """The per-item differences `after − before` over `ids` (sorted), each item's repeats averaged first;
    `lattice`: a denominator every difference is a multiple of (0/1 scores), for the exact test."""

    ids: tuple[str, ...]
    diffs: tuple[float, ...]
    repeats: int  # the most samples any compared item had on either side
    identical: bool  # both sides' repeats are copies: one sample per item
    lattice: int | None


def sample_rows(cfg: EvaluationCfg, score: SplitScore, ids: set[str] | Sequence[str]) -> dict[str, list[float]]:
    """Each item's samples in the gate metric (one value for copies)."""
    return {k: score.item_samples(k, cfg.gate_metric, cfg.mixed_weight) for k in ids}


def item_evidence(cfg: EvaluationCfg, before: SplitScore, after: SplitScore, ids: set[str] | Sequence[str], *,
                  rows: tuple[Mapping[str, list[float]], Mapping[str, list[float]]] | None = None) -> Evidence:
    keys = tuple(sorted(ids))
    rb, ra = rows if rows is not None else (sample_rows(cfg, before, keys), sample_rows(cfg, after, keys))
    diffs: list[float] = []
    repeats, lattice, binary = 1, 1, True
    for k in keys:
        xs, ys = ra[k], rb[k]
        diffs.append(sum(xs) / len(xs) - sum(ys) / len(ys))
        repeats = max(repeats, len(xs), len(ys))
        lattice = math.lcm(lattice, len(xs), len(ys))
        binary = binary and all(v in (0.0, 1.0) for v in (*xs, *ys))
    return Evidence(keys, tuple(diffs), repeats, before.identical and after.identical,
                    lattice if binary else None)


def _r(x: float) -> float:
    return round(x, 6)


def _p(p: float) -> str:
    """'=0.031' or '<0.001' (a p-value as the reason shows it)."""
    return f"={p:.3f}" if p >= 0.001 else "<0.001"


def _shape(ev: Evidence) -> str:
    if ev.identical:
        return f"{len(ev.ids)} items, repeats identical: each scored once"
    return f"{len(ev.ids)} items" + (f" × {ev.repeats} repeats" if ev.repeats > 1 else "")


def _strict(ctx: _Context) -> GateCheck:
    cfg, a, b = ctx.cfg, ctx.a, ctx.b
    margin = f" + margin {cfg.gate_margin:g}" if cfg.gate_margin else ""
    passed = a > b + cfg.gate_margin
    word = "better" if passed else ("a tie" if abs(a - b) < _EPS else ("worse" if a < b else "not better enough"))
    return GateCheck("strict", passed, f"{word} on {ctx.on}: {a:.4f} vs {b:.4f}{margin}",
                     {"before": _r(b), "after": _r(a), "margin": cfg.gate_margin})


def _significance(ctx: _Context, name: str = "significance", test: str | None = None) -> GateCheck:
    cfg = ctx.cfg
    test = test or cfg.gate_test
    ev = ctx.evidence
    n = len(ev.diffs)
    mean = sum(ev.diffs) / n
    excess = mean - cfg.gate_margin
    gain = f"{mean:+.4f} on {ctx.on} ({_shape(ev)})"
    numbers: dict[str, Any] = {"mean_delta": _r(mean), "items": n, "repeats": ev.repeats,
                               "identical_repeats": ev.identical, "margin": cfg.gate_margin, "test": test}
    best_of = f" for the best of {ctx.candidates}" if ctx.candidates > 1 else ""
    if ctx.candidates > 1:
        numbers["candidates"] = ctx.candidates
    if test == "permutation":
        alpha = ctx.alpha / ctx.candidates
        shifted = [d - cfg.gate_margin for d in ev.diffs]
        p = stats.sign_flip_p(shifted, seed=ctx.seed, lattice=ev.lattice if not cfg.gate_margin else None)
        passed = excess > _EPS and p < alpha
        numbers.update(p=_r(p), alpha=_r(alpha))
        if excess <= _EPS:
            word = "a tie" if abs(mean) < _EPS else ("worse" if mean < 0 else "not above the margin")
            return GateCheck(name, False, f"{gain}: {word}", numbers)
        verdict = "significant" if passed else "not significant, could be noise"
        return GateCheck(name, passed, f"{gain}: {verdict} (sign-flip p{_p(p)} over items, needs < {alpha:.3g}"
                                       f"{best_of})", numbers)
    k = corrected_k(cfg.gate_k, ctx.candidates, ctx.alpha / cfg.paired_alpha)
    _, se, _ = stats.stderr_z(ev.diffs)
    numbers.update(se=_r(se), k=_r(k), z=_r(excess / se) if se > 0 else None)
    if n < 2:
        return GateCheck(name, False, f"{gain}: one item has no spread to test against", numbers)
    if excess <= _EPS:
        word = "a tie" if abs(mean) < _EPS else ("worse" if mean < 0 else "not above the margin")
        return GateCheck(name, False, f"{gain}: {word}", numbers)
    if se == 0:
        return GateCheck(name, True, f"{gain}: every item rose alike (no spread)", numbers)
    z = excess / se
    passed = z > k + _EPS
    margin = f" above margin {cfg.gate_margin:g}" if cfg.gate_margin else ""
    if passed:
        return GateCheck(name, True, f"{gain}{margin} is {z:.2f} standard errors over items (> {k:.3g}{best_of})",
                         numbers)
    return GateCheck(name, False, f"{gain}{margin} is only {z:.2f} standard errors over items (needs > {k:.3g}"
                                  f"{best_of}): could be noise", numbers)


def _paired(ctx: _Context) -> GateCheck:
    return _significance(ctx, "paired", "permutation")


def _item_drops(ctx: _Context) -> tuple[list[tuple[str, float, float]], list[float], list[str]]:
    """Per item in order: (drops beyond the tolerance as (id, was, now), each compared item's chance of such a
    drop by noise alone, the items scored before but unknown now)."""
    cfg, before, after = ctx.cfg, ctx.before, ctx.after
    order = list(ctx.items) if ctx.items is not None else sorted(set(before.per_item) | set(after.per_item))
    drops: list[tuple[str, float, float]] = []
    chances: list[float] = []
    lost: list[str] = []
    for k in order:
        if k in ctx.common:
            was, now = (s.item_metric(k, cfg.gate_metric, cfg.mixed_weight) for s in (before, after))
            if was - now > cfg.item_tolerance + _EPS:
                drops.append((k, was, now))
            chances.append(stats.chance_of_drop(ctx.rows[0][k], ctx.rows[1][k], cfg.item_tolerance))
        elif k in before.per_item:  # scored before, unknown now: it may have broken; never a free pass
            lost.append(k)
    return drops, chances, lost


def _per_item(ctx: _Context) -> GateCheck:
    before, tau = ctx.before, ctx.cfg.item_tolerance
    drops, chances, lost = _item_drops(ctx)
    noise_p = stats.tail_at_least(chances, len(drops))
    noise = bool(drops) and noise_p >= ctx.cfg.paired_alpha  # as many drops as the items' own noise explains
    numbers: dict[str, Any] = {"regressed": 0 if noise else len(drops), "dropped": len(drops), "unknown_now": len(lost),
               "tolerance": tau, "noise_p": _r(noise_p), "expected_by_noise": _r(sum(chances)),
               "worst_drop": _r(max((w - n for _, w, n in drops), default=0.0)),
               "items": ([] if noise else [k for k, _, _ in drops]) + lost}
    named = [f"{k} {w:.2f} → {n:.2f}" for k, w, n in drops]
    if lost or (drops and not noise):
        return GateCheck("per_item", False, _regressed(ctx, [] if noise else named, lost, bool(drops) and not noise,
                                                       noise_p), numbers)
    if not drops:
        return GateCheck("per_item", True, f"no {before.split} item dropped by more than {tau:g}", numbers)
    return GateCheck("per_item", True, f"{len(drops)} {before.split} item(s) dropped by more than {tau:g} "
                                       f"({', '.join(named[:5])}), as many as noise explains (p={noise_p:.2f})",
                     numbers)


def _regressed(ctx: _Context, named: list[str], lost: list[str], beyond_noise: bool, noise_p: float) -> str:
    """The failing per_item check's reason: the regressed items (`named`: drops beyond noise), the lost ones."""
    shown_items = named + [f"{k} unknown now ({(ctx.after.errors.get(k) or 'not scored')[:60]})" for k in lost]
    shown = ", ".join(shown_items[:5]) + (f" and {len(shown_items) - 5} more" if len(shown_items) > 5 else "")
    count = len(shown_items)
    beyond = f", beyond noise (p{_p(noise_p)})" if beyond_noise and noise_p > 0 else ""
    rise = f" while the mean went {ctx.b:.4f} → {ctx.a:.4f}" if ctx.a > ctx.b else ""
    return (f"{count} {ctx.before.split} item{'s' if count > 1 else ''} regressed "
            f"(tolerance {ctx.cfg.item_tolerance:g}{beyond}): {shown}{rise}")


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


# ---------------------------------------------------------------------------------------------- null checks
def _controls(ctx: _Context) -> GateCheck | None:
    """The incumbent's other scorings against this round's (`before`): the same skill, so any difference beyond
    the bar (two-sided, the gate's own test) is the student or the round moving, not the candidate."""
    if not ctx.controls:
        return None
    measured = [_control_row(ctx, n, c) for n, c in enumerate(ctx.controls)]
    rows = [row for row, _, _ in measured]
    off = [(abs(moved), row, words) for row, words, moved in measured if row["usable"] and row["disagree"]]
    worst = None
    if off:
        _, row, words = max(off, key=lambda o: o[0])  # the first of the largest moves
        worst = words + (": the round's measurements disagree with themselves" if row["kind"] == "copy" else
                         ": the student drifted between scorings (provider, model version or agent CLI); this round "
                         "is not judged")
    usable = [r for r in rows if r.get("usable")]
    floor = max((abs(r["delta"]) for r in usable), default=None)
    numbers = {"controls": rows,
               "noise_floor": _r(floor) if floor is not None else None}
    if worst is not None:
        return GateCheck("controls", False, worst, numbers)
    if not usable:
        why = "; ".join(str(r.get("why")) for r in rows)
        return GateCheck("controls", True, f"no usable null control ({why})", numbers)
    said = next(words for row, words, _ in measured if row["usable"])
    return GateCheck("controls", True, f"{said}: within noise", numbers)


def _control_row(ctx: _Context, n: int, c: SplitScore) -> tuple[dict[str, Any], str, float]:
    """One control's row of numbers (`usable`, and `disagree` when it is), its sentence ("" when unusable) and how
    far the incumbent moved."""
    cfg, before = ctx.cfg, ctx.before
    kind = "copy" if c.round == before.round else "earlier"
    ids = set(before.per_item) & set(c.per_item)
    row: dict[str, Any] = {"kind": kind, "round": c.round, "items": len(ids)}
    if c.fingerprint != before.fingerprint and (c.fingerprint or before.fingerprint):
        return {**row, "usable": False,
                "why": f"the student changed since ({_fp_change(c.fingerprint, before.fingerprint)})"}, "", 0.0
    if len(ids) < 2:
        return {**row, "usable": False, "why": "fewer than 2 items scored both times"}, "", 0.0
    ev = item_evidence(cfg, c, before, ids)
    was, now = c.mean(cfg.gate_metric, cfg.mixed_weight, ids), before.mean(cfg.gate_metric, cfg.mixed_weight, ids)
    moved = now - was
    fixed, broke = flips(cfg, c, before, ids)
    off, stat = _control_test(ctx, n, ev, moved, row)
    row.update(usable=True, before=_r(was), now=_r(now), delta=_r(moved), flipped=len(fixed) + len(broke),
               disagree=off)
    words = (f"the incumbent scored {was:.4f} at its {'copy in this round' if kind == 'copy' else 'earlier'} "
             f"scoring and {now:.4f} now ({moved:+.4f}, {len(fixed) + len(broke)} item(s) flipped; {stat})")
    return row, words, moved


def _control_test(ctx: _Context, n: int, ev: Evidence, moved: float, row: dict[str, Any]) -> tuple[bool, str]:
    """Whether control `n` moved beyond the gate's own two-sided bar, and the statistic in words (into `row`)."""
    cfg = ctx.cfg
    if cfg.gate_test == "stderr":
        _, _, z = stats.stderr_z(ev.diffs)
        bar = corrected_k(cfg.gate_k, 2)
        row.update(z=_r(z) if z is not None else None, bar=_r(bar))
        off = abs(moved) > _EPS and (z is None or abs(z) > bar + _EPS)
        return off, f"z={z:.2f}, needs |z| ≤ {bar:.3g}" if z is not None else "every item moved alike"
    p2 = stats.two_sided_p(ev.diffs, seed=ctx.seed + n, lattice=ev.lattice)
    row.update(p=_r(p2), alpha=cfg.paired_alpha)
    return p2 < cfg.paired_alpha, f"two-sided p{_p(p2)}, needs ≥ {cfg.paired_alpha:g}"


def _fp_change(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    keys = sorted(set(old) | set(new))
    changed = [f"{k} {old.get(k, '—')} → {new.get(k, '—')}" for k in keys if old.get(k) != new.get(k)]
    return ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")


def _fingerprint(ctx: _Context) -> GateCheck | None:
    """The incumbent's scoring and the candidate's must come from the same student (same CLI version, config)."""
    fb, fa = ctx.before.fingerprint, ctx.after.fingerprint
    if not fb and not fa:
        return None
    numbers = {"before": dict(fb), "after": dict(fa)}
    if fb == fa:
        shown = ", ".join(f"{k} {v}" for k, v in sorted(fb.items())[:3])
        return GateCheck("fingerprint", True, f"the same student scored both ({shown})", numbers)
    return GateCheck("fingerprint", False, f"the student changed between the incumbent's scoring and the "
                                           f"candidate's ({_fp_change(fb, fa)}): that is drift, not a result",
                     numbers)


# ---------------------------------------------------------------------------------------------- planning
def significance_bar(cfg: EvaluationCfg, candidates: int = 1) -> tuple[str, float]:
    """(test, bar) of the significance check for the best of `candidates`: a p-value bound (permutation) or a
    z bar (stderr)."""
    if cfg.gate_test == "permutation":
        return "permutation", cfg.paired_alpha / max(1, candidates)
    return "stderr", corrected_k(cfg.gate_k, candidates)


def items_to_clear(items: int, cfg: EvaluationCfg, candidates: int = 1) -> int | None:
    """How many of `items` val items a clean gain must flip (fail → pass, nothing else changing) to pass the
    significance check; None when even all of them would not (see `stats.items_to_clear`)."""
    test, bar = significance_bar(cfg, candidates)
    return stats.items_to_clear(items, test, bar)


def min_detectable_effect(cfg: EvaluationCfg, items: int, repeats: int, *, deterministic: bool = False,
                          candidates: int = 1) -> float | None:
    """The smallest gain (0..1) the gate detects with 80 % power on `items` × `repeats` (see
    `stats.min_detectable_effect`); None when no gain can pass."""
    test, bar = significance_bar(cfg, candidates)
    z_bar = stats.z_of(bar) if test == "permutation" else bar
    return stats.min_detectable_effect(items, repeats, z_bar=z_bar, clear=items_to_clear(items, cfg, candidates),
                                       deterministic=deterministic)


def planned_repeats(cfg: Config) -> tuple[int, bool]:
    """(samples per val item, the student is deterministic): a chat student at temperature 0 gives copies, so it
    is scored once per item (an agent student is measured instead: see `Evaluator`)."""
    from skillgit.llm import registry

    try:
        agent = registry.resolve("student", cfg.model.student_backend).agent
    except Exception:  # noqa: BLE001 - an unknown backend is reported where it is built
        agent = False
    if not agent and cfg.model.student.temperature == 0:
        return 1, True
    return cfg.evaluation.gate_repeats, False


def detectable_line(cfg: EvaluationCfg, items: int, repeats: int, *, deterministic: bool = False,
                    candidates: int = 1) -> tuple[str, bool]:
    """One line saying what the val split can detect, and whether to warn (above `MDE_WARN`)."""
    mde = min_detectable_effect(cfg, items, repeats, deterministic=deterministic, candidates=candidates)
    shape = f"{items} val item(s) × " + ("1 sample (repeats identical)" if deterministic else f"{repeats} repeat(s)")
    if mde is None:
        return (f"val split: {shape}: the gate cannot accept any step (too few items for its bar); give val 30 "
                f"or more items (env.split_ratio, or a val/ folder)", True)
    text = f"val split: {shape}: the gate detects gains of about {mde * 100:.0f} points or more (80 % power)"
    if mde > MDE_WARN + _EPS:
        return (text + "; smaller real gains will be rejected as noise. Give val 30 or more items "
                       "(env.split_ratio, or a val/ folder)", True)
    return text, False


def small_val_warning(cfg: EvaluationCfg, items: int, candidates: int) -> str | None:
    """A readable warning when gating the best of `candidates` on `items` val items raises what a step must fix
    to a quarter of val or more (measured in bench/README: proposals > 1 hurt with 4 val items)."""
    if candidates <= 1 or items < 1:
        return None
    one = items_to_clear(items, cfg)
    many = items_to_clear(items, cfg, candidates)
    if one is None or many is None or (many > one and many * 4 >= items):
        need = f"{many} of them" if many is not None else "more than all of them"
        return (f"optimizer.proposals is {candidates}: the gate keeps the best of {candidates}, so its bar rises; "
                f"with {items} val item(s) a step must now fix {need} outright to be accepted "
                f"({one if one is not None else 'more than all'} with proposals: 1). "
                f"Use 30 or more val items, or set optimizer.proposals: 1")
    return None
