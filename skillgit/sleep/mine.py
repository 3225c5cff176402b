"""Mining: from harvested sessions to the tasks that recur or failed, as replayable skillgit tasks.

Contracts:
- Task units and their outcome signals (`split_units`, `TaskUnit`, `TestRun`) live in sleep/units.py.
- `group_units` clusters units by TF-IDF cosine over normalised request words + the files the unit wrote + its
  test command, with average-linkage agglomeration stopped at `threshold`; no model is needed, and the result is
  deterministic for the same units.
- `mine(sessions)` keeps groups seen in at least `min_sessions` sessions or holding a failed unit, and returns one
  `MinedTask` each: agentic (the repository at the session's commit: the one the session recorded, else
  `rev_for(unit)` — the commit its branch pointed at just before the request, see `rev_before` — else
  `fallback_rev`, the HEAD commit resolved when mining; `signals.rev_from` says which; "HEAD" itself only when the
  caller gave neither); the representative prompt; verify = the test command the sessions ran, or a judge
  rubric when none ran) or text (nothing was run or written). Its id is a hash of the group's normalised requests
  and test command: the same group, the same id.
  `label(group) -> str`, when given, replaces the representative prompt (a teacher's relabelling hook).
  With `answers=True`, a kept group whose text units have accepted answers yields one text task per distinct
  request instead (`expected` = the accepted answer, id = a hash of the request's words and numbers, so the same
  request gives the same id on every night); a group without any accepted answer still yields its one task.
- `MineResult.units` (and its groups' units) hold what mining reads of a unit, not all of it: the agent's last
  answer is dropped (the accepted answer stays) and the commands are cut to the first (`Miner._kept`), so a night
  streaming a long history into a `Miner` holds ~a request and its signals per unit.
- `write_tasks` / `read_tasks`: a reviewable JSONL file whose first line is the header
  `{"skillgit_mined_tasks": 1, "reviewed": false, …}`; `reviewed` round-trips. Rows: agentic
  `{"id", "prompt", "workspace": {"repo": ".", "rev"}, "setup": [], "verify": {"command", "timeout_s", "result":
  "pytest"|"exit_code"} | {"rubric"}, "metadata": {"source": "sleep", "kind", "sessions", "signals"}}`; text
  `{"id", "input", "expected"?, "verify": {"rubric"}, "metadata": {…}}` (loadable by `skillgit.tasks`);
  `metadata.skill` names the skill the sessions invoked (`invoked_skill`: most units' first skill), when one was. With a
  `Scrubber`, every string is scrubbed again on the way out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skillgit.errors import SkillgitError
from skillgit.sleep.cluster import Stats, cluster, normalize
from skillgit.sleep.cluster import test_key as _test_key
from skillgit.sleep.model import Session
from skillgit.sleep.readers._common import as_dict
from skillgit.sleep.scrub import Scrubber
from skillgit.sleep.units import TaskUnit, TestRun, detect_test_runner, parse_test_output, split_units
from skillgit.textsafe import json_shown

__all__ = [  # the unit names stay importable from here (sleep/units.py is their home)
    "DEFAULT_THRESHOLD", "MineResult", "MinedTask", "MinedTaskFile", "Miner", "TaskGroup", "TaskUnit", "TestRun",
    "detect_test_runner", "group_units", "instance_id", "mine", "parse_test_output", "read_tasks", "rev_before",
    "split_units", "to_instances", "to_task", "unit_features", "write_tasks",
]

HEADER_KEY = "skillgit_mined_tasks"
FORMAT_VERSION = 1
DEFAULT_THRESHOLD = 0.3
DEFAULT_TIMEOUT_S = 600


# ------------------------------------------------------------------------------------------------ similarity
def unit_features(unit: TaskUnit, words: list[str] | None = None) -> Counter[str]:
    """The features `group_units` compares: the request's normalised `words` (computed when not given), the names
    of the files the unit wrote, its test commands."""
    feats: Counter[str] = Counter(normalize(unit.request) if words is None else words)
    tests = {_test_key(t.command) for t in unit.test_runs}
    for path in unit.paths:
        name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
        feats["file:" + name] += 2
        feats.update(normalize(name.rsplit(".", 1)[0].replace("-", "_")))
    for command in tests:
        feats["test:" + command] += 2
        for token in command.split():
            if "/" in token or token.endswith(".py") or "::" in token:
                feats["file:" + token.split("::")[0].rsplit("/", 1)[-1].lower()] += 1
    return feats


def group_units(units: Sequence[TaskUnit], threshold: float = DEFAULT_THRESHOLD) -> list[list[int]]:
    """Average-linkage clusters of `units` (indices), merged while linkage >= `threshold` (see sleep/cluster.py)."""
    return [list(c.members) for c in cluster((unit_features(u) for u in units), threshold)]


# ------------------------------------------------------------------------------------------------ tasks
@dataclass(frozen=True)
class TaskGroup:
    """Units judged to be the same task; `representative` is the unit most similar to the others. `words`: each
    unit's normalised request (in `units` order) when the miner kept them (task ids read them), else empty."""

    units: tuple[TaskUnit, ...]
    representative: TaskUnit
    cohesion: float = 1.0
    words: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def sessions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(u.session_key for u in self.units))

    @property
    def failed(self) -> bool:
        return any(u.outcome == "failed" for u in self.units)


