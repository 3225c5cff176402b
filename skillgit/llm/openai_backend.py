"""OpenAI, Azure OpenAI and any OpenAI-compatible server (vLLM, llama.cpp, Ollama, LM Studio) through the official
`openai` SDK. The only module that imports `openai`, and only when a backend is built (so the CLI starts fast).

Contracts (besides the `LLM` protocol of base.py):
- Credentials and endpoints come in explicitly (the factory resolves them from the environment and `.env`).
  `azure_endpoint` (or `provider="azure"`) selects the Azure client: `api_version` is sent as `?api-version=`,
  `azure_deployment` goes into the path, and either `api_key` or `azure_ad_token_provider` authenticates.
- The SDK's own retries are off (`max_retries=0`): `retry.RetryingLLM` is the only retry layer, so every attempt
  is counted. `cfg.timeout_s` bounds each attempt; a server on this machine (`base_url` on 127.0.0.1, ::1 or
  localhost: llama.cpp, Ollama, LM Studio on a CPU) left at the default 120 s gets `LOCAL_TIMEOUT_S` instead (a
  1.5B teacher on 2 cores took 125-150 s for one reflect reply), and its timeout's hint says what to raise and
  why a retry at the same limit queues behind the abandoned call.
- Chat Completions by default; the Responses API when `cfg.api == "responses"`. temperature, max tokens, seed and
  `reasoning_effort` are sent only when set (request values override the config's). Max tokens go out as
  `max_completion_tokens` to OpenAI and Azure (reasoning models refuse `max_tokens`) and as `max_tokens` to other
  servers, which do not all know the newer name. The Responses API has no seed; it is not sent there.
- Structured output for `Request.json_schema`: `json_mode="auto"` walks the ladder json_schema →
  json_object+schema (llama.cpp) → json_object → prompt, stepping down when the server refuses a form — a 400 or
  422, or any other error whose message names the response format (response_format, json_schema, json_object,
  schema, grammar: llama.cpp answers 500 "JSON schema conversion failed") — and, once a lower form has been
  answered, remembering it for the life of the backend (`json_mode_in_use`); when every form is refused the last
  error is raised and the mode stays where it was. Any other 5xx is a transient error: raised as retryable, the
  mode kept, so `RetryingLLM` counts and retries it like any other. An explicit mode (`json_schema`,
  `json_object_schema`, `json_object`, `prompt`) is used as is. For the json_object forms and the
  prompt form, the schema is appended to the last user message (json_object also needs the word JSON there).
- Failures become `LLMError` (see `_map_error`) with secrets redacted and the SDK exception detached, so no
  header or key can travel along in `__cause__`/`__context__`.
- Usage: prompt, completion, cached (`prompt_tokens_details.cached_tokens`) and reasoning
  (`completion_tokens_details.reasoning_tokens`) tokens; cost from `pricing` (local servers cost 0).
- Identity: `id` names backend, model and (for a custom server) host:port; `cache_identity` is `openai:<model>` /
  `azure:<deployment>` without the endpoint (a local server whose port changes between restarts keeps its call
  journal), or `BackendCfg.cache_identity` when set.
- Registry: `OPENAI` and `AZURE` are this module's `registry.Backend`s. Credentials come from the environment over
  `.env`: openai: `api_key_env` or OPENAI_API_KEY, `base_url` or OPENAI_BASE_URL; a server at `base_url` that
  needs no key gets a dummy one (only then). azure (or openai with `azure_endpoint` set): `azure_endpoint` or
  AZURE_OPENAI_ENDPOINT, `azure_deployment` or the model name, `api_version` or OPENAI_API_VERSION (default
  2024-10-21). Sign-in by `auth_mode`: auto → `api_key_env` or AZURE_OPENAI_API_KEY, else an Entra ID token
  (DefaultAzureCredential) when `azure-identity` is installed; api_key → that key only; azure_ad /
  managed_identity / azure_cli → an Entra ID bearer token from that credential (`azure_token_provider`) for
  `azure_ad_scope`, never the key, and a clear error naming the `azure` extra when azure-identity is missing.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from skillgit.config import BackendCfg, Config
from skillgit.llm import pricing
from skillgit.llm.base import LLMError, Reply, Request
from skillgit.llm.registry import DUMMY_KEY, Backend, missing_key
from skillgit.llm.retry import call_sdk, sdk_error
from skillgit.redact import SecretSet, redact
from skillgit.types import Usage

CHAT_LADDER = ("json_schema", "json_object_schema", "json_object", "prompt")
RESPONSES_LADDER = ("json_schema", "json_object", "prompt")
JSON_MODES = ("auto", *CHAT_LADDER)
DEFAULT_AZURE_API_VERSION = "2024-10-21"  # GA; supports json_schema and max_completion_tokens
AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
LOCAL_TIMEOUT_S = 900.0  # seconds per attempt for a server on this machine when timeout_s is left at its default
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0")
_REFUSED = (400, 422)  # the server understood the request and refuses it: a form it does not support
# An error naming the structured-output form is a refusal whatever its status (llama.cpp: 500 on json_schema).
_NAMES_FORMAT = re.compile(r"response[_ ]?format|json[_ ]?(?:schema|object|mode)|\bschema\b|\bgrammar\b|"
                           r"structured output", re.IGNORECASE)


def azure_token_provider(mode: str = "azure_ad", client_id: str | None = None,
                         scope: str | None = None) -> Callable[[], str] | None:
    """An Entra ID bearer-token provider from `azure-identity`, or None when that package is not installed.

    `mode` picks the credential: azure_ad → DefaultAzureCredential (environment, workload identity, managed
    identity, Azure CLI, … in its documented order), managed_identity → ManagedIdentityCredential (IMDS, or App
    Service / Functions / Arc / Cloud Shell through IDENTITY_ENDPOINT/IDENTITY_HEADER or MSI_ENDPOINT),
    azure_cli → AzureCliCredential (`az login`). `client_id` selects a user-assigned identity. The provider is
    called by the openai SDK before every request; azure-identity's policy returns the cached token and fetches a
    new one once the cached one is within five minutes of its expiry (or past its refresh time).
    """
    try:
        from azure.identity import (
            AzureCliCredential,
            DefaultAzureCredential,
            ManagedIdentityCredential,
            get_bearer_token_provider,
        )
    except ImportError:
        return None
    credential: Any
    if mode == "managed_identity":
        credential = ManagedIdentityCredential(client_id=client_id) if client_id else ManagedIdentityCredential()
    elif mode == "azure_cli":
        credential = AzureCliCredential()
    else:
        credential = DefaultAzureCredential(managed_identity_client_id=client_id) if client_id \
            else DefaultAzureCredential()
    return get_bearer_token_provider(credential, scope or AZURE_SCOPE)


def schema_instruction(schema: Mapping[str, Any]) -> str:
    return ("\n\nAnswer with only a JSON object (no prose, no code fences) that matches this JSON schema:\n"
            + json.dumps(schema, ensure_ascii=False))


def _strict_compatible(schema: Any) -> bool:
    """True when OpenAI's strict structured outputs accept `schema`: every object closes additionalProperties and
    requires all of its properties (otherwise the schema is sent with strict=false, as guidance)."""
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties", True) is not False or set(schema.get("required") or []) != set(props):
            return False
    children: list[Any] = []
    for key in ("properties", "$defs", "definitions"):
        children += list((schema.get(key) or {}).values())
    for key in ("items", "anyOf", "oneOf", "allOf", "prefixItems"):
        value = schema.get(key)
        children += value if isinstance(value, list) else [value] if isinstance(value, dict) else []
    return all(_strict_compatible(child) for child in children)


def _status_detail(exc: Any) -> str:
    """The server's error message from an `openai.APIStatusError` (either body shape), at most 500 characters."""
    body = exc.body
    detail = body.get("message") if isinstance(body, dict) else None
    if detail is None and isinstance(body, dict) and isinstance(body.get("error"), dict):
        detail = body["error"].get("message")
    return str(detail or exc.message or "")[:500]


