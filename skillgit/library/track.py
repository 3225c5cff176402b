"""The activation track: train one skill's `description` (and `name`) so that it fires when it should, gated.

Contract (`judge`), in order, each stage able to reject:
1. **The edit**: the candidate differs from the incumbent only in the front matter's `name` and `description`
   (every other byte kept), within the host's limits (`model.check_listing`); else rejected, nothing scored.
2. **The listing budget**: the library's listing with the candidate (names and descriptions) must fit
   `listing_budget` characters; else rejected *before any scoring call*.
3. **The gate**: the skill's held-out (val) trigger cases are scored with the incumbent and with the candidate,
   each with the whole library listed, one item per case (1 when it fired as it should), and `gate.decide` judges
   with the run's `evaluation` settings (the item is the unit of evidence; a case the router could not score is
   unknown, and too many unknowns make the gate refuse: `min_val_coverage`).
4. **Interference**: every other skill's val cases are scored with both libraries; a skill any of whose cases
   went from right to wrong beyond what noise explains (the gate's `per_item` bar: `stats.chance_of_drop`,
   `item_tolerance`, `paired_alpha`) rejects the candidate with that reason, naming the skill and the cases.
A verdict (`ActivationVerdict`) says which stage decided, with the numbers; `note()` is its git note record.
`train` runs steps of teacher → judge → commit: every candidate is a commit on `candidates/*`, accepted ones
fast-forward the branch, rejected ones become `rejected/*` tags, with a gate note and an activation note. A
teacher's description is redacted (`skillgit.redact`) before anything reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

from skillgit import redact
from skillgit.config import EvaluationCfg
from skillgit.errors import SkillgitError
from skillgit.library.activation import CaseResult, Router, SkillMetrics, metrics, score_cases, split_score
from skillgit.library.model import (
    DESCRIPTION_LIMIT,
    LISTING_BUDGET,
    Library,
    TriggerCase,
    cases_of,
    check_listing,
    front_matter,
)
from skillgit.loop import gate, stats
from skillgit.loop.gate import GateResult

if TYPE_CHECKING:
    from skillgit.library.model import Listing
    from skillgit.store.core import Store

STAGES = ("edit", "budget", "gate", "interference", "accepted")


class DescriptionTeacher(Protocol):
    """Proposes a new description from the skill's train results (see `library.teacher`); None: nothing to try."""

    def propose(self, skill: str, description: str, results: Sequence[CaseResult], listings: Sequence[Listing],
                rejected: Sequence[tuple[str, str]]) -> str | None: ...


@dataclass(frozen=True)
class TrackCfg:
    listing_budget: int = LISTING_BUDGET
    description_limit: int = DESCRIPTION_LIMIT


@dataclass(frozen=True)
class Interference:
    """Another skill's activation under the candidate: the cases that went right → wrong, and whether that is
    beyond noise (`harmed`)."""

    skill: str
    before: SkillMetrics | None
    after: SkillMetrics | None
    broke: tuple[str, ...] = ()
    noise_p: float = 1.0
    harmed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"skill": self.skill, "broke": list(self.broke), "noise_p": round(self.noise_p, 6),
                "harmed": self.harmed, "f1_before": _f1(self.before), "f1_after": _f1(self.after)}


def _f1(m: SkillMetrics | None) -> float | None:
    return round(m.f1, 4) if m is not None else None


def _shown(m: SkillMetrics | None) -> str:
    return f"{m.f1:.2f}" if m is not None else "—"


@dataclass(frozen=True)
class ActivationVerdict:
    skill: str
    accept: bool
    stage: str  # one of STAGES: where it was decided
    reason: str
    listing_chars: int
    gate: GateResult | None = None
    before: SkillMetrics | None = None
    after: SkillMetrics | None = None
    interference: tuple[Interference, ...] = ()
    scored: bool = False  # any trigger case was routed for it

    def note(self) -> dict[str, Any]:
        return {"kind": "activation", "skill": self.skill, "accept": self.accept, "stage": self.stage,
                "reason": self.reason, "listing_chars": self.listing_chars, "f1_before": _f1(self.before),
                "f1_after": _f1(self.after), "interference": [i.to_dict() for i in self.interference]}


