"""The six stages of one optimisation step, as small functions with every effect injected.

rollout → reflect → aggregate → select → update → (gate: see gate.py). None of them prints or touches git;
they take the models, the scorer and a `Teacher` bundle, and return plain records that the run writes into the
candidate's note. Malformed teacher output is recorded and skipped; a teacher API failure in one call is
recorded and that call's contribution skipped (merge and rank fall back and say so).
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from skillgit import package, patch, prompts
from skillgit.errors import ExitCode, SkillgitError
from skillgit.executor import THREADS, Executor
from skillgit.judging import teacher_reference
from skillgit.llm.base import LLM, LLMError, Request, Student
from skillgit.llm.jsonout import complete_json
from skillgit.types import Edit, EditResult, Item, RejectedEdit, Score, Trajectory, is_failure

Scorer = Callable[[Item, str], Score]
Progress = Callable[[int, int], None]


# ---------------------------------------------------------------------------------------------- teacher calls
@dataclass
class Teacher:
    """What every teacher stage needs: the model, prompt overrides, the negative buffer and the meta skill."""

    llm: LLM
    prompts_dir: Path | None = None
    negative: list[RejectedEdit] = field(default_factory=list)
    meta_skill: str = ""
    workers: int = 4
    # Every edit rejected earlier in this run (not only the newest shown in prompts): `select` never applies
    # one of them again.
    blocked: dict[tuple[str, str, str], RejectedEdit] = field(default_factory=dict)
    max_edits: int = patch.MAX_EDITS  # per answer (optimizer.max_edits_per_reply)
    max_edit_chars: int = patch.MAX_EDIT_CHARS  # per edit field (optimizer.max_edit_chars)
    # Output limits per stage (a stuck or rambling model must end; a configured model.teacher.max_tokens wins)
    stage_max_tokens: dict[str, int] = field(default_factory=dict)
    # Told every HEARTBEAT_S while a call is in flight (stage, seconds so far): the display shows a long call
    on_wait: Callable[[str, float], None] | None = None
    # optimizer.recall_k: the similar past trajectories shown next to a reflect minibatch (loop/recall.py)
    recall: Callable[[list[Trajectory], str], Any] | None = None

    def ask(self, stage: str, variables: dict[str, str]) -> tuple[dict | None, str | None]:
        """One teacher call. Returns (answer, None) or (None, why it is unusable). Raises LLMError only when the
        teacher cannot be used at all (credentials, configuration, unknown model): those stop the run. A request
        the server refuses (say, a prompt grown too large) or a reply too large to keep is recorded and skipped:
        its stage goes on without it, and a resumed run does not stop on it again."""
        base = {"rejected_edits": prompts.block_rejected(self.negative),
                "meta_skill": prompts.block_meta_skill(self.meta_skill)}
        base.update(variables)
        messages = prompts.render(stage, base, self.prompts_dir)
        request = Request(tuple(messages), stage=stage, json_schema=prompts.SCHEMAS.get(stage),
                          max_tokens=self.stage_max_tokens.get(stage))
        try:
            with _heartbeat(self.on_wait, stage):
                result = complete_json(self.llm, request)
        except LLMError as exc:
            if exc.kind in FATAL_KINDS:
                raise
            if not exc.retryable:
                return None, f"teacher call refused: {exc.message}"
            # a timeout's hint names the setting to raise (model.teacher.timeout_s): it must reach the note
            hint = f" ({exc.hint})" if exc.kind == "timeout" and exc.hint else ""
            return None, f"teacher call failed: {exc.message}{hint}"
        if result.obj is None:
            return None, f"malformed teacher output: {result.error}"
        problems = prompts.validate(stage, result.obj)
        if problems:
            return None, "teacher output has the wrong shape: " + "; ".join(problems)
        return result.obj, None

    def map(self, fn: Callable[[Any], Any], inputs: list[Any]) -> list[Any]:
        if len(inputs) <= 1 or self.workers <= 1:
            return [fn(x) for x in inputs]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(inputs))) as pool:
            return list(pool.map(fn, inputs))


# ---------------------------------------------------------------------------------------------- rollout
def rollout(student: Student, skill: str, items: list[Item], scorer: Scorer, *, workers: int, sample: int = 0,
            on_progress: Progress | None = None, executor: Executor | None = None) -> list[Trajectory]:
    """Run every item with `skill` and score it. A run whose model call failed (after retries) or whose scorer
    crashed is an *unknown* trajectory (`error` set): not a failure, excluded from scores and reflection.
    `executor` fans the items out (None: the thread pool); results keep the order of `items`."""
    return rollout_samples(student, skill, [(item, sample) for item in items], scorer, workers=workers,
                           on_progress=on_progress, executor=executor)


def rollout_samples(student: Student, skill: str, jobs: list[tuple[Item, int]], scorer: Scorer, *, workers: int,
                    on_progress: Progress | None = None, executor: Executor | None = None) -> list[Trajectory]:
    """`rollout` over (item, sample) pairs in one wave: every repeat of every item runs at once (the gate's
    repeats are independent samples, so nothing makes them wait for each other)."""
    done = 0

    def one(job: tuple[Item, int]) -> Trajectory:
        nonlocal done
        item, sample = job
        expected = teacher_reference(scorer, item)  # what a teacher may read as `<expected>` (judging.py)
        try:
            reply = student.run(skill, item, sample)
        except LLMError as exc:
            if exc.kind in FATAL_KINDS:
                raise
            trajectory = Trajectory(item.id, item.input, "", expected, error=f"student: {exc.message}")
        else:
            try:
                # an agentic student verified the workspace itself (before throwing it away)
                score = reply.score if reply.score is not None else scorer(item, reply.text)
                trajectory = Trajectory(item.id, item.input, reply.text, expected, score, reply.trace,
                                        usage=reply.usage, timings=dict(reply.timings))
            except SkillgitError as exc:
                trajectory = Trajectory(item.id, item.input, reply.text, expected, None, reply.trace,
                                        error=f"scorer: {exc.message}", usage=reply.usage)
        done += 1  # a benign race only affects the progress display
        if on_progress:
            on_progress(done, len(jobs))
        return trajectory

    return (executor or THREADS).map(one, jobs, workers=workers)


FATAL_KINDS = ("auth", "config", "not_found")  # no later call of this backend can succeed: stop the run


STAGE_MAX_TOKENS = {"reflect": 4096, "merge": 4096, "rank": 1024, "lr": 512, "slow_update": 2048,
                    "meta_skill": 2048, "meta_reflect": 4096, "rewrite": 8192, "full_rewrite": 8192, "pick": 512,
                    "probe": 2048}
HEARTBEAT_S = 15.0


@contextmanager
def _heartbeat(on_wait: Callable[[str, float], None] | None, stage: str) -> Iterator[None]:
    """Call `on_wait(stage, elapsed)` every HEARTBEAT_S until the block ends (nothing when `on_wait` is None)."""
    if on_wait is None:
        yield
        return
    done = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        while not done.wait(HEARTBEAT_S):
            on_wait(stage, time.monotonic() - started)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()


def check_teacher_alive(step: int | str, errors: list[str | None]) -> None:
    """Stop (resumably) when every teacher call of a stage failed at the API after retries: the teacher is down."""
    if errors and all(e and e.startswith("teacher call failed") for e in errors):
        raise SkillgitError(f"step {step}: every teacher call failed ({errors[0]})",
                            "check the teacher backend with `skillgit doctor`; the run resumes where it stopped",
                            ExitCode.BACKEND)


# ---------------------------------------------------------------------------------------------- reflect
@dataclass
class Patch:
    """One analyst's answer for one minibatch."""

    outcome: str  # failure | success
    item_ids: list[str]
    edits: list[Edit] = field(default_factory=list)
    reasoning: str = ""
    summary: str = ""
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    recalled: tuple[str, ...] = ()  # the past trajectories shown beside the minibatch (loop/recall.py labels)
    probes: dict[str, Any] = field(default_factory=dict)  # deep reflect's record (loop/deep_reflect.py)

    def to_dict(self) -> dict[str, Any]:
        out = {"outcome": self.outcome, "item_ids": self.item_ids, "edits": [e.to_dict() for e in self.edits],
               "reasoning": self.reasoning, "summary": self.summary, "problems": self.problems,
               "error": self.error}
        if self.recalled:
            out["recalled"] = list(self.recalled)
        return {**out, "probes": self.probes} if self.probes else out


