"""Hermetic rollouts: every agent run gets a fresh config home that holds only what authentication needs.

Why: an agent started with the user's HOME loads the user's own skills, hooks, memory, plugins and MCP servers into
every rollout, so a laptop run and a CI run measure different agents (and a user-level `skillgit install` made
every rollout start skillgit's own MCP server). `model.student.command.profile: user` opts back into the user's
profile; the choice is part of the agent's fingerprint and of the call journal's key.

Contract:
- `plan(profile, settings) -> Plan` is pure: what the run's environment sets and drops, the files its home gets,
  the login files it copies, what `{profile_args}` expands to, and how the agent authenticates (`Plan.auth`).
- `Plan.apply(env, home)` makes it real for one rollout. Profile "hermetic": `home` is created (mode 0700) and the
  environment points every config location at it — `HOME`, `XDG_CONFIG_HOME`, `XDG_DATA_HOME`, `XDG_STATE_HOME`,
  `XDG_CACHE_HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `COPILOT_HOME`, `OPENCODE_CONFIG_DIR` and
  `GIT_CONFIG_GLOBAL` (a `.gitconfig` naming a neutral author) — whatever the agent; variables that point an
  agent at other config (`DROPPED`) are removed. The home holds the agent's own files (`Profile.configure`, e.g.
  codex's `config.toml` provider) and, only when none of the agent's key variables is set, a copy (mode 0600) of
  the user's subscription-login file (`Profile.logins`); nothing else of the user's profile. The agent's switches
  (`Profile.args`, e.g. `--strict-mcp-config`) go into `{profile_args}`, its environment switches
  (`Profile.env`, e.g. no auto-update) into the environment. Profile "user": no home, the user's environment as it
  is, no switches; only `configure`'s settings (a base URL) are added, as arguments or variables — the user's
  files are never written.
- A cache an agent only unpacks itself into (`Profile.shared_cache`: Copilot's runtime, ≈4 s per start) is shared
  by the rollouts of this user, in `<tmp>/skillgit-agent-cache-<uid>/<agent>` (used only when that folder is ours:
  owned by this user and not a symlink; else a fresh cache in the home).
- `Plan.task_env(env, home)` is the environment of a rollout's setup and verify commands (they run the task's and
  the agent's code): under profile "hermetic" a home of their own (`home`, mode 0700: the `HOME_VARS` folders and
  the neutral `.gitconfig`, never the agent's login copy; `PYTHONUSERBASE` stays the user's, so a `pip install
  --user`ed pytest is still found, read-only under confinement); under profile "user" `env` as it is.
- `Plan.writable(home)` is what a confined agent (`skillgit.sandbox`) may write besides its workspace, prompt file
  and temporary folder: under "hermetic" its home and the shared caches; under "user" only the agent's own config
  and state folders in the user's home — the folders of its `logins` and `user_config` locations (`~/.claude`,
  `~/.codex`, `~/.copilot`, `~/.config/opencode`, `~/.local/share/opencode`, …) and of its `state` (OpenCode's
  `~/.cache/opencode`, `~/.local/state/opencode`; `apply` makes those missing)
  and the files its rules name in the home itself (`~/.claude.json`); never the rest of the home (`~/.bashrc`,
  `~/.ssh`).
- `Plan.digest(extra)` hashes the effective config (switches, settings, files, how it authenticates, and under
  profile "user" the user's config files named by `Profile.user_config`); credentials are never hashed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROFILES = ("hermetic", "user")

# the fresh home's layout: variable → folder relative to the home ("" is the home itself)
HOME_VARS: dict[str, str] = {
    "HOME": "", "XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share", "XDG_STATE_HOME": ".local/state",
    "XDG_CACHE_HOME": ".cache", "CLAUDE_CONFIG_DIR": ".claude", "CODEX_HOME": ".codex", "COPILOT_HOME": ".copilot",
    "OPENCODE_CONFIG_DIR": ".config/opencode",
}
# variables that would point an agent at config outside the fresh home
DROPPED = ("OPENCODE_CONFIG", "OPENCODE_DB", "OPENCODE_TUI_CONFIG", "COPILOT_CUSTOM_INSTRUCTIONS_DIRS",
           "CLAUDE_CODE_PLUGIN_CACHE_DIR", "ZDOTDIR", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS")
GITCONFIG = "[user]\n\tname = skillgit agent\n\temail = agent@skillgit.invalid\n"


@dataclass(frozen=True)
class Location:
    """A folder an agent keeps config or state in: `$env/sub` when the variable is set, else `~/default/sub`."""

    env: str
    default: str
    sub: str = ""

    def user_path(self, environ: Mapping[str, str]) -> Path:
        if self.env and environ.get(self.env):
            return Path(environ[self.env]) / self.sub
        return Path(environ.get("HOME") or os.path.expanduser("~")) / self.default / self.sub

    def in_home(self) -> str:
        return "/".join(p for p in (self.default, self.sub) if p)


@dataclass(frozen=True)
class Settings:
    """What a profile plan depends on besides the agent's rules."""

    profile: str = "hermetic"
    base_url: str | None = None  # model.student.base_url
    key_env: str | None = None  # model.student.api_key_env
    model: str | None = None
    environ: Mapping[str, str] = field(default_factory=dict)  # the agent's environment (after filtering)


