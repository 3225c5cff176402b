"""The simulated teacher's side for *agentic* trajectories (a coding agent, a workspace, a pytest verifier).

`answer(stage, user_text, rng, cfg) -> dict | None` answers the `reflect` stage for agentic prompts and returns
None for every other stage and for prompts that are not agentic (`is_agentic`), so the text world's teacher
(teacher.py) can dispatch here first and fall back to its own handlers.

What it sees is only its prompt, read as a real teacher would (prompts.parse_blocks / child):
- `<skill>`: the skill package, one `<file path="…">…</file>` block per file (a `<skill>` without file blocks
  is the text of SKILL.md);
- per `<trajectory>`: `<input>` the task prompt, `<output>` the agent's final message, `<feedback>` the tail of
  the verifier's output (pytest failure lines), `<trace>` the tool calls and the workspace diff;
- `<budget>`, `<rejected_edits>`, `<meta_skill>`.
It diagnoses failures from the verifier's messages (`SYMPTOMS`: surface patterns such as "has no docstring",
"is not in pkg.__all__", "DID NOT RAISE", "CHANGELOG.md has no entry"), uses the diff to recognise causes (a
`print(` or `except Exception:` the agent added), and proposes edits from a repertoire of good, vague and harmful
ideas (`REPERTOIRE`, like lexicon.py): some good ideas are worded so that they do not land, some live in a
reference file (`references/changelog.md`, …) and need a SKILL.md line that points at the file (the teacher adds
it, except with probability `FORGET_MENTION_RATE`). It knows nothing of the agent's concept matchers or of the
verifier tests beyond what the prompt shows.

Answer (reflect): `{"reasoning", "edits": [{"op", "target", "content", "rationale", "file"}], "failure_summary"}`
for failures, `{"reasoning", "edits", "success_patterns"}` for successes; `file` is a path inside the package
(default `SKILL.md`); an `append` to a file that does not exist creates it. At most `<budget>` edits; never an
idea listed in `<rejected_edits>` or noted as "avoid:" in `<meta_skill>`, nor one already in its target file.
All randomness comes from `rng` (the caller seeds it with the request).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from skillgit.prompts import child, parse_blocks
from skillgit.world.common import param
from skillgit.world.lexicon import norm

MAIN = "SKILL.md"
CAUSE_FIX_RATE = 0.5  # how often a line that looks like the cause is deleted rather than argued with
FORGET_MENTION_RATE = 0.15  # how often a new reference file is written without pointing SKILL.md at it
_NEGATED = re.compile(r"\b(not|never|no|avoid|without|instead|rather)\b|n't\b", re.IGNORECASE)
_PYTEST = re.compile(r"^FAILED |^E\s+\w*(Error|Failed)|\b\d+ (passed|failed)\b|DID NOT RAISE|AssertionError",
                     re.MULTILINE)


@dataclass(frozen=True)
class Idea:
    """One candidate instruction. `file`: where it goes in the package; `mention`: the SKILL.md line that points
    at `file` (reference ideas only); `heading`: the first line of `file` when the teacher creates it."""

    text: str
    file: str = MAIN
    mention: str = ""
    heading: str = ""


@dataclass(frozen=True)
class Fixes:
    good: tuple[Idea, ...]
    vague: tuple[Idea, ...]
    harmful: tuple[Idea, ...]
    causes: tuple[str, ...] = ()  # regexes for package lines that likely cause the symptom
    topic_words: tuple[str, ...] = ()  # words that locate a related SKILL.md line (insert_after targets)


# (symptom, pattern in the verifier output); the first group of symptoms are a reviewer's usual complaints.
SYMPTOMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("docstring", re.compile(r"has no docstring", re.IGNORECASE)),
    ("type_hints", re.compile(r"has no type hints|missing (type )?annotations?", re.IGNORECASE)),
    ("export", re.compile(r"is not in [\w.]+\.__all__|has no attribute '__all__'|[\w.]+\.\w+ is not [\w.]+")),
    ("valueerror", re.compile(r"DID NOT RAISE[^\n]*ValueError|raises?_valueerror", re.IGNORECASE)),
    ("changelog_missing", re.compile(r"CHANGELOG\.md has no (entry|'## Unreleased')", re.IGNORECASE)),
    ("changelog_format", re.compile(r"CHANGELOG\.md entry for \w+ is not", re.IGNORECASE)),
    ("tests_missing", re.compile(r"no unit test for \w+", re.IGNORECASE)),
    ("tests_skipped", re.compile(r"is marked skip", re.IGNORECASE)),
    ("tests_failing", re.compile(r"test_\w+ in tests/\S+ fails", re.IGNORECASE)),
    ("print", re.compile(r"calls print\(\)", re.IGNORECASE)),
    ("logging", re.compile(r"not reported as a WARNING|no log record", re.IGNORECASE)),
)

_CHANGELOG_REF = Idea(
    "Every change gets an entry in CHANGELOG.md under `## Unreleased`. Group the entries by kind under "
    "`### Added` (new functions), `### Changed` (changed behaviour) and `### Fixed` (bug fixes); each entry is one "
    "bullet that names the function in backticks, then the module path and a short summary.",
    "references/changelog.md", "Record every change in CHANGELOG.md as described in references/changelog.md.",
    "# CHANGELOG.md")
_PRINT_CAUSES = (r"\bprint", r"debug output", r"debugging output")
_INVALID_CAUSES = (r"return none", r"\bassert\b", r"catch .*exception", r"swallow", r"except exception")
_TEST_CAUSES = (r"skip.*test", r"tests? (are |is )?optional", r"pytest\.mark\.skip", r"xfail", r"disable.*test")

REPERTOIRE: dict[str, Fixes] = {
    "docstring": Fixes(
        good=(Idea("Give every new public function a docstring that says what it returns and which input is "
                   "invalid."),
              Idea("Document each public function you add with a docstring."),
              Idea("New functions start with a one-line summary of what they do.")),
        vague=(Idea("Write clean, readable code."),),
        harmful=(Idea("Keep functions short; skip docstrings for small helpers."),),
        causes=(r"(omit|skip).*docstring", r"docstrings? (are |is )?(optional|unnecessary)"),
        topic_words=("function", "docstring")),
    "type_hints": Fixes(
        good=(Idea("Add type hints to every parameter and the return value of new functions."),
              Idea("Annotate the parameters and the return type of every new function."),
              Idea("Use typed signatures."),
              Idea("Make signatures self-describing.")),
        vague=(Idea("Keep the code idiomatic."),),
        harmful=(Idea("Leave annotations out to keep signatures short."),),
        topic_words=("function", "signature")),
    "export": Fixes(
        good=(Idea("Export every new public function from its package: import it in the package `__init__.py` "
                   "and add its name to `__all__`."),
              Idea("Add each new public function to the package's `__all__`."),
              Idea("Make new functions reachable from the package's top level.")),
        vague=(Idea("Keep the public API consistent."),),
        harmful=(Idea("Leave the package's init file alone; callers should use full module paths."),),
        topic_words=("function", "package", "public")),
    "valueerror": Fixes(
        good=(Idea("Raise ValueError with a clear message for invalid input; never return None for it."),
              Idea("Invalid input raises ValueError naming the bad value. Never return None, use assert, or "
                   "catch every exception to hide it.", "references/errors.md",
                   "Handle invalid input as described in references/errors.md.", "# Errors"),
              Idea("Invalid arguments must raise a ValueError."),
              Idea("Fail loudly on bad input.")),
        vague=(Idea("Handle edge cases carefully."),),
        harmful=(Idea("Return None for invalid input so callers can check the result."),
                 Idea("Use assert statements to validate input.")),
        causes=_INVALID_CAUSES,
        topic_words=("input", "invalid", "error")),
    "changelog_missing": Fixes(
        good=(_CHANGELOG_REF,
              Idea("Add an entry to CHANGELOG.md under `## Unreleased` for every change."),
              Idea("Every change needs a changelog entry."),
              Idea("Tell users what changed in the release notes.")),
        vague=(Idea("Keep the project history tidy."),),
        harmful=(Idea("Leave the changelog to the release manager."),),
        causes=(r"changelog.*(optional|unnecessary|release manager)", r"skip.*changelog", r"leave the changelog"),
        topic_words=("changelog", "change")),
    "changelog_format": Fixes(
        good=(_CHANGELOG_REF,
              Idea("Write changelog entries in Keep a Changelog style: a bullet naming the function in backticks "
                   "under `### Added`, `### Changed` or `### Fixed`."),
              Idea("Changelog entries follow the project's usual format.")),
        vague=(Idea("Make changelog entries descriptive."),),
        harmful=(Idea("Put each changelog entry directly under `## Unreleased` as plain text."),),
        topic_words=("changelog",)),
    "tests_missing": Fixes(
        good=(Idea("Add at least one test for every new or changed function in `tests/test_<module>.py`."),
              Idea("Tests for `pkg/module.py` live in `tests/test_module.py`. Add at least one test for every new "
                   "or changed function, and a regression test for every fix.", "references/testing.md",
                   "Write tests as described in references/testing.md.", "# Tests"),
              Idea("Write a unit test for each change."),
              Idea("Make sure the new code is covered.")),
        vague=(Idea("Make sure the code works."),),
        harmful=(Idea("Tests are optional for small changes."),),
        causes=_TEST_CAUSES,
        topic_words=("test",)),
    "tests_skipped": Fixes(
        good=(Idea("Never mark new tests as skipped; they must run."),
              Idea("New tests must run: no skip or xfail markers.")),
        vague=(Idea("Keep the test suite healthy."),),
        harmful=(Idea("Mark slow tests with pytest.mark.skip."),),
        causes=_TEST_CAUSES,
        topic_words=("test",)),
    "tests_failing": Fixes(
        good=(Idea("Run the new tests before finishing; fix the code or the test until they pass."),),
        vague=(Idea("Double-check the tests."),),
        harmful=(),
        causes=_INVALID_CAUSES + _PRINT_CAUSES,
        topic_words=("test",)),
    "print": Fixes(
        good=(Idea("Never call print in library code; report problems with `logging.getLogger(__name__)` "
                   "warnings."),
              Idea("Library code never prints. Report skipped or bad input with a module-level "
                   "`logger = logging.getLogger(__name__)` and `logger.warning(...)`.", "references/logging.md",
                   "Report problems as described in references/logging.md.", "# Logging"),
              Idea("Keep stdout clean.")),
        vague=(Idea("Report problems clearly."),),
        harmful=(Idea("Print debugging output so problems are easy to see."),),
        causes=_PRINT_CAUSES,
        topic_words=("print", "report", "log")),
    "logging": Fixes(
        good=(Idea("Report skipped or bad input with `logging.getLogger(__name__)` warnings, not print."),
              Idea("Use the logging module to report skipped input."),
              Idea("Let operators see what was skipped.")),
        vague=(Idea("Report problems clearly."),),
        harmful=(Idea("Print a note for every skipped line."),),
        causes=_PRINT_CAUSES,
        topic_words=("report", "log")),
}

OFF_TARGET = (Idea("Read the surrounding code before editing."), Idea("Keep changes small and focused."),
              Idea("Print intermediate values while you work."), Idea("Follow the existing style of the module."))
REINFORCE = (Idea("Keep each change small and focused on the request."),
             Idea("Follow the existing code style of the module you edit."))

_DESCRIBE = {
    "docstring": "new functions lack docstrings", "type_hints": "new functions lack type hints",
    "export": "new functions are not exported in the package __all__",
    "valueerror": "invalid input does not raise ValueError", "changelog_missing": "no CHANGELOG.md entry",
    "changelog_format": "CHANGELOG.md entry not in Keep a Changelog format", "tests_missing": "no unit test added",
    "tests_skipped": "new tests are marked skip", "tests_failing": "the agent's own tests fail",
    "print": "library code calls print()", "logging": "skipped input is not logged as a warning",
}


# ---------------------------------------------------------------------------------------------- the prompt
def package_files(skill_block: str) -> dict[str, str]:
    """{path: text} of a `<skill>` block's inner text: its `<file path>` blocks, else the whole text as SKILL.md."""
    files = {attrs.get("path", MAIN): text for attrs, text in parse_blocks(skill_block, "file")}
    return files or {MAIN: skill_block}


