"""Deep reflect in the simulated world: how the simulated student answers a probe and how the simulated teacher
probes and reads the transcripts (skillgit/loop/deep_reflect.py writes the probes; this module reads them as text).

Student side (`student_reply`): a probe arrives as the student's task input in deep reflect's formats (the
markers below, checked against loop/deep_reflect.py by tests/test_deep_reflect.py):
- a re-run (`<task>\\n\\nA hint for this task: <hint>`): the task is solved again with the hint read as one more
  instruction of the skill (a real model follows instructions in its user message too);
- a follow-up question (`Earlier you were given this task: … Your answer was: … A follow-up question …`): the
  student reports, per topic that matters for the record, what its skill says (quoting the sentence) and whether
  its earlier answer followed it, and which instruction made it do a harmful thing. It introspects its skill and
  its own answer only: it never sees an expected answer.
Teacher side: `probe_answer` chooses the probes of a turn (a question first, then re-runs that test a candidate
fix for a symptom the student could not explain as a slip); `Evidence.read` is what reflect takes from the
transcripts: topics the student slipped on (no edit needed), fixes a re-run confirmed (proposed first), fixes a
re-run refuted (not proposed), and skill lines the student named as its reason for a harm (deleted).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from skillgit.world import tags
from skillgit.world.diagnose import diagnose
from skillgit.world.lexicon import ideas_for, norm, topic_of_text
from skillgit.world.rules import SkillReading, read_skill, relevant_topics, render_record, sentences
from skillgit.world.tasks import labels_answer, parse_record

HINT_MARK = "\n\nA hint for this task: "
ASK_OPEN, ASK_ANSWER, ASK_QUESTION = "Earlier you were given this task:\n", "\n\nYour answer was:\n", \
    "\n\nA follow-up question about your answer: "
_ASK = re.compile(re.escape(ASK_OPEN) + r"(.*?)" + re.escape(ASK_ANSWER) + r"(.*?)" + re.escape(ASK_QUESTION),
                  re.S)
HARM_DEEDS = {"explain": "added an explanation line", "semicolon_separator": "separated the fields with semicolons",
              "day_first": "wrote the date day first", "whole_numbers": "rounded the numbers to whole numbers"}
_SLIP = re.compile(r"About the (\w+): my instructions ask for this .* but I did not follow them", re.I)
_COVERED = re.compile(r"About the (\w+): my instructions (?:ask for this|say to keep it)", re.I)
_CAUSE = re.compile(r"because my instructions say: \"(.+?)\"")
# a rule or a keep-as-given the student followed on a topic that still failed: that sentence is the cause
_FOLLOWED = re.compile(r"About the (\w+): my instructions (?:ask for this|say to keep it as given) \(\"(.+?)\"\)"
                       r"(?: and I followed them)?\.$", re.M)


# ---------------------------------------------------------------------------------------------- student side
def split_probe(task_input: str) -> tuple[str, str, str | None]:
    """(the task, the hint, None) for a re-run; (the task, "", its earlier answer) for a follow-up question;
    (the input, "", None) otherwise."""
    asked = _ASK.match(task_input)
    if asked:
        return asked.group(1), "", asked.group(2)
    task, mark, hint = task_input.partition(HINT_MARK)
    return (task, hint.strip(), None) if mark else (task_input, "", None)


def _sentence_for(skill: str, found: Callable[[SkillReading], bool]) -> str:
    for sentence in sentences(skill):
        if found(read_skill.__wrapped__(sentence)):  # uncached: one-sentence readings would flood the cache
            return " ".join(sentence.split())
    return ""


def _conveys(kind: str, name: str, reading: SkillReading) -> bool:
    return name in getattr(reading, kind)


def explain(skill: str, task: str, earlier: str) -> str:
    """The student's answer to a follow-up question (see the module docstring)."""
    fields = parse_record(task)
    if not fields:
        return "I could not find a record in that task."
    reading = read_skill(skill)
    label = labels_answer(task) or "preamble" in reading.plain
    styled = {t for t in relevant_topics(fields, label) if t in reading.rules and t not in reading.plain}
    got = next((line.strip() for line in earlier.splitlines() if line.strip()), "")
    lines = []
    for topic in relevant_topics(fields, label):
        if topic in reading.plain:
            said = _sentence_for(skill, functools.partial(_conveys, "plain", topic))
            lines.append(f"About the {topic}: my instructions say to keep it as given (\"{said}\").")
        elif topic in styled:
            said = _sentence_for(skill, functools.partial(_conveys, "rules", topic))
            without = render_record(fields, styled - {topic}, reading.harms, label=label).splitlines()[0]
            intended = render_record(fields, styled, reading.harms, label=label).splitlines()[0]
            if got == without and got != intended:
                lines.append(f"About the {topic}: my instructions ask for this (\"{said}\") but I did not follow "
                             "them in that answer.")
            else:
                lines.append(f"About the {topic}: my instructions ask for this (\"{said}\") and I followed them.")
        else:
            lines.append(f"About the {topic}: my instructions say nothing about it, so I wrote it as I usually do.")
    for harm in sorted(reading.harms):
        said = _sentence_for(skill, functools.partial(_conveys, "harms", harm))
        lines.append(f"I {HARM_DEEDS[harm]} because my instructions say: \"{said}\"")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- teacher side