@dataclass(frozen=True)
class MinedTask:
    id: str
    kind: str  # agentic | text
    prompt: str
    rev: str = "HEAD"
    setup: tuple[str, ...] = ()
    verify: dict[str, Any] = field(default_factory=dict)
    sessions: tuple[dict[str, Any], ...] = ()
    signals: dict[str, Any] = field(default_factory=dict)
    expected: Any = None  # text tasks: the answer a person accepted (None: only the rubric can judge)
    skill: str | None = None  # the skill the sessions invoked for it (None: none fired); sleep/route.py routes by it

    def to_row(self) -> dict[str, Any]:
        metadata = {"source": "sleep", "kind": self.kind, "sessions": [dict(s) for s in self.sessions],
                    "signals": dict(self.signals), **({"skill": self.skill} if self.skill else {})}
        if self.kind == "text":
            row = {"id": self.id, "input": self.prompt, "verify": dict(self.verify), "metadata": metadata}
            if self.expected is not None:
                row["expected"] = self.expected
            return row
        return {"id": self.id, "prompt": self.prompt, "workspace": {"repo": ".", "rev": self.rev},
                "setup": list(self.setup), "verify": dict(self.verify), "metadata": metadata}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> MinedTask:
        metadata = as_dict(row.get("metadata"))
        workspace = row.get("workspace") if isinstance(row.get("workspace"), dict) else None
        return cls(
            id=str(row.get("id", "")),
            kind="agentic" if workspace is not None else "text",
            prompt=str(row.get("prompt") if workspace is not None else row.get("input", "")),
            rev=str((workspace or {}).get("rev") or "HEAD"),
            setup=tuple(str(s) for s in row.get("setup") or ()),
            verify=dict(row.get("verify") or {}),
            sessions=tuple(dict(s) for s in metadata.get("sessions") or ()),
            signals=dict(metadata.get("signals") or {}),
            expected=row.get("expected") if workspace is None else None,
            skill=str(metadata["skill"]) if isinstance(metadata.get("skill"), str) and metadata["skill"] else None,
        )

    to_dict = to_row

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MinedTask:
        return cls.from_row(data)