@dataclass
class _Prompt:
    text: str
    files: dict[str, str]
    budget: int
    avoid: set[str]

    @classmethod
    def parse(cls, text: str) -> _Prompt:
        skill = child(text, "skill") or ""
        budget_text = child(text, "budget") or ""
        numbers = re.findall(r"-?\d+", budget_text)
        avoid: set[str] = set()
        for _, inner in parse_blocks(child(text, "rejected_edits") or "", "rejected"):
            content = child(inner, "content") or ""
            avoid.add(norm(content) if content.strip() else "delete:" + norm(child(inner, "target") or ""))
            # a rejected new reference file starts with its heading; the idea is the text below it
            avoid.add(norm(re.sub(r"\A#[^\n]*\n+", "", content)))
        for line in (child(text, "meta_skill") or "").splitlines():
            m = re.match(r"\s*[-*]\s*avoid:\s*(.+)", line, re.IGNORECASE)
            if m:
                avoid.add(norm(m.group(1)))
        return cls(text, package_files(skill), max(0, int(numbers[0])) if numbers else 4, avoid)

    def allowed(self, idea: Idea) -> bool:
        return norm(idea.text) not in self.avoid and norm(idea.text) not in norm(self.files.get(idea.file, ""))

    def lines(self, path: str) -> list[str]:
        """Editable lines of `path`: non-empty, outside front matter, each occurring once in the file."""
        text = self.files.get(path, "")
        raw = text.split("\n")
        start = 0
        if raw and raw[0].strip() == "---":
            end = next((i for i in range(1, len(raw)) if raw[i].strip() == "---"), None)
            start = end + 1 if end is not None else 0
        out = []
        for line in raw[start:]:
            s = line.strip()
            if s and not s.startswith("<!--") and text.count(s) == 1:
                out.append(s)
        return out


