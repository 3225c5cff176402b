"""Teacher prompts: stage templates, the data blocks they carry and answer schemas (the blocks' tag codec, its
escaping and parser, is the leaf `tagcodec.py`).

Contracts (see docs/ARCHITECTURE.md, "The teacher protocol"):
- A template `templates/prompts/<stage>.md` is a system part and a user part separated by a line that is exactly
  `<!-- user -->`. The user part's first line is `<stage>NAME</stage>`. Placeholders are `{{name}}`, filled by one
  regex pass (values are inserted verbatim, never re-scanned). A placeholder outside the stage's vocabulary
  (`STAGE_VARIABLES`) is a SkillgitError naming template and placeholder; so is a used variable the caller did not
  pass. Variables a template does not use are ignored (an override may leave blocks out).
- `render(stage, variables, prompts_dir)` uses `prompts_dir/<stage>.md` when it exists (`prompts.dir` in config),
  else the shipped template. Reads are cached by (path, mtime).
- Data blocks are rendered here, not in templates, so their format is stable, with `tagcodec` (tags on their own
  lines, content escaped once per nesting level so that no student output or skill text can close or open a
  block). Empty collections render as `(none)` inside their container (or alone where there is no container).
"""

from __future__ import annotations

import functools
import html
import json
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from skillgit.errors import SkillgitError
from skillgit.resources import templates_dir
from skillgit.tagcodec import NONE, attrs, container, leaf
from skillgit.tagcodec import child as child  # the protocol's parser, read through this module too
from skillgit.tagcodec import parse_blocks as parse_blocks
from skillgit.tagcodec import unescape_all as unescape_all
from skillgit.types import EDIT_OPS, Edit, Message, RejectedEdit, Trajectory, is_failure

STAGES: tuple[str, ...] = ("reflect", "merge", "rank", "lr", "slow_update", "meta_skill", "meta_reflect",
                           "rewrite", "full_rewrite", "pick",
                           "probe")  # deep reflect (loop/deep_reflect.py)

# The placeholders each stage's template may use; every one is a rendered block (see the block_* functions).
STAGE_VARIABLES: dict[str, tuple[str, ...]] = {
    "reflect": ("skill", "trajectories", "budget", "rejected_edits", "meta_skill"),
    "merge": ("skill", "edits", "rejected_edits", "meta_skill"),
    "rank": ("skill", "edits", "budget", "rejected_edits", "meta_skill"),
    "lr": ("skill", "stats", "bounds"),
    "slow_update": ("skill", "comparison"),
    "meta_skill": ("meta_skill", "comparison", "accepted_steps", "rejected_steps"),
    "meta_reflect": ("skill", "accepted_steps", "rejected_steps", "budget"),
    "rewrite": ("skill", "edits", "rejected_edits"),
    "full_rewrite": ("skill", "trajectories"),
    "pick": ("candidates",),
    "probe": ("skill", "trajectories", "probes", "turn", "meta_skill"),  # deep reflect (loop/deep_reflect.py)
}

USER_SEPARATOR = "<!-- user -->"
DEFAULT_MAX_FIELD_CHARS = 4000

_PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _truncate(text: str, limit: int | None) -> str:
    """Keep the head and the tail (where final answers usually are) of an over-long field, with a marker."""
    if limit is None or len(text) <= limit:
        return text
    head = (limit * 2) // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… {cut} characters truncated …]\n{text[len(text) - tail:] if tail else ''}"


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# ---------------------------------------------------------------------------------------------- blocks
def block_skill(text: str, *, max_chars: int = 60_000) -> str:
    """`<skill>`: the skill's text, or for a package one `<file path>` block per text file. A large package shows
    its main file and references whole as long as they fit `max_chars`; files past that are listed with their size
    (`<file path="…" omitted="N characters">`) so the teacher knows they exist."""
    if not text.startswith('<file path="'):
        return leaf("skill", text, 1)
    files = parse_blocks(text, "file")
    children: list[str] = []
    used = 0
    for found, inner in files:
        path = found.get("path", "")
        if used + len(inner) > max_chars and children:
            children.append(f'<file path="{html.escape(path)}" omitted="{len(inner)} characters">\n</file>')
            continue
        used += len(inner)
        children.append(leaf("file", inner, 2, [("path", path)]))
    return container("skill", children)


