"""A Microsoft SkillOpt config → an equivalent skillgit.yaml (`skillgit config import`).

Contract
- `import_skillopt(path, overrides)` reads a SkillOpt config the way SkillOpt's `skillopt/config.py` does: its
  `_base_` chain (a file or a list, relative to the file naming it; mappings deep-merged, the child winning), its
  structured sections (model, train, gradient, optimizer, evaluation, env) or its legacy flat keys, its Codex
  aliases (`codex_path`, `sandbox`, …), then SkillOpt-style `--cfg-options section.key=value` overrides. Roles:
  SkillOpt's optimizer is our teacher, its target our student; `model.backend` fills the roles left at SkillOpt's
  defaults as its trainer does (`_resolve_role_backends`).
- It returns an `Import`: the skillgit config mapping (`data`) and one `Outcome` per leaf key of the merged
  SkillOpt config — every key exactly once, none silently dropped — with a status from `STATUSES`:
  mapped (to the skillgit keys in `targets`), approximated (mapped, with a caveat in `reason`), blank (empty or
  null: SkillOpt would read its environment or default; nothing to carry), default (SkillOpt's own default, which
  skillgit's behaviour already matches or has no switch for), unused (its backend or feature is not selected), or
  refused (a value skillgit cannot honour; `reason` says why and what to do instead).
- The data validates (`config_from_dict`): a mapped value that skillgit's validation refuses is moved to refused
  with the validation's message, and the import tries again without it.
- Secrets never travel: an API key written in the SkillOpt file is refused, with the variable to set instead; it
  is never written, shown or returned (`Outcome.value` of a secret key is masked).
- A role backend skillgit has no equivalent for (cursor_exec, copilot_chat, codex_exec as the optimizer) is a
  `ConfigError` naming the key and the choices: the import never leaves a role to default to the simulated world.
- `render(imp)` is the skillgit.yaml text: a comment header saying where it came from and every key not carried
  over with why, then the YAML.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from skillgit.errors import ConfigError
from skillgit.skillopt_keys import (
    AUTH_MODES,
    BACKEND_ALIASES,
    CODEX_ALIASES,
    COMPAT_AUTH,
    DEFAULT_MODELS,
    DEFAULT_SCOPE,
    DEPENDS,
    FLAT_NAMES,
    REFUSED,
    ROLE_DEFAULTS,
    ROLES,
    SECTIONS,
    SIMPLE,
    SKILLOPT_DEFAULTS,
    STATUSES,
    STUDENT_BACKENDS,
    TEACHER_BACKENDS,
)


@dataclass(frozen=True)
class Outcome:
    """What became of one SkillOpt key (see the module contract)."""

    key: str  # SkillOpt's dotted key, e.g. model.optimizer
    value: Any
    status: str  # one of STATUSES
    targets: tuple[str, ...] = ()  # the skillgit keys it was written to
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "status": self.status, "targets": list(self.targets),
                "reason": self.reason}


@dataclass
class Import:
    source: str
    data: dict[str, Any]
    outcomes: list[Outcome] = field(default_factory=list)

    def by_status(self, *statuses: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in statuses]

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "config": self.data, "keys": [o.to_dict() for o in self.outcomes],
                "counts": {s: len(self.by_status(s)) for s in STATUSES}}


# ---------------------------------------------------------------------------------------------- reading
def _read(path: Path, chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    from skillgit.config_yaml import yaml_load

    path = path.resolve()
    if path in chain:
        raise ConfigError(f"_base_ inheritance cycle at {path}", "remove one of the _base_ references")
    if not path.is_file():
        raise ConfigError(f"SkillOpt config not found: {path}" + (f" (named by _base_ in {chain[-1]})" if chain
                                                                   else ""),
                          "fix the path (a _base_ path is relative to the file that names it)")
    data = yaml_load(path.read_text(encoding="utf-8"), str(path)) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}",
                          "is this a SkillOpt config (configs/<env>/default.yaml)?")
    bases = data.pop("_base_", None) or []
    bases = [bases] if isinstance(bases, str) else bases
    if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
        raise ConfigError(f"{path}: _base_: expected a file name or a list of them", "e.g. `_base_: ../base.yaml`")
    layer = _structured(data, path)
    merged: dict[str, Any] = {}
    for base in bases:
        merged = _merge(merged, _read(path.parent / base, (*chain, path)))
    return _merge(merged, layer)


def _structured(data: dict[str, Any], where: Path | str) -> dict[str, Any]:
    """One layer in the structured shape: flat legacy keys moved under their section, Codex aliases renamed."""
    out: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}
    leaves = {k.split(".", 1)[1]: k.split(".", 1)[0] for k in (*SIMPLE, *REFUSED, *DEPENDS, *SKILLOPT_DEFAULTS)}
    for key, value in data.items():
        key = str(key)
        if key in SECTIONS and isinstance(value, dict):
            for sub, v in value.items():
                sub = str(sub)
                out[key][CODEX_ALIASES.get(sub, sub) if key == "model" else sub] = v
            continue
        key = CODEX_ALIASES.get(key, key)
        dotted = FLAT_NAMES.get(key) or (f"{leaves[key]}.{key}" if key in leaves else None)
        if dotted is None and key.split("_")[0] in ("model", "optimizer", "target", "azure", "codex", "claude",
                                                    "cursor", "copilot", "qwen", "minimax"):
            dotted = f"model.{key}"
        section, _, sub = (dotted or f"env.{key}").partition(".")  # SkillOpt passes unknown flat keys to env
        out[section][sub] = value
    return {s: v for s, v in out.items() if v}


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _apply_overrides(cfg: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    from skillgit.config_yaml import split_override

    for item in overrides:
        key, value = split_override(item)
        section, _, sub = key.partition(".")
        layer = _structured({section: {sub: value}} if sub else {key: value}, "--cfg-options")
        cfg = _merge(cfg, layer)
    return cfg


# ---------------------------------------------------------------------------------------------- mapping
SECRET_WORDS = ("api_key", "secret", "token", "password")


def _is_secret(key: str) -> bool:
    return any(w in key for w in SECRET_WORDS) and "max" not in key


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _backend(value: Any) -> str:
    name = str(value or "").strip().lower()
    return BACKEND_ALIASES.get(name, name or "openai_chat")


def resolve_roles(model: dict[str, Any]) -> dict[str, str]:
    """SkillOpt's `_resolve_role_backends`: `model.backend` fills the roles left at their defaults."""
    backend = _backend(model.get("backend"))
    roles: dict[str, Any] = {"optimizer": model.get("optimizer_backend"), "target": model.get("target_backend")}
    roles = {r: (_backend(v) if not _blank(v) else None) for r, v in roles.items()}
    both = {"claude_chat", "codex_exec", "copilot_chat", "openai_compatible"}
    if backend in both:
        roles = {r: backend if v in ROLE_DEFAULTS else v for r, v in roles.items()}
    elif backend in ("claude_code_exec", "cursor_exec", "copilot_exec", "qwen_chat", "minimax_chat"):
        roles["optimizer"] = roles["optimizer"] or "openai_chat"
        roles["target"] = backend if roles["target"] in ROLE_DEFAULTS else roles["target"]
    return {r: v or "openai_chat" for r, v in roles.items()}


