"""How `skillgit install` plans one artifact against what is on disk (`plan_one`), and how uninstall recognises
what it wrote (`undo`, `still_there`): pure functions over an artifact, its install record and the file's text —
nothing here writes. The transactional install and uninstall that use them are in `install.py`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgit.errors import SkillgitError
from skillgit.integrations import jsonedit
from skillgit.integrations.artifacts import (
    Artifact,
    BlockArtifact,
    FileArtifact,
    JsonArtifact,
)
from skillgit.integrations.manifest import (
    Record,
    newline,
    path_problem,
    read_text,
    sha,
)


# ------------------------------------------------------------------------------------------------ planning
@dataclass
class Step:
    artifact: Artifact
    rel: str
    what: str  # create | insert | update | unchanged | present | conflict | edited | skip
    detail: str = ""
    text: str | None = None  # the new file content, for create/insert/update
    offset: int = 0
    inserted: str = ""
    key_path: tuple[str, ...] = ()
    value: Any = None
    append: bool = False
    before: str | None = None  # the content before (for sha_before), None when the file is created
    hint: str = ""
    warnings: list[str] = field(default_factory=list)


def kind_of(art: Artifact) -> str:
    return "file" if isinstance(art, FileArtifact) else "json" if isinstance(art, JsonArtifact) else "block"


def _same_entry(rec: Record, art: Artifact) -> bool:
    if isinstance(art, JsonArtifact):
        inner = rec.value
        for key in art.key_path[len(rec.key_path):]:  # the record may name an outer created key
            inner = inner.get(key) if isinstance(inner, dict) else None
        if art.append and len(rec.key_path) < len(art.key_path):
            inner = inner[0] if isinstance(inner, list) and len(inner) == 1 else None
        return inner == art.value
    if isinstance(art, BlockArtifact):
        return art.block.replace("\n", newline(rec.text)) in rec.text
    return True


def undo(current: str, rec: Record) -> str | None:
    """The exact previous content when `current` is what install left (None when it is not)."""
    if sha(current) != rec.sha_after:
        return None
    if rec.kind == "file" or rec.sha_before is None:
        return ""
    previous = current[:rec.offset] + current[rec.offset + len(rec.text):]
    return previous if sha(previous) == rec.sha_before else None


def still_there(current: str, rec: Record) -> tuple[int, int] | None:
    """The span of skillgit's own entry/block in a file that changed since install, if it is still unchanged."""
    if rec.kind == "json":
        return jsonedit.find_owned(current, rec.key_path, rec.value, rec.append)
    if rec.kind == "block":
        for candidate in (rec.text, rec.text.lstrip("\r\n")):
            at = current.find(candidate)
            if candidate and at >= 0 and current.count(candidate) == 1:
                return at, at + len(candidate)
    return None


def _slot_taken(current: str, rec: Record, art: Artifact) -> bool:
    """True when the place skillgit's entry/block occupied still holds something (an edited version of it)."""
    if isinstance(art, BlockArtifact):
        return art.begin in current
    if isinstance(art, JsonArtifact) and not art.append:
        try:
            node: jsonedit.Node | None = jsonedit.parse(current)
        except jsonedit.JsonEditError:
            return True
        for key in art.key_path:
            node = node.get(key) if node is not None and node.kind == "object" else None
        return node is not None
    return False


def _plan_json(step: Step, art: JsonArtifact, current: str | None) -> None:
    if current is None or not current.strip():
        nested: Any = [art.value] if art.append else art.value
        for key in reversed(art.key_path[1:]):
            nested = {key: nested}
        text = json.dumps({art.key_path[0]: nested}, indent=2, ensure_ascii=False) + "\n"
        if current is None:
            step.what, step.text, step.inserted = "create", text, text
            step.key_path, step.value = art.key_path[:1], nested
        else:  # an empty file: replace it whole (its previous content is the whitespace, kept in `before`)
            step.what, step.text, step.inserted = "insert", current + text, text
            step.offset, step.key_path, step.value = len(current), art.key_path[:1], nested
        return
    try:
        ins = jsonedit.plan_insert(current, art.key_path, art.value, art.append)
    except jsonedit.JsonEditError as exc:
        step.what, step.detail = "conflict", str(exc)
        step.hint = (f"add this to {step.rel} by hand, under {'.'.join(art.key_path)}: "
                     f"{json.dumps(art.value)}")
        return
    if ins is None:
        step.what, step.detail = "present", "an equal entry is already there (not written by skillgit install)"
        return
    step.what, step.offset, step.inserted = "insert", ins.offset, ins.text
    step.text = current[:ins.offset] + ins.text + current[ins.offset:]
    step.key_path, step.value, step.append = ins.path, ins.value, ins.append
    step.detail = ".".join(art.key_path)