@dataclass(frozen=True)
class MineResult:
    units: tuple[TaskUnit, ...]
    groups: tuple[TaskGroup, ...]
    tasks: tuple[MinedTask, ...]
    capped: int = 0  # places where grouping hit a bound (0: the pairwise algorithm's groups; sleep/cluster.py)

    def summary(self) -> dict[str, Any]:
        return {"units": len(self.units), "groups": len(self.groups), "tasks": len(self.tasks),
                "recurring": sum(1 for t in self.tasks if t.signals.get("sessions", 0) >= 2),
                "failed": sum(1 for t in self.tasks if t.signals.get("failed_units", 0)), "capped": self.capped}


def _task_id(group: TaskGroup, test_command: str | None) -> str:
    key = "\n".join(sorted(group.words or (" ".join(normalize(u.request)) for u in group.units)))
    key += "|" + _test_key(test_command or "")
    return "sleep-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


def _verify_command(group: TaskGroup) -> TestRun | None:
    """The test command the group ran most (the last run of each unit votes; a passing run wins ties)."""
    votes: Counter[str] = Counter()
    runs: dict[str, TestRun] = {}
    for unit in group.units:
        last = unit.last_test
        if last is None:
            continue
        key = _test_key(last.command)
        votes[key] += 2 if last.passed else 1
        if key not in runs or last.command < runs[key].command:  # the same choice whatever the unit order
            runs[key] = last
    if not votes:
        return None
    best = max(votes.items(), key=lambda kv: (kv[1], -len(kv[0]), kv[0]))[0]
    return runs[best]


def invoked_skill(units: Iterable[TaskUnit]) -> str | None:
    """The skill a group was invoked with: the first skill of most of its units (ties: the name first in order);
    None when no unit invoked one."""
    votes = Counter(u.skills[0] for u in units if u.skills)
    return min(votes.items(), key=lambda kv: (-kv[1], kv[0]))[0] if votes else None


def _rubric(prompt: str, group: TaskGroup) -> str:
    lines = [f"Judge whether the agent's work fulfils this request: {prompt}"]
    corrections = [f for u in group.units for f in u.followups][:3]
    if corrections:
        lines.append("In past sessions the person corrected the agent with: " + " | ".join(corrections))
    lines.append("Pass only if the request is met without the problems those corrections point at.")
    return "\n".join(lines)


def _signals(group: TaskGroup, test: TestRun | None) -> dict[str, Any]:
    outcomes = Counter(u.outcome for u in group.units)
    return {
        "units": len(group.units),
        "sessions": len(group.sessions),
        "failed_units": outcomes["failed"],
        "passed_units": outcomes["passed"],
        "unknown_units": outcomes["unknown"],
        "corrections": sum(u.corrections for u in group.units),
        "reverts": sum(u.reverts for u in group.units),
        "accepted": sum(1 for u in group.units if u.accepted),
        "test_command": test.command if test else None,
        "test_runs": [{"command": t.command, "passed": t.passed, "summary": t.summary}
                      for u in group.units for t in u.test_runs][-10:],
        "paths": sorted({p for u in group.units for p in u.paths})[:20],
        "cohesion": round(group.cohesion, 3),
    }


def to_task(group: TaskGroup, *, label: Callable[[TaskGroup], str] | None = None,
            rev_for: Callable[[TaskUnit], str | None] | None = None, scrubber: Scrubber | None = None,
            timeout_s: int = DEFAULT_TIMEOUT_S, fallback_rev: str | None = None) -> MinedTask:
    rep = group.representative
    prompt = (label(group) if label is not None else "") or rep.request
    clean = scrubber.text if scrubber is not None else (lambda s: s)
    prompt = clean(prompt)
    test = _verify_command(group)
    agentic = any(u.did_work for u in group.units)
    verify: dict[str, Any]
    if test is not None:
        verify = {"command": clean(test.command), "timeout_s": timeout_s,
                  "result": "pytest" if test.framework == "pytest" else "exit_code"}
    else:
        verify = {"rubric": clean(_rubric(prompt, group))}
    rev, rev_from = _rev(rep, rev_for, fallback_rev)
    sessions = tuple({"source": u.source, "session_id": u.session_id, "unit": u.index, "started": u.timestamp,
                      "outcome": u.outcome, **({"branch": u.git_branch} if u.git_branch else {})}
                     for u in group.units)
    return MinedTask(id=_task_id(group, test.command if test else None), kind="agentic" if agentic else "text",
                     prompt=prompt, rev=rev, verify=verify, sessions=sessions,
                     signals={**_signals(group, test), "rev_from": rev_from}, skill=invoked_skill(group.units))