class _Mapper:
    def __init__(self, cfg: dict[str, Any]):
        self.cfg = cfg
        self.data: dict[str, Any] = {}
        self.done: dict[str, Outcome] = {}
        self.roles = resolve_roles(cfg.get("model") or {})

    def get(self, dotted: str) -> Any:
        section, _, key = dotted.partition(".")
        return (self.cfg.get(section) or {}).get(key)

    def put(self, target: str, value: Any) -> None:
        node = self.data
        *parents, last = target.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value

    def record(self, key: str, status: str, targets: tuple[str, ...] = (), reason: str = "", value: Any = ...) -> None:
        if key in self.done:
            return
        shown = self.get(key) if value is ... else value
        if _is_secret(key) and not _blank(shown):
            shown = "***"
        self.done[key] = Outcome(key, shown, status, targets, reason)

    def map(self, key: str, target: str, value: Any, reason: str = "", status: str = "mapped") -> None:
        self.put(target, value)
        before = self.done.get(key)
        if before is not None and before.status == status and target not in before.targets:
            self.done[key] = Outcome(key, before.value, status, (*before.targets, target), before.reason or reason)
        self.record(key, status, (target,), reason)

    # -- roles and their backends
    def roles_(self) -> None:
        used = set(self.roles.values())
        for so_role, role in ROLES.items():
            self._role(so_role, role)
        self._shared_role_keys()
        self._reasoning_effort()
        self._unused_backend_keys(used)

    def _role(self, so_role: str, role: str) -> None:
        """SkillOpt's `so_role` (optimizer / target) as skillgit's `role`: its backend, its model (SkillOpt's
        default for the backend when blank) and the backend's own keys."""
        backend = self.roles[so_role]
        table = TEACHER_BACKENDS if role == "teacher" else STUDENT_BACKENDS
        ours = table.get(backend)
        if ours is None:
            allowed = ", ".join(sorted(table))
            raise ConfigError(f"model.{so_role}_backend: SkillOpt's {backend!r} has no skillgit equivalent for "
                              f"the {role} (SkillOpt's {so_role})",
                              f"import with --cfg-options model.{so_role}_backend=<one of {allowed}>")
        model = self.get(f"model.{so_role}")
        self.put(f"model.{role}_backend", ours)
        if _blank(model):
            model = DEFAULT_MODELS.get(backend, "gpt-4o")
            self.record(f"model.{so_role}", "approximated", (f"model.{role}_model",),
                        f"blank in SkillOpt: its default for {backend}, {model}", value=None)
        self.put(f"model.{role}_model", str(model))
        getattr(self, f"_{backend}")(so_role, role)

    def _shared_role_keys(self) -> None:
        """The keys that name both roles' (or one role's) backend or model at once: mapped as the roles resolved."""
        for key in ("backend", "optimizer_backend", "target_backend", "optimizer", "target"):
            dotted = f"model.{key}"
            if dotted in self._leaves():
                ours = ROLES.get(key.replace("_backend", ""))
                targets = (f"model.{ours}_backend",) if key.endswith("_backend") and ours else \
                    (f"model.{ours}_model",) if ours else ("model.teacher_backend", "model.student_backend")
                self.record(dotted, "mapped", targets, f"roles resolved as SkillOpt's trainer does: teacher "
                                                       f"{self.roles['optimizer']}, student {self.roles['target']}")

    def _unused_backend_keys(self, used: set[str]) -> None:
        """Keys of a backend a role (or no role) uses: recorded as unused, with why."""
        for so_role, backend in self.roles.items():  # per-role keys of a backend this role does not use
            for prefix, owner in (("azure_", "openai_chat"), ("qwen_chat_", "qwen_chat"), ("minimax_", "minimax_chat")):
                for dotted in self._leaves():
                    if dotted.startswith(f"model.{so_role}_{prefix}") and backend != owner \
                            and not _blank(self.get(dotted)):
                        self.record(dotted, "unused", reason=f"the {ROLES[so_role]} (SkillOpt's {so_role}) uses "
                                                             f"{backend}, not {owner}")
        if "openai_chat" in used:  # a shared Azure key every openai_chat role overrides with its own
            for dotted in self._leaves():
                if dotted.startswith(("model.azure_openai_", "model.azure_")) and dotted not in self.done \
                        and not _blank(self.get(dotted)) and not _is_secret(dotted):
                    self.record(dotted, "unused", reason="each role sets its own optimizer_/target_ value")
        for prefix, backend in (("azure_", "openai_chat"), ("optimizer_azure_", "openai_chat"),
                                ("target_azure_", "openai_chat"), ("codex_exec_", "codex_exec"),
                                ("claude_code_exec_", "claude_code_exec"), ("cursor_exec_", "cursor_exec"),
                                ("copilot_exec_", "copilot_exec"), ("copilot_chat_", "copilot_chat"),
                                ("qwen_chat_", "qwen_chat"), ("optimizer_qwen_chat_", "qwen_chat"),
                                ("target_qwen_chat_", "qwen_chat"), ("minimax_", "minimax_chat"),
                                ("optimizer_minimax_", "minimax_chat"), ("target_minimax_", "minimax_chat")):
            if backend not in used:
                for dotted in self._leaves():
                    if dotted.startswith(f"model.{prefix}") and not _blank(self.get(dotted)) \
                            and SKILLOPT_DEFAULTS.get(dotted, ...) != self.get(dotted):
                        self.record(dotted, "unused", reason=f"no role uses SkillOpt's {backend} backend")

    def _leaves(self) -> list[str]:
        return [f"{s}.{k}" for s, sub in self.cfg.items() if isinstance(sub, dict) for k in sub]

    def _role_value(self, so_role: str, name: str) -> tuple[str | None, Any]:
        """(the key that set it, value): the role's own key wins over the shared one."""
        for key in (f"model.{so_role}_{name}", f"model.{name}"):
            if not _blank(self.get(key)):
                return key, self.get(key)
        return None, None

    def _secret(self, so_role: str, name: str, variable: str) -> None:
        for key in (f"model.{so_role}_{name}", f"model.{name}"):
            if not _blank(self.get(key)):
                self.record(key, "refused", reason=f"skillgit never stores keys in its config: export {variable} "
                                                   "or put it in .env at the project root")

    def _openai_chat(self, so_role: str, role: str) -> None:
        mode_key, mode = self._role_value(so_role, "azure_openai_auth_mode")
        mode = str(mode or "").strip().lower()
        endpoint_key, endpoint = self._role_value(so_role, "azure_openai_endpoint")
        if endpoint_key is None:
            endpoint_key, endpoint = self._role_value(so_role, "azure_endpoint")
        if mode in COMPAT_AUTH:
            self.put(f"model.{role}_backend", "openai")
            if endpoint_key:
                self.map(endpoint_key, f"model.{role}.base_url", str(endpoint).rstrip("/"))
            if mode_key:
                self.map(mode_key, f"model.{role}_backend", "openai",
                         "an OpenAI-compatible server: skillgit's openai backend with base_url")
            self._secret(so_role, "azure_openai_api_key", "OPENAI_API_KEY")
            return
        if endpoint_key:
            self.map(endpoint_key, f"model.{role}.azure_endpoint", str(endpoint))
        for name in ("azure_openai_api_version", "azure_api_version"):
            key, value = self._role_value(so_role, name)
            if key:
                self.map(key, f"model.{role}.api_version", str(value))
        if mode_key:
            if mode not in AUTH_MODES:
                self.record(mode_key, "refused", reason=f"unknown SkillOpt auth mode {mode!r} (SkillOpt accepts "
                                                        "api_key, managed_identity, azure_ad, aad, azure_cli)")
            else:
                note = "SkillOpt signs in with ManagedIdentityCredential for aad/azure_ad too" \
                    if mode in ("aad", "azure_ad") else ""
                self.map(mode_key, f"model.{role}.auth_mode", AUTH_MODES[mode], note)
        key, scope = self._role_value(so_role, "azure_openai_ad_scope")
        if key:
            if str(scope) == DEFAULT_SCOPE:
                self.record(key, "mapped", (f"model.{role}.azure_ad_scope",), "the default scope (left unset)")
            else:
                self.map(key, f"model.{role}.azure_ad_scope", str(scope))
        key, client = self._role_value(so_role, "azure_openai_managed_identity_client_id")
        if key:
            self.map(key, f"model.{role}.managed_identity_client_id", str(client))
        self._secret(so_role, "azure_openai_api_key", "AZURE_OPENAI_API_KEY")
        self._secret(so_role, "azure_api_key", "AZURE_OPENAI_API_KEY")

    def _claude_chat(self, so_role: str, role: str) -> None:
        pass  # the anthropic backend reads ANTHROPIC_API_KEY; SkillOpt's claude_chat has no config keys

    def _openai_compatible(self, so_role: str, role: str) -> None:
        self.record(f"model.{so_role}_backend", "approximated", (f"model.{role}_backend",),
                    f"openai_compatible: set model.{role}.base_url (or OPENAI_BASE_URL) to the server")

    def _qwen_chat(self, so_role: str, role: str) -> None:
        key, url = self._role_value(so_role, "qwen_chat_base_url")
        if key:
            self.map(key, f"model.{role}.base_url", str(url))
        else:
            self.put(f"model.{role}.base_url", "http://localhost:8000/v1")  # SkillOpt's qwen_chat default
        for name, target in (("temperature", "temperature"), ("max_tokens", "max_tokens"),
                             ("timeout_seconds", "timeout_s")):
            key, value = self._role_value(so_role, f"qwen_chat_{name}")
            if key:
                self.map(key, f"model.{role}.{target}", value)
        for name in ("qwen_chat_thinking_mode", "qwen_chat_enable_thinking"):
            key, value = self._role_value(so_role, name)
            if key and str(value).lower() not in ("server_default",):
                self.record(key, "refused", reason="skillgit sends no chat_template_kwargs; set thinking on the "
                                                   "vLLM/SGLang server")
        self._secret(so_role, "qwen_chat_api_key", "OPENAI_API_KEY (or the variable model.*.api_key_env names)")

    def _minimax_chat(self, so_role: str, role: str) -> None:
        key, url = self._role_value(so_role, "minimax_base_url")
        region = str(self.get("model.minimax_region") or "global_en")
        default = "https://api.minimaxi.com/v1" if region == "cn_zh" else "https://api.minimax.io/v1"
        if key:
            self.map(key, f"model.{role}.base_url", str(url))
        else:
            self.put(f"model.{role}.base_url", default)
        if not _blank(self.get("model.minimax_region")):
            self.record("model.minimax_region", "mapped", (f"model.{role}.base_url",))
        self.put(f"model.{role}.api_key_env", "MINIMAX_API_KEY")
        self.record(f"model.{so_role}_backend", "approximated", (f"model.{role}_backend",),
                    "MiniMax through its OpenAI-compatible API (openai backend, key from MINIMAX_API_KEY)")
        self._secret(so_role, "minimax_api_key", "MINIMAX_API_KEY")

    def _command(self, role: str, preset: str) -> None:
        self.put(f"model.{role}.command.preset", preset)
        exec_timeout = self.get("env.exec_timeout")
        if not _blank(exec_timeout):
            self.map("env.exec_timeout", f"model.{role}.command.timeout_s", exec_timeout)

    def _codex_exec(self, so_role: str, role: str) -> None:
        self._command(role, "codex")
        sandbox = self.get("model.codex_exec_sandbox")
        if not _blank(sandbox):
            if sandbox in ("read-only", "workspace-write"):
                self.map("model.codex_exec_sandbox", f"model.{role}.command.sandbox", sandbox)
            else:
                self.record("model.codex_exec_sandbox", "refused",
                            reason="skillgit runs codex with read-only or workspace-write only")

    def _claude_code_exec(self, so_role: str, role: str) -> None:
        self._command(role, "claude")
        self.record(f"model.{so_role}_backend", "approximated", (f"model.{role}_backend",),
                    "Claude Code answering each task (command backend, preset claude); for tasks with a "
                    "workspace use student_backend: agent")

    def _copilot_exec(self, so_role: str, role: str) -> None:
        self._command(role, "copilot")
        self.record(f"model.{so_role}_backend", "approximated", (f"model.{role}_backend",),
                    "skillgit runs the Copilot CLI as an agent on agentic tasks (student_backend: agent)")

    def _reasoning_effort(self) -> None:
        value = self.get("model.reasoning_effort")
        if _blank(value):
            return
        targets = tuple(f"model.{ROLES[r]}.reasoning_effort" for r, b in self.roles.items()
                        if b in ("openai_chat", "openai_compatible", "qwen_chat"))
        for target in targets:
            self.put(target, value)
        if targets:
            self.record("model.reasoning_effort", "mapped", targets)
        else:
            self.record("model.reasoning_effort", "unused", reason="no role uses an OpenAI-style backend")

    # -- the other sections
    def sections(self) -> None:
        for key, target in SIMPLE.items():
            if self.get(key) is not None:
                self.map(key, target, self.get(key))
        mode = self.get("optimizer.lr_control_mode")
        if mode is not None:
            if mode in ("fixed", "scheduled"):
                self.map("optimizer.lr_control_mode", "optimizer.lr_control_mode", "scheduled",
                         "SkillOpt's fixed is skillgit's scheduled")
            elif mode == "autonomous":
                self.map("optimizer.lr_control_mode", "optimizer.lr_control_mode", "autonomous")
            else:
                self.record("optimizer.lr_control_mode", "refused",
                            reason="skillgit's edit budget is scheduled or autonomous; use lr_scheduler: constant")
        weight = self.get("evaluation.gate_mixed_weight")
        if weight is not None:
            try:
                self.map("evaluation.gate_mixed_weight", "evaluation.mixed_weight", round(1 - float(weight), 6),
                         "SkillOpt weighs soft by w, skillgit weighs hard: mixed_weight = 1 - w")
            except (TypeError, ValueError):
                self.record("evaluation.gate_mixed_weight", "refused", reason="not a number")
        skill = self.get("env.skill_init")
        if not _blank(skill):
            self.map("env.skill_init", "skill.path", str(skill),
                     "skillgit trains this file in your repository: keep it there (relative path)")
        split_mode = self.get("env.split_mode")
        split_dir, data_path = self.get("env.split_dir"), self.get("env.data_path")
        if split_mode == "split_dir":
            self.record("env.split_mode", "mapped", ("env.split_dir",))
            if not _blank(split_dir):
                self.map("env.split_dir", "env.split_dir", str(split_dir),
                         "a folder with train/val/test task files (JSONL: id, input, expected)")
            if not _blank(data_path):
                self.record("env.data_path", "unused", reason="split_mode is split_dir")
        else:
            if not _blank(data_path):
                self.map("env.data_path", "env.tasks", str(data_path),
                         "skillgit reads JSONL/YAML tasks (id, input, expected); split by env.split_ratio")
            if not _blank(split_dir):
                self.record("env.split_dir", "unused", reason=f"split_mode is {split_mode or 'ratio'}")
        tokens = self.get("env.max_completion_tokens")
        if not _blank(tokens):
            self.map("env.max_completion_tokens", "model.student.max_tokens", tokens)
        if not _blank(self.get("env.exec_timeout")):
            self.map("env.exec_timeout", "model.student.timeout_s", self.get("env.exec_timeout"),
                     "the per-call timeout of the student")
        for key, (switch, what) in DEPENDS.items():
            if key in self._leaves() and not self.get(switch):
                self.record(key, "unused", reason=f"{what} is off ({switch})")

    def rest(self) -> None:
        """Every key not decided yet: blank, SkillOpt's default, known-refused or unknown."""
        for key in self._leaves():
            value = self.get(key)
            if key in self.done:
                continue
            if _blank(value):
                self.record(key, "blank", reason="empty in SkillOpt (its environment or default); skillgit's "
                                                 "default applies")
            elif key in SKILLOPT_DEFAULTS and value == SKILLOPT_DEFAULTS[key]:
                self.record(key, "default", reason="SkillOpt's default; nothing to carry over")
            elif key in REFUSED:
                self.record(key, "refused", reason=REFUSED[key])
            elif key.startswith("env."):
                name = _one_line(self.get("env.name") or "its", 40)
                self.record(key, "refused", reason=f"specific to SkillOpt's {name} environment; skillgit has no "
                                                   "equivalent")
            else:
                self.record(key, "refused", reason="no skillgit equivalent for this SkillOpt key")