def _toml_defines(text: str, table: str) -> bool:
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10: look for the table header
        import re

        parts = [re.escape(p) for p in table.split(".")]
        return re.search(r"(?m)^\s*\[\s*" + r"\s*\.\s*".join(parts) + r"\s*\]", text) is not None
    try:
        data: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SkillgitError(f"not valid TOML ({exc})", "fix the file first") from None
    for part in table.split("."):
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _plan_block(step: Step, art: BlockArtifact, current: str | None) -> None:
    if current is None:
        step.what, step.text, step.inserted = "create", art.block, art.block
        return
    if art.begin in current:
        step.what, step.detail = "conflict", "it already holds a skillgit block that skillgit did not record"
        step.hint = f"remove the block from {step.rel} by hand (from '{art.begin[:30]}…' to its end marker)"
        return
    if art.style == "toml":
        try:
            defined = _toml_defines(current, "mcp_servers.skillgit")
        except SkillgitError as exc:
            step.what, step.detail, step.hint = "conflict", exc.message, exc.hint
            return
        if defined:
            step.what, step.detail = "conflict", "it already defines [mcp_servers.skillgit]"
            step.hint = f"keep yours (remove it from {step.rel} to let skillgit manage it)"
            return
    nl = newline(current)
    block = art.block.replace("\n", nl)
    # one blank line between the file's last line and the block: the separator is part of the inserted text
    if not current or current.endswith(nl + nl):
        sep = ""
    elif current.endswith("\n"):
        sep = nl
    else:
        sep = nl + nl
    step.what, step.offset, step.inserted = "insert", len(current), sep + block
    step.text = current + sep + block


def plan_one(art: Artifact, rec: Record | None, rel: str, root: Path) -> Step:
    problem = path_problem(root, art.path)
    if problem is not None:
        return Step(art, rel, "conflict", f"it is {problem}" if problem.startswith("a ") else problem,
                     hint=f"make {rel} a plain file (or remove it) and run the install again")
    step = Step(art, rel, "unchanged")
    try:
        current = read_text(art.path)
    except SkillgitError as exc:  # not UTF-8
        return Step(art, rel, "conflict", exc.message, hint=exc.hint)
    if rec is not None and current is not None:
        decided, current = _against_record(step, art, rec, current)
        if decided:
            return step
    step.before = current
    if isinstance(art, FileArtifact):
        _plan_file(step, art, current)
        return step
    updating = step.what == "update"
    if isinstance(art, JsonArtifact):
        _plan_json(step, art, current)
    else:
        _plan_block(step, art, current)
    if updating and step.what in ("create", "insert"):
        step.what = "update"
    return step


def _against_record(step: Step, art: Artifact, rec: Record, current: str) -> tuple[bool, str | None]:
    """What an earlier install's record says of the file as it is now: (decided, the text to plan against).
    Decided: skillgit's artifact is in place, or the user edited it (theirs now, left as it is); else an update
    of what an older skillgit wrote and nobody touched plans against the text from before it (None: no file)."""
    if sha(current) == rec.sha_after:
        if current == art.text if isinstance(art, FileArtifact) else _same_entry(rec, art):
            return True, current
        previous = undo(current, rec)  # written by an older skillgit and untouched: replace it
        if previous is not None:
            step.what = "update"
            return False, None if rec.sha_before is None else previous
        return False, current
    if kind_of(art) == "file":
        step.what = "edited"
        step.warnings.append(f"{step.rel} was changed after skillgit installed it; left as it is")
        return True, current
    if still_there(current, rec) is not None:  # their file changed around skillgit's entry: fine
        step.detail = "skillgit's entry is in place"
        return True, current
    if _slot_taken(current, rec, art):  # someone edited skillgit's entry itself: theirs now
        step.what = "edited"
        step.warnings.append(f"skillgit's entry in {step.rel} was changed after install; left as it is")
        return True, current
    return False, current


def _plan_file(step: Step, art: FileArtifact, current: str | None) -> None:
    """A whole file skillgit owns: create it (or update an older one), or say why it is left alone."""
    if current is None:
        step.what = "update" if step.what == "update" else "create"
        step.text = step.inserted = art.text
    elif current == art.text:
        step.what, step.detail = "present", "identical file already there (not written by skillgit install)"
    else:
        step.what, step.detail = "conflict", "the file exists and was not written by skillgit install"
        step.hint = f"move {step.rel} away (or merge it by hand) and run the install again"
