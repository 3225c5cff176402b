"""Checking a config: value types, allowed values, ranges, cross-field rules, and "did you mean" for unknown keys.

Contract: every check raises `ConfigError` whose message starts with the dotted key, shows the bad value and says
what is allowed, e.g. ``train.num_epochs: expected an integer, got 'four'``. Nothing here reads files; `config.py`
calls `coerce` while building the dataclasses and `check_config` on the finished `Config`.
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
import types
import typing
from pathlib import PurePosixPath
from typing import Any, Callable, Iterable, Union

from skillgit import proposer_table
from skillgit.backend_table import TABLE, names_for
from skillgit.errors import ConfigError

# Vocabularies derived from their registries: backend names (`backend_table`, read by `llm/registry.py`) and scorer
# types (`scorers._REGISTRY`). Two live above the config, in modules that read it (importing them here would be a
# cycle), so their names are listed here once: the gate's checks (`loop/gate._CHECKS`, which tests/test_centre.py
# checks against this list; `evaluation.gate` is one or more, joined with '+' or as a list: EvaluationCfg.parse_gate)
# and the update modes (`loop/modes.propose_update`; tests/test_train.py trains in each).
GATE_MODES = ("strict", "paired", "significance", "per_item", "two_split")
REWRITE_MODES = ("rewrite_from_suggestions", "full_rewrite_minibatch")
UPDATE_MODES = ("patch", *REWRITE_MODES)
# model.*.auth_mode (Azure OpenAI): auto, api_key, then the Entra ID modes (azure-identity, the azure extra)
AUTH_MODES = ("auto", "api_key", "azure_ad", "managed_identity", "azure_cli")

# Keys are "generic" dotted paths: model.teacher.X and model.student.X are both written model.*.X.
ENUMS: dict[str, tuple[str, ...]] = {
    "model.*.api": ("chat", "responses"),
    "model.*.json_mode": ("auto", "json_schema", "json_object_schema", "json_object", "prompt"),
    "model.*.auth_mode": AUTH_MODES,
    "model.*.command.permission_mode": ("acceptEdits", "auto", "default", "dontAsk", "plan"),
    "model.*.command.sandbox": ("read-only", "workspace-write"),
    "model.*.command.confine": ("auto", "landlock", "off"),  # skillgit/sandbox.MODES
    "optimizer.lr_scheduler": ("constant", "linear", "cosine", "autonomous"),
    "env.executor": ("threads", "ray"),
    "optimizer.lr_control_mode": ("scheduled", "autonomous"),
    "optimizer.skill_update_mode": UPDATE_MODES,
    "optimizer.recall_scope": ("branch", "skill"),  # loop/recall.py SCOPES
    "evaluation.gate_metric": ("hard", "soft", "mixed"),
    "evaluation.gate_test": ("stderr", "permutation"),
    "evaluation.across_steps": ("none", "fdr", "fwer"),  # loop/spending.py MODES
}
# Lists owned by the agent registry, read when a value is checked (an agent registered at run time is allowed).
DYNAMIC_ENUMS: dict[str, Callable[[], tuple[str, ...]]] = {
    # the backend table (read by the registry, llm/registry.py) is the one list of backend names and their roles;
    # installed packages add theirs through the `skillgit.backends` entry points: read when checked, not at import
    "model.teacher_backend": lambda: names_for("teacher"),
    "model.student_backend": lambda: names_for("student"),
    "model.*.command.preset": lambda: _agents().student_names(),
    "model.*.command.output": lambda: ("", *_agents().trace_formats()),
    "model.*.command.profile": lambda: _agents().PROFILES,
    "env.scorer.type": lambda: _scorer_types(),
}


_BACKEND_ROLES = {"model.teacher_backend": "teacher", "model.student_backend": "student"}


def _builtin_backend(generic: str, value: Any) -> bool:
    """True for a built-in backend that may play the key's role: valid without reading the installed plugins
    (a built-in name wins over a plugin's, `backend_table.table`; the plugins' entry points cost every command
    that reads the config, `log` and `status` too, a sixth of their imports)."""
    entry = TABLE.get(value) if generic in _BACKEND_ROLES and isinstance(value, str) else None
    return entry is not None and _BACKEND_ROLES[generic] in entry.roles


def _agents():
    """The agent registry, imported when an agent key's value is checked (`skillgit log` and `status` read the
    config without ever naming an agent: the registry is a fifth of their imports)."""
    from skillgit.agents import registry

    return registry


def _scorer_types() -> tuple[str, ...]:
    """The scorer registry's types, imported when `env.scorer.type` is checked (the scorers and what they import,
    subprocess handling among it, were a twelfth of `skillgit log`'s imports)."""
    from skillgit.scorers import SCORER_TYPES

    return SCORER_TYPES


