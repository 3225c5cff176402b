"""Scrubbing harvested text before it is stored, shown or returned: secrets, e-mail addresses, home paths and
user-configured patterns are masked, and every mask is counted by category.

Contracts:
- `Scrubber.scrub(text) -> (text, Redactions)` masks, in this order: (1) secrets — everything
  `skillgit.redact.redact` masks (its detector table: provider tokens, AWS key ids, private key blocks,
  `Authorization` schemes, credential assignments, high-entropy assignments, passwords in URLs, the values of
  credential-named environment variables), plus the value of every entry of the repository's `.env` and of every
  environment variable the caller names (values of at least 8 characters); (2) e-mail addresses → `<email>`
  (`git@host` SSH remotes are not addresses); (3) home paths → `~/`: the actual home folders (`$HOME`,
  `%USERPROFILE%`, and any `homes` the caller names) wherever they appear, and `/home/<user>/`,
  `/Users/<user>/`, `/root/`, `C:\\Users\\<user>\\`; (4) each extra regex → `<redacted>`.
  It is idempotent and never raises.
- `Scrubber.scrub_session` returns a copy of a `Session` in which every free-text field (turn text, tool summaries,
  commands, paths, outputs, cwd, file path, branch, remote) went through `scrub`; ids and counts are kept. An
  output a reader cut (`ToolResult.cut`: head, marker, tail) is scrubbed with the raw margins around its cut, so a
  secret the cut split (a credential's name in the part cut, its value at the tail's start; a known value cut in
  two) is masked on the side that is kept; the margins are dropped, masks lying in one apart from the cut with
  them, except what a mask lying across (or touching) a cut covers (scrubbed), so an excerpt never shows more
  than its limit plus such a mask, and its "[N chars cut]" counts what it neither shows nor masks. Only what is
  kept is scanned (plus the margins), never the text the reader cut. A tool summary the reader cut (it ends in
  "…") that ends in the first `CUT_PARTIAL` or more characters of a known secret value has them masked (the cut
  split the value; the command itself is kept and scrubbed whole).
- `build_scrubber` raises `ConfigError` for an extra pattern that is not a valid regex, naming the pattern.
- Speed: each category runs only when a literal it needs occurs (`@`, `/home/`, `Users`, `/root`, a home's
  path), and every pattern starts with a literal the regex engine can skip to. A string of at most `MEMO_CHARS`
  is scrubbed once per set of resolved secret values (its result and counts remembered); a string nothing was
  masked in comes back as the very object given, and `scrub_session` copies only the records that changed.
- `previews(session)` is what harvest keeps of tool outputs before scrubbing (see its docstring).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from operator import is_
from pathlib import Path
from typing import Any, TypeVar

from skillgit.dotenv import read_dotenv
from skillgit.errors import ConfigError
from skillgit.redact import MASK, MIN_SECRET_LEN, redact_resolved, resolve_secrets
from skillgit.secret_scan import GATE_CHARS, rust_literal, rust_search
from skillgit.sleep.model import Session, SkillUse, ToolCall, ToolResult, Turn
from skillgit.sleep.readers._common import CUT_MARGIN

MEMO_CHARS = 256  # strings up to this long are remembered once scrubbed
MEMO_SIZE = 8192  # and at most this many of them
_NONE = (0, 0, 0, 0)  # the counts the memo holds for a string nothing was masked in (tested by identity)
EMAIL_MASK = "<email>"
CUSTOM_MASK = "<redacted>"
_SEP = r"(?:\\\\|\\|/)"  # \\ (JSON-escaped), \ or /
# the address's domain part, found from its `@` (a literal the engine skips to); the local part is read backwards
_EMAIL_DOMAIN = re.compile(r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_EMAIL_LOCAL = re.compile(r"[A-Za-z0-9._%+-]{1,64}$")
_HOME_POSIX = re.compile(r"/(?<![\w.~-]/)(?:home|Users)/[A-Za-z0-9._-]+(?:/|(?![\w.-]))")
_HOME_ROOT = re.compile(r"/(?<![\w.~-]/)root(?:/|(?![\w.-]))")
# a Windows user name may hold spaces, but then only a separator may end it
_HOME_WINDOWS = re.compile(r"(?<![\w])[A-Za-z]:" + _SEP + "(?i:Users)" + _SEP
                           + r"(?:[A-Za-z0-9._ -]*[A-Za-z0-9_-]" + _SEP + r"|[A-Za-z0-9._-]+(?![\w.-]))")


@dataclass(frozen=True)
class Redactions:
    """How many masks each category applied."""

    secrets: int = 0
    emails: int = 0
    home_paths: int = 0
    custom: int = 0

    @property
    def total(self) -> int:
        return self.secrets + self.emails + self.home_paths + self.custom

    def __add__(self, other: Redactions) -> Redactions:
        return Redactions(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Redactions:
        return cls(**{f.name: int(data.get(f.name, 0) or 0) for f in fields(cls)})


def _home_repl(match: re.Match[str]) -> str:
    text = match.group(0)
    return "~/" if text[-1:] in ("/", "\\") else "~"


_HOME_GATES = ((("Users", "users", "USERS"), _HOME_WINDOWS), (("/home/", "/Users/"), _HOME_POSIX),
               (("/root",), _HOME_ROOT))
# the gates to test where "sers" or "SERS" occurs, and (without the literals holding one of them) where neither does
_HOME_TESTS = {users: tuple((kept, pattern) for lits, pattern in _HOME_GATES
                            if (kept := tuple(lit for lit in lits if users or not ("sers" in lit or "SERS" in lit))))
               for users in (True, False)}


def _usable_home(home: str | None) -> bool:
    """A home folder worth masking: absolute, and more than a root (`/`, `C:\\`)."""
    if not home:
        return False
    bare = home.rstrip("/\\")
    return len(bare) >= 3 and (bare.startswith("/") or bool(re.match(r"^[A-Za-z]:[/\\]", home)))


def _mask_emails(text: str, replaced: list[tuple[int, int, int]] | None = None) -> tuple[str, int]:
    out, pos, count = [], 0, 0
    for match in _EMAIL_DOMAIN.finditer(text):
        at = match.start()
        local = _EMAIL_LOCAL.search(text, max(pos, at - 64), at)
        if local is None:
            continue
        start = local.start()
        before = text[start - 1] if start > 0 else ""
        if (before and (before.isalnum() or before in "_.%+-")) or local.group() == "git":
            continue  # part of something longer, or an SSH remote (git@host)
        out += [text[pos:start], EMAIL_MASK]
        pos, count = match.end(), count + 1
        if replaced is not None:
            replaced.append((start, pos, len(EMAIL_MASK)))
    if not count:
        return text, 0
    out.append(text[pos:])
    return "".join(out), count


@dataclass(frozen=True)
class Scrubber:
    """Masks secrets, addresses, home paths and `patterns` (see the module contract). Build with `build_scrubber`."""

    secrets: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    homes: tuple[str, ...] = ()  # home folders masked wherever they appear (absolute paths, not "/")
    _compiled: tuple[re.Pattern[str], ...] = field(default=(), repr=False, compare=False)
    _homes: tuple[tuple[str, re.Pattern[str]], ...] = field(default=(), repr=False, compare=False)
    # short strings scrubbed already (paths, commands, a summary that is its path): text → (scrubbed, counts),
    # valid for one tuple of resolved secret values (the memo is emptied when another comes)
    _memo: dict[str, tuple[str, tuple[int, int, int, int]]] = field(default_factory=dict, repr=False, compare=False)
    _memo_for: list[tuple[str, ...] | None] = field(default_factory=lambda: [None], repr=False, compare=False)
    # the Rust test of whether an address or home step has a literal to look at (`_literal_gate`), made once
    _gate: list[Callable[[str], bool] | None] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled = []
        for pattern in self.patterns:
            try:
                compiled.append(re.compile(pattern))
            except re.error as exc:
                raise ConfigError(f"sleep scrub pattern {pattern!r} is not a valid regular expression: {exc}",
                                  "fix or remove the pattern (Python `re` syntax)") from exc
        object.__setattr__(self, "_compiled", tuple(compiled))
        # longest first, so a secret that contains another is masked whole
        object.__setattr__(self, "secrets", tuple(sorted({s for s in self.secrets if s and len(s) >= MIN_SECRET_LEN},
                                                         key=len, reverse=True)))
        homes = sorted({h.rstrip("/\\") for h in self.homes if _usable_home(h)}, key=len, reverse=True)
        object.__setattr__(self, "homes", tuple(homes))
        object.__setattr__(self, "_homes", tuple(
            (h, re.compile(r"(?<![\w.~-])" + re.escape(h) + r"(?:[/\\]|(?![\w.-]))")) for h in homes))

    def scrub(self, text: str) -> tuple[str, Redactions]:
        counts = [0, 0, 0, 0]
        return self._scrub(text, resolve_secrets(self.secrets), counts), Redactions(*counts)

    def _scrub(self, text: str, secrets: tuple[str, ...], counts: list[int]) -> str:
        """`text` scrubbed with the resolved secret values; adds (secrets, emails, home paths, custom) to counts.
        A short string is scrubbed once per set of secret values (a session repeats its paths and commands)."""
        if not text:
            return text
        if len(text) > MEMO_CHARS:
            return self._scrub_once(text, secrets, counts)
        if self._memo_for[0] is not secrets or len(self._memo) > MEMO_SIZE:
            self._memo.clear()
            self._memo_for[0] = secrets
        hit = self._memo.get(text)
        if hit is None:
            mine = [0, 0, 0, 0]
            scrubbed = self._scrub_once(text, secrets, mine)
            hit = self._memo[text] = (scrubbed, (mine[0], mine[1], mine[2], mine[3]) if any(mine) else _NONE)
        if hit[1] is _NONE:
            return text  # unchanged: the very string given (scrub_session copies no record it need not)
        for i, n in enumerate(hit[1]):
            counts[i] += n
        return hit[0]

    def _scrub_once(self, text: str, secrets: tuple[str, ...], counts: list[int],
                    stages: list[list[tuple[int, int, int]]] | None = None) -> str:
        """`_scrub` without the memo. `stages`, when given, gets for each step that masked something the parts it
        replaced, as (start, end, length of the mask) in the text that step was given (see `_at`)."""
        text, n = redact_resolved(text, secrets, None if stages is None else _stage(stages))
        counts[0] += n
        gate = (self._gate or self._literal_gate())[0] if len(text) >= GATE_CHARS else None
        if gate is None or gate(text):  # (else no literal the address and home steps test for is in the text)
            text = self._addresses_and_homes(text, counts, stages)
        for compiled in self._compiled:
            text, n = _subn(compiled, CUSTOM_MASK, text, stages)
            counts[3] += n
        return text

    def text(self, text: str) -> str:
        return self.scrub(text)[0]

    def _addresses_and_homes(self, text: str, counts: list[int],
                             stages: list[list[tuple[int, int, int]]] | None) -> str:
        """Steps (2) and (3) of the contract, each run only when a literal it needs is in the text."""
        if "@" in text:
            text, n = _mask_emails(text, None if stages is None else _stage(stages))
            counts[1] += n
        for home, pattern in self._homes:
            if home in text:
                text, n = _subn(pattern, _home_repl, text, stages)
                counts[2] += n
        # "sers" or "SERS" is in every `Users` literal: two tests where four were
        for literals, pattern in _HOME_TESTS["sers" in text or "SERS" in text]:
            for literal in literals:
                if literal in text:
                    text, n = _subn(pattern, _home_repl, text, stages)
                    counts[2] += n
                    break
        return text

    def _literal_gate(self) -> list[Callable[[str], bool] | None]:
        """One Rust search for every literal `_addresses_and_homes` tests first (`@`, `sers`, `SERS`, `/home/`,
        `/root`, the homes), made on the first long text: it tells in one pass what those tests take six to tell
        (None without pydantic-core: the tests run)."""
        literals = ("@", "sers", "SERS", "/home/", "/root", *self.homes)
        assert all(any(lit in gate for lit in literals) for gates, _ in _HOME_GATES for gate in gates)
        self._gate[:] = [rust_search("|".join(map(rust_literal, literals)))]
        return self._gate

    def _scrub_cut(self, output: str, cut: tuple[int, str, str], secrets: tuple[str, ...],
                   counts: list[int]) -> str:
        """An excerpt (head, marker, tail) scrubbed with the raw margins the reader kept around its cut, so a
        secret the cut split is masked on the side that is kept; the margins are then dropped, except the part a
        mask reaching across a cut covers, and the marker counts what is neither shown nor masked (see `_at`)."""
        head_len, after, before = cut
        head, rest = output[:head_len], output[head_len:]
        end = rest.find("]…\n")
        if not rest.startswith("\n…[") or end < 0:
            return self._scrub(output, secrets, counts)  # not the reader's excerpt: scrubbed as it is
        marker, tail = rest[:end + 3], rest[end + 3:]
        raw = head + after + marker + before + tail
        stages: list[list[tuple[int, int, int]]] = []  # where each step masked (no memo: an excerpt is one of a kind)
        scrubbed = self._scrub_once(raw, secrets, counts, stages)
        if scrubbed is raw:  # nothing masked (scrubbing returns the very string it was given): the margins go
            return output
        if scrubbed.count(marker) != 1:  # a mask swallowed the cut (a key block across it): all of it is masked
            return scrubbed
        at_marker = head_len + len(after)
        at_tail = at_marker + len(marker) + len(before)
        left, shown_to = _at(stages, head_len, after_masks=True)  # after a mask lying across the head's cut
        right, shown_from = _at(stages, at_tail, after_masks=False)  # before one lying across the tail's
        starts = _at(stages, at_marker, after_masks=True)[0]  # the marker is no cut: a mask ending or starting at
        ends = _at(stages, at_marker + len(marker), after_masks=False)[0]  # it stays on its side
        if not left <= starts <= ends <= right or scrubbed[starts:ends] != marker:
            return scrubbed  # pragma: no cover - a mask in the marker was ruled out above
        counted = _MARKER.fullmatch(marker)
        if counted is not None:  # what a kept mask covers of a margin is no longer "cut"
            left_over = int(counted.group(1)) - (shown_to - head_len) - (at_tail - shown_from)
            marker = f"\n…[{max(0, left_over)} chars cut]…\n"
        return scrubbed[:left] + marker + scrubbed[right:]

    def scrub_session(self, session: Session) -> tuple[Session, Redactions]:
        counts = [0, 0, 0, 0]
        secrets = resolve_secrets(self.secrets)  # once per session, not once per string

        scrub, memo = self._scrub, self._memo

        def clean(value: str | None) -> str | None:
            # `_scrub`, with a short string found unchanged in the memo answered here (most strings of a session:
            # its paths and commands recur); the memo is the one `_scrub` keeps for these `secrets`
            if not value:
                return value
            if len(value) <= MEMO_CHARS and self._memo_for[0] is secrets:
                hit = memo.get(value)
                if hit is not None and hit[1] is _NONE:
                    return value
            return scrub(value, secrets, counts)

        def clean_call(call: ToolCall) -> ToolCall:
            summary, command = clean(call.summary) or "", clean(call.command)
            if secrets:  # (without known values nothing of one can end a summary)
                summary = _cut_tail(summary, secrets)
            paths = tuple([clean(p) or "" for p in call.paths]) if call.paths else call.paths
            if summary is call.summary and command is call.command and _same(paths, call.paths):
                return call  # nothing masked (scrubbing returns the very string it was given): no copy
            return _with(call, summary=summary, command=command, paths=paths)

        def clean_result(result: ToolResult) -> ToolResult:
            if result.cut is None:
                output = clean(result.output) or ""
                return result if output is result.output else _with(result, output=output)
            return _with(result, output=self._scrub_cut(result.output, result.cut, secrets, counts), cut=None)

        def clean_turn(turn: Turn) -> Turn:
            text = clean(turn.text) or ""
            calls, results = tuple(map(clean_call, turn.tool_calls)), tuple(map(clean_result, turn.tool_results))
            skills = tuple(_with(s, name=clean(s.name) or "", path=clean(s.path)) for s in turn.skills)
            if text is turn.text and _same(calls, turn.tool_calls) and _same(results, turn.tool_results) \
                    and not skills:
                return turn
            return _with(turn, text=text, tool_calls=calls, tool_results=results, skills=skills)

        turns = tuple(map(clean_turn, session.turns))
        scrubbed = replace(session, turns=turns, cwd=clean(session.cwd), path=clean(session.path),
                           git_branch=clean(session.git_branch), git_remote=clean(session.git_remote))
        return scrubbed, Redactions(*counts)


CUT_PARTIAL = 4  # the fewest characters of a known secret value a cut summary may end in before they are masked


def _cut_tail(summary: str, secrets: tuple[str, ...]) -> str:
    """A summary the reader cut (`readers._common.short`: it ends in "…") whose cut split a known secret value ends
    in that value's first characters, which no whole-value match finds: they are masked (`CUT_PARTIAL` or more)."""
    if not summary.endswith("…"):
        return summary
    body = summary[:-1]
    for value in secrets:
        for k in range(min(len(value) - 1, len(body)), CUT_PARTIAL - 1, -1):
            if body.endswith(value[:k]):
                return body[:-k] + MASK + "…"
    return summary