def check_edit(old: str, new: str, cfg: TrackCfg = TrackCfg()) -> str | None:
    """Why `new` is not a listing-only edit of `old` within the limits (None when it is)."""
    try:
        old_data, old_block = front_matter(old, "incumbent")
        new_data, new_block = front_matter(new, "candidate")
    except SkillgitError as exc:
        return exc.message
    if old[len(old_block):] != new[len(new_block):]:
        return "the activation track edits only the front matter's name and description; the body changed"
    changed = sorted(k for k in set(old_data) | set(new_data)
                     if k not in ("name", "description") and old_data.get(k) != new_data.get(k))
    if changed:
        return f"front matter key(s) {', '.join(changed)} changed; only name and description may"
    name, desc = new_data.get("name"), new_data.get("description")
    if not isinstance(name, str) or not isinstance(desc, str) or not desc.strip():
        return "the candidate needs a name and a non-empty description"
    if len(desc) > cfg.description_limit:
        return f"description is {len(desc)} characters, over the limit of {cfg.description_limit}"
    try:
        check_listing(name, desc, "candidate", cfg.description_limit)
    except SkillgitError as exc:
        return exc.message
    return None


def judge(library: Library, skill: str, candidate: str, cases: Sequence[TriggerCase], router: Router,
          cfg: EvaluationCfg, track: TrackCfg = TrackCfg(), *, seed: int = 0, split: str = "val"
          ) -> ActivationVerdict:
    """Decide a candidate text for `skill` (see the module docstring); `cases` are every skill's cases, of which
    the `split` ones are scored."""
    old = library.skill(skill).text
    chars = library.listing_chars()
    why = check_edit(old, candidate, track)
    if why is not None:
        return ActivationVerdict(skill, False, "edit", f"invalid edit: {why}", chars)
    cand_lib = library.replaced(skill, candidate)
    chars = cand_lib.listing_chars()
    if chars > track.listing_budget:
        return ActivationVerdict(skill, False, "budget",
                                 f"listing budget: the library's names and descriptions would take {chars} "
                                 f"characters, over the budget of {track.listing_budget} (the host would drop "
                                 f"skills from its listing); not scored", chars)
    held = cases_of(cases, split=split)
    own = [c for c in held if c.skill == skill]
    if not own:
        raise SkillgitError(f"skill {skill!r} has no {split} trigger cases", "give it held-out cases to gate on")
    unknown_b: dict[str, str] = {}
    unknown_a: dict[str, str] = {}
    before_r = score_cases(router, library, held, errors=unknown_b)
    after_r = score_cases(router, cand_lib, held, errors=unknown_a)
    own_ids = [c.id for c in own]
    b = split_score([r for r in before_r if r.case.skill == skill], old, split,
                    errors={k: v for k, v in unknown_b.items() if k in own_ids})
    a = split_score([r for r in after_r if r.case.skill == skill], candidate, split,
                    errors={k: v for k, v in unknown_a.items() if k in own_ids})
    result = gate.decide(cfg, b, a, seed=seed, items=own_ids)
    mb, ma = metrics(before_r), metrics(after_r)
    hurt = tuple(_interference(cfg, other, before_r, after_r, mb, ma)
                 for other in library.names if other != skill and any(c.skill == other for c in held))
    def verdict(accept: bool, stage: str, reason: str) -> ActivationVerdict:
        return ActivationVerdict(skill, accept, stage, reason, chars, result, mb.get(skill), ma.get(skill), hurt,
                                 scored=True)

    harmed = [i for i in hurt if i.harmed]
    if harmed:
        worst = harmed[0]
        shown = ", ".join(worst.broke[:5]) + (f" and {len(worst.broke) - 5} more" if len(worst.broke) > 5 else "")
        more = f"; also {', '.join(i.skill for i in harmed[1:])}" if len(harmed) > 1 else ""
        p = "<0.001" if worst.noise_p < 1e-3 else f"={worst.noise_p:.3f}"
        reason = (f"interference: skill {worst.skill!r} lost {len(worst.broke)} {split} trigger case(s) ({shown}; "
                  f"F1 {_shown(worst.before)} → {_shown(worst.after)}, beyond noise p{p}){more}; "
                  f"own gate: {result.reason}")
        return verdict(False, "interference", reason)
    if not result.accept:
        return verdict(False, "gate", result.reason)
    return verdict(True, "accepted", result.reason)


def _interference(cfg: EvaluationCfg, other: str, before: Sequence[CaseResult], after: Sequence[CaseResult],
                  mb: dict[str, SkillMetrics], ma: dict[str, SkillMetrics]) -> Interference:
    was = {r.case.id: 1.0 if r.correct else 0.0 for r in before if r.case.skill == other}
    now = {r.case.id: 1.0 if r.correct else 0.0 for r in after if r.case.skill == other}
    drops = [k for k in was if k in now and was[k] - now[k] > cfg.item_tolerance + stats.EPS]
    chances = [stats.chance_of_drop([was[k]], [now[k]], cfg.item_tolerance) for k in was if k in now]
    p = stats.tail_at_least(chances, len(drops)) if drops else 1.0
    return Interference(other, mb.get(other), ma.get(other), tuple(sorted(drops)), p,
                        bool(drops) and p < cfg.paired_alpha)