def allowed_values(generic: str) -> tuple[str, ...] | None:
    """The allowed values of the generic dotted key, or None when any value goes."""
    if generic in DYNAMIC_ENUMS:
        return DYNAMIC_ENUMS[generic]()
    return ENUMS.get(generic)


def generic_key(dotted: str) -> str:
    return re.sub(r"^model\.(teacher|student)\.", "model.*.", dotted)


def _short(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


# ---------------------------------------------------------------------------------------------- types
_INT_RE = re.compile(r"^[-+]?\d+$")


def _as_float(value: Any) -> float | None:
    """A real number from an int/float or a numeric string (PyYAML-style '1e-6' arrives as a string); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().replace("_", ""))
        except ValueError:
            return None
    return None


def coerce(value: Any, hint: Any, key: str, default: Any = None) -> Any:
    """Check `value` against the type annotation `hint` and return it in canonical form (lists → tuples,
    numeric strings → numbers, "yes"/"no" strings → bools). Raises ConfigError naming `key` otherwise."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return coerce(value, inner[0], key, default)
    leaf = key.rsplit(".", 1)[-1]
    example = f"e.g. `{leaf}: {str(default).lower() if isinstance(default, bool) else default}`" \
        if default not in (None, (), "") else ""
    if value is None:
        raise ConfigError(f"{key}: a value is required, got None",
                          f"remove the key to use the default {default!r}" if default is not None else example)
    if hint in _SCALARS:
        return _SCALARS[hint](value, key, example)
    if origin is tuple:
        return _to_tuple(value, args[0], key, leaf)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {_short(value)}", "write it as `name: value` lines")
        return {str(k): coerce(v, args[1], f"{key}.{k}") for k, v in value.items()}
    return value


def _to_bool(value: Any, key: str, example: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
        return _BOOL_WORDS[value.strip().lower()]
    raise ConfigError(f"{key}: expected true or false, got {_short(value)}", _join("write true or false", example))


def _to_int(value: Any, key: str, example: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT_RE.match(value.strip().replace("_", "")):
        return int(value.strip().replace("_", ""))
    raise ConfigError(f"{key}: expected an integer, got {_short(value)}", _join("write a whole number", example))


def _to_float(value: Any, key: str, example: str) -> float:
    number = _as_float(value)
    if number is None or math.isnan(number):
        raise ConfigError(f"{key}: expected a number, got {_short(value)}", _join("write a number", example))
    return number


def _to_str(value: Any, key: str, example: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # a model name like `4` or a version like `2` is still a name
    if value is False and "off" in (allowed_values(generic_key(key)) or ()):
        return "off"  # YAML reads a bare `off` as false (`model.student.command.confine: off`)
    raise ConfigError(f"{key}: expected a string, got {_short(value)}", "put the value in quotes")


_SCALARS: dict[Any, Callable[[Any, str, str], Any]] = {bool: _to_bool, int: _to_int, float: _to_float, str: _to_str}


def _to_tuple(value: Any, item: Any, key: str, leaf: str) -> tuple[Any, ...]:
    if isinstance(value, str):
        # A string for a list: argv is split like a shell would; other lists take "a,b,c" (handy with --set).
        try:
            value = shlex.split(value) if leaf == "argv" else [v.strip() for v in value.split(",") if v.strip()]
        except ValueError as exc:
            raise ConfigError(f"{key}: cannot split {_short(value)} into words: {exc}",
                              "write a YAML list instead, e.g. `argv: [my-agent, '{prompt}']`") from None
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{key}: expected a list, got {_short(value)}", f"write a YAML list, e.g. `{leaf}: [a, b]`")
    return tuple(coerce(v, item, f"{key}[{i}]") for i, v in enumerate(value))


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


_BOOL_WORDS = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False, "1": True, "0": False}


# ---------------------------------------------------------------------------------------------- field rules
def _ge(bound: float) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: v is None or v >= bound), f"must be >= {bound:g}"


def _gt(bound: float) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: v is None or v > bound), f"must be > {bound:g}"


def _within(lo: float, hi: float, hi_open: bool = False) -> tuple[Callable[[Any], bool], str]:
    if hi_open:
        return (lambda v: v is None or lo <= v < hi), f"must be >= {lo:g} and < {hi:g}"
    return (lambda v: v is None or lo <= v <= hi), f"must be between {lo:g} and {hi:g}"


RANGES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "train.num_epochs": _ge(1), "train.batch_size": _ge(1), "train.max_steps": _ge(1),
    "gradient.minibatch_size": _ge(1), "gradient.analyst_workers": _ge(1),
    # Merging chunks of one edit would never shrink the pile: the merge would not terminate.
    "gradient.merge_batch_size": _ge(2),
    "optimizer.learning_rate": _ge(0), "optimizer.min_learning_rate": _ge(0),
    "optimizer.negative_buffer_size": _ge(0), "optimizer.proposals": _ge(1),
    "optimizer.proposer_schedule.after_rejected": _ge(1), "optimizer.slow_update_samples": _ge(1),
    "optimizer.deep_reflect.failures": _ge(0), "optimizer.deep_reflect.successes": _ge(0),  # deep reflect
    "optimizer.deep_reflect.turns": _within(1, 8),
    "evaluation.mixed_weight": _within(0, 1), "evaluation.gate_margin": _ge(0),
    "evaluation.gate_repeats": _within(1, 500),  # loop/evaluate.py: MAX_REPEATS sample numbers per round
    "evaluation.paired_alpha": (lambda v: 0 < v < 1, "must be > 0 and < 1"),
    "evaluation.gate_k": _ge(0), "evaluation.item_tolerance": _within(0, 1, hi_open=True),
    "env.workers": _ge(1), "env.max_reply_chars": _ge(1000),
    "optimizer.max_edits_per_reply": _ge(1), "optimizer.max_edit_chars": _ge(100), "optimizer.leak_ngram": _ge(0),
    "optimizer.recall_k": _ge(0), "optimizer.recall_chars": _ge(200),  # loop/recall.py
    "skill.max_tokens": _ge(100), "skill.max_description_chars": _ge(1),
    "skill.listing_budget": _ge(1),
    "evaluation.min_val_coverage": _within(0, 1), "evaluation.unscored_retries": _ge(0),
    "env.scorer.tolerance": _ge(0), "env.scorer.rel_tolerance": _ge(0), "env.scorer.timeout_s": _gt(0),
    "env.scorer.threshold": (lambda v: 0 < v <= 1, "must be > 0 and <= 1"),
    "model.*.temperature": _ge(0), "model.*.max_tokens": _ge(1), "model.*.thinking_budget": _ge(1),
    "model.*.timeout_s": _gt(0), "model.*.max_retries": _ge(0), "model.*.concurrency": _ge(1),
    "model.*.command.timeout_s": _gt(0), "model.*.handoff.wait_s": _ge(0),
    "model.simulated.num_rules": _within(1, 8), "model.simulated.noise": _within(0, 1, hi_open=True),
    "model.simulated.lucky_rate": _within(0, 1, hi_open=True), "model.simulated.min_fields": _within(1, 5),
    "model.simulated.max_fields": _within(1, 5), "model.simulated.dilution_lines": _ge(1),
    "model.simulated.dilution_per_line": _within(0, 1), "model.simulated.vague_rate": _within(0, 1),
    "model.simulated.harmful_rate": _within(0, 1), "model.simulated.off_target_rate": _within(0, 1),
    "model.simulated.malformed_rate": _within(0, 1, hi_open=True), "model.simulated.latency_s": _ge(0),
    "budget.max_calls": _ge(1), "budget.max_tokens": _ge(1), "budget.max_cost_usd": _gt(0),
    "budget.max_agent_turns": _ge(1), "budget.max_agent_seconds": _gt(0),
}


