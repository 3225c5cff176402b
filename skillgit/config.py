"""skillgit.yaml → frozen dataclasses.

Contract: `load_config(path, overrides)` returns a fully-resolved, validated `Config` or raises `ConfigError`
whose message names the key, the bad value and what is allowed. Unknown keys are errors (never ignored: a typo
in a key would otherwise silently train with the default) and come with a "did you mean" hint. Section and key
names follow SkillOpt's so its configs carry over; its older names are accepted as aliases (see `ALIASES`).

Resolution order, later wins: (the user config: `config_layers.py`) → `_base_` files (in list order, each resolved
recursively relative to the file that names it) → the file itself → overrides (`-c`/`--set a.b=c`, or SkillOpt's
`--cfg-options a.b=c d.e=f`). Mappings are deep-merged; lists and scalars replace. Override values are YAML scalars.

How YAML is read (YAML 1.2-style scalars, duplicate keys refused) and how a `key=value` override is split and
parsed: `config_yaml.py`. The pieces `config_layers.py` composes the layers from (and records where each key came
from) are public here: `read_file` (a file and its `_base_` chain), `normalize` (aliases, shorthands),
`deep_merge` (how two layers merge) and `build` (a section from a mapping, every key and value checked).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from skillgit.config_validate import check_config, check_field, coerce, mapping_hint, unknown_key_error
from skillgit.config_yaml import load_cached, split_override
from skillgit.errors import ConfigError
from skillgit.frozen import Frozen
from skillgit.proposer_table import ProposerScheduleCfg


# ---------------------------------------------------------------------------------------------- schema
@dataclass(frozen=True, eq=False, repr=False)
class SkillCfg(Frozen):
    """`skill:` — the skill file or package, the branch it trains on, and its size limits."""

    path: str = "SKILL.md"  # relative to the repository root; a folder is a skill package (SKILL.md, references/…)
    branch: str = "main"  # the skill branch; only ever fast-forwarded to gate-accepted candidates
    allow_front_matter_edits: bool = False
    new_files: tuple[str, ...] = ("references/**", "scripts/**")  # a package's files a teacher may create
    max_tokens: int = 5000  # the skill body's size budget (≈ 4 characters a token); a bigger candidate is rejected
    max_description_chars: int = 1024  # front matter `description` (Claude Code's limit)
    # the host's listing of every skill's name + description (Claude Code's reported budget): the activation track
    # rejects a description that pushes a library's listing over it before scoring (skillgit/library)
    listing_budget: int = 15000


@dataclass(frozen=True, eq=False, repr=False)
class CommandCfg(Frozen):
    """`model.<role>.command:` — how a command or agent backend runs its CLI (preset, argv, permissions)."""

    # command backend: claude | codex | generic; agent backend: claude | codex | copilot | opencode | simulated |
    # generic
    preset: str = "generic"
    # generic: the command; placeholders {prompt} {prompt_file} {workspace} {model} (+ {skill_file} {answer_file}
    # for command; {name} {seed} {sample} {permission_mode} {sandbox} for agent)
    argv: tuple[str, ...] = ()
    install_path: str = ""  # where the skill goes inside the scratch workspace; preset default when empty
    timeout_s: float = 600.0
    env_passthrough: tuple[str, ...] = ()  # extra environment variables the agent may see
    # agent students (student_backend: agent): what the agent may do in its throwaway workspace
    permission_mode: str = "acceptEdits"  # claude --permission-mode (never bypassPermissions)
    allowed_tools: tuple[str, ...] = ("Bash", "Edit", "Write", "Read", "Glob", "Grep", "Skill")  # claude
    max_turns: int | None = None  # claude --max-turns
    sandbox: str = "workspace-write"  # codex exec -s
    output: str = ""  # how to read the agent's stdout (claude-stream | codex-json | copilot-json | opencode-json |
    #                   text); empty: the preset's
    # hermetic: every rollout gets a fresh config home and the agent's isolation switches (no user skills, hooks,
    # memory, plugins or MCP servers); user: the user's own profile (recorded in the agent's fingerprint)
    profile: str = "hermetic"
    # write confinement of every rollout command (skillgit/sandbox.py): auto (Landlock when the kernel offers it, else
    # a notice) | landlock (refuse to run without it) | off
    confine: str = "auto"


@dataclass(frozen=True, eq=False, repr=False)
class HandoffCfg(Frozen):
    """`model.teacher.handoff:` — where a handoff teacher (skillgit/llm/handoff.py) exchanges its prompts."""

    dir: str = ""  # relative to the repository root, inside it; empty: <git dir>/skillgit/handoff
    wait_s: float = 0.0  # wait this long for each answer, then stop (exit 5); `skillgit train` resumes


@dataclass(frozen=True, eq=False, repr=False)
class BackendCfg(Frozen):
    """`model.teacher:` / `model.student:` — one role's endpoint, sampling, retries and concurrency."""

    base_url: str | None = None  # OpenAI-compatible servers (vLLM, llama.cpp, Ollama, LM Studio) and proxies
    api_key_env: str | None = None  # name of the variable holding the key; backend default when None
    api: str = "chat"  # chat | responses (openai)
    json_mode: str = "auto"  # auto | json_schema | json_object_schema (llama.cpp) | json_object | prompt
    azure_endpoint: str | None = None
    azure_deployment: str | None = None
    api_version: str | None = None
    # Azure OpenAI sign-in: auto (the key when set, else Entra ID when azure-identity is installed) | api_key |
    # azure_ad (DefaultAzureCredential) | managed_identity | azure_cli; the last three need the `azure` extra
    auth_mode: str = "auto"
    managed_identity_client_id: str | None = None  # a user-assigned identity (managed_identity, azure_ad)
    azure_ad_scope: str | None = None  # the token's scope; None: https://cognitiveservices.azure.com/.default
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    thinking_budget: int | None = None  # anthropic extended thinking
    seed: int | None = None
    timeout_s: float = 120.0
    max_retries: int = 5
    concurrency: int = 16  # parallel calls per role; keep >= env.workers and gradient.analyst_workers
    # What the call journal keys this role's calls on, instead of backend:model (e.g. "qwen2.5-coder-7b-q4" for a
    # local server whose port changes between restarts); None: the backend's own identity, never the endpoint.
    cache_identity: str | None = None
    command: CommandCfg = field(default_factory=CommandCfg)
    handoff: HandoffCfg = field(default_factory=HandoffCfg)


