"""Names of everything skillgit keeps in git: refs, trailers and step specs. Pure string logic, no git.

Layout (see docs/ARCHITECTURE.md, "Git data model"):

| ref | holds |
| --- | --- |
| `refs/heads/<branch>` | accepted skills (fast-forward only) |
| `refs/heads/candidates/<run>/<step:04d>` | one undecided candidate; gone once decided |
| `refs/tags/rejected/<run>/<step:04d>` | annotated tag on a rejected candidate |
| `refs/notes/skillgit` | JSON-lines notes per commit (the data; not displayed) |
| `refs/notes/skillgit-log` | one or two human lines per commit (`notes.displayRef`: plain `git log` shows them) |
| `refs/skillgit/runs/<run>` | a run's config and progress (a commit of small files) |
| `refs/skillgit/archive` | rejected tags folded by `skillgit gc` (keeps their commits reachable) |
| `refs/notes/skillgit-remote/<remote>`, `refs/skillgit/remote/<remote>/…` | what `skillgit pull`/`push` fetched |

Run ids are single ref components from a small alphabet (`[A-Za-z0-9._-]`, no `/`), so `<run>/<step>` and
`rejected/<run>/<step>` parse without ambiguity and an archive key `<run>@<step>` is unique. A step is a number
(written `0003` in refs) or a name for epoch-level steps (`e1-slow-update`).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from skillgit.errors import SkillgitError

NOTES_REF = "refs/notes/skillgit"  # the full records (JSON lines): what skillgit reads; not shown by `git log`
DISPLAY_NOTES_REF = "refs/notes/skillgit-log"  # one or two human lines per commit: what `git log` shows
NOTES_REFS = (NOTES_REF, DISPLAY_NOTES_REF)
NOTES_TMP_PREFIX = "refs/notes/skillgit-tmp/"  # scratch notes refs while building a notes commit
REMOTE_NOTES_PREFIX = "refs/notes/skillgit-remote/"
CANDIDATES_PREFIX = "refs/heads/candidates/"
REJECTED_PREFIX = "refs/tags/rejected/"
RUNS_PREFIX = "refs/skillgit/runs/"
ARCHIVE_REF = "refs/skillgit/archive"
REMOTE_PREFIX = "refs/skillgit/remote/"

# Commit-message trailers every skillgit commit carries (parsed back by `notes.parse_message`).
TRAILER_RUN = "Skillgit-Run"
TRAILER_STEP = "Skillgit-Step"
TRAILER_SCORE = "Skillgit-Score"
TRAILER_DELTA = "Skillgit-Delta"
TRAILER_STEP_KIND = "Skillgit-Step-Kind"  # the step's `StepKind` (`step_kind` in notes)
TRAILER_KIND_BEFORE = "Skillgit-Kind"  # what commits before the step kind had one spelling carry (read, not written)
TRAILER_EPOCH = "Skillgit-Epoch"
TRAILER_METRIC = "Skillgit-Metric"
TRAILER_TOKENS = "Skillgit-Tokens"
TRAILER_SEQ = "Skillgit-Seq"  # the decision's position in its run (orders named epoch-level steps among numbered ones)
TRAILER_REVERT = "Skillgit-Revert"  # the revert mode: rev | to | steps
TRAILER_REVERT_OF = "Skillgit-Revert-Of"
TRAILER_REVERT_TO = "Skillgit-Revert-To"
TRAILER_PREFIX = "Skillgit-"

_RUN_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_NAMED_STEP_RE = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,63}")
_STEP_SPEC_RE = re.compile(r"(?:(rejected)/)?(?:([^/\s]+)/)?([^/\s]+)")
# the names skillgit gives steps (epoch-end candidates; a step's other parallel proposals): typed bare like numbers
_OWN_STEP_NAME_RE = re.compile(r"e[0-9]+-(?:slow-update|meta-reflect)|s[0-9]+-p[0-9]+")

def blob_id(data: bytes, object_format: str = "sha1") -> str:
    """The id git gives `data` as a blob in a repository of `object_format` (`sha1` or `sha256`): what
    `git hash-object` prints there."""
    algo = hashlib.sha256 if object_format == "sha256" else hashlib.sha1
    return algo(b"blob %d\0" % len(data) + data).hexdigest()


def _component_ok(text: str) -> bool:
    return ".." not in text and not text.endswith((".", ".lock"))


def validate_run(run: str) -> str:
    """Return `run` if it can name a run (one ref component from `[A-Za-z0-9._-]`), else raise (USAGE)."""
    if not isinstance(run, str) or not _RUN_RE.fullmatch(run) or not _component_ok(run):
        raise SkillgitError(f"invalid run id {run!r}",
                            "use letters, digits, '.', '_' and '-' (up to 100, starting with a letter or digit)")
    return run


def validate_step(step: int | str) -> int | str:
    """A step is a whole number ≥ 0 or a name (`e1-slow-update`: a letter, then letters, digits, `._-`).
    Digit strings become numbers, so "3", "0003" and 3 are the same step."""
    if isinstance(step, str) and step.isdigit():
        return int(step)
    if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
        return step
    if isinstance(step, str) and _NAMED_STEP_RE.fullmatch(step) and _component_ok(step):
        return step
    raise SkillgitError(f"invalid step {step!r}",
                        "steps are whole numbers (0 = the seed) or names of letters, digits, '.', '_', '-'")


def parse_step(token: str) -> int | str | None:
    try:
        return validate_step(token)
    except SkillgitError:
        return None


def step_key(step: int | str) -> tuple[int, int, str]:
    """Sort key: numbered steps in order, then named ones by name."""
    return (0, step, "") if isinstance(step, int) else (1, 0, str(step))


def step_name(step: int | str) -> str:
    """`3` → `0003` (four digits so refs sort by step; more digits when needed); names stay as they are."""
    step = validate_step(step)
    return f"{step:04d}" if isinstance(step, int) else step


def label(run: str, step: int | str) -> str:
    """The human name of a step: `run/0003`."""
    return f"{run}/{step_name(step)}"


def branch_ref(branch: str) -> str:
    return branch if branch.startswith("refs/") else f"refs/heads/{branch}"


def candidate_ref(run: str, step: int | str) -> str:
    return f"{CANDIDATES_PREFIX}{validate_run(run)}/{step_name(step)}"


def rejected_tag(run: str, step: int | str) -> str:
    """The tag's short name (what `git tag -l` shows): `rejected/<run>/<step:04d>`."""
    return f"rejected/{validate_run(run)}/{step_name(step)}"