# ---------------------------------------------------------------------------------------------- the loop
def earlier_rejections(store: Store, skill: str, limit: int = 20) -> list[tuple[str, str]]:
    """The negative buffer of the activation track: (description, reason) of `skill`'s rejected candidates of
    earlier runs, oldest first, from the `rejected/*` tags and their activation notes (a collaborator's tag that
    is not one is skipped), so a new run does not propose them again."""
    from skillgit.library.model import listing_of

    found: list[tuple[str, str, str]] = []
    for row in store.repo.for_each_ref(["refname", "*objectname", "objectname", "creatordate:unix"],
                                       "refs/tags/rejected/"):
        if len(row) < 4:
            continue
        commit = row[1] or row[2]
        note = next((r for r in store.read_notes(commit) if r.get("kind") == "activation"
                     and r.get("skill") == skill), None)
        if note is None:
            continue
        try:
            description = listing_of(store.read_skill(commit)).description
        except SkillgitError:
            continue
        found.append((row[3], description, str(note.get("reason") or "")))
    return [(d, why) for _, d, why in sorted(found)][-limit:]


@dataclass
class StepRecord:
    step: int
    verdict: ActivationVerdict
    description: str
    commit: str = ""


@dataclass
class TrackRun:
    skill: str
    steps: list[StepRecord] = field(default_factory=list)

    @property
    def accepted(self) -> int:
        return sum(1 for s in self.steps if s.verdict.accept)


def train(stores: Mapping[str, Store], skill: str, cases: Sequence[TriggerCase], router: Router,
          teacher: DescriptionTeacher,
          cfg: EvaluationCfg, track: TrackCfg = TrackCfg(), *, run: str, steps: int, seed: int = 0,
          on_step: Callable[[StepRecord], None] | None = None, start: int = 1) -> TrackRun:
    """`steps` activation steps for `skill`, numbered from `start` (a run continued one step at a time, as
    `train --all --activation` does). `stores` maps each skill's name to its `store.core.Store` (all on one
    branch); the library is read from the branch tip each step. The teacher sees train cases only
    (`teacher.propose(skill, description, train results, listings, rejected) -> description | None`)."""
    from skillgit.library.model import LibrarySkill, listing_of, with_listing
    from skillgit.records import GateNote

    out = TrackRun(skill)
    rejected = earlier_rejections(stores[skill], skill)
    for step in range(start, start + steps):
        library = Library.of(LibrarySkill(s.skill_path, s.read_skill()) for s in stores.values())
        incumbent = library.skill(skill)
        train_results = score_cases(router, library, cases_of(cases, split="train"))
        own = [r for r in train_results if r.case.skill == skill]
        new_desc = teacher.propose(skill, incumbent.listing.description, own, library.listings(), rejected)
        # teacher text is untrusted: secrets it echoes (from prompts, other skills, its own output) are masked
        # before the description is judged, committed, noted or shown
        new_desc = redact.redact(new_desc) if new_desc else new_desc
        if not new_desc or new_desc == incumbent.listing.description:
            break
        text = with_listing(incumbent.text, description=new_desc)
        verdict = judge(library, skill, text, cases, router, cfg, track, seed=seed + step)
        store = stores[skill]
        base = listing_of(incumbent.text).description
        body = (f"Track: activation\nSkill: {skill}\n\nDescription before:\n  {base}\n\nDescription after:\n"
                f"  {new_desc}\n")
        cand = store.propose(text, run=run, step=step, subject=f"activation: {skill} description (step {step})",
                             body=body, trailers={}, note=[], defer_note=True)
        g = verdict.gate
        gate_note = GateNote(run, str(step), cfg.gate_metric, g.before if g else None, g.after if g else None,
                             g.p_value if g else None, verdict.reason, g.coverage if g else None,
                             checks=g.checks if g else (), fixed=g.fixed if g else (), broke=g.broke if g else ())
        decision = store.decide(cand, accept=verdict.accept, reason=verdict.reason,
                                score_before=g.before if g else 0.0, score_after=g.after if g else 0.0,
                                note=[gate_note, verdict.note()])
        record = StepRecord(step, verdict, new_desc, decision.commit)
        out.steps.append(record)
        if not verdict.accept:
            rejected.append((new_desc, verdict.reason))
        if on_step is not None:
            on_step(record)
    return out
