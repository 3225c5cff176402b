"""`AgentTeacher`: a coding agent (claude, codex, copilot, opencode, the simulated agent) as the teacher.

It is an `LLM`, so it is built, retried, journaled and metered like every teacher (`llm/factory.py`,
`session.Session.teacher`):
- A request of stage `agent` (`evidence.Evidence.request`) is one teaching step: a throwaway folder in the system
  temp area (`skillgit-teach-<pid>-…`, removed afterwards unless `env.keep_workspaces`; never the user's worktree)
  gets the package at the step's base in `work/skill/` and the evidence in `work/evidence/`; the agent runs there
  (in its own process group, `command.timeout_s`) with the preset's argv (`Agent.teacher_argv`, else its student
  argv) and a hermetic home (`agents.profile`, as for students: credentials only), and `skillgit-try` first on its
  PATH when the loop serves tries (`trying`). The reply's text is JSON: `skill` (the package as the agent left it:
  its UTF-8 text files; binary files it wrote are left out and named in `ignored`), `final` (its last message),
  `turns`, `error` (why it stopped early, or null), `tries` (the items it tried, with their exit codes); the
  reply's trace is its transcript (tool calls and results), redacted; its usage is what the CLI reported.
- Any other stage (rank, lr, the epoch's meta skill, slow update and meta reflect) is a chat question: under the
  simulated preset the simulated world's chat teacher answers it (the whole teacher is the simulation, and the
  config says so); under a real preset the agent is run once in an empty folder with the rendered prompt, and its
  final message is the answer.
- Errors: a missing program or a bad preset is `LLMError(kind="config")` (the run stops); a timeout or an agent
  stopped by its API or account is retryable; an agent that exits non-zero still returns the package as it left it
  (the gate judges it), with `error` set.
- Caps (`capped(Caps(turns, seconds))`, a context variable the loop sets around one step call, never part of its
  journal key): what is left of `budget.max_agent_turns` / `max_agent_seconds`. The turns cap the agent's own
  `--max-turns` (`{max_turns_args}`: presets that take it), below `command.max_turns`; the seconds cap its wall
  time below `command.timeout_s`, and an agent stopped there raises `BudgetReached` (the run stops resumably, the
  cap never crossed), not a retryable timeout.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from skillgit import package, process
from skillgit.agentic import trace as trace_mod
from skillgit.agents import launch, registry
from skillgit.agents.profile import Plan, Settings, plan
from skillgit.agents.trace import cut
from skillgit.config import CommandCfg, SimulatedCfg
from skillgit.errors import BudgetReached, SkillgitError
from skillgit.llm.base import LLM, LLMError, Reply, Request
from skillgit.llm.command import AUTH, TRANSIENT, agent_env
from skillgit.redact import SecretSet, redact, secret_values
from skillgit.teacher import trying
from skillgit.teacher.evidence import SKILL_DIR, STAGE, Evidence

PREFIX = "skillgit-teach-"
TRANSCRIPT_CHARS = 12_000


@dataclass(frozen=True)
class Caps:
    turns: int | None = None  # the most turns the next call may take (None: no cap but command.max_turns)
    seconds: float | None = None  # the most wall seconds (None: command.timeout_s)


_CAPS: contextvars.ContextVar[Caps | None] = contextvars.ContextVar("skillgit_agent_caps", default=None)


@contextmanager
def capped(caps: Caps) -> Iterator[None]:
    """Hold the agent teacher's calls in this context under `caps` (see the module docstring)."""
    token = _CAPS.set(caps)
    try:
        yield
    finally:
        _CAPS.reset(token)


