"""Reading the training history back out of git: the log and step lookup (the negative buffer: `negative.py`).

Everything is read with a fixed number of git calls, whatever the number of steps (the first-parent chain, the
skillgit commits on it, the rejected tags, the archive and, when needed, the notes in one batch), so `skillgit log`
stays fast after thousands of steps.

Order (oldest → newest) follows the branch's topology, not only the clock: each accepted or revert commit sits at
its place on the first-parent chain; a run's seed and the rejected candidates built on a commit come right after
that commit, ordered by date, then run, then step (so tests with fixed dates get a stable order).
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol

from skillgit.errors import BAD_JSON
from skillgit.frozen import Frozen
from skillgit.store import notes as N
from skillgit.store import refs as R
from skillgit.store.git import GitError, GitRepo
from skillgit.store.packed import read_packed, write_packed
from skillgit.types import Edit


@dataclass
class RejectedCache:
    """What `rejected_entries` parsed so far, kept by each `Store` (`Store.rejected_cache`): an entry per (tag ref,
    tag object) — tag objects never change — and the archive's entries with the archive commit they came from."""

    tags: dict[tuple[str, str], "LogEntry | None"] = field(default_factory=dict)
    archive: tuple[str | None, list["LogEntry"]] = (None, [])


@dataclass
class ChainCache:
    """What `scan` read of the skill branch's first-parent chain, kept by each `Store` (`Store.chain_cache`): the
    chain at `tip` (commit, committer time; oldest first) and the step entries of its commits. When the branch only
    moved forward (`tip` is the first parent of the oldest new commit) only the new commits are read (the loop
    scanned the history at every step for its negative buffer before it kept the buffer itself)."""

    tip: str | None = None
    chain: list[tuple[str, int]] = field(default_factory=list)
    entries: list["LogEntry"] = field(default_factory=list)


class Store(Protocol):
    """What history needs of a store (`skillgit.store.core.Store` is one; a protocol keeps the import graph
    acyclic: core imports history, never the reverse)."""

    repo: GitRepo
    branch: str
    rejected_cache: RejectedCache
    chain_cache: ChainCache

    def tip(self) -> str: ...

    def list_runs(self) -> list[str]: ...


@dataclass(frozen=True, eq=False, repr=False)
class LogEntry(Frozen):
    """One line of the history. `score` is the skill's val score (the candidate's for a rejected step, the
    baseline for a seed), `delta` its change against the skill it was compared with; None when unknown.
    `note` is "ok", "missing" or "corrupt" (the log never fails on a bad note, it says so)."""

    run: str
    step: int | str  # a number, or a name for epoch-level steps (e.g. "e1-slow-update")
    verdict: str  # seed | accepted | rejected | revert
    sha: str
    subject: str
    score: float | None = None
    delta: float | None = None
    edits: tuple[str, ...] = ()
    reason: str = ""
    parent: str | None = None
    date: int = 0
    tag: str = ""
    archived: bool = False
    note: str = "missing"
    seq: int | None = None  # position of the decision within its run (Skillgit-Seq), when recorded

    @property
    def label(self) -> str:
        return R.label(self.run, self.step) if self.run else self.sha[:12]

    def to_dict(self) -> dict[str, Any]:
        """`log --json`'s shape: `step` is always a string ("3", "e1-slow-update"; "0" for a seed), every other
        field keeps one type (docs/JSON.md)."""
        data = asdict(self)
        data["step"] = str(self.step)
        data["edits"] = list(self.edits)
        data["label"] = self.label
        return data


def _commit_entry(sha: str, parents: str, date: str, message: str) -> LogEntry | None:
    subject, body, trailers = N.parse_message(message)
    parent = parents.split()[0] if parents.split() else None
    if R.TRAILER_REVERT in trailers:
        return LogEntry(trailers.get(R.TRAILER_RUN, ""), 0, "revert", sha, subject, parent=parent, date=int(date),
                        reason=body.removeprefix("Reason: ").split("\n")[0])
    run, step = trailers.get(R.TRAILER_RUN), R.parse_step(trailers.get(R.TRAILER_STEP, ""))
    if not run or step is None:
        return None
    return LogEntry(run, step, "accepted", sha, subject, N.to_float(trailers.get(R.TRAILER_SCORE)),
                    N.to_float(trailers.get(R.TRAILER_DELTA)), tuple(N.edit_lines(body)), parent=parent,
                    date=int(date), seq=_seq(trailers))