@dataclass(frozen=True, eq=False, repr=False)
class SimulatedCfg(Frozen):
    """The offline simulated world (see skillgit/world): a documented simulation, never a silent fallback."""

    seed: int = 0
    num_rules: int = 6  # hidden house rules, of 8
    noise: float = 0.05  # per answer: probability that the student ignores one instruction that matters
    malformed_rate: float = 0.03  # probability that a teacher reply is not valid JSON
    latency_s: float = 0.0
    lucky_rate: float = 0.02  # per answer: probability that one uncovered rule is applied anyway
    min_fields: int = 1  # fields per record (1..5)
    max_fields: int = 4
    dilution_lines: int = 40  # skills longer than this (non-empty lines) make the student slip more…
    dilution_per_line: float = 0.005  # …by this much per extra line (slip rate capped at 0.5)
    vague_rate: float = 0.2  # teacher: share of vague, useless ideas
    harmful_rate: float = 0.1  # teacher: share of harmful ideas
    off_target_rate: float = 0.15  # teacher: probability of an extra idea unrelated to any symptom per call


@dataclass(frozen=True, eq=False, repr=False)
class ModelCfg(Frozen):
    """`model:` — which backend and model play teacher and student, and each role's settings."""

    teacher_backend: str = "simulated"  # simulated | openai | azure | anthropic | agent | handoff
    teacher_model: str = "sim-teacher"
    student_backend: str = "simulated"  # simulated | openai | azure | anthropic | command
    student_model: str = "sim-student"
    teacher: BackendCfg = field(default_factory=BackendCfg)
    student: BackendCfg = field(default_factory=BackendCfg)
    simulated: SimulatedCfg = field(default_factory=SimulatedCfg)


@dataclass(frozen=True, eq=False, repr=False)
class TrainCfg(Frozen):
    """`train:` — epochs, batch size, a step cap and the run's seed."""

    num_epochs: int = 4
    batch_size: int = 40
    max_steps: int | None = None
    seed: int = 0


@dataclass(frozen=True, eq=False, repr=False)
class GradientCfg(Frozen):
    """`gradient:` — how reflection splits a batch into minibatches and merges their proposals."""

    minibatch_size: int = 8
    analyst_workers: int = 16
    merge_batch_size: int = 8


