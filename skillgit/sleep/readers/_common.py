"""Helpers every reader shares: the session being read (`Draft`), turn assembly, tool-input summaries, output
excerpts, JSONL and time parsing, the skills a tool call read.

A reader is a loop over records that hands each one to the function for its type (`dispatch`), which adds to a
`Draft` (or a reader's subclass of it, holding that reader's own state); `Draft.session` makes the `Session`.

Invariants:
- `TurnBuilder` never lets a tool result become a user turn: results attach to the agent turn in progress (a new,
  empty agent turn is opened when a result arrives first), and consecutive agent events merge into one turn. A skill
  attaches to the agent turn in progress, or to the next one when none is open or the person invoked it by a
  command (a skill loaded before the agent answered belongs to that answer); one `SkillUse` per (kind, name) per
  turn, a later one only fills a missing path.
- `excerpt` keeps the head and the tail of long outputs, because test runners print their verdict last; a tool
  result's excerpt also carries the raw `CUT_MARGIN` characters either side of its cut (`ToolResult.cut`, never
  serialised), for `Scrubber.scrub_session` to mask a secret the cut split.
- Nothing here raises on odd input: wrong types become empty strings, unparsable lines are counted by the caller.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from skillgit.errors import BAD_JSON
from skillgit.sleep.model import MALFORMED, Session, SkillHow, SkillUse, ToolCall, ToolResult, Turn

HEAD_CHARS = 600
TAIL_CHARS = 1600
SUMMARY_CHARS = 300
CUT_MARGIN = 160  # raw characters kept either side of an excerpt's cut for scrubbing (a credential's name and value)

SHELL_TOOLS = {
    "bash", "shell", "shell_command", "exec_command", "local_shell", "powershell", "run_in_terminal",
    "copilot_runinterminal", "run_terminal_cmd", "terminal", "execute_command",
}
WRITE_TOOLS = {
    "edit", "write", "multiedit", "notebookedit", "apply_patch", "create", "str_replace_editor", "patch",
    "create_file", "replace_string_in_file", "insert_edit_into_file", "copilot_replacestring", "copilot_createfile",
    "copilot_insertedit", "edit_file", "search_replace", "write_file", "multi_replace_string_in_file", "texteditgroup",
    "strreplace", "delete_file", "editnotebook",
}
_PATCH_TOOLS = ("apply_patch", "patch")
_PATH_KEYS = ("file_path", "filePath", "path", "notebook_path", "target_file", "filename", "file")
_PATH_KEY_SET = frozenset(_PATH_KEYS)
_COMMAND_KEYS = ("command", "cmd", "commandLine", "script")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_EXIT_CODE = re.compile(r"(?i)\b(?:exit(?:ed)?(?: with)? code|exit status|process exited with code)[:\s]+(-?\d+)")
_EXIT_WORD = re.compile(r"(?i)exit")  # every match of _EXIT_CODE holds it; used on text holding İ or ı

D = TypeVar("D", bound="Draft")


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a dict, else an empty one (records from disk may hold anything)."""
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    """`value` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _as_text(value: Any) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def excerpt(text: Any, head: int = HEAD_CHARS, tail: int = TAIL_CHARS) -> str:
    """`text` as a string of at most head + tail characters (plus a marker saying how much was cut)."""
    return cut_excerpt(text, head, tail)[0]


def cut_excerpt(text: Any, head: int = HEAD_CHARS, tail: int = TAIL_CHARS,
                margin: int = CUT_MARGIN) -> tuple[str, tuple[int, str, str] | None]:
    """`excerpt(text)` and, when it cut, (head length, the `margin` characters after the head, the `margin`
    before the tail): what scrubbing needs to mask a secret the cut split (`ToolResult.cut`)."""
    s = text if isinstance(text, str) else _as_text(text)
    if len(s) <= head + tail:
        return s, None
    end = len(s) - tail
    cut = (head, s[head:min(end, head + margin)], s[max(head, end - margin):end])
    return f"{s[:head]}\n…[{len(s) - head - tail} chars cut]…\n{s[end:]}", cut


def _excerpt_exit_code(output: str, head: int = HEAD_CHARS, tail: int = TAIL_CHARS) -> int | None:
    """`exit_code_in(excerpt(output))` for an output `cut_excerpt` cut (a string longer than head + tail)."""
    code = exit_code_in(output[:head])
    return code if code is not None else exit_code_in(output[len(output) - tail:])


def short(text: str, limit: int = SUMMARY_CHARS) -> str:
    if " " in text or not text.isprintable():  # (a printable text without " " holds no whitespace to collapse)
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def exit_code_in(text: str) -> int | None:
    """The exit code a tool output announces ("Exit code 1", "Process exited with code 2"), if any."""
    if not text or ("x" not in text and "X" not in text):  # every match holds "exit": no other character is x
        return None
    if "\u0130" in text or "\u0131" in text:  # İ, ı: the only non-ASCII characters `(?i)i` matches
        match = _EXIT_CODE.search(text) if _EXIT_WORD.search(text) else None
        return int(match.group(1)) if match else None
    # the regex (case-insensitive, from a word boundary) has no literal the engine can skip to: it is tried only
    # where a match can start, at each "exit" or the "process " before one. One byte per character (a non-ASCII
    # one becomes "?", and no other matches a letter of "exit" case-insensitively) keeps offsets when lower-cased.
    low = text.encode("ascii", "replace").lower()
    at = low.find(b"exit")
    while at >= 0:
        for start in ((at - 8, at) if at >= 8 and low.startswith(b"process ", at - 8) else (at,)):
            match = _EXIT_CODE.match(text, start)
            if match:
                return int(match.group(1))
        at = low.find(b"exit", at + 1)
    return None


def patch_paths(patch: str) -> tuple[str, ...]:
    """Files named by an apply_patch envelope (`*** Update File: path`)."""
    return tuple(dict.fromkeys(m.strip() for m in _PATCH_FILE.findall(patch or "")))


# ------------------------------------------------------------------------------------------------ tool calls
def _as_command(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        # ["bash", "-lc", "pytest -q"] → the script; ["pytest", "-q"] → joined
        if len(value) >= 3 and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and value[1].startswith("-"):
            return value[-1]
        return " ".join(value)
    if isinstance(value, dict):
        return _as_command(value.get("original") or value.get("command"))
    return None


def _parsed(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except BAD_JSON:
            return arguments
    return arguments


def _dict_command(lname: str, args: dict[str, Any]) -> str | None:
    if lname not in SHELL_TOOLS and lname != "exec":
        return None
    key = next((k for k in _COMMAND_KEYS if k in args), None)
    return _as_command(args[key]) if key else None


def _dict_paths(lname: str, args: dict[str, Any]) -> list[str]:
    named = not _PATH_KEY_SET.isdisjoint(args)  # most inputs name one path key or none: looked up only then
    paths = [v for k in _PATH_KEYS if k in args and isinstance(v := args[k], str) and v] if named else []
    edits = args.get("edits")
    for edit in edits if isinstance(edits, list) else []:
        if isinstance(edit, dict) and isinstance(edit.get("file_path"), str):
            paths.append(edit["file_path"])
    patch = args.get("input") or args.get("patch")
    if lname in _PATCH_TOOLS and isinstance(patch, str):
        paths.extend(patch_paths(patch))
    return paths


def tool_call(name: str, arguments: Any, call_id: str = "") -> ToolCall:
    """A `ToolCall` from a tool name and its input (a dict, or a JSON string of one, or raw text)."""
    args, lname = _parsed(arguments), (name or "").lower()
    if isinstance(args, dict):
        command, paths = _dict_command(lname, args), _dict_paths(lname, args)
        summary = command or (paths[0] if paths else json.dumps(args, ensure_ascii=False, sort_keys=True))
    else:
        text = "" if args is None else str(args)
        paths = list(patch_paths(text)) if lname in _PATCH_TOOLS else []
        command = text if lname in SHELL_TOOLS and lname not in _PATCH_TOOLS else None
        summary = command or (", ".join(paths) if paths else text)
    values = {"name": name or "?", "summary": short(summary or ""), "command": command,
              "paths": tuple(dict.fromkeys(paths)), "writes": lname in WRITE_TOOLS, "call_id": call_id or ""}
    return _new(ToolCall, values)


def tool_result(output: Any, is_error: bool = False, call_id: str = "", exit_code: int | None = None) -> ToolResult:
    output = output if isinstance(output, str) else _as_text(output)
    text, cut = cut_excerpt(output)
    if exit_code is None:
        # no match of an exit code reaches into or across the excerpt's marker (it holds no "exit", nor ":" or
        # whitespace after its first character), so the excerpt's first match is its head's, else its tail's:
        # looked for in the output's own head and tail, which stay one byte per character where the output is
        # (the marker's "…" makes the excerpt two)
        exit_code = exit_code_in(text) if cut is None else _excerpt_exit_code(output)
    return _new(ToolResult, {"output": text, "is_error": bool(is_error) or bool(exit_code), "call_id": call_id or "",
                             "exit_code": exit_code, "cut": cut})


# the records a reader makes per tool call are plain frozen dataclasses (no __post_init__, no slots): one is made by
# filling its __dict__ with every field (a frozen dataclass's __init__ sets each through object.__setattr__, ~0.6 µs
# a record); tests/test_harvest_speed.py checks the records are the ones __init__ makes
_PLAIN = all(not hasattr(cls, "__post_init__") and "__slots__" not in vars(cls) for cls in (ToolCall, ToolResult))
_R = TypeVar("_R", ToolCall, ToolResult)


def _new(cls: type[_R], values: dict[str, Any]) -> _R:
    """`cls(**values)`, `values` naming every field of `cls`."""
    if not _PLAIN:
        return cls(**values)
    record = object.__new__(cls)
    record.__dict__.update(values)
    return record


# ------------------------------------------------------------------------------------------------ skills
SKILL_FILE = "SKILL.md"
INSTRUCTION_FILES = frozenset({"AGENTS.md", "CLAUDE.md", "GEMINI.md", "copilot-instructions.md"})
# programs that only read the files they name (`sed` only without -i); a shell call of one of them on a SKILL.md
# is the agent reading that skill (Codex, Copilot and OpenCode read skills this way, or with their read tool)
_READ_PROGRAMS = frozenset({"cat", "head", "tail", "less", "more", "bat", "nl", "sed", "awk", "type", "get-content"})
_SEGMENT = re.compile(r"&&|\|\||[;|\n]")


def skill_at(path: str, how: SkillHow = "read") -> SkillUse | None:
    """The skill (a `SKILL.md`: named after its folder) or instructions file a path names, if it names one."""
    parts = [p for p in re.split(r"[/\\]", path.strip().strip("'\"")) if p]
    if not parts:
        return None
    if parts[-1] == SKILL_FILE and len(parts) >= 2:
        return SkillUse(parts[-2], "skill", how, path)
    if parts[-1] in INSTRUCTION_FILES:
        return SkillUse(parts[-1], "instructions", how, path)
    return None


def skill_named(name: Any, how: SkillHow, path: Any = None) -> SkillUse | None:
    """A `SkillUse` for a skill a source names directly (its skill tool, its own event), if the name is usable."""
    name = as_str(name)
    return SkillUse(name.strip(), "skill", how, as_str(path)) if name and name.strip() else None


def _read_targets(command: str) -> list[str]:
    targets: list[str] = []
    for segment in _SEGMENT.split(command):
        try:
            words = shlex.split(segment)
        except ValueError:
            words = segment.split()
        if not words or words[0].rsplit("/", 1)[-1].lower() not in _READ_PROGRAMS:
            continue
        if words[0].endswith("sed") and any(w.startswith("-i") or w == "--in-place" for w in words):
            continue
        targets.extend(w for w in words[1:] if not w.startswith("-"))
    return targets


def skills_read(call: ToolCall) -> tuple[SkillUse, ...]:
    """The skills and instruction files a tool call read: a non-writing tool naming a `SKILL.md` / `AGENTS.md`
    path, or a shell command that only reads one (`cat …/SKILL.md`, `sed -n 1,80p …`)."""
    if call.writes:
        return ()
    # every file skill_at names ends in ".md": a command without "md" is not split into words (shlex is slow)
    named = [p for p in call.paths if "md" in p]
    if call.command and "md" in call.command:
        named += _read_targets(call.command)
    if not named:
        return ()
    found = (skill_at(p) for p in named)
    return tuple(dict.fromkeys(u for u in found if u is not None))


# ------------------------------------------------------------------------------------------------ turns
@dataclass
class _AgentTurn:
    ts: str | None
    text: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    skills: list[SkillUse] = field(default_factory=list)

    def turn(self) -> Turn | None:
        if not (self.text or self.calls or self.results or self.skills):
            return None
        return Turn("assistant", "\n\n".join(self.text), tuple(self.calls), tuple(self.results), self.ts,
                    tuple(self.skills))


def _merge_skill(skills: list[SkillUse], use: SkillUse) -> None:
    for i, known in enumerate(skills):
        if (known.kind, known.name) == (use.kind, use.name):
            if known.path is None and use.path:
                skills[i] = replace(known, path=use.path)
            return
    skills.append(use)


class TurnBuilder:
    """Collects events in order and yields alternating user / assistant turns (see the module invariants)."""

    def __init__(self) -> None:
        self._turns: list[Turn] = []
        self._agent: _AgentTurn | None = None
        self._pending: list[SkillUse] = []

    def _flush(self) -> None:
        if self._agent is not None:
            turn = self._agent.turn()
            if turn is not None:
                self._turns.append(turn)
            self._agent = None

    def _open_agent(self, ts: str | None) -> _AgentTurn:
        if self._agent is None:
            self._agent = _AgentTurn(ts, skills=self._pending)
            self._pending = []
        return self._agent

    def user(self, text: str, ts: str | None = None) -> None:
        if not (text or "").strip():
            return
        self._flush()
        self._turns.append(Turn("user", text.strip(), timestamp=ts))

    def agent_text(self, text: str, ts: str | None = None) -> None:
        if (text or "").strip():
            self._open_agent(ts).text.append(text.strip())

    def call(self, call: ToolCall, ts: str | None = None) -> None:
        self._open_agent(ts).calls.append(call)
        for use in skills_read(call):
            self.skill(use)

    def result(self, result: ToolResult, ts: str | None = None) -> None:
        self._open_agent(ts).results.append(result)

    def skill(self, use: SkillUse | None) -> None:
        if use is None:
            return
        current = self._agent if use.how != "command" else None  # a command's skill serves the answer to it
        _merge_skill(current.skills if current is not None else self._pending, use)

    def build(self) -> tuple[Turn, ...]:
        self._flush()
        if self._pending and self._turns:  # loaded, then nothing answered: the last answer (or a turn of its own)
            last = self._turns[-1]
            if last.role == "assistant":
                self._turns[-1] = replace(last, skills=last.skills + tuple(self._pending))
            else:
                self._turns.append(Turn("assistant", skills=tuple(self._pending)))
            self._pending = []
        return tuple(self._turns)


# ------------------------------------------------------------------------------------------------ the session
class Draft:
    """One session being read: its turns, metadata (`keep`), record counts and time span. Readers subclass it for
    state of their own and hand it to the function of each record type (`dispatch`)."""

    def __init__(self, source: str, path: Path) -> None:
        self.source, self.path = source, path
        self.turns = TurnBuilder()
        self.counts: Counter[str] = Counter()
        self.meta: dict[str, str] = {}
        self.total = 0
        self.started: str | None = None
        self.ended: str | None = None

    def unknown(self, kind: object) -> None:
        self.counts[str(kind)] += 1

    def stamp(self, value: Any) -> str | None:
        """Note a record's timestamp (the first and last make the session's span); returns it when it is one."""
        ts = as_str(value)
        if ts:
            self.started = self.started or ts
            self.ended = ts
        return ts

    def keep(self, **values: Any) -> None:
        """Remember each non-empty string value under its key, unless the key already has one (the first wins)."""
        meta = self.meta
        for key, value in values.items():
            if value and key not in meta and isinstance(value, str):
                meta[key] = value

    def session(self, session_id: str, **fields: Any) -> Session:
        fields.setdefault("started", self.started)
        fields.setdefault("ended", self.ended)
        return Session(source=self.source, session_id=session_id, turns=self.turns.build(), path=str(self.path),
                       unknown_records=dict(self.counts), total_records=self.total, **fields)


def ignore(draft: Draft, record: dict[str, Any]) -> None:
    """The handler of a known record type that carries nothing a session needs."""


def dispatch(handlers: Mapping[Any, Callable[[D, dict[str, Any]], None]], kind: Any, draft: D,
             record: dict[str, Any]) -> None:
    """Hand `record` to the function for its type; an unknown type is counted, never an error."""
    handler = handlers.get(kind) if isinstance(kind, str) else None
    if handler is None:
        draft.unknown(kind)
    else:
        handler(draft, record)


# ------------------------------------------------------------------------------------------------ files and values
def read_jsonl(path: Path, counts: Counter[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file; a line that is not a JSON object is counted under `<malformed>`.

    What it reads is defined by `read_jsonl_text`: the file decoded as UTF-8 (bad bytes replaced), split into
    lines at `\n`, `\r\n` or `\r`, each line read by `json.loads` (`_json_line`). It reads the file's bytes
    instead, and hands a line to a JSON decoder in C or Rust (`_decoder`: msgspec's, else jiter's; ~2× the
    stdlib parser) when it holds no `\r`: a line it decodes to an object is one the definition reads to the
    equal object (they reject what json accepts beyond the standard: NaN, Infinity, out-of-range floats for msgspec,
    lone surrogates; invalid UTF-8, which the definition replaces); any other line goes the definition's way."""
    decode = _DECODE[0] if _DECODE else _decoder()
    if decode is _JITER[0] and 0 < sys.get_int_max_str_digits() < JITER_INT_DIGITS:
        decode = None  # jiter reads integers json.loads refuses under a lowered limit: the definition reads them
    if decode is None:
        yield from read_jsonl_text(path, counts)
        return
    try:
        handle = path.open("rb")
    except OSError:
        counts[MALFORMED] += 1
        return
    with handle:
        for raw in handle:
            if b"\r" not in raw:  # a line the definition would split further, or whose ending it translates
                try:
                    obj = decode(raw)
                except (ValueError, RecursionError):  # msgspec's DecodeError is a ValueError
                    pass
                else:
                    if type(obj) is dict:
                        yield obj
                        continue
            for line in _text_lines(raw):
                obj = _json_line(line, counts)
                if obj is not None:
                    yield obj


