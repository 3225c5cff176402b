"""Which shell commands of mined tasks a person approved on this machine.

A mined agentic task carries shell commands taken from a transcript: `verify.command` (the test command the
sessions ran) and `setup` (empty when mined; a person may add some). A transcript is text an attacker can
influence — a pasted issue, a README or web page the agent read can make it run `pytest; curl … | sh` once — so
such a command runs in a night only when a person approved that exact text here.

Contracts:
- `command_key(task)`: the sha256 over the task's setup commands and verify command (None for a text task, which
  runs no command). Another id, prompt or commit with the same commands has the same key; any edit of a command
  (by a person, by a later mine) makes a new key that nobody approved yet.
- `approved(common_dir)`: the keys approved in this repository
  (`<git-common-dir>/skillgit/sleep/approved-commands.json`, outside the working tree: a task file committed or
  pulled with `"reviewed": true` approves nothing, and neither does `sleep run --yes`, which only releases task
  text to the models). A missing or unreadable file approves nothing.
- `record(common_dir, tasks, approve=…)`: add (or, with `approve=False`, remove) the keys of `tasks`' commands;
  returns how many keys changed. Written whole (a temporary file, then a rename), readable by its owner only.
  `skillgit sleep review --approve` / `--revoke` call it for every task of the file it shows.
- `commands(task)`: the commands a task would run, in order (setup, then verify), for a person to read.

The configuration's own commands (a pulled `skillgit.yaml` is text a teammate changed): `config_commands(cfg)` lists
what a night would run or hand to a command from the configuration — `env.scorer.command` / `env.scorer.callable`
(the scorer of text tasks: `SCORER`); for a role whose backend runs a program (`command`, `agent`, a plugin),
`model.<role>.command.argv`, `model.<role>.command.env_passthrough` and a `model.<role>.command.confine: off` (which
would let the night's agents write outside their rollouts: `skillgit.sandbox`); and for every role, where its calls
go with your key and the task text: `model.<role>.base_url`, `model.<role>.azure_endpoint` and
`model.<role>.api_key_env` (which variable's value is sent as the key) when set (all `NIGHT`: every call). Each is
approved by its exact text, in the same file (`ConfigCommand.approval_key`: key and text; an edited text is a new
key). `ConfigGate` (`config_gate(cfg, approved)`) says what a night here must leave out: everything when a `NIGHT`
command is not approved (`night_reason`), the text tasks the configured scorer scores when its command is not
(`replay.choose(scorer_blocked=…)`, counted under `SCORER_NOT_APPROVED`). `sleep review` shows them and `--approve`
approves them with the tasks' commands; `sleep schedule` approves what it shows. `skillgit train` and `demo` are
not gated: the person who types them runs the repository's configuration as they would run its `make`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from skillgit.config import Config
from skillgit.sleep.mine import MinedTask

APPROVALS_FILE = "approved-commands.json"
FORMAT_VERSION = 1
NOT_APPROVED = ("agentic task whose commands nobody approved here (`skillgit sleep review` shows them, "
                "`--approve` approves them; --yes does not)")
SCORER_NOT_APPROVED = ("text task scored by the configuration's scorer (env.scorer), whose command nobody approved "
                       "here (`skillgit sleep review` shows it, `--approve` approves it; --yes does not)")
CONFIG_NOT_APPROVED = ("the configuration's agent command, endpoint or confinement (model.*) is not approved here "
                       "(`skillgit sleep review` shows it, `--approve` approves it; --yes does not)")
UNAPPROVED_REASONS = (NOT_APPROVED, SCORER_NOT_APPROVED, CONFIG_NOT_APPROVED)  # what a person can undo
NIGHT, SCORER = "night", "scorer"  # what needs a configuration command: every rollout or call, or the scorer
_NO_PROGRAM = ("simulated", "openai", "azure", "anthropic", "handoff")  # backends that run no program of the config
_NO_ENDPOINT = ("simulated", "handoff")  # backends that send nothing anywhere


@dataclass(frozen=True)
class ConfigCommand:
    """A command (or what a command is handed) that a night would take from the configuration."""

    key: str  # the dotted config key
    text: str  # the exact text, as a person reads and approves it
    needs: str  # NIGHT | SCORER

    @property
    def shown_text(self) -> str:
        """The text as it is shown (stdout, stderr, JSON): with any credential in it masked (`redact`)."""
        from skillgit.redact import redact

        return redact(self.text)

    @property
    def approval_key(self) -> str:
        material = {"config": self.key, "text": self.text}
        return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def config_commands(cfg: Config) -> tuple[ConfigCommand, ...]:
    """See the module contract."""
    out: list[ConfigCommand] = []
    scorer = cfg.env.scorer
    if not cfg.env.name:  # an environment adapter scores instead of env.scorer
        if scorer.type == "command" and (scorer.command or "").strip():
            out.append(ConfigCommand("env.scorer.command", str(scorer.command), SCORER))
        elif scorer.type == "python" and scorer.callable:
            out.append(ConfigCommand("env.scorer.callable", str(scorer.callable), SCORER))
    for role, backend, bcfg in (("student", cfg.model.student_backend, cfg.model.student),
                                ("teacher", cfg.model.teacher_backend, cfg.model.teacher)):
        if backend in _NO_ENDPOINT:
            continue
        for name in ("base_url", "azure_endpoint", "api_key_env"):  # where the key and the task text go
            if value := (getattr(bcfg, name) or "").strip():
                out.append(ConfigCommand(f"model.{role}.{name}", value, NIGHT))
        if backend in _NO_PROGRAM:
            continue
        if bcfg.command.argv:
            out.append(ConfigCommand(f"model.{role}.command.argv", shlex.join(bcfg.command.argv), NIGHT))
        if bcfg.command.env_passthrough:
            out.append(ConfigCommand(f"model.{role}.command.env_passthrough",
                                     " ".join(bcfg.command.env_passthrough), NIGHT))
        if bcfg.command.confine == "off":
            out.append(ConfigCommand(f"model.{role}.command.confine", "off", NIGHT))
    return tuple(out)


@dataclass(frozen=True)
class ConfigGate:
    """The configuration's commands and which of them nobody approved here (see the module contract)."""

    commands: tuple[ConfigCommand, ...] = ()
    approved: frozenset[str] = frozenset()

    @property
    def missing(self) -> tuple[ConfigCommand, ...]:
        return tuple(c for c in self.commands if c.approval_key not in self.approved)

    @property
    def night_reason(self) -> str:
        """Why the night can run nothing ("" when it can): a NIGHT command nobody approved."""
        keys = [c.key for c in self.missing if c.needs == NIGHT]
        return (f"{', '.join(keys)} in the configuration: nobody approved it on this machine (a pulled change, or "
                "never approved; `skillgit sleep review` shows it, `--approve` approves it)") if keys else ""

    @property
    def scorer_blocked(self) -> bool:
        return any(c.needs == SCORER for c in self.missing)


