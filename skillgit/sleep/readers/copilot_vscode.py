"""GitHub Copilot Chat in VS Code: `<VS Code user dir>/User/workspaceStorage/<id>/chatSessions/<session>.json[l]`.

Format (microsoft/vscode, `src/vs/workbench/contrib/chat/common/chatModel.ts`, `ISerializableChatData` v3):
`{version, sessionId, creationDate, lastMessageDate, customTitle, requesterUsername, responderUsername,
requests: [{requestId, message: {text, parts} | string, timestamp, agent: {id, extensionId: {value, _lower}, …},
response: [parts], result, isCanceled, …}]}`.
Response parts are `IMarkdownString` objects (`{value}`, no `kind`: `toExport` stores markdown content that way)
or objects with a `kind`: `toolInvocationSerialized` (`toolId`, `toolCallId`, `invocationMessage`,
`toolSpecificData` — `{kind: "terminal", commandLine: {original}, terminalCommandState: {exitCode}}` or
`{kind: "input", rawInput}` —, `resultDetails` `{input, output: [{value}], isError}`), `textEditGroup` (`uri`),
`inlineReference`, `codeblockUri`, `progressMessage`, `thinking`, `undoStop`, ….
Newer VS Code writes `.jsonl` instead (`src/vs/workbench/contrib/chat/common/model/objectMutationLog.ts`): each
line is `{kind: 0, v: <initial state>}`, `{kind: 1, k: path, v}` (set), `{kind: 2, k: path, v?: items, i?: index}`
(truncate to `i`, then push) or `{kind: 3, k: path}` (delete); replaying it yields the same object.
The workspace folder comes from `workspace.json` beside `chatSessions/` (`{"folder": "file:///…"}`).

Contracts: one file is one session; part kinds outside `KNOWN_PARTS` are counted as `part/<kind>`; Copilot Chat
records no headless or sub-agent sessions here (sub-agent calls are tool calls inside a request).
Not a person's turn: a request another extension's chat participant answered (`agent.extensionId` is not
`COPILOT_EXTENSION`; the request and its response are left out: that is not Copilot's work), and context Copilot
injects into a request's text (`INJECTED_TAGS`: `<environment_info>`, `<workspace_info>`, … — the person's words
are what is left, or the `<userRequest>` element when there is one); a request with nothing else left is no user
turn (its response stays, as the agent's). Skills: SKILL.md / AGENTS.md files its tools read.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from skillgit.sleep.model import MALFORMED, Session
from skillgit.sleep.readers._common import (
    Draft,
    as_dict,
    file_uri_path,
    iso_from_ms,
    read_json,
    tag_body,
    text_of,
    tool_call,
    tool_result,
    without_tags,
)

SOURCE = "copilot-vscode"
KNOWN_PARTS = frozenset({
    "markdownContent", "markdownVuln", "toolInvocationSerialized", "toolInvocation", "textEditGroup",
    "notebookEditGroup", "inlineReference", "codeblockUri", "progressMessage", "progressTaskSerialized", "thinking",
    "undoStop", "confirmation", "warning", "command", "treeData", "elicitationSerialized", "mcpServersStarting",
    "prepareToolInvocation", "extensions", "pullRequest", "multiDiffData", "clearToPreviousToolInvocation",
    "questionCarousel", "workspaceEdit", "hook", "codeCitation", "references", "usedContext",
})
COPILOT_EXTENSION = "github.copilot-chat"
# the prompt elements Copilot Chat renders around a request (microsoft/vscode-copilot-chat, src/extension/prompts)
INJECTED_TAGS = ("environment_info", "workspace_info", "context", "reminderInstructions", "attachments",
                 "editorContext", "repoContext", "userPreferences", "instructions", "todoList", "notebookSummary")
_APPS = ("Code", "Code - Insiders", "VSCodium")


def user_dirs(home: Path) -> list[Path]:
    """Every VS Code `User` folder that exists under `home` (Linux, macOS, Windows, VS Code Server layouts)."""
    bases = [home / ".config", home / "Library" / "Application Support", home / "AppData" / "Roaming"]
    dirs = [b / app / "User" for b in bases for app in _APPS]
    dirs.append(home / ".vscode-server" / "data" / "User")
    return [d for d in dirs if d.is_dir()]


def discover(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    found: list[Path] = []
    for user in user_dirs(home):
        for folder in (user / "workspaceStorage").glob("*/chatSessions"):
            found.extend(p for p in folder.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
    return sorted(found)


# ------------------------------------------------------------------------------------------------ the mutation log
def _has(target: Any, key: Any) -> bool:
    return (isinstance(target, dict) and key in target) or (
        isinstance(target, list) and isinstance(key, int) and key < len(target))


def _set(target: Any, key: Any, entry: dict[str, Any]) -> None:
    target[key] = entry.get("v")


def _push(target: Any, key: Any, entry: dict[str, Any]) -> None:
    items = list((target[key] if _has(target, key) else None) or [])
    if isinstance(entry.get("i"), int):
        del items[entry["i"]:]
    items.extend(entry.get("v") or [])
    target[key] = items


def _delete(target: Any, key: Any, entry: dict[str, Any]) -> None:
    if isinstance(target, dict):
        target.pop(key, None)
    else:
        target[key] = None


_OPERATIONS: dict[Any, Callable[[Any, Any, dict[str, Any]], None]] = {1: _set, 2: _push, 3: _delete}


def _apply(state: Any, entry: dict[str, Any], counts: Counter[str]) -> Any:
    """`state` after one log entry (raises on an entry that does not fit the state: the caller counts it)."""
    kind, keys = entry.get("kind"), entry.get("k") or []
    if kind == 0:
        return entry.get("v")
    operation = _OPERATIONS.get(kind)
    if operation is None or not keys:
        counts[f"log/{kind}"] += 1
        return state
    target = state
    for key in keys[:-1]:
        target = target[key]
    operation(target, keys[-1], entry)
    return state


def _replay(path: Path, counts: Counter[str]) -> Any:
    """The object an ObjectMutationLog file describes (None when it has no initial entry)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    state: Any = None
    for line in filter(str.strip, lines):
        try:
            state = _apply(state, json.loads(line), counts)
        except (ValueError, RecursionError, KeyError, IndexError, TypeError, AttributeError):
            counts[MALFORMED] += 1
    return state


