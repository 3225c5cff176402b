"""The summary `skillgit show REV` opens with: what a reviewer asks first, in reading order.

Contract: `summary(store, detail)` returns plain text (the caller passes it through `textsafe.shown` before it
reaches a terminal): the verdict, val before → after with Δ and coverage, the gate's reason, which val items
flipped (fixed / broke / unknown — or that the parent's per-item scores were not recorded), each applied edit with
its rationale, the diff and the cost. A revert says what it restored and why; a commit skillgit did not decide
shows its message and diff. `--full` (every note record) and `--json` stay the CLI's. Never fails on a bad note:
corrupt lines are counted, note fields of the wrong type listed (`skipped_text`).
"""

from __future__ import annotations

from skillgit.review.data import ItemFlips, StepReview, step_review
from skillgit.store import Store
from skillgit.store.read import StepDetail

MAX_ITEMS = 12  # item ids listed per flip kind before "… and N more"


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "?"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _ids(ids: tuple[str, ...]) -> str:
    if not ids:
        return "none"
    shown = ", ".join(ids[:MAX_ITEMS])
    return shown + (f" … and {len(ids) - MAX_ITEMS} more" if len(ids) > MAX_ITEMS else "")


def flips_lines(flips: ItemFlips, scored: bool = True) -> list[str]:
    """The "which val items flipped" lines shared by `show`, `pr` and `check`."""
    if not scored:
        return ["not scored (the candidate was rejected before the gate)"]
    if not flips.recorded:
        return ["flips not recorded (the parent's per-item val scores are not in its notes)"]
    lines = [f"fixed ({len(flips.fixed)}): {_ids(flips.fixed)}", f"broke ({len(flips.broke)}): {_ids(flips.broke)}"]
    if flips.unknown:
        lines.append(f"unknown on one side ({len(flips.unknown)}): {_ids(flips.unknown)}")
    return lines


def _decision_text(detail: StepDetail, d: StepReview) -> list[str]:
    o = d.outcome
    where = f"{o.kind.value}, epoch {o.epoch}" if o.epoch else o.kind.value
    tag = f" · tag {d.tag}" if d.tag else ""
    out = [f"{o.verdict.value} {d.label} ({where}) · commit {detail.sha[:12]}{tag}",
           f"val {_num(o.score_before)} → {_num(o.score_after)}  Δ {_num(o.delta, True)}"
           + (f" · {o.coverage.describe()}" if o.coverage else ""),
           f"gate: {o.reason or d.gate_reason or '(no reason recorded)'}", ""]
    out += ["val items (pass = score ≥ 0.5):", *(f"  {line}" for line in flips_lines(d.flips, scored=bool(d.items)))]
    applied = d.update.applied if d.update else ()
    considered = len(d.update.apply) if d.update else 0
    out += ["", f"edits: {len(applied)} applied of {considered} considered" if considered else "edits: none recorded"]
    for n, result in enumerate(applied, 1):
        edit = result.edit
        out.append(f"  {n}. {edit.summary(100)}")
        if edit.target and edit.op != "append":
            out.append(f"     at: {' '.join(edit.target.split())[:100]}")
        if edit.rationale:
            out.append(f"     why: {' '.join(edit.rationale.split())}")
    u = o.usage
    out += ["", f"cost: ${u.cost_usd:.4f} · {u.calls} calls · {u.prompt_tokens:,} prompt + "
                f"{u.completion_tokens:,} completion tokens"]
    if d.train_score is not None:  # not a cost: the score of the rollouts this step learned from
        out.append(f"train batch: {d.train_score:.4f} (mean rollout score of the skill before this step's edits, "
                   f"on the step's train items)")
    return out


MAX_SKIPPED = 8  # malformed note fields listed before "… and N more"


def skipped_text(skipped: tuple[str, ...], sha: str) -> str:
    """The lines that say which note fields were left out as malformed (empty when none were)."""
    if not skipped:
        return ""
    lines = [f"\n(note fields of the wrong type skipped: {len(skipped)}; see git notes --ref skillgit show "
             f"{sha[:12]})"] + [f"  {line}" for line in skipped[:MAX_SKIPPED]]
    if len(skipped) > MAX_SKIPPED:
        lines.append(f"  … and {len(skipped) - MAX_SKIPPED} more")
    return "\n".join(lines) + "\n"


def summary(store: Store, detail: StepDetail, rev: str = "") -> str:
    """The human summary of one revision (see the module's contract)."""
    rev = rev or detail.rev
    decision = step_review(store, detail)
    if decision is not None:
        lines = _decision_text(detail, decision)
    elif detail.revert is not None:
        r = detail.revert
        lines = [f"revert ({r.mode or '?'}) · commit {detail.sha[:12]}",
                 f"restored: {r.target[:12] or '?'} · reason: {r.reason or 'none given'}"]
    else:
        lines = [f"commit {detail.sha[:12]} (not a skillgit decision): {detail.subject}"]
    lines += ["", "diff:" if detail.diff else "diff: (no change to the skill)"]
    text = "\n".join(lines) + "\n" + detail.diff
    if not text.endswith("\n"):
        text += "\n"
    if detail.corrupt_lines:
        text += (f"\n({detail.corrupt_lines} corrupt note line(s) skipped: "
                 f"git notes --ref skillgit show {detail.sha[:12]})\n")
    text += skipped_text(detail.skipped, detail.sha)
    return text + f"\nmore: skillgit show {rev} --full (every note record) · skillgit show {rev} --json\n"