def _refuses_format(exc: BaseException) -> bool:
    """True when the server refused the request's structured-output form (see the module contract): a 400/422,
    or an error status whose message names the form. A bare 5xx is transient, not a refusal."""
    import openai

    if not isinstance(exc, openai.APIStatusError):
        return False
    if exc.status_code in _REFUSED:
        return True
    return exc.status_code not in (401, 403, 404, 408, 409, 429) and bool(_NAMES_FORMAT.search(_status_detail(exc)))


def _is_loopback(base_url: str | None) -> bool:
    host = (urlsplit(base_url).hostname or "").lower() if base_url else ""
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def effective_timeout(cfg: BackendCfg, base_url: str | None) -> float:
    """Seconds per attempt: `cfg.timeout_s`, except that a server on this machine left at the default gets
    `LOCAL_TIMEOUT_S` (see the module contract). Set `timeout_s` to any other value to have exactly that."""
    default = BackendCfg.__dataclass_fields__["timeout_s"].default
    if _is_loopback(base_url) and cfg.timeout_s == default:
        return LOCAL_TIMEOUT_S
    return cfg.timeout_s


def _schema_name(stage: str) -> str:
    return (re.sub(r"[^A-Za-z0-9_-]", "_", stage)[:64] or "reply") if stage else "reply"