def import_skillopt(path: Path | str, overrides: list[str] | tuple[str, ...] = ()) -> Import:
    """See the module contract."""
    from skillgit.config import config_from_dict

    cfg = _apply_overrides(_read(Path(path)), list(overrides))
    refused_by_validation: dict[str, str] = {}
    for _ in range(50):
        mapper = _Mapper(cfg)
        mapper.roles_()
        mapper.sections()
        for key, why in refused_by_validation.items():
            outcome = mapper.done.get(key)
            for target in outcome.targets if outcome else ():
                _drop(mapper.data, target)
            mapper.done[key] = Outcome(key, mapper.get(key), "refused", (), f"skillgit refuses the value: {why}")
        mapper.rest()
        try:
            config_from_dict(mapper.data)
        except ConfigError as exc:
            culprit = _culprit(exc, mapper.done)
            if culprit is None or culprit in refused_by_validation:
                raise ConfigError(f"the imported config does not validate: {exc.message}", exc.hint) from None
            refused_by_validation[culprit] = f"{exc.message} ({exc.hint})" if exc.hint else exc.message
            continue
        order = {k: i for i, k in enumerate(mapper._leaves())}
        outcomes = sorted(mapper.done.values(), key=lambda o: order.get(o.key, len(order)))
        sections = ("skill", "model", "train", "gradient", "optimizer", "evaluation", "env")
        data = {k: mapper.data[k] for k in sections if k in mapper.data}
        return Import(str(path), data, outcomes)
    raise ConfigError("the imported config does not validate", "report this SkillOpt config as a bug")