def minibatches(trajectories: list[Trajectory], size: int, rng: random.Random) -> list[tuple[str, list[Trajectory]]]:
    """Failures and successes apart, each shuffled and cut into minibatches of `size`; failures first."""
    out: list[tuple[str, list[Trajectory]]] = []
    usable = [t for t in trajectories if t.ok]
    for outcome in ("failure", "success"):
        group = [t for t in usable if is_failure(t.score) == (outcome == "failure")]
        rng.shuffle(group)
        out.extend((outcome, group[i:i + size]) for i in range(0, len(group), size))
    return out


def reflect(teacher: Teacher, skill: str, trajectories: list[Trajectory], *, minibatch_size: int, budget: int,
            rng: random.Random, stage: str = "reflect",
            probe: Callable[[str, list[Trajectory]], tuple[str, dict[str, Any]]] | None = None) -> list[Patch]:
    """One teacher call per minibatch (in parallel); every answer or failure becomes a `Patch`. `probe` (deep
    reflect, loop/deep_reflect.py) first probes the minibatch: its transcripts follow the trajectories."""
    batches = minibatches(trajectories, minibatch_size, rng)

    def one(batch: tuple[str, list[Trajectory]]) -> Patch:
        outcome, trajs = batch
        result = Patch(outcome, [t.item_id for t in trajs])
        recalled = teacher.recall(trajs, outcome) if teacher.recall is not None else None  # loop/recall.py
        if recalled is not None:
            result.recalled = recalled.labels
        probed = ""
        if probe is not None:
            probed, result.probes = probe(outcome, trajs)
        obj, error = teacher.ask(stage, {
            "skill": prompts.block_skill(skill),
            "trajectories": prompts.block_trajectories(trajs, outcome) + (recalled.block if recalled else "")
            + probed,
            "budget": prompts.block_budget(budget),
            "outcome": outcome,
        })
        if obj is None:
            result.error = error
            return result
        result.edits, result.problems = patch.parse_edits(obj, source_type=outcome, max_edits=teacher.max_edits,
                                                          max_chars=teacher.max_edit_chars)
        result.reasoning = str(obj.get("reasoning", ""))
        result.summary = str(obj.get("failure_summary") or obj.get("success_patterns") or "")
        return result

    return teacher.map(one, batches)


