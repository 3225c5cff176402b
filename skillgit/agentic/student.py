"""`AgentStudent`: a coding agent run on an agentic task in a throwaway workspace, then verified.

One `run(skill, item, sample)`:
1. a workspace for the task (`workspace.Workspaces.open`), the skill installed where the preset's agent loads it;
2. the task's `setup` commands (a failure makes the rollout unknown), then the verifier's files kept aside
   (`guard.capture`);
3. the agent, in its own process group with `command.timeout_s`, its event stream parsed (`trace.parse`);
4. the verifier's files put back as they were when the agent started (`guard`: an agent that edited a test, added
   a `conftest.py` or rewrote the verify script gains nothing; the feedback and the trace name the files it
   changed, and a verifier that cannot be put back scores 0 unverified);
5. the workspace diff (the installed skill excluded; the verifier's files, being back, show no change);
6. the verifier (`verify.verify`) on the workspace as the agent left it, but for the verifier's files.
The reply's text is the agent's final message, its `score` the verifier's verdict (the scorer is not asked), its
trace the tool calls, the diff and the verifier's output tail, its `timings` setup / agent / verify seconds.

What is a verdict and what is unknown:
- An agent that gives up (a non-zero exit, Claude Code's `error_max_turns`, any error result) is still verified:
  the workspace as it left it is the skill's real outcome, and the agent's error leads the feedback and the trace.
- Unknown (`LLMError`, the rollout is excluded, never a failed task): a setup failure (not retried: the same task's
  later runs in this process fail at once with the same error), a verifier crash or timeout, an agent timeout, and
  an agent stopped by its API, credentials or transport (`TRANSIENT`/`AUTH` in its output; transient ones are
  retryable).

The call journal key (`cache_material`, added to the student key by `CachedStudent`) covers everything besides
skill, item and sample that decides a rollout: the task's workspace / setup / verify spec, the resolved workspace
content (a fixture folder's content hash; for a `repo` workspace the tree at the resolved commit without the
committed skill) and the agent settings (argv, output, install path, permission mode, allowed tools, max turns,
sandbox, model, passed-through variable names, seed when the argv uses it, and the write confinement in force:
a task that writes outside its folder scores differently confined) and the CLI's version (the one `fingerprint()`
names: an updated CLI is a new student, never answered with the old one's rollouts). The same task with the same
settings and CLI has the same key, so a resumed run replays its finished rollouts.

Every command runs with `PWD` set to the workspace (agents such as OpenCode follow an inherited `PWD`), through
`workspace.tracked` (its process group id is recorded for `Workspaces.sweep`).

Hermetic rollouts (`command.profile`, default hermetic; `skillgit.agents.profile`): the agent runs with a fresh
config home in its rollout folder (`<folder>/home`, removed when the pooled workspace is reset for the next
rollout) holding only what authentication needs, and its own isolation switches; setup and verify commands get
the user's environment as the agent gets it, without the model credentials the agent may hold (its own key, the
`api_key_env` targets of both roles, the keys its CLI authenticates with: `_credentials`), and under profile
hermetic a home of their own (`<folder>/task-home`, `Plan.task_env`; never the user's, never the agent's).
`fingerprint()` names the agent, its CLI version, a hash of its effective config, the profile and the confinement.

Write confinement (`command.confine`, `skillgit.sandbox`): setup, agent and verify each run confined to the
rollout's own folders — the workspace, `<folder>/tmp` (every command's TMPDIR), the agent's home and prompt file
(`Plan.writable`: under profile user, the agent's own config folders instead), the commands' home — never the
records (`pgid`, `proc-scopes.jsonl`) nor `<n>.base`. An agent with a sandbox of its own that cannot start inside
Landlock (codex) is left to it (`sandbox.leave_to`); its setup and verify are confined still.

A rollout whose trace shows the agent tried to load the skill and failed (its skill tool errored), while no rollout
of this student has loaded it yet, stops the run (`LLMError(kind="config")`, naming the agent's fix, e.g. ripgrep
for OpenCode): every later rollout would measure an agent without the skill, and the gate would see only ties.

Presets (`model.student.command.preset`): the agents of `skillgit.agents.registry` that have a student preset; the
argv of each is in README "Train a skill for Claude Code / Codex / Copilot", checked against the real CLIs' `--help`
in docs/AGENT_CLIS.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import threading
import time
from pathlib import Path
from typing import Mapping

from skillgit import package, process, sandbox
from skillgit.agentic import guard, trace, verify
from skillgit.agentic.spec import REPLAY_ENV, TASK_DIR_KEY, AgenticSpec
from skillgit.agentic.workspace import _IGNORE, Workspaces, install, skill_name, tracked
from skillgit.agents import launch, registry
from skillgit.agents.profile import Plan, Settings, plan
from skillgit.config import BackendCfg, CommandCfg, Config
from skillgit.errors import ConfigError, SkillgitError
from skillgit.llm.base import LLMError, Reply
from skillgit.llm.command import AUTH, TRANSIENT, agent_env
from skillgit.redact import SecretSet, redact, secret_values
from skillgit.store.repository import open_repository
from skillgit.types import Item, Score

DIFF_CHARS = 6000
# an agent stopped by its credentials or account, not by the task: unknown, never a verdict on the skill


class AgentStudent:
    """See the module docstring. Thread-safe: each run has its own workspace and process."""

    def __init__(self, cfg: CommandCfg, *, project_root: Path, model: str | None, env: Mapping[str, str],
                 secrets: SecretSet | None = None, withhold: tuple[str, ...] = (), keep_workspaces: bool = False,
                 seed: int = 0, cache_identity: str | None = None, skill_path: str = "", skill_branch: str = "",
                 base_url: str | None = None, api_key_env: str | None = None):
        try:
            self.agent, self.preset = registry.student(cfg.preset)
        except SkillgitError as exc:
            raise LLMError(exc.message, exc.hint, kind="config") from None
        self.cfg = cfg
        self.root = project_root
        self.model = model
        self.seed = seed
        self.base_url = base_url or None
        secrets = secrets or SecretSet()
        own_key = (api_key_env or "",) if self.base_url else ()  # the key of model.student.base_url's server
        self.env = agent_env(env, (*self.preset.keep_env, *cfg.env_passthrough, *own_key),
                             (*secrets.names, *withhold))
        # the model credentials the agent may hold (its own key, the api_key_env targets of both roles — the
        # teacher's too when the roles share one —, the keys its CLI authenticates with): setup and verify run the
        # workspace's code, which the agent wrote, and need none of them
        self._credentials = frozenset((*own_key, *secrets.names, *self.agent.profile.key_env)) - {""}
        self.plan: Plan = plan(self.agent.profile, Settings(cfg.profile, self.base_url, api_key_env, model, self.env))
        try:
            self.confinement = sandbox.resolve(cfg.confine)
        except ConfigError as exc:
            raise LLMError(exc.message, exc.hint, kind="config") from None
        # the agent process itself: left to the agent's own sandbox when Landlock would stop that from starting
        self.agent_confinement = sandbox.leave_to(self.confinement, self.agent.profile.own_sandbox)
        # every value the agent could echo: conventional and registered secrets of `env`, and `secrets`
        self._secrets = tuple(sorted(set(secret_values(env)) | secrets.values, key=len, reverse=True))
        self.repo = open_repository(project_root)
        self.workspaces = Workspaces(self.repo, keep=keep_workspaces, skill_path=skill_path)
        self.workspaces.sweep()  # leftovers of a killed run
        self._identity = cache_identity
        self.skill_path, self.skill_branch = skill_path.strip("/"), skill_branch
        self._lock = threading.Lock()
        self._trees: dict[str, tuple[package.TreeFile, ...]] = {}  # skill branch commit → committed package files
        self._contents: dict[tuple[str, ...], str] = {}  # memo of workspace content digests
        self._broken_setup: dict[str, LLMError] = {}  # cache material → the setup failure (never retried)
        self._skill_loaded = False  # some rollout of this student loaded the skill

    @property
    def id(self) -> str:
        return f"agent:{self.cfg.preset}:{self.model or 'default'}"

    @property
    def cache_identity(self) -> str:
        return self._identity or self.id

    @property
    def output(self) -> str:
        """The trace format the agent's stdout is read as."""
        return self.cfg.output or self.agent.trace_format

    def fingerprint(self) -> dict[str, str]:
        """The agent's identity for drift checks: name, CLI version, effective-config hash, profile
        (`agents.launch.fingerprint`)."""
        return launch.fingerprint(self.agent, self.plan, self._argv0(), self.env,
                                  {k: v for k, v in self.settings().items() if k != "seed"}, self.confinement.state)

    def _argv0(self) -> str:
        template = list(self.cfg.argv) or list(self.preset.argv)
        return template[0] if template else ""

    # -- the call journal's key
    def settings(self) -> dict[str, object]:
        """The agent settings that decide what a rollout does (see the module docstring)."""
        template = list(self.cfg.argv) or list(self.preset.argv)
        extra = {"base_url": self.base_url} if self.base_url else {}
        return {"preset": self.cfg.preset, "argv": template, "output": self.output,
                "install": self.cfg.install_path or self.preset.install_dir, "model": self.model or "",
                "profile": self.cfg.profile, "confine": self.confinement.state, **extra,
                "permission_mode": self.cfg.permission_mode, "allowed_tools": list(self.cfg.allowed_tools),
                "max_turns": self.cfg.max_turns, "sandbox": self.cfg.sandbox,
                "env_passthrough": sorted(self.cfg.env_passthrough), "skill_path": self.skill_path,
                "seed": self.seed if any("{seed}" in part for part in template) else None}

    def cache_material(self, item: Item) -> str:
        """What the call journal adds to the student key of `item` (module docstring): '' for a task that is not
        agentic (its run fails anyway, and is never journaled)."""
        if not AgenticSpec.is_agentic(item):
            return ""
        meta = item.metadata
        try:
            spec = AgenticSpec.from_item(item, self.root)
            content = self._content(spec)
        except Exception as exc:  # a broken task: its run fails and is not journaled
            content = f"unresolved: {exc}"
        task = {k: meta.get(k) for k in ("workspace", "setup", "verify") if k in meta and k != TASK_DIR_KEY}
        # the CLI's version, as the gate's drift check reads it: an updated CLI is never answered with the old one's
        version = launch.cli_version(self.agent, self.plan, self._argv0(), self.env)
        return json.dumps({"task": task, "content": content, "agent": self.settings(), "version": version,
                           "guard": guard.VERSION}, sort_keys=True, default=str)

    def _content(self, spec: AgenticSpec) -> str:
        """The workspace's content: a fixture folder's hash, or the tree at the resolved commit of a repository
        without the committed skill (so a commit of the skill alone keeps the key)."""
        if spec.fixture is not None:
            return "fixture:" + self._fixture_digest(spec.fixture)
        repo = open_repository(spec.repo or self.root)
        commit = repo.rev_parse(f"{spec.rev}^{{commit}}")
        hidden = tuple(self.workspaces.hidden(spec))
        key = ("repo", str(repo.common_dir), commit, *hidden)
        with self._lock:
            if key in self._contents:
                return self._contents[key]
        entries = [e for e in repo.ls_tree(commit, recursive=True)
                   if not any(e.name == h or e.name.startswith(h + "/") for h in hidden)]
        digest = "repo:" + hashlib.sha256("".join(f"{e.mode} {e.sha} {e.name}\0" for e in entries)
                                          .encode("utf-8", "surrogateescape")).hexdigest()
        with self._lock:
            self._contents[key] = digest
        return digest

    def _fixture_digest(self, folder: Path) -> str:
        files: list[tuple[str, os.stat_result]] = []
        for dirpath, dirnames, filenames in os.walk(folder):
            ignored = _IGNORE(dirpath, dirnames + filenames)
            dirnames[:] = sorted(d for d in dirnames if d not in ignored)
            for name in sorted(filenames):
                if name not in ignored:
                    path = Path(dirpath) / name
                    st = path.lstat()
                    if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):  # never read a fifo (it blocks)
                        files.append((path.relative_to(folder).as_posix(), st))
        stamp = ("fixture", str(folder), *(f"{rel}:{st.st_size}:{st.st_mtime_ns}:{st.st_mode}" for rel, st in files))
        with self._lock:
            if stamp in self._contents:
                return self._contents[stamp]
        h = hashlib.sha256()
        for rel, st in files:
            path = folder / rel
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            h.update(f"{rel}\0{st.st_mode & 0o111 != 0}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
            h.update(data)
        digest = h.hexdigest()
        with self._lock:
            self._contents[stamp] = digest
        return digest

    def _tree(self) -> tuple[package.TreeFile, ...]:
        """The committed package at the skill branch's tip (binary assets, file modes), memoised per commit."""
        if not self.skill_path or not self.skill_branch:
            return ()
        commit = self.repo.commit_of(self.skill_branch)
        if commit is None:
            return ()
        with self._lock:
            if commit in self._trees:
                return self._trees[commit]
        files = tuple(package.tree_files(self.repo, commit, self.skill_path))
        with self._lock:
            self._trees[commit] = files
        return files

    def argv(self, values: Mapping[str, str]) -> list[str]:
        template = list(self.cfg.argv) or list(self.preset.argv)
        if not template:
            raise LLMError("the generic agent preset needs model.student.command.argv",
                           'e.g. argv: ["my-agent", "--prompt-file", "{prompt_file}"]', kind="config")
        lists = {"{model_args}": self.preset.model_args if self.model else (),
                 "{profile_args}": self.plan.args,
                 "{max_turns_args}": ("--max-turns", str(self.cfg.max_turns)) if self.cfg.max_turns else (),
                 "{allowed_tools}": (",".join(self.cfg.allowed_tools),)}
        return launch.expand(template, values, lists)

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        try:
            spec = AgenticSpec.from_item(item, self.root)
        except Exception as exc:
            raise LLMError(f"task '{item.id}' is not an agentic task: {exc}",
                           "give it `workspace` and `verify` (README: Train a skill for Claude Code)",
                           kind="config") from None
        material = self.cache_material(item)
        with self._lock:
            broken = self._broken_setup.get(material)
        if broken is not None:
            raise LLMError(broken.message, broken.hint, kind=broken.kind, retryable=False)
        timings: dict[str, float] = {}
        with self.workspaces.open(spec) as ws:
            install_dir = self.cfg.install_path or self.preset.install_dir
            installed = install(ws, skill, install_dir, self._tree())
            rel_install = installed.relative_to(ws.resolve()).as_posix()
            # PWD: agents (OpenCode) and shells follow an inherited PWD rather than their real cwd.
            # SKILLGIT_REPLAY: the agent's own hooks (our SessionEnd hook) know this session is no person's work.
            env = {**{k: v for k, v in self.env.items() if k != "OLDPWD"}, "SKILLGIT_SAMPLE": str(sample),
                   "PWD": str(ws), REPLAY_ENV: "1"}
            folder = ws.parent  # the rollout's own: its home, the commands' home, its TMPDIR, the prompt, the records
            # setup and verify: no credential, a home of their own (not the agent's: it may hold a login copy)
            commands = sandbox.tmp_env(self.plan.task_env({k: v for k, v in env.items() if k not in self._credentials},
                                                          folder / "task-home"), folder / "tmp")
            task_grants = sandbox.rollout_grants([ws, folder / "tmp", *([] if self.cfg.profile == "user" else
                                                                        [folder / "task-home"])])
            try:
                timings["setup"] = self._setup(spec, ws, commands, task_grants)
            except LLMError as exc:
                with self._lock:
                    self._broken_setup[material] = exc
                raise
            baseline = self._capture(spec, ws, folder / "verifier-files")
            agent_env = sandbox.tmp_env(self.plan.apply(env, folder / "home"), folder / "tmp")
            agent_trace, seconds, stopped = self._agent(spec, skill, ws, agent_env, sample)
            timings["agent"] = seconds
            self._check_skill_loaded(agent_trace, skill, rel_install)
            # the verifier's files as the agent found them, before the diff (the teacher reads which ones the agent
            # changed, never their content) and the verdict (on the agent's real work: `guard`)
            tamper = baseline.restore(ws) if ws.is_dir() and not ws.is_symlink() else guard.Tamper()
            diff = self.workspaces.diff(ws, exclude=[rel_install.split("/")[0], *self.workspaces.hidden(spec)])
            started = time.monotonic()
            try:
                score = Score(0.0, 0.0, "") if tamper.failed else verify.verify(
                    spec.verify, ws, commands, record=ws.parent,
                    wrap=lambda c: str(tracked(ws.parent, self.confinement.wrap(c, task_grants, commands))))
            except verify.Unknown as exc:
                raise LLMError(f"task '{item.id}': {exc}", "the rollout is unknown (not a failure); fix the verifier "
                               "or raise verify.timeout_s", kind="unknown") from None
            timings["verify"] = round(time.monotonic() - started, 3)
            if tamper:  # never a success by tampering: the verdict is on the restored verifier, or 0 (`guard`)
                score = Score(score.hard, score.soft, f"{tamper.describe()}\n{score.feedback}".rstrip())
            if stopped:  # the agent gave up: its workspace is still the skill's outcome, and the teacher must know
                score = Score(score.hard, score.soft, f"the agent stopped: {stopped}\n{score.feedback}")
            return self._reply(agent_trace, diff, score, timings, ws, stopped, tamper.describe())

    def _capture(self, spec: AgenticSpec, ws: Path, keep: Path) -> guard.Baseline:
        """The verifier's files kept aside before the agent starts (`guard.capture`); a `verify.files` entry that
        does not exist stops the run (a broken task), a file that cannot be read makes the rollout unknown."""
        try:
            return guard.capture(spec, ws, keep)
        except ConfigError as exc:
            raise LLMError(exc.message, exc.hint, kind="config") from None
        except OSError as exc:
            raise LLMError(f"task '{spec.item_id}': the verifier's files could not be kept aside: {exc}",
                           "the rollout is unknown (not a failure); see what the task's setup leaves", kind="unknown"
                           ) from None

    def _setup(self, spec: AgenticSpec, ws: Path, env: Mapping[str, str], grants: sandbox.Grants) -> float:
        total = 0.0
        for command in spec.setup:
            try:
                line = self.confinement.wrap(verify.python_command(command), grants, env)
                done = process.run(tracked(ws.parent, line), cwd=ws, env=env, timeout_s=spec.setup_timeout_s,
                                   shell=True, record=ws.parent)
            except OSError as exc:
                raise LLMError(f"task '{spec.item_id}': setup could not start: {exc}", "fix the task's setup",
                               kind="unknown") from None
            total += done.seconds
            if done.timed_out or done.returncode != 0:
                why = "timed out" if done.timed_out else f"exited {done.returncode}"
                raise LLMError(f"task '{spec.item_id}': setup `{command}` {why}: {process.tail(done.stderr, 300)}",
                               "the rollout is unknown (not a failure, not retried); fix the task's setup",
                               kind="unknown", retryable=False)
        return round(total, 3)

    def _agent(self, spec: AgenticSpec, skill: str, ws: Path, env: Mapping[str, str], sample: int
               ) -> tuple[trace.AgentTrace, float, str]:
        """(trace, seconds, why the agent stopped early or ""); raises for a run that is no verdict."""
        prompt_file = ws.parent / "prompt.txt"
        prompt_file.write_text(spec.prompt, encoding="utf-8")
        values = {"prompt": spec.prompt, "prompt_file": str(prompt_file), "workspace": str(ws),
                  "model": self.model or "", "name": skill_name(skill), "seed": str(self.seed),
                  "sample": str(sample), "permission_mode": self.cfg.permission_mode, "sandbox": self.cfg.sandbox}
        argv = self.argv(values)
        if not os.path.isabs(argv[0]) and not _which(argv[0], env) or os.path.isabs(argv[0]) and \
                not os.access(argv[0], os.X_OK):
            raise LLMError(f"{self.id}: cannot run '{argv[0]}'",
                           "install it (see README: Train a skill for Claude Code / Codex / Copilot) or set "
                           "model.student.command.argv", kind="config")
        dirs, files = self.plan.writable(ws.parent / "home")
        grants = sandbox.rollout_grants([ws, ws.parent / "tmp", *dirs], [prompt_file, *files])
        try:
            done = process.run(tracked(ws.parent, self.agent_confinement.wrap(argv, grants, env)), cwd=ws, env=env,
                               timeout_s=self.cfg.timeout_s, record=ws.parent)
        except OSError:
            raise LLMError(f"{self.id}: cannot run '{argv[0]}'",
                           "install it (see README: Train a skill for Claude Code / Codex / Copilot) or set "
                           "model.student.command.argv", kind="config") from None
        if done.timed_out:
            raise LLMError(f"{self.id}: no answer within {self.cfg.timeout_s:g}s; {done.cleanup.describe('the agent')}",
                           "raise model.student.command.timeout_s if the agent needs longer", kind="timeout")
        # paths made relative before anything is cut to size: the same work must read the same in every workspace
        try:
            result = trace.parse(_relative(done.stdout, ws), self.output)
        except SkillgitError as exc:
            raise LLMError(exc.message, exc.hint, kind="config") from None
        if done.returncode == 0 and not result.error:
            return result, round(done.seconds, 3), ""
        tail = redact(_relative(process.tail(done.stderr or done.stdout, 400), ws), self._secrets).strip()
        why = result.error or f"exited with status {done.returncode}" + (f": {tail}" if tail else "")
        if result.error and done.returncode != 0:
            why += f" (exit status {done.returncode})"
        # what the agent itself said (not the tool results inside its event stream: a task's own output may well
        # mention a refused connection)
        said = "\n".join([result.error or "", done.stderr[-3000:],
                          "" if result.steps or result.final else done.stdout[-2000:]])
        if AUTH.search(said) or TRANSIENT.search(said):  # the API or the account stopped it, not the task
            raise LLMError(f"{self.id}: agent {why}", f"run `{argv[0]}` by hand in a copy of the workspace to see "
                           "why", kind="agent", retryable=not AUTH.search(said))
        return result, round(done.seconds, 3), why

    def _reply(self, agent: trace.AgentTrace, diff: str, score: Score, timings: dict[str, float], ws: Path,
               stopped: str = "", tampered: str = "") -> Reply:
        cut = len(diff) - DIFF_CHARS
        shown_diff = diff if cut <= 0 else diff[:DIFF_CHARS] + f"\n[… {cut} chars]"
        parts = [agent.render(), "workspace diff:", shown_diff.rstrip() or "(no change)"]
        if tampered:
            parts.insert(1, tampered)
        if stopped:
            parts.insert(0, f"the agent stopped: {stopped}")

        def clean(text: str) -> str:
            return redact(_relative(text, ws), self._secrets)

        return Reply(clean(redact(agent.final, self._secrets, shapes=False)), agent.usage,
                     self.model or self.cfg.preset, sum(timings.values()), trace=clean("\n".join(parts)),
                     score=Score(score.hard, score.soft, clean(score.feedback)), timings=timings)

    def _check_skill_loaded(self, agent: trace.AgentTrace, skill: str, rel_install: str) -> None:
        """Stop the run when the agent tried to load the skill and failed before any rollout loaded it (see the
        module docstring)."""
        load = trace.skill_load(agent, skill_name(skill), rel_install, self.preset.skill_tool)
        if load.state == "loaded":
            self._skill_loaded = True
        elif load.state == "failed" and not self._skill_loaded:
            why = redact(" ".join(load.why.split())[:300], self._secrets)
            raise LLMError(f"{self.id}: the agent could not load the skill: {why}", self.agent.fix_for(load.why),
                           kind="config")

    def check(self) -> None:
        """A missing agent program fails the build (with what to install), not every rollout."""
        argv = list(self.cfg.argv) or list(self.preset.argv)
        if argv and not os.path.isabs(argv[0]) and not _which(argv[0], self.env):
            raise LLMError(f"agent program '{argv[0]}' not found",
                           self.agent.install_hint or "install it or set model.student.command.argv", kind="config")


def _relative(text: str, ws: Path) -> str:
    """`text` with the workspace's absolute path written `./`: the path is random per rollout, and the teacher must
    read the same work the same way in every workspace (a deterministic run; prompts the call journal
    recognises)."""
    for root in sorted({str(ws.resolve()), str(ws)}, key=len, reverse=True):
        text = text.replace(root + "/", "./").replace(root, ".")
    return text


def _which(name: str, env: Mapping[str, str]) -> bool:
    return shutil.which(name, path=env.get("PATH")) is not None


def build(model: str, bcfg: BackendCfg, cfg: Config, env: Mapping[str, str], *, secrets: SecretSet,
          dotenv_keys: frozenset[str]) -> AgentStudent:
    """The agent student of a config (`model.student.command`); the `agent` backend's student builder
    (skillgit/teacher/backend.py)."""
    root = Path(env.get("SKILLGIT_PROJECT_ROOT") or os.getcwd())
    agent = AgentStudent(bcfg.command, project_root=root,
                         model=None if model.strip() in ("", "default", "sim-student") else model, env=env,
                         secrets=secrets, withhold=tuple(dotenv_keys), keep_workspaces=cfg.env.keep_workspaces,
                         seed=cfg.train.seed, cache_identity=bcfg.cache_identity, skill_path=cfg.skill.path,
                         skill_branch=cfg.skill.branch, base_url=bcfg.base_url, api_key_env=bcfg.api_key_env)
    agent.check()
    return agent