def rejected_ref(run: str, step: int | str) -> str:
    return f"refs/tags/{rejected_tag(run, step)}"


def run_ref(run: str) -> str:
    return f"{RUNS_PREFIX}{validate_run(run)}"


def parse_step_ref(refname: str) -> tuple[str, int | str] | None:
    """`refs/heads/candidates/r1/0003` or `refs/tags/rejected/r1/0003` → `("r1", 3)`; anything else → None."""
    for prefix in (CANDIDATES_PREFIX, REJECTED_PREFIX):
        if refname.startswith(prefix):
            run, _, token = refname[len(prefix):].partition("/")
            step = parse_step(token)
            if _RUN_RE.fullmatch(run) and step is not None:
                return run, step
    return None


def parse_run_ref(refname: str) -> str | None:
    if refname.startswith(RUNS_PREFIX):
        run = refname[len(RUNS_PREFIX):]
        return run if _RUN_RE.fullmatch(run) else None
    return None


def parse_step_spec(spec: str) -> tuple[bool, str | None, int | str] | None:
    """Parse a step spec a user may type: `N`, `<run>/<step>` or `rejected/<run>/<step>`.

    Returns (rejected_only, run or None for "the newest run", step), or None when `spec` is not of that shape
    (then it is an ordinary git revision). A bare spec must be a number or a step name skillgit
    gives (`e1-slow-update`, `s3-p2`; `main` stays a branch).
    """
    m = _STEP_SPEC_RE.fullmatch(spec.strip())
    if not m:
        return None
    rejected, run, token = m.group(1), m.group(2), m.group(3)
    if (rejected and run is None) or (run is None and not (token.isdigit() or _OWN_STEP_NAME_RE.fullmatch(token))):
        return None
    step = parse_step(token)
    if step is None or (run is not None and not _RUN_RE.fullmatch(run)):
        return None
    return bool(rejected), run, step


def archive_key(run: str, step: int | str) -> str:
    """The name of a folded rejected step inside the archive's tree: `<run>@<step:04d>`."""
    return f"{run}@{step_name(step)}"


def parse_archive_key(name: str) -> tuple[str, int | str] | None:
    run, sep, token = name.rpartition("@")
    step = parse_step(token) if sep else None
    if step is not None and _RUN_RE.fullmatch(run):
        return run, step
    return None