def _same(these: tuple[Any, ...], those: tuple[Any, ...]) -> bool:
    return len(these) == len(those) and all(map(is_, these, those))


# the records harvest copies per string it scrubs: plain frozen dataclasses (no __post_init__, no slots), so a copy
# is their __dict__ updated; `dataclasses.replace` checks every field per call (it was a tenth of scrubbing's own work)
_PLAIN = all(not hasattr(cls, "__post_init__") and "__slots__" not in vars(cls)
             for cls in (Session, Turn, ToolCall, ToolResult, SkillUse))
_T = TypeVar("_T")


def _with(record: _T, **changes: Any) -> _T:
    """`dataclasses.replace(record, **changes)` for the plain records above (a checked fallback for others)."""
    if not _PLAIN:
        return replace(record, **changes)  # type: ignore[type-var]
    copy = object.__new__(type(record))
    copy.__dict__.update(record.__dict__, **changes)
    return copy


PREVIEW_CHARS = 600  # what harvest keeps of the output of a tool call that ran no command
_MARKER = re.compile(r"\n…\[(\d+) chars cut\]…\n")


def previews(session: Session, chars: int = PREVIEW_CHARS) -> Session:
    """`session` with the output of every tool call that ran no command (a read, a search, an edit, a fetch) cut
    to its first `chars` characters: nothing past harvest reads them (mining reads the outputs of test commands),
    and scrubbing them whole was most of harvest's time. Shell outputs (a test verdict sits at the end) and results
    without their call are left whole. The cut keeps its raw margin (`ToolResult.cut`), so `scrub_session` still
    masks a secret it splits."""
    turns, limit = [], chars + 40
    for turn in session.turns:
        results = turn.tool_results
        if results and max(len(r.output) for r in results) > limit:  # only then is the call's kind looked up
            ran = {c.call_id: c.command is not None for c in turn.tool_calls if c.call_id}
            cut = tuple(_preview(r, chars) if len(r.output) > limit and ran.get(r.call_id) is False else r
                        for r in results)
            if not _same(cut, results):
                turn = _with(turn, tool_results=cut)
        turns.append(turn)
    return replace(session, turns=tuple(turns))