def read_jsonl_text(path: Path, counts: Counter[str]) -> Iterator[dict[str, Any]]:
    """`read_jsonl` by its definition: the file read as text (universal newlines), each line by `_json_line`."""
    try:
        handle = path.open("r", encoding="utf-8", errors="replace")
    except OSError:
        counts[MALFORMED] += 1
        return
    with handle:
        for line in handle:
            obj = _json_line(line, counts)
            if obj is not None:
                yield obj


def _text_lines(raw: bytes) -> list[str]:
    """The lines the text reader makes of the bytes of one `\n`-ended line: decoded with bad bytes replaced (a
    `\n` or `\r` is never part of a multi-byte sequence, so line by line decodes as the whole file does), split
    after each `\r\n`, `\r` or `\n`, each ending made `\n`."""
    text = raw.decode("utf-8", "replace")
    if "\r" not in text:
        return [text]
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


_DECODE: list[Callable[[bytes], Any] | None] = []  # the fast decoder, looked up on first use (`_decoder`)
_JITER: list[Callable[[bytes], Any] | None] = [None]  # jiter's, when `_decoder` chose it
JITER_MIN = (0, 19)  # the jiter release its reading was checked against (tests/test_harvest_speed.py)
JITER_INT_DIGITS = 4300  # jiter refuses integers of more digits, json.loads those over sys.get_int_max_str_digits()


