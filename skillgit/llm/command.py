"""CLI agents as students: run `claude -p`, `codex exec` or any command with the skill installed in a scratch
workspace, and capture the final answer.

Contracts:
- `CommandStudent(cfg, ...)` implements `Student`. Each `run` gets a fresh temporary folder: `workspace/` (the
  agent's working directory, where the skill is installed) and, beside it, `prompt.txt` and `answer.txt`. The
  folder is removed afterwards, whatever happened.
- Presets: the agents of `skillgit.agents.registry` that have a one-answer preset (`Agent.answer`; the one
  table of agent presets, shared with the `agent` backend). `claude` runs `claude [--model M] -p {prompt}
  --output-format json {profile_args}` with the skill at `.claude/skills/<name>/SKILL.md` (name from the skill's
  front matter, else "skill"; a skill without front matter is installed with a minimal one, because Claude Code
  ignores skills without `name`/`description`), and reads the JSON result (answer, usage, cost, turns) or plain
  text. `codex` runs `codex exec [-m M] {profile_args} --skip-git-repo-check --output-last-message {answer_file}
  {prompt}` with the skill as `AGENTS.md`. `generic` runs `cfg.argv`. A non-empty `cfg.argv` replaces any
  preset's command; `cfg.install_path` replaces its install path. Placeholders, filled in each argv element:
  `{prompt}`, `{prompt_file}`, `{skill_file}`, `{workspace}`, `{answer_file}`, `{model}` (and `{name}` in
  install_path); `{model_args}` and `{profile_args}` expand to zero or more elements. The prompt is one argv
  element: no shell, no quoting.
- Hermetic (`cfg.profile`, default hermetic; `skillgit.agents.profile`): the agent runs with a fresh config home
  (`home/` beside `workspace/`) holding only what authentication needs, plus its isolation switches
  (`{profile_args}`); `profile: user` keeps the user's. `fingerprint()` names agent, version, config hash, profile.
- Confinement (`cfg.confine`, default auto; `skillgit.sandbox`): the agent may write only its `workspace/`, its
  home, its TMPDIR (`tmp/` beside them), `prompt.txt` and `answer.txt` (and, under profile user, its own config
  folders: `Plan.writable`); the fingerprint's `confine` says whether it was confined.
- The answer is `answer.txt` when the agent wrote it, else the preset's parse of stdout.
- The agent runs in its own session; at `cfg.timeout_s` its whole process group is killed (TERM, then KILL), so
  children it spawned die too, and `LLMError(kind="timeout")` is raised (not retryable: a hung agent would hang
  again and cost as much). Leftover group members are killed after a normal exit as well. The folder is
  `<tmp>/skillgit-rollout-<pid>-<random>` and records the agent's scope (`process.run(record=…)`): when skillgit
  was killed (kill -9) mid-rollout, the next `CommandStudent` (or activation `AgentRunner`) built by this user
  kills what that agent left running and removes the folder (`tmpdirs.sweep_recorded`: folders whose skillgit
  process is gone).
- Environment: the parent's, minus every secret-named variable (`redact.is_secret_name`: conventional names and
  registered ones), every name in `secrets.names` (the config's `api_key_env` targets), every name in
  `withhold` (the factory passes the project `.env`'s keys: no `.env` entry reaches the agent) and every variable
  whose value looks like a credential whatever its name (`agent_env`; the fingerprint's `withheld` names them),
  except the preset's own (`ANTHROPIC_API_KEY`… for claude, `OPENAI_API_KEY`… for codex) and
  `cfg.env_passthrough`. `PWD` is the workspace (some agents follow an inherited `PWD` rather than their cwd),
  `OLDPWD` is dropped.
- Failures are `LLMError(kind="agent")`: a missing binary (not retryable; the hint names the binary and
  `model.student.command.argv`), a non-zero exit (message has the status and the stderr tail; retryable only when
  the output looks like rate limiting or a transient server/network error), an error result in Claude's JSON.
- `Reply.trace` holds a summary (turns, cost, session) and the stderr tail; traces and error messages go through
  `redact`, and the answer has every known secret value masked (including the values of `secrets`).
- Identity: `cache_identity` is `command:<preset>:<basename of argv[0]>:<model or "default">` (no folder, so a
  moved binary keeps its call journal), or the `cache_identity` given (`BackendCfg.cache_identity`).
- Registry: `BACKEND` is this module's `registry.Backend` (student only). The model names in
  `AGENT_DEFAULT_MODELS` mean "the agent's own default" (no --model flag); the binary is looked up when built.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Iterable, Mapping

from skillgit import process, sandbox, tmpdirs
from skillgit.agents import launch, registry
from skillgit.agents.profile import Settings, plan
from skillgit.config import BackendCfg, CommandCfg, Config
from skillgit.errors import ConfigError, SkillgitError
from skillgit.llm import pricing
from skillgit.llm.base import LLMError, Reply
from skillgit.llm.registry import Backend
from skillgit.redact import SecretSet, is_secret_name, is_secret_value, redact, secret_values
from skillgit.types import Item, Usage

TAIL_LINES = 40
TAIL_CHARS = 4000
KILL_GRACE_S = process.KILL_GRACE_S
# An HTTP status is read as one only where it is said to be one ("HTTP 503", "status code 502", "Error: 429", "503
# Service Unavailable"): a bare number is a line of a traceback ("line 503"), a path (/tmp/pytest-504/), a count.
_STATUS_BEFORE = r"(?:\bHTTP(?:/[\d.]+)?|\bstatus(?: code)?|\berror(?: code)?|\bcode|\bresponse)\W{0,3}"
_PHRASES = {"429": "too many requests", "529": "overloaded", "502": "bad gateway", "503": "service unavailable",
            "504": "gateway time-?out", "401": "unauthori[sz]ed", "403": "forbidden"}


def _statuses(codes: str) -> str:
    """A pattern for the HTTP statuses `codes` (space-separated), said to be statuses (see above)."""
    listed = codes.split()
    return (f"{_STATUS_BEFORE}(?:{'|'.join(listed)})\\b|"
            + "|".join(rf"\b{code}\W{{1,3}}{_PHRASES[code]}" for code in listed))


TRANSIENT = re.compile(r"rate.?limit|overloaded|temporarily unavailable|ECONNRESET|ETIMEDOUT|"
                       r"connection (?:reset|refused)|timed out|" + _statuses("429 529 502 503 504"), re.IGNORECASE)
# the API or the account refused the agent (not retried): a status said to be one, or the words agents print
AUTH = re.compile(_statuses("401 403") + r"|unauthori[sz]ed|invalid (?:api|x-api)[ -]?key|authentication|"
                  r"credit balance|not logged in|please (?:log ?in|run /login)", re.IGNORECASE)


# For a CLI agent these model names mean "the agent's own default" (no --model flag); "sim-student" is ModelCfg's
# default, left in place by a config that only switched the backend.
AGENT_DEFAULT_MODELS = ("", "default", "sim-student")

STUB_FRONT_MATTER = ("---\nname: {name}\ndescription: Instructions to follow for every task in this workspace. "
                      "Always use this skill.\n---\n\n")


def skill_name(skill: str) -> str:
    """The `name:` of the skill's YAML front matter as a folder-safe slug, or "skill"."""
    if skill.startswith("---"):
        end = skill.find("\n---", 3)
        for line in skill[3:end if end > 0 else 0].splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == "name":
                slug = re.sub(r"[^a-z0-9-]+", "-", value.strip().strip("'\"").lower()).strip("-")
                return slug[:64] or "skill"
    return "skill"


