"""Handoff: no API key needed — the user's own agent plays the teacher through files.

`HandoffLLM(folder)` is a teacher `LLM`. For each request it has not seen it writes `<n>.prompt.md` (the system
and user messages, and the answer format as a JSON schema) and `<n>.request.json` (the same, for programs) into
`folder`. Whoever answers (a person, or their coding agent: "answer every prompt in this folder", or the MCP tools
`pending_questions` / `answer` of `skillgit mcp`) writes `<n>.answer.json`; the call returns it as the reply. The
call waits for the answer up to `wait_s` seconds (0: not at all), then raises `HandoffPending`, which stops the run;
the same command resumes it. `model.teacher_backend: handoff` is this backend for `skillgit train` (`BACKEND`);
`skillgit sleep run --handoff DIR` uses it too (skillgit/sleep/night.py).

Contracts:
- `<n>` is fixed per request: `index.json` maps a hash of the request (the call journal's key material) to its
  number, so prompts keep their numbers across runs and a repeated request reuses its file: a request is never
  asked twice. Numbers start at 1 and are written with four digits (`0001.prompt.md`). Every file is written to a
  temporary name and renamed into place, so a kill never leaves half a prompt, index or answer.
- What is written is redacted (`skillgit.redact`): prompts quote trajectories, which may quote secrets.
- A reply served from a file costs nothing (zero usage). The call journal (`CachedLLM`) stores it like any reply,
  so a resumed run never asks again — even if the answer files are deleted afterwards. An answer that is not the
  JSON asked for is a normal reply: the caller's parser records it as malformed output and skips it, as it does a
  model's (the one repair request `complete_json` sends is a new prompt in the folder).
- `HandoffPending` is a `SkillgitError` (exit 5), not an `LLMError`: the training loop records LLMErrors and goes
  on, but a missing answer must stop the run where it is (a step's candidate is only built after every teacher
  call of the step returned), so that the next run resumes it. Its hint says how to answer and resume.
- Thread-safe: the loop asks several prompts at once; all of them get written before the run stops (and, waiting,
  every one waits for its own answer). A stop asked for by a signal ends the wait at once.
- `write_answer(folder, id, text)` is the one way the MCP server stores an answer: the id must be a pending prompt
  of the folder (`^\\d{4,6}$`), the text at most `MAX_ANSWER_CHARS` characters; it is redacted and stored as data,
  never over an existing answer. `questions(folder)` lists the pending prompts with their messages.
- The folder (`folder_for`): `model.teacher.handoff.dir` relative to the repository root, which must resolve
  inside the repository (its working tree or its git dir; never a path outside it); by default
  `<git-common-dir>/skillgit/handoff`. A folder skillgit creates in the working tree gets a `.gitignore` of `*`.
- The teacher also judges rubric tasks (`skillgit.rubric.RubricScorer`). A scorer's SkillgitError would make the
  trajectory *unknown* and the night go on, so the judge is wrapped in `Deferring`: a missing answer raises
  `HandoffDeferred` (not a SkillgitError), which passes the scorer and the rollout untouched, stops the training
  loop like any crash (its state settled and saved) and is turned back into `HandoffPending` by the night.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from skillgit.errors import ExitCode, SkillgitError, stop_requested
from skillgit.llm.base import Reply, Request
from skillgit.llm.registry import Backend
from skillgit.redact import redact
from skillgit.types import Usage

INDEX = "index.json"
ID_RE = re.compile(r"^\d{4,6}$")
MAX_ANSWER_CHARS = 200_000
POLL_S = 0.5
DEFAULT_DIR = "skillgit/handoff"  # under the repository's git dir: never committed, never in the working tree
SLEEP_RESUME = ("have your agent answer each <n>.prompt.md there as JSON in <n>.answer.json (the format is at the "
                "end of each prompt), then run the same `skillgit sleep run --handoff {folder}` again: the night "
                "resumes where it stopped")
TRAIN_RESUME = ("answer them from your own agent session through skillgit's MCP tools `pending_questions` and "
                "`answer` (`skillgit mcp`), or write each answer as JSON into <n>.answer.json next to "
                "<n>.prompt.md; then run `skillgit train` again: the run resumes where it stopped and asks nothing "
                "twice")


class HandoffPending(SkillgitError):
    """Some teacher prompts wait for answers in the handoff folder; the run resumes when they are there."""

    def __init__(self, folder: Path, pending: list[Path], resume: str = SLEEP_RESUME):
        names = ", ".join(p.name for p in pending[:5]) + (f" and {len(pending) - 5} more" if len(pending) > 5 else "")
        super().__init__(f"waiting for {len(pending)} teacher answer(s) in {folder}: {names}",
                         resume.replace("{folder}", str(folder)), ExitCode.BUDGET)
        self.folder = folder
        self.pending = pending
        self.resume = resume


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


def _answer_of(prompt: Path) -> Path:
    return prompt.with_name(prompt.name.replace(".prompt.md", ".answer.json"))


def pending_prompts(folder: Path) -> list[Path]:
    """The prompt files of `folder` that have no answer file yet, in number order."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.prompt.md") if not _answer_of(p).is_file())