def block_meta_skill(text: str) -> str:
    return leaf("meta_skill", text or NONE, 1)


def block_budget(n: int) -> str:
    return f"<budget>{int(n)}</budget>"


def block_bounds(low: int, high: int) -> str:
    """The range the `lr` stage must choose its number of edits from."""
    return f"<bounds{attrs([('min', int(low)), ('max', int(high))])}></bounds>"


def block_stats(stats: Mapping[str, Any]) -> str:
    return leaf("stats", json.dumps(stats, indent=2, sort_keys=True, ensure_ascii=False, default=str), 1)


def _outcome_of(traj: Trajectory, outcome: str) -> str:
    if outcome != "auto":
        return outcome
    if traj.score is None:
        return "unknown"  # not scored (an API error, a verifier crash): neither a failure nor a success
    return "failure" if is_failure(traj.score) else "success"


def block_trajectories(trajs: list[Trajectory], outcome: str, *,
                       max_chars: int | None = DEFAULT_MAX_FIELD_CHARS) -> str:
    """`<trajectory>` blocks, one per trajectory. `outcome` is "failure", "success", or "auto" (`types.is_failure`;
    "unknown" for a trajectory without a score). hard/soft are omitted for a trajectory without a score; `<trace>`
    appears only when non-empty; fields longer than `max_chars` keep their head and tail around a truncation
    marker. Judge isolation (`skillgit.judging`): `<expected>` is the trajectory's `expected`, which the rollout
    sets to what the scorer lets a teacher read (`teacher_reference`: never a pattern or a rubric), and
    `<feedback>` is the scorer's neutral account; only train items' trajectories are ever rendered."""
    if not trajs:
        return NONE
    blocks = []
    for t in trajs:
        attrs = [("id", t.item_id), ("outcome", _outcome_of(t, outcome)),
                 ("hard", None if t.score is None else f"{t.score.hard:.2f}"),
                 ("soft", None if t.score is None else f"{t.score.soft:.2f}")]
        children = [
            leaf("input", _truncate(t.input, max_chars), 2),
            leaf("output", _truncate(t.output, max_chars), 2),
            leaf("expected", _truncate(_as_text(t.expected), max_chars), 2),
            leaf("feedback", _truncate(t.score.feedback if t.score else "", max_chars), 2),
        ]
        if t.trace:
            children.append(leaf("trace", _truncate(t.trace, max_chars), 2))
        blocks.append(container("trajectory", children, attrs))
    return "\n".join(blocks)


def _edit_block(edit: Edit | Mapping[str, Any], depth: int) -> str:
    e = edit if isinstance(edit, Edit) else Edit.from_dict(dict(edit))
    attrs = [("id", e.id or None), ("op", e.op), ("support", e.support_count), ("source", e.source_type),
             ("file", e.file or None)]
    children = [leaf("target", e.target, depth + 1), leaf("content", e.content, depth + 1),
                leaf("rationale", e.rationale, depth + 1)]
    return container("edit", children, attrs)


def block_edits(edits: list[Edit]) -> str:
    """`<edit id op support source>` blocks with `<target>`, `<content>`, `<rationale>` children."""
    return "\n".join(_edit_block(e, 1) for e in edits) if edits else NONE


def block_rejected(rejected: list[RejectedEdit]) -> str:
    """The negative buffer: `<rejected op delta>` blocks (delta "%+.3f") inside `<rejected_edits>`."""
    children = []
    for r in rejected:
        kids = [leaf("target", r.edit.target, 3), leaf("content", r.edit.content, 3), leaf("reason", r.reason, 3)]
        children.append(container("rejected", kids, [("op", r.edit.op), ("delta", f"{r.delta:+.3f}")]))
    return container("rejected_edits", children)


# A before/after pair's kinds (`loop/epoch.compare`), in the order the teacher reads them and the epoch counts them.
KIND_ORDER = ("regressed", "improved", "persistent_failure", "stable_success")