def is_agentic(user_text: str) -> bool:
    """Whether a prompt carries agentic trajectories: a packaged skill, a trace, or pytest-shaped feedback."""
    skill = child(user_text, "skill") or ""
    if parse_blocks(skill, "file"):
        return True
    for _, inner in parse_blocks(user_text, "trajectory"):
        if (child(inner, "trace") or "").strip() or _PYTEST.search(child(inner, "feedback") or ""):
            return True
    return False


def symptoms_of(feedback: str, trace: str) -> list[str]:
    """Symptoms of one failed trajectory, in `SYMPTOMS` order. A missing changelog entry also fails the format
    check; only the cause (the missing entry) is reported then."""
    found = [name for name, pattern in SYMPTOMS if pattern.search(feedback or "")]
    if "changelog_missing" in found and "changelog_format" in found:
        found.remove("changelog_format")
    added = _added_library_lines(trace)
    if "valueerror" not in found and any(re.search(r"except Exception", line) for line in added) \
            and re.search(r"\braise|invalid", feedback or "", re.IGNORECASE):
        found.append("valueerror")
    return found


def _added_library_lines(trace: str) -> list[str]:
    """Lines the agent added to non-test files, from the unified diff in the trace (all `+` lines if the trace
    names no files)."""
    out, current = [], ""
    for line in (trace or "").splitlines():
        m = re.match(r"^(?:\+\+\+ (?:b/)?|diff --git a/)(\S+)", line)
        if m:
            current = m.group(1)
            continue
        if line.startswith("+") and not line.startswith("+++") and not re.search(r"(^|/)tests?/", current):
            out.append(line[1:])
    return out