def config_gate(cfg: Config, approved_keys: frozenset[str]) -> ConfigGate:
    return ConfigGate(config_commands(cfg), approved_keys)


def left_out(excluded: Mapping[str, int]) -> int:
    """How many tasks a night's `excluded` counts left out for want of an approval a person can give."""
    return sum(n for why, n in excluded.items() if why in UNAPPROVED_REASONS)


_NEXT = "read them with `skillgit sleep review`, approve with `skillgit sleep review --approve`"


def advice(excluded: Mapping[str, int]) -> list[str]:
    """One line per reason a night left tasks out for want of an approval here, with what to run."""
    lines = []
    if n := excluded.get(NOT_APPROVED, 0):
        lines.append(f"{n} agentic task(s) left out: nobody approved their commands on this machine; {_NEXT}")
    if n := excluded.get(SCORER_NOT_APPROVED, 0):
        lines.append(f"{n} text task(s) left out: nobody approved the configuration's scorer command (env.scorer) on "
                     f"this machine; {_NEXT}")
    if n := excluded.get(CONFIG_NOT_APPROVED, 0):
        lines.append(f"{n} task(s) left out, nothing ran: nobody approved the configuration's agent command, "
                     f"endpoint or confinement (model.*) on this machine; {_NEXT}")
    return lines


def commands(task: MinedTask) -> list[str]:
    """See the module contract."""
    if task.kind != "agentic":
        return []
    verify = str((task.verify or {}).get("command") or "")
    return [*task.setup, *([verify] if verify.strip() else [])]


def command_key(task: MinedTask) -> str | None:
    """See the module contract."""
    if task.kind != "agentic":
        return None
    material = {"setup": list(task.setup), "verify": str((task.verify or {}).get("command") or "")}
    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def path(common_dir: Path) -> Path:
    return common_dir / "skillgit" / "sleep" / APPROVALS_FILE


def _read(common_dir: Path) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(path(common_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    keys = data.get("commands") if isinstance(data, dict) else None
    if not isinstance(keys, dict):
        return {}
    return {str(k): v for k, v in keys.items() if isinstance(v, dict)}


def approved(common_dir: Path) -> frozenset[str]:
    """See the module contract."""
    return frozenset(_read(common_dir))


def approved_in(root: Path) -> frozenset[str]:
    """`approved` of the repository whose working tree is `root`."""
    from skillgit.store.repository import open_repository

    repo = open_repository(root)
    try:
        return approved(repo.common_dir)
    finally:
        repo.close()


def record(common_dir: Path, tasks: Iterable[MinedTask], *, approve: bool,
           config: Iterable[ConfigCommand] = ()) -> int:
    """See the module contract (`config`: configuration commands to approve or revoke with the tasks')."""
    keys = _read(common_dir)
    changed = 0
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    entries = [(key, {"task": task.id}) for task in tasks if (key := command_key(task)) is not None]
    entries += [(c.approval_key, {"config": c.key}) for c in config]
    for key, what in entries:
        if approve and key not in keys:
            keys[key] = {**what, "approved_at": now}
            changed += 1
        elif not approve and keys.pop(key, None) is not None:
            changed += 1
    if changed:
        target = path(common_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".approved-", dir=target.parent)  # created 0600
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"version": FORMAT_VERSION, "commands": keys}, out, indent=1, sort_keys=True)
            out.write("\n")
        os.replace(tmp, target)
    return changed
