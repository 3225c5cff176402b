"""What a run (or one step) learned, read back from git for review: the PR body, the HTML report, `show`'s summary.

Contract:
- Reads only (notes, commits, the run ref) and never fails on a malformed note (notes arrive from collaborators
  through `pull`): a line that does not parse is skipped, a field of the wrong type is left out and listed
  (`StepReview.skipped`, `notes.conform`), a parent commit that is not in the repository gives no diff.
- A run's decisions are the decision notes whose `run` is that run, in decision order (`seq`). They are found
  through the notes, not by walking a branch, so a run on a review branch — or on a branch deleted after merging —
  reads the same. Scores, deltas and reasons are the decision notes' own, exactly what `skillgit log --json`
  shows.
- Per-item val scores come from gate notes: a candidate's from its own (`val`), its parent's from the gate note's
  `base` record when the loop wrote one, else from the parent commit's gate note (the parent is usually the
  previously accepted candidate). An item whose run failed is *unknown* (None), never a failure; a side whose
  per-item scores were not recorded (a run's seed) makes the comparison *not recorded*, never "nothing changed".
- An item passes when its score on the gate metric (the mean over the gate's repeats) is at least `PASS` (0.5):
  `fixed` failed with the parent and passes with the candidate, `broke` is the reverse.
- Uncertainty: `wilson(p, n)` is the Wilson 95 % interval of a mean score `p` over `n` items (exact for 0/1 scores,
  an approximation for partial ones).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from skillgit import envs
from skillgit.errors import GitStateError
from skillgit.loop.gate import metric_of
from skillgit.records import (
    Coverage,
    GateNote,
    ProposerStats,
    RunProgress,
    ScoreRecord,
    SkillScores,
    StepNotes,
    StepOutcome,
    UpdateRecord,
    to_float,
)
from skillgit.report import ReportEdit, ReportStep, RunReport, SplitScores
from skillgit.review.branch import recorded_base
from skillgit.store import Store, read
from skillgit.store import notes as N
from skillgit.store import refs as R
from skillgit.types import Edit, Usage

PASS = 0.5  # an item passes when its mean score over the gate's repeats is at least this
Z95 = 1.959964


# ---------------------------------------------------------------------------------------------- small parts
def wilson(p: float | None, n: int | None, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion `p` observed over `n` items (None when either is unknown)."""
    if p is None or not n or n <= 0:
        return None
    p = min(1.0, max(0.0, p))
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def proposer_line(name: str, stats: ProposerStats) -> str:
    """One proposer's acceptance and cost in words (status, the PR body, the report): the rate comes with its 95 %
    Wilson interval over the candidates it made (each candidate is one gate decision)."""
    rate = ""
    if stats.rate is not None:
        lo, hi = wilson(stats.rate, stats.proposed) or (0.0, 1.0)
        rate = f" ({stats.rate:.0%}, 95 % interval {lo:.0%}–{hi:.0%})"
    u = stats.usage
    return (f"{name}: {stats.accepted}/{stats.proposed} accepted{rate}; {u.calls} teacher calls, "
            f"{u.total_tokens:,} tokens" + (f", ${u.cost_usd:.4f}" if u.cost_usd else ""))