class OpenAIBackend:
    """One model on one OpenAI-compatible endpoint (see the module contract). Thread-safe."""

    def __init__(self, model: str, cfg: BackendCfg | None = None, *, api_key: str | None = None,
                 base_url: str | None = None, azure_endpoint: str | None = None, azure_deployment: str | None = None,
                 api_version: str | None = None, azure_ad_token_provider: Callable[[], str] | None = None,
                 provider: str = "openai", key_env: str = "OPENAI_API_KEY", role: str = "",
                 prices: Mapping[str, Any] | None = None):
        import openai  # lazy: only a run that uses this backend pays for the import

        self.cfg = cfg or BackendCfg()
        if self.cfg.json_mode not in JSON_MODES:
            raise LLMError(f"json_mode '{self.cfg.json_mode}' is not one of {', '.join(JSON_MODES)}",
                           f"set model.{role or '<role>'}.json_mode to one of them", kind="config")
        self.model = model
        self.azure = provider == "azure" or azure_endpoint is not None
        self.provider = "azure" if self.azure else "openai"
        self.key_env = key_env
        self.role = role
        self.prices = prices
        self._secret = api_key
        self._uses_entra = self.azure and not api_key and azure_ad_token_provider is not None
        self.local = _is_loopback(base_url)
        self.timeout_s = effective_timeout(self.cfg, base_url)
        common: dict[str, Any] = {"timeout": self.timeout_s, "max_retries": 0}
        self.deployment: str | None = None
        self.api_version: str | None = None
        self.client: openai.OpenAI  # AzureOpenAI is one
        message: str | None = None
        try:
            if self.azure:
                self.deployment = azure_deployment or model
                kwargs: dict[str, Any] = {"api_version": api_version or DEFAULT_AZURE_API_VERSION, **common}
                if azure_endpoint:
                    kwargs.update(azure_endpoint=azure_endpoint, azure_deployment=self.deployment)
                else:
                    kwargs["base_url"] = base_url
                if api_key:
                    kwargs["api_key"] = api_key
                else:
                    kwargs["azure_ad_token_provider"] = azure_ad_token_provider
                self.client = openai.AzureOpenAI(**kwargs)
                self.api_version = kwargs["api_version"]
            else:
                self.client = openai.OpenAI(api_key=api_key, base_url=base_url, **common)
        except (openai.OpenAIError, ValueError) as exc:
            message = redact(str(exc), (api_key,))
        if message is not None:
            raise LLMError(f"{self.provider}: cannot configure the client: {message}",
                           f"check model.{role or '<role>'} in skillgit.yaml", kind="config")
        self.base_url = str(self.client.base_url).rstrip("/")
        host = (urlsplit(self.base_url).hostname or "").lower()
        official = host == "api.openai.com" or host.endswith((".openai.azure.com", ".cognitiveservices.azure.com"))
        self.custom_server = not self.azure and base_url is not None and not official
        self.price = pricing.resolve_price(model, prices, None if self.azure else self.base_url)
        # an explicit mode is a ladder of one step: forced, never stepped down from
        self._ladder: tuple[str, ...]
        if self.cfg.json_mode == "auto":
            self._ladder = RESPONSES_LADDER if self.cfg.api == "responses" else CHAT_LADDER
        else:
            self._ladder = (self.cfg.json_mode,)
        self._json_level = 0
        self._lock = threading.Lock()

    # -- identity
    @property
    def id(self) -> str:
        if self.azure:
            return f"azure:{self.deployment}"
        if self.custom_server:  # the same model name on two servers is two different models for the cache
            return f"openai:{self.model}@{urlsplit(self.base_url).netloc}"
        return f"openai:{self.model}"

    @property
    def cache_identity(self) -> str:
        """What the call journal keys this model on: backend and model, never the endpoint's host or port."""
        if self.cfg.cache_identity:
            return self.cfg.cache_identity
        return f"azure:{self.deployment}" if self.azure else f"openai:{self.model}"

    @property
    def endpoint(self) -> str:
        suffix = f" (api-version {self.api_version})" if self.azure else ""
        return redact(self.base_url, (self._secret,)) + suffix

    @property
    def price_known(self) -> bool:
        return self.price is not None

    @property
    def json_mode_in_use(self) -> str:
        with self._lock:
            return self._ladder[self._json_level]

    def __repr__(self) -> str:
        return f"OpenAIBackend({self.id!r}, endpoint={self.endpoint!r})"

    # -- the call
    def complete(self, request: Request) -> Reply:
        asked = self.json_mode_in_use if request.json_schema is not None else None
        response, mode, latency = call_sdk(self._create(request), asked, map_error=self._map_error,
                                           refuses=_refuses_format, step_down=self._next_mode)
        if mode is not None:
            self._remember(mode)
        if self.cfg.api == "responses":
            return self._responses_reply(response, latency)
        return self._chat_reply(response, latency)

    def _create(self, request: Request) -> Callable[[str | None], Any]:
        """The SDK call of `request` in a structured-output mode."""
        if self.cfg.api == "responses":
            return lambda mode: self.client.responses.create(**self._responses_kwargs(request, mode))
        return lambda mode: self.client.chat.completions.create(**self._chat_kwargs(request, mode))

    def _next_mode(self, mode: str | None) -> str | None:
        """The structured-output form to try after the server refused `mode` (None: nothing left to try)."""
        if mode is None or mode == "prompt" or self.cfg.json_mode != "auto":
            return None
        return self._ladder[self._ladder.index(mode) + 1]

    def _remember(self, mode: str) -> None:
        """Make `mode` — a form the server just answered — the first one later calls try. Only a form that worked
        is remembered: a 400 that every form gets (a prompt over the context length) leaves the mode as it was."""
        with self._lock:
            self._json_level = max(self._json_level, self._ladder.index(mode))

    # -- request shapes
    def _messages(self, request: Request, mode: str | None, api: str = "chat") -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in request.messages]
        if mode is not None and mode != "json_schema" and request.json_schema is not None:
            instruction = schema_instruction(request.json_schema)
            for msg in reversed(messages):
                if msg["role"] == "user":
                    msg["content"] += instruction
                    break
            else:
                messages.append({"role": "user", "content": instruction.strip()})
        for msg, source in zip(messages, request.messages):  # images: the text, then one part per image
            if source.images:
                msg["content"] = _with_images(msg["content"], source.images, api)
        return messages

    def _common(self, request: Request) -> dict[str, Any]:
        temperature = request.temperature if request.temperature is not None else self.cfg.temperature
        return {"temperature": temperature,
                "max_tokens": request.max_tokens if request.max_tokens is not None else self.cfg.max_tokens,
                "seed": request.seed if request.seed is not None else self.cfg.seed}

    def _chat_kwargs(self, request: Request, mode: str | None) -> dict[str, Any]:
        common = self._common(request)
        kwargs: dict[str, Any] = {"model": self.deployment if self.azure else self.model,
                                  "messages": self._messages(request, mode)}
        if common["temperature"] is not None:
            kwargs["temperature"] = common["temperature"]
        if common["max_tokens"] is not None:
            kwargs["max_tokens" if self.custom_server else "max_completion_tokens"] = common["max_tokens"]
        if common["seed"] is not None:
            kwargs["seed"] = common["seed"]
        if self.cfg.reasoning_effort:
            kwargs["reasoning_effort"] = self.cfg.reasoning_effort
        schema = request.json_schema
        if mode == "json_schema":
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                "name": _schema_name(request.stage), "schema": schema, "strict": _strict_compatible(schema)}}
        elif mode == "json_object_schema":
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        elif mode == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    def _responses_kwargs(self, request: Request, mode: str | None) -> dict[str, Any]:
        common = self._common(request)
        messages = self._messages(request, mode, "responses")
        system = "\n\n".join(m["content"] for m in messages if m["role"] in ("system", "developer"))
        kwargs: dict[str, Any] = {
            "model": self.deployment if self.azure else self.model,
            "input": [m for m in messages if m["role"] not in ("system", "developer")],
            "store": False,  # nothing of a training run needs to live on the provider's side
        }
        if system:
            kwargs["instructions"] = system
        if common["temperature"] is not None:
            kwargs["temperature"] = common["temperature"]
        if common["max_tokens"] is not None:
            kwargs["max_output_tokens"] = common["max_tokens"]
        if self.cfg.reasoning_effort:
            kwargs["reasoning"] = {"effort": self.cfg.reasoning_effort}
        schema = request.json_schema
        if mode == "json_schema":
            kwargs["text"] = {"format": {"type": "json_schema", "name": _schema_name(request.stage),
                                         "schema": schema, "strict": _strict_compatible(schema)}}
        elif mode in ("json_object", "json_object_schema"):
            kwargs["text"] = {"format": {"type": "json_object"}}
        return kwargs

    # -- replies
    def _usage(self, prompt: int, completion: int, cached: int, reasoning: int, served_by: str | None) -> Usage:
        price = self.price
        if price is None and served_by:  # e.g. Azure: the deployment name is ours, the served model is priced
            price = pricing.price_for(served_by, self.prices)
        usage = Usage(1, prompt, completion, cached, reasoning)
        return Usage(1, prompt, completion, cached, reasoning, pricing.cost_at(price, usage))

    def _chat_reply(self, response: Any, latency: float) -> Reply:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise LLMError(f"{self.id}: the server answered without any choice", "it is retried automatically",
                           kind="server", retryable=True)
        choice = choices[0]
        message = choice.message
        notes = []
        if choice.finish_reason and choice.finish_reason != "stop":
            notes.append(f"finish_reason={choice.finish_reason}")
        refusal = getattr(message, "refusal", None)
        if refusal:
            notes.append(f"refusal: {refusal}")
        u = getattr(response, "usage", None)
        prompt = int(getattr(u, "prompt_tokens", 0) or 0)
        completion = int(getattr(u, "completion_tokens", 0) or 0)
        cached = int(getattr(getattr(u, "prompt_tokens_details", None), "cached_tokens", 0) or 0)
        reasoning = int(getattr(getattr(u, "completion_tokens_details", None), "reasoning_tokens", 0) or 0)
        model = getattr(response, "model", None) or self.model
        return Reply(message.content or "", self._usage(prompt, completion, cached, reasoning, model), model,
                     latency, trace="; ".join(notes))

    def _responses_reply(self, response: Any, latency: float) -> Reply:
        u = getattr(response, "usage", None)
        prompt = int(getattr(u, "input_tokens", 0) or 0)
        completion = int(getattr(u, "output_tokens", 0) or 0)
        cached = int(getattr(getattr(u, "input_tokens_details", None), "cached_tokens", 0) or 0)
        reasoning = int(getattr(getattr(u, "output_tokens_details", None), "reasoning_tokens", 0) or 0)
        status = getattr(response, "status", None)
        trace = f"status={status}" if status and status != "completed" else ""
        model = getattr(response, "model", None) or self.model
        return Reply(response.output_text or "", self._usage(prompt, completion, cached, reasoning, model), model,
                     latency, trace=trace)

    # -- errors
    def _hint(self, kind: str) -> str:
        where = f"model.{self.role}" if self.role else "model.<role>"
        if kind == "auth":
            if self._uses_entra:
                return f"sign in for Entra ID (`az login`) or set {self.key_env} in the environment or in .env"
            return f"set {self.key_env} (in the environment or in .env at the project root) to a valid key"
        if kind == "not_found":
            if self.azure:
                return f"check {where}.azure_deployment ('{self.deployment}') and {where}.api_version"
            return f"check the model name '{self.model}' and {where}.base_url"
        if kind == "bad_request":
            return (f"the server rejected the request; check {where} settings (not every model accepts "
                    f"temperature, max_tokens, seed or reasoning_effort; json_mode: prompt avoids response_format)")
        if kind == "quota":
            return "the account has no quota left: check the provider's billing page, then resume the run"
        if kind == "rate_limit":
            return f"retried automatically; lower {where}.concurrency if it persists"
        if kind == "timeout":
            if self.local:
                return (f"a model on this machine answered slower than {where}.timeout_s ({self.timeout_s:g} s): "
                        f"raise {where}.timeout_s (or lower {where}.max_tokens); a retry queues behind the "
                        "abandoned call on a one-request-at-a-time server such as llama.cpp")
            return f"retried automatically; raise {where}.timeout_s for slow models"
        if kind == "connection":
            return f"is the server at {self.endpoint} running and reachable? check {where}.base_url"
        return "retried automatically"

    def _error(self, message: str, kind: str, *, retryable: bool, status: int | None = None,
               retry_after: float | None = None, hint: str | None = None) -> LLMError:
        return LLMError(redact(f"{self.id}: {message}", (self._secret,)),
                        redact(self._hint(kind) if hint is None else hint, (self._secret,)),
                        kind=kind, retryable=retryable, retry_after=retry_after, status=status)

    def _map_error(self, exc: BaseException) -> LLMError | None:
        import openai

        if (isinstance(exc, openai.APIStatusError) and exc.status_code == 429
                and "insufficient_quota" in (str(exc.code), str(exc.type))):
            # a 429 that waiting does not cure: the account has no credit left
            return self._error(f"HTTP 429 (quota): {_status_detail(exc)}", "rate_limit", retryable=False,
                               status=429, hint=self._hint("quota"))
        mapped = sdk_error(exc, openai, openai.OpenAIError, self._error, timeout_s=self.timeout_s,
                           endpoint=self.endpoint, detail=_status_detail)
        if mapped is not None:
            return mapped
        if type(exc).__module__.startswith("azure."):  # azure-identity failed to get a token
            return self._error(f"Entra ID token: {type(exc).__name__}: {exc}", "auth", retryable=False)
        return None