class AgentEnv(dict[str, str]):
    """An agent's environment (a plain mapping) and `withheld`: the names `agent_env` left out because their value
    looked like a credential (names only, never a value; the agent's fingerprint records them)."""

    withheld: tuple[str, ...] = ()


def agent_env(base: Mapping[str, str], keep: Iterable[str], withhold: Iterable[str] = ()) -> AgentEnv:
    """`base` without secret-named variables, the names in `withhold` and the variables whose value looks like a
    credential whatever their name (`redact.is_secret_value`: `DATABASE_URL=postgres://u:pw@h/db`, a `ghp_…`
    token, an AWS session token, a secret-named variable's value copied under another name), except those named in
    `keep` (the preset's own key, `env_passthrough`); `.withheld` names the ones dropped for their value."""
    allowed, withheld = set(keep), set(withhold)
    known = secret_values(base)
    env, by_value = AgentEnv(), []
    for name, value in base.items():
        if name in allowed:
            env[name] = value
        elif name in withheld or is_secret_name(name):
            continue
        elif is_secret_value(value, known):
            by_value.append(name)
        else:
            env[name] = value
    env.withheld = tuple(sorted(by_value))
    return env


def _tail(text: str) -> str:
    lines = text.rstrip().splitlines()[-TAIL_LINES:]
    out = "\n".join(lines)
    return out if len(out) <= TAIL_CHARS else "…" + out[-TAIL_CHARS:]


