"""Edits to a skill document: parsing teacher edits, applying them with a per-edit report, guarding front matter
and protected regions, and rendering unified diffs.

Contracts (see docs/ARCHITECTURE.md, "Edits and protected regions"):
- `parse_edits` and `apply_edits` never raise for bad input: bad entries and failed edits are recorded.
- Every edit gets exactly one `EditResult`, in input order; each edit applies to the result of the previous one.
- Target matching: exact first, then whitespace-normalised (`applied_fuzzy`, mapped back to the exact original
  span). A missing target is `skipped_target_not_found`, never a silent append.
- The prompt's own frame: a target that is not in the skill as given is tried again with the prompt's escaping
  undone, then without the prompt's wrapper (`strip_wrapper`: protocol tags such as `<skill>` and
  `<file path="…">`, a heading turned into a tag like `<# Skill>`…`</#Skill>`, a Markdown fence around the whole
  target); a content that opens with that frame (`<skill>`, `<file path>`, `<# …>`, a ```` ```markdown ```` fence)
  loses it before it is written. Either way the reason says what was stripped (`applied_fuzzy` for the target).
  An `insert_after` whose target is only the frame inserts at the top of the body (`<skill>`) or appends
  (`</skill>`).
- Files: an edit naming a file the package lacks is `skipped_file_not_found` (an `append` under
  `skill.new_files` creates it); in a single-file skill it applies to the one file and the reason says so. A
  target framed as `<file path="P">` names P when the edit named no file.
- Ambiguity: when a target occurs several times in the editable text, the edit applies to the FIRST occurrence and
  the reason says how many there were (the teacher reads the skill top-down and the gate judges the result;
  skipping would throw away most edits whose target is a short heading).
- Front matter and protected regions are never changed by an edit (unless `allow_front_matter` for the former);
  after each edit the whole document is re-checked with `check_invariants`, so no op can get around this.
- Pure functions; results are deterministic.
"""

from __future__ import annotations

import difflib
import html
import re
from typing import Any

from unidiff import PatchSet

from skillgit import package, textsafe
from skillgit.errors import SkillgitError
from skillgit.prompts import unescape_all
from skillgit.redact import redact
from skillgit.skilldoc import (
    MARKER_RE,
    Doc,
    split_document,
    strip_trailing_blank_lines,
)
from skillgit.types import EDIT_OPS, OP_ALIASES, Edit, EditResult
from skillgit.unwrap import CONTENT_FRAME_RE, FILE_FRAME_RE, shown, strip_wrapper

__all__ = ["parse_edits", "normalize_op", "apply_edits", "apply_to_skill", "strip_wrapper", "check_invariants",
           "restore_protected", "unified_diff", "diff_stats", "split_document", "Doc"]

NEEDS_CONTENT = ("append", "insert_after", "replace")
NEEDS_TARGET = ("insert_after", "replace", "delete")


# ---------------------------------------------------------------------------------------------- parsing
def normalize_op(op: Any) -> str | None:
    """Canonical op name for `op` ("Insert-After" → "insert_after", "add" → "append"), or None if unknown."""
    if not isinstance(op, str):
        return None
    name = re.sub(r"[\s-]+", "_", op.strip().lower())
    name = OP_ALIASES.get(name, name)
    return name if name in EDIT_OPS else None


def _clean_content(value: str) -> str:
    # Drop leading blank lines and trailing whitespace but keep the first line's indentation (a nested bullet).
    return re.sub(r"\A(?:[ \t]*\r?\n)+", "", value).rstrip()


def _text_field(entry: dict, key: str) -> tuple[str, str | None]:
    """(text, problem) for an optional text field; a list of strings is joined line by line."""
    value = entry.get(key)
    if value is None:
        return "", None
    if isinstance(value, str):
        return value, None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value), None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value), None
    return "", f"'{key}' is a {type(value).__name__}, not text"