# ---------------------------------------------------------------------------------------------- aggregate
@dataclass
class Aggregate:
    edits: list[Edit]
    rounds: list[dict[str, Any]] = field(default_factory=list)  # one record per merge call or fallback


def _number(edits: list[Edit]) -> list[Edit]:
    return [e.with_(id=f"e{i}") for i, e in enumerate(edits, 1)]


def concat_dedupe(edits: list[Edit]) -> list[Edit]:
    """Concatenate, merging identical edits (same op, target, content) and summing their support."""
    merged: dict[tuple[str, str, str], Edit] = {}
    for edit in edits:
        key = edit.key()
        if key in merged:
            prev = merged[key]
            source = prev.source_type if prev.source_type == edit.source_type else "mixed"
            merged[key] = prev.with_(support_count=prev.support_count + edit.support_count, source_type=source)
        else:
            merged[key] = edit
    return list(merged.values())


def _merge_call(teacher: Teacher, skill: str, edits: list[Edit], level: int) -> tuple[list[Edit], dict[str, Any]]:
    numbered = _number(edits)
    by_id = {e.id: e for e in numbered}
    obj, error = teacher.ask("merge", {"skill": prompts.block_skill(skill), "edits": prompts.block_edits(numbered)})
    record: dict[str, Any] = {"level": level, "inputs": len(numbered)}
    if obj is None:
        fallback = concat_dedupe(numbered)
        record.update(fallback=True, reason=error, outputs=len(fallback))
        return [e.with_(merge_level=level) for e in fallback], record
    parsed, problems = patch.parse_edits(obj, source_type="mixed", max_edits=teacher.max_edits,
                                         max_chars=teacher.max_edit_chars)
    raw = [x for x in obj.get("edits", []) if isinstance(x, dict)]
    out: list[Edit] = []
    covered: set[str] = set()
    for i, edit in enumerate(parsed):
        sources = [by_id[s] for s in _merged_from(raw, edit, i) if s in by_id]
        covered.update(s.id for s in sources)
        support = sum(s.support_count for s in sources) or 1
        kinds = {s.source_type for s in sources}
        source = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else edit.source_type)
        out.append(edit.with_(support_count=support, source_type=source, merge_level=level))
    # A merge may drop proposals; it must never silently turn real suggestions into nothing: an answer whose
    # edits all vanished or change nothing (a replace with itself) falls back to the inputs, and says so.
    real = [e for e in out if not (e.op == "replace" and e.target.strip() == e.content.strip())]
    if numbered and not real:
        fallback = concat_dedupe(numbered)
        record.update(fallback=True, reason=f"the merge returned {len(out)} edit(s) that change nothing; kept the "
                      f"{len(numbered)} proposals", outputs=len(fallback), problems=problems,
                      reasoning=str(obj.get("reasoning", "")))
        return [e.with_(merge_level=level) for e in fallback], record
    dropped = sorted(set(by_id) - covered)
    record.update(fallback=False, outputs=len(out), problems=problems, reasoning=str(obj.get("reasoning", "")),
                  unmerged=dropped, dropped=[by_id[i].summary(80) for i in dropped])
    return out, record