def check_field(key: str, value: Any, default: Any = None) -> None:
    """Allowed values and ranges of one already-typed field. A value equal to its field's `default` needs no lookup
    of the allowed values (every default is one of them: tests/test_centre.py), so a config that keeps a registry's
    default does not import the registry."""
    generic = generic_key(key)
    at_default = default is not None and value == default
    allowed = None if at_default or _builtin_backend(generic, value) else allowed_values(generic)
    if allowed is not None and value not in allowed:
        close = difflib.get_close_matches(str(value), allowed, n=1, cutoff=0.6)
        raise ConfigError(f"{key}: {_short(value)} is not one of {', '.join(allowed)}",
                          f"did you mean '{close[0]}'?" if close else f"use one of: {', '.join(allowed)}")
    rule = RANGES.get(generic)
    if rule is not None and not rule[0](value):
        raise ConfigError(f"{key}: {rule[1]}, got {_short(value)}",
                          f"the default is {default!r}" if default is not None else "")


# ---------------------------------------------------------------------------------------------- whole config
def parse_ratio(text: str, key: str = "env.split_ratio") -> tuple[float, float, float]:
    """'train:val[:test]' → three non-negative weights; train and val must be positive."""
    parts = str(text).split(":")
    hint = "write train:val:test weights, e.g. '2:1:7' or '1:1:0'"
    if len(parts) not in (2, 3):
        raise ConfigError(f"{key}: expected 'train:val:test', got {_short(text)}", hint)
    maybe = [_as_float(p) for p in parts]
    numbers = [n for n in maybe if n is not None and math.isfinite(n) and n >= 0]
    if len(numbers) != len(maybe):
        raise ConfigError(f"{key}: parts must be non-negative numbers, got {_short(text)}", hint)
    train, val = numbers[0], numbers[1]
    test = numbers[2] if len(numbers) == 3 else 0.0
    if val <= 0:
        raise ConfigError(f"{key}: the val part must be > 0, got {_short(text)}",
                          "the gate scores candidates on val; give it a share, e.g. '2:1:7'")
    if train <= 0:
        raise ConfigError(f"{key}: the train part must be > 0, got {_short(text)}",
                          "training reflects on train items; give it a share, e.g. '2:1:7'")
    return (train, val, test)