# -- deep reflect (issue 27; skillgit/loop/deep_reflect.py)
@dataclass(frozen=True, eq=False, repr=False)
class DeepReflectCfg(Frozen):
    """`optimizer.deep_reflect`: before reflecting on a minibatch the teacher probes up to `failures` of its failed
    (or `successes` of its successful) train trajectories over at most `turns` turns: a follow-up question to the
    student or a re-run with a hint it writes; reflect then reads the transcripts (SkillOpt's
    `gradient.use_deep_reflect`, `deep_reflect_failures`, `deep_reflect_successes`)."""

    enabled: bool = False
    failures: int = 4
    successes: int = 2
    turns: int = 2


@dataclass(frozen=True, eq=False, repr=False)
class OptimizerCfg(Frozen):
    """`optimizer:` — the edit budget (learning rate) and its schedule, update mode, proposers and recall."""

    learning_rate: int = 4  # edit budget at the start of the schedule
    min_learning_rate: int = 2
    lr_scheduler: str = "cosine"  # constant | linear | cosine | autonomous
    lr_control_mode: str = "scheduled"  # scheduled | autonomous
    skill_update_mode: str = "patch"  # one of config_validate.UPDATE_MODES
    use_negative_buffer: bool = True
    negative_buffer_size: int = 8
    use_slow_update: bool = True
    slow_update_samples: int = 8
    slow_update_gate_with_selection: bool = True
    use_meta_skill: bool = True
    use_meta_reflect: bool = True
    max_edits_per_reply: int = 16  # edits beyond this in one teacher reply are recorded and dropped
    # An edit that copies an expected answer, or this many consecutive words of one, into the skill is rejected as
    # leakage (0: off)
    leak_ngram: int = 8
    max_edit_chars: int = 4000  # an edit whose target or content is longer is recorded and dropped
    # Parallel proposals: P candidates per step and proposer, gated in one val wave with the bar raised for their
    # number (Bonferroni); the best that passes is kept, the others are rejected (they join the negative buffer).
    proposals: int = 1
    proposers: tuple[str, ...] = ()  # reflect, agent or both (proposer_table.py); (): the teacher backend's own
    proposer_schedule: ProposerScheduleCfg = field(default_factory=ProposerScheduleCfg)  # a switch on a plateau
    # Recall (SkillOpt-Sleep's recall_k; loop/recall.py): each reflect minibatch also shows the k most similar
    # train trajectories of earlier steps (this run's and earlier runs' on the branch; scope skill: any branch of
    # the same skill file), contrasting ones first; each adds at most recall_chars characters. 0: off.
    recall_k: int = 0
    recall_chars: int = 1200
    recall_scope: str = "branch"  # branch | skill
    deep_reflect: DeepReflectCfg = field(default_factory=DeepReflectCfg)  # probes before reflect (deep_reflect.py)


