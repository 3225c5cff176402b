"""skillgit.yaml → frozen dataclasses.

Contract: `load_config(path, overrides)` returns a fully-resolved `Config` or raises `ConfigError` whose message
names the key, the bad value and what is allowed. Unknown keys are errors (never ignored: a typo in a key
would otherwise silently train with the default). Section and key names follow SkillOpt's so its configs carry
over; its older names are accepted as aliases (see `ALIASES`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from skillgit.errors import ConfigError


# ---------------------------------------------------------------------------------------------- schema
@dataclass(frozen=True)
class SkillCfg:
    path: str = "SKILL.md"  # relative to the repository root
    branch: str = "main"  # the skill branch; only ever fast-forwarded to gate-accepted candidates
    allow_front_matter_edits: bool = False


@dataclass(frozen=True)
class CommandCfg:
    preset: str = "generic"  # claude | codex | generic
    argv: tuple[str, ...] = ()  # generic: the command; "{prompt}", "{prompt_file}", "{skill_file}", "{workspace}" are filled in
    install_path: str = ""  # where the skill goes inside the scratch workspace; preset default when empty
    timeout_s: float = 600.0
    env_passthrough: tuple[str, ...] = ()  # extra environment variables the agent may see


@dataclass(frozen=True)
class BackendCfg:
    base_url: str | None = None  # OpenAI-compatible servers (vLLM, llama.cpp, Ollama, LM Studio) and proxies
    api_key_env: str | None = None  # name of the variable holding the key; backend default when None
    api: str = "chat"  # chat | responses (openai)
    json_mode: str = "auto"  # auto | json_schema | json_object | prompt
    azure_endpoint: str | None = None
    azure_deployment: str | None = None
    api_version: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    thinking_budget: int | None = None  # anthropic extended thinking
    seed: int | None = None
    timeout_s: float = 120.0
    max_retries: int = 5
    concurrency: int = 8
    command: CommandCfg = field(default_factory=CommandCfg)


@dataclass(frozen=True)
class SimulatedCfg:
    """The offline simulated world (see skillgit/world): a documented simulation, never a silent fallback."""

    seed: int = 0
    num_rules: int = 6
    noise: float = 0.05  # probability that the student slips on a rule the skill does convey
    malformed_rate: float = 0.03  # probability that a teacher reply is not valid JSON
    latency_s: float = 0.0


@dataclass(frozen=True)
class ModelCfg:
    teacher_backend: str = "simulated"  # simulated | openai | azure | anthropic
    teacher_model: str = "sim-teacher"
    student_backend: str = "simulated"  # simulated | openai | azure | anthropic | command
    student_model: str = "sim-student"
    teacher: BackendCfg = field(default_factory=BackendCfg)
    student: BackendCfg = field(default_factory=BackendCfg)
    simulated: SimulatedCfg = field(default_factory=SimulatedCfg)


@dataclass(frozen=True)
class TrainCfg:
    num_epochs: int = 4
    batch_size: int = 40
    max_steps: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class GradientCfg:
    minibatch_size: int = 8
    analyst_workers: int = 16
    merge_batch_size: int = 8


@dataclass(frozen=True)
class OptimizerCfg:
    learning_rate: int = 4  # edit budget at the start of the schedule
    min_learning_rate: int = 2
    lr_scheduler: str = "cosine"  # constant | linear | cosine | autonomous
    lr_control_mode: str = "scheduled"  # scheduled | autonomous
    skill_update_mode: str = "patch"  # patch | rewrite_from_suggestions | full_rewrite_minibatch
    use_negative_buffer: bool = True
    negative_buffer_size: int = 8
    use_slow_update: bool = True
    slow_update_samples: int = 8
    slow_update_gate_with_selection: bool = True
    use_meta_skill: bool = True
    use_meta_reflect: bool = True


@dataclass(frozen=True)
class EvaluationCfg:
    use_gate: bool = True
    gate_metric: str = "hard"  # hard | soft | mixed
    mixed_weight: float = 0.5  # weight of hard in mixed
    gate: str = "strict"  # strict | paired
    gate_margin: float = 0.0
    gate_repeats: int = 1
    paired_alpha: float = 0.1
    eval_test: bool = True  # score seed / best / final on test at the end of a run (reported only)


@dataclass(frozen=True)
class ScorerCfg:
    type: str = "exact"  # exact | normalized | contains | regex | numeric | f1 | json_field | python | command
    pattern: str | None = None  # regex
    tolerance: float = 1e-6  # numeric, absolute
    rel_tolerance: float = 0.0  # numeric, relative
    fields: tuple[str, ...] = ()  # json_field
    callable: str | None = None  # python: "module:function"
    command: str | None = None  # command verifier (shell)
    timeout_s: float = 30.0
    case_sensitive: bool = True  # exact / contains


@dataclass(frozen=True)
class EnvCfg:
    tasks: str = "tasks.jsonl"  # a JSONL/YAML file, or a directory with train/ val/ test/
    split_ratio: str = "2:1:7"  # train:val:test
    split_seed: int = 0
    split_dir: str | None = None
    workers: int = 16
    scorer: ScorerCfg = field(default_factory=ScorerCfg)


@dataclass(frozen=True)
class BudgetCfg:
    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None


@dataclass(frozen=True)
class PromptsCfg:
    dir: str | None = None  # a folder whose <stage>.md files override the shipped prompt templates


@dataclass(frozen=True)
class Config:
    skill: SkillCfg = field(default_factory=SkillCfg)
    model: ModelCfg = field(default_factory=ModelCfg)
    train: TrainCfg = field(default_factory=TrainCfg)
    gradient: GradientCfg = field(default_factory=GradientCfg)
    optimizer: OptimizerCfg = field(default_factory=OptimizerCfg)
    evaluation: EvaluationCfg = field(default_factory=EvaluationCfg)
    env: EnvCfg = field(default_factory=EnvCfg)
    budget: BudgetCfg = field(default_factory=BudgetCfg)
    prices: dict[str, dict[str, float]] = field(default_factory=dict)  # model → USD per 1M tokens
    prompts: PromptsCfg = field(default_factory=PromptsCfg)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# Older / SkillOpt names → ours (dotted paths).
ALIASES: dict[str, str] = {
    "model.optimizer_backend": "model.teacher_backend",
    "model.optimizer_model": "model.teacher_model",
    "model.target_backend": "model.student_backend",
    "model.target_model": "model.student_model",
}


# ---------------------------------------------------------------------------------------------- loading
def _build(cls, data: Any, prefix: str):
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix or 'config'}: expected a mapping, got {type(data).__name__} {data!r}",
                          "write it as `key: value` lines under the section")
    kwargs: dict[str, Any] = {}
    known = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        dotted = ALIASES.get(dotted, dotted)
        name = dotted.rsplit(".", 1)[-1]
        if name not in known:
            raise ConfigError(f"unknown config key '{dotted}'",
                              f"known keys under '{prefix or 'top level'}': {', '.join(sorted(known))}")
        sub = known[name].default_factory if known[name].default_factory is not dataclasses.MISSING else None
        if sub is not None and dataclasses.is_dataclass(sub):
            kwargs[name] = _build(sub, value or {}, dotted)
        else:
            kwargs[name] = tuple(value) if isinstance(value, list) else value
    return cls(**kwargs)


def config_from_dict(data: dict[str, Any]) -> Config:
    return _build(Config, data or {}, "")


def load_config(path: Path | str | None, overrides: tuple[str, ...] | list[str] = ()) -> Config:
    """Read `path` (None = all defaults) and apply `key=value` overrides."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise ConfigError(f"config file not found: {p}", "run `skillgit init` or pass --config PATH")
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{p}: not valid YAML: {exc}".splitlines()[0], "fix the YAML syntax") from None
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"override '{item}' is not key=value", "write it as --set section.key=value")
        node = data
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = yaml.safe_load(raw)
    return config_from_dict(data)