@dataclass(frozen=True)
class Setup:
    """What an agent's `configure` adds: files in the fresh home (ignored under profile user), variables and
    arguments."""

    files: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """An agent's hermetic-profile rules (see the module docstring)."""

    args: tuple[str, ...] = ()  # switches that make it ignore user-level MCP servers, plugins, settings
    env: Mapping[str, str] = field(default_factory=dict)  # environment switches (no auto-update, …)
    logins: tuple[tuple[Location, str], ...] = ()  # (folder, file) of a subscription login to copy
    key_env: tuple[str, ...] = ()  # variables that authenticate on their own (no login is copied then)
    user_config: tuple[tuple[Location, str, str], ...] = ()  # (folder, glob, JSON key or "") of the user's profile
    shared_cache: tuple[str, ...] = ()  # variables pointing at a cache shared by rollouts
    configure: Callable[[Settings], Setup] | None = None
    # the agent's own sandbox, which confines its tools and cannot start inside Landlock (Codex: bubblewrap needs
    # mounts, which Landlock denies): skillgit.sandbox then leaves the agent process to it ("": none)
    own_sandbox: str = ""
    # folders it writes besides those of `logins` and `user_config` (OpenCode's XDG cache and state), which a
    # confined agent may write under profile user
    state: tuple[Location, ...] = ()