@dataclass(frozen=True, eq=False, repr=False)
class EvaluationCfg(Frozen):
    """`evaluation:` — the gate: its modes, metric, samples, nulls and what is scored on val and test."""

    use_gate: bool = True
    gate_metric: str = "hard"  # hard | soft | mixed
    mixed_weight: float = 0.5  # weight of hard in mixed
    # Gate modes, all of which must pass (a list, or one string joined with '+': `significance+per_item`):
    # strict | significance | paired (strict + permutation test) | per_item | two_split. per_item and two_split are
    # guards: named without strict, significance or paired they imply strict. Every test is over val items (each
    # item's repeats averaged first). Default chosen by bench/gate_calibration.py (bench/README.md, "Gate
    # calibration"): at most 5 % false accepts under the resampling, trade-off and drift nulls at 10-100 items.
    gate: tuple[str, ...] = ("significance", "per_item")
    gate_margin: float = 0.0
    gate_repeats: int = 3  # samples per val item (1 when the student's repeats are copies: temperature 0)
    paired_alpha: float = 0.05  # the permutation test's bar (and per_item's and the null controls')
    gate_test: str = "permutation"  # significance: permutation (sign-flip over items, p < alpha: exact) | stderr
    gate_k: float = 1.75  # gate_test: stderr: the mean item gain must exceed this many standard errors
    item_tolerance: float = 0.7  # per_item: a drop larger than this, beyond noise, is a regression
    eval_test: bool = True  # score seed / best / final on test at the end of a run (reported only)
    # The gate decides only when at least this share of val items was scored for both skills (unscored items are
    # retried `unscored_retries` times first); below it the candidate is rejected as "cannot judge".
    min_val_coverage: float = 0.9
    unscored_retries: int = 1
    # Null controls. The incumbent is scored again in the same wave as its candidates, and its earlier scoring is
    # a control: when the two disagree beyond the bar the gate refuses to judge (the student drifted). true: reuse
    # the incumbent's earlier score instead (half the gate's calls) — risks reading provider drift as gain.
    reuse_incumbent_score: bool = False
    # Also score a byte-identical copy of the incumbent in each round (a second control; one more val scoring per
    # step): the round's own noise floor, and a refusal when two scorings of one text disagree.
    control_copy: bool = False
    # How a run spends α over its gates (loop/spending.py): none (each gate at paired_alpha) | fdr (LORD++: the
    # expected share of false accepts among a run's accepts ≤ α) | fwer (alpha spending: P(any false accept) ≤ α).
    across_steps: str = "none"

    def __post_init__(self) -> None:
        # Invariant: `gate` is a non-empty tuple of known mode names, without repeats, in the order given — whether
        # it came from YAML (a list, or 'a+b'), from `--set evaluation.gate=a+b` or from Python (a plain string).
        object.__setattr__(self, "gate", self.parse_gate(self.gate))

    @staticmethod
    def parse_gate(value: Any, key: str = "evaluation.gate") -> tuple[str, ...]:
        """'significance+per_item', ['significance', 'per_item'] or ('a+b', 'c') → a flat tuple of mode names."""
        import difflib

        from skillgit.config_validate import GATE_MODES

        parts = [value] if isinstance(value, str) else list(value or ())
        names: list[str] = []
        for part in parts:
            for name in re.split(r"[+,\s]+", str(part).strip().lower()):
                if name and name not in names:
                    names.append(name)
        if not names:
            raise ConfigError(f"{key}: names no gate mode",
                              f"use one or more of {', '.join(GATE_MODES)} joined with '+', e.g. significance")
        for name in names:
            if name not in GATE_MODES:
                close = difflib.get_close_matches(name, GATE_MODES, n=1, cutoff=0.6)
                raise ConfigError(f"{key}: {name!r} is not one of {', '.join(GATE_MODES)}",
                                  f"did you mean '{close[0]}'?" if close
                                  else "combine modes with '+', e.g. `gate: significance+per_item`")
        return tuple(names)


@dataclass(frozen=True, eq=False, repr=False)
class ScorerCfg(Frozen):
    """`env.scorer:` — how an answer is scored (a type of `scorers.SCORER_TYPES` and its settings)."""

    type: str = "exact"  # one of scorers.SCORER_TYPES (its registry)
    pattern: str | None = None  # regex
    tolerance: float = 1e-6  # numeric, absolute
    rel_tolerance: float = 0.0  # numeric, relative
    fields: tuple[str, ...] = ()  # json_field
    callable: str | None = None  # python: "module:function"
    command: str | None = None  # command verifier (shell)
    timeout_s: float = 30.0
    case_sensitive: bool = True  # exact / contains / regex / json_field string values
    threshold: float = 1.0  # f1: hard = 1 when token F1 >= threshold (1.0: same tokens, any order)


@dataclass(frozen=True, eq=False, repr=False)
class EnvCfg(Frozen):
    """`env:` — the tasks, their split, the environment adapter, workers and where rollouts run."""

    # An environment adapter (`skillgit env list`): it reads env.tasks in its benchmark's format, runs each item
    # (one call or several turns) and scores it with the paper's metric, in place of env.scorer; None: plain tasks
    name: str | None = None
    options: dict[str, Any] = field(default_factory=dict, hash=False)  # the environment's settings (max_turns)
    tasks: str = "tasks.jsonl"  # a JSONL/YAML file, or a directory with train/ val/ test/ (env.name: its data)
    split_ratio: str = "2:1:7"  # train:val:test
    split_seed: int = 0
    split_dir: str | None = None
    workers: int = 16
    keep_workspaces: bool = False  # agentic tasks: keep each rollout's workspace (debugging)
    executor: str = "threads"  # threads | ray: where rollouts, agentic workspaces and gate scoring run
    ray_address: str | None = None  # an existing Ray cluster ("ray://host:10001", "auto"); None: a local one
    max_reply_chars: int = 1_000_000  # a model reply longer than this is an error (recorded), never journaled whole
    scorer: ScorerCfg = field(default_factory=ScorerCfg)