# ---------------------------------------------------------------------------------------------- registry
def _is_azure(backend_name: str, bcfg: BackendCfg) -> bool:
    return backend_name == "azure" or (backend_name == "openai" and bool(bcfg.azure_endpoint))


def _azure_credentials(role: str, bcfg: BackendCfg, key: str | None,
                       var: str) -> tuple[str | None, Callable[[], str] | None]:
    """(api key, token provider) for `bcfg.auth_mode`: exactly one of the two is set, or an LLMError says why."""
    from skillgit.provenance import extra_hint

    mode = bcfg.auth_mode
    if mode == "api_key" or (mode == "auto" and key):
        if not key:
            raise missing_key(role, var, f" (model.{role}.auth_mode is api_key)")
        return key, None
    provider = azure_token_provider("azure_ad" if mode == "auto" else mode, bcfg.managed_identity_client_id,
                                    bcfg.azure_ad_scope)
    if provider is not None:
        return None, provider
    install = f"install the azure extra's packages: {extra_hint('azure')}"
    if mode == "auto":
        raise missing_key(role, var, f", or {install} to sign in with Entra ID")
    raise LLMError(f"{role}: model.{role}.auth_mode is {mode!r}, which signs in through azure-identity, "
                   "and that package is not installed", f"{install}, or set model.{role}.auth_mode: api_key",
                   kind="config")