_MODULE_FUNC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_BRANCH_BAD = re.compile(r"(^[-/.])|(\.\.)|([\s~^:?*\[\\])|(@\{)|([/.]$)|(\.lock$)|(//)")


_SHELLS = ("sh", "bash", "zsh", "dash", "ksh", "fish", "cmd", "cmd.exe", "powershell", "pwsh")


def _no_prompt_in_shell(argv: tuple[str, ...]) -> None:
    """`sh -c "agent {prompt}"` would run the task's text as shell code (a task saying `$(rm -rf ~)` runs it):
    refuse it and say how to pass the prompt safely."""
    if not argv:
        return
    shell = argv[0].replace("\\", "/").rsplit("/", 1)[-1]
    if shell in _SHELLS and any("{prompt}" in part for part in argv[1:]):
        raise ConfigError("model.student.command.argv: {prompt} inside a shell command would run the task's text as "
                          "shell code",
                          "pass the prompt as its own argv element ([my-agent, '{prompt}']) or read it from a file "
                          "inside the shell command ([sh, -c, 'my-agent < \"$0\"', '{prompt_file}'])")


def check_config(cfg: Any) -> None:
    """Rules that involve more than one field, or a field's inner syntax. `cfg` is a `Config`."""
    for rule in (_check_skill, _check_optimizer, _check_env, _check_scorer, _check_model, _check_prices):
        rule(cfg)


def _check_skill(cfg: Any) -> None:
    skill = cfg.skill
    if not skill.path.strip():
        raise ConfigError("skill.path: must not be empty", "name the skill file, e.g. `path: SKILL.md`")
    if skill.path.startswith("/") or ".." in skill.path.replace("\\", "/").split("/"):
        raise ConfigError(f"skill.path: must be relative to the repository and stay inside it, got {skill.path!r}",
                          "write a path like `skills/my-skill/SKILL.md`")
    if not skill.branch or _BRANCH_BAD.search(skill.branch):
        raise ConfigError(f"skill.branch: {skill.branch!r} is not a valid branch name",
                          "use letters, digits, '-', '_' and '/', e.g. `branch: main`")


