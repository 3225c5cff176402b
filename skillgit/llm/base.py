"""The seam between skillgit and every model: the `LLM` protocol (messages in, text + usage out) and the
`Student` protocol (skill + task item in, answer out).

Contracts:
- `LLM.complete` returns a `Reply` or raises `LLMError`. It never returns an error disguised as text.
  `LLMError.retryable` says whether trying again can help (429, 5xx, timeouts, resets); the retry wrapper
  honours `retry_after`. Malformed *content* (text that is not the JSON we asked for) is not an LLMError:
  it is a normal reply that the caller's parser records and skips.
- `LLM.id` names backend and model (e.g. "openai:gpt-4o-mini"); it is part of every cache key, so two
  different models never share cached answers. Backends that talk to a model also have `cache_identity`: the
  same without endpoint host/port (or the configured `BackendCfg.cache_identity`), for the call journal (see
  `cache.model_identity`); wrappers forward it.
- Implementations are thread-safe: the loop calls them from a bounded worker pool.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, runtime_checkable

from skillgit.errors import ExitCode, SkillgitError
from skillgit.types import Image, Item, Message, Score, Usage

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".webp": "image/webp"}
MAX_IMAGE_BYTES = 20_000_000  # the providers' own per-image limit is about this


@dataclass(frozen=True)
class Request:
    """One model call. `stage` labels it for accounting ("rollout", "reflect", "merge", ...).

    `json_schema`, when set, asks the backend for a JSON object of that shape by whatever means the server
    supports (json_schema response format, json_object mode, a tool, a prefill); the caller still validates.
    """

    messages: tuple[Message, ...]
    stage: str = ""
    json_schema: dict[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None

    def cache_key_material(self) -> str:
        """A canonical string of everything that determines the answer (the backend id is added by the cache)."""
        return json.dumps(
            {
                # an image counts by its bytes' digest (a message without images keys as before)
                "messages": [[m.role, m.content, *(i.digest for i in m.images)] for m in self.messages],
                "json_schema": self.json_schema,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "seed": self.seed,
            },
            sort_keys=True,
            ensure_ascii=False,
        )


@dataclass(frozen=True)
class Reply:
    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    latency_s: float = 0.0
    trace: str = ""  # e.g. a CLI agent's log summary; empty for chat models
    cached: bool = False  # served from the call cache, nothing paid
    # An agentic student verifies the workspace its agent changed before the workspace is thrown away: its verdict
    # comes with the reply (the scorer is not asked), and so does the split of its wall time (setup/agent/verify).
    score: Score | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    saved: Usage = field(default_factory=Usage)  # a cached reply: what the call cost when it was paid


class LLMError(SkillgitError):
    """A call that did not produce a reply. `kind` is one of: auth, bad_request, not_found, rate_limit, server,
    timeout, connection, agent (a CLI agent failed), config, budget."""

    def __init__(self, message: str, hint: str = "", *, kind: str = "server", retryable: bool = False,
                 retry_after: float | None = None, status: int | None = None):
        super().__init__(message, hint, ExitCode.BACKEND)
        self.kind = kind
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


@runtime_checkable
class LLM(Protocol):
    @property
    def id(self) -> str: ...

    def complete(self, request: Request) -> Reply: ...


@runtime_checkable
class Student(Protocol):
    """The frozen agent. `run` executes one item with one skill and returns the final answer as `Reply.text`
    (and what it did as `Reply.trace`), or raises LLMError when the run could not happen. `sample` numbers
    repeated runs of the same item and skill (gate repeats): same sample, same request, same cache entry."""

    @property
    def id(self) -> str: ...

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply: ...


class ChatStudent:
    """A student that is a chat model: the skill is the system prompt, the item's input the user message.
    `settings`: what else of the model's configuration decides its answers (reasoning effort, thinking budget),
    for the call journal's key (`cache_material`)."""

    def __init__(self, llm: LLM, *, temperature: float | None = None, max_tokens: int | None = None,
                 seed: int | None = None, settings: Mapping[str, Any] | None = None):
        self.llm = llm
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.settings = dict(settings or {})

    def cache_material(self, item: Item) -> str:
        """What the call journal adds to this student's key besides model, skill, item and sample: the sampling
        settings that are set (a reply at temperature 0.7 is not the reply at the default); '' when none is, so
        the keys of a student with default settings stay what they were."""
        own = {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed, **self.settings}
        chosen = {k: v for k, v in own.items() if v is not None}
        return json.dumps(chosen, sort_keys=True, default=str) if chosen else ""

    @property
    def id(self) -> str:
        return f"chat:{self.llm.id}"

    @property
    def cache_identity(self) -> str:
        inner = getattr(self.llm, "cache_identity", None)
        if not inner:  # the model has none (the simulation): readers fall back to `id`, as for any backend
            raise AttributeError("cache_identity")
        return f"chat:{inner}"

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        # an item's images (`metadata.images`: paths, e.g. a DocVQA page) go with its text as content parts
        images = tuple(load_image(str(p)) for p in item.metadata.get("images") or ())
        messages = (Message("system", skill), Message("user", item.input, images))
        seed = None if self.seed is None and sample == 0 else (self.seed or 0) + sample
        return self.llm.complete(Request(messages, stage="rollout", temperature=self.temperature,
                                         max_tokens=self.max_tokens, seed=seed))


def load_image(path: str, name: str = "") -> Image:
    """The image file at `path`; LLMError(kind="bad_request") when it is missing, too large or not an image type
    the backends send (so the run is an unknown trajectory, never a failure)."""
    import base64
    import hashlib
    from pathlib import Path

    file = Path(path)
    media_type = IMAGE_TYPES.get(file.suffix.lower())
    if media_type is None:
        raise LLMError(f"image {name or file.name}: not one of {', '.join(IMAGE_TYPES)}",
                       "convert the image to PNG or JPEG", kind="bad_request")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise LLMError(f"image {name or file.name} cannot be read: {exc.strerror or exc}",
                       "check the path the task names", kind="bad_request") from None
    if len(data) > MAX_IMAGE_BYTES:
        raise LLMError(f"image {name or file.name} is {len(data):,} bytes, over {MAX_IMAGE_BYTES:,}",
                       "downscale the image", kind="bad_request")
    return Image(name or file.name, media_type, base64.b64encode(data).decode("ascii"),
                 hashlib.sha256(data).hexdigest())