def _preview(result: ToolResult, chars: int) -> ToolResult:
    output, margin = result.output, CUT_MARGIN
    if result.cut is None:
        total, after = len(output), output[chars:chars + margin]
    else:
        head_len, cut_after, _ = result.cut
        marker = _MARKER.match(output, head_len)
        if marker is None or chars > head_len:
            return result
        total = len(output) - len(marker.group()) + int(marker.group(1))
        after = (output[chars:head_len] + cut_after)[:margin]
    return _with(result, output=f"{output[:chars]}\n…[{total - chars} chars cut]…\n", cut=(chars, after, ""))


def _stage(stages: list[list[tuple[int, int, int]]] | None) -> list[tuple[int, int, int]] | None:
    """A new step's list of replaced parts in `stages` (None when nothing is recorded)."""
    if stages is None:
        return None
    stages.append([])
    return stages[-1]


def _subn(pattern: re.Pattern[str], repl: Any, text: str,
          stages: list[list[tuple[int, int, int]]] | None) -> tuple[str, int]:
    """`pattern.subn(repl, text)`, each replaced part recorded in a new step of `stages` when given."""
    if stages is None:
        return pattern.subn(repl, text)
    parts = _stage(stages)
    assert parts is not None

    def recorded(match: re.Match[str]) -> str:
        value = repl if isinstance(repl, str) else repl(match)  # a mask holds no backslash: taken as it is
        parts.append((match.start(), match.end(), len(value)))
        return str(value)
    return pattern.subn(recorded, text)