def answered(folder: Path) -> int:
    return len(list(folder.glob("*.answer.json"))) if folder.is_dir() else 0


def _write(path: Path, text: str) -> None:
    """`text` into `path`, whole or not at all (a temporary file renamed into place)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def read_plain(path: Path, limit: int) -> str | None:
    """The text of `path` (at most `limit` bytes; a longer answer is cut, so malformed), None when it does not
    exist; never through a link (an answer or request file that is one is refused: it could point anywhere)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SkillgitError(f"{path} cannot be read ({exc.strerror or exc})",
                            "files in the handoff folder must be plain files skillgit or your agent wrote") from None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit).decode("utf-8", errors="replace")


class HandoffLLM:
    """A teacher answered through files (see the module contract)."""

    def __init__(self, folder: Path, label: str = "agent", *, wait_s: float = 0.0, resume: str = SLEEP_RESUME,
                 sleep: Callable[[float], None] = time.sleep):
        self.folder = Path(folder)
        self.label = label
        self.wait_s = wait_s
        self.resume = resume
        self._sleep = sleep
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
            try:
                index: dict[str, int] = json.loads(read_plain(path, 1 << 26) or "{}")
            except ValueError:
                raise SkillgitError(f"{path} is not the JSON skillgit wrote", "restore it, or remove the handoff "
                                    "folder to ask every open question again (answers already read are in the "
                                    "call journal)") from None
            if key not in index:
                index[key] = max(index.values(), default=0) + 1
                _write(path, json.dumps(index, indent=1, sort_keys=True) + "\n")
            return index[key]

    def _read(self, answer: Path) -> Reply | None:
        text = read_plain(answer, MAX_ANSWER_CHARS * 4)
        return Reply(text, Usage(), model=self.id) if text and text.strip() else None

    def complete(self, request: Request) -> Reply:
        key = hashlib.sha256(request.cache_key_material().encode("utf-8")).hexdigest()[:24]
        stem = f"{self._number(key):04d}"
        answer = self.folder / f"{stem}.answer.json"
        reply = self._read(answer)
        if reply is not None:
            return reply
        prompt = self.folder / f"{stem}.prompt.md"
        if not prompt.is_file():
            _write(self.folder / f"{stem}.request.json",
                   json.dumps(_request_dict(request), indent=1, ensure_ascii=False) + "\n")
            _write(prompt, render_prompt(stem, request))
        deadline = time.monotonic() + self.wait_s
        while time.monotonic() < deadline and not stop_requested():
            self._sleep(min(POLL_S, max(deadline - time.monotonic(), 0.0)))
            reply = self._read(answer)
            if reply is not None:
                return reply
        raise HandoffPending(self.folder, pending_prompts(self.folder) or [prompt], self.resume)


def _request_dict(request: Request) -> dict[str, Any]:
    return {"stage": request.stage, "json_schema": request.json_schema, "temperature": request.temperature,
            "max_tokens": request.max_tokens, "seed": request.seed,
            "messages": [{"role": m.role, "content": redact(m.content)} for m in request.messages]}


def render_prompt(stem: str, request: Request) -> str:
    """The Markdown a person or an agent reads: what to do, the messages, and the answer format (redacted)."""
    parts = [f"# skillgit teacher prompt {stem} (stage: {request.stage or 'teacher'})", "",
             f"Answer the conversation below as the teacher would: reply with ONE JSON object and save it as "
             f"`{stem}.answer.json` next to this file (nothing else in that file). Then run the skillgit command "
             "that stopped again.", ""]
    for message in request.messages:
        parts += [f"## {message.role}", "", redact(message.content).rstrip("\n"), ""]
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
                   json_schema=data.get("json_schema"), temperature=data.get("temperature"),
                   max_tokens=data.get("max_tokens"), seed=data.get("seed"))


# ---------------------------------------------------------------------------------------------- answering
@dataclass(frozen=True)
class Question:
    """One pending prompt: its id (`0003`), stage, messages and answer format (a JSON schema, or None)."""

    id: str
    stage: str
    messages: tuple[dict[str, str], ...]
    answer_format: dict[str, Any] | None

    def chars(self) -> int:
        return sum(len(m.get("content", "")) for m in self.messages)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "stage": self.stage, "prompt": list(self.messages),
                "answer_format": self.answer_format}


def questions(folder: Path) -> list[Question]:
    """The pending prompts of `folder`, in number order (a prompt whose request file is unreadable is skipped)."""
    out = []
    for prompt in pending_prompts(folder):
        stem = prompt.name.removesuffix(".prompt.md")
        try:
            data = json.loads(read_plain(folder / f"{stem}.request.json", 1 << 24) or "")
            messages = tuple({"role": str(m["role"]), "content": str(m["content"])} for m in data["messages"])
        except (SkillgitError, ValueError, KeyError, TypeError):
            continue
        schema = data.get("json_schema")
        out.append(Question(stem, str(data.get("stage") or ""), messages, schema if isinstance(schema, dict)
                            else None))
    return out