def _check_optimizer(cfg: Any) -> None:
    opt = cfg.optimizer
    if opt.min_learning_rate > opt.learning_rate:
        raise ConfigError(f"optimizer.min_learning_rate: must be <= optimizer.learning_rate "
                          f"({opt.learning_rate}), got {opt.min_learning_rate}",
                          "the schedule decays from learning_rate down to min_learning_rate")
    if opt.skill_update_mode in REWRITE_MODES and opt.learning_rate == 0:
        raise ConfigError(f"optimizer.learning_rate: 0 with skill_update_mode {opt.skill_update_mode!r} "
                          "would rewrite the skill from no suggestions at all",
                          "set optimizer.learning_rate >= 1, or use skill_update_mode: patch")

    _check_proposers(opt, cfg.model.teacher_backend)
    _check_deep_reflect(opt, cfg.model.teacher_backend)


def _check_deep_reflect(opt: Any, teacher_backend: str) -> None:
    """Deep reflect probes before the `reflect` stage: a config where no step reflects would ignore it silently."""
    if not opt.deep_reflect.enabled:
        return
    if opt.skill_update_mode == "full_rewrite_minibatch":
        raise ConfigError("optimizer.deep_reflect.enabled: skill_update_mode full_rewrite_minibatch has no reflect "
                          "stage to probe for",
                          "use skill_update_mode: patch or rewrite_from_suggestions, or set deep_reflect.enabled: "
                          "false")
    names = {*proposer_table.configured(opt.proposers, teacher_backend), opt.proposer_schedule.switch_to}
    if "reflect" not in names:
        raise ConfigError("optimizer.deep_reflect.enabled: no proposer reflects (the agent teacher edits the "
                          "package itself)",
                          "add reflect to optimizer.proposers (`proposers: [reflect, agent]`), or set "
                          "deep_reflect.enabled: false")


def _check_env(cfg: Any) -> None:
    parse_ratio(cfg.env.split_ratio)
    if not str(cfg.env.tasks).strip() and not cfg.env.split_dir:
        raise ConfigError("env.tasks: must name a task file or folder", "e.g. `tasks: tasks.jsonl`")


def _check_scorer(cfg: Any) -> None:
    scorer = cfg.env.scorer
    if scorer.pattern is not None:
        try:
            re.compile(scorer.pattern)
        except re.error as exc:
            raise ConfigError(f"env.scorer.pattern: not a valid regular expression: {exc}, got {scorer.pattern!r}",
                              "escape special characters with a backslash") from None
    if scorer.type == "python":
        if not scorer.callable:
            raise ConfigError("env.scorer.callable: the python scorer needs `callable: module:function`",
                              "e.g. `callable: verifiers:score` for verifiers.py at the repository root")
        if not _MODULE_FUNC.match(scorer.callable):
            raise ConfigError(f"env.scorer.callable: expected 'module:function', got {scorer.callable!r}",
                              "e.g. `callable: verifiers:score`")
    if scorer.type == "command" and not (scorer.command or "").strip():
        raise ConfigError("env.scorer.command: the command scorer needs `command: <shell command>`",
                          "e.g. `command: python check.py` (reads {item, output} JSON on stdin, prints a score)")


def _check_model(cfg: Any) -> None:
    model = cfg.model
    _no_prompt_in_shell(model.student.command.argv)
    if model.student_backend == "command":
        _check_command_student(model.student.command)
    for side in ("teacher", "student"):
        _check_azure_auth(side, getattr(model, f"{side}_backend"), getattr(model, side))
    for side in ("teacher", "student"):
        backend = getattr(model, f"{side}_backend")
        name = getattr(model, f"{side}_model")
        if backend not in ("simulated", "handoff") and not str(name).strip():
            raise ConfigError(f"model.{side}_model: must name a model for backend {backend!r}",
                              f"e.g. `{side}_model: gpt-4o-mini`")
    _check_handoff_dir(model.teacher.handoff.dir)