@dataclass(frozen=True)
class Plan:
    profile: str
    env: Mapping[str, str]
    files: Mapping[str, str]
    logins: tuple[tuple[Path, str], ...]  # (the user's file, where it goes relative to the home)
    args: tuple[str, ...]
    auth: str  # how the agent authenticates: "env NAME", "login <file>", or "none found"
    shared_cache: tuple[tuple[str, str], ...] = ()  # (variable, agent name)
    user_digest: str = ""
    user_dirs: tuple[str, ...] = ()  # profile user: the agent's own config and state folders (`writable`)
    user_files: tuple[str, ...] = ()  # profile user: its files in the home itself

    def apply(self, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """The rollout's environment; under profile hermetic, `home` is made and filled first."""
        if self.profile == "user":
            for state in self.user_dirs:  # (made when missing, so that confinement can name them)
                try:
                    Path(state).mkdir(mode=0o700, parents=True, exist_ok=True)
                except OSError:
                    pass  # not ours to make: the agent says what it misses
            return {**env, **self.env}
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        out = {k: v for k, v in env.items() if k not in DROPPED}
        for var, rel in HOME_VARS.items():
            folder = home / rel
            folder.mkdir(parents=True, exist_ok=True)
            out[var] = str(folder)
        (home / ".gitconfig").write_text(GITCONFIG, encoding="utf-8")
        out["GIT_CONFIG_GLOBAL"] = str(home / ".gitconfig")
        for rel, text in self.files.items():
            target = home / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        for source, rel in self.logins:
            target = home / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copyfile(source, target)
                target.chmod(0o600)
            except OSError:
                pass  # a login that vanished: the agent says it is not logged in (an unknown rollout, not a verdict)
        out.update({var: path or str(home / ".cache" / var.lower()) for var, path in self.caches().items()})
        out.update(self.env)
        return out

    def task_env(self, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """The environment of the rollout's setup and verify commands (module docstring); `home` is made."""
        if self.profile == "user":
            return dict(env)
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        out = {k: v for k, v in env.items() if k not in DROPPED}
        for var, rel in HOME_VARS.items():
            (home / rel).mkdir(parents=True, exist_ok=True)
            out[var] = str(home / rel)
        (home / ".gitconfig").write_text(GITCONFIG, encoding="utf-8")
        out["GIT_CONFIG_GLOBAL"] = str(home / ".gitconfig")
        if not env.get("PYTHONUSERBASE"):
            user_home = env.get("HOME") or os.path.expanduser("~")
            out["PYTHONUSERBASE"] = os.path.join(user_home, ".local")
        return out

    def writable(self, home: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(folders, files) a confined agent may write besides its rollout's own (module docstring)."""
        if self.profile == "user":
            return self.user_dirs, self.user_files
        return (str(home), *(path for path in self.caches().values() if path)), ()

    def caches(self) -> dict[str, str]:
        """The shared caches of this plan: variable → folder ("" when the shared folder is not ours)."""
        return {var: str(_shared_cache(name) or "") for var, name in self.shared_cache}

    def digest(self, extra: Mapping[str, object] | None = None) -> str:
        """A short hash of the effective config (never of a credential's value)."""
        doc = {"profile": self.profile, "args": list(self.args), "env": dict(sorted(self.env.items())),
               "files": dict(sorted(self.files.items())), "auth": self.auth, "user": self.user_digest,
               **(extra or {})}
        return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]


def plan(rules: Profile, settings: Settings) -> Plan:
    """The profile plan of an agent with `rules` under `settings` (pure; see the module docstring)."""
    if settings.profile not in PROFILES:
        raise ValueError(f"unknown profile {settings.profile!r}")
    setup = rules.configure(settings) if rules.configure else Setup()
    environ = settings.environ
    keys = [k for k in (*rules.key_env, *([settings.key_env] if settings.key_env else [])) if environ.get(k)]
    logins: list[tuple[Path, str]] = []
    if settings.profile == "user":
        digest = user_digest(rules, environ)
        dirs, files = user_state(rules, environ)
        return Plan("user", dict(setup.env), {}, (), setup.args, f"env {keys[0]}" if keys else "user profile",
                    user_digest=digest, user_dirs=dirs, user_files=files)
    if not keys:
        for where, name in rules.logins:
            source = where.user_path(environ) / name
            if source.is_file():
                logins.append((source, f"{where.in_home()}/{name}"))
    auth = f"env {keys[0]}" if keys else f"login {logins[0][1]}" if logins else "none found"
    return Plan("hermetic", {**rules.env, **setup.env}, dict(setup.files), tuple(logins),
                (*rules.args, *setup.args), auth, tuple((var, _cache_name(var)) for var in rules.shared_cache))


def user_state(rules: Profile, environ: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(folders, files) of the agent's own config and state in the user's home (`Plan.writable`): each location of
    its logins and user config, except the home itself, where only the files its rules name are."""
    home = os.path.normpath(environ.get("HOME") or os.path.expanduser("~"))
    dirs: list[str] = []
    files: list[str] = []
    places = [(where, name) for where, name in rules.logins] + [(where, glob) for where, glob, _ in rules.user_config] \
        + [(where, "") for where in rules.state]
    for where, name in places:
        folder = os.path.normpath(str(where.user_path(environ)))
        if folder != home:
            dirs.append(folder)
        elif not any(c in name for c in "*?[/"):
            files.append(os.path.join(home, name))
    return tuple(dict.fromkeys(dirs)), tuple(dict.fromkeys(files))


def user_digest(rules: Profile, environ: Mapping[str, str]) -> str:
    """A hash of the user's config files that make up the agent's profile (`Profile.user_config`)."""
    h = hashlib.sha256()
    for where, pattern, key in rules.user_config:
        root = where.user_path(environ)
        try:
            paths = sorted(p for p in root.glob(pattern) if p.is_file())
        except OSError:
            continue
        for path in paths:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if key:
                try:
                    data = json.dumps(json.loads(data).get(key), sort_keys=True).encode()
                except (ValueError, AttributeError):
                    data = b"unreadable"
            h.update(f"{path.relative_to(root)}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
            h.update(data)
    return h.hexdigest()[:16]


def _cache_name(var: str) -> str:
    return var.lower().replace("_", "-")


def _shared_cache(name: str) -> Path | None:
    """`<tmp>/skillgit-agent-cache-<uid>/<name>`, or None when that folder is not provably ours."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    root = Path(tempfile.gettempdir()) / f"skillgit-agent-cache-{uid}"
    try:
        root.mkdir(mode=0o700, exist_ok=True)
        st = root.lstat()
        if root.is_symlink() or st.st_uid != uid or st.st_mode & 0o077:
            return None
        folder = root / name
        folder.mkdir(exist_ok=True)
        return folder
    except OSError:
        return None
