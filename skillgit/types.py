"""The data that flows through the loop: task items, scores, trajectories, edits and their fates.

Everything here is plain, immutable where it can be, and JSON-serialisable through `to_dict`/`from_dict`,
because it ends up in git notes and must be readable by any later version (readers ignore unknown keys).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Mapping

from skillgit.frozen import Frozen

EditOp = Literal["append", "insert_after", "replace", "delete"]
EDIT_OPS: tuple[str, ...] = ("append", "insert_after", "replace", "delete")
# Names other tools and teachers use for our ops; normalised on parse so a teacher saying "add" is understood.
OP_ALIASES = {"add": "append", "insert": "insert_after", "update": "replace", "remove": "delete"}

SourceType = Literal["failure", "success", "mixed", "meta", "slow_update", "rewrite"]

ApplyStatus = Literal[
    "applied",  # target found exactly (or op needs no target)
    "applied_fuzzy",  # target found after whitespace normalisation
    "skipped_target_not_found",
    "skipped_protected_region",  # the target lies in front matter or a <!-- skillgit:NAME --> region
    "skipped_duplicate",  # the content is already in the skill word for word
    "skipped_file_not_found",  # the edit names a file the skill package does not have (and may not create)
    "skipped_invalid",  # op lacks a field it needs (no target for replace, empty content for append, ...)
    "skipped_rejected_before",  # select: the same edit was rejected earlier (negative buffer)
    "skipped_over_budget",  # select: ranked below the step's edit budget
    "error",
]


def known_fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of `data` that name a field of dataclass `cls` (forward compatibility: keys a later version
    added are ignored). The one such helper: every tolerant `from_dict` starts here."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _from_dict(cls, data: Mapping[str, Any]):
    """Build dataclass `cls` from `data`, ignoring keys this version does not know (forward compatibility)."""
    return cls(**known_fields(cls, data))


@dataclass(frozen=True, eq=False, repr=False)
class Image(Frozen):
    """An image sent with a message (a task's page image, `llm.base.load_image`): its bytes base64-encoded, its
    media type; `name` is what the text around it calls it, `digest` (sha256 of the bytes) what the call journal
    keys on."""

    name: str
    media_type: str
    data_b64: str
    digest: str

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data_b64}"


@dataclass(frozen=True, eq=False, repr=False)
class Message(Frozen):
    """One chat message of a model call (`llm.base.Request`), as the teacher prompts render them."""

    role: str  # "system" | "user" | "assistant"
    content: str
    images: tuple[Image, ...] = ()  # sent as image content parts by the openai, azure and anthropic backends


@dataclass(frozen=True, eq=False, repr=False)
class Item(Frozen):
    """One task. `expected` is the reference the scorer compares with; the student never sees it."""

    id: str
    input: str
    expected: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Item":
        return _from_dict(cls, data)


@dataclass(frozen=True, eq=False, repr=False)
class Score(Frozen):
    """A scorer's verdict: `hard` (usually 0/1), `soft` (partial credit in [0, 1]), `feedback` for the teacher."""

    hard: float
    soft: float
    feedback: str = ""

    def metric(self, name: str, mixed_weight: float = 0.5) -> float:
        if name == "hard":
            return self.hard
        if name == "soft":
            return self.soft
        return mixed_weight * self.hard + (1.0 - mixed_weight) * self.soft

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Score":
        return _from_dict(cls, data)


def is_failure(score: "Score | None") -> bool:
    """The one definition of failure: a scored run whose hard score is below 1. An unscored (unknown) run is not
    a failure, and neither is a success; everything that splits runs into failures and successes asks this."""
    return score is not None and score.hard < 1.0 - 1e-9


@dataclass(frozen=True, eq=False, repr=False)
class Usage(Frozen):
    """Tokens and money of one or more model calls. Adds up with `+`."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            round(self.cost_usd + other.cost_usd, 8),
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Usage":
        return _from_dict(cls, data)


@dataclass(frozen=True, eq=False, repr=False)
class Trajectory(Frozen):
    """One student run of one item with one skill.

    `error` is set when the run could not happen (API error after retries, agent crashed or timed out): such a
    trajectory is *unknown*, not a failure; it is excluded from scores and from reflection, and retried on resume.
    """

    item_id: str
    input: str
    output: str
    expected: Any = None
    score: Score | None = None
    trace: str = ""  # what the student did besides its final answer (tool calls, a CLI agent's log summary)
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    timings: dict[str, float] = field(default_factory=dict)  # agentic runs: setup / agent / verify seconds

    @property
    def ok(self) -> bool:
        return self.error is None and self.score is not None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Trajectory":
        data = dict(data)
        if isinstance(data.get("score"), dict):
            data["score"] = Score.from_dict(data["score"])
        if isinstance(data.get("usage"), dict):
            data["usage"] = Usage.from_dict(data["usage"])
        return _from_dict(cls, data)


@dataclass(frozen=True, eq=False, repr=False)
class Edit(Frozen):
    """One proposed change to the skill.

    - `append`: add `content` at the end of the editable body (before a trailing protected region).
    - `insert_after`: insert `content` on new lines after the line(s) containing `target`.
    - `replace`: replace `target` with `content`.
    - `delete`: remove `target`.
    `support_count` is how many analyst proposals this edit stands for after merging; `source_type` says whether it
    came from failures, successes, both, or epoch-level mechanisms; `merge_level` how many merge rounds it went through.
    """

    op: str
    content: str = ""
    target: str = ""
    rationale: str = ""
    support_count: int = 1
    source_type: str = "failure"
    merge_level: int = 0
    id: str = ""
    file: str = ""  # the file of a skill package it changes ("" = the main file, SKILL.md)

    def key(self) -> tuple[str, str, str]:
        """Identity for dedupe and for the negative buffer: what it does, not why or how often."""
        where = f"{self.file}:" if self.file else ""
        return (self.op, where + " ".join(self.target.split()).lower(), " ".join(self.content.split()).lower())

    def summary(self, width: int = 72) -> str:
        text = self.content or self.target
        text = " ".join(text.split())
        if len(text) > width:
            text = text[: width - 1] + "…"
        return f"{self.op}{f' {self.file}' if self.file else ''}: {text}"

    def with_(self, **changes: Any) -> "Edit":
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Edit":
        return _from_dict(cls, data)


@dataclass(frozen=True, eq=False, repr=False)
class EditResult(Frozen):
    """The fate of one edit in `update`: its status and, for skips and errors, why."""

    edit: Edit
    status: str
    reason: str = ""

    @property
    def applied(self) -> bool:
        return self.status in ("applied", "applied_fuzzy")

    def to_dict(self) -> dict[str, Any]:
        return {"edit": self.edit.to_dict(), "status": self.status, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EditResult":
        return cls(Edit.from_dict(data["edit"]), data["status"], data.get("reason", ""))


@dataclass(frozen=True, eq=False, repr=False)
class RejectedEdit(Frozen):
    """An entry of the negative buffer: an edit of a rejected candidate, the score change it caused, and why."""

    edit: Edit
    delta: float
    reason: str
    run: str = ""
    step: int | str = 0  # a step number, or a named epoch-level step such as "e1-slow-update"

    def to_dict(self) -> dict[str, Any]:
        return {"edit": self.edit.to_dict(), "delta": self.delta, "reason": self.reason, "run": self.run,
                "step": self.step}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RejectedEdit":
        return cls(Edit.from_dict(data["edit"]), float(data.get("delta", 0.0)), data.get("reason", ""),
                   data.get("run", ""), data.get("step", 0))