def _check_command_student(command: Any) -> None:
    answers = _agents().answer_names()
    if command.preset == "generic" and not command.argv:
        raise ConfigError("model.student.command.argv: student_backend 'command' with preset 'generic' "
                          "needs the command to run",
                          f"set model.student.command.preset: {'|'.join(a for a in answers if a != 'generic')}, "
                          "or argv: [my-agent, '{prompt}']")
    if command.preset not in answers:
        raise ConfigError(f"model.student.command.preset: '{command.preset}' is an agent preset",
                          f"use student_backend: agent for coding agents on agentic tasks "
                          f"({', '.join(_agents().student_names())}), or preset {'|'.join(answers)} with "
                          "student_backend: command")


def _check_prices(cfg: Any) -> None:
    for model_name, price in cfg.prices.items():
        for kind, usd in price.items():
            if usd < 0:
                raise ConfigError(f"prices.{model_name}.{kind}: must be >= 0, got {usd!r}",
                                  "prices are USD per 1M tokens")


def _check_proposers(opt: Any, teacher_backend: str) -> None:
    """optimizer.proposers: known names (the proposer table's), no repeats, each with the teacher it needs; and a
    schedule that switches to a proposer that can run, not to the only one already used."""
    choices = proposer_table.names()
    schedule = opt.proposer_schedule
    for key, name in [*((f"optimizer.proposers[{i}]", n) for i, n in enumerate(opt.proposers)),
                      *([("optimizer.proposer_schedule.switch_to", schedule.switch_to)] if schedule.switch_to else [])]:
        if name not in choices:
            close = difflib.get_close_matches(str(name), choices, n=1, cutoff=0.6)
            raise ConfigError(f"{key}: {_short(name)} is not one of {', '.join(choices)}",
                              f"did you mean '{close[0]}'?" if close else f"use one or more of: {', '.join(choices)}")
    for i, name in enumerate(opt.proposers):
        if name in opt.proposers[:i]:
            raise ConfigError(f"optimizer.proposers[{i}]: {name!r} is named twice",
                              "name each proposer once; optimizer.proposals sets how many candidates each makes")
    named = [("optimizer.proposers", n) for n in opt.proposers]
    if schedule.switch_to:
        named.append(("optimizer.proposer_schedule.switch_to", schedule.switch_to))
        if proposer_table.configured(opt.proposers, teacher_backend) == (schedule.switch_to,):
            raise ConfigError(f"optimizer.proposer_schedule.switch_to: {schedule.switch_to!r} already proposes alone",
                              "switch to another proposer, or add one to optimizer.proposers, e.g. "
                              "`proposers: [reflect]` with `switch_to: agent`")
    for key, name in named:
        need = proposer_table.TABLE[name].needs_teacher_backend
        if need and teacher_backend != need:
            raise ConfigError(f"{key}: {name!r} needs model.teacher_backend: {need}, got {teacher_backend!r}",
                              f"set model.teacher_backend: {need} and model.teacher.command.preset "
                              f"({', '.join(_agents().student_names())}); its chat side answers reflect's questions")


def _check_handoff_dir(value: str) -> None:
    """The handoff folder is relative to the repository root and stays inside it (llm/handoff.py checks the real
    path when it is used)."""
    path = PurePosixPath(value or ".")
    if path.is_absolute() or ".." in path.parts or (value or "").startswith("~"):
        raise ConfigError(f"model.teacher.handoff.dir: {value!r} is not a folder inside the repository",
                          "give a path relative to the repository root (e.g. .skillgit/handoff), or leave it empty "
                          "for <git dir>/skillgit/handoff")


def _check_azure_auth(side: str, backend: str, bcfg: Any) -> None:
    """auth_mode and its companions only mean something where Azure OpenAI is called."""
    azure = backend == "azure" or (backend == "openai" and bool(bcfg.azure_endpoint))
    if bcfg.auth_mode not in ("auto", "api_key") and not azure:
        raise ConfigError(f"model.{side}.auth_mode: {bcfg.auth_mode!r} signs in to Azure OpenAI, but "
                          f"model.{side}_backend is {backend!r}",
                          f"set model.{side}_backend: azure (with model.{side}.azure_endpoint), "
                          f"or remove model.{side}.auth_mode")
    if bcfg.managed_identity_client_id and bcfg.auth_mode not in ("managed_identity", "azure_ad"):
        raise ConfigError(f"model.{side}.managed_identity_client_id: only used with auth_mode managed_identity "
                          f"or azure_ad, but auth_mode is {bcfg.auth_mode!r}",
                          f"set model.{side}.auth_mode: managed_identity, or remove managed_identity_client_id")
    if bcfg.azure_ad_scope is not None and not re.fullmatch(r"(https?|api)://\S+", bcfg.azure_ad_scope):
        raise ConfigError(f"model.{side}.azure_ad_scope: expected a scope URI, got {_short(bcfg.azure_ad_scope)}",
                          "e.g. https://cognitiveservices.azure.com/.default (the default)")