MAX_EDITS = 16
MAX_EDIT_CHARS = 4000


def parse_edits(obj: Any, *, source_type: str = "failure", max_edits: int = MAX_EDITS,
                max_chars: int = MAX_EDIT_CHARS) -> tuple[list[Edit], list[str]]:
    """Build `Edit`s from a teacher's answer `{"edits": [...]}`.

    Ops are normalised (aliases, case, dashes), targets stripped, contents stripped of surrounding blank lines and
    trailing whitespace; an append's target and a delete's content are dropped (they mean nothing). Kept edits get
    ids `e1`, `e2`, … in order. Every skipped entry yields one problem string naming its position (1-based);
    nothing raises.

    Model text is untrusted: control characters (NUL, ESC, bidi overrides …) are removed from every field and the
    removal recorded, because they end up in commit messages, notes and terminals (a NUL makes git refuse the
    commit, and a journaled reply would fail the same way on every resume). An edit whose target or content is
    longer than `max_chars`, and every edit past the first `max_edits`, is dropped with a problem.
    """
    if not isinstance(obj, dict):
        return [], [f"teacher answer is a {type(obj).__name__}, not a JSON object"]
    if "edits" not in obj:
        return [], ["teacher answer has no 'edits' key"]
    raw = obj["edits"]
    if not isinstance(raw, list):
        return [], [f"'edits' is a {type(raw).__name__}, not a list"]
    edits: list[Edit] = []
    problems: list[str] = []
    if len(raw) > max_edits:
        problems.append(f"edits {max_edits + 1}–{len(raw)}: dropped (at most {max_edits} edits per answer; "
                        "optimizer.max_edits_per_reply)")
        raw = raw[:max_edits]
    for number, entry in enumerate(raw, 1):
        edit, said = _one_edit(entry, max_chars)
        problems += [f"edit {number}: {p}" for p in said]
        if edit is not None:
            edits.append(edit.with_(source_type=source_type, id=f"e{len(edits) + 1}"))
    return edits, problems


def _one_edit(entry: Any, max_chars: int) -> tuple[Edit | None, list[str]]:
    """One entry of `edits` as an `Edit` (None when dropped), and its problems (see `parse_edits`)."""
    if not isinstance(entry, dict):
        return None, [f"is a {type(entry).__name__}, not an object"]
    op = normalize_op(entry.get("op"))
    if op is None:
        return None, [f"unknown op {entry.get('op')!r} (allowed: {', '.join(EDIT_OPS)})"]
    (target, content, rationale), bad = _texts(entry)
    if bad:
        return None, [bad]
    said = []
    if any(textsafe.has_unsafe(x) for x in (target, content, rationale)):
        said.append("control characters removed")
        target, content, rationale = (textsafe.clean(x) for x in (target, content, rationale))
    if max(len(target), len(content)) > max_chars:
        return None, [*said, f"longer than {max_chars} characters (optimizer.max_edit_chars); dropped"]
    target = "" if op == "append" else target.strip()
    content = "" if op == "delete" else _clean_content(content)
    for field, value, needs in (("content", content, NEEDS_CONTENT), ("target", target, NEEDS_TARGET)):
        if op in needs and not value:
            return None, [*said, f"{op} without {field}"]
    support = entry.get("support_count", 1)
    support = support if isinstance(support, int) and not isinstance(support, bool) and support > 0 else 1
    file, p4 = _text_field(entry, "file")
    try:
        file = _package_file(file)
    except SkillgitError as exc:
        return None, [*said, exc.message]
    if p4:
        return None, [*said, p4]
    return Edit(op=op, content=content, target=target, rationale=rationale.strip(), support_count=support,
                file=file), said


def _texts(entry: dict) -> tuple[tuple[str, str, str], str]:
    """(target, content, rationale or reason) of an entry, and what is wrong with them ("" when nothing)."""
    (target, p1), (content, p2), (rationale, p3) = (_text_field(entry, k) for k in ("target", "content", "rationale"))
    if not rationale:
        rationale, p3 = _text_field(entry, "reason")
    return (target, content, rationale), "; ".join(p for p in (p1, p2, p3) if p)