class AgentTeacher:
    """See the module docstring. Thread-safe: every call has its own folder and process."""

    def __init__(self, cfg: CommandCfg, *, model: str | None, env: Mapping[str, str], secrets: SecretSet | None = None,
                 withhold: tuple[str, ...] = (), keep: bool = False, seed: int = 0, base_url: str | None = None,
                 api_key_env: str | None = None, simulated: SimulatedCfg | None = None,
                 cache_identity: str | None = None):
        try:
            self.agent, self.preset = registry.student(cfg.preset)
        except SkillgitError as exc:
            raise LLMError(exc.message.replace("model.student", "model.teacher"), exc.hint, kind="config") from None
        self.cfg = cfg
        self.model = model
        self.seed = seed
        self.keep = keep
        self.base_url = base_url or None
        secrets = secrets or SecretSet()
        own_key = (api_key_env or "",) if self.base_url else ()
        self.env = agent_env(env, (*self.preset.keep_env, *cfg.env_passthrough, *own_key),
                             (*secrets.names, *withhold))
        self.plan: Plan = plan(self.agent.profile, Settings(cfg.profile, self.base_url, api_key_env, model, self.env))
        self._secrets = tuple(sorted(set(secret_values(env)) | secrets.values, key=len, reverse=True))
        self._identity = cache_identity
        self.chat: LLM | None = None
        if cfg.preset == "simulated":
            from skillgit.world import SimulatedTeacher

            self.chat = SimulatedTeacher(simulated or SimulatedCfg(), model="sim-agent-teacher")

    @property
    def id(self) -> str:
        return f"agent-teacher:{self.cfg.preset}:{self.model or 'default'}"

    @property
    def cache_identity(self) -> str:
        """The journal's identity: the preset, the model and a digest of every setting that decides a step."""
        if self._identity:
            return self._identity
        settings = json.dumps({"argv": self.template(), "output": self.output, "profile": self.cfg.profile,
                               "permission_mode": self.cfg.permission_mode,
                               "allowed_tools": list(self.cfg.allowed_tools), "max_turns": self.cfg.max_turns,
                               "sandbox": self.cfg.sandbox, "base_url": self.base_url or "", "seed": self.seed},
                              sort_keys=True)
        return f"{self.id}:{hashlib.sha256(settings.encode()).hexdigest()[:12]}"

    @property
    def output(self) -> str:
        return self.cfg.output or self.agent.trace_format

    def template(self) -> list[str]:
        return list(self.cfg.argv) or list(self.agent.teacher_argv) or list(self.preset.argv)

    def check(self) -> None:
        """A missing agent program fails the build (with what to install), not every step."""
        argv = self.template()
        if not argv:
            raise LLMError("the generic agent preset needs model.teacher.command.argv",
                           'e.g. argv: ["my-agent", "--prompt-file", "{prompt_file}"]', kind="config")
        if not os.path.isabs(argv[0]) and shutil.which(argv[0], path=self.env.get("PATH")) is None:
            raise LLMError(f"agent teacher program '{argv[0]}' not found",
                           self.agent.install_hint or "install it or set model.teacher.command.argv", kind="config")

    # ------------------------------------------------------------------------------------------ calls
    def complete(self, request: Request) -> Reply:
        if request.stage == STAGE:
            return self._step(Evidence.from_request(request))
        if self.chat is not None:
            return self.chat.complete(request)
        return self._ask(request)

    def _step(self, evidence: Evidence) -> Reply:
        started = time.monotonic()
        folder = self._folder()
        work = folder / "work"
        try:
            for rel, text in evidence.files().items():
                path = work / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            bundled = package.is_bundle(evidence.skill)
            main = package.parse(evidence.skill).main
            ignored: list[str] = []

            def read_skill() -> str:
                files, skipped = _read_package(work / SKILL_DIR)
                ignored[:] = skipped
                if bundled:
                    return package.bundle(files, main)
                ignored.extend(p for p in files if p != main)  # a single-file skill has no other files
                return files.get(main, "")

            env = self.plan.apply(self.env, folder / "home")
            bin_dir = trying.install_client(folder / "bin")
            env.update({"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "PWD": str(work)})
            env.pop("OLDPWD", None)
            trier = trying.current()
            tries: list[dict[str, object]] = []
            if trier is not None:
                with trying.TryServer(trier, read_skill) as server:
                    env.update(server.env())
                    agent_trace, seconds, stopped = self._run(evidence.task(), work, folder, env)
                    tries = list(server.log)
            else:
                agent_trace, seconds, stopped = self._run(evidence.task(), work, folder, env)
            after = read_skill()
            clean = self._clean(work)
            body = {"skill": after, "final": clean(agent_trace.final), "turns": agent_trace.turns,
                    "error": clean(stopped) or None, "tries": tries, "ignored": ignored,
                    "seconds": round(seconds, 3)}
            transcript = clean(cut(agent_trace.render(), TRANSCRIPT_CHARS))
            return Reply(json.dumps(body, ensure_ascii=False), agent_trace.usage, self.model or self.cfg.preset,
                         round(time.monotonic() - started, 3), trace=transcript)
        finally:
            if not self.keep:
                shutil.rmtree(folder, ignore_errors=True)

    def _ask(self, request: Request) -> Reply:
        """A chat stage answered by one run of the agent in an empty folder (see the module docstring)."""
        started = time.monotonic()
        folder = self._folder()
        work = folder / "work"
        work.mkdir(parents=True)
        prompt = "\n\n".join(m.content for m in request.messages)
        try:
            env = self.plan.apply(self.env, folder / "home")
            env.update({"PWD": str(work)})
            agent_trace, _, stopped = self._run(prompt, work, folder, env)
            if stopped and not agent_trace.final.strip():
                raise LLMError(f"{self.id}: the agent stopped without an answer: {stopped}",
                               "run the agent by hand to see why", kind="agent", retryable=True)
            return Reply(self._clean(work)(agent_trace.final), agent_trace.usage, self.model or self.cfg.preset,
                         round(time.monotonic() - started, 3))
        finally:
            if not self.keep:
                shutil.rmtree(folder, ignore_errors=True)

    def _run(self, prompt: str, work: Path, folder: Path, env: Mapping[str, str]
             ) -> tuple[trace_mod.AgentTrace, float, str]:
        """(trace, seconds, why it stopped early or ""); raises LLMError for a run that is no answer."""
        prompt_file = folder / "prompt.txt"
        prompt_file.write_text(prompt, encoding="utf-8")
        values = {"prompt": prompt, "prompt_file": str(prompt_file), "workspace": str(work), "model": self.model or "",
                  "name": "skill", "seed": str(self.seed), "sample": "0",
                  "permission_mode": self.cfg.permission_mode, "sandbox": self.cfg.sandbox}
        caps = _CAPS.get() or Caps()
        turns = min(t for t in (self.cfg.max_turns, caps.turns) if t) if self.cfg.max_turns or caps.turns else None
        timeout = min(self.cfg.timeout_s, caps.seconds) if caps.seconds is not None else self.cfg.timeout_s
        lists = {"{model_args}": self.preset.model_args if self.model else (), "{profile_args}": self.plan.args,
                 "{max_turns_args}": ("--max-turns", str(turns)) if turns else (),
                 "{allowed_tools}": (",".join(self.cfg.allowed_tools),)}
        argv = launch.expand(self.template(), values, lists)
        try:
            done = process.run(argv, cwd=work, env=env, timeout_s=timeout, record=folder)
        except OSError:
            raise LLMError(f"{self.id}: cannot run '{argv[0]}'", self.agent.install_hint or
                           "install it or set model.teacher.command.argv", kind="config") from None
        if done.timed_out and timeout < self.cfg.timeout_s:
            raise BudgetReached(f"budget.max_agent_seconds reached: the agent teacher was stopped after the "
                                f"{timeout:g} s left of it", "raise budget.max_agent_seconds and run `skillgit "
                                "train` again to resume (the step is redone; its finished calls are journaled)")
        if done.timed_out:
            raise LLMError(f"{self.id}: no answer within {self.cfg.timeout_s:g}s",
                           "raise model.teacher.command.timeout_s if the agent needs longer", kind="timeout",
                           retryable=True)
        try:
            result = trace_mod.parse(done.stdout, self.output)
        except SkillgitError as exc:
            raise LLMError(exc.message, exc.hint, kind="config") from None
        if done.returncode == 0 and not result.error:
            return result, done.seconds, ""
        tail = redact(process.tail(done.stderr or done.stdout, 400), self._secrets).strip()
        why = result.error or f"exited with status {done.returncode}" + (f": {tail}" if tail else "")
        said = "\n".join([result.error or "", done.stderr[-3000:]])
        if TRANSIENT.search(said) or AUTH.search(said):
            raise LLMError(f"{self.id}: agent {why}", f"run `{argv[0]}` by hand to see why", kind="agent",
                           retryable=not AUTH.search(said))
        return result, done.seconds, why

    def _folder(self) -> Path:
        folder = Path(tempfile.gettempdir()) / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        folder.mkdir(parents=True)
        return folder

    def _clean(self, work: Path):
        def clean(text: str | None) -> str:
            text = text or ""
            for root in sorted({str(work.resolve()), str(work)}, key=len, reverse=True):
                text = text.replace(root + "/", "./").replace(root, ".")
            return redact(text, self._secrets)
        return clean


def _read_package(folder: Path) -> tuple[dict[str, str], list[str]]:
    """The UTF-8 text files under `folder` ({relative path: text}) and the paths of the others (left out)."""
    files: dict[str, str] = {}
    skipped: list[str] = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file():
            if path.is_symlink():
                skipped.append(path.relative_to(folder).as_posix())
            continue
        rel = path.relative_to(folder).as_posix()
        try:
            text = path.read_bytes().decode("utf-8")
            files[package.check_path(rel)] = text if text.endswith("\n") or not text else text + "\n"
        except (UnicodeDecodeError, SkillgitError):
            skipped.append(rel)
    return files, skipped


def build(model: str, bcfg: Any, cfg: Any, env: Mapping[str, str], *, secrets: SecretSet,
          dotenv_keys: frozenset[str]) -> AgentTeacher:
    """The agent teacher of a config (`model.teacher.command`); the `agent` backend's teacher builder."""
    teacher = AgentTeacher(bcfg.command, model=None if model.strip() in ("", "default", "sim-teacher") else model,
                           env=env, secrets=secrets, withhold=tuple(dotenv_keys), keep=cfg.env.keep_workspaces,
                           seed=cfg.train.seed, base_url=bcfg.base_url, api_key_env=bcfg.api_key_env,
                           simulated=cfg.model.simulated, cache_identity=bcfg.cache_identity)
    teacher.check()
    return teacher