def _decoder() -> Callable[[bytes], Any] | None:
    """The JSON decoder `read_jsonl` hands lines to, imported the first time a JSONL file is read (an import costs
    ~30 ms, which a command that reads none should not pay): msgspec's (the optional `fast` extra), else jiter's
    (`from_json`; the openai and anthropic SDKs depend on jiter: the default install has it) when it is at least
    `JITER_MIN`; None without either: the definition reads every line."""
    if not _DECODE:
        try:
            import msgspec
        except ImportError:  # (tests/test_harvest_speed.py reads without it)
            _DECODE.append(_jiter_decoder())
            _JITER[0] = _DECODE[0]
        else:
            _DECODE.append(msgspec.json.Decoder().decode)
    return _DECODE[0]


def _jiter_decoder() -> Callable[[bytes], Any] | None:
    """jiter's `from_json`, defaults kept (NaN, Infinity read as json reads them), from release `JITER_MIN` on."""
    try:
        import jiter
    except ImportError:
        return None
    found = str(getattr(jiter, "__version__", "0")).split(".")[:2]
    version = tuple(int(part) if part.isdigit() else 0 for part in found)
    return jiter.from_json if version >= JITER_MIN else None


# what json.loads runs, without its two whitespace regexes per call
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _json_line(line: str, counts: Counter[str]) -> dict[str, Any] | None:
    if line[:1] == "{":  # the common case, decided as json.loads decides it; anything else takes the path below
        try:
            obj, end = _SCAN(line, 0)
        except (StopIteration, ValueError, RecursionError):  # (BAD_JSON)
            pass
        else:
            if end == len(line) or line[end:].isspace():
                return obj
    if not line or line.isspace():
        return None
    try:  # json.loads skips JSON's whitespace around a value: no stripped copy of every line is made
        obj = json.loads(line)
    except BAD_JSON:
        try:  # other whitespace at an end (a form feed, a no-break space) is stripped as before
            obj = json.loads(line.strip())
        except BAD_JSON:
            obj = None
    if not isinstance(obj, dict):
        counts[MALFORMED] += 1
        return None
    return obj


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None