def _seq(trailers: dict[str, str]) -> int | None:
    value = trailers.get(R.TRAILER_SEQ, "")
    return int(value) if value.isdigit() else None


def _rejected_entry(run: str, step: int | str, commit: str, parent: str, date: str, tag_message: str,
                    commit_message: str, archived: bool = False) -> LogEntry:
    subject, body, trailers = N.parse_message(commit_message)
    info = N.parse_rejected_tag(tag_message)
    return LogEntry(run, step, "rejected", commit, subject, info["score_after"], info["delta"],
                    tuple(info["edits"] or N.edit_lines(body)), info["reason"], parent.split()[0] if parent else None,
                    int(date or 0), R.rejected_tag(run, step), archived, seq=_seq(trailers))


_TAG_FIELDS = ["refname", "objectname", "*objectname", "*parent", "*committerdate:unix", "contents", "*contents",
               "parent", "committerdate:unix"]


def _tag_entry(row: list[str]) -> LogEntry | None:
    """The rejected step of one `for-each-ref _TAG_FIELDS` row (what `rejected_entries` parses)."""
    ref, obj, commit, parent, date, contents, commit_msg, lw_parent, lw_date = row
    parsed = R.parse_step_ref(ref)
    if parsed is None:
        return None
    if not commit:  # a lightweight tag made by hand: the ref is the commit itself
        commit, parent, date, commit_msg, contents = obj, lw_parent, lw_date, contents, ""
    return _rejected_entry(*parsed, commit, parent, date, contents, commit_msg)


def rejected_entries(store: "Store") -> list[LogEntry]:
    """Rejected steps from live tags and from the gc archive (unordered).

    An entry depends only on its ref name and the (immutable) tag object, and the archive's entries only on the
    archive commit: a store keeps what it parsed, and the first call of a process starts from what earlier ones
    parsed (the tag cache below). Each call lists the tags (names and ids) and parses only those it has not seen."""
    repo = store.repo
    cache = store.rejected_cache
    seen = cache.tags
    listing: list[tuple[str, str]] | None
    if not seen:  # what an earlier process parsed (`skillgit log` after a run, a resumed run)
        seen.update(read_tag_cache(repo))
    known = len(seen)
    if seen:
        listing = [(ref, obj) for ref, obj in repo.for_each_ref(["refname", "objectname"], R.REJECTED_PREFIX)]
        fresh = [ref for ref, obj in listing if (ref, obj) not in seen]
    else:
        listing, fresh = None, [R.REJECTED_PREFIX]
    if fresh:
        patterns = fresh if len(fresh) <= 64 else [R.REJECTED_PREFIX]
        for row in repo.for_each_ref(_TAG_FIELDS, *patterns):
            if (row[0], row[1]) not in seen:
                seen[(row[0], row[1])] = _tag_entry(list(row))
    if listing is None:  # nothing was listed, so everything was fresh and parsed just now
        listing = list(seen)
    if fresh and len(seen) > known:  # parsed some: keep them for the next process
        write_tag_cache(repo, {key: seen[key] for key in listing if key in seen})
    out = [entry for key in listing if (entry := seen.get(key)) is not None]
    archive = repo.ref(R.ARCHIVE_REF)
    if cache.archive[0] != archive:
        cache.archive = (archive, [_rejected_entry(doc["run"], doc["step"], doc["commit"], doc.get("parent") or "",
                                                      str(doc.get("date", 0)), doc.get("tag_message", ""),
                                                      doc.get("commit_message", ""), archived=True)
                                      for doc in archived_docs(store)])
    return out + cache.archive[1]