@dataclass(frozen=True)
class ItemFlips:
    """How val items changed between a parent and a candidate. `recorded` is False when either side's per-item
    scores are not in git (then the lists are empty and mean nothing)."""

    recorded: bool
    fixed: tuple[str, ...] = ()
    broke: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()  # unknown on at least one side: neither fixed nor broken as far as we know

    def to_dict(self) -> dict[str, Any]:
        return {"recorded": self.recorded, "fixed": list(self.fixed), "broke": list(self.broke),
                "unknown": list(self.unknown)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ItemFlips":
        return cls(bool(data.get("recorded")), *(tuple(str(x) for x in data.get(k) or ())
                                                for k in ("fixed", "broke", "unknown")))


NOT_RECORDED = ItemFlips(False)


def compare_items(before: Mapping[str, float | None] | None, after: Mapping[str, float | None] | None) -> ItemFlips:
    """Fixed / broke / unknown items from `before` to `after` (item → score, None = unknown)."""
    if not before or not after:
        return NOT_RECORDED
    fixed, broke, unknown = [], [], []
    for item in sorted(set(before) | set(after)):
        was, now = before.get(item), after.get(item)
        if was is None or now is None:
            unknown.append(item)
        elif was < PASS <= now:
            fixed.append(item)
        elif now < PASS <= was:
            broke.append(item)
    return ItemFlips(True, tuple(fixed), tuple(broke), tuple(unknown))


def item_scores(val: ScoreRecord | None, metric: str, weight: float) -> dict[str, float | None]:
    """A gate note's scoring (`val` or `base`) as item → score on the gate metric | None (unknown)."""
    if val is None:
        return {}
    out: dict[str, float | None] = dict.fromkeys(val.errors)
    for item, (hard, soft) in val.per_item.items():
        out[item] = round(metric_of(hard, soft, metric, weight), 6)
    return out


def _parent_items(gate: GateNote | None, parent: StepNotes, metric: str, weight: float
                  ) -> dict[str, float | None] | None:
    """The parent's per-item val scores: the gate note's `base` record, else the parent's own gate note."""
    if gate is not None and gate.base is not None:
        return item_scores(gate.base, metric, weight) or None
    return (item_scores(parent.gate.val, metric, weight) or None) if parent.gate else None


def _iso(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp)) if stamp else ""


def run_metric(store: Store, run: str, default: tuple[str, float] = ("hard", 0.5)) -> tuple[str, float]:
    """(gate metric, mixed weight) of a run, from the config saved on its run ref (`default` when unreadable)."""
    import yaml

    files = store.load_run(run) if run else None
    try:
        cfg = yaml.safe_load((files or {}).get("config.yaml", "")) or {}
        ev = cfg.get("evaluation") or {}
        metric = str(ev.get("gate_metric", default[0]))
        weight = to_float(ev.get("mixed_weight"))
        return (metric if metric in ("hard", "soft", "mixed") else default[0],
                default[1] if weight is None else weight)
    except (yaml.YAMLError, RecursionError, AttributeError, TypeError):  # (a pulled run ref may hold anything)
        return default


# ---------------------------------------------------------------------------------------------- notes
class NoteIndex:
    """Every skillgit note of a repository, read with two git calls and parsed on demand (leniently, typed)."""

    def __init__(self, store: Store):
        self._texts = store.note_texts()
        self._parsed: dict[str, N.Checked] = {}

    def _checked(self, sha: str) -> N.Checked:
        if sha not in self._parsed:
            self._parsed[sha] = N.decode_checked(self._texts.get(sha, ""))
        return self._parsed[sha]

    def notes(self, sha: str, run: str | None = None) -> StepNotes:
        """What `sha`'s note says (of `run`, when given), typed; fields of the wrong type dropped and listed."""
        checked = self._checked(sha)
        return StepNotes.from_records(checked.records, sha, run, checked.skipped)

    def decided_in(self, run: str) -> list[str]:
        """Commits carrying a decision record of `run` (a cheap text filter first: most notes are other runs'; it
        allows any JSON spacing, as a note written by hand or another tool may have)."""
        return [sha for sha, text in self._texts.items() if '"decision"' in text and run in text
                and any(r.get("kind") == "decision" and r.get("run") == run for r in self._checked(sha).records)]