def _merged_from(raw: list[dict], edit: Edit, index: int) -> list[str]:
    """The `merged_from` ids the teacher gave for the parsed edit at `index` (parse_edits keeps order of valid
    entries, so match on content to be safe)."""
    for entry in raw:
        if (str(entry.get("content", "")).strip() == edit.content
                and str(entry.get("target", "")).strip() == edit.target):
            ids = entry.get("merged_from") or []
            return [str(x) for x in ids] if isinstance(ids, list) else []
    return []


def aggregate(teacher: Teacher, skill: str, patches: list[Patch], *, merge_batch_size: int) -> Aggregate:
    """Hierarchical merge: failure patches level by level in chunks of `merge_batch_size`, then success patches,
    then one final merge of both sides. A single group needs no call. Failed merges fall back to concatenation
    (identical edits folded) and say so in `rounds` (failure side first, each level in chunk order).
    The two sides do not depend on each other and are merged at the same time (one wave of calls, not two)."""

    def merge_side(groups: list[list[Edit]]) -> tuple[list[Edit], list[dict[str, Any]]]:
        side_rounds: list[dict[str, Any]] = []
        level = 0
        groups = [g for g in groups if g]
        while len(groups) > 1:
            level += 1
            chunks = [groups[i:i + merge_batch_size] for i in range(0, len(groups), merge_batch_size)]

            # `level` is bound as a default: ruff B023 (teacher.map calls `one` within this iteration anyway).
            def one(chunk: list[list[Edit]], level: int = level) -> tuple[list[Edit], dict[str, Any] | None]:
                flat = [e for g in chunk for e in g]
                if len(chunk) == 1:
                    return flat, None
                return _merge_call(teacher, skill, flat, level)

            results = teacher.map(one, chunks)
            side_rounds += [record for _, record in results if record is not None]
            groups = [g for g, _ in results if g]
        return (groups[0] if groups else []), side_rounds

    (failures, rounds), (successes, success_rounds) = teacher.map(merge_side, [
        [p.edits for p in patches if p.outcome == "failure"], [p.edits for p in patches if p.outcome == "success"]])
    rounds += success_rounds
    if failures and successes:
        level = max([e.merge_level for e in failures + successes], default=0) + 1
        final, record = _merge_call(teacher, skill, failures + successes, level)
        record["final"] = True
        rounds.append(record)
        return Aggregate(_number(final), rounds)
    return Aggregate(_number(failures or successes), rounds)


# ---------------------------------------------------------------------------------------------- select
@dataclass
class Selection:
    selected: list[Edit]
    dropped: list[EditResult]  # edits that will not be applied, each with why
    record: dict[str, Any]