def _culprit(exc: ConfigError, done: dict[str, Outcome]) -> str | None:
    """The SkillOpt key whose mapped value the validation error names."""
    for outcome in done.values():
        if any(target in exc.message for target in outcome.targets) and outcome.status in ("mapped",
                                                                                           "approximated"):
            return outcome.key
    return None


def _drop(data: dict[str, Any], target: str) -> None:
    *parents, last = target.split(".")
    node: Any = data
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(last, None)


# ---------------------------------------------------------------------------------------------- output
def _one_line(value: Any, width: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= width else text[:width - 1] + "…"


def render(imp: Import, describe: Callable[[str], str] = lambda s: s) -> str:
    """The skillgit.yaml text: where it came from, what was not carried over and why, then the config."""
    lines = [f"# Imported from the SkillOpt config {describe(imp.source)} by `skillgit config import`.",
             f"# {len(imp.by_status('mapped', 'approximated'))} SkillOpt keys carried over; "
             f"{len(imp.by_status('blank', 'default'))} blank or at SkillOpt's default (nothing to carry).",
             "# Check the task source (env.tasks / env.split_dir) and env.scorer before training."]
    for status in ("approximated", "refused", "unused"):
        group = imp.by_status(status)
        if group:
            lines.append(f"# {status} ({len(group)}):")
            lines.extend(f"#   {_one_line(o.key)[1:-1]} = {_one_line(o.value)}: {' '.join(o.reason.split())}"
                         for o in group)
    quiet = [o.key for o in imp.by_status("blank", "default")]
    if quiet:
        lines.extend(textwrap.wrap("blank or at SkillOpt's default: " + ", ".join(quiet), 114,
                                   initial_indent="# ", subsequent_indent="#   "))
    body = yaml.safe_dump(imp.data, sort_keys=False, allow_unicode=False, default_flow_style=False)
    return "\n".join(lines) + "\n" + body