# The parsed rejected tags, kept across processes: `.git/skillgit/cache/rejected-tags.json.z`. An entry depends only
# on its ref name and tag object (a tag object never changes), so a cached entry is never stale, only unlisted
# (its tag was deleted or moved: `rejected_entries` lists the tags each time and parses only the unknown ones).
# Without it every `skillgit log` parsed every tag and commit message again (a third of `log` at 1,000 steps).
# Version 2: zlib-compressed JSON, one list per tag — [ref without `refs/tags/rejected/`, tag object] for a tag that
# is not a step's, else followed by `_CACHED` in order; run, step, tag name and verdict are the ref's (~65 bytes a
# tag at 1,000 steps; version 1 kept every field by name, uncompressed: ~480 bytes, in `rejected-tags.json`).
TAG_CACHE_VERSION = 2
_CACHED: dict[str, Any] = {"sha": str, "parent": (str, type(None)), "date": int, "score": (float, int, type(None)),
                           "delta": (float, int, type(None)), "seq": (int, type(None)), "subject": str, "reason": str}
_LEGACY_TAG_CACHE = "rejected-tags.json"


def tag_cache_path(repo: GitRepo) -> Path:
    """Where a repository's parsed rejected tags are kept (shared by its worktrees)."""
    return repo.common_dir / "skillgit" / "cache" / "rejected-tags.json.z"


def read_tag_cache(repo: GitRepo) -> dict[tuple[str, str], LogEntry | None]:
    """(tag ref, tag object) → its entry (None: not a step's tag), as a process wrote them; {} when the file is
    missing, of another version or malformed anywhere (then every tag is parsed again, and the file rewritten)."""
    try:
        data = read_packed(tag_cache_path(repo))
        if data.get("v") != TAG_CACHE_VERSION:
            return {}
        return {(R.REJECTED_PREFIX + row[0], row[1]): _cached_entry(R.REJECTED_PREFIX + row[0], row[2:])
                for row in data["tags"]}
    except (ValueError, TypeError, KeyError, AttributeError, IndexError):
        return {}


def _cached_entry(ref: str, fields: list[Any]) -> LogEntry | None:
    if not isinstance(ref, str) or not isinstance(fields, list):
        raise ValueError("not a cached entry")
    if not fields:
        return None
    parsed = R.parse_step_ref(ref)
    values = dict(zip(_CACHED, fields))
    edits = fields[len(_CACHED)] if len(fields) == len(_CACHED) + 1 else None
    if parsed is None or not isinstance(edits, list) or not all(isinstance(e, str) for e in edits) \
            or not all(isinstance(values[k], t) and not isinstance(values[k], bool) for k, t in _CACHED.items()):
        raise ValueError("not a cached entry")
    run, step = parsed
    return LogEntry(run, step, "rejected", values["sha"], values["subject"], values["score"], values["delta"],
                    tuple(edits), values["reason"], values["parent"], values["date"], R.rejected_tag(run, step),
                    seq=values["seq"])


def write_tag_cache(repo: GitRepo, entries: dict[tuple[str, str], LogEntry | None]) -> None:
    """Replace the cache with `entries` (atomically: a reader sees the old file or the new one; a version-1 file is
    removed). A repository skillgit cannot write to (read-only clone) just has no cache."""
    rows = [[ref[len(R.REJECTED_PREFIX):], obj,
             *(() if e is None else (*(getattr(e, k) for k in _CACHED), list(e.edits)))]
            for (ref, obj), e in entries.items() if ref.startswith(R.REJECTED_PREFIX)]
    path = tag_cache_path(repo)
    if write_packed(path, {"v": TAG_CACHE_VERSION, "tags": rows}):
        path.with_name(_LEGACY_TAG_CACHE).unlink(missing_ok=True)


def archived_docs(store: "Store") -> list[dict[str, Any]]:
    """The JSON records `skillgit gc` wrote into the archive tree, one per folded rejected tag."""
    repo = store.repo
    if repo.ref(R.ARCHIVE_REF) is None:
        return []
    entries = [e for e in repo.ls_tree(R.ARCHIVE_REF) if e.type == "blob" and R.parse_archive_key(e.name)]
    blobs = repo.cat_batch(e.sha for e in entries)
    docs = []
    for e in entries:
        found = blobs.get(e.sha)
        try:
            doc = json.loads(found[1]) if found else None
        except BAD_JSON:
            doc = None
        key = R.parse_archive_key(e.name)  # never None: `entries` holds only archive keys
        # (the archive arrives through `pull` too: a record whose commit is not a commit id is skipped, other
        # fields of the wrong type read as missing)
        if isinstance(doc, dict) and N.is_commit_id(doc.get("commit")) and key is not None:
            run, step = key
            texts = {k: doc[k] if isinstance(doc.get(k), str) else "" for k in
                     ("parent", "tag_message", "commit_message")}
            date = doc.get("date") if isinstance(doc.get("date"), int) and not isinstance(doc.get("date"), bool) \
                else 0
            docs.append({**doc, **texts, "date": date, "run": run, "step": step})
    return docs