def select(teacher: Teacher, skill: str, edits: list[Edit], budget: int, *, allow_front_matter: bool = False,
           new_files: tuple[str, ...] = package.DEFAULT_NEW_FILES, dry_apply: bool = True) -> Selection:
    """Drop edits that repeat a rejected one (the negative buffer), then keep the best `budget` that apply.

    With `dry_apply` (patch mode: the edits will be applied as they are) every edit is first tried alone on the
    current `skill`: one that cannot apply there (its target is not in the skill, it names a file the package
    lacks, it would touch a protected part, its content is already there) is dropped with that fate and never
    takes a place in the budget or a line in the ranking prompt. The teacher ranks when more edits remain than
    the budget; if ranking fails, support count orders them (and the record says so). The budget is then filled
    in rank order with the edits that still apply after the ones above them (each tried on the text the earlier
    picks made, as `update` will apply them), so an edit that cannot apply never crowds out one that can.
    Without `dry_apply` (a rewrite takes the edits as suggestions) the best `budget` are kept as ranked."""
    # the hard filter: edits rejected without a gain (the prompt still shows every rejected edit with its Δ)
    rejected = {**teacher.blocked, **{r.edit.key(): r for r in teacher.negative if r.delta <= 0}}
    dropped: list[EditResult] = []
    fresh: list[Edit] = []
    for edit in edits:
        hit = rejected.get(edit.key())
        if hit is not None:
            dropped.append(EditResult(edit, "skipped_rejected_before",
                                      f"same as an edit rejected at {hit.run}/{hit.step} (delta {hit.delta:+.3f})"))
        else:
            fresh.append(edit)

    def trial(text: str, edit: Edit) -> tuple[str, EditResult]:
        new, (result,) = patch.apply_to_skill(text, [edit], allow_front_matter=allow_front_matter,
                                              new_files=new_files)
        return new, result

    record: dict[str, Any] = {"budget": budget}
    if dry_apply:
        applicable = []
        for edit in fresh:
            result = trial(skill, edit)[1]
            if result.applied:
                applicable.append(edit)
            else:
                dropped.append(EditResult(edit, result.status, f"select: does not apply to the current skill: "
                                                               f"{result.reason}"))
        record["inapplicable"] = len(fresh) - len(applicable)
        fresh = applicable
    record["candidates"] = len(fresh)
    if len(fresh) <= budget:
        record["ranked"] = False
        return Selection(fresh, dropped, record)
    obj, error = teacher.ask("rank", {"skill": prompts.block_skill(skill), "edits": prompts.block_edits(fresh),
                                      "budget": prompts.block_budget(budget)})
    by_id = {e.id: e for e in fresh}
    order: list[Edit] = []
    if obj is not None:
        for raw_id in obj.get("ranking", []):
            ranked = by_id.pop(str(raw_id), None)
            if ranked is not None:
                order.append(ranked)
        record.update(ranked=True, reasoning=str(obj.get("reasoning", "")), ranking=[e.id for e in order])
    else:
        record.update(ranked=False, fallback=True, reason=error)
    # Edits the ranking left out (or all, on fallback) follow by support, keeping their original order on ties.
    order.extend(sorted(by_id.values(), key=lambda e: -e.support_count))
    selected: list[Edit] = []
    clipped: list[tuple[int, Edit]] = []
    text = skill
    for rank, edit in enumerate(order, 1):
        if len(selected) >= budget:
            clipped.append((rank, edit))
            continue
        if not dry_apply:
            selected.append(edit)
            continue
        new, result = trial(text, edit)
        if result.applied:
            selected.append(edit)
            text = new
        else:
            dropped.append(EditResult(edit, result.status, f"select: ranked {rank}, does not apply after the edits "
                                                           f"ranked above it: {result.reason}"))
    dropped.extend(EditResult(e, "skipped_over_budget", f"ranked {rank} of {len(order)}; budget {budget}")
                   for rank, e in clipped)
    return Selection(selected, dropped, record)


# ---------------------------------------------------------------------------------------------- update
def update(skill: str, selected: list[Edit], *, allow_front_matter: bool,
           new_files: tuple[str, ...] = package.DEFAULT_NEW_FILES) -> tuple[str, list[EditResult]]:
    """Apply the selected edits in order (each to the file of the package it names); every edit gets a status and,
    when skipped, a reason."""
    return patch.apply_to_skill(skill, selected, allow_front_matter=allow_front_matter, new_files=new_files)