def _at(stages: list[list[tuple[int, int, int]]], raw_at: int, *, after_masks: bool) -> tuple[int, int]:
    """Where a cut at `raw_at` in the raw text falls in the scrubbed text, and the raw position the kept side then
    reaches. A mask lying across the cut, or touching it from the margin's side (a value right after a name the
    head ends with), goes with the kept side: `after_masks` (the head's cut) lands the cut after such a mask,
    otherwise (the tail's cut) before it; a mask lying in the margin apart from the cut is dropped with it.
    `stages` are the scrubbing steps' replaced parts, (start, end, length of the mask) in the text each step got."""
    at = raw_at
    for parts in stages:
        at = _forward(parts, at, after_masks)
    reach = at
    for parts in reversed(stages):
        reach = _back(parts, reach, after_masks)
    return at, reach


def _forward(parts: list[tuple[int, int, int]], at: int, after_masks: bool) -> int:
    shift = 0
    for start, end, size in parts:
        if start > at if after_masks else start >= at:
            break
        if at < end if after_masks else at <= end:  # across the cut, or touching it from the dropped side
            return start + shift + (size if after_masks else 0)
        shift += size - (end - start)
    return at + shift


def _back(parts: list[tuple[int, int, int]], at: int, after_masks: bool) -> int:
    shift = 0
    for start, end, size in parts:
        if at <= start + shift:
            break
        if at < start + shift + size:  # inside a mask (a later step's cut fell there): the part it covers
            return end if after_masks else start
        shift += size - (end - start)
    return at - shift