def _builder(backend_name: str):
    def build(role: str, model: str, bcfg: BackendCfg, cfg: Config, env: Mapping[str, str], *,
              secrets: SecretSet, dotenv_keys: frozenset[str]) -> OpenAIBackend:
        """The OpenAI / Azure OpenAI backend for `role`, credentials resolved from `env` (module contract)."""
        if _is_azure(backend_name, bcfg):
            var = bcfg.api_key_env or "AZURE_OPENAI_API_KEY"
            endpoint = bcfg.azure_endpoint or env.get("AZURE_OPENAI_ENDPOINT") or None
            if not endpoint and not bcfg.base_url:
                raise LLMError(f"{role}: no Azure OpenAI endpoint",
                               f"set model.{role}.azure_endpoint or AZURE_OPENAI_ENDPOINT (environment or .env), "
                               f"e.g. https://my-resource.openai.azure.com", kind="config")
            key, provider = _azure_credentials(role, bcfg, env.get(var) or None, var)
            return OpenAIBackend(model, bcfg, api_key=key, azure_endpoint=endpoint,
                                 base_url=None if endpoint else bcfg.base_url,
                                 azure_deployment=bcfg.azure_deployment or model,
                                 api_version=bcfg.api_version or env.get("OPENAI_API_VERSION") or None,
                                 azure_ad_token_provider=provider, provider="azure", key_env=var, role=role,
                                 prices=cfg.prices)
        var = bcfg.api_key_env or "OPENAI_API_KEY"
        key = env.get(var) or None
        base_url = bcfg.base_url or env.get("OPENAI_BASE_URL") or None
        if not key:
            # a named key variable means the server wants that key; OpenAI itself always does
            if not base_url or bcfg.api_key_env or "api.openai.com" in base_url:
                raise missing_key(role, var, f", or set model.{role}.base_url for a local server")
            key = DUMMY_KEY
        return OpenAIBackend(model, bcfg, api_key=key, base_url=base_url, key_env=var, role=role, prices=cfg.prices)

    return build


