"""Handoff mode: no API key needed — the user's own agent plays the teacher through files.

`HandoffLLM(folder)` is a teacher `LLM`. For each request it has not seen it writes `<n>.prompt.md` (the system
and user messages, and the answer format as a JSON schema) and `<n>.request.json` (the same, for programs) into
`folder`, and raises `HandoffPending`. Whoever answers (a person, or their coding agent: "answer every prompt in
this folder") writes `<n>.answer.json`; the next run finds it and returns it as the reply.

Contracts:
- `<n>` is fixed per request: `index.json` maps a hash of the request (the call journal's key material) to its
  number, so prompts keep their numbers across runs and a repeated request reuses its file. Numbers start at 1 and
  are written with four digits (`0001.prompt.md`).
- A reply served from a file costs nothing (zero usage). The call journal (`CachedLLM`) stores it like any reply,
  so a resumed night never asks again — even if the answer files are deleted afterwards.
- `HandoffPending` is a `SkillgitError` (exit 5), not an `LLMError`: the training loop records LLMErrors and goes
  on, but a missing answer must stop the night where it is (a step's candidate is only built after every teacher
  call of the step returned), so that the next run resumes it.
- Thread-safe: the loop asks several prompts at once; all of them get written before the run stops.
- The teacher also judges rubric tasks (`skillgit.rubric.RubricScorer`). A scorer's SkillgitError would make the
  trajectory *unknown* and the night go on, so the judge is wrapped in `Deferring`: a missing answer raises
  `HandoffDeferred` (not a SkillgitError), which passes the scorer and the rollout untouched, stops the training
  loop like any crash (its state settled and saved) and is turned back into `HandoffPending` by the night.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from skillgit.errors import ExitCode, SkillgitError
from skillgit.llm.base import Reply, Request
from skillgit.types import Usage

INDEX = "index.json"


class HandoffPending(SkillgitError):
    """Some teacher prompts wait for answers in the handoff folder; the night resumes when they are there."""

    def __init__(self, folder: Path, pending: list[Path]):
        names = ", ".join(p.name for p in pending[:5]) + (f" and {len(pending) - 5} more" if len(pending) > 5 else "")
        super().__init__(
            f"waiting for {len(pending)} teacher answer(s) in {folder}: {names}",
            f"have your agent answer each <n>.prompt.md there as JSON in <n>.answer.json (the format is at the end "
            f"of each prompt), then run the same `skillgit sleep run --handoff {folder}` again: the night resumes "
            "where it stopped", ExitCode.BUDGET)
        self.folder = folder
        self.pending = pending


class HandoffDeferred(Exception):
    """A judge's answer waits in the handoff folder: stop the run (see the module contract)."""

    def __init__(self, pending: HandoffPending):
        super().__init__(pending.message)
        self.pending = pending


class Deferring:
    """An `LLM` that turns `HandoffPending` from `inner` into `HandoffDeferred` (for the judge)."""

    def __init__(self, inner: Any):
        self.inner = inner

    @property
    def id(self) -> str:
        return str(self.inner.id)

    def complete(self, request: Request) -> Reply:
        try:
            reply: Reply = self.inner.complete(request)
        except HandoffPending as exc:
            raise HandoffDeferred(exc) from None
        return reply


def pending_prompts(folder: Path) -> list[Path]:
    """The prompt files of `folder` that have no answer file yet, in number order."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.prompt.md")
                  if not (folder / p.name.replace(".prompt.md", ".answer.json")).is_file())


def answered(folder: Path) -> int:
    return len(list(folder.glob("*.answer.json"))) if folder.is_dir() else 0


class HandoffLLM:
    """A teacher answered through files (see the module contract)."""

    def __init__(self, folder: Path, label: str = "agent"):
        self.folder = Path(folder)
        self.label = label
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return f"handoff:{self.label}"

    @property
    def cache_identity(self) -> str:
        return self.id

    def _number(self, key: str) -> int:
        with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / INDEX
            index: dict[str, int] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
            if key not in index:
                index[key] = max(index.values(), default=0) + 1
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n", encoding="utf-8")
                tmp.replace(path)
            return index[key]

    def complete(self, request: Request) -> Reply:
        key = hashlib.sha256(request.cache_key_material().encode("utf-8")).hexdigest()[:24]
        n = self._number(key)
        stem = f"{n:04d}"
        answer = self.folder / f"{stem}.answer.json"
        if answer.is_file():
            text = answer.read_text(encoding="utf-8")
            if text.strip():
                return Reply(text, Usage(), model=self.id)
        prompt = self.folder / f"{stem}.prompt.md"
        if not prompt.is_file():
            (self.folder / f"{stem}.request.json").write_text(json.dumps(_request_dict(request), indent=1,
                                                                         ensure_ascii=False) + "\n",
                                                              encoding="utf-8")
            prompt.write_text(render_prompt(stem, request), encoding="utf-8")
        raise HandoffPending(self.folder, pending_prompts(self.folder) or [prompt])


def _request_dict(request: Request) -> dict[str, Any]:
    return {"stage": request.stage, "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "json_schema": request.json_schema}


def render_prompt(stem: str, request: Request) -> str:
    """The Markdown a person or an agent reads: what to do, the messages, and the answer format."""
    parts = [f"# skillgit teacher prompt {stem} (stage: {request.stage or 'teacher'})", "",
             f"Answer the conversation below as the teacher would: reply with ONE JSON object and save it as "
             f"`{stem}.answer.json` next to this file (nothing else in that file). Then run the same "
             "`skillgit sleep run --handoff …` command again.", ""]
    for message in request.messages:
        parts += [f"## {message.role}", "", message.content.rstrip("\n"), ""]
    if request.json_schema is not None:
        parts += ["## Answer format (JSON schema)", "", "```json",
                  json.dumps(request.json_schema, indent=1, ensure_ascii=False), "```", ""]
    else:
        parts += ["## Answer format", "", "A JSON object, as the conversation asks.", ""]
    return "\n".join(parts)


def request_from_file(path: Path) -> Request:
    """The `Request` a `<n>.request.json` file holds (for programs that answer prompts)."""
    from skillgit.llm.base import Message

    data = json.loads(path.read_text(encoding="utf-8"))
    return Request(tuple(Message(m["role"], m["content"]) for m in data["messages"]), stage=data.get("stage", ""),
                   json_schema=data.get("json_schema"))