def concurrently(*thunks):
    """Run independent git reads at the same time (each is a subprocess; threads just wait on them)."""
    with ThreadPoolExecutor(max_workers=len(thunks)) as pool:
        futures = [pool.submit(t) for t in thunks]
        return [f.result() for f in futures]


def other_run_branches(store: "Store") -> list[str]:
    """The tips of the branches runs trained onto other than the skill branch (`train --branch`), which exist:
    their accepted steps are on no first-parent chain of the skill branch until someone merges them."""
    repo = store.repo
    runs = store.list_runs()
    if not runs:
        return []
    found = repo.cat_batch(f"{R.run_ref(run)}:progress.json" for run in runs)
    names: set[str] = set()
    for blob in found.values():
        try:
            branch = json.loads(blob[1]).get("branch") if blob else None
        except (ValueError, RecursionError, AttributeError):
            continue
        if isinstance(branch, str) and branch and branch != store.branch:
            names.add(branch)
    tips = repo.refs([R.branch_ref(name) for name in sorted(names)])
    missing = {name for name in names if not tips.get(R.branch_ref(name))}
    shas = [sha for sha in tips.values() if sha]
    if missing:  # no local branch of that name (a second clone): its remote-tracking refs, or `skillgit pull`'s
        for ref, sha in repo.for_each_ref(["refname", "objectname"], "refs/remotes/", R.REMOTE_PREFIX):
            rest = ref[len("refs/remotes/"):].partition("/")[2] if ref.startswith("refs/remotes/") \
                else ref[len(R.REMOTE_PREFIX):].partition("/heads/")[2]
            if rest in missing and sha not in shas:
                shas.append(sha)
    return shas


def scan(store: "Store") -> list[LogEntry]:
    """Every step entry (seed, accepted, rejected, revert) in history order, without reading notes. Steps
    accepted onto a review branch (`train --branch`) are included; they sort by date after the skill branch's
    commit they were built on."""
    repo, tip = store.repo, store.tip()
    (chain, entries), rejected, others = concurrently(
        lambda: _chain_entries(store, tip),
        lambda: rejected_entries(store),
        lambda: other_run_branches(store))
    entries = list(entries)
    seen = {e.sha for e in entries}
    for other in others:  # usually none; one `git log` each
        for sha, parents, date, message in repo.grep_first_parent(other, "^Skillgit-"):
            if sha not in seen and (entry := _commit_entry(sha, parents, str(date), message)) is not None:
                seen.add(sha)
                entries.append(entry)
    entries += rejected
    entries += _seeds(repo, entries)
    entries.sort(key=_history_order(chain))
    return entries


def _chain_entries(store: "Store", tip: str) -> tuple[list[tuple[str, int]], list[LogEntry]]:
    """(the first-parent chain of `tip`, oldest first; the step entries of its commits), read incrementally when
    the branch moved forward since the last call (`ChainCache`). The lists are shared with the cache: not to be
    changed."""
    repo, cache = store.repo, store.chain_cache
    if cache.tip == tip:
        return cache.chain, cache.entries
    since = cache.tip
    new, rows = concurrently(lambda: repo.first_parent_chain(tip, since),
                             lambda: repo.grep_first_parent(tip, "^Skillgit-", since))
    if since is None or not new or repo.parents(new[-1][0])[:1] != [since]:
        if since is not None:  # the branch was reset or rewritten: read it all
            new, rows = concurrently(lambda: repo.first_parent_chain(tip),
                                     lambda: repo.grep_first_parent(tip, "^Skillgit-"))
        chain, entries = [], []
    else:
        chain, entries = list(cache.chain), list(cache.entries)
    chain += reversed(new)
    entries += [e for sha, parents, date, message in reversed(rows)
                if (e := _commit_entry(sha, parents, str(date), message)) is not None]
    cache.tip, cache.chain, cache.entries = tip, chain, entries
    return chain, entries