def _package_file(file: str) -> str:
    """"" for the main file (also when the teacher names it), else the checked path inside the package. A file
    given as the prompt's frame (`<file path="references/x.md">`) is its path."""
    file = textsafe.clean(file, multiline=False).strip()
    framed = FILE_FRAME_RE.search(file)
    file = html.unescape(framed.group(1)).strip() if framed else file
    if not file or file.lower() in ("skill.md", "./skill.md", "(main)", "main"):
        return ""
    return package.check_path(file)


def apply_to_skill(skill: str, edits: list[Edit], *, allow_front_matter: bool = False,
                   new_files: tuple[str, ...] = package.DEFAULT_NEW_FILES) -> tuple[str, list[EditResult]]:
    """`apply_edits` for a skill of any shape: a single-file skill (every edit applies to it, whatever file it
    names; the reason says when it named another), or a package bundle (each edit to the file it names, or to the
    file its target's `<file path>` frame names; an `append` to a file that does not exist yet creates it when its
    path matches `new_files`, else the edit is `skipped_file_not_found`). One result per edit, in the edits'
    order; front matter and protected regions keep their rules in every file."""
    if not package.is_bundle(skill):
        text, results = apply_edits(skill, [e.with_(file="") if e.file else e for e in edits],
                                    allow_front_matter=allow_front_matter)
        return text, [_noted(EditResult(e, r.status, r.reason), f"names {e.file}, which a single-file skill lacks: "
                             "it went to the skill's one file") if e.file else r for e, r in zip(edits, results)]
    pkg = package.parse(skill)
    results = []
    for edit in edits:
        path, framed = _edit_path(edit, pkg)
        current = pkg.get(path)
        if current is None:
            if edit.op != "append" or not package.may_create(path, new_files):
                allowed = ", ".join(new_files) or "nowhere"
                have = ", ".join(p for p, _ in pkg.files)
                results.append(EditResult(edit, "skipped_file_not_found",
                                          f"the skill has no file {path} (its files: {have}; an append may create "
                                          f"files under: {allowed})"))
                continue
            current = ""
        text, (result,) = apply_edits(current, [edit], allow_front_matter=allow_front_matter)
        if result.applied:
            pkg = pkg.with_file(path, text if text.endswith("\n") else text + "\n")
        results.append(_noted(result, framed) if framed else result)
    return pkg.bundle(), results


def _edit_path(edit: Edit, pkg: package.Package) -> tuple[str, str]:
    """(the bundle file an edit goes to, a note when its target's `<file path="P">` frame routed it to P)."""
    if edit.file:
        return edit.file, ""
    match = FILE_FRAME_RE.search(edit.target)
    named = _framed_path(match.group(1)) if match else ""
    if named and named != pkg.main and pkg.get(named) is not None:
        return named, f"routed to {named}, the file its target's <file> frame names"
    return pkg.main, ""


def _framed_path(raw: str) -> str:
    try:
        return package.check_path(html.unescape(raw))
    except SkillgitError:
        return ""


def _noted(result: EditResult, note: str) -> EditResult:
    return EditResult(result.edit, result.status, f"{result.reason}; {note}" if result.reason else note)


# ---------------------------------------------------------------------------------------------- matching
def _norm(text: str) -> str:
    return " ".join(text.split())


def _overlap(start: int, end: int, spans: list[tuple[int, int, str]]) -> str | None:
    for a, b, label in spans:
        if start < b and a < end:
            return label
    return None