def _rev(unit: TaskUnit, rev_for: Callable[[TaskUnit], str | None] | None, fallback: str | None
         ) -> tuple[str, str]:
    """(commit, where it came from) for an agentic task mined from `unit` (see the module contract)."""
    if unit.git_commit:
        return unit.git_commit, "session"
    found = rev_for(unit) if rev_for is not None else None
    if found:
        return found, "before the session"
    if fallback:
        return fallback, "HEAD when mined (no commit of the session's time was found)"
    return "HEAD", "unresolved"


def instance_id(request: str) -> str:
    """The id of a one-request text task: a hash of the request's words and numbers (case and spacing aside), so
    the same request asked on another night, or in another session, gives the same id."""
    key = " ".join(re.findall(r"\w+|[^\w\s]", request.lower()))
    return "sleep-" + hashlib.sha256(("instance\n" + key).encode("utf-8")).hexdigest()[:12]


def to_instances(group: TaskGroup, *, scrubber: Scrubber | None = None) -> list[MinedTask]:
    """One text task per distinct request of `group` whose answer a person accepted (the latest acceptance of a
    request wins); [] when none was. The group's signals travel along, with the group's own task id."""
    clean = scrubber.text if scrubber is not None else (lambda s: s)
    group_id = _task_id(group, None)
    signals = {**_signals(group, None), "group": group_id}
    latest: dict[str, TaskUnit] = {}
    for unit in group.units:  # ordered by time: a later acceptance replaces an earlier one
        if unit.accepted_answer and not unit.did_work and unit.request.strip():
            latest[instance_id(unit.request)] = unit
    tasks = []
    for task_id, unit in sorted(latest.items()):
        prompt = clean(unit.request)
        tasks.append(MinedTask(
            id=task_id, kind="text", prompt=prompt, expected=clean(unit.accepted_answer or ""),
            verify={"rubric": clean(_rubric(prompt, group))},
            sessions=({"source": unit.source, "session_id": unit.session_id, "unit": unit.index,
                       "started": unit.timestamp, "outcome": unit.outcome},),
            signals={**signals, "corrections": unit.corrections}, skill=invoked_skill([unit])))
    return tasks


def _kept(unit: TaskUnit) -> TaskUnit:
    """What mining reads of a unit: its agent's last answer is dropped (its accepted answer is kept) and its
    commands are cut to the first (mining reads only whether there was one: `did_work`)."""
    if not unit.answer and len(unit.commands) <= 1:
        return unit
    return replace(unit, answer="", commands=unit.commands[:1])


def _features(pending: list[tuple[tuple[str, str, int, int], TaskUnit]], units: list[TaskUnit], spoken: list[str]
              ) -> Iterator[Counter[str]]:
    """The features of each unit of `pending` (in order) that is not a resumed conversation's copy, appended to
    `units` as it goes, and its normalised request to `spoken`: each request is normalised once, for its
    fingerprint, its features and its task id. Nothing else is held once it has run (the fingerprints, `pending`)."""
    seen: set[tuple[str, str | None]] = set()
    for _, unit in pending:
        words = normalize(unit.request)
        # a resumed conversation copies earlier turns into a new file: count each request once
        fingerprint = (" ".join(words), unit.timestamp)
        if unit.timestamp and fingerprint in seen:
            continue
        seen.add(fingerprint)
        units.append(unit)
        spoken.append(fingerprint[0])
        yield unit_features(unit, words)
    pending.clear()