def dotenv_secrets(repo_root: Path | str | None) -> list[str]:
    """The values of every entry of `repo_root/.env` (empty when there is none)."""
    if repo_root is None:
        return []
    return [v for v in read_dotenv(Path(repo_root) / ".env").values() if v]


def default_homes(environ: Mapping[str, str] | None = None) -> list[str]:
    """The home folders of this process: `$HOME`, `%USERPROFILE%` and what `Path.home()` says."""
    env = os.environ if environ is None else environ
    found = [env.get("HOME"), env.get("USERPROFILE")]
    if environ is None:
        try:
            found.append(str(Path.home()))
        except (RuntimeError, KeyError):
            pass
    return [h for h in found if h and _usable_home(h)]


def build_scrubber(repo_root: Path | str | None = None, env_names: Iterable[str] = (), patterns: Iterable[str] = (),
                   environ: Mapping[str, str] | None = None, secrets: Iterable[str] = (),
                   homes: Iterable[str] | None = None) -> Scrubber:
    """A `Scrubber` that also masks the repository's `.env` values, the values of the named variables and the
    home folders (default: this process's, see `default_homes`)."""
    env = os.environ if environ is None else environ
    values = list(secrets) + dotenv_secrets(repo_root) + [env[name] for name in env_names if env.get(name)]
    home_list = default_homes(environ) if homes is None else list(homes)
    return Scrubber(secrets=tuple(values), patterns=tuple(patterns), homes=tuple(home_list))