def _occurrences(text: str, target: str, fuzzy: bool) -> list[tuple[int, int]]:
    if not fuzzy:
        found, i = [], text.find(target)
        while i != -1:
            found.append((i, i + len(target)))
            i = text.find(target, i + 1)
        return found
    # Whitespace-normalised: the target's words separated by any whitespace run. Searching the original text with
    # this pattern gives the exact original span, so the edit replaces what is really there.
    words = target.split()
    pattern = r"\s+".join(re.escape(w) for w in words)
    return [(m.start(), m.end()) for m in re.finditer(pattern, text)]


def _locate(doc: Doc, target: str, allow_front_matter: bool) -> tuple[str, int, int, str]:
    """(kind, start, end, note): kind is "exact", "fuzzy", "protected" (note = what it hit) or "missing"."""
    spans = doc.protected_spans(allow_front_matter=allow_front_matter)
    for fuzzy in (False, True):
        found = _occurrences(doc.text, target, fuzzy)
        if not found:
            continue
        free = [(s, e) for s, e in found if _overlap(s, e, spans) is None]
        if not free:
            return "protected", found[0][0], found[0][1], _overlap(*found[0], spans) or ""
        note = f"target occurs {len(free)} times; applied to the first" if len(free) > 1 else ""
        return ("fuzzy" if fuzzy else "exact"), free[0][0], free[0][1], note
    return "missing", -1, -1, ""


# ---------------------------------------------------------------------------------------------- ops
def _append(doc: Doc, content: str) -> str:
    text, start = doc.text, doc.body_start
    end = doc.editable_end()
    body = strip_trailing_blank_lines(text[start:end])
    body = body if body.strip() else ""
    new = (body + "\n\n" if body else "") + content + "\n"
    tail = text[end:]
    if tail:
        new += "\n" + tail
    return text[:start] + new


def _prepend(doc: Doc, content: str) -> str:
    """`content` as the first lines of the body (below the front matter), one blank line before the rest."""
    text, start = doc.text, doc.body_start
    rest = text[start:].lstrip("\n")
    return text[:start] + content + "\n" + ("\n" + rest if rest.strip() else "")


def _insert_after(doc: Doc, end: int, content: str, spans: list[tuple[int, int, str]]) -> tuple[str, str | None]:
    text = doc.text
    newline = text.find("\n", end)
    at = len(text) if newline == -1 else newline + 1
    for a, b, label in spans:
        if a < at < b:
            return text, label
    if newline == -1:
        return text + "\n" + content + "\n", None
    return text[:at] + content + "\n" + text[at:], None