# ---------------------------------------------------------------------------------------------- one decision
@dataclass(frozen=True)
class StepReview:
    """One decided candidate with what a reviewer needs: the outcome (scores, reason, usage — the decision note's),
    how it was built, its diff, its per-item val scores and what flipped against its parent."""

    outcome: StepOutcome
    update: UpdateRecord | None
    diff: str
    items: Mapping[str, float | None] = field(default_factory=dict)  # candidate val item → score, None = unknown
    flips: ItemFlips = NOT_RECORDED
    train_score: float | None = None  # mean rollout score on the step's train batch (gate metric)
    seconds: Mapping[str, float] = field(default_factory=dict)
    gate_reason: str = ""
    skipped: tuple[str, ...] = ()  # malformed note fields left out (`notes.conform`)

    @property
    def accepted(self) -> bool:
        return self.outcome.accepted

    @property
    def _step(self) -> int | str | None:
        """The step as a ref names it, None when the note did not record a usable run and step."""
        return R.parse_step(str(self.outcome.step)) if R.parse_run_ref(R.RUNS_PREFIX + self.outcome.run) else None

    @property
    def label(self) -> str:
        step = self._step
        return R.label(self.outcome.run, step) if step is not None else self.outcome.sha[:12]

    @property
    def tag(self) -> str:
        step = self._step
        return "" if self.accepted or step is None else R.rejected_tag(self.outcome.run, step)

    @property
    def applied(self) -> tuple[Edit, ...]:
        return tuple(r.edit for r in self.update.applied) if self.update else ()

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome.to_dict(), "label": self.label, "tag": self.tag,
                "update": self.update.to_dict() if self.update else None, "diff": self.diff,
                "items": dict(self.items), "flips": self.flips.to_dict(), "train_score": self.train_score,
                "seconds": dict(self.seconds), "skipped": list(self.skipped)}


def build_review(sha: str, notes: StepNotes, parent: StepNotes, diff: str, metric: str, weight: float
                 ) -> StepReview | None:
    """A StepReview from a commit's typed notes (None when they hold no readable decision); `parent`: its parent
    commit's notes (where its per-item scores are, when the gate note has no `base`)."""
    if notes.decision is None:
        return None
    candidate, gate = notes.candidate, notes.gate
    items = item_scores(gate.val, metric, weight) if gate else {}
    before = _parent_items(gate, parent, metric, weight)
    train = candidate.train if candidate else None
    train_score = None
    if train is not None:
        if metric == "hard":
            train_score = train.hard_mean
        elif metric == "soft":
            train_score = train.soft_mean
        elif train.hard_mean is not None and train.soft_mean is not None:
            train_score = metric_of(train.hard_mean, train.soft_mean, metric, weight)
    seconds = dict(candidate.usage.timings_s) if candidate else {}
    return StepReview(notes.decision, candidate.update if candidate else None, diff, items,
                      compare_items(before, items) if items else NOT_RECORDED, train_score, seconds,
                      gate.reason if gate else "", notes.skipped)


def step_review(store: Store, detail: read.StepDetail) -> StepReview | None:
    """The StepReview `skillgit show` summarises (None for a commit skillgit did not decide)."""
    if detail.outcome is None:
        return None
    metric, weight = run_metric(store, detail.outcome.run)
    if detail.gate is not None and detail.gate.metric:
        metric = detail.gate.metric
    parent = store.step_notes(detail.parent) if detail.parent else StepNotes()
    notes = StepNotes(detail.outcome, detail.candidate, detail.gate, detail.revert, skipped=detail.skipped)
    return build_review(detail.sha, notes, parent, detail.diff, metric, weight)