def _seeds(repo, entries: list[LogEntry]) -> list[LogEntry]:
    """A seed per run: the commit its earliest step was built on."""
    first: dict[str, LogEntry] = {}
    for e in entries:
        if e.run and e.verdict in ("accepted", "rejected") and (
                e.run not in first or R.step_key(e.step) < R.step_key(first[e.run].step)):
            first[e.run] = e
    subjects = {e.sha: e.subject for e in entries if e.verdict != "rejected"}
    missing = [e.parent for e in first.values() if e.parent and e.parent not in subjects]
    if missing:
        subjects.update(repo.subjects(missing))
    return [LogEntry(run, 0, "seed", e.parent, subjects.get(e.parent, ""), date=e.date)
            for run, e in first.items() if e.parent]


def _history_order(chain: list[tuple[str, int]]) -> Callable[[LogEntry], tuple]:
    """The sort key of history order along `chain` (the skill branch's first-parent chain, oldest first)."""
    position = {sha: i for i, (sha, _) in enumerate(chain)}
    chain_dates = [d for _, d in chain]

    def anchor(e: LogEntry) -> int:
        sha = e.parent if e.verdict == "rejected" else e.sha
        if sha in position:
            return position[sha]
        # Off the chain (the branch was reset since): place it after the last chain commit not newer than it.
        return max((i for i, d in enumerate(chain_dates) if d <= e.date), default=-1)

    def key(e: LogEntry) -> tuple:
        # At one chain position: the commit itself, then a run's seed built on it, then rejections built on it.
        on_chain = 0 if e.verdict in ("accepted", "revert") and e.sha in position else (1 if e.verdict == "seed" else 2)
        # Within a run, the recorded decision order is exact; older histories fall back to the step number.
        order = (0, e.seq) if e.seq is not None else (1, 0)
        return (anchor(e), on_chain, e.date, e.run, order, R.step_key(e.step))

    return key


_LOG_KINDS = ("decision", "candidate", "revert")


def read_notes(store: "Store", shas: list[str] | None,
               mapping: dict[str, str] | None = None) -> dict[str, tuple[list[dict[str, Any]], int]]:
    """sha → (decision/candidate/revert records, number of corrupt lines) for the shas (None: all) that have a
    note, with two git calls (one when the caller passes `mapping`, `repo.notes_map()`); other kinds (per-item
    scores, reflections…) are not parsed."""
    return {sha: log_records(text) for sha, text in _note_texts(store, shas, mapping).items()}


def log_records(text: str | None) -> tuple[list[dict[str, Any]], int]:
    """One note's text as `read_notes` decodes it (None: a note blob that could not be read)."""
    return _decode(text, _LOG_KINDS)


def _note_texts(store: "Store", shas: list[str] | None, mapping: dict[str, str] | None = None
                ) -> dict[str, str | None]:
    """sha → its note's text (None when the note blob cannot be read), for the shas (None: all) that have one."""
    mapping = store.repo.notes_map() if mapping is None else mapping
    wanted = {sha: mapping[sha] for sha in (mapping if shas is None else shas) if sha in mapping}
    blobs = store.repo.cat_batch(wanted.values())
    return {sha: (found[1].decode("utf-8", "replace") if (found := blobs.get(blob)) else None)
            for sha, blob in wanted.items()}


# Lines `N.decode_selected` takes nothing from: one JSON-looking object (`{` first, `}` last) with a `"kind":"…"`
# that is not of a wanted kind. Anything else (blank, hand-written, broken, or holding a character that Python's
# `splitlines` breaks a line at) is sent along, so that decoding the selected lines gives what decoding the whole
# note gives (records and corrupt-line count).
_HEX = re.compile("[0-9a-f]+")
_UNREAD = ["--not", "-e", "^{", "--or", "--not", "-e", "}$", "--or", "--not", "-e", '"kind":"', "--or",
           "-e", "[\r\v\f\x1c\x1d\x1e]", "--or", "-e", "\u0085", "--or", "-e", "\u2028", "--or", "-e", "\u2029"]