@dataclass(frozen=True, eq=False, repr=False)
class BudgetCfg(Frozen):
    """`budget:` — caps on calls, tokens, cost and the agent teacher's turns and seconds over a run."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_agent_turns: int | None = None  # the agent teacher's turns over the run (the next call's cap: what is left)
    max_agent_seconds: float | None = None  # the agent teacher's wall seconds over the run (likewise)


@dataclass(frozen=True, eq=False, repr=False)
class PromptsCfg(Frozen):
    """`prompts:` — a folder of prompt templates that override the shipped ones."""

    dir: str | None = None  # a folder whose <stage>.md files override the shipped prompt templates


@dataclass(frozen=True, eq=False, repr=False)
class Config(Frozen):
    """A whole `skillgit.yaml`, resolved (`load_config`, `config_layers.load`): every section typed."""

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
    # `skillgit sleep`'s section, validated by skillgit.sleep.settings.SleepSettings (docs/SLEEP.md); kept here so
    # every other command accepts a skillgit.yaml that has one
    sleep: dict[str, Any] = field(default_factory=dict)
    # A skill library: skill name → {path, tasks, triggers, branch}, validated by skillgit.library.config
    # (`skillgit train --skill NAME`); kept here so every command accepts a skillgit.yaml that has one
    skills: Any = field(default_factory=dict)  # a mapping (name → spec) or a list of paths / globs

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# Older / SkillOpt names → ours (dotted paths, same section).
ALIASES: dict[str, str] = {
    "model.optimizer_backend": "model.teacher_backend",
    "model.optimizer_model": "model.teacher_model",
    "model.target_backend": "model.student_backend",
    "model.target_model": "model.student_model",
}

# Keys that change how fast or how far a run goes, not what it computes; a caller may leave them out of
# `config_digest` so that resuming with, say, fewer workers is still the same run.
RUNTIME_ONLY_KEYS: tuple[str, ...] = (
    "model.teacher.concurrency", "model.student.concurrency", "model.teacher.timeout_s", "model.student.timeout_s",
    "model.teacher.max_retries", "model.student.max_retries", "model.simulated.latency_s", "gradient.analyst_workers",
    "env.workers", "env.executor", "env.ray_address", "env.scorer.timeout_s", "budget", "train.max_steps", "sleep",
    "model.teacher.cache_identity", "model.student.cache_identity", "env.keep_workspaces",
    "model.teacher.handoff.wait_s", "model.student.handoff",
)


# ---------------------------------------------------------------------------------------------- schema walk
@functools.lru_cache(maxsize=None)
def _hints(cls) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _section(cls, name: str):
    """The dataclass type of field `name` of `cls`, or None when the field is a plain value."""
    hint = _hints(cls).get(name)
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def known_keys(cls=None, prefix: str = "") -> list[str]:
    """Every dotted key of the schema, sections included (e.g. 'train', 'train.batch_size')."""
    cls = cls or Config
    out: list[str] = []
    for f in dataclasses.fields(cls):
        dotted = f"{prefix}.{f.name}" if prefix else f.name
        out.append(dotted)
        sub = _section(cls, f.name)
        if sub is not None:
            out.extend(known_keys(sub, dotted))
    return out


def normalize(data: Any, cls=None, prefix: str = "") -> Any:
    """Rename aliases to our keys and expand shorthands (`scorer: exact` → `scorer: {type: exact}`), recursively
    through the known sections of `cls` (default: the whole `Config`; `prefix`: its dotted key). Unknown keys are
    kept so that building can name them. ConfigError when a key is given under two of its names."""
    cls = cls or Config
    if cls is ScorerCfg and isinstance(data, str):
        return {"type": data}
    if not isinstance(data, dict):
        return data
    out: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = str(raw_key)
        dotted = f"{prefix}.{key}" if prefix else key
        canonical = ALIASES.get(dotted, dotted).rpartition(".")[2]
        if canonical in out:
            raise ConfigError(f"{dotted}: given twice (also as '{prefix + '.' if prefix else ''}{canonical}')",
                              "keep only one of the two names")
        sub = _section(cls, canonical) if dataclasses.is_dataclass(cls) else None
        out[canonical] = normalize(value, sub, f"{prefix}.{canonical}" if prefix else canonical) if sub else value
    return out


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` merged onto `base` as config layers merge (a new mapping; neither is changed): mappings merged key by
    key, recursively; lists and scalars replaced."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


# ---------------------------------------------------------------------------------------------- building
def build(cls, data: Any, prefix: str = ""):
    """A `cls` (`Config` or one of its sections, at dotted key `prefix`) from a normalized mapping: every key
    known, every value coerced to its field's type and checked on its own; keys left out keep their defaults.
    ConfigError naming the dotted key. The checks across keys are `config_from_dict`'s (`check_config`)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix or 'config'}: expected a mapping, got {type(data).__name__} {data!r}"[:200],
                          mapping_hint(prefix, data))
    hints = _hints(cls)
    fields_ = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if key not in fields_:
            raise unknown_key_error(dotted, known_keys(), fields_)
        sub = _section(cls, key)
        if sub is not None:
            kwargs[key] = build(sub, value, dotted)
            continue
        f = fields_[key]
        default = f.default if f.default is not dataclasses.MISSING else None
        kwargs[key] = coerce(value, hints[key], dotted, default)
        check_field(dotted, kwargs[key], default)
    return cls(**kwargs)


