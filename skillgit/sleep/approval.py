"""Which shell commands of mined tasks a person approved on this machine.

A mined agentic task carries shell commands taken from a transcript: `verify.command` (the test command the
sessions ran) and `setup` (empty when mined; a person may add some). A transcript is text an attacker can
influence — a pasted issue, a README or web page the agent read can make it run `pytest; curl … | sh` once — so
such a command runs in a night only when a person approved that exact text here.

Contracts:
- `command_key(task, files)`: the sha256 over the task's setup commands and verify command (None for a text task,
  which runs no command) and, when the commands run files of the repository (`approval_files.paths_of`: `python
  check.py`, `./scripts/x.sh`, `make`, `python -m pkg.mod`, the tests given to pytest), each file's content there
  (`files`: path → digest; a named file that does not exist is "missing", a path leaving the repository is not
  read and not covered). Another id, prompt or commit with the same commands and the same files' content has the
  same key; any edit of a command (by a person, by a later mine) or of a file it runs (a teammate's pull) makes a
  new key that nobody approved yet. `text_key(task)` is the key without files (what approvals before format 2
  recorded: it still approves a command that runs no repository file). `RepoFiles(repo, base)` reads the files
  where the night runs them: in the task's workspace commit (`task.rev`, pinned as the night pins it with `base`,
  the skill branch's tip: `pins.pin`), from git's objects (the working tree is not read).
- `record(common_dir, tasks, approve=…, files=…)`: add (or, with `approve=False`, remove) the keys of `tasks`'
  commands (with `files` — task → the files it runs, e.g. `RepoFiles.files` — covering them; without, the text);
  returns how many keys changed. Each entry keeps its text key and the files' digests, so `changed(...)` can say
  which file changed since (name and short digest: never the file's content) or that the approval predates
  format 2 (`LEGACY`).
  Written whole (a temporary file, then a rename), readable by its owner only; a format-1 file is read as it is
  (its keys still approve what they covered).
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
key), and with `root` (`config_commands(cfg, root)`) by the content of the repository files it runs, read in the
working tree (where the scorer runs, and from where the configuration itself is read): a scorer command's or an
agent argv's scripts and programs (`approval_files`), a `python` scorer's `module:function` module file.
`ConfigGate` (`config_gate(cfg, approved, root)`) says what a night here must leave out: everything when a `NIGHT`
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
from typing import Callable, Iterable, Mapping

from skillgit.config import Config
from skillgit.sleep.approval_files import RunFile, argv_paths, at_rev, in_folder, paths_of
from skillgit.sleep.mine import MinedTask
from skillgit.store.repository import Repository

APPROVALS_FILE = "approved-commands.json"
FORMAT_VERSION = 2  # 2: entries keep their text key and the files they cover (1: text keys only)
LEGACY = ("approved before skillgit's approvals covered the files a command runs (approved-commands.json format 1): "
          "read it again and approve it again (`--approve`)")
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
    files: tuple[RunFile, ...] = ()  # the repository files it runs, with their content's digest (working tree)

    @property
    def shown_text(self) -> str:
        """The text as it is shown (stdout, stderr, JSON): with any credential in it masked (`redact`)."""
        from skillgit.redact import redact

        return redact(self.text)

    @property
    def text_key(self) -> str:
        """The key of the text alone (format 1's key)."""
        return _digest({"config": self.key, "text": self.text})

    @property
    def approval_key(self) -> str:
        if not self.files:
            return self.text_key
        return _digest({"config": self.key, "text": self.text, "files": _files(self.files)})


def _digest(material: Mapping[str, object]) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _files(files: Iterable[RunFile]) -> dict[str, str]:
    return {f.path: f.digest for f in files}


def config_commands(cfg: Config, root: Path | None = None) -> tuple[ConfigCommand, ...]:
    """See the module contract (`root`: the working tree whose files the commands run; None: their text only)."""
    def runs(paths: list[str]) -> tuple[RunFile, ...]:
        return in_folder(root, paths) if root is not None and paths else ()

    out: list[ConfigCommand] = []
    scorer = cfg.env.scorer
    if not cfg.env.name:  # an environment adapter scores instead of env.scorer
        if scorer.type == "command" and (scorer.command or "").strip():
            out.append(ConfigCommand("env.scorer.command", str(scorer.command), SCORER,
                                     runs(paths_of([str(scorer.command)]))))
        elif scorer.type == "python" and scorer.callable:
            module = str(scorer.callable).partition(":")[0].strip()
            out.append(ConfigCommand("env.scorer.callable", str(scorer.callable), SCORER,
                                     runs([f"module:{module}"] if module.replace(".", "").isidentifier() else [])))
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
            out.append(ConfigCommand(f"model.{role}.command.argv", shlex.join(bcfg.command.argv), NIGHT,
                                     runs(argv_paths(bcfg.command.argv))))
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


def config_gate(cfg: Config, approved_keys: frozenset[str], root: Path | None = None) -> ConfigGate:
    return ConfigGate(config_commands(cfg, root), approved_keys)


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


def text_key(task: MinedTask) -> str | None:
    """See the module contract."""
    if task.kind != "agentic":
        return None
    return _digest({"setup": list(task.setup), "verify": str((task.verify or {}).get("command") or "")})


def command_key(task: MinedTask, files: tuple[RunFile, ...] = ()) -> str | None:
    """See the module contract."""
    if task.kind != "agentic" or not files:
        return text_key(task)
    return _digest({"setup": list(task.setup), "verify": str((task.verify or {}).get("command") or ""),
                    "files": _files(files)})


class RepoFiles:
    """The files tasks' commands run, read in `repo` at each task's workspace commit (see the module contract)."""

    def __init__(self, repo: Repository, base: str | None = None) -> None:
        self.repo, self.base = repo, base
        self._seen: dict[tuple[str, tuple[str, ...]], tuple[RunFile, ...]] = {}

    def files(self, task: MinedTask) -> tuple[RunFile, ...]:
        if task.kind != "agentic":
            return ()
        from skillgit.sleep.pins import pin

        rev = (pin(task, self.repo, self.base).task or task).rev
        paths = tuple(paths_of(commands(task)))
        if (rev, paths) not in self._seen:
            self._seen[(rev, paths)] = at_rev(self.repo, rev, paths)
        return self._seen[(rev, paths)]

    def key(self, task: MinedTask) -> str | None:
        return command_key(task, self.files(task))


def path(common_dir: Path) -> Path:
    return common_dir / "skillgit" / "sleep" / APPROVALS_FILE


def _read(common_dir: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(path(common_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    keys = data.get("commands") if isinstance(data, dict) else None
    if not isinstance(keys, dict):
        return {}
    return {str(k): v for k, v in keys.items() if isinstance(v, dict)}


def changed(recorded: Mapping[str, Mapping[str, object]], text: str | None, files: tuple[RunFile, ...]) -> str:
    """Why a command whose text was approved here is not approved as it is now: `LEGACY`, or the files that changed
    since its newest approval ("check.py 1a2b3c4d5e6f → 9f8e7d6c5b4a"); "" when its text was never approved (or its
    approval stands)."""
    if text is None:
        return ""
    same = sorted((e for e in recorded.values() if e.get("commands") == text and isinstance(e.get("files"), dict)),
                  key=lambda e: str(e.get("approved_at", "")))
    if not same:  # never approved, or by a skillgit whose keys covered the text alone
        return LEGACY if text in recorded and files else ""
    old: dict[str, object] = dict(same[-1]["files"])  # type: ignore[call-overload]
    now = {f.path: f for f in files}
    shown = []
    for name in sorted(set(old) | set(now)):
        before = str(old.get(name, "not run then"))
        after = now[name].digest if name in now else "not run now"
        if before != after:
            shown.append(f"{_label(name)} {_short(before)} → {_short(after)}")
    return ("changed since approved: " + ", ".join(shown)) if shown else ""


def _label(path: str) -> str:
    return f"{path[7:]} (module)" if path.startswith("module:") else path


def _short(digest: str) -> str:
    return digest[:12] if len(digest) == 64 or len(digest) == 40 else digest


def shown_files(files: Iterable[RunFile]) -> str:
    """The files a command runs, as `sleep review` lists them: name and short digest (never their content)."""
    return ", ".join(f"{_label(f.path)} {f.short}" for f in files)


def approved(common_dir: Path) -> frozenset[str]:
    """See the module contract."""
    return frozenset(_read(common_dir))


def approved_in(root: Path) -> frozenset[str]:
    """`approved` of the repository whose working tree is `root`."""
    return frozenset(entries_in(root))


def entries_in(root: Path) -> dict[str, dict[str, object]]:
    """`entries` of the repository whose working tree is `root`."""
    from skillgit.store.repository import open_repository

    repo = open_repository(root)
    try:
        return entries(repo.common_dir)
    finally:
        repo.close()


def entries(common_dir: Path) -> dict[str, dict[str, object]]:
    """The approvals recorded here: key → what it approved (`record`)."""
    return dict(_read(common_dir))


def record(common_dir: Path, tasks: Iterable[MinedTask], *, approve: bool,
           config: Iterable[ConfigCommand] = (),
           files: Callable[[MinedTask], tuple[RunFile, ...]] | None = None) -> int:
    """See the module contract (`config`: configuration commands to approve or revoke with the tasks')."""
    keys = _read(common_dir)
    count = 0
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    found: list[tuple[str, dict[str, object]]] = []
    for task in tasks:
        run = files(task) if files is not None else ()
        if (key := command_key(task, run)) is not None:
            found.append((key, {"task": task.id, "commands": text_key(task), "files": _files(run)}))
    found += [(c.approval_key, {"config": c.key, "commands": c.text_key, "files": _files(c.files)}) for c in config]
    for key, what in found:
        if approve and key not in keys:
            keys[key] = {**what, "approved_at": now}
            count += 1
            if key != what["commands"]:  # a format-1 approval of the text alone: this one supersedes it
                keys.pop(str(what["commands"]), None)
        elif not approve:  # every approval of the command: this one, earlier files' and a format-1 text key
            gone = [k for k, e in keys.items() if k in (key, what["commands"]) or e.get("commands") == what["commands"]]
            for k in gone:
                del keys[k]
            count += len(gone)
    if count:
        target = path(common_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".approved-", dir=target.parent)  # created 0600
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"version": FORMAT_VERSION, "commands": keys}, out, indent=1, sort_keys=True)
            out.write("\n")
        os.replace(tmp, target)
    return count