# ---------------------------------------------------------------------------------------------- answers
def answer(stage: str, user_text: str, rng, cfg) -> dict[str, Any] | None:
    """The JSON answer (a dict) for `stage`, or None when this module does not handle it."""
    if stage != "reflect" or not is_agentic(user_text):
        return None
    p = _Prompt.parse(user_text)
    trajectories = parse_blocks(user_text, "trajectory")
    failures = [inner for attrs, inner in trajectories if _outcome(attrs) == "failure"]
    if failures or not trajectories:
        return _reflect_failures(p, failures, rng, cfg)
    return _reflect_successes(p, [inner for _, inner in trajectories], rng)


def _outcome(attrs: dict[str, str]) -> str:
    outcome = attrs.get("outcome", "")
    if outcome in ("failure", "success"):
        return outcome
    try:
        return "success" if float(attrs.get("hard", "0")) >= 1.0 else "failure"
    except ValueError:
        return "failure"


def _edit(op: str, content: str = "", target: str = "", rationale: str = "", file: str = MAIN) -> dict[str, str]:
    return {"op": op, "target": target, "content": content, "rationale": rationale, "file": file}


def _favourite(options: list[Idea], rng) -> Idea:
    """The first (most obvious) wording is the likeliest: weights 1, 1/2, 1/3, …"""
    return rng.choices(options, [1 / (i + 1) for i in range(len(options))])[0]


def _reflect_failures(p: _Prompt, failures: list[str], rng, cfg) -> dict[str, Any]:
    counts: Counter = Counter()
    for inner in failures:
        counts.update(symptoms_of(child(inner, "feedback") or "", child(inner, "trace") or ""))
    n = len(failures)
    ordered = sorted(counts, key=lambda k: (-counts[k], rng.random()))
    edits: list[dict[str, str]] = []
    taken: set[str] = set()
    for sym in ordered:
        if len(edits) >= p.budget:
            break
        edits += _fix(p, sym, f"{counts[sym]} of {n} failures: {_DESCRIBE[sym]}", p.budget - len(edits), taken,
                      rng, cfg)
    if failures and len(edits) < p.budget and (not counts or rng.random() < float(param(cfg, "off_target_rate"))):
        options = [i for i in OFF_TARGET if p.allowed(i) and norm(i.text) not in taken]
        if options:
            idea = rng.choice(options)
            edits.append(_edit("append", idea.text, rationale="a general reminder that may help with these failures"))
    summary = "; ".join(f"{counts[k]}/{n} {_DESCRIBE[k]}" for k in ordered) or (
        "the verifier output names no convention: the failures look like wrong behaviour" if failures
        else "no trajectories")
    return {"reasoning": f"Read the verifier output and the diff of each failed run. {summary}.", "edits": edits,
            "failure_summary": summary}