# ---------------------------------------------------------------------------------------------- one run
@dataclass(frozen=True)
class RunReview:
    """One run, ready for review. `head` is the branch it trained onto, `base` the branch a `--branch` run was
    started from (None when it trained on its skill branch directly or nothing was recorded). `val_n`/`test_n` are
    the split sizes the scores are means over (None when unknown)."""

    progress: RunProgress
    metric: str
    mixed_weight: float
    decisions: tuple[StepReview, ...]
    head: str
    base: str | None
    scores: Mapping[str, SkillScores]
    val_n: int | None = None
    test_n: int | None = None
    config_yaml: str = ""
    seed_items: Mapping[str, float | None] = field(default_factory=dict)

    @property
    def run(self) -> str:
        return self.progress.run

    @property
    def accepted(self) -> tuple[StepReview, ...]:
        return tuple(d for d in self.decisions if d.accepted)

    @property
    def rejected(self) -> tuple[StepReview, ...]:
        return tuple(d for d in self.decisions if not d.accepted)

    def reproduce(self) -> str:
        """Shell commands that rerun this run's configuration from the same seed skill (on a new branch)."""
        seed_scores = self.scores.get("seed")
        seed = (seed_scores.rev if seed_scores else "") or self.progress.seed_rev or ""
        branch = f"repro/{self.run}"
        return (f"git branch {branch} {seed[:12] or '<seed commit>'} && "
                f"git show refs/skillgit/runs/{self.run}:config.yaml > skillgit-{self.run}.yaml && "
                f"skillgit train --new --config skillgit-{self.run}.yaml --set skill.branch={branch}")

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "metric": self.metric, "mixed_weight": self.mixed_weight, "head": self.head,
                "base": self.base, "val_n": self.val_n, "test_n": self.test_n,
                "scores": {k: v.to_dict() for k, v in self.scores.items()},
                "decisions": [d.to_dict() for d in self.decisions], "progress": self.progress.to_dict(),
                "reproduce": self.reproduce()}


def _scores(progress: RunProgress, decisions: tuple[StepReview, ...]) -> dict[str, SkillScores]:
    if progress.final_scores:
        return dict(progress.final_scores)
    # An unfinished run: val only, from what the decisions recorded.
    seed = SkillScores(progress.seed_rev or "", progress.seed_score, None)
    accepted = [d for d in decisions if d.accepted]
    final = SkillScores(accepted[-1].outcome.sha, accepted[-1].outcome.score_after, None) if accepted else seed
    best = max([seed, *(SkillScores(d.outcome.sha, d.outcome.score_after, None) for d in accepted)],
               key=lambda s: -1.0 if s.val is None else s.val)
    return {"seed": seed, "best": best, "final": final}


def _diff(store: Store, parent: str, sha: str) -> str:
    """The skill's diff from a decision's parent (a collaborator's note names it: it may be missing here)."""
    try:
        return store.diff(parent, sha)
    except GitStateError:
        return ""


def load_run(store: Store, run: str | None = None, *, split_sizes: Mapping[str, int] | None = None,
             diff_of: Callable[[StepReview], bool] = lambda d: True) -> RunReview:
    """Everything git holds about `run` (default: the newest). `split_sizes` (split → number of items) gives the
    n of the uncertainty intervals when the notes do not; `diff_of` says which decisions need their diff."""
    progress = read.run_progress(store, run)
    run_id = progress.run
    notes = NoteIndex(store)
    metric, weight = run_metric(store, run_id)
    decisions = _decisions(store, notes, run_id, metric, weight, diff_of)
    seed_rev = progress.seed_rev or ""
    seed = notes.notes(seed_rev) if seed_rev else StepNotes()
    seed_items = item_scores(seed.gate.val, metric, weight) if seed.gate else {}
    if not seed_items and decisions:
        seed_items = _first_gate_base(notes, run_id, seed_rev, decisions, metric, weight)
    sizes = dict(split_sizes or {})
    val_n = next((d.outcome.coverage.total for d in decisions if d.outcome.coverage and d.outcome.coverage.total),
                 None) or sizes.get("val")
    files = store.load_run(run_id) or {}
    return RunReview(progress, metric, weight, tuple(decisions), progress.branch or store.branch,
                     recorded_base(seed.reviews, run_id), _scores(progress, tuple(decisions)), val_n,
                     sizes.get("test"), files.get("config.yaml", ""), seed_items)