def _selected_note_texts(store: "Store", kinds: tuple[str, ...]) -> dict[str, str | None]:
    """Like `_note_texts(store, None)` for `N.decode_selected(text, kinds)`, but each text holds only the lines
    that decoding can take something from (see `_UNREAD`), found by one `git grep` over the notes commit: after
    1,000 steps the log's decisions are a tenth of the notes' bytes (candidate and gate records are the rest)."""
    repo = store.repo
    commit = repo.ref(R.NOTES_REF)
    if commit is None:
        return {}
    expression = [arg for kind in kinds for arg in ("-e", f'"kind":"{kind}"', "--or")] + _UNREAD
    try:
        tree, lines = concurrently(lambda: repo.ls_tree(commit, recursive=True),
                                   lambda: repo.grep_tree(commit, expression))
    except GitError:
        return _note_texts(store, None)
    out: dict[str, str | None] = {}
    for e in tree:  # what `git notes list` lists: blobs whose fanned-out path spells an object id
        sha = e.name.replace("/", "")
        if e.type == "blob" and len(sha) == len(repo.zero) and _HEX.fullmatch(sha):
            out[sha] = lines.get(e.name, b"").decode("utf-8", "replace")
    return out


def _decode(text: str | None, kinds: tuple[str, ...]) -> tuple[list[dict[str, Any]], int]:
    """(the records of `kinds`; the number of corrupt lines plus candidate records with a malformed field). A
    collaborator's note may hold anything: candidate records (whose nested edits become `Edit`s) are conformed
    (`"edits": 5` is dropped, not a crash); decision and revert records are read here only through `N.to_float`
    and `str`, which take any JSON, so the log does not pay for conforming every step's decision."""
    if text is None:
        return [], 1
    records, bad = N.decode_selected(text, kinds)
    kept = []
    for record in records:
        if record.get("kind") == "candidate":
            out, problems = N.conform(record)
            bad += bool(problems)
            if out is None:
                continue
            record = out
        kept.append(record)
    return kept, bad


def with_notes(store: "Store", entries: list[LogEntry], notes=None) -> list[LogEntry]:
    """Fill scores, reasons and edits from the notes (the decision record wins over trailers and tag text)."""
    notes = read_notes(store, [e.sha for e in entries]) if notes is None else notes
    first_decision: dict[str, dict[str, Any]] = {}
    result = []
    for e in entries:
        records, bad = notes.get(e.sha, ([], 0))
        changes, decision = _note_changes(e, records, "corrupt" if bad else ("ok" if e.sha in notes else "missing"))
        if decision is not None:
            first_decision.setdefault(e.run, decision)  # entries are in history order: the run's first decision
        result.append(replace(e, **changes))
    # A seed's score is the baseline its run's first decision compared against.
    return [replace(e, score=N.to_float(first_decision[e.run].get("score_before")))
            if e.verdict == "seed" and e.run in first_decision else e for e in result]