def block_comparison(pairs: Sequence[Mapping[str, Any]], *, max_chars: int | None = DEFAULT_MAX_FIELD_CHARS) -> str:
    """Before/after pairs for the slow update and the meta skill: regressions first, then improvements,
    persistent failures, stable successes (input order within a kind; unknown kinds last)."""
    def rank(p: Mapping[str, Any]) -> int:
        kind = p.get("kind")
        return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)

    children = []
    for p in sorted(pairs, key=rank):
        scores = [(k, None if p.get(k) is None else f"{float(p[k]):.2f}") for k in ("before_score", "after_score")]
        kids = [leaf(k, _truncate(_as_text(p.get(k)), max_chars), 3)
                for k in ("input", "expected", "before_output", "after_output")]
        children.append(container("pair", kids, [("id", p.get("id")), ("kind", p.get("kind")), *scores]))
    return container("comparison", children)


def block_steps(tag: str, steps: list[Mapping[str, Any]]) -> str:
    """`<accepted_steps>` or `<rejected_steps>`: one `<step n delta>` per step (delta "%+.3f") holding its
    `<edit>` blocks (Edit objects or their dicts) and, when given, a `<reason>`."""
    if tag not in ("accepted_steps", "rejected_steps"):
        raise SkillgitError(f"block_steps: unknown tag {tag!r}", "use 'accepted_steps' or 'rejected_steps'")
    children = []
    for s in steps:
        kids = [_edit_block(e, 3) for e in s.get("edits") or []]
        if s.get("reason"):
            kids.append(leaf("reason", str(s["reason"]), 3))
        delta = s.get("delta")
        attrs = [("n", s.get("step")), ("delta", None if delta is None else f"{float(delta):+.3f}")]
        children.append(container("step", kids, attrs))
    return container(tag, children)


def block_candidates(candidates: Mapping[str, str]) -> str:
    """`<candidate id>` blocks holding whole skills, in the mapping's order."""
    if not candidates:
        return NONE
    return "\n".join(leaf("candidate", text, 1, [("id", cid)]) for cid, text in candidates.items())


# ---------------------------------------------------------------------------------------------- templates
class Template:
    def __init__(self, stage: str, path: Path, system: str, user: str):
        self.stage, self.path, self.system, self.user = stage, path, system, user

    def placeholders(self) -> list[str]:
        return sorted(set(_PLACEHOLDER_RE.findall(self.system + "\n" + self.user)))


@functools.lru_cache(maxsize=64)
def _load(path_text: str, stage: str, mtime_ns: int) -> Template:
    path = Path(path_text)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SkillgitError(f"cannot read prompt template {path}: {exc}", "check prompts.dir") from exc
    parts = re.split(r"^[ \t]*" + re.escape(USER_SEPARATOR) + r"[ \t]*\r?$\n?", raw, maxsplit=1, flags=re.M)
    if len(parts) != 2:
        raise SkillgitError(f"prompt template {path} has no '{USER_SEPARATOR}' line",
                            "put the system part first, then a line '<!-- user -->', then the user part")
    system, user = parts[0].strip(), parts[1].strip()
    first = user.split("\n", 1)[0].strip()
    if first != f"<stage>{stage}</stage>":
        raise SkillgitError(f"prompt template {path}: the user part must start with <stage>{stage}</stage>",
                            f"its first line is {first!r}")
    template = Template(stage, path, system, user)
    unknown = [p for p in template.placeholders() if p not in STAGE_VARIABLES[stage]]
    if unknown:
        raise SkillgitError(f"prompt template {path}: unknown placeholder {{{{{unknown[0]}}}}}",
                            f"stage '{stage}' knows: {', '.join(STAGE_VARIABLES[stage])}")
    return template


def template_path(stage: str, prompts_dir: Path | str | None = None) -> Path:
    """The file `render` uses for `stage`: the project's override if present, else the shipped template."""
    if stage not in STAGES:
        raise SkillgitError(f"unknown prompt stage {stage!r}", f"stages: {', '.join(STAGES)}")
    if prompts_dir is not None:
        override = Path(prompts_dir) / f"{stage}.md"
        if override.is_file():
            return override
    return templates_dir() / "prompts" / f"{stage}.md"


def load_template(stage: str, prompts_dir: Path | str | None = None) -> Template:
    path = template_path(stage, prompts_dir)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as exc:
        raise SkillgitError(f"prompt template for stage '{stage}' not found at {path}",
                            "reinstall skillgit (templates ship as package data) or fix prompts.dir") from exc
    return _load(str(path), stage, mtime)