def _cause_lines(p: _Prompt, fixes: Fixes, taken: set[str]) -> list[tuple[str, str]]:
    """(file, line) of package lines that look like the symptom's cause (negated lines never do)."""
    out = []
    for path in sorted(p.files):
        for line in p.lines(path):
            if norm(line) in taken or _NEGATED.search(line):
                continue
            if any(re.search(c, line, re.IGNORECASE) for c in fixes.causes):
                out.append((path, line))
    return out


def _fix(p: _Prompt, sym: str, why: str, room: int, taken: set[str], rng, cfg) -> list[dict[str, str]]:
    fixes = REPERTOIRE[sym]
    cause = _cause_fix(p, fixes, why, taken, rng)
    if cause:
        return cause
    vague_rate, harmful_rate = float(param(cfg, "vague_rate")), float(param(cfg, "harmful_rate"))
    weights = {"good": max(0.0, 1 - vague_rate - harmful_rate), "vague": vague_rate, "harmful": harmful_rate}
    # A reference idea takes two edits (the file and the SKILL.md line pointing at it) unless SKILL.md points
    # at the file already.
    pool = {label: [i for i in getattr(fixes, label) if p.allowed(i) and norm(i.text) not in taken
                    and room >= (1 if i.file == MAIN or i.file in p.files.get(MAIN, "") else 2)]
            for label in weights}
    labels = [label for label in pool if pool[label] and weights[label] > 0]
    if not labels:
        return []
    idea = _favourite(pool[rng.choices(labels, [weights[x] for x in labels])[0]], rng)
    taken.add(norm(idea.text))
    if idea.file != MAIN:
        return _reference_edits(p, idea, why, rng)
    return _main_edit(p, fixes, idea, why, taken, rng)


def _cause_fix(p: _Prompt, fixes: Any, why: str, taken: set[str], rng) -> list[dict[str, str]]:
    """Sometimes ([] otherwise) the deletion of a line that seems to cause the symptom."""
    causes = _cause_lines(p, fixes, taken)
    if causes and rng.random() < CAUSE_FIX_RATE:
        path, line = rng.choice(causes)
        if "delete:" + norm(line) not in p.avoid:
            taken.add(norm(line))
            return [_edit("delete", "", line, f"{why}; this line seems to cause it", path)]
    return []


def _main_edit(p: _Prompt, fixes: Any, idea: Idea, why: str, taken: set[str], rng) -> list[dict[str, str]]:
    """`idea` into SKILL.md: replacing a stale wording of the same fix, after a related line, or appended."""
    own = {norm(i.text) for i in fixes.good + fixes.vague}
    stale = [line for line in p.lines(MAIN) if norm(line) in own and norm(line) not in taken]
    roll = rng.random()
    if stale and roll < 0.35:
        target = rng.choice(stale)
        taken.add(norm(target))
        return [_edit("replace", idea.text, target, f"{why}; the current wording does not land")]
    related = [line for line in p.lines(MAIN) if any(w in line.lower() for w in fixes.topic_words)]
    if related and roll > 0.75:
        return [_edit("insert_after", idea.text, rng.choice(related), why)]
    return [_edit("append", idea.text, rationale=why)]


def _reference_edits(p: _Prompt, idea: Idea, why: str, rng) -> list[dict[str, str]]:
    """The edit to the reference file (created by an append when missing) and, unless SKILL.md already points at
    it (or the teacher forgets), an append to SKILL.md that does."""
    exists = idea.file in p.files
    content = idea.text if exists else f"{idea.heading}\n\n{idea.text}"
    edits = [_edit("append", content, rationale=f"{why}; the details belong in {idea.file}", file=idea.file)]
    if idea.file not in p.files.get(MAIN, "") and rng.random() >= FORGET_MENTION_RATE:
        edits.append(_edit("append", idea.mention, rationale=f"point the agent at {idea.file}"))
    return edits


def _reflect_successes(p: _Prompt, successes: list[str], rng) -> dict[str, Any]:
    edits: list[dict[str, str]] = []
    options = [i for i in REINFORCE if p.allowed(i)]
    if p.budget and options and rng.random() < 0.3:
        edits.append(_edit("append", rng.choice(options).text, rationale="keep doing what worked"))
    summary = f"{len(successes)} runs passed their verifier"
    return {"reasoning": f"{summary}; nothing specific to add.", "edits": edits,
            "success_patterns": f"{summary}: the changes followed the house conventions."}
