"""The real router: run an agent CLI with the whole library installed and read which skills it loaded.

`AgentRunner(argv, env, agent)` is a `TraceRouter` runner. For each prompt it makes a fresh workspace, installs
every skill of the library there where the agent looks for project skills (the agent registry's
`install_dir`, e.g. `.claude/skills/<name>/SKILL.md` for Claude Code), and runs `argv` in it (each element's
`{prompt}` filled in; the prompt stays one argv element, and a prompt starting with `-` is refused so it can never
read as an option), in its own process group (`process.run`), with exactly `env` — the caller builds it hermetic
(its own HOME, the agent's base URL and key), so the user's HOME and agent config are never read or written. A
run that fails or times out raises `RouteError`: the case is unknown, never "did not fire".

Each run's folder is `<workdir or tmp>/skillgit-activation-<pid>-<random>` (`tmpdirs.recorded_folder`): the
workspace is its `workspace/`, and beside it the agent's scope is recorded (`process.run(record=…)`); the folder is
removed when the run ends. When skillgit was killed (kill -9) mid-run, the agent and what it started (a daemon
that left its process group) are killed, and the folder removed, by the next `AgentRunner` built by this user (it
sweeps `workdir` and the temp folder) or the next `CommandStudent` (`tmpdirs.sweep_recorded`: the same records).

Confinement (`confine`: auto | landlock | off, `skillgit.sandbox`; `resolve` decides when the runner is built):
the agent may write only its workspace, its TMPDIR (`tmp/` beside it, set in its environment), the `HOME` of
`env` unless that is the user's own home (`Path.home()` of this process, or its `HOME`), and the `writable`
folders the caller names; everything else, the user's repository and home included, is read-only to it. An agent
whose own sandbox cannot start inside Landlock (codex) is left to that sandbox (`sandbox.leave_to`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Mapping, Sequence

from skillgit import process, sandbox, tmpdirs
from skillgit.errors import SkillgitError
from skillgit.library.activation import RouteError
from skillgit.library.model import NAME_RE, Library


@dataclass(frozen=True)
class AgentRunner:
    argv: Sequence[str]
    env: Mapping[str, str]
    agent: str = "claude"
    timeout_s: float = 300.0
    workdir: Path | None = None  # where run folders are made (default: the system's temp folder)
    runs: list[Path] = field(default_factory=list, compare=False)  # run folders made (removed after each run)
    confine: str = "auto"
    writable: Sequence[Path] = ()  # folders the agent may write besides its workspace, TMPDIR and given HOME
    confinement: sandbox.Confinement = field(init=False, compare=False, repr=False)  # (from `confine`)

    def __post_init__(self) -> None:
        from skillgit.agents import registry

        try:
            confinement = sandbox.resolve(self.confine, "AgentRunner.confine")
            own = registry.get(self.agent).profile.own_sandbox  # (codex: its own sandbox cannot start inside ours)
        except SkillgitError as exc:
            raise RouteError(exc.message, exc.hint) from None
        object.__setattr__(self, "confinement", sandbox.leave_to(confinement, own))
        tmpdirs.sweep_recorded()  # what the agent runs of a killed skillgit left running (module contract)
        if self.workdir is not None:
            tmpdirs.sweep_recorded(self.workdir)

    def install(self, library: Library, workspace: Path) -> None:
        from skillgit.agents import registry

        preset = registry.get(self.agent).student
        if preset is None or not preset.install_dir:
            raise RouteError(f"agent {self.agent!r} has no project skills folder", "use claude, codex, …")
        for skill in library.skills:
            if not NAME_RE.match(skill.name):  # (Library.of checked it; a name never chooses a path outside)
                raise RouteError(f"invalid skill name {skill.name!r}", "")
            rel = PurePosixPath(preset.install_dir.format(name=skill.name)) / "SKILL.md"
            target = workspace.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(skill.text, encoding="utf-8")

    def __call__(self, prompt: str, library: Library, sample: int = 0) -> str:
        if not prompt.strip() or prompt.lstrip().startswith("-"):
            raise RouteError(f"trigger prompt {prompt[:40]!r} is empty or starts with '-'",
                             "reword the case's prompt")
        root = tmpdirs.recorded_folder(tmpdirs.ACTIVATION_PREFIX, self.workdir)
        self.runs.append(root)
        try:
            workspace = root / "workspace"
            workspace.mkdir()
            self.install(library, workspace)
            argv = [a.replace("{prompt}", prompt) if "{prompt}" in a else a for a in self.argv]
            env = sandbox.tmp_env(self.env, root / "tmp")
            home = self.env.get("HOME", "")
            own = {os.path.realpath(p) for p in (str(Path.home()), os.environ.get("HOME", "")) if p}
            given = [home] if home and os.path.realpath(home) not in own else []
            grants = sandbox.rollout_grants([workspace, root / "tmp", *given, *self.writable])
            done = process.run(self.confinement.wrap(argv, grants, env), cwd=workspace, env=env,
                               timeout_s=self.timeout_s, record=root)  # a kill -9 of skillgit: the next one kills
        except OSError as exc:
            raise RouteError(f"could not start {self.argv[0] if self.argv else 'the agent'}: {exc}",
                             "install the agent CLI or fix its path") from None
        finally:
            shutil.rmtree(root, ignore_errors=True)
        if done.timed_out or done.returncode != 0:
            why = "timed out" if done.timed_out else f"exited {done.returncode}"
            raise RouteError(f"the agent {why}: {process.tail(done.stderr or done.stdout, 300)}",
                             "the case is left out as unknown")
        return done.stdout