# ---------------------------------------------------------------------------------------------- names from outside
# Branch and remote names come from the command line, the config, notes written by collaborators and agent
# transcripts. Each is checked here before it can reach a git argv (where git.py also puts it after `--` /
# `--end-of-options` or refuses it), a ref transaction's stdin, a refspec or a pull-request body.
_REF_FORBIDDEN = set("~^:?*[\\")
NAME_HINT = "use a name git accepts that does not begin with '-', e.g. review/better-dates"


def _invisible(char: str) -> bool:
    """Control, format (bidi overrides, zero-width), unassigned or separator characters: never in a name."""
    return unicodedata.category(char)[0] in "CZ"


def branch_problem(name: object) -> str | None:
    """Why `name` cannot be a branch name skillgit passes to git, or None. git's `check-ref-format --branch` rules
    (no `..`, `@{`, `~^:?*[\\`, space or control character; no component that begins with `.` or ends with
    `.lock`; no leading, trailing or double `/`; no trailing `.`), plus skillgit's: no leading `-` (git would read
    an option), no `@` (`@` alone means HEAD to git, `@{…}` a reflog), no invisible or bidi character
    (U+202E can make a name read as another)."""
    if not isinstance(name, str) or not name:
        return "it is empty"
    short = name.removeprefix("refs/heads/")
    if not short:
        return "it is empty"
    if name.startswith("-") or short.startswith("-"):
        return "it begins with '-' (git would read it as an option)"
    if len(short) > 200:
        return "it is longer than 200 characters"
    return _character_problem(short) or _shape_problem(short)


def _character_problem(short: str) -> str | None:
    """A character git or skillgit refuses in a branch name, or None."""
    bad = next((c for c in short if _invisible(c)), None)
    if bad is not None:
        return f"it contains a space, control or invisible character (U+{ord(bad):04X})"
    if "@" in short:
        return "it contains '@' (git reads '@' as HEAD and '@{' as a reflog entry)"
    bad = next((c for c in short if c in _REF_FORBIDDEN), None)
    if bad is not None:
        return f"it contains {bad!r}, which git does not allow in a ref name"
    return None


def _shape_problem(short: str) -> str | None:
    """A slash, dot or `.lock` placement git refuses in a branch name, or None."""
    if ".." in short or "//" in short or short.startswith("/") or short.endswith(("/", ".")):
        return "it has '..', '//', a leading or trailing '/' or a trailing '.', which git does not allow"
    if any(part.startswith(".") or part.endswith(".lock") for part in short.split("/")):
        return "a part of it begins with '.' or ends with '.lock', which git does not allow"
    return None


def check_branch(name: str, what: str = "branch") -> str:
    """`name` when `branch_problem` finds nothing, else SkillgitError (USAGE, exit 2) that says why."""
    problem = branch_problem(name)
    if problem is not None:
        raise SkillgitError(f"invalid {what} name {name!r}: {problem}", NAME_HINT)
    return name


_HELPER_TRANSPORTS = ("ext::", "fd::")  # git remote helpers that run commands or use inherited file descriptors


def remote_problem(remote: object) -> str | None:
    """Why `remote` (a remote's name, a path or a URL) cannot be passed to git, or None: empty, a leading `-`
    (`--upload-pack=…` would run a command), a control, bidi or invisible character (a plain space may appear in
    a path), or git's `ext::`/`fd::` transports."""
    if not isinstance(remote, str) or not remote.strip():
        return "it is empty"
    if remote.startswith("-"):
        return "it begins with '-' (git would read it as an option such as --upload-pack)"
    bad = next((c for c in remote if c != " " and _invisible(c)), None)
    if bad is not None:
        return f"it contains a control or invisible character (U+{ord(bad):04X})"
    if remote.lower().startswith(_HELPER_TRANSPORTS):
        return "git's ext:: and fd:: transports run commands; use a remote name, a path or a URL"
    return None


def check_remote(remote: str) -> str:
    """`remote` when `remote_problem` finds nothing, else SkillgitError (USAGE, exit 2) that says why."""
    problem = remote_problem(remote)
    if problem is not None:
        raise SkillgitError(f"invalid remote {remote!r}: {problem}",
                            "pass a remote's name (see `git remote -v`), a path or a URL")
    return remote


def remote_component(remote: str) -> str:
    """A ref component naming `remote`, which may be a remote's name, a path or a URL.

    Plain remote names stay as they are; anything else becomes a readable slug plus a short hash, so two
    different URLs never share the refs we fetch into.
    """
    if _RUN_RE.fullmatch(remote) and _component_ok(remote):
        return remote
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", remote).strip("-._")[-40:].lstrip("-._") or "remote"
    return f"{slug}-{hashlib.sha1(remote.encode()).hexdigest()[:8]}"
