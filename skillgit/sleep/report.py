"""A night's report in Markdown: for the person who reviews the night, and as a pull-request body.

`render(record)` is a pure function of the `NightRecord`: counts of what was harvested and skipped (and why), what
was mined and replayed, the scores before and after, every accepted and rejected edit with the gate's reason, the
cost and the redaction counts. It contains no transcript text: only counts, task ids and the skill's edits. Text a
model wrote (edits, the gate's reasons) and names read from the record enter through `textsafe.inert_markdown` /
`textsafe.code_span`: no image, link, autolink, raw HTML or mention survives into the rendered report.
"""

from __future__ import annotations

from typing import Any, Mapping

from skillgit.sleep.state import NightRecord
from skillgit.textsafe import code_span, inert_markdown

_STATUS = {
    "finished": "finished",
    "stopped": "stopped at a budget",
    "waiting": "waiting for handoff answers",
    "nothing": "nothing to train on",
}


def _num(value: Any) -> str:
    return "–" if value is None else f"{float(value):.3f}"


def _pairs(data: Mapping[str, Any]) -> str:
    return ", ".join(inert_markdown(f"{k} {v}") for k, v in data.items()) if data else "none"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table; its cells are Markdown already (untrusted text passed through `inert_markdown`)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell.replace("\n", " ") for cell in row) + " |" for row in rows]
    return lines


def _scores(r: NightRecord) -> list[str]:
    return ["", "## Scores", ""] + _table(["", "before", "after"], [
        [split, _num(r.score("seed", split)), _num(r.score("final", split))] for split in ("val", "test")])


def _skills(r: NightRecord) -> list[str]:
    """A library night: one row per skill — its routed and replayed tasks, its own gate's decisions and scores."""
    rows = []
    for k in r.skills:
        t = k.tasks
        moved = [f"{_num(k.score('seed', split))} → {_num(k.score('final', split))}" for split in ("val", "test")]
        rows.append([code_span(k.name), str(t.routed or 0), f"{t.used} ({t.train} / {t.val} / {t.test})",
                     f"{k.accepted} / {k.rejected}", *moved,
                     inert_markdown(k.status + (f": {k.reason}" if k.reason else ""))])
    return ["", "## Skills", "", "Each library skill trained on the tasks routed to it (the skill its sessions "
            "invoked), gated on its own; one budget for the night.", ""] + _table(
        ["skill", "routed", "replayed (train / val / test)", "accepted / rejected", "val", "test", "status"], rows)


def render(record: NightRecord) -> str:
    r = record
    status = _STATUS.get(r.status, r.status)
    lines = [f"# skillgit sleep: night of {r.date}", ""]
    lines.append(f"**{inert_markdown(status)}**" + (f" — {inert_markdown(r.reason)}" if r.reason else ""))
    lines.append("")
    if r.branch:
        lines.append(f"Trained on branch {code_span(r.branch)} (run {code_span(r.run)}), starting from "
                     f"{code_span(r.skill_branch)} at {code_span(r.base[:12])}; the skill branch itself was not "
                     f"touched. Adopt it after review with {code_span(f'skillgit sleep adopt {r.date}')}.")
        lines.append("")
    h, m, t = r.harvest, r.mined, r.tasks
    lines += ["## Harvest and mining", ""]
    lines += _table(["", "count"], [
        ["sessions harvested (new or grown)", str(h.sessions)],
        ["sessions skipped", f"{sum(h.skipped.values())} ({_pairs(h.skipped)})"],
        ["format warnings", str(h.warnings)],
        ["task units / groups", f"{m.units} / {m.groups}"],
        ["tasks mined tonight (new)", f"{m.tasks} ({m.new_tasks})"],
        ["tasks in the task file", str(t.in_file)],
        ["tasks replayed (train / val / test)", f"{t.used} ({t.train} / {t.val} / {t.test})"],
        ["of them judged by the teacher against a rubric", str(t.judged)],
    ])
    if t.excluded:
        lines += ["", "Left out: " + "; ".join(inert_markdown(f"{n} × {why}") for why, n in t.excluded.items()) + "."]
    if t.repinned:
        lines += ["", "Pinned to a commit this repository does not have: "
                  + "; ".join(inert_markdown(f"{n} × {how}") for how, n in t.repinned.items()) + "."]
    approval = {"header": "Transcript-derived tasks went to the models because the task file's header says "
                          "`reviewed: true`.",
                "--yes": "Transcript-derived tasks went to the models unreviewed: `--yes` was given.",
                "offline": "No transcript-derived text left this machine: only the offline simulated world was used."
                }.get(t.approval, "")
    if approval:
        lines += ["", approval]
    if t.simulated:
        lines += ["", "_This night ran on the offline simulated world: a simulation of the pipeline, not learning "
                      "from real work._"]
    lines += _skills(r) if r.skills else _scores(r)
    lines += ["", f"{r.accepted} step(s) accepted, {r.rejected} rejected by the gate.", ""]
    if r.edits:
        lines += ["## Decisions", ""]
        rows = []
        by_run = {k.run: k.name for k in r.skills}
        for e in r.edits:
            edits = "<br>".join(inert_markdown(x) for x in e.edits) or "–"
            rows.append(([inert_markdown(by_run.get(e.run, e.run))] if r.skills else [])
                        + [inert_markdown(e.step), inert_markdown(e.verdict.value), f"{e.delta:+.3f}", edits,
                           inert_markdown(e.reason)])
        lines += _table((["skill"] if r.skills else []) + ["step", "verdict", "Δ val", "edits", "gate"], rows)
        lines.append("")
    u, b = r.usage, r.budget
    lines += ["## Cost and privacy", ""]
    lines.append(f"- model calls {u.calls}, tokens {u.total_tokens:,}, cost ${u.cost_usd:.4f}")
    lines.append("- budgets: " + _pairs({k: v for k, v in b.to_dict().items() if v is not None}))
    lines.append("- redactions in harvested text: " + _pairs(r.redactions.to_dict()))
    if r.handoff is not None:
        lines.append(f"- handoff folder {code_span(r.handoff.folder)}: {r.handoff.answered} answered, "
                     f"{r.handoff.pending} pending")
    lines.append("")
    return "\n".join(lines)