class CommandStudent:
    """A CLI agent run once per item in a scratch workspace (see the module contract). Thread-safe."""

    def __init__(self, cfg: CommandCfg, *, model: str | None = None, env: Mapping[str, str] | None = None,
                 prices: Mapping[str, Any] | None = None, kill_grace_s: float = KILL_GRACE_S,
                 secrets: SecretSet | None = None, withhold: Iterable[str] = (), cache_identity: str | None = None,
                 base_url: str | None = None, api_key_env: str | None = None):
        try:
            self.agent, self.preset = registry.answer(cfg.preset)
        except SkillgitError as exc:
            raise LLMError(exc.message, exc.hint, kind="config") from None
        self.cfg = cfg
        self.model = model or None
        base = dict(os.environ if env is None else env)
        secrets = secrets or SecretSet()
        student = self.agent.student
        own_key = (api_key_env or "",) if base_url else ()  # the key of model.student.base_url's server
        keep = (*(student.keep_env if student else ()), *cfg.env_passthrough, *own_key)
        self.env = agent_env(base, keep, (*secrets.names, *withhold))
        self.plan = plan(self.agent.profile, Settings(cfg.profile, base_url or None, api_key_env, self.model, self.env))
        try:
            self.confinement = sandbox.resolve(cfg.confine)
        except ConfigError as exc:
            raise LLMError(exc.message, exc.hint, kind="config") from None
        # the agent process itself: left to the agent's own sandbox when Landlock would stop that from starting
        self.agent_confinement = sandbox.leave_to(self.confinement, self.agent.profile.own_sandbox)
        self._model_args = student.model_args if student and self.model else ()
        # every value the agent could echo: conventional and registered secrets of `base`, and `secrets`
        self._secrets = tuple(sorted(set(secret_values(base)) | secrets.values, key=len, reverse=True))
        self._cache_identity = cache_identity
        self.prices = prices
        self.kill_grace_s = kill_grace_s  # how long a timed-out agent may take to exit on TERM before KILL
        tmpdirs.sweep_recorded()  # what the agent runs of a killed skillgit left running
        template = tuple(cfg.argv) or self.preset.argv
        if not template:
            raise LLMError("the generic command backend needs a command",
                           "set model.student.command.argv, e.g. [my-agent, --prompt-file, '{prompt_file}']",
                           kind="config")
        self.argv_template = template
        self.install_path = cfg.install_path or self.preset.install_path

    # -- identity
    @property
    def id(self) -> str:
        ident = f"command:{self.cfg.preset}:{self.model or 'default'}"
        if self.cfg.argv or self.cfg.install_path:  # a custom command is a different student for the cache
            digest = hashlib.sha256(json.dumps([self.argv_template, self.install_path]).encode()).hexdigest()
            ident += f"#{digest[:8]}"
        return ident

    @property
    def cache_identity(self) -> str:
        """What the call journal keys this agent on: preset, program name and model (see the module contract)."""
        if self._cache_identity:
            return self._cache_identity
        return f"command:{self.cfg.preset}:{os.path.basename(self.binary)}:{self.model or 'default'}"

    @property
    def binary(self) -> str:
        return self.argv_template[0]

    @property
    def endpoint(self) -> str:
        return self.resolve_binary() or self.binary

    def __repr__(self) -> str:
        return f"CommandStudent({self.id!r})"

    def fingerprint(self) -> dict[str, str]:
        """The agent's identity for drift checks: name, CLI version, effective-config hash, profile
        (`agents.launch.fingerprint`)."""
        return launch.fingerprint(self.agent, self.plan, self.binary, self.env,
                                  {"argv": list(self.argv_template), "install": self.install_path,
                                   "model": self.model or "", "env_passthrough": sorted(self.cfg.env_passthrough)},
                                  self.confinement.state)

    def resolve_binary(self) -> str | None:
        """The agent executable's full path, or None when it cannot be found."""
        if os.sep in self.binary:
            path = Path(self.binary)
            return str(path) if path.is_file() and os.access(path, os.X_OK) else None
        return shutil.which(self.binary, path=self.env.get("PATH", os.defpath))

    def check(self) -> None:
        """Raise the missing-binary LLMError now rather than at the first rollout."""
        if self.resolve_binary() is None:
            raise self._missing()

    def _missing(self) -> LLMError:
        return LLMError(f"{self.id}: agent command '{self.binary}' not found",
                        f"install `{self.binary}` or put it on PATH, or set model.student.command.argv to the "
                        f"agent's command line", kind="agent", retryable=False)

    # -- one rollout
    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        executable = self.resolve_binary()
        if executable is None:
            raise self._missing()
        root = tmpdirs.recorded_folder(tmpdirs.ROLLOUT_PREFIX)
        try:
            return self._run_in(root, executable, skill, item, sample)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def _install(self, workspace: Path, skill: str) -> Path:
        name = skill_name(skill)
        target = (workspace / self.install_path.replace("{name}", name)).resolve()
        if not target.is_relative_to(workspace.resolve()):
            raise LLMError(f"{self.id}: install_path '{self.install_path}' points outside the scratch workspace",
                           "set model.student.command.install_path to a relative path such as AGENTS.md",
                           kind="config")
        target.parent.mkdir(parents=True, exist_ok=True)
        text = skill
        # Claude Code loads a SKILL.md only with name/description front matter (other install paths, e.g.
        # CLAUDE.md, are read as they are)
        if self.agent.name == "claude" and target.name == "SKILL.md" and not skill.startswith("---"):
            text = STUB_FRONT_MATTER.format(name=name) + skill
        target.write_text(text, encoding="utf-8")
        return target

    def _run_in(self, root: Path, executable: str, skill: str, item: Item, sample: int) -> Reply:
        workspace = root / "workspace"
        workspace.mkdir()
        skill_file = self._install(workspace, skill)
        prompt_file, answer_file = root / "prompt.txt", root / "answer.txt"
        prompt_file.write_text(item.input, encoding="utf-8")
        answer_file.touch()  # (empty: no answer) a confined agent may write these two files beside its workspace
        values = {"prompt": item.input, "prompt_file": str(prompt_file), "skill_file": str(skill_file),
                  "workspace": str(workspace), "answer_file": str(answer_file), "model": self.model or "",
                  "name": skill_name(skill)}
        argv = [executable] + launch.expand(self.argv_template[1:], values, {"{model_args}": self._model_args,
                                                                             "{profile_args}": self.plan.args})
        # PWD: agents (OpenCode) and shells follow an inherited PWD rather than their real cwd
        env = sandbox.tmp_env(self.plan.apply({**{k: v for k, v in self.env.items() if k != "OLDPWD"},
                                               "SKILLGIT_SAMPLE": str(sample), "PWD": str(workspace)}, root / "home"),
                              root / "tmp")
        dirs, files = self.plan.writable(root / "home")
        grants = sandbox.rollout_grants([workspace, root / "tmp", *dirs], [prompt_file, answer_file, *files])
        try:
            done = process.run(self.agent_confinement.wrap(argv, grants, env), cwd=workspace, env=env,
                               timeout_s=self.cfg.timeout_s, kill_grace_s=self.kill_grace_s,
                               record=root)  # nothing it started outlives it
        except FileNotFoundError:
            raise self._missing() from None
        except OSError as exc:
            raise LLMError(f"{self.id}: cannot start '{self.binary}': {exc.strerror}",
                           f"check that {executable} is an executable program", kind="agent") from None
        stdout, stderr = done.stdout, done.stderr
        tail = redact(_tail(stderr), self._secrets)
        if done.timed_out:
            raise LLMError(f"{self.id}: no answer within {self.cfg.timeout_s:g}s; {done.cleanup.describe('the agent')}",
                           "raise model.student.command.timeout_s if the agent needs longer", kind="timeout",
                           retryable=False)
        if done.returncode != 0:
            how = (f"was killed by signal {-done.returncode}" if done.returncode < 0
                   else f"exited with status {done.returncode}")
            last = tail.splitlines()[-1] if tail else redact(_tail(stdout), self._secrets)[-300:] or "(no output)"
            raise LLMError(f"{self.id}: agent {how}: {last}",
                           f"run `{self.binary}` by hand to see why; stderr tail:\n{tail}" if tail else
                           f"run `{self.binary}` by hand to see why",
                           kind="agent", retryable=bool(TRANSIENT.search(stderr[-TAIL_CHARS:] + stdout[-2000:])))
        answer_written = answer_file.is_file() and answer_file.stat().st_size > 0
        summary: list[str]
        if answer_written:
            text, usage, summary = answer_file.read_text(encoding="utf-8", errors="replace").strip(), Usage(1), []
        else:
            text, usage, summary = self._parse(stdout)
        trace_parts = [*summary]
        if answer_written and stdout.strip():
            trace_parts.append("stdout (tail):\n" + _tail(stdout))
        if tail:
            trace_parts.append("stderr (tail):\n" + tail)
        return Reply(redact(text, self._secrets, shapes=False), usage, self.model or self.cfg.preset, done.seconds,
                     trace=redact("\n".join(trace_parts), self._secrets))

    def _parse(self, stdout: str) -> tuple[str, Usage, list[str]]:
        """(answer, usage, summary lines) from the agent's stdout."""
        if self.preset.output == "claude_json":
            result = self._claude_result(stdout)
            if result is not None:
                return result
        return stdout.strip(), Usage(1), []

    def _claude_result(self, stdout: str) -> tuple[str, Usage, list[str]] | None:
        data = _claude_result_event(stdout)
        if data is None:
            return None
        if data.get("is_error") or str(data.get("subtype", "success")).startswith("error"):
            detail = redact(str(data.get("result") or data.get("subtype") or "error"), self._secrets)[:500]
            raise LLMError(f"{self.id}: the agent reported an error: {detail}",
                           f"run `{self.binary} -p` by hand to see why", kind="agent",
                           retryable=bool(TRANSIENT.search(detail)))
        u: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
        cache_read = int(u.get("cache_read_input_tokens") or 0)
        prompt = int(u.get("input_tokens") or 0) + cache_read + int(u.get("cache_creation_input_tokens") or 0)
        completion = int(u.get("output_tokens") or 0)
        reported = data.get("total_cost_usd", data.get("cost_usd"))
        usage = Usage(1, prompt, completion, cache_read, 0)
        if isinstance(reported, (int, float)):
            cost = round(float(reported), 8)
        else:
            cost = pricing.cost(self.model, usage, self.prices) if self.model else 0.0
        fields = ("num_turns", "duration_ms", "total_cost_usd", "session_id")
        summary = ", ".join(f"{k}={data[k]}" for k in fields if k in data)
        return str(data.get("result") or ""), Usage(1, prompt, completion, cache_read, 0, cost), \
            [summary] if summary else []


