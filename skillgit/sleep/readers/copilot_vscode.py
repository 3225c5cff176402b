"""GitHub Copilot Chat in VS Code: `<VS Code user dir>/User/workspaceStorage/<id>/chatSessions/<session>.json[l]`.

Format (microsoft/vscode, `src/vs/workbench/contrib/chat/common/chatModel.ts`, `ISerializableChatData` v3):
`{version, sessionId, creationDate, lastMessageDate, customTitle, requesterUsername, responderUsername,
requests: [{requestId, message: {text, parts} | string, timestamp, response: [parts], result, isCanceled, …}]}`.
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
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skillgit.sleep.model import MALFORMED, Session
from skillgit.sleep.readers._common import (
    TurnBuilder,
    as_dict,
    file_uri_path,
    iso_from_ms,
    read_json,
    text_of,
    tool_call,
    tool_result,
)

SOURCE = "copilot-vscode"
KNOWN_PARTS = frozenset({
    "markdownContent", "markdownVuln", "toolInvocationSerialized", "toolInvocation", "textEditGroup",
    "notebookEditGroup", "inlineReference", "codeblockUri", "progressMessage", "progressTaskSerialized", "thinking",
    "undoStop", "confirmation", "warning", "command", "treeData", "elicitationSerialized", "mcpServersStarting",
    "prepareToolInvocation", "extensions", "pullRequest", "multiDiffData", "clearToPreviousToolInvocation",
    "questionCarousel", "workspaceEdit", "hook", "codeCitation", "references", "usedContext",
})
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


def _replay(path: Path, counts: Counter[str]) -> Any:
    """The object an ObjectMutationLog file describes (None when it has no initial entry)."""
    state: Any = None
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            kind, keys = entry.get("kind"), entry.get("k") or []
            if kind == 0:
                state = entry.get("v")
                continue
            target = state
            for key in keys[:-1]:
                target = target[key]
            last = keys[-1] if keys else None
            if kind == 1 and last is not None:
                target[last] = entry.get("v")
            elif kind == 3 and last is not None:
                if isinstance(target, dict):
                    target.pop(last, None)
                else:
                    target[last] = None
            elif kind == 2 and last is not None:
                current = target[last] if (isinstance(target, dict) and last in target) or (
                    isinstance(target, list) and isinstance(last, int) and last < len(target)) else None
                arr = list(current or [])
                if isinstance(entry.get("i"), int):
                    del arr[entry["i"]:]
                arr.extend(entry.get("v") or [])
                target[last] = arr
            else:
                counts[f"log/{kind}"] += 1
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            counts[MALFORMED] += 1
    return state


def _workspace_folder(chat_dir: Path) -> str | None:
    data = read_json(chat_dir.parent / "workspace.json")
    if not isinstance(data, dict):
        return None
    if data.get("folder"):
        return file_uri_path(data["folder"])
    workspace = file_uri_path(data.get("workspace"))
    return str(Path(workspace).parent) if workspace else None


def _tool(part: dict[str, Any], builder: TurnBuilder, ts: str | None) -> None:
    data = as_dict(part.get("toolSpecificData"))
    details = as_dict(part.get("resultDetails"))
    name = str(part.get("toolId") or "tool")
    call_id = str(part.get("toolCallId") or "")
    if data.get("kind") == "terminal":
        line = data.get("commandLine")
        command = text_of(line) if isinstance(line, str) else (
            (line or {}).get("userEdited") or (line or {}).get("toolEdited") or (line or {}).get("original")
            if isinstance(line, dict) else data.get("command"))
        builder.call(tool_call("run_in_terminal", {"command": command}, call_id), ts)
        state = as_dict(data.get("terminalCommandState"))
        output = data.get("terminalCommandOutput")
        code = state.get("exitCode") if isinstance(state.get("exitCode"), int) else None
        builder.result(tool_result(text_of(output) or text_of(details.get("output")), bool(details.get("isError")),
                                   call_id, code), ts)
        return
    raw = data.get("rawInput") if data.get("kind") == "input" else details.get("input")
    builder.call(tool_call(name, raw if raw is not None else text_of(part.get("invocationMessage")), call_id), ts)
    if details:
        builder.result(tool_result(text_of(details.get("output")), bool(details.get("isError")), call_id), ts)


def read(path: Path) -> Iterable[Session]:
    counts: Counter[str] = Counter()
    data = _replay(path, counts) if path.suffix == ".jsonl" else read_json(path)
    if not isinstance(data, dict):
        counts[MALFORMED] += 1
        data = {}
    builder = TurnBuilder()
    total = 0
    for request in data.get("requests") or []:
        if not isinstance(request, dict):
            counts[MALFORMED] += 1
            continue
        total += 1
        ts = iso_from_ms(request.get("timestamp"))
        builder.user(text_of(request.get("message")), ts)
        for part in request.get("response") or []:
            total += 1
            if not isinstance(part, dict):
                counts[MALFORMED] += 1
                continue
            kind = part.get("kind")
            if kind is None and "value" in part:  # an IMarkdownString
                builder.agent_text(text_of(part), ts)
            elif kind == "markdownContent":
                builder.agent_text(text_of(part.get("content")), ts)
            elif kind in ("toolInvocationSerialized", "toolInvocation"):
                _tool(part, builder, ts)
            elif kind == "textEditGroup":
                target = file_uri_path(part.get("uri"))
                builder.call(tool_call("textEditGroup", {"path": target} if target else {}), ts)
            elif kind not in KNOWN_PARTS:
                counts[f"part/{kind}"] += 1
    yield Session(
        source=SOURCE,
        session_id=str(data.get("sessionId") or path.stem),
        cwd=_workspace_folder(path.parent),
        started=iso_from_ms(data.get("creationDate")),
        ended=iso_from_ms(data.get("lastMessageDate")),
        entrypoint="vscode",
        client_version=str(data["version"]) if data.get("version") is not None else None,
        turns=builder.build(),
        path=str(path),
        unknown_records=dict(counts),
        total_records=total,
    )