# ---------------------------------------------------------------------------------------------- unknown keys
# Names people bring from other trainers, or guess, for a key of ours that spelling alone cannot reach (`lr` is
# nothing like `learning_rate`): looked up by the unknown key's last part, wherever it was written.
KEY_ALIASES = {"lr": "optimizer.learning_rate", "learning_rate": "optimizer.learning_rate",
               "epochs": "train.num_epochs", "epoch": "train.num_epochs", "steps": "train.max_steps",
               "file": "skill.path", "skill_file": "skill.path", "skill_path": "skill.path"}


def suggest_key(dotted: str, known: Iterable[str]) -> list[str]:
    """The known dotted keys the user most likely meant by `dotted` (best first, at most three). Never a section
    the key already sits in (`optimizer.lr` is not answered with `optimizer`)."""
    known = sorted(k for k in set(known) if k != dotted and not dotted.startswith(k + "."))
    prefix, _, leaf = dotted.rpartition(".")
    siblings = [k.rpartition(".")[2] for k in known if k.rpartition(".")[0] == prefix]
    role = _role_key(dotted, known)
    if role:
        return [role]
    close = difflib.get_close_matches(leaf, siblings, n=1, cutoff=0.7)
    if close:
        return [f"{prefix}.{close[0]}" if prefix else close[0]]
    alias = KEY_ALIASES.get(leaf.lower().replace("-", "_"))
    if alias in known:
        return [alias]
    same_leaf = [k for k in known if k.rpartition(".")[2] == leaf]
    if same_leaf:
        return same_leaf[:3]
    close = difflib.get_close_matches(dotted, known, n=1, cutoff=0.75)
    if close:
        return close
    close = difflib.get_close_matches(leaf, siblings, n=1, cutoff=0.5)
    return [f"{prefix}.{close[0]}" if prefix else close[0]] if close else []


def _role_key(dotted: str, known: list[str]) -> str | None:
    """`model.student.model` → `model.student_model`, `model.teacher_base_url` → `model.teacher.base_url`: a
    role's backend and model sit beside its settings section, and the two shapes are easy to mix up."""
    parts = dotted.split(".")
    if len(parts) == 3 and parts[0] == "model" and f"model.{parts[1]}_{parts[2]}" in known:
        return f"model.{parts[1]}_{parts[2]}"
    if len(parts) == 2 and parts[0] == "model":
        role, _, rest = parts[1].partition("_")
        if rest and f"model.{role}.{rest}" in known:
            return f"model.{role}.{rest}"
    return None


def mapping_hint(dotted: str, value: Any) -> str:
    """The fix for a section written as a plain value: `model.teacher: openai` meant the role's backend."""
    role = dotted.rpartition(".")[2]
    if dotted in ("model.teacher", "model.student") and isinstance(value, str):
        shown = value if re.fullmatch(r"[\w.:/-]{1,40}", value) else _short(value, 30)
        return (f"the backend goes in `model.{role}_backend: {shown}` (the model in "
                f"`model.{role}_model`); `model.{role}:` holds the role's settings as `key: value` lines "
                "(base_url, api_key_env, …)")
    return "write it as `key: value` lines under the section"


def unknown_key_error(dotted: str, known: Iterable[str], siblings: Iterable[str]) -> ConfigError:
    guesses = suggest_key(dotted, known)
    if guesses:
        hint = "did you mean " + " or ".join(f"'{g}'" for g in guesses) + "?"
    else:
        section = dotted.rpartition(".")[0] or "the top level"
        hint = f"known keys under {section}: {', '.join(sorted(siblings))}"
    return ConfigError(f"unknown config key '{dotted}'", hint)
