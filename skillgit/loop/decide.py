"""The one gated-commit path: candidate → gate → commit → decide → notes.

Every producer of a candidate (a numbered step, an epoch's slow update and meta reflect; later sleep and `check`)
hands a `Proposal` to `gated_commit`. Contract:
- The candidate commit's parent is `proposal.base`, the tip whose skill text the candidate was derived from —
  never whatever the branch points to now — and the decision moves the branch with compare-and-swap on that base.
  So a commit, `skillgit revert` or `skillgit pull` that landed on the skill branch while the step worked is never
  built over: `BranchMoved` is raised, nothing is decided, the candidate ref is dropped, and the run stops
  (exit 3) with a hint naming the commit that moved the branch; `skillgit train` continues from the new tip.
- An unchanged or invalid candidate is rejected without scoring (its reason says why), and so is one that copies
  an expected answer into the skill or outgrows the skill's size budget (`guards.py`).
- The gate compares on the val items both skills were scored on, retrying unknown ones first, and refuses to
  judge below `evaluation.min_val_coverage` (see `gate.decide`). The incumbent is scored again in the same wave
  as its candidate (the blob cache answers only within a step's round), and its earlier score is a null control:
  when the two disagree beyond the bar, or the student's fingerprint changed, the gate refuses to judge
  (`evaluation.reuse_incumbent_score: true` skips the re-scoring and its protection). A run's student calls are
  its own (`evidence.py`: a salt in their journal keys), so the re-scoring is a new measurement even when an
  earlier run scored the same text in a round of the same number; the gate note's `incumbent` says so.
  `force` (an unconditional slow update) accepts whatever the gate said and records what it said.
- The candidate, gate and decision notes land in the same ref transaction as the branch move or rejected tag, so
  a decision never exists without its why; every string a model wrote is redacted and stripped of control
  characters before it reaches a commit message, trailer or note.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass
from typing import Any, Mapping

from skillgit import redact, textsafe
from skillgit.loop import gate as gate_mod
from skillgit.loop import guards
from skillgit.loop.context import StepContext
from skillgit.records import (
    CandidateNote,
    ControlSummary,
    GateNote,
    StageUsage,
    StepKind,
    StepOutcome,
    UpdateRecord,
    Verdict,
    to_float,
)
from skillgit.store import Store
from skillgit.store import refs as R
from skillgit.store.core import BranchMoved
from skillgit.store.negative import NegativeBuffer
from skillgit.types import Edit, Item

__all__ = ["Proposal", "Judgement", "judge", "commit", "gated_commit", "best_of", "outranked", "rival_step",
           "BranchMoved", "subject_of"]


@dataclass(frozen=True)
class Proposal:
    step: int | str
    epoch: int  # 0-based
    kind: StepKind
    base: str  # the commit the candidate was derived from
    before: str  # the skill text at `base`
    after: str  # the candidate's skill text
    record: UpdateRecord
    force: bool = False
    # the step's train batch and its scores with the base skill (the `two_split` gate re-scores it with the candidate)
    batch: tuple[Item, ...] = ()
    train_before: gate_mod.SplitScore | None = None


def subject_of(kind: StepKind, applied: list[Edit], delta: float) -> str:
    if not applied:
        head = "no applicable edit"
    else:
        head = applied[0].summary(56)
        if len(applied) > 1:
            head += f" (+{len(applied) - 1} more)"
    return textsafe.clean(f"{kind.subject_prefix}: {head} ({delta * 100:+.1f} val)", multiline=False)


def _guard(ctx: StepContext, p: Proposal) -> str | None:
    """Leakage (expected answers, the judge's own text) and size, checked before anything is scored (guards.py)."""
    items, ngram = (*ctx.train, *ctx.evaluator.splits.get("val", ())), ctx.cfg.optimizer.leak_ngram
    return guards.leak(p.before, p.after, [(i.id, i.expected) for i in items], ngram) or \
        guards.judge_leak(p.before, p.after, guards.judge_texts(ctx.scorer, items), ngram) or \
        guards.size(p.after, ctx.cfg.skill.max_tokens, ctx.cfg.skill.max_description_chars, before=p.before)


@dataclass(frozen=True)
class Judgement:
    """The gate's word on one proposal: `score` is the candidate's val score (`current` when it was not scored:
    unchanged, invalid, leaking or oversized); `base` the incumbent's score it was compared with (this round's,
    or the reused earlier one) and `controls` the incumbent's other scorings (None / () when nothing was scored)."""

    result: gate_mod.GateResult
    score: gate_mod.SplitScore
    scored: bool
    base: gate_mod.SplitScore | None = None
    controls: tuple[gate_mod.SplitScore, ...] = ()

    def incumbent(self, current: gate_mod.SplitScore) -> gate_mod.SplitScore:
        """The incumbent's freshest val score: this round's when it was scored again, else `current`."""
        return self.base if self.base is not None else current


def judge(ctx: StepContext, p: Proposal, current: gate_mod.SplitScore, *, candidates: int = 1) -> Judgement:
    """Guard, score and gate `p` against the incumbent (`current`: its val score from an earlier round);
    `candidates` is how many proposals of the step are gated together (it raises the significance bar:
    `gate.decide`); in a run (`ctx.spending`) the bar is the run's next test's α (`loop/spending.py`), and the
    verdict carries that `Spending` (not counted when nothing is tested: unscored, forced, gate off). Unless
    `evaluation.reuse_incumbent_score`, the incumbent is scored again in the same wave as the candidate (the round
    is the step), and `current` becomes a null control (with a byte-identical copy when `evaluation.control_copy`).
    Writes nothing."""
    ecfg = ctx.cfg.evaluation
    metric, weight = ecfg.gate_metric, ecfg.mixed_weight
    problem = p.record.invalid or (None if p.after == p.before else _guard(ctx, p))
    spent = ctx.spending.next() if ctx.spending is not None else None
    if spent is not None and (p.force or not ecfg.use_gate):
        spent = dataclasses.replace(spent, counted=False)
    if p.after == p.before or problem:
        score = current.mean(metric, weight)
        unscored = dataclasses.replace(spent, counted=False) if spent is not None else None
        return Judgement(gate_mod.GateResult(False, score, score, problem or "no edit could be applied",
                                             spending=unscored), current, False)
    ctx.stage(p.step, "gate")
    progress = ctx.progress(p.step, "gate")
    controls: list[gate_mod.SplitScore] = []
    with ctx.ledger.timed("gate"):
        if ecfg.reuse_incumbent_score:
            base = current
            cand_score = ctx.evaluator.score(p.after, "val", progress, round=p.step)
        else:
            texts: list[str | tuple[str, int]] = [p.before, p.after]
            if ecfg.control_copy:
                texts.append((p.before, 1))
            scored = ctx.evaluator.score_many(texts, "val", progress, round=p.step)
            base, cand_score = scored[0], scored[1]
            if current.blob == base.blob and current is not base and current.round != base.round:
                controls.append(current)
            controls.extend(scored[2:])
    train_after = None
    if p.batch and p.train_before is not None and "two_split" in gate_mod.planned_checks(ecfg.gate):
        with ctx.ledger.timed("gate"):
            train_after = ctx.evaluator.score_items(p.after, list(p.batch), "train", round=p.step)
    verdict = gate_mod.decide(ecfg, base, cand_score, items=[i.id for i in ctx.evaluator.splits["val"]],
                              seed=zlib.crc32(f"{ctx.cfg.train.seed}:{p.step}".encode()),
                              train_before=p.train_before if train_after is not None else None,
                              train_after=train_after, candidates=candidates, controls=controls, spent=spent)
    if p.force and not verdict.accept:
        verdict = dataclasses.replace(verdict, accept=True,
                                      reason=f"forced by configuration (gate said: {verdict.reason})")
    return Judgement(verdict, cand_score, True, base, tuple(controls))


def gated_commit(ctx: StepContext, store: Store, run: str, seq: int, proposal: Proposal,
                 current: gate_mod.SplitScore, usage_before: Mapping[str, Any], *,
                 negative: NegativeBuffer | None = None) -> tuple[StepOutcome, gate_mod.SplitScore]:
    """Gate `proposal` against `current` (the base's val score), commit it as a candidate on its base and decide
    it (`negative`: as `commit`). Returns the outcome and the val score of the skill the branch now holds (the
    freshest one)."""
    judgement = judge(ctx, proposal, current)
    outcome = commit(ctx, store, run, seq, proposal, judgement, current, ctx.ledger.diff_since(usage_before),
                     negative=negative)
    return outcome, (judgement.score if judgement.result.accept else judgement.incumbent(current))


def _incumbent_basis(ctx: StepContext, scored: bool) -> str:
    """What the incumbent's side of the comparison rests on, as the gate note says it."""
    if not scored:
        return ""
    if ctx.cfg.evaluation.reuse_incumbent_score:
        return "reused its earlier score"
    if ctx.own_samples:
        return "scored again in this round, on this run's own samples"
    return ("scored again in this round (a run begun before runs had their own samples: the call journal may "
            "answer it from an earlier run)")


def _control_summary(score: gate_mod.SplitScore, metric: str, weight: float) -> ControlSummary:
    """A null control in the gate note: where and how it was scored (its items are in its own round's note)."""
    return ControlSummary(score.round, score.blob, round(score.mean(metric, weight), 6), len(score.per_item),
                          score.sample_count(), dict(score.fingerprint))


def rival_step(step: int, number: int) -> str:
    """The name of step `step`'s proposal `number` when another proposal of that step was kept as step `step`."""
    return f"s{step}-p{number}"


def best_of(judgements: list[Judgement], metric: str, weight: float) -> int | None:
    """The index of the proposal to keep among those the gate accepted: the highest val score, the first of
    equals (proposal order is seeded, so the choice is reproducible). None when the gate accepted none."""
    accepted = [i for i, j in enumerate(judgements) if j.result.accept]
    if not accepted:
        return None
    return max(accepted, key=lambda i: (judgements[i].score.mean(metric, weight), -i))


def outranked(j: Judgement, winner: str, winner_score: float) -> Judgement:
    """A proposal the gate accepted that another of its step beat: rejected, saying so (it joins the negative
    buffer with its gain, so as a soft example: only edits rejected without a gain are blocked)."""
    if not j.result.accept:
        return j
    reason = (f"passed the gate but step {winner} scored higher ({winner_score:.4f} vs {j.result.after:.4f}); "
              f"gate: {j.result.reason}")
    return dataclasses.replace(j, result=dataclasses.replace(j.result, accept=False, reason=reason))


def commit(ctx: StepContext, store: Store, run: str, seq: int, p: Proposal, judgement: Judgement,
           current: gate_mod.SplitScore, usage: Mapping[str, Any], *,
           negative: NegativeBuffer | None = None) -> StepOutcome:
    """Commit `p` as a candidate on its base and decide it as `judgement` says, with its notes, in one ref
    transaction (`usage`: the calls booked to this candidate). A rejection's edits join `negative` (a run's
    running negative buffer) once decided."""
    ecfg = ctx.cfg.evaluation
    metric = ecfg.gate_metric
    verdict, cand_score = judgement.result, judgement.score
    applied = [r.edit for r in p.record.applied]
    reason = textsafe.clean(redact.redact(verdict.reason), multiline=False)
    summaries = tuple(textsafe.clean(redact.redact(e.summary(100)), multiline=False) for e in applied)
    cost = StageUsage.from_dict(usage)
    outcome = StepOutcome(run=run, step=str(p.step), kind=p.kind, epoch=p.epoch + 1, seq=seq,
                          verdict=Verdict.ACCEPTED if verdict.accept else Verdict.REJECTED,
                          score_before=round(verdict.before, 6), score_after=round(verdict.after, 6), reason=reason,
                          edits=summaries, coverage=verdict.coverage, p_value=verdict.p_value, usage=cost.total)
    trailers = {R.TRAILER_RUN: run, R.TRAILER_STEP: str(p.step), R.TRAILER_SEQ: str(seq),
                R.TRAILER_EPOCH: str(p.epoch + 1), R.TRAILER_STEP_KIND: p.kind.value,
                R.TRAILER_METRIC: f"val.{metric}", R.TRAILER_SCORE: f"{verdict.after:.4f}",
                R.TRAILER_DELTA: f"{verdict.delta:+.4f}", R.TRAILER_TOKENS: str(guards.estimate_tokens(p.after))}
    body = "\n".join(f"- {s}" for s in summaries) or "(no edit applied)"
    candidate = CandidateNote(run, str(p.step), p.epoch + 1, p.kind, p.record, cost, tuple(applied))
    controls = verdict.check("controls")
    gate = GateNote(run, str(p.step), metric, round(verdict.before, 6), round(verdict.after, 6), verdict.p_value,
                    reason, verdict.coverage, cand_score.record() if judgement.scored else None,
                    # the parent's per-item val scores as compared (this round's): which items flipped
                    judgement.incumbent(current).record(), verdict.checks, verdict.fixed, verdict.broke,
                    incumbent=_incumbent_basis(ctx, judgement.scored),
                    controls=tuple(_control_summary(c, metric, ecfg.mixed_weight) for c in judgement.controls),
                    noise_floor=to_float(controls.numbers.get("noise_floor")) if controls is not None else None,
                    spending=verdict.spending)
    ctx.stage(p.step, "decide")
    cand = store.propose(p.after, base=p.base, run=run, step=p.step, subject=subject_of(p.kind, applied, verdict.delta),
                         body=body, trailers=trailers, note=[redact.redact_mapping(candidate.to_note())],
                         defer_note=True)
    try:
        decision = store.decide(cand, accept=verdict.accept, reason=reason, score_before=verdict.before,
                                score_after=verdict.after, note=[gate], decision=outcome)
    except BranchMoved:
        store.discard(cand)  # nothing was decided: leave no pending candidate behind
        raise
    if ctx.spending is not None:
        ctx.spending.remember(cand.sha, verdict.spending, verdict.accept)
    if negative is not None:
        negative.add(decision)
    return dataclasses.replace(outcome, sha=cand.sha, parent=cand.parent)