def _decisions(store: Store, notes: NoteIndex, run_id: str, metric: str, weight: float,
               diff_of: Callable[[StepReview], bool]) -> list[StepReview]:
    """The run's decisions in decision order, each with its diff where `diff_of` asks for it."""
    found: list[StepReview] = []
    for sha in notes.decided_in(run_id):
        mine = notes.notes(sha, run_id)
        parent = mine.decision.parent if mine.decision else ""
        built = build_review(sha, mine, notes.notes(parent) if parent else StepNotes(), "", metric, weight)
        if built is not None:
            found.append(built)
    found.sort(key=lambda d: (d.outcome.seq, R.step_key(R.parse_step(d.outcome.step) or 0)))
    return [dataclasses.replace(d, diff=_diff(store, d.outcome.parent, d.outcome.sha))
            if d.outcome.parent and diff_of(d) else d for d in found]


def _first_gate_base(notes: NoteIndex, run_id: str, seed_rev: str, decisions: list[StepReview], metric: str,
                     weight: float) -> dict[str, float | None]:
    """The seed's item scores from the `base` record of the gate note of the run's first decision on the seed."""
    for d in decisions:
        if d.outcome.parent == seed_rev:
            gate = notes.notes(d.outcome.sha, run_id).gate
            if gate is not None and gate.base is not None:
                return item_scores(gate.base, metric, weight)
    return {}


# ---------------------------------------------------------------------------------------------- HTML report
def _report_edits(d: StepReview) -> tuple[ReportEdit, ...]:
    if d.update is None:
        return ()
    results = d.update.apply
    if results:
        return tuple(ReportEdit(r.edit.op, r.edit.file, r.edit.target, r.edit.content, r.edit.rationale, r.status)
                     for r in results)
    return ()


def report_step(d: StepReview) -> ReportStep:
    o = d.outcome
    cov: Coverage | None = o.coverage
    return ReportStep(seq=o.seq, step=o.step, kind=o.kind, epoch=o.epoch or 1, verdict=o.verdict,
                      val_before=o.score_before, val_after=o.score_after, delta=o.delta, train_score=d.train_score,
                      reason=o.reason, edits=_report_edits(d), diff=d.diff, cost_usd=o.usage.cost_usd,
                      calls=o.usage.calls, tokens=o.usage.total_tokens, seconds=dict(d.seconds),
                      item_scores=dict(d.items), coverage=cov.fraction if cov and cov.total else None)


def to_run_report(review: RunReview, *, project: str = "", skill_path: str = "") -> RunReport:
    """The `RunReport` the HTML renderer draws: one column per decision, in decision order."""
    p = review.progress
    items = sorted({i for d in review.decisions for i in d.items} | set(review.seed_items))
    scores = review.scores

    def split(name: str) -> SplitScores:
        get = lambda key: getattr(scores[key], name) if key in scores else None  # noqa: E731
        return SplitScores(get("seed"), get("best"), get("final"))

    return RunReport(
        run_id=review.run, project=project, skill_path=skill_path, branch=review.head, started=_iso(p.started),
        ended=_iso(p.updated) if p.status != "running" else "", status=p.status, stop_reason=p.stop_reason,
        metric=review.metric, env_metric=": ".join(envs.metric_of_config(review.config_yaml) or ()),
        val=split("val"), test=split("test"), val_items=tuple(items),
        seed_item_scores=dict(review.seed_items), steps=tuple(report_step(d) for d in review.decisions),
        usage_by_stage=dict(p.usage_by_stage), usage_by_role=dict(p.usage_by_role), config_digest=p.config_digest,
        proposers={k: proposer_line(k, v) for k, v in p.proposers.items()} if len(p.proposers) > 1 else {},
        reproduce=review.reproduce())


def total_usage(usages: Mapping[str, Usage]) -> Usage:
    total = Usage()
    for usage in usages.values():
        total = total + usage
    return total


def default_report_path(run: str, folder: Path | None = None) -> Path:
    """`skillgit-report-<run>.html` in `folder` (default: the current folder)."""
    return (folder or Path.cwd()) / f"skillgit-report-{run}.html"