def render(stage: str, variables: Mapping[str, Any], prompts_dir: Path | str | None = None) -> tuple[Message, ...]:
    """(system, user) messages for `stage` (just the user message if the system part is empty)."""
    template = load_template(stage, prompts_dir)
    missing = [p for p in template.placeholders() if p not in variables]
    if missing:
        raise SkillgitError(f"prompt template {template.path} needs variable '{missing[0]}' (not given)",
                            f"pass all of: {', '.join(template.placeholders())}")

    def fill(part: str) -> str:
        return _PLACEHOLDER_RE.sub(lambda m: str(variables[m.group(1)]), part)

    user = Message("user", fill(template.user))
    return (Message("system", fill(template.system)), user) if template.system else (user,)


def check_templates(prompts_dir: Path | str | None = None) -> list[str]:
    """Problems with the templates `render` would use for each stage (for `skillgit doctor`)."""
    problems = []
    for stage in STAGES:
        try:
            load_template(stage, prompts_dir)
        except SkillgitError as exc:
            problems.append(str(exc))
    return problems


# ---------------------------------------------------------------------------------------------- answers
_STR = {"type": "string"}
_EDIT_ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {"op": {"type": "string", "enum": list(EDIT_OPS)}, "file": _STR, "target": _STR,
                   "content": _STR, "rationale": _STR},
    "required": ["op", "file", "target", "content", "rationale"],
}
_MERGED_ITEM = {
    "type": "object",
    "properties": {**_EDIT_ITEM["properties"], "merged_from": {"type": "array", "items": _STR}},
    "required": [*_EDIT_ITEM["required"], "merged_from"],
}


def _answer(required: dict[str, dict], optional: dict[str, dict] | None = None) -> dict:
    # "reasoning" comes first so that a model writing keys in order thinks before it answers; it is not required
    # because an answer without it is still usable.
    props = {"reasoning": _STR, **required, **(optional or {})}
    return {"type": "object", "properties": props, "required": list(required)}


_EDITS_ANSWER = _answer({"edits": {"type": "array", "items": _EDIT_ITEM}},
                        {"failure_summary": _STR, "success_patterns": _STR})
SCHEMAS: dict[str, dict] = {
    "reflect": _EDITS_ANSWER,
    "merge": _answer({"edits": {"type": "array", "items": _MERGED_ITEM}}),
    "rank": _answer({"ranking": {"type": "array", "items": _STR}}),
    "lr": _answer({"num_edits": {"type": "integer"}}),
    "slow_update": _answer({"guidance": _STR}),
    "meta_skill": _answer({"meta_skill": _STR}),
    "meta_reflect": _EDITS_ANSWER,
    "rewrite": _answer({"skill": _STR}),
    "full_rewrite": _answer({"skill": _STR}),
    "pick": _answer({"choice": _STR}),
    # deep reflect (loop/deep_reflect.py): one probe per trajectory at most; an empty list ends the probing
    "probe": _answer({"probes": {"type": "array", "items": {
        "type": "object", "properties": {"id": _STR, "action": {"type": "string", "enum": ["ask", "rerun"]},
                                         "text": _STR},
        "required": ["id", "action", "text"]}}}),
}

_PY_TYPES = {"string": (str,), "array": (list,), "object": (dict,), "integer": (int,), "number": (int, float),
             "boolean": (bool,)}


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _PY_TYPES[kind])


def validate(stage: str, obj: Any) -> list[str]:
    """Light check of a teacher answer: a JSON object with the stage's required keys of the right top-level
    types (and string items in `ranking`). Per-edit problems are `patch.parse_edits`'s to record."""
    schema = SCHEMAS[stage]
    if not isinstance(obj, dict):
        return [f"{stage} answer is a {type(obj).__name__}, not a JSON object"]
    problems = [f"{stage} answer lacks '{key}'" for key in schema["required"] if key not in obj]
    for key, sub in schema["properties"].items():
        if key in obj and not _type_ok(obj[key], sub["type"]):
            problems.append(f"{stage} answer: '{key}' should be {sub['type']}, got {type(obj[key]).__name__}")
        elif key in obj and sub["type"] == "array" and sub["items"]["type"] != "object":
            bad = [v for v in obj[key] if not _type_ok(v, sub["items"]["type"])]
            if bad:
                problems.append(f"{stage} answer: '{key}' items should be {sub['items']['type']}, got {bad[0]!r}")
    return problems