def _describer(backend_name: str):
    def describe(role: str, model: str, bcfg: BackendCfg, env: Mapping[str, str]) -> str:
        if _is_azure(backend_name, bcfg):
            return bcfg.azure_endpoint or env.get("AZURE_OPENAI_ENDPOINT") or bcfg.base_url or "(no endpoint)"
        return bcfg.base_url or env.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"

    return describe


OPENAI = Backend("openai", frozenset({"teacher", "student"}), _builder("openai"), _describer("openai"),
                 "OpenAI or any OpenAI-compatible server (vLLM, llama.cpp, Ollama, LM Studio) via the openai SDK")
AZURE = Backend("azure", frozenset({"teacher", "student"}), _builder("azure"), _describer("azure"),
                "Azure OpenAI (API key or Entra ID) via the openai SDK")


def _with_images(text: str, images: Any, api: str) -> list[dict[str, Any]]:
    """A message's content as parts: its text, then each image as a data URL (Chat Completions: `image_url`,
    Responses: `input_image`)."""
    if api == "responses":
        return [{"type": "input_text", "text": text},
                *({"type": "input_image", "image_url": image.data_url} for image in images)]
    return [{"type": "text", "text": text}, *({"type": "image_url", "image_url": {"url": image.data_url}}
                                              for image in images)]