def write_answer(folder: Path, qid: str, text: str) -> Path:
    """Store `text` as the answer to pending prompt `qid` (see the module contract); SkillgitError when the id is
    malformed, unknown or already answered, or the text is empty or too long."""
    qid = (qid or "").strip()
    if not ID_RE.match(qid):
        raise SkillgitError(f"invalid question id {qid[:40]!r}", "give an id as pending_questions lists it, e.g. 0003")
    prompt = folder / f"{qid}.prompt.md"
    answer = _answer_of(prompt)
    if answer.is_file():
        raise SkillgitError(f"question {qid} is already answered", "answers are final: the run reads each once; "
                            "call pending_questions for the ones still open")
    if not prompt.is_file():
        raise SkillgitError(f"no pending question {qid} in {folder}", "call pending_questions for the open ones")
    if not text.strip():
        raise SkillgitError(f"the answer to question {qid} is empty", "answer with the JSON object the prompt asks")
    if len(text) > MAX_ANSWER_CHARS:
        raise SkillgitError(f"the answer to question {qid} has {len(text):,} characters, over {MAX_ANSWER_CHARS:,}",
                            "answer with the JSON object the prompt asks, within its limits")
    tmp = folder / f".{qid}.answer.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(redact(text))
        handle.flush()
        os.fsync(handle.fileno())
    try:
        os.link(tmp, answer)  # never over an answer another caller stored meanwhile
    except FileExistsError:
        raise SkillgitError(f"question {qid} is already answered", "call pending_questions for the open ones") \
            from None
    finally:
        tmp.unlink(missing_ok=True)
    return answer


# ---------------------------------------------------------------------------------------------- the backend
def folder_for(cfg: Any, root: Path) -> Path:
    """The handoff folder of a project (see the module contract); ConfigError when it lies outside the
    repository."""
    from skillgit.errors import ConfigError
    from skillgit.inbox import git_common_dir

    configured = str(cfg.model.teacher.handoff.dir or "").strip()
    common = git_common_dir(root)
    folder = (root / configured) if configured else (common / DEFAULT_DIR)
    real = Path(os.path.realpath(folder))
    roots = {Path(os.path.realpath(root)), Path(os.path.realpath(common))}
    if not any(real == r or r in real.parents for r in roots):
        raise ConfigError(f"model.teacher.handoff.dir: {configured!r} resolves to {real}, outside the repository",
                          "give a folder inside the repository (relative to its root), or leave it empty for "
                          f"<git dir>/{DEFAULT_DIR}")
    return folder


def ensure_private(folder: Path, root: Path) -> None:
    """Create `folder`; in the working tree it gets a `.gitignore` of `*` unless it has one (prompts quote
    trajectories: they are never committed by accident)."""
    folder.mkdir(parents=True, exist_ok=True)
    real = Path(os.path.realpath(folder))
    top = Path(os.path.realpath(root))
    in_tree = top in real.parents and ".git" not in real.relative_to(top).parts
    if in_tree and not os.path.lexists(folder / ".gitignore"):
        _write(folder / ".gitignore", "# written by skillgit: teacher handoff prompts stay local\n*\n")


def _root(env: Mapping[str, str]) -> Path:
    from skillgit.llm.factory import PROJECT_ROOT_ENV

    root = env.get(PROJECT_ROOT_ENV)
    if not root:
        raise SkillgitError("the handoff teacher needs a project (a repository with skillgit.yaml)",
                            "run skillgit inside the repository")
    return Path(root)


def _build(role: str, model: str, bcfg: Any, cfg: Any, env: Mapping[str, str], /, **_: Any) -> HandoffLLM:
    root = _root(env)
    folder = folder_for(cfg, root)
    ensure_private(folder, root)
    return HandoffLLM(folder, wait_s=float(bcfg.handoff.wait_s), resume=TRAIN_RESUME)


def plan(cfg: Any, root: Path | None) -> str:
    """What handoff mode will do, in one paragraph (for `train --dry-run` and `doctor`)."""
    wait = float(cfg.model.teacher.handoff.wait_s)
    where = cfg.model.teacher.handoff.dir or f"<git dir>/{DEFAULT_DIR}"
    counts = ""
    if root is not None:
        try:
            where = str(folder_for(cfg, root))
            counts = f" (now {len(pending_prompts(Path(where)))} pending, {answered(Path(where))} answered)"
        except SkillgitError as exc:
            return f"handoff teacher: {exc.message} ({exc.hint})"
    then = (f"waits up to {wait:g} s for each answer, then stops" if wait > 0 else "stops at once")
    return (f"handoff teacher: no model is called; each teacher request is written (redacted) to {where}{counts} "
            f"for your own agent to answer (MCP tools pending_questions / answer of `skillgit mcp`, or "
            f"<n>.answer.json files); the run {then} with exit 5, and `skillgit train` resumes it, asking nothing "
            "twice")


def _describe(role: str, model: str, bcfg: Any, env: Mapping[str, str], /) -> str:
    where = bcfg.handoff.dir or f"<git dir>/{DEFAULT_DIR}"
    return f"files in {where}, answered by your own agent"


BACKEND = Backend("handoff", frozenset({"teacher"}), _build, _describe,
                  "the teacher's requests as files your own agent answers (no API key)", project=True)