class Miner:
    """`mine`, one session at a time: `add` cuts a session into units at once (the session is not kept), `result`
    groups every unit added and returns the `MineResult`. Holds the units (a request, its test summaries, paths
    and accepted answer: `_kept`), never the sessions: a night streams harvest into it."""

    def __init__(self, *, threshold: float = DEFAULT_THRESHOLD, min_sessions: int = 2,
                 label: Callable[[TaskGroup], str] | None = None,
                 rev_for: Callable[[TaskUnit], str | None] | None = None, scrubber: Scrubber | None = None,
                 timeout_s: int = DEFAULT_TIMEOUT_S, answers: bool = False, fallback_rev: str | None = None) -> None:
        self.threshold, self.min_sessions, self.label, self.rev_for = threshold, min_sessions, label, rev_for
        self.scrubber, self.timeout_s, self.answers, self.fallback_rev = scrubber, timeout_s, answers, fallback_rev
        self._units: list[tuple[tuple[str, str, int, int], TaskUnit]] = []

    def add(self, session: Session, first_new_turn: int = 0) -> None:
        """Keep the units of `session` that reach turn `first_new_turn` (skipped sessions add nothing)."""
        if session.skipped_reason:
            return
        started = session.started or ""
        for unit in split_units(session, first_new_turn):
            if unit.request:
                self._units.append(((started, unit.session_key, unit.index, len(self._units)), _kept(unit)))

    def result(self) -> MineResult:
        # the order harvest gives sessions in (by start, then key), whatever order they were added in
        pending, self._units = self._units, []
        pending.sort(key=lambda pair: pair[0])
        units: list[TaskUnit] = []
        spoken: list[str] = []
        docs = _features(pending, units, spoken)
        del pending  # held by `docs` until it has run
        stats = Stats()
        groups: list[TaskGroup] = []
        for found in cluster(docs, self.threshold, stats=stats):
            mean = dict(zip(found.members, found.mean_sims))
            # most typical unit; ties go to the earliest, so the choice does not depend on the order of sessions
            rep = min(found.members, key=lambda i: (-round(mean[i], 9), units[i].timestamp or "",
                                                    units[i].session_key, units[i].index))
            ordered = sorted(found.members, key=lambda i: (units[i].timestamp or "", units[i].session_key,
                                                             units[i].index))
            groups.append(TaskGroup(tuple(units[i] for i in ordered), units[rep], found.cohesion,
                                    tuple(spoken[i] for i in ordered)))
        kept = [g for g in groups if len(g.sessions) >= self.min_sessions or g.failed]
        tasks: list[MinedTask] = []
        for g in kept:
            instances = to_instances(g, scrubber=self.scrubber) if self.answers else []
            tasks.extend(instances or [to_task(g, label=self.label, rev_for=self.rev_for, scrubber=self.scrubber,
                                                  timeout_s=self.timeout_s, fallback_rev=self.fallback_rev)])
        return MineResult(tuple(units), tuple(groups), tuple(tasks), stats.capped_pairs + stats.capped_clusters)


def mine(sessions: Iterable[Session], *, threshold: float = DEFAULT_THRESHOLD, min_sessions: int = 2,
         first_new_turn: Mapping[str, int] | None = None, label: Callable[[TaskGroup], str] | None = None,
         rev_for: Callable[[TaskUnit], str | None] | None = None, scrubber: Scrubber | None = None,
         timeout_s: int = DEFAULT_TIMEOUT_S, answers: bool = False, fallback_rev: str | None = None) -> MineResult:
    """Units → groups → the tasks worth replaying (see the module contract). `first_new_turn` is read when each
    session arrives, so a mapping that a streaming harvest fills as it goes works."""
    miner = Miner(threshold=threshold, min_sessions=min_sessions, label=label, rev_for=rev_for, scrubber=scrubber,
                  timeout_s=timeout_s, answers=answers, fallback_rev=fallback_rev)
    for session in sessions:
        miner.add(session, (first_new_turn or {}).get(session.key, 0))
    return miner.result()