def _note_changes(e: LogEntry, records: list[dict[str, Any]], status: str
                  ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the fields of `e` its note's `records` fill in, the decision record used for them or None)."""
    changes: dict[str, Any] = {"note": status}
    decisions = [d for d in N.of_kind(records, "decision") if d.get("run") in (None, e.run)
                 and d.get("step") in (None, e.step)]
    decision = decisions[0] if decisions and e.verdict in ("accepted", "rejected") else None
    if decision is not None:
        changes["score"] = N.to_float(decision.get("score_after"))
        changes["delta"] = N.to_float(decision.get("delta"))
        changes["reason"] = str(decision.get("reason", e.reason))
    if not e.edits:
        changes["edits"] = tuple(Edit.from_dict(x).summary() for c in N.of_kind(records, "candidate")
                                 for x in c.get("edits", []) if isinstance(x, dict) and "op" in x)
    if e.verdict == "revert":
        reverts = N.of_kind(records, "revert")
        if reverts:
            changes["reason"] = str(reverts[0].get("reason", e.reason))
    return changes, decision


def history(store: "Store", run: str | None = None, edits: bool = True) -> list[LogEntry]:
    """The log's entries. With `edits=False` (for views that do not show edits, e.g. `skillgit log`) an entry's
    `edits` are only those its commit message or tag lists: the candidate records are not read at all."""
    lean = tuple(k for k in _LOG_KINDS if k != "candidate")
    # The notes are read while the history is scanned: the two are independent and the notes dominate.
    read = (lambda: _note_texts(store, None)) if edits else (lambda: _selected_note_texts(store, lean))
    entries, texts = concurrently(lambda: scan(store), read)
    if run is not None:
        entries = [e for e in entries if e.run == run]
    # The candidate record (the bulk of a note) only matters for an entry whose edits neither the commit
    # message nor the tag listed: parse it for those alone (a third of `skillgit log --json`'s time).
    needs_edits = {e.sha for e in entries if not e.edits} if edits else set()
    notes = {sha: _decode(text, _LOG_KINDS if sha in needs_edits else lean) for sha, text in texts.items()}
    return with_notes(store, entries, notes)


# ---------------------------------------------------------------------------------------------- one run's trend
def _bre(text: str) -> str:
    """`text` as a literal in a git basic regular expression."""
    return "".join(f"\\{c}" if c in ".[]\\*^$" else c for c in text)


def run_scores(store: "Store", run: str, accepted: int) -> list[float | None] | None:
    """The val scores of `run`'s seed and accepted steps in history order — what
    `[e.score for e in history(store, run) if e.verdict in ("seed", "accepted")]` gives — read from the run's own
    commits, tags and notes only: one `git log --first-parent` of the chain (ids and dates), the run's commits, the
    rejected tags (listed; parsed once per repository: the tag cache), and the notes of the accepted steps and of
    the run's first decision. `status` calls it: its cost grows with the run's accepted steps, not with the
    history's notes' bytes. None when the
    chain does not hold the run's `accepted` steps (a run trained onto another branch, a reset branch, pulled
    history): then the caller reads the whole history."""
    entries = _run_entries(store, run, accepted)
    if entries is None:
        return None
    decided = [e for e in entries if e.verdict in ("accepted", "rejected")]
    mapping = store.repo.notes_map()
    texts = _note_texts(store, sorted({e.sha for e in entries if e.verdict == "accepted"}
                                      | {e.sha for e in decided[:1]}), mapping)
    first = _first_decision(store, decided, texts, mapping)
    scores: list[float | None] = []
    for e in entries:
        if e.verdict == "seed":
            scores.append(N.to_float(first.get("score_before")) if first is not None else e.score)
        elif e.verdict == "accepted":
            records, _ = _decode(texts.get(e.sha), ("decision",))
            scores.append(_note_changes(e, records, "ok")[0].get("score", e.score))
    return scores


def _run_entries(store: "Store", run: str, accepted: int) -> list[LogEntry] | None:
    """`run`'s entries (seed, accepted, rejected, revert) in history order without notes, from the run's commits
    on the skill branch's chain and its tags; None when the chain holds other than `accepted` accepted steps."""
    repo, tip = store.repo, store.tip()
    chain, rows, tags = concurrently(
        lambda: repo.first_parent_chain(tip),
        lambda: repo.grep_first_parent(tip, f"^{R.TRAILER_RUN}: {_bre(run)}$"),
        lambda: rejected_entries(store))  # (every tag is listed, but parsed once per repository: the tag cache)
    entries = [e for sha, parents, date, message in rows
               if (e := _commit_entry(sha, parents, str(date), message)) is not None and e.run == run]
    if sum(e.verdict == "accepted" for e in entries) != accepted:
        return None
    entries += [e for e in tags if e.run == run]
    entries += _seeds(repo, entries)
    chain.reverse()
    entries.sort(key=_history_order(chain))
    return entries


def _first_decision(store: "Store", decided: list[LogEntry], texts: dict[str, str | None],
                    mapping: dict[str, str]) -> dict[str, Any] | None:
    """The decision record of the first of `decided` (history order) whose note has one: the seed's score is the
    baseline it compared against. Reads the other decided steps' notes into `texts` only when the first has none."""
    for e in decided:
        if e.sha not in texts and e.sha in mapping:
            texts.update(_note_texts(store, [d.sha for d in decided if d.sha not in texts], mapping))
        records, bad = _decode(texts.get(e.sha), ("decision",))
        found = _note_changes(e, records, "corrupt" if bad else "ok")[1]
        if found is not None:
            return found
    return None
