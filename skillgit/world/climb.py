"""A stand-alone greedy hill climber over the simulated world: a benchmark of the *world*, not of skillgit's loop.

It mimics one step of the real loop in a few lines — rollout a train batch, reflect on failure and success
minibatches (prompts in the protocol's format, answered by `SimulatedTeacher` from the text alone), count the
support of identical edits, keep the top `budget`, apply them, and gate on the validation split — so that the
world's properties can be measured without git:
- learning works: validation and test exact-match rise from the seed skill;
- the gate matters: with `gate=False` harmful ideas get in and test accuracy ends lower;
- the negative buffer matters: with `use_buffer=False` the teacher re-proposes rejected ideas.

Run `python -m skillgit.world [seeds]` for a table of these numbers.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

from skillgit.llm.base import ChatStudent, Message, Request
from skillgit.types import Item, is_failure
from skillgit.world import tags
from skillgit.world.lexicon import norm
from skillgit.world.student import SimulatedStudentLLM
from skillgit.world.tasks import default_skill, generate_tasks, hurtful_concepts, reference_score
from skillgit.world.teacher import SimulatedTeacher
from skillgit.world.textedit import apply_edit


@dataclass
class ClimbStep:
    step: int
    proposed: int  # edits proposed by all reflect calls of the step
    repeats: int  # proposed edits whose text was rejected at an earlier step
    applied: list[str]  # "op: content" of the applied edits
    val: float  # candidate's validation score
    accepted: bool


@dataclass
class ClimbResult:
    seed_val: float
    final_val: float
    seed_test: float
    final_test: float
    final_skill: str
    hurtful: frozenset[str] = frozenset()  # concepts of the final skill that hurt here (tasks.hurtful_concepts)
    ever_hurtful: frozenset[str] = frozenset()  # … of any skill accepted on the way
    steps: list[ClimbStep] = field(default_factory=list)
    malformed: int = 0

    @property
    def accepted(self) -> int:
        return sum(s.accepted for s in self.steps)

    @property
    def rejected(self) -> int:
        return sum(not s.accepted for s in self.steps)

    @property
    def repeats(self) -> int:
        return sum(s.repeats for s in self.steps)



def evaluate(student: ChatStudent, skill: str, items: list[Item]) -> float:
    return sum(reference_score(it, student.run(skill, it).text).hard for it in items) / max(1, len(items))


def _reflect_prompt(skill: str, trajectories: list[str], budget: int, rejected: list[tuple[str, str, str, float]],
                    use_buffer: bool) -> str:
    entries = [(op, target, content, delta, "validation score did not improve") for op, target, content, delta
               in rejected[-8:]] if use_buffer else []
    return tags.prompt("reflect", tags.block("skill", skill), f"<budget>{budget}</budget>", "\n".join(trajectories),
                       tags.rejected_edits(entries) if use_buffer else "")


def hill_climb(cfg: Any, *, steps: int = 10, gate: bool = True, use_buffer: bool = True, n_train: int = 60,
               n_val: int = 40, n_test: int = 120, batch: int = 16, minibatch: int = 8,
               budget: int = 3) -> ClimbResult:
    items = generate_tasks(cfg, n_train + n_val + n_test)
    train, val, test = items[:n_train], items[n_train:n_train + n_val], items[n_train + n_val:]
    student = ChatStudent(SimulatedStudentLLM(cfg))
    teacher = SimulatedTeacher(cfg)
    skill = seed = default_skill()
    current = seed_val = evaluate(student, skill, val)
    rejected: list[tuple[str, str, str, float]] = []
    ever_rejected: set[str] = set()
    result = ClimbResult(seed_val, seed_val, evaluate(student, seed, test), 0.0, seed)
    for step in range(steps):
        start = (step * batch) % n_train
        chunk = (train + train)[start:start + batch]
        blocks: dict[str, list[str]] = {"failure": [], "success": []}
        for it in chunk:
            out = student.run(skill, it).text
            score = reference_score(it, out)
            outcome = "failure" if is_failure(score) else "success"
            blocks[outcome].append(tags.trajectory(it.id, outcome, score.hard, score.soft, it.input, out,
                                                   str(it.expected), score.feedback))
        support: dict[tuple[str, str, str], int] = {}
        order: list[tuple[str, str, str]] = []
        proposed = repeats = 0
        for outcome in ("failure", "success"):
            group = blocks[outcome]
            for i in range(0, len(group), minibatch):
                text = _reflect_prompt(skill, group[i:i + minibatch], budget, rejected, use_buffer)
                reply = teacher.complete(Request((Message("system", "You are the teacher."), Message("user", text)),
                                                 stage="reflect"))
                try:
                    edits = json.loads(reply.text)["edits"]
                except (ValueError, KeyError, TypeError):
                    result.malformed += 1
                    continue
                for e in edits:
                    key = (e["op"], e["target"], e["content"])
                    proposed += 1
                    repeats += norm(e["content"] or "delete:" + e["target"]) in ever_rejected
                    if key not in support:
                        order.append(key)
                    support[key] = support.get(key, 0) + 1
        chosen = sorted(order, key=lambda k: -support[k])[:budget]
        candidate, applied = skill, []
        for op, target, content in chosen:
            candidate, ok = apply_edit(candidate, op, target, content)
            if ok:
                applied.append(f"{op}: {content or target}")
        if candidate == skill:
            result.steps.append(ClimbStep(step, proposed, repeats, [], current, False))
            continue
        val_score = evaluate(student, candidate, val)
        accepted = (not gate) or val_score > current
        if accepted:
            skill, current = candidate, val_score
            result.ever_hurtful |= hurtful_concepts(cfg, skill)
        else:
            for op, target, content in chosen:
                rejected.append((op, target, content, val_score - current))
                ever_rejected.add(norm(content or "delete:" + target))
        result.steps.append(ClimbStep(step, proposed, repeats, applied, val_score, accepted))
    result.final_val, result.final_skill = current, skill
    result.final_test = evaluate(student, skill, test)
    result.hurtful = hurtful_concepts(cfg, skill)
    return result


def main(argv: list[str]) -> None:
    from skillgit.config import SimulatedCfg

    seeds = [int(a) for a in argv] or list(range(8))
    print("seed | seed test | gated test (acc/rej) | no-gate test, hurtful concepts let in | "
          "gated repeats: buffer on / off")
    for s in seeds:
        cfg = SimulatedCfg(seed=s)
        g = hill_climb(cfg)
        ng = hill_climb(cfg, gate=False)
        nb = hill_climb(cfg, use_buffer=False)
        print(f"{s:4d} | {g.seed_test:9.3f} | {g.final_test:.3f} ({g.accepted}/{g.rejected}) | "
              f"{ng.final_test:.3f} {sorted(ng.ever_hurtful)} | {g.repeats} / {nb.repeats}")


if __name__ == "__main__":
    main(sys.argv[1:])