# ------------------------------------------------------------------------------------------------ requests
def _workspace_folder(chat_dir: Path) -> str | None:
    data = read_json(chat_dir.parent / "workspace.json")
    if not isinstance(data, dict):
        return None
    if data.get("folder"):
        return file_uri_path(data["folder"])
    workspace = file_uri_path(data.get("workspace"))
    return str(Path(workspace).parent) if workspace else None


def _terminal_command(data: dict[str, Any]) -> Any:
    line = data.get("commandLine")
    if isinstance(line, str):
        return line
    if isinstance(line, dict):
        return line.get("userEdited") or line.get("toolEdited") or line.get("original")
    return data.get("command")


def _terminal(draft: Draft, data: dict[str, Any], details: dict[str, Any], call_id: str, ts: str | None) -> None:
    draft.turns.call(tool_call("run_in_terminal", {"command": _terminal_command(data)}, call_id), ts)
    code = as_dict(data.get("terminalCommandState")).get("exitCode")
    output = text_of(data.get("terminalCommandOutput")) or text_of(details.get("output"))
    draft.turns.result(tool_result(output, bool(details.get("isError")), call_id,
                                   code if isinstance(code, int) else None), ts)


def _tool(draft: Draft, part: dict[str, Any], ts: str | None) -> None:
    data, details = as_dict(part.get("toolSpecificData")), as_dict(part.get("resultDetails"))
    call_id = str(part.get("toolCallId") or "")
    if data.get("kind") == "terminal":
        _terminal(draft, data, details, call_id, ts)
        return
    raw = data.get("rawInput") if data.get("kind") == "input" else details.get("input")
    arguments = raw if raw is not None else text_of(part.get("invocationMessage"))
    draft.turns.call(tool_call(str(part.get("toolId") or "tool"), arguments, call_id), ts)
    if details:
        draft.turns.result(tool_result(text_of(details.get("output")), bool(details.get("isError")), call_id), ts)


def _markdown(draft: Draft, part: dict[str, Any], ts: str | None) -> None:
    draft.turns.agent_text(text_of(part.get("content")), ts)


def _edits(draft: Draft, part: dict[str, Any], ts: str | None) -> None:
    target = file_uri_path(part.get("uri"))
    draft.turns.call(tool_call("textEditGroup", {"path": target} if target else {}), ts)


PART_HANDLERS: dict[str, Callable[[Draft, dict[str, Any], str | None], None]] = {
    "markdownContent": _markdown, "toolInvocationSerialized": _tool, "toolInvocation": _tool, "textEditGroup": _edits,
}


def _part(draft: Draft, part: Any, ts: str | None) -> None:
    draft.total += 1
    if not isinstance(part, dict):
        draft.unknown(MALFORMED)
        return
    kind = part.get("kind")
    handler = PART_HANDLERS.get(kind) if isinstance(kind, str) else None
    if kind is None and "value" in part:  # an IMarkdownString
        draft.turns.agent_text(text_of(part), ts)
    elif handler is not None:
        handler(draft, part, ts)
    elif kind not in KNOWN_PARTS:
        draft.unknown(f"part/{kind}")


def foreign(request: dict[str, Any]) -> bool:
    """True for a request another extension's chat participant answered (not Copilot's)."""
    extension = as_dict(request.get("agent")).get("extensionId")
    name = extension.get("_lower") or extension.get("value") if isinstance(extension, dict) else extension
    return isinstance(name, str) and bool(name) and name.lower() != COPILOT_EXTENSION


def typed_text(message: Any) -> str:
    """What the person typed in a request's message, without the context Copilot injected around it."""
    text = text_of(message)
    request = tag_body(text, "userRequest")
    return request if request is not None else without_tags(text, INJECTED_TAGS)


def _request(draft: Draft, request: Any) -> None:
    if not isinstance(request, dict):
        draft.unknown(MALFORMED)
        return
    draft.total += 1
    if foreign(request):
        return
    ts = iso_from_ms(request.get("timestamp"))
    draft.turns.user(typed_text(request.get("message")), ts)
    for part in request.get("response") or []:
        _part(draft, part, ts)


def read(path: Path) -> Iterable[Session]:
    draft = Draft(SOURCE, path)
    data = _replay(path, draft.counts) if path.suffix == ".jsonl" else read_json(path)
    if not isinstance(data, dict):
        draft.unknown(MALFORMED)
        data = {}
    for request in data.get("requests") or []:
        _request(draft, request)
    yield draft.session(
        str(data.get("sessionId") or path.stem), cwd=_workspace_folder(path.parent),
        started=iso_from_ms(data.get("creationDate")), ended=iso_from_ms(data.get("lastMessageDate")),
        entrypoint="vscode", client_version=str(data["version"]) if data.get("version") is not None else None)
