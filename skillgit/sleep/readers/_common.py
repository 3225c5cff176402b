"""Helpers every reader shares: turn assembly, tool-input summaries, output excerpts, JSONL and time parsing.

Invariants:
- `TurnBuilder` never lets a tool result become a user turn: results attach to the agent turn in progress (a new,
  empty agent turn is opened when a result arrives first), and consecutive agent events merge into one turn.
- `excerpt` keeps the head and the tail of long outputs, because test runners print their verdict last.
- Nothing here raises on odd input: wrong types become empty strings, unparsable lines are counted by the caller.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skillgit.sleep.model import MALFORMED, ToolCall, ToolResult, Turn

HEAD_CHARS = 600
TAIL_CHARS = 1600
SUMMARY_CHARS = 300

SHELL_TOOLS = {
    "bash", "shell", "shell_command", "exec_command", "local_shell", "powershell", "run_in_terminal",
    "copilot_runinterminal", "run_terminal_cmd", "terminal", "execute_command",
}
WRITE_TOOLS = {
    "edit", "write", "multiedit", "notebookedit", "apply_patch", "create", "str_replace_editor", "patch",
    "create_file", "replace_string_in_file", "insert_edit_into_file", "copilot_replacestring", "copilot_createfile",
    "copilot_insertedit", "edit_file", "search_replace", "write_file", "multi_replace_string_in_file", "texteditgroup",
}
_PATH_KEYS = ("file_path", "filePath", "path", "notebook_path", "target_file", "filename", "file")
_COMMAND_KEYS = ("command", "cmd", "commandLine", "script")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_EXIT_CODE = re.compile(r"(?i)\b(?:exit(?:ed)?(?: with)? code|exit status|process exited with code)[:\s]+(-?\d+)")


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a dict, else an empty one (records from disk may hold anything)."""
    return value if isinstance(value, dict) else {}


def excerpt(text: Any, head: int = HEAD_CHARS, tail: int = TAIL_CHARS) -> str:
    """`text` as a string of at most head + tail characters (plus a marker saying how much was cut)."""
    s = text if isinstance(text, str) else ("" if text is None else json.dumps(text, ensure_ascii=False))
    if len(s) <= head + tail:
        return s
    return f"{s[:head]}\n…[{len(s) - head - tail} chars cut]…\n{s[-tail:]}"


def short(text: str, limit: int = SUMMARY_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def exit_code_in(text: str) -> int | None:
    """The exit code a tool output announces ("Exit code 1", "Process exited with code 2"), if any."""
    match = _EXIT_CODE.search(text or "")
    return int(match.group(1)) if match else None


def patch_paths(patch: str) -> tuple[str, ...]:
    """Files named by an apply_patch envelope (`*** Update File: path`)."""
    return tuple(dict.fromkeys(m.strip() for m in _PATCH_FILE.findall(patch or "")))


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


def tool_call(name: str, arguments: Any, call_id: str = "") -> ToolCall:
    """A `ToolCall` from a tool name and its input (a dict, or a JSON string of one, or raw text)."""
    args: Any = arguments
    if isinstance(arguments, str):
        try:
            args = json.loads(arguments)
        except ValueError:
            args = arguments
    lname = (name or "").lower()
    command: str | None = None
    paths: list[str] = []
    if isinstance(args, dict):
        for key in _COMMAND_KEYS:
            if key in args and lname in SHELL_TOOLS | {"exec"}:
                command = _as_command(args[key])
                break
        for key in _PATH_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value:
                paths.append(value)
        for value in args.get("edits") or []:
            if isinstance(value, dict) and isinstance(value.get("file_path"), str):
                paths.append(value["file_path"])
        patch = args.get("input") or args.get("patch")
        if lname in ("apply_patch", "patch") and isinstance(patch, str):
            paths.extend(patch_paths(patch))
        summary = command or (paths[0] if paths else json.dumps(args, ensure_ascii=False, sort_keys=True))
    else:
        text = "" if args is None else str(args)
        if lname in ("apply_patch", "patch"):
            paths.extend(patch_paths(text))
        elif lname in SHELL_TOOLS:
            command = text
        summary = command or (", ".join(paths) if paths else text)
    return ToolCall(
        name=name or "?",
        summary=short(summary or ""),
        command=command,
        paths=tuple(dict.fromkeys(paths)),
        writes=lname in WRITE_TOOLS,
        call_id=call_id or "",
    )


def tool_result(output: Any, is_error: bool = False, call_id: str = "", exit_code: int | None = None) -> ToolResult:
    text = excerpt(output)
    if exit_code is None:
        exit_code = exit_code_in(text)
    return ToolResult(output=text, is_error=bool(is_error) or bool(exit_code), call_id=call_id or "",
                      exit_code=exit_code)


class TurnBuilder:
    """Collects events in order and yields alternating user / assistant turns (see the module invariants)."""

    def __init__(self) -> None:
        self._turns: list[Turn] = []
        self._agent: dict[str, Any] | None = None

    def _flush(self) -> None:
        if self._agent is not None:
            a = self._agent
            if a["text"] or a["calls"] or a["results"]:
                self._turns.append(Turn("assistant", "\n\n".join(a["text"]), tuple(a["calls"]), tuple(a["results"]),
                                        a["ts"]))
            self._agent = None

    def _open_agent(self, ts: str | None) -> dict[str, Any]:
        if self._agent is None:
            self._agent = {"text": [], "calls": [], "results": [], "ts": ts}
        return self._agent

    def user(self, text: str, ts: str | None = None) -> None:
        if not (text or "").strip():
            return
        self._flush()
        self._turns.append(Turn("user", text.strip(), timestamp=ts))

    def agent_text(self, text: str, ts: str | None = None) -> None:
        if (text or "").strip():
            self._open_agent(ts)["text"].append(text.strip())

    def call(self, call: ToolCall, ts: str | None = None) -> None:
        self._open_agent(ts)["calls"].append(call)

    def result(self, result: ToolResult, ts: str | None = None) -> None:
        self._open_agent(ts)["results"].append(result)

    def build(self) -> tuple[Turn, ...]:
        self._flush()
        return tuple(self._turns)


def read_jsonl(path: Path, counts: Counter[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file; a line that is not a JSON object is counted under `<malformed>`."""
    try:
        handle = path.open("r", encoding="utf-8", errors="replace")
    except OSError:
        counts[MALFORMED] += 1
        return
    with handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                counts[MALFORMED] += 1
                continue
            if isinstance(obj, dict):
                yield obj
            else:
                counts[MALFORMED] += 1


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
        for key in ("text", "value", "content"):
            if isinstance(content.get(key), str):
                return content[key]
        return ""
    if isinstance(content, list):
        return "\n".join(t for t in (text_of(c) for c in content) if t)
    return str(content)


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
    parsed = urlparse(uri)
    path = unquote(parsed.path)
    if re.match(r"^/[A-Za-z]:/", path):  # file:///c:/Users/x → c:/Users/x
        path = path[1:]
    return path or None