def _delete(text: str, start: int, end: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    newline = text.find("\n", end)
    line_end = len(text) if newline == -1 else newline + 1
    if (text[line_start:start] + text[end:line_end]).strip():
        # Part of a line: the rest stays; take one space before the gap along if it would leave "a ." or "a  b".
        if start > line_start and text[start - 1] in " \t" and (end == len(text) or text[end] in " \t\n.,;:!?)"):
            start -= 1
        return text[:start] + text[end:]
    # The target was all of its line(s): drop them instead of leaving an empty line, then tidy the blank lines.
    new, pos = text[:line_start] + text[line_end:], line_start
    if not new[pos:].strip():
        head = strip_trailing_blank_lines(new[:pos])
        return head + "\n" if head.strip() else head
    before = re.search(r"(?:^[ \t]*\n)*\Z", new[:pos], re.M)
    after = re.match(r"(?:[ \t]*\n)*", new[pos:])
    assert before is not None and after is not None  # both patterns match the empty string, so they always match
    run_start, run_end = before.start(), pos + after.end()
    if run_start == 0:
        return new[run_end:]  # no blank lines at the very top of a document
    if new[run_start:run_end].count("\n") > 1:
        return new[:run_start] + "\n" + new[run_end:]
    return new


class _Skip(Exception):
    def __init__(self, status: str, reason: str):  # an edit not applied: its status and the reason
        super().__init__(reason)
        self.status, self.reason = status, reason


def _checked(text: str, edit: Edit) -> tuple[str, str, str, list[str]]:
    """(op, content, target, reasons) of an edit that may be applied; `_Skip` for one that may not."""
    op = normalize_op(edit.op)
    if op is None:
        raise _Skip("skipped_invalid", f"unknown op {edit.op!r}")
    # A teacher quoting a skill line that starts with a protocol tag saw it escaped (`&lt;output>`); undo that.
    # What a model writes into the skill is redacted: the skill is committed and pushed (a key a trajectory showed
    # the teacher must not become a line of it). The skill's own text is left as it is.
    content = redact(unescape_all(_clean_content(edit.content.replace("\r\n", "\n"))))
    target = edit.target.replace("\r\n", "\n").strip()
    reasons: list[str] = []
    if CONTENT_FRAME_RE.match(content):
        # A content framed as the prompt framed the skill would write the frame into it.
        content, removed = strip_wrapper(content, frame_only=True)
        if removed:
            reasons.append(f"stripped the prompt's wrapper from the content ({shown(removed)})")
    if op in NEEDS_CONTENT and not content:
        raise _Skip("skipped_invalid", f"{op} needs content")
    if op in NEEDS_TARGET and not target:
        raise _Skip("skipped_invalid", f"{op} needs a target")
    if MARKER_RE.search(content):
        raise _Skip("skipped_protected_region", "content contains a skillgit region marker")
    if op in ("append", "insert_after") and _norm(content) in _norm(text):
        raise _Skip("skipped_duplicate", "content already appears in the skill")
    return op, content, target, reasons


def _found(doc: Any, target: str, allow_front_matter: bool) -> tuple[str, int, int, str, str, list[str]]:
    """`_locate`'s (kind, start, end, note), how it matched, and the wrapper when the target was only that."""
    kind, start, end, note = _locate(doc, target, allow_front_matter)
    how = "whitespace normalisation"
    if kind == "missing" and unescape_all(target) != target:
        # The teacher copied a line that the prompt showed escaped (`&lt;output>`): match what it really says.
        kind, start, end, note = _locate(doc, unescape_all(target), allow_front_matter)
        how = "undoing prompt escaping" + (" and whitespace normalisation" if kind == "fuzzy" else "")
        kind = "fuzzy" if kind == "exact" else kind
    if kind != "missing":
        return kind, start, end, note, how, []
    # The teacher copied the prompt's frame along (`<skill><# Skill>Be helpful.</#Skill>`): match what is inside.
    # Stripped before unescaping, so a skill line the prompt showed escaped (`&lt;output>`) keeps its tag.
    bare, removed = strip_wrapper(target)
    if not removed or not bare:
        return kind, start, end, note, how, removed
    kind, start, end, note = _locate(doc, unescape_all(bare), allow_front_matter)
    how = f"stripping the prompt's wrapper ({shown(removed)})" + (
        " and whitespace normalisation" if kind == "fuzzy" else "")
    return ("fuzzy" if kind == "exact" else kind), start, end, note, how, []


def _apply_one(text: str, edit: Edit, allow_front_matter: bool) -> tuple[str, str, str]:
    """Apply one edit; returns (new_text, status, reason)."""
    try:
        return _applied(text, edit, allow_front_matter)
    except _Skip as skip:
        return text, skip.status, skip.reason


def _applied(text: str, edit: Edit, allow_front_matter: bool) -> tuple[str, str, str]:
    op, content, target, reasons = _checked(text, edit)
    doc = split_document(text)
    if op == "append":
        return _append(doc, content), "applied", "; ".join(reasons)
    kind, start, end, note, how, wrapper = _found(doc, target, allow_front_matter)
    if wrapper and op == "insert_after":
        # "insert after <skill>" (the frame's opening): at the top of the body; after `</skill>`: at the end
        reasons.insert(0, f"the target was only the prompt's wrapper ({shown(wrapper)}): ")
        if wrapper[-1].startswith("</"):
            reasons[0] += "appended"
            return _append(doc, content), "applied_fuzzy", "; ".join(reasons)
        reasons[0] += "inserted at the top of the skill's body"
        return _prepend(doc, content), "applied_fuzzy", "; ".join(reasons)
    if kind == "missing":
        raise _Skip("skipped_target_not_found", "target not found (exact, whitespace-normalised, or without the "
                                                "prompt's escaping and wrapper)")
    if kind == "protected":
        raise _Skip("skipped_protected_region", f"target lies in {note}")
    reasons = ([f"target matched after {how}"] if kind == "fuzzy" else []) + reasons + ([note] if note else [])
    new = _edited(text, doc, op, content, (start, end), allow_front_matter)
    return new, "applied_fuzzy" if kind == "fuzzy" else "applied", "; ".join(reasons)


def _edited(text: str, doc: Any, op: str, content: str, span: tuple[int, int], allow_front_matter: bool) -> str:
    """`text` with `op` applied at the target's `span`; `_Skip` when it changes nothing or a protected region."""
    start, end = span
    if op == "replace":
        if _norm(content) == _norm(text[start:end]):
            raise _Skip("skipped_duplicate", "replacement equals the target")
        return text[:start] + content + text[end:]
    if op == "delete":
        return _delete(text, start, end)
    new, hit = _insert_after(doc, end, content, doc.protected_spans(allow_front_matter=allow_front_matter))
    if hit:
        raise _Skip("skipped_protected_region", f"the insertion point lies in {hit}")
    return new


def apply_edits(text: str, edits: list[Edit], *, allow_front_matter: bool = False) -> tuple[str, list[EditResult]]:
    """Apply `edits` in order, each to the result of the previous; return the new text and one result per edit.

    Op semantics: `append` adds at the end of the editable body (above a trailing protected region), separated by
    exactly one blank line, keeping a final newline; `insert_after` inserts on new lines after the end of the line
    that contains the target's end; `replace` substitutes the matched span; `delete` removes it, drops a line it
    leaves empty, and collapses the blank-line run there to one blank line. A document that uses CRLF throughout is
    edited as LF and converted back, so the edits' newlines match it.
    """
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    work = text.replace("\r\n", "\n") if crlf else text
    results: list[EditResult] = []
    for edit in edits:
        try:
            new, status, reason = _apply_one(work, edit, allow_front_matter)
            if status in ("applied", "applied_fuzzy"):
                broken = check_invariants(work, new, allow_front_matter=allow_front_matter)
                if broken:
                    new, status, reason = work, "skipped_protected_region", "; ".join(broken)
        except Exception as exc:  # one bad edit must not cost the others; recorded, never hidden
            new, status, reason = work, "error", f"{type(exc).__name__}: {exc}"
        results.append(EditResult(edit, status, reason))
        work = new
    return (work.replace("\n", "\r\n") if crlf else work), results


# ---------------------------------------------------------------------------------------------- invariants
def _region_map(doc: Doc) -> dict[str, list[tuple[str, bool]]]:
    found: dict[str, list[tuple[str, bool]]] = {}
    for region in doc.regions:
        found.setdefault(region.name, []).append((doc.inner(region), region.closed))
    return found


def _per_file(before: str, after: str) -> tuple[package.Package, package.Package] | None:
    """Both sides as packages when `before` is one (a rewrite's `after` that lost the package shape becomes a
    package of its main file only, so the other files count as missing)."""
    if not package.is_bundle(before):
        return None
    return package.parse(before), package.parse(after)


def check_invariants(before: str, after: str, *, allow_front_matter: bool = False) -> list[str]:
    """Problems that make `after` unacceptable as a successor of `before`: front matter added, removed or changed
    (unless allowed), a protected region missing, changed (its content byte-for-byte) or added. Empty = fine.
    For a package every file keeps its own front matter and regions; a file that had either must stay."""
    pair = _per_file(before, after)
    if pair is not None:
        problems: list[str] = []
        for path, old_text in pair[0].files:
            new_text = pair[1].get(path)
            if new_text is None:
                if check_invariants(old_text, "", allow_front_matter=allow_front_matter):
                    problems.append(f"{path}: the file was removed")
                continue
            problems += [f"{path}: {p}" for p in check_invariants(old_text, new_text,
                                                                   allow_front_matter=allow_front_matter)]
        return problems
    return _check_one(before, after, allow_front_matter)


def _check_one(before: str, after: str, allow_front_matter: bool) -> list[str]:
    old, new = split_document(before), split_document(after)
    problems: list[str] = []
    if not allow_front_matter and old.front_matter != new.front_matter:
        if not new.front_matter:
            problems.append("front matter was removed")
        elif not old.front_matter:
            problems.append("front matter was added")
        else:
            problems.append("front matter was changed")
    old_regions, new_regions = _region_map(old), _region_map(new)
    for name, blocks in old_regions.items():
        if name not in new_regions:
            problems.append(f"protected region '{name}' is missing")
        elif new_regions[name] != blocks:
            problems.append(f"protected region '{name}' was changed")
    for name in new_regions:
        if name not in old_regions:
            problems.append(f"protected region '{name}' was added")
    return problems


def restore_protected(before: str, after: str, *, allow_front_matter: bool = False) -> str | None:
    """Repair a whole-skill rewrite that simply OMITTED protected parts; None if it cannot be made acceptable.

    Rule: missing front matter is put back at the top; a protected region whose name no longer occurs at all is
    put back at the end, in the original order, after one blank line. Anything else — front matter or a region
    that is present but different, a region that was added — is a change, not an omission, and gives None (the
    loop rejects the candidate with `check_invariants`' reasons). Returns `after` unchanged if nothing is missing.
    A package is repaired file by file; a file the rewrite left out is put back as it was.
    """
    pair = _per_file(before, after)
    if pair is not None:
        files = dict(pair[1].files)
        for path, old_text in pair[0].files:
            if path not in files:
                files[path] = old_text
                continue
            repaired = restore_protected(old_text, files[path], allow_front_matter=allow_front_matter)
            if repaired is None:
                return None
            files[path] = repaired
        out = package.bundle(files, pair[0].main)
        return None if check_invariants(before, out, allow_front_matter=allow_front_matter) else out
    old, new = split_document(before), split_document(after)
    out = after
    if old.front_matter and not new.front_matter and not allow_front_matter:
        gap = "\n" if before[old.body_start:].startswith("\n") and not after.startswith("\n") else ""
        out = old.front_matter + gap + after
    present = {m.group(2) for m in MARKER_RE.finditer(after)}
    missing = [r for r in old.regions if r.name not in present]
    if missing:
        blocks = "\n\n".join(before[r.start:r.end] for r in missing)
        body = strip_trailing_blank_lines(out)
        out = (body + "\n\n" if body.strip() else body) + blocks + "\n"
    return None if check_invariants(before, out, allow_front_matter=allow_front_matter) else out


# ---------------------------------------------------------------------------------------------- diffs
def _lines(text: str) -> list[str]:
    # Split on "\n" only: str.splitlines would also split on form feeds and U+2028, which unidiff does not.
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def unified_diff(before: str, after: str, path: str = "SKILL.md", context: int = 3) -> str:
    """A `git diff`-style unified diff (`--- a/PATH`, `+++ b/PATH`), "" when equal; a last line without newline
    gets git's `\\ No newline at end of file` marker so the text parses back."""
    out: list[str] = []
    for line in difflib.unified_diff(_lines(before), _lines(after), f"a/{path}", f"b/{path}", n=context):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def diff_stats(diff_text: str) -> tuple[int, int]:
    """(added, removed) line counts of a unified diff, parsed with unidiff."""
    if not diff_text.strip():
        return 0, 0
    patch = PatchSet(diff_text)
    return patch.added, patch.removed
