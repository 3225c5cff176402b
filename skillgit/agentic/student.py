"""`AgentStudent`: a coding agent run on an agentic task in a throwaway workspace, then verified.

One `run(skill, item, sample)`:
1. a workspace for the task (`workspace.Workspaces.open`), the skill installed where the preset's agent loads it;
2. the task's `setup` commands (a failure makes the rollout unknown);
3. the agent, in its own process group with `command.timeout_s`, its event stream parsed (`trace.parse`);
4. the workspace diff (the installed skill excluded);
5. the verifier (`verify.verify`) on the workspace as the agent left it.
The reply's text is the agent's final message, its `score` the verifier's verdict (the scorer is not asked), its
trace the tool calls, the diff and the verifier's output tail, its `timings` setup / agent / verify seconds. A
setup failure, an agent crash, a verifier crash or timeout raise `LLMError` (kind `unknown` or `agent`): the
rollout is unknown, never a failed task.

Presets (`model.student.command.preset`; the argv of each is in README "Train a skill for Claude Code / Codex /
Copilot", checked against the real CLIs' `--help` in docs/AGENT_CLIS.md):
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from skillgit import process
from skillgit.agentic import trace, verify
from skillgit.agentic.spec import AgenticSpec
from skillgit.agentic.workspace import Workspaces, install, skill_name
from skillgit.config import BackendCfg, CommandCfg, Config
from skillgit.llm.base import LLMError, Reply
from skillgit.llm.command import TRANSIENT, agent_env
from skillgit.llm.registry import Backend
from skillgit.redact import SecretSet, redact, secret_values
from skillgit.store.git import GitRepo
from skillgit.types import Item, Score

DIFF_CHARS = 6000

@dataclass(frozen=True)
class AgentPreset:
    argv: tuple[str, ...]
    install_dir: str
    output: str  # a trace format
    keep_env: tuple[str, ...] = ()


PRESETS: dict[str, AgentPreset] = {
    # prompt right after -p: --allowedTools takes several values and would swallow a prompt placed after it
    "claude": AgentPreset(("claude", "-p", "{prompt}", "--output-format", "stream-json", "--verbose",
                           "--permission-mode", "{permission_mode}", "{model_args}", "{max_turns_args}",
                           "--allowedTools", "{allowed_tools}"),
                          ".claude/skills/{name}", "claude-stream",
                          ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL",
                           "ANTHROPIC_MODEL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER")),
    "codex": AgentPreset(("codex", "exec", "--json", "-s", "{sandbox}", "{model_args}", "--skip-git-repo-check",
                          "--", "{prompt}"),
                         ".agents/skills/{name}", "codex-json", ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL",
                                                                 "CODEX_HOME")),
    "copilot": AgentPreset(("copilot", "-p", "{prompt}", "--output-format", "json", "--no-auto-update",
                            "--allow-tool=shell", "--allow-tool=write", "{model_args}"),
                           ".github/skills/{name}", "copilot-json",
                           ("GH_TOKEN", "GITHUB_TOKEN", "COPILOT_GITHUB_TOKEN", "COPILOT_PROVIDER_BASE_URL",
                            "COPILOT_PROVIDER_TYPE", "COPILOT_PROVIDER_API_KEY", "COPILOT_MODEL", "COPILOT_OFFLINE")),
    "opencode": AgentPreset(("opencode", "run", "--format", "json", "{model_args}", "{prompt}"),
                            ".opencode/skills/{name}", "opencode-json",
                            ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENCODE_CONFIG_CONTENT")),
    # the offline simulated coding agent (skillgit/world/agent.py): reads the skill, edits files, never the verifier
    "simulated": AgentPreset((sys.executable, "-m", "skillgit.world.agent", "--output-format", "stream-json",
                              "--prompt-file", "{prompt_file}", "--seed", "{seed}", "--sample", "{sample}"),
                             ".claude/skills/{name}", "claude-stream"),
    "generic": AgentPreset((), ".skill/{name}", "text"),
}
_MODEL_ARGS = {"claude": ("--model", "{model}"), "codex": ("-m", "{model}"), "copilot": ("--model", "{model}"),
               "opencode": ("-m", "{model}")}
_PLACEHOLDER = re.compile(r"\{(prompt|prompt_file|workspace|model|name|seed|sample|permission_mode|sandbox)\}")


class AgentStudent:
    """See the module docstring. Thread-safe: each run has its own workspace and process."""

    def __init__(self, cfg: CommandCfg, *, project_root: Path, model: str | None, env: Mapping[str, str],
                 secrets: SecretSet | None = None, withhold: tuple[str, ...] = (), keep_workspaces: bool = False,
                 seed: int = 0, cache_identity: str | None = None):
        if cfg.preset not in PRESETS:
            raise LLMError(f"unknown agent preset '{cfg.preset}'", f"use one of {', '.join(PRESETS)}", kind="config")
        self.cfg = cfg
        self.preset = PRESETS[cfg.preset]
        self.root = project_root
        self.model = model
        self.seed = seed
        secrets = secrets or SecretSet()
        self.env = agent_env(env, (*self.preset.keep_env, *cfg.env_passthrough), (*secrets.names, *withhold))
        # every value the agent could echo: conventional and registered secrets of `env`, and `secrets`
        self._secrets = tuple(sorted(set(secret_values(env)) | secrets.values, key=len, reverse=True))
        self.workspaces = Workspaces(GitRepo.open(project_root), keep=keep_workspaces)
        self.workspaces.sweep()  # leftovers of a killed run
        self._identity = cache_identity

    @property
    def id(self) -> str:
        return f"agent:{self.cfg.preset}:{self.model or 'default'}"

    @property
    def cache_identity(self) -> str:
        return self._identity or self.id

    def argv(self, values: Mapping[str, str]) -> list[str]:
        template = list(self.cfg.argv) or list(self.preset.argv)
        if not template:
            raise LLMError("the generic agent preset needs model.student.command.argv",
                           'e.g. argv: ["my-agent", "--prompt-file", "{prompt_file}"]', kind="config")
        out: list[str] = []
        for part in template:
            if part == "{model_args}":
                out += [a.replace("{model}", self.model) for a in _MODEL_ARGS.get(self.cfg.preset, ())] \
                    if self.model else []
            elif part == "{max_turns_args}":
                out += ["--max-turns", str(self.cfg.max_turns)] if self.cfg.max_turns else []
            elif part == "{allowed_tools}":
                out.append(",".join(self.cfg.allowed_tools))
            else:
                out.append(_PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), "")), part))
        return out

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        try:
            spec = AgenticSpec.from_item(item, self.root)
        except Exception as exc:
            raise LLMError(f"task '{item.id}' is not an agentic task: {exc}",
                           "give it `workspace` and `verify` (README: Train a skill for Claude Code)",
                           kind="config") from None
        timings: dict[str, float] = {}
        with self.workspaces.open(spec) as ws:
            install_dir = self.cfg.install_path or self.preset.install_dir
            installed = install(ws, skill, install_dir)
            rel_install = installed.relative_to(ws.resolve()).as_posix()
            env = {**self.env, "SKILLGIT_SAMPLE": str(sample)}
            timings["setup"] = self._setup(spec, ws, env)
            agent_trace, seconds = self._agent(spec, skill, ws, env, sample)
            timings["agent"] = seconds
            diff = GitRepo.open(ws).workspace_diff(exclude=[rel_install.split("/")[0]])
            started = time.monotonic()
            try:
                score = verify.verify(spec.verify, ws, env)
            except verify.Unknown as exc:
                raise LLMError(f"task '{item.id}': {exc}", "the rollout is unknown (not a failure); fix the verifier "
                               "or raise verify.timeout_s", kind="unknown") from None
            timings["verify"] = round(time.monotonic() - started, 3)
            return self._reply(agent_trace, diff, score, timings, ws)

    def _setup(self, spec: AgenticSpec, ws: Path, env: Mapping[str, str]) -> float:
        total = 0.0
        for command in spec.setup:
            try:
                done = process.run(verify.python_command(command), cwd=ws, env=env, timeout_s=spec.setup_timeout_s,
                                   shell=True)
            except OSError as exc:
                raise LLMError(f"task '{spec.item_id}': setup could not start: {exc}", "fix the task's setup",
                               kind="unknown") from None
            total += done.seconds
            if done.timed_out or done.returncode != 0:
                why = "timed out" if done.timed_out else f"exited {done.returncode}"
                raise LLMError(f"task '{spec.item_id}': setup `{command}` {why}: {process.tail(done.stderr, 300)}",
                               "the rollout is unknown (not a failure); fix the task's setup", kind="unknown")
        return round(total, 3)

    def _agent(self, spec: AgenticSpec, skill: str, ws: Path, env: Mapping[str, str], sample: int
               ) -> tuple[trace.AgentTrace, float]:
        prompt_file = ws.parent / "prompt.txt"
        prompt_file.write_text(spec.prompt, encoding="utf-8")
        values = {"prompt": spec.prompt, "prompt_file": str(prompt_file), "workspace": str(ws),
                  "model": self.model or "", "name": skill_name(skill), "seed": str(self.seed),
                  "sample": str(sample), "permission_mode": self.cfg.permission_mode, "sandbox": self.cfg.sandbox}
        argv = self.argv(values)
        try:
            done = process.run(argv, cwd=ws, env=env, timeout_s=self.cfg.timeout_s)
        except OSError:
            raise LLMError(f"{self.id}: cannot run '{argv[0]}'",
                           "install it (see README: Train a skill for Claude Code / Codex / Copilot) or set "
                           "model.student.command.argv", kind="config") from None
        if done.timed_out:
            raise LLMError(f"{self.id}: no answer within {self.cfg.timeout_s:g}s; killed the agent and its children",
                           "raise model.student.command.timeout_s if the agent needs longer", kind="timeout")
        # paths made relative before anything is cut to size: the same work must read the same in every workspace
        result = trace.parse(_relative(done.stdout, ws), self.cfg.output or self.preset.output)
        if done.returncode != 0 and not result.final:
            tail = redact(process.tail(done.stderr or done.stdout, 400), self._secrets)
            raise LLMError(f"{self.id}: agent exited with status {done.returncode}: {tail}",
                           f"run `{argv[0]}` by hand in a copy of the workspace to see why", kind="agent",
                           retryable=bool(TRANSIENT.search(done.stderr[-3000:] + done.stdout[-2000:])))
        return result, round(done.seconds, 3)

    def _reply(self, agent: trace.AgentTrace, diff: str, score: Score, timings: dict[str, float], ws: Path
               ) -> Reply:
        cut = len(diff) - DIFF_CHARS
        shown_diff = diff if cut <= 0 else diff[:DIFF_CHARS] + f"\n[… {cut} chars]"
        parts = [agent.render(), "workspace diff:", shown_diff.rstrip() or "(no change)"]
        if agent.error:
            parts.insert(0, f"the agent reported: {agent.error}")

        def clean(text: str) -> str:
            return redact(_relative(text, ws), self._secrets)

        return Reply(clean(redact(agent.final, self._secrets, shapes=False)), agent.usage,
                     self.model or self.cfg.preset, sum(timings.values()), trace=clean("\n".join(parts)),
                     score=Score(score.hard, score.soft, clean(score.feedback)), timings=timings)

    def check(self) -> None:
        """A missing agent program fails the build (with what to install), not every rollout."""
        argv = list(self.cfg.argv) or list(self.preset.argv)
        if argv and not os.path.isabs(argv[0]) and not _which(argv[0], self.env):
            raise LLMError(f"agent program '{argv[0]}' not found", _INSTALL.get(self.cfg.preset, "install it or set "
                           "model.student.command.argv"), kind="config")


_INSTALL = {"claude": "npm install -g @anthropic-ai/claude-code", "codex": "npm install -g @openai/codex",
            "copilot": "npm install -g @github/copilot", "opencode": "npm install -g opencode-ai"}


def _relative(text: str, ws: Path) -> str:
    """`text` with the workspace's absolute path written `./`: the path is random per rollout, and the teacher must
    read the same work the same way in every workspace (a deterministic run; prompts the call journal
    recognises)."""
    for root in sorted({str(ws.resolve()), str(ws)}, key=len, reverse=True):
        text = text.replace(root + "/", "./").replace(root, ".")
    return text


def _which(name: str, env: Mapping[str, str]) -> bool:
    return shutil.which(name, path=env.get("PATH")) is not None


def _build(role: str, model: str, bcfg: BackendCfg, cfg: Config, env: Mapping[str, str], *, secrets: SecretSet,
           dotenv_keys: frozenset[str]) -> AgentStudent:
    root = Path(env.get("SKILLGIT_PROJECT_ROOT") or os.getcwd())
    agent = AgentStudent(bcfg.command, project_root=root,
                         model=None if model.strip() in ("", "default", "sim-student") else model, env=env,
                         secrets=secrets, withhold=tuple(dotenv_keys), keep_workspaces=cfg.env.keep_workspaces,
                         seed=cfg.train.seed, cache_identity=bcfg.cache_identity)
    agent.check()
    return agent


def _describe(role: str, model: str, bcfg: BackendCfg, env: Mapping[str, str]) -> str:
    return " ".join(bcfg.command.argv) if bcfg.command.argv else f"agent preset {bcfg.command.preset}"


BACKEND = Backend("agent", frozenset({"student"}), _build, _describe,
                  "a coding agent (claude, codex, copilot, opencode, the simulated agent) run per task in a throwaway "
                  "workspace and verified", agent=True)
