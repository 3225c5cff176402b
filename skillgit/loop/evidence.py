"""What a run's measurements rest on: its own journal salt, and the config and tasks it started with.

Contract:
- `Evidence` is recorded on the run's ref (`evidence.json`, beside `progress.json` and `config.yaml`) before the
  run makes its first model call. `salt` goes into every student key of the call journal while the run is bound
  (`CallCache.bind_run`), so a new run — even on an unchanged tip, with rounds restarting at 1 — measures its
  incumbent afresh instead of replaying an earlier run's answers, and a resumed run (same salt) replays every call
  it finished. A run saved before runs had a salt has none (`salt == ""`): it keeps the shared keys it began with.
  `chats`: the salt goes into its chat keys too (`chat_salt`: the teacher's calls and a rubric judge's; why both:
  `llm/cache.py`'s contract) — every run begun since; a run saved with a salt but before chat keys were salted
  has `chats` false and keeps its run-free chat keys, so its resume replays the teacher calls it finished.
  `tasks` digests the train/val/test items ("" when not recorded).
- `opened(store, run_id, progress, digest=, tasks=, config_yaml=)`: a new run (nothing saved yet) gets a fresh
  random salt; a saved run its recorded evidence, after checking that what it measures with is unchanged: a
  different config digest whose recorded `config.yaml` differs in a key of the evidence (model, judge, scorer,
  gate settings… every key outside `NOT_EVIDENCE`: `RUNTIME_ONLY_KEYS` and `evaluation.eval_test`), or a
  different tasks digest, raises (exit 2) naming what changed and the fix (restore it, or `skillgit train --new`).
  A change of other keys goes on; the returned notes name those changed besides the `ROUTINE` ones (max_steps,
  budgets, eval_test: a larger budget or a library's next turn), e.g. workers or concurrency (the run says them
  as warnings).
- `tasks_digest(splits)`: 12 hex digits over every item of the three splits (id, input, expected, metadata).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any

import yaml

from skillgit.config import RUNTIME_ONLY_KEYS
from skillgit.config_layers import leaves
from skillgit.errors import ExitCode, SkillgitError
from skillgit.records import RunProgress
from skillgit.store import Store
from skillgit.tasks import SPLIT_NAMES, Splits

FILE = "evidence.json"
SHOWN_CHANGES = 6  # changed keys named in a refusal (the rest counted)
_MISSING = object()


@dataclass(frozen=True)
class Evidence:
    """A run's journal salt ("" for a run begun before runs had one), its tasks digest ("" unknown) and whether
    the salt keys its chat calls too."""

    salt: str
    tasks: str = ""
    chats: bool = False

    @property
    def chat_salt(self) -> str:
        """What keys the run's chat calls (teacher, judge) apart: its salt, or "" for a run begun before."""
        return self.salt if self.chats else ""

    def to_json(self) -> str:
        return json.dumps({"salt": self.salt, "tasks": self.tasks, "chats": self.chats}, indent=2, sort_keys=True)

    @classmethod
    def read(cls, files: dict[str, str]) -> Evidence:
        """The evidence recorded in a run's files; a run saved without it: no salt, tasks unknown."""
        try:
            data = json.loads(files[FILE]) if FILE in files else {}
        except ValueError:
            data = {}
        data = data if isinstance(data, dict) else {}
        return cls(str(data.get("salt") or ""), str(data.get("tasks") or ""), data.get("chats") is True)


def new_salt() -> str:
    return secrets.token_hex(8)


def tasks_digest(splits: Splits) -> str:
    h = hashlib.sha256()
    for name in SPLIT_NAMES:
        for item in splits.get(name):
            row = [name, item.id, item.input, item.expected, item.metadata]
            h.update(json.dumps(row, sort_keys=True, default=str, ensure_ascii=False).encode("utf-8"))
            h.update(b"\n")
    return h.hexdigest()[:12]


def recorded_tasks(store: Store, run_id: str) -> str:
    """The tasks digest a saved run recorded ("" when none)."""
    return Evidence.read(store.load_run(run_id) or {}).tasks


# Keys that do not touch what a run measures: how fast and how far it goes, and whether it reads the test split at
# its end (reported only; a library's turns set it off until the last one)
NOT_EVIDENCE: tuple[str, ...] = (*RUNTIME_ONLY_KEYS, "evaluation.eval_test")
# …of which these change routinely between a run's processes (a larger budget, one more turn): not worth a word
ROUTINE: tuple[str, ...] = ("train.max_steps", "budget", "evaluation.eval_test")


def _under(key: str, names: tuple[str, ...]) -> bool:
    return any(key == k or key.startswith(k + ".") for k in names)


def _short(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def config_changes(recorded_yaml: str, now_yaml: str) -> tuple[list[str], list[str]] | None:
    """(keys of the evidence, other keys but the `ROUTINE` ones) whose values differ between two dumped configs,
    each as `key: before -> now`; None when the recorded one cannot be read."""
    try:
        before = dict(leaves(yaml.safe_load(recorded_yaml) or {}))
        now = dict(leaves(yaml.safe_load(now_yaml) or {}))
    except (yaml.YAMLError, AttributeError, TypeError):
        return None
    keys = sorted(k for k in before.keys() | now.keys() if before.get(k, _MISSING) != now.get(k, _MISSING))
    said = {k: f"{k}: {_short(before.get(k))} -> {_short(now.get(k))}" for k in keys}
    return ([said[k] for k in keys if not _under(k, NOT_EVIDENCE)],
            [said[k] for k in keys if _under(k, NOT_EVIDENCE) and not _under(k, ROUTINE)])


def opened(store: Store, run_id: str, progress: RunProgress, *, digest: str, tasks: str,
           config_yaml: str) -> tuple[Evidence, list[str]]:
    """(the run's evidence, notes to say): see the module contract."""
    files = store.load_run(run_id) or {}
    if "progress.json" not in files:
        return Evidence(new_salt(), tasks, chats=True), []
    recorded = Evidence.read(files)
    found = config_changes(files.get("config.yaml", ""), config_yaml)
    changed, runtime = found if found is not None else ([], [])
    problems: list[str] = []
    if progress.config_digest != digest and (changed or found is None):
        named = "; ".join(changed[:SHOWN_CHANGES]) + (f" (and {len(changed) - SHOWN_CHANGES} more)"
                                                       if len(changed) > SHOWN_CHANGES else "")
        problems.append(f"its config ({named})" if changed
                        else f"its config (digest {progress.config_digest} -> {digest})")
    if recorded.tasks and recorded.tasks != tasks:
        problems.append(f"its tasks (the train/val/test items: digest {recorded.tasks} -> {tasks})")
    if problems:
        raise SkillgitError(
            f"run {run_id} changed since it started: {'; and '.join(problems)}; its scores and decisions so far "
            "were measured under what it started with, so it cannot go on under this",
            f"restore what changed (the run's config: `git show refs/skillgit/runs/{run_id}:config.yaml`), or "
            "start a new run with `skillgit train --new`", ExitCode.USAGE)
    notes = [f"run {run_id} resumes with {'; '.join(runtime)}: settings of speed and reach, not of what it "
             "measures"] if runtime else []
    return Evidence(recorded.salt, recorded.tasks or tasks, recorded.chats), notes