def iso_from_ms(value: Any) -> str | None:
    """Milliseconds (or seconds) since the epoch → ISO-8601 UTC; ISO strings pass through."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, (int, float)) and value > 0:
        seconds = value / 1000.0 if value > 1e11 else float(value)
        return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat().replace("+00:00", "Z")
    return None


def text_of(content: Any) -> str:
    """Text of a string, a `{value}` markdown object, or a list of `{type: text, text}` blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        key = next((k for k in ("text", "value", "content") if isinstance(content.get(k), str)), None)
        return content[key] if key else ""
    if isinstance(content, list):
        return "\n".join(t for t in (text_of(c) for c in content) if t)
    return str(content)


def blocks_of(content: Any) -> list[dict[str, Any]]:
    """Content as a list of blocks: a string is one `text` block; non-dict items are dropped."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def tag_body(text: str, tag: str) -> str | None:
    """The text inside the first `<tag>…</tag>` of `text`, stripped; None when there is no such element."""
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return match.group(1).strip() if match else None


def without_tags(text: str, tags: tuple[str, ...]) -> str:
    """`text` without the `<tag>…</tag>` elements of the given tags (context an agent injected), stripped."""
    for tag in tags:
        text = re.sub(rf"<{tag}(?:\s[^>]*)?>.*?</{tag}>", "", text, flags=re.DOTALL)
    return text.strip()


def file_uri_path(uri: Any) -> str | None:
    """`file:///home/x/proj` (or a VS Code UriComponents dict) → `/home/x/proj`."""
    from urllib.parse import unquote, urlparse

    if isinstance(uri, dict):
        path = uri.get("fsPath") or uri.get("path")
        return path if isinstance(path, str) else None
    if not isinstance(uri, str) or not uri:
        return None
    if not uri.startswith("file:"):
        return uri if uri.startswith("/") else None
    path = unquote(urlparse(uri).path)
    if re.match(r"^/[A-Za-z]:/", path):  # file:///c:/Users/x → c:/Users/x
        path = path[1:]
    return path or None
