"""Anthropic's Messages API through the official `anthropic` SDK. The only module that imports `anthropic`, and
only when a backend is built.

Contracts (besides the `LLM` protocol of base.py):
- System messages go to `system`; the rest alternate user/assistant (consecutive same-role messages are joined,
  and a conversation must start with a user turn, as the API requires).
- The SDK's own retries are off (`max_retries=0`); `cfg.timeout_s` bounds each attempt.
- JSON for `Request.json_schema`: a forced tool (`tools=[{name, input_schema: schema}]`, `tool_choice` naming it);
  the reply text is the tool input serialised as JSON. When the server refuses the tool form — a 400 or 422, or
  any other error whose message names tools / tool_choice / input_schema (a proxy answering 500 "tools are not
  supported") — or the schema is not an object schema, the backend falls back to plain text with the schema in the
  prompt (and, once that form has been answered, remembers it); the caller's tolerant extraction (`jsonout`)
  reads that. A bare 5xx (or 529 overloaded) is transient: raised as retryable with the tool form kept.
  `json_mode="prompt"` forces the text form.
- Extended thinking when `cfg.thinking_budget` is set: `thinking={"type": "enabled", "budget_tokens": N}`,
  `max_tokens` raised to budget + answer tokens, no temperature (the API requires the default), and never a
  forced tool (the API refuses tool_choice with thinking): text + extraction instead.
- `cfg.reasoning_effort` is sent as `output_config.effort` when set. A temperature (request or config) is sent in
  the request body (the current SDK has no parameter for it; models that refuse it answer 400, hint included).
- Usage: prompt tokens = input + cache read + cache creation (so `cached_tokens` is a part of `prompt_tokens`, as
  for OpenAI), completion = output tokens, reasoning = thinking tokens when the API reports them.
- Failures become `LLMError` with secrets redacted and the SDK exception detached (see `_map_error`).
- Identity: `cache_identity` is `anthropic:<model>` without the endpoint, or `BackendCfg.cache_identity` when set.
- Registry: `BACKEND` is this module's `registry.Backend`. Credentials: `api_key_env` or ANTHROPIC_API_KEY (or
  ANTHROPIC_AUTH_TOKEN, unless a key variable is named), `base_url` or ANTHROPIC_BASE_URL; a custom `base_url`
  that needs no key gets a dummy one.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Mapping
from urllib.parse import urlsplit

from skillgit.config import BackendCfg, Config
from skillgit.llm import pricing
from skillgit.llm.base import LLMError, Reply, Request
from skillgit.llm.registry import DUMMY_KEY, Backend, missing_key
from skillgit.llm.retry import call_sdk, sdk_error
from skillgit.redact import SecretSet, redact
from skillgit.types import Usage

DEFAULT_MAX_TOKENS = 4096  # the Messages API requires max_tokens
TOOL_NAME = "respond"
JSON_MODES = ("auto", "tool", "json_schema", "json_object", "json_object_schema", "prompt")
_REFUSED = (400, 422)  # the server understood the request and refuses it
# An error naming the tool form is a refusal whatever its status (a proxy's 500 "tools are not supported").
_NAMES_TOOLS = re.compile(r"\btools?\b|tool_choice|tool_use|input_schema", re.IGNORECASE)


def _schema_instruction(schema: Mapping[str, Any]) -> str:
    return ("\n\nAnswer with only a JSON object (no prose, no code fences) that matches this JSON schema:\n"
            + json.dumps(schema, ensure_ascii=False))


def _status_detail(exc: Any) -> str:
    """The server's error message from an `anthropic.APIStatusError`, at most 500 characters."""
    body = exc.body
    detail = None
    if isinstance(body, dict):
        inner = body.get("error")
        detail = inner.get("message") if isinstance(inner, dict) else body.get("message")
    return str(detail or exc.message or "")[:500]


def _refuses_tools(exc: BaseException) -> bool:
    """True when the server refused the forced-tool form (see the module contract); a bare 5xx is transient."""
    import anthropic

    if not isinstance(exc, anthropic.APIStatusError):
        return False
    if exc.status_code in _REFUSED:
        return True
    return exc.status_code not in (401, 403, 404, 408, 409, 429) and bool(_NAMES_TOOLS.search(_status_detail(exc)))