def _claude_result_event(stdout: str) -> dict | None:
    """The `result` event of `claude -p --output-format json` (with --verbose: the last of its messages); None for
    `--output-format text` or an older CLI (the plain stdout is the answer then)."""
    try:
        data = json.loads(stdout)
    except ValueError:
        return None
    if isinstance(data, list):  # --verbose prints every message; the result is the last "result" entry
        data = next((d for d in reversed(data) if isinstance(d, dict) and d.get("type") == "result"), None)
    if not isinstance(data, dict) or "result" not in data and data.get("type") != "result":
        return None
    return data


# ---------------------------------------------------------------------------------------------- registry
def _build(role: str, model: str, bcfg: BackendCfg, cfg: Config, env: Mapping[str, str], *, secrets: SecretSet,
           dotenv_keys: frozenset[str]) -> CommandStudent:
    """The CLI agent student; a missing agent binary fails the build, not every rollout."""
    agent = CommandStudent(bcfg.command, model=None if model.strip() in AGENT_DEFAULT_MODELS else model, env=env,
                           prices=cfg.prices, secrets=secrets, withhold=dotenv_keys,
                           cache_identity=bcfg.cache_identity, base_url=bcfg.base_url, api_key_env=bcfg.api_key_env)
    agent.check()
    return agent


def _describe(role: str, model: str, bcfg: BackendCfg, env: Mapping[str, str]) -> str:
    c = bcfg.command
    return " ".join(c.argv) if c.argv else c.preset


BACKEND = Backend("command", frozenset({"student"}), _build, _describe,
                  "a CLI agent (claude -p, codex exec, or any command) run once per task in a scratch workspace",
                  agent=True)