def config_from_dict(data: dict[str, Any] | None) -> Config:
    """Build and validate a Config from an already-merged mapping (no `_base_` here: that needs a file)."""
    data = data or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config: expected a mapping at the top level, got {type(data).__name__}",
                          "write `section:` lines with indented `key: value` lines under them")
    if "_base_" in data:
        raise ConfigError("_base_: only allowed in a config file", "load the file with load_config(path)")
    cfg = build(Config, normalize(data), "")
    check_config(cfg)
    return cfg


def _cache_file(path: Path) -> Path | None:
    """Where the parsed text of a config file at a repository's top (not a `_base_` file) is kept across processes
    (`config_yaml.load_cached`): beside `skillgit log`'s caches, in the repository's `.git` folder; None elsewhere
    (a linked worktree, whose `.git` is a file, or a folder that is no repository's top)."""
    git = path.parent / ".git"
    return git / "skillgit" / "cache" / "config.json" if git.is_dir() else None


def read_file(path: Path, read: list[tuple[Path, dict[str, Any]]] | None = None, chain: tuple[Path, ...] = ()
              ) -> dict[str, Any]:
    """The config file at `path`, normalized, merged over its `_base_` files' (the whole chain checked: missing
    files, cycles, a top level that is not a mapping); `read` (when given) gets each file of the chain with its own
    data, in merge order (bases first), parsed once (`config_layers` marks where each key came from). `chain`: the
    files that named this one (the recursion; callers leave it out)."""
    path = path.resolve()
    if path in chain:
        loop = " -> ".join(os.path.relpath(p, chain[0].parent) for p in (*chain[chain.index(path):], path))
        raise ConfigError(f"_base_ inheritance cycle: {loop}", "remove one of the _base_ references")
    if not path.is_file():
        where = f" (named by _base_ in {chain[-1]})" if chain else ""
        raise ConfigError(f"config file not found: {path}{where}",
                          "fix the path (relative to the file that names it)" if chain
                          else "run `skillgit init` or pass --config FILE")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}",
                          "check the file's permissions and encoding") from None
    data = load_cached(text, str(path), None if chain else _cache_file(path)) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}",
                          "write `section:` lines with indented `key: value` lines under them")
    bases = data.pop("_base_", None)
    if bases is None:
        bases = []
    elif isinstance(bases, str):
        bases = [bases]
    if not isinstance(bases, list) or not all(isinstance(b, str) and b.strip() for b in bases):
        raise ConfigError(f"{path}: _base_: expected a file name or a list of them, got {bases!r}"[:200],
                          "e.g. `_base_: ../base.yaml`")
    merged: dict[str, Any] = {}
    for base in bases:
        merged = deep_merge(merged, read_file(path.parent / Path(base).expanduser(), read, (*chain, path)))
    own = normalize(data)
    if read is not None:
        read.append((path, own))
    return deep_merge(merged, own)


# ---------------------------------------------------------------------------------------------- overrides
def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Merge `key=value` overrides into a config mapping; returns a new, normalized mapping."""
    data = normalize(data or {})
    for item in overrides:
        key, value = split_override(item)
        nested: Any = value
        for part in reversed(key.split(".")):
            nested = {part: nested}
        data = deep_merge(data, normalize(nested))
    return data


def load_config(path: Path | str | None, overrides: tuple[str, ...] | list[str] = ()) -> Config:
    """Read `path` (None = all defaults) with its `_base_` files, apply `key=value` overrides, validate."""
    data: dict[str, Any] = read_file(Path(path)) if path is not None else {}
    return config_from_dict(apply_overrides(data, list(overrides)))


def plain(data: Any) -> Any:
    """Plain dicts and lists (YAML- and JSON-ready) of a config's `to_dict`."""
    if isinstance(data, dict):
        return {str(k): plain(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [plain(v) for v in data]
    return data