class AnthropicBackend:
    """One Claude model (see the module contract). Thread-safe."""

    def __init__(self, model: str, cfg: BackendCfg | None = None, *, api_key: str | None = None,
                 auth_token: str | None = None, base_url: str | None = None, key_env: str = "ANTHROPIC_API_KEY",
                 role: str = "", prices: Mapping[str, Any] | None = None):
        import anthropic  # lazy: only a run that uses this backend pays for the import

        self.cfg = cfg or BackendCfg()
        if self.cfg.json_mode not in JSON_MODES:
            raise LLMError(f"json_mode '{self.cfg.json_mode}' is not one of {', '.join(JSON_MODES)}",
                           f"set model.{role or '<role>'}.json_mode to one of them", kind="config")
        self.model = model
        self.key_env = key_env
        self.role = role
        self.prices = prices
        self._secrets = (api_key, auth_token)
        kwargs: dict[str, Any] = {"timeout": self.cfg.timeout_s, "max_retries": 0, "base_url": base_url}
        if api_key:
            kwargs["api_key"] = api_key
        else:
            kwargs["auth_token"] = auth_token
        message: str | None = None
        try:
            self.client = anthropic.Anthropic(**kwargs)
        except (anthropic.AnthropicError, ValueError, TypeError) as exc:
            message = redact(str(exc), self._secrets)
        if message is not None:
            raise LLMError(f"anthropic: cannot configure the client: {message}",
                           f"check model.{role or '<role>'} in skillgit.yaml", kind="config")
        self.base_url = str(self.client.base_url).rstrip("/")
        self.custom_server = base_url is not None and "api.anthropic.com" not in base_url
        self.price = pricing.resolve_price(model, prices, self.base_url)
        self._use_tool = self.cfg.json_mode != "prompt"
        self._lock = threading.Lock()

    # -- identity
    @property
    def id(self) -> str:
        if self.custom_server:
            return f"anthropic:{self.model}@{urlsplit(self.base_url).netloc}"
        return f"anthropic:{self.model}"

    @property
    def cache_identity(self) -> str:
        """What the call journal keys this model on: backend and model, never the endpoint's host or port."""
        return self.cfg.cache_identity or f"anthropic:{self.model}"

    @property
    def endpoint(self) -> str:
        return redact(self.base_url, self._secrets)

    @property
    def price_known(self) -> bool:
        return self.price is not None

    @property
    def json_mode_in_use(self) -> str:
        if self.cfg.thinking_budget:
            return "prompt"
        with self._lock:
            return "tool" if self._use_tool else "prompt"

    def __repr__(self) -> str:
        return f"AnthropicBackend({self.id!r}, endpoint={self.endpoint!r})"

    # -- the call
    def complete(self, request: Request) -> Reply:
        schema = request.json_schema
        use_tool = (schema is not None and self.json_mode_in_use == "tool"
                    and isinstance(schema, Mapping) and schema.get("type", "object") == "object")
        message, used_tool, latency = call_sdk(
            lambda tool: self.client.messages.create(**self._kwargs(request, tool)), use_tool,
            map_error=self._map_error, refuses=_refuses_tools,
            step_down=lambda tool: False if tool and self.cfg.json_mode == "auto" else None)
        if use_tool and not used_tool:  # remembered once the text form worked: a 400 both forms get changes nothing
            with self._lock:
                self._use_tool = False
        return self._reply(message, latency)

    def _kwargs(self, request: Request, use_tool: bool) -> dict[str, Any]:
        system_parts = [m.content for m in request.messages if m.role in ("system", "developer")]
        schema = request.json_schema
        kwargs: dict[str, Any] = {"model": self.model,
                                  "messages": _turns(request, None if use_tool else schema)}
        if system_parts:
            kwargs["system"] = "\n\n".join(system_parts)
        kwargs.update(self._sampling(request))
        if self.cfg.reasoning_effort:
            kwargs["output_config"] = {"effort": self.cfg.reasoning_effort}
        if use_tool:
            kwargs["tools"] = [{"name": TOOL_NAME, "description": "Submit the answer as structured data.",
                                "input_schema": schema}]
            kwargs["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        return kwargs

    def _sampling(self, request: Request) -> dict[str, Any]:
        """max_tokens, and thinking (its budget on top) or the temperature."""
        max_tokens = request.max_tokens if request.max_tokens is not None else self.cfg.max_tokens
        max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        budget = self.cfg.thinking_budget
        if budget:
            return {"thinking": {"type": "enabled", "budget_tokens": int(budget)},
                    "max_tokens": int(budget) + max_tokens}
        temperature = request.temperature if request.temperature is not None else self.cfg.temperature
        if temperature is None:
            return {"max_tokens": max_tokens}
        # this SDK no longer has the parameter; older models still take it
        return {"max_tokens": max_tokens, "extra_body": {"temperature": temperature}}

    def _reply(self, message: Any, latency: float) -> Reply:
        texts, tool_input, thinking = [], None, []
        for block in getattr(message, "content", None) or []:
            kind = getattr(block, "type", "")
            if kind == "text":
                texts.append(block.text)
            elif kind == "tool_use" and tool_input is None:
                tool_input = block.input
            elif kind == "thinking":
                thinking.append(getattr(block, "thinking", "") or "")
        text = json.dumps(tool_input, ensure_ascii=False) if tool_input is not None else "".join(texts)
        notes = []
        stop = getattr(message, "stop_reason", None)
        if stop not in (None, "end_turn", "tool_use", "stop_sequence"):
            notes.append(f"stop_reason={stop}")
        if thinking:
            joined = "\n".join(thinking)
            notes.append("thinking: " + (joined if len(joined) <= 2000 else "…" + joined[-2000:]))
        u = getattr(message, "usage", None)
        cache_read = int(getattr(u, "cache_read_input_tokens", 0) or 0)
        cache_write = int(getattr(u, "cache_creation_input_tokens", 0) or 0)
        prompt = int(getattr(u, "input_tokens", 0) or 0) + cache_read + cache_write
        completion = int(getattr(u, "output_tokens", 0) or 0)
        reasoning = int(getattr(getattr(u, "output_tokens_details", None), "thinking_tokens", 0) or 0)
        usage = Usage(1, prompt, completion, cache_read, reasoning)
        usage = Usage(1, prompt, completion, cache_read, reasoning, pricing.cost_at(self.price, usage))
        return Reply(text, usage, getattr(message, "model", None) or self.model, latency,
                     trace=redact("; ".join(notes), self._secrets))

    # -- errors
    def _hint(self, kind: str) -> str:
        where = f"model.{self.role}" if self.role else "model.<role>"
        return {
            "auth": f"set {self.key_env} (in the environment or in .env at the project root) to a valid key",
            "not_found": f"check the model name '{self.model}' and {where}.base_url",
            "bad_request": (f"the server rejected the request; check {where} settings (newer models refuse "
                            f"temperature; json_mode: prompt avoids the forced tool)"),
            "rate_limit": f"retried automatically; lower {where}.concurrency if it persists",
            "timeout": f"retried automatically; raise {where}.timeout_s for slow models",
            "connection": f"is {self.endpoint} reachable? check {where}.base_url and the network",
        }.get(kind, "retried automatically")

    def _error(self, message: str, kind: str, *, retryable: bool, status: int | None = None,
               retry_after: float | None = None) -> LLMError:
        return LLMError(redact(f"{self.id}: {message}", self._secrets), redact(self._hint(kind), self._secrets),
                        kind=kind, retryable=retryable, retry_after=retry_after, status=status)

    def _map_error(self, exc: BaseException) -> LLMError | None:
        import anthropic

        mapped = sdk_error(exc, anthropic, anthropic.AnthropicError, self._error, timeout_s=self.cfg.timeout_s,
                           endpoint=self.endpoint, detail=_status_detail)
        if mapped is not None:
            return mapped
        if isinstance(exc, ValueError) and "Streaming is required" in str(exc):
            return self._error(str(exc), "bad_request", retryable=False)
        return None


# ---------------------------------------------------------------------------------------------- registry
def _build(role: str, model: str, bcfg: BackendCfg, cfg: Config, env: Mapping[str, str], *, secrets: SecretSet,
           dotenv_keys: frozenset[str]) -> AnthropicBackend:
    """The Anthropic backend for `role`, credentials resolved from `env` (module contract)."""
    var = bcfg.api_key_env or "ANTHROPIC_API_KEY"
    key = env.get(var) or None
    # an OAuth-style bearer token is the SDK's other credential; a named key variable excludes it
    token = None if bcfg.api_key_env else (env.get("ANTHROPIC_AUTH_TOKEN") or None)
    base_url = bcfg.base_url or env.get("ANTHROPIC_BASE_URL") or None
    if not key and not token:
        if not base_url or bcfg.api_key_env:
            raise missing_key(role, var)
        key = DUMMY_KEY
    return AnthropicBackend(model, bcfg, api_key=key, auth_token=token, base_url=base_url, key_env=var, role=role,
                            prices=cfg.prices)


def _describe(role: str, model: str, bcfg: BackendCfg, env: Mapping[str, str]) -> str:
    return bcfg.base_url or env.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"


BACKEND = Backend("anthropic", frozenset({"teacher", "student"}), _build, _describe,
                  "Anthropic's Messages API (Claude) via the anthropic SDK")


def _turns(request: Request, schema: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The conversation as alternating user/assistant turns (same-role messages joined, a user turn first), the
    schema instruction on the last user turn when given, each turn's images as image blocks before its text."""
    turns: list[dict[str, Any]] = []
    images: dict[int, list[Any]] = {}  # turn index → its images
    for m in request.messages:
        if m.role in ("system", "developer"):
            continue
        role = "assistant" if m.role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + m.content
        else:
            turns.append({"role": role, "content": m.content})
        if m.images:
            images.setdefault(len(turns) - 1, []).extend(m.images)
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": "(begin)"})
        images = {index + 1: found for index, found in images.items()}
    if schema is not None:
        last_user = next(t for t in reversed(turns) if t["role"] == "user")
        last_user["content"] += _schema_instruction(schema)
    for index, found in images.items():
        turns[index]["content"] = [
            *({"type": "image", "source": {"type": "base64", "media_type": i.media_type, "data": i.data_b64}}
              for i in found),
            {"type": "text", "text": turns[index]["content"]}]
    return turns
