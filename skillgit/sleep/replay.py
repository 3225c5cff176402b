"""Replay: from the reviewed mined-task file to a night's train / val / test splits.

Contracts:
- `choose(tasks, settings, simulated=…, agentic=…)` keeps the tasks a night can score and says why each other
  one was left out (`Replay.excluded`: reason → count): a text task is scored by exact match against the answer a
  person accepted when that answer is short (at most `settings.judge_over_chars` characters), and by the teacher
  as a judge (`skillgit.rubric.RubricScorer`: the task's rubric, with the accepted answer as the judge's
  reference when there is one) when it is longer or missing — with the simulated world only when there is a
  reference (its judge cannot tell right from wrong without one); an agentic task needs a test command
  to verify it, a task loader that reads agentic rows (`agentic_supported()` asks `skillgit.tasks` itself, so
  agentic tasks join as soon as the loader reads them), and its commands in `approved` (`approval.command_key`:
  the keys a person approved with `skillgit sleep review --approve`; the default approves none; `keys` computes a
  task's key — the night's, `approval.RepoFiles.key`, covers the repository files the commands run at the commit
  the task replays; the default, the text alone) — a command taken from a transcript never runs unreviewed,
  whatever else released the night; a text task the configured scorer
  scores (not judged) is left out when that scorer's command is not approved (`scorer_blocked`,
  `approval.ConfigGate`); with the simulated student
  (`simulated=True`) only simulated-world records can be scored — the student refuses anything else — so other
  tasks are left out, and the kept ones are marked `metadata.world = "simulated"`. **That path is a simulation of
  the pipeline** (tests, demos), not learning from real work. With `pins` (the night passes the repository and
  the skill branch's tip), an agentic task pinned to a commit the repository does not have is moved to the
  session's branch or the skill branch's tip, or left out with its reason (`pins.pin`; `Replay.repinned`: how →
  count). At most `settings.max_tasks` are kept: the most recurring and most failed first, then by id.
- Splits are stable across nights: a task's place is a pure function of its id (`share(id)` in [0, 1)): val when
  below `val_share`, test when below `val_share + test_share` and at least `test_min_tasks` tasks are kept, else
  train. If train or val would be empty, the task nearest to the boundary moves (deterministic). Fewer than two
  usable tasks: `Replay.usable` is False and `reason` says why.
- `write_splits(folder, replay)` writes `train.jsonl`, `val.jsonl` (and `test.jsonl`) in the row shapes of
  `skillgit.tasks` (a text row carries no `verify`: the loader reads such a row as agentic, so a text task's
  rubric travels in its metadata; a judged text row has no `expected`, its accepted answer is
  `metadata.judge_reference`); `load_splits(folder, env)` reads them back through
  `skillgit.tasks.load_splits` — the task loader decides what a row means, so the night trains exactly on what a
  person could `cat`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from skillgit.config import EnvCfg
from skillgit.errors import SkillgitError
from skillgit.sleep.approval import NOT_APPROVED, SCORER_NOT_APPROVED, command_key
from skillgit.sleep.mine import MinedTask
from skillgit.sleep.pins import Pins, pin
from skillgit.sleep.settings import SleepSettings
from skillgit.tasks import Splits, TaskFileError, load_items
from skillgit.tasks import load_splits as load_task_splits

SPLITS = ("train", "val", "test")


def share(task_id: str) -> float:
    """A task's fixed place in [0, 1): the first 8 bytes of sha256 over the id."""
    digest = hashlib.sha256(f"skillgit-sleep-split\0{task_id}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64


@dataclass(frozen=True)
class Replay:
    train: tuple[MinedTask, ...] = ()
    val: tuple[MinedTask, ...] = ()
    test: tuple[MinedTask, ...] = ()
    excluded: dict[str, int] = field(default_factory=dict)  # reason → number of tasks
    simulated: bool = False
    judge_over_chars: int = 400  # a longer accepted answer is the judge's reference, not an exact expected
    reason: str = ""  # why the night cannot train, when it cannot
    repinned: dict[str, int] = field(default_factory=dict)  # agentic tasks moved off a missing commit: how → count

    @property
    def usable(self) -> bool:
        return bool(self.train) and bool(self.val)

    @property
    def used(self) -> int:
        return len(self.train) + len(self.val) + len(self.test)

    def counts(self) -> dict[str, int]:
        return {"train": len(self.train), "val": len(self.val), "test": len(self.test)}

    def rows(self, split: str) -> list[dict[str, Any]]:
        return [to_row(t, self.simulated, self.judge_over_chars) for t in getattr(self, split)]

    @property
    def judged(self) -> int:
        return sum(1 for name in SPLITS for t in getattr(self, name) if judged(t, self.judge_over_chars))


def _answer(task: MinedTask) -> str | None:
    expected = task.expected
    if expected is None or (isinstance(expected, str) and not expected.strip()):
        return None
    return expected if isinstance(expected, str) else json.dumps(expected, ensure_ascii=False)


def judged(task: MinedTask, over_chars: int) -> bool:
    """Is this text task scored by the judge (no accepted answer, or one too long to match exactly)?"""
    answer = _answer(task)
    return task.kind == "text" and (answer is None or len(answer.strip()) > over_chars)


def to_row(task: MinedTask, simulated: bool, judge_over_chars: int = 400) -> dict[str, Any]:
    """The task as `skillgit.tasks` reads it. Agentic: the mined row (`workspace`, `setup`, `verify.command`).
    Text: `id`, `input`, `expected`, `metadata` — with the rubric moved into the metadata, because the task loader
    reads a row that has `verify` as an agentic task; a judged task (see `judged`) has no `expected`, its accepted
    answer (if any) is the judge's reference."""
    row = task.to_row()
    if task.kind == "text":
        verify = row.pop("verify", None) or {}
        extra: dict[str, Any] = {"rubric": verify["rubric"]} if verify.get("rubric") else {}
        if judged(task, judge_over_chars):
            row.pop("expected", None)
            if _answer(task) is not None:
                extra["judge_reference"] = _answer(task)
        if simulated:
            extra["world"] = "simulated"
        row["metadata"] = {**row["metadata"], **extra}
    return row


def agentic_supported() -> bool:
    """Does `skillgit.tasks.load_items` read an agentic row? (Asked by loading one from a scratch file.)"""
    probe = MinedTask(id="probe", kind="agentic", prompt="probe", verify={"command": "true", "timeout_s": 1,
                                                                         "result": "exit_code"}).to_row()
    with tempfile.TemporaryDirectory(prefix="skillgit-sleep-probe-") as tmp:
        path = Path(tmp) / "probe.jsonl"
        path.write_text(json.dumps(probe) + "\n", encoding="utf-8")
        try:
            load_items(path)
        except TaskFileError:
            return False
    return True


def _why_not(task: MinedTask, simulated: bool, agentic: bool, approved: frozenset[str],
             keys: Callable[[MinedTask], str | None] = command_key) -> str | None:
    if task.kind == "agentic":
        if simulated:
            return "agentic task: the simulated student only answers text records"
        if not str((task.verify or {}).get("command") or "").strip():
            return ("agentic task without a test command (judging an agent's workspace by rubric needs the agent "
                    "student to hand its diff to the judge: not yet)")
        if not agentic:
            return "agentic task: this skillgit's task loader does not read agentic rows yet"
        return None if keys(task) in approved else NOT_APPROVED
    if _answer(task) is None:
        if not str((task.verify or {}).get("rubric") or "").strip():
            return "text task with neither an accepted answer nor a rubric"
        if simulated:
            return "text task without an accepted answer (the simulated judge cannot judge without a reference)"
    if simulated:
        from skillgit.world.tasks import parse_record  # the simulated world's own reader of its records

        if not parse_record(task.prompt):
            return "not a simulated-world record (the simulated student reads nothing else)"
    return None


def _priority(task: MinedTask) -> tuple[int, int, str]:
    signals = task.signals or {}
    return (-int(signals.get("sessions", 0) or 0), -int(signals.get("failed_units", 0) or 0), task.id)


def choose(tasks: Iterable[MinedTask], settings: SleepSettings, *, simulated: bool, agentic: bool,
           pins: Pins | None = None, approved: frozenset[str] = frozenset(), scorer_blocked: bool = False,
           keys: Callable[[MinedTask], str | None] = command_key) -> Replay:
    """See the module contract."""
    excluded: Counter[str] = Counter()
    repinned: Counter[str] = Counter()
    usable: list[MinedTask] = []
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            excluded["duplicate id"] += 1
            continue
        seen.add(task.id)
        why = _why_not(task, simulated, agentic, approved, keys)
        if not why and scorer_blocked and task.kind == "text" and not judged(task, settings.judge_over_chars):
            why = SCORER_NOT_APPROVED  # the configured scorer would score it: its command is not approved here
        if not why and pins is not None and task.kind == "agentic":
            pinned = pin(task, pins.commits, pins.base)
            if pinned.task is None:
                why = pinned.reason
            else:
                task = pinned.task
                if pinned.reason:
                    repinned[pinned.reason] += 1
        if why:
            excluded[why] += 1
        else:
            usable.append(task)
    usable.sort(key=_priority)
    if settings.max_tasks is not None and len(usable) > settings.max_tasks:
        excluded[f"over the night's task budget (sleep.max_tasks = {settings.max_tasks})"] += \
            len(usable) - settings.max_tasks
        usable = usable[:settings.max_tasks]
    splits = split(usable, settings)
    reason = ""
    if len(usable) < 2:
        reason = (f"{len(usable)} usable task(s): a night needs at least 2 (one to learn from, one to judge with)")
    return Replay(*splits, excluded=dict(sorted(excluded.items())), simulated=simulated, reason=reason,
                  judge_over_chars=settings.judge_over_chars, repinned=dict(sorted(repinned.items())))


def split(tasks: Sequence[MinedTask], settings: SleepSettings
          ) -> tuple[tuple[MinedTask, ...], tuple[MinedTask, ...], tuple[MinedTask, ...]]:
    """(train, val, test) by each task's share (see the module contract)."""
    with_test = len(tasks) >= settings.test_min_tasks
    places: dict[str, list[MinedTask]] = {name: [] for name in SPLITS}
    for task in sorted(tasks, key=lambda t: t.id):
        u = share(task.id)
        if u < settings.val_share:
            places["val"].append(task)
        elif with_test and u < settings.val_share + settings.test_share:
            places["test"].append(task)
        else:
            places["train"].append(task)
    if len(tasks) >= 2:
        # never an empty train or val: move the task nearest to the val boundary across it
        if not places["val"]:
            donor = "train" if places["train"] else "test"
            moved = min(places[donor], key=lambda t: (share(t.id), t.id))
            places[donor].remove(moved)
            places["val"].append(moved)
        if not places["train"]:
            donor = "val" if len(places["val"]) > 1 else "test"
            moved = max(places[donor], key=lambda t: (share(t.id), t.id))
            places[donor].remove(moved)
            places["train"].append(moved)
    return tuple(places["train"]), tuple(places["val"]), tuple(places["test"])


def write_splits(folder: Path, replay: Replay) -> Path:
    """Write the night's split files into `folder` (created; old split files replaced); returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in SPLITS:
        path = folder / f"{name}.jsonl"
        rows = replay.rows(name)
        if rows:
            path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows),
                            encoding="utf-8")
        elif path.exists():
            path.unlink()
    return folder


def has_splits(folder: Path) -> bool:
    return (folder / "train.jsonl").is_file() and (folder / "val.jsonl").is_file()


def load_splits(folder: Path, env: EnvCfg) -> Splits:
    """The split files of `folder` through the project's task loader (see the module contract)."""
    try:
        return load_task_splits(dataclasses.replace(env, split_dir=str(folder)), folder)
    except TaskFileError as exc:
        raise SkillgitError(f"the night's tasks in {folder} cannot be read: {exc.message}",
                            f"delete {folder} to rebuild them from the mined task file") from None