@dataclass
class Evidence:
    """What the transcripts in a reflect prompt show (see the module docstring)."""

    slips: set[tuple[str, str]] = field(default_factory=set)  # (item id, topic): the skill covers it, a slip
    confirmed: dict[tuple[str, str], str] = field(default_factory=dict)  # symptom → a hint that fixed it
    refuted: set[str] = field(default_factory=set)  # norm(hint) of hints that did not fix their symptom
    causes: list[str] = field(default_factory=list)  # skill sentences the student named for a harm

    @classmethod
    def read(cls, text: str) -> "Evidence":
        evidence = cls()
        shown = {t.attrs.get("id", ""): t for t in tags.find(text, "trajectory")}
        for probe in tags.find(tags.first(text, "probes") or "", "probe"):
            trajectory = shown.get(probe.attrs.get("id", ""))
            if trajectory is None:
                continue
            if probe.attrs.get("action") == "ask":
                evidence._asked(trajectory, probe.first("answer") or "")
            else:
                evidence._reran(trajectory, probe.first("hint") or "", probe.first("answer") or "")
        return evidence

    def _asked(self, trajectory: tags.Block, answer: str) -> None:
        item_id = trajectory.attrs.get("id", "")
        self.slips |= {(item_id, m.group(1)) for m in _SLIP.finditer(answer)}
        failing = {s.topic for s in diagnose(trajectory.first("output") or "", trajectory.first("expected"))}
        named = _CAUSE.findall(answer) + [m.group(2) for m in _FOLLOWED.finditer(answer) if m.group(1) in failing]
        self.causes += [c for c in named if c and c not in self.causes]

    def _reran(self, trajectory: tags.Block, hint: str, answer: str) -> None:
        sym, want = topic_of_text(hint), trajectory.first("expected") or ""
        if sym is None or not want:
            return
        if sym in {(s.topic, s.want) for s in diagnose(answer, want)}:
            self.refuted.add(norm(hint))
        else:
            self.confirmed.setdefault(sym, hint)


def cause_deletes(evidence: Evidence, skill: str, avoid: set[str], taken: set[str],
                  budget: int) -> list[dict[str, str]]:
    """Delete edits for the skill lines the student named as the reason for a failing behaviour."""
    out: list[dict[str, str]] = []
    for cause in evidence.causes:
        if len(out) < budget and cause in skill and f"delete:{norm(cause)}" not in avoid:
            taken.add(norm(cause))
            out.append({"op": "delete", "target": cause, "content": "",
                        "rationale": "the student named this instruction as its reason"})
    return out


def confirmed_edit(evidence: Evidence, sym: tuple[str, str], allowed: Callable[[str], bool], taken: set[str],
                   why: str) -> dict[str, str] | None:
    """The fix a re-run confirmed for `sym`, as an append edit (None when there is none or it may not be used)."""
    hint = evidence.confirmed.get(sym)
    if not hint or not allowed(hint) or norm(hint) in taken:
        return None
    taken.add(norm(hint))
    return {"op": "append", "target": "", "content": hint, "rationale": f"{why}; a re-run with this hint fixed it"}


def probe_answer(text: str, skill_norm: str, avoid: set[str], weights: dict[str, float], rng) -> dict[str, Any]:
    """The simulated teacher's `probe` answer: per failed trajectory a question first, then a re-run testing one
    untried fix for a symptom the student did not explain as a slip; successes get one question."""
    done: dict[str, list[tags.Block]] = {}
    for probe in tags.find(tags.first(text, "probes") or "", "probe"):
        done.setdefault(probe.attrs.get("id", ""), []).append(probe)
    out: list[dict[str, str]] = []
    for t in tags.find(text, "trajectory"):
        chosen = _probe_for(t, done.get(t.attrs.get("id", ""), []), (avoid, skill_norm), weights, rng)
        if chosen is not None:
            out.append(chosen)
    return {"reasoning": f"Probing {len(out)} trajectories: questions first, then hints that test a fix.",
            "probes": out}


def _probe_for(t: tags.Block, earlier: list[tags.Block], known: tuple[set[str], str], weights: dict[str, float],
               rng) -> dict[str, str] | None:
    """One trajectory's probe this turn; `known`: (ideas to avoid, the skill's normalised text)."""
    item_id = t.attrs.get("id", "")
    symptoms = [(s.topic, s.want) for s in diagnose(t.first("output") or "", t.first("expected"))]
    if not earlier:
        what = ", ".join(dict.fromkeys(topic for topic, _ in symptoms)) or "the record"
        return {"id": item_id, "action": "ask",
                "text": f"Which of your instructions decided how you wrote {what}? Did you follow them?"}
    reruns = [p for p in earlier if p.attrs.get("action") == "rerun"]
    if t.attrs.get("outcome") != "failure" or any(p.attrs.get("hard") == "1.00" for p in reruns):
        return None
    told = "\n".join(p.first("answer") or "" for p in earlier if p.attrs.get("action") == "ask")
    slipped = {m.group(1) for m in _SLIP.finditer(told)}
    avoid, skill_norm = known
    tried = avoid | {norm(p.first("hint") or "") for p in reruns}
    hint = _untried_fix(symptoms, slipped, tried, skill_norm, weights, rng)
    return {"id": item_id, "action": "rerun", "text": hint} if hint else None


def _untried_fix(symptoms: list[tuple[str, str]], slipped: set[str], skip: set[str], skill_norm: str,
                 weights: dict[str, float], rng) -> str | None:
    for sym in symptoms:
        ideas = ideas_for(*sym)
        if ideas is None or sym[0] in slipped:
            continue
        pool = {label: [i for i in getattr(ideas, label) if norm(i) not in skip and norm(i) not in skill_norm]
                for label in ("good", "vague", "harmful")}
        labels = [label for label in pool if pool[label] and weights[label] > 0]
        if labels:
            label = rng.choices(labels, [weights[x] for x in labels])[0]
            return rng.choice(pool[label])
    return None