def rev_before(repo_root: Path | str, timestamp: str | None, branch: str | None = None) -> str | None:
    """The commit `branch` (default HEAD) pointed at just before `timestamp`, for `mine(rev_for=…)`; None when git
    cannot tell. Reads the repository only."""
    from skillgit.errors import SkillgitError
    from skillgit.store.repository import open_repository

    if not timestamp:
        return None
    try:
        repo = open_repository(Path(repo_root))
    except SkillgitError:
        return None
    for ref in ([branch] if branch else []) + ["HEAD"]:
        sha = repo.rev_before(timestamp, ref)
        if sha and re.fullmatch(r"[0-9a-f]{40}", sha):
            return sha
    return None


# ------------------------------------------------------------------------------------------------ files
@dataclass(frozen=True)
class MinedTaskFile:
    reviewed: bool
    tasks: tuple[MinedTask, ...]
    header: dict[str, Any] = field(default_factory=dict)


def _scrub_tree(value: Any, scrubber: Scrubber) -> Any:
    if isinstance(value, str):
        return scrubber.text(value)
    if isinstance(value, dict):
        return {k: _scrub_tree(v, scrubber) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_tree(v, scrubber) for v in value]
    return value


def write_tasks(path: Path | str, tasks: Iterable[MinedTask], *, reviewed: bool = False,
                meta: Mapping[str, Any] | None = None, scrubber: Scrubber | None = None) -> Path:
    """Write the reviewable JSONL file (header line, then one row per task) and return its path."""
    rows = [t.to_row() for t in tasks]
    if scrubber is not None:
        rows = [_scrub_tree(r, scrubber) for r in rows]
    header = {HEADER_KEY: FORMAT_VERSION, "reviewed": bool(reviewed), "count": len(rows),
              **{k: v for k, v in (meta or {}).items() if k not in (HEADER_KEY, "reviewed", "count")}}
    if scrubber is not None:
        header = _scrub_tree(header, scrubber)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(header, ensure_ascii=False, sort_keys=True)]
    lines += [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in rows]
    # a person reviews this file (cat, less, git diff): no bidi override or C1 control from a transcript acts there
    target.write_text(json_shown("\n".join(lines)) + "\n", encoding="utf-8")
    return target


def read_tasks(path: Path | str) -> MinedTaskFile:
    """Read a file written by `write_tasks` (after a person may have edited it); errors name the line."""
    target = Path(path)
    try:
        lines = [(n, line) for n, line in enumerate(target.read_text(encoding="utf-8").splitlines(), 1)
                 if line.strip()]
    except OSError as exc:
        raise SkillgitError(f"cannot read mined tasks {target}: {exc.strerror or exc}",
                            "run `skillgit sleep mine` to write it") from exc
    rows: list[dict[str, Any]] = []
    for number, line in lines:
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise SkillgitError(f"{target}:{number}: not valid JSON ({exc})",
                                "fix the line or delete it; each line is one JSON object") from exc
        if not isinstance(row, dict):
            raise SkillgitError(f"{target}:{number}: a row must be a JSON object", "delete or fix the line")
        rows.append(row)
    if not rows or HEADER_KEY not in rows[0]:
        raise SkillgitError(f"{target}: not a mined task file (no {HEADER_KEY!r} header line)",
                            "the first line must be the header written by `skillgit sleep mine`")
    header = rows[0]
    if not isinstance(header.get(HEADER_KEY), int) or header[HEADER_KEY] > FORMAT_VERSION:
        raise SkillgitError(f"{target}: mined task format {header.get(HEADER_KEY)!r} is newer than this skillgit "
                            f"reads ({FORMAT_VERSION})", "upgrade skillgit")
    return MinedTaskFile(bool(header.get("reviewed")), tuple(MinedTask.from_row(r) for r in rows[1:]), header)
