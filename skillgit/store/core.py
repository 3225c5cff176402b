"""The training history in git: candidates, decisions, notes, history, reverts, runs and locks.

Contracts the training loop relies on:
- `propose` builds a candidate commit with plumbing only: the user's index and working tree are never touched.
- `decide` is one `git update-ref --stdin` transaction (skill branch or rejected tag, candidate ref and notes
  together, compare-and-swap on every old value): either all of it happens or nothing does.
- `propose` builds on the `base` it is given (the tip the candidate's text came from) and `decide` moves the branch
  with compare-and-swap on it: if anything else moved the branch meanwhile, `BranchMoved` is raised and nothing
  is decided — a user's commit, revert or pull is never built over.
- Accepting (and reverting) keeps a worktree that has the skill branch checked out consistent, as
  `git merge --ff-only` would (`worktrees.py`: the one checked-out-worktree routine; `prepare_worktrees` finishes
  an update that a kill interrupted). A skill file with the user's own uncommitted changes is refused up front.
- Notes are typed records (`skillgit.records`): `propose` and `decide` take `CandidateNote`, `GateNote` and the
  decision's `StepOutcome`; `step_notes` and `step_record` read them back (a collaborator's note of any shape is
  read, never crashed on: `notes.conform` says what it skipped).
- Every ref skillgit writes is written here or by the store modules: the skill branch, candidates, rejected tags,
  notes, runs (`fileref.py`), review and night branches and adopting them (`branches.py`), reverts (`revert.py`),
  push/pull/gc (`sync.py`), `skillgit init` (`initialize.py`). History, the negative buffer and step lookup live
  in `history.py`; how the skill sits in a commit's tree (one file, or a package folder as one bundle text) in
  `skilltree.py`. Only `git.py` and the modules it is assembled from (`gitproc`, `gitobjects`, `gitnotes`,
  `gitwork`) talk to git.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from skillgit import textsafe
from skillgit.errors import BAD_JSON, GitStateError, SkillgitError, UnknownRevision
from skillgit.records.core import StepKind, StepOutcome, Verdict, to_float
from skillgit.store import branches as store_branches
from skillgit.store import history as store_history
from skillgit.store import negative as store_negative
from skillgit.store import notes as N
from skillgit.store import refs as R
from skillgit.store import revert as store_revert
from skillgit.store import skilltree
from skillgit.store import worktrees as W
from skillgit.store.candidate import BranchMoved, Candidate, Decision, Note, note_dicts
from skillgit.store.fileref import FileRef
from skillgit.store.git import GitError, GitRepo, Location, RefConflict, RefUpdate, Worktree
from skillgit.store.git import phase as git_phase
from skillgit.store.history import LogEntry
from skillgit.store.lock import held, hold
from skillgit.types import RejectedEdit

if TYPE_CHECKING:
    from skillgit.records.notes import StepNotes

LOOSE_LIMIT = 256  # loose objects `Store.maintain` packs at (≈ 20 steps' writes; ~1 MB on disk as files)
GC_AUTO = 1000  # `gc.auto` for the rest of git's housekeeping, unless the repository sets its own

__all__ = ["BranchMoved", "Candidate", "Decision", "LogEntry", "Note", "Store", "note_dicts"]




class Store:
    """The skill file `skill_path` on branch `branch` of the repository at `repo.root`."""

    def __init__(self, repo: GitRepo, skill_path: str, branch: str):
        self.repo = repo
        self.skill_path = skill_path
        # A package (skill.path names a folder: SKILL.md, references/**, …) reads and writes as a bundle text
        # (skillgit/package.py); a single-file skill as its text (`skilltree.py`). Set by `open` from the branch.
        self.is_package = False
        self.branch = branch
        self.branch_ref = R.branch_ref(branch)
        self.rejected_cache = store_history.RejectedCache()  # the negative buffer's parsed tags (read every step)
        self.chain_cache = store_history.ChainCache()  # …and the skill branch's chain and step commits

    @property
    def git_dir(self) -> Path:
        """The repository's common git dir (shared by all worktrees): where skillgit keeps locks and caches."""
        return self.repo.common_dir

    # ------------------------------------------------------------------------------------------ opening
    @classmethod
    def open(cls, root: Path | str | Location, skill_path: str = "SKILL.md", branch: str = "main") -> "Store":
        """Open the skill; GitStateError (with a hint) when `root` is not a repository, the branch does not
        exist or the skill file is not committed on it. `root` may be where git found the repository a moment ago
        (`Project.location`): then git is not asked again."""
        repo = GitRepo.open(root if isinstance(root, Location) else Path(root))
        store = cls(repo, skilltree.normalize_path(repo.root, skill_path), branch)
        # an existing branch has a name git accepted (its own check costs two git processes: only for a new one)
        tip = repo.ref(store.branch_ref) if R.branch_problem(branch) is None else None
        if tip is None and not repo.valid_branch_name(branch):
            raise GitStateError(f"invalid branch name '{branch}'", "set skill.branch to a valid branch name")
        if tip is None:
            names = [row[0] for row in repo.for_each_ref(["refname:short"], "refs/heads/")
                     if not row[0].startswith("candidates/")]
            remote = [row[0] for row in repo.for_each_ref(["refname:short"], "refs/remotes/")
                      if row[0].split("/", 1)[-1] == branch]
            if remote:  # a fresh clone whose default branch is another one: the skill branch is on the remote
                origin = remote[0].split("/", 1)[0]
                hint = (f"it is on {remote[0]}: git switch {branch}, then `skillgit pull {origin}` to fetch the "
                        "training history (notes, rejected tags, runs) that a plain clone leaves out")
            elif names:
                hint = f"existing branches: {', '.join(names[:8])}; set skill.branch in skillgit.yaml"
            else:
                hint = f"commit the skill file first: git add {store.skill_path} && git commit -m 'Add skill'"
            raise GitStateError(f"skill branch '{branch}' does not exist in {repo.root}", hint)
        store.is_package = skilltree.is_package(repo, tip, store.skill_path, branch)
        return store

    # ------------------------------------------------------------------------------------------ reading
    def tip(self) -> str:
        """The commit the skill branch points to."""
        sha = self.repo.ref(self.branch_ref)
        if sha is None:
            raise GitStateError(f"skill branch '{self.branch}' no longer exists",
                                f"recreate it (git branch {self.branch} <commit>) or set skill.branch")
        return sha

    def resolve(self, rev: str) -> str:
        """The commit `rev` names: `rejected/<run>/<N>`, `<run>/<N>`, a bare step `N` (of the newest run; 0 is
        the run's seed), or any git revision (sha, branch, tag, `main~2`…). GitStateError when unknown."""
        rev = str(rev).strip()
        spec = R.parse_step_spec(rev)
        if spec is not None:
            rejected_only, run, step = spec
            entries = store_history.scan(self)
            runs = [e.run for e in entries if e.run and e.verdict != "revert"]
            run = run or (runs[-1] if runs else None)
            for e in reversed(entries):
                if e.run == run and e.step == step and (e.verdict == "rejected" or not rejected_only):
                    return e.sha
            if run and not rejected_only:
                pending = self.repo.ref(R.candidate_ref(run, step))
                if pending:
                    return pending
        sha = None if (spec and spec[0]) else self.repo.commit_of(rev)
        if sha is None:
            raise UnknownRevision(f"unknown revision '{rev}'",
                                "see the steps with `skillgit log` (use N, RUN/N, rejected/RUN/N or a commit)")
        return sha

    def read_skill(self, rev: str | None = None) -> str:
        """The skill text at `rev` (None = the branch tip; a package as its bundle text: `skilltree.read`)."""
        spec = self.branch_ref if rev is None else self.resolve(rev)
        return skilltree.read(self.repo, spec, self.skill_path, package=self.is_package, shown=rev or self.branch,
                              commit=self.tip if rev is None else lambda: spec)

    def diff(self, a: str, b: str) -> str:
        """The unified diff of the skill file from commit `a` to commit `b` (git's format, no colour)."""
        return self.repo.diff(a, b, [self.skill_path])

    def blob_id(self, text: str) -> str:
        """The git blob id of `text` (what the score cache keys on); computed, nothing is written."""
        return self.repo.blob_id(text.encode("utf-8"))

    # ------------------------------------------------------------------------------------------ notes
    def add_note(self, sha: str, records: Sequence[Note]) -> None:
        """Append `records` to the note of commit `sha` (CAS on the notes ref)."""
        old, new = self.repo.build_notes({sha: N.encode(note_dicts(records))})
        if new != old:
            self.update_refs([RefUpdate("update", R.NOTES_REF, new, old)], f"skillgit: note on {sha[:12]}")

    def read_notes(self, sha: str) -> list[dict[str, Any]]:
        """The records noted on commit `sha` as written ([] without a note); GitStateError on a corrupt line."""
        text = self.repo.note_text(sha)
        return [] if text is None else N.decode(text, sha)

    def note(self, sha: str) -> N.Checked:
        """Commit `sha`'s note for typed readers: never raises (corrupt lines counted, wrong fields dropped)."""
        return N.decode_checked(self.repo.note_text(sha) or "")

    def step_notes(self, sha: str, run: str | None = None) -> StepNotes:
        """What commit `sha`'s note says, typed (`StepNotes`; of `run` only, when given)."""
        from skillgit.records.notes import StepNotes  # (here: `log` reading its cache builds no note record)

        checked = self.note(sha)
        return StepNotes.from_records(checked.records, sha, run, checked.skipped)

    def note_texts(self) -> dict[str, str]:
        """Every commit that has a skillgit note → the note's text (two git calls, whatever their number)."""
        blobs = self.repo.notes_map()
        found = self.repo.cat_batch(blobs.values())
        return {sha: obj[1].decode("utf-8", "replace") for sha, blob in blobs.items()
                if (obj := found.get(blob)) is not None}

    # ------------------------------------------------------------------------------------------ candidates
    def propose(self, text: str, *, run: str, step: int | str, subject: str, body: str, trailers: dict[str, str],
                note: Sequence[Note], defer_note: bool = False, base: str | None = None) -> Candidate:
        """Build the candidate commit (`base`'s tree with the skill replaced by `text`, parent = `base`; default
        the tip) and create `refs/heads/candidates/<run>/<step:04d>` plus its note in one transaction. `base` must
        be the commit whose skill `text` was derived from: `decide` then refuses if the branch left it.

        `defer_note=True` (the training loop, which decides at once) leaves the note to `decide`, which writes it
        with the decision in one notes commit instead of two; a candidate that is never decided then has no
        note (the loop discards such leftovers and rebuilds them from cached calls).

        If a candidate ref for this step already exists with the same parent and content (left by a killed
        process), that candidate is returned unchanged."""
        R.validate_run(run)
        step = R.validate_step(step)
        records = note_dicts(note)
        if step == 0:
            raise SkillgitError("invalid step 0", "numbered steps start at 1 (0 names the run's seed)")
        tip = base or self.tip()
        tree, blob = skilltree.with_text(self.repo, tip, self.skill_path, text, package=self.is_package)
        ref = R.candidate_ref(run, step)
        existing = self.repo.ref(ref)
        if existing is not None:
            left = self.candidate(run, step)
            if left is not None and left.parent == tip and left.blob == blob:
                if defer_note and records and self.repo.note_text(left.sha) is None:
                    return replace(left, note=tuple(records))
                return left
            raise GitStateError(f"candidate {R.label(run, step)} already exists ({existing[:12]})",
                                f"decide or drop it first (git update-ref -d {ref}), or use another step number")
        all_trailers = {R.TRAILER_RUN: run, R.TRAILER_STEP: str(step), **trailers}
        # format_message drops control characters from every message (notes.one_line / textsafe.clean)
        sha = self.repo.commit_tree(tree, [tip], N.format_message(subject, body, all_trailers))
        updates = [RefUpdate("update", ref, sha, None)]
        if records and not defer_note:
            old, new = self.repo.build_notes({sha: N.encode(records)})
            updates.append(RefUpdate("update", R.NOTES_REF, new, old))
        self.update_refs(updates, f"skillgit: propose {R.label(run, step)}")
        return Candidate(sha, ref, tip, blob, run, step, tuple(records) if defer_note else ())

    def candidate(self, run: str, step: int | str) -> Candidate | None:
        """The undecided candidate of a step, if its ref exists (e.g. left behind by a killed process)."""
        ref, step = R.candidate_ref(run, step), R.validate_step(step)
        sha = self.repo.ref(ref)
        if sha is None:
            return None
        parents = self.repo.parents(sha)
        entry = self.repo.tree_entry(sha, self.skill_path)
        return Candidate(sha, ref, parents[0] if parents else "", entry.sha if entry else "", run, step)

    def pending(self) -> list[Candidate]:
        """All undecided candidates, oldest step first."""
        parsed = [R.parse_step_ref(row[0]) for row in self.repo.for_each_ref(["refname"], R.CANDIDATES_PREFIX)]
        found = sorted((f for f in parsed if f), key=lambda rs: (rs[0], R.step_key(rs[1])))
        cands = [self.candidate(run, step) for run, step in found]
        return [c for c in cands if c is not None]

    def discard(self, cand: Candidate) -> None:
        """Delete an undecided candidate's ref without a verdict (for stale leftovers built on an old tip)."""
        self.update_refs([RefUpdate("delete", cand.ref, old=cand.sha)],
                          f"skillgit: discard {R.label(cand.run, cand.step)}")

    def discard_candidate(self, run: str, step: int | str) -> bool:
        """Drop the undecided candidate of a step if there is one; True when one was dropped."""
        cand = self.candidate(run, step)
        if cand is not None:
            self.discard(cand)
        return cand is not None

    def step_record(self, run: str, step: int | str) -> StepOutcome | None:
        """The decided step `run`/`step` as git holds it, or None when it was not decided: its verdict (from the
        rejected tag, the archive or the skill branch), kind, scores and reason (its decision note; the commit's
        trailers when the note has none) and `sha`. Cheap (a few git calls whatever the history's length): the
        loop asks it before every step to resume safely; the applied edits are in `step_notes(sha).candidate`."""
        step = R.validate_step(step)
        verdict, sha = Verdict.REJECTED, None
        known = self.repo.refs([R.rejected_ref(run, step), R.ARCHIVE_REF, self.branch_ref])
        tag, tip = known[R.rejected_ref(run, step)], known[self.branch_ref] or self.tip()
        if tag is not None:
            sha = self.repo.commit_of(tag)
        if sha is None:
            sha = self.repo.find_by_trailers(tip, {R.TRAILER_RUN: run, R.TRAILER_STEP: str(step)})
            verdict = Verdict.ACCEPTED
        if sha is None and known[R.ARCHIVE_REF]:
            entry = self.repo.tree_entry(R.ARCHIVE_REF, R.archive_key(run, step))
            if entry is not None:
                try:  # (the archive arrives through `pull` too: a record may hold anything)
                    doc = json.loads(self.repo.cat(entry.sha))
                except BAD_JSON:
                    doc = None
                commit = doc.get("commit") if isinstance(doc, dict) else None
                verdict, sha = Verdict.REJECTED, commit if N.is_commit_id(commit) else None
        if sha is None:
            return None
        checked = self.note(sha)  # fields of the wrong type dropped
        from skillgit.records.notes import StepNotes

        notes = StepNotes.from_records(checked.records, sha)
        _, _, trailers = N.parse_message(self.repo.commit_message(sha))
        written = next((r.get("step_kind") or r.get("type") for r in N.of_kind(checked.records, "candidate")), None)
        kind = StepKind.parse(written or trailers.get(R.TRAILER_STEP_KIND) or trailers.get(R.TRAILER_KIND_BEFORE))
        found = notes.decision
        if found is None:  # no decision note (a tag pulled without notes): the trailer's delta
            delta = to_float(trailers.get(R.TRAILER_DELTA)) or 0.0
            found = StepOutcome(run, str(step), kind, 0, 0, verdict, 0.0, delta, "")
        return replace(found, run=run, step=str(step), kind=kind, verdict=verdict, sha=sha)

    def decide(self, cand: Candidate, *, accept: bool, reason: str, score_before: float, score_after: float,
               note: Sequence[Note] = (), decision: StepOutcome | None = None) -> Decision:
        """Decide a candidate (see `_decide`)."""
        with git_phase("accept" if accept else "reject"):
            return self._decide(cand, accept, reason, score_before, score_after, note_dicts(note), decision)

    def _decide(self, cand: Candidate, accept: bool, reason: str, score_before: float, score_after: float,
                note: list[dict[str, Any]], decision: StepOutcome | None) -> Decision:
        """Accept (fast-forward the skill branch to the candidate) or reject (tag it `rejected/<run>/<step>`);
        either way delete the candidate ref and append the decision note (`decision`, the loop's full outcome, or
        a minimal one, with this verdict, reason, scores, run, step and parent), all in one CAS transaction.
        `BranchMoved` when the branch left the candidate's parent, GitStateError when the candidate or the notes
        moved meanwhile; either way no change at all."""
        label = R.label(cand.run, cand.step)
        if self.repo.ref(cand.ref) != cand.sha:
            raise GitStateError(f"candidate {label} is not pending any more",
                                "it was decided (or dropped) by another process: see `skillgit log`")
        tip = self.tip()
        if tip != cand.parent:
            raise self._moved(cand.parent, tip)
        delta = score_after - score_before
        outcome = replace(decision or StepOutcome(cand.run, str(cand.step), StepKind.STEP, 0, 0, Verdict.REJECTED,
                                                  0.0, 0.0, ""),
                          run=cand.run, step=str(cand.step), verdict=Verdict.ACCEPTED if accept else Verdict.REJECTED,
                          reason=N.one_line(reason), score_before=score_before, score_after=score_after,
                          parent=cand.parent, sha="")
        worktrees = self.checked_out()
        if accept:
            W.require_clean(self.repo, worktrees, tip, self.skill_path, self.branch)
        notes = [*cand.note, outcome.to_note(self.branch), *note]
        old_notes, new_notes = self.repo.build_notes({cand.sha: N.encode(notes)})
        old_show, new_show = self.repo.build_notes({cand.sha: N.display_lines(outcome)}, R.DISPLAY_NOTES_REF)
        updates = [RefUpdate("delete", cand.ref, old=cand.sha)]
        tag: str | None = None
        buffered: tuple[RejectedEdit, ...] = ()
        if accept:
            updates.insert(0, RefUpdate("update", self.branch_ref, cand.sha, tip))
        else:
            tag = R.rejected_tag(cand.run, cand.step)
            message = self.repo.commit_message(cand.sha)
            tag_message = N.format_rejected_tag(label, reason, score_before, score_after,
                                                N.parse_message(message)[1])
            tag_obj = self.repo.make_tag(cand.sha, tag, tag_message)
            buffered = store_negative.decided_edits(cand.run, cand.step, cand.sha, tip, tag_message, message, notes)
            updates += [RefUpdate("verify", self.branch_ref, old=tip),
                        RefUpdate("update", f"refs/tags/{tag}", tag_obj, None)]
        updates += [RefUpdate("update", R.NOTES_REF, new_notes, old_notes),
                    RefUpdate("update", R.DISPLAY_NOTES_REF, new_show, old_show)]
        verdict = "accept" if accept else "reject"
        self.update_refs(updates, f"skillgit: {verdict} {label} ({N.fmt_delta(delta)}): {N.one_line(reason)}",
                         expected_tip=tip)
        if accept:
            W.sync(self.repo, worktrees, tip, cand.sha, self.skill_path)
        return Decision("accepted" if accept else "rejected", cand.run, cand.step, cand.sha,
                        cand.sha if accept else tip, tag, score_before, score_after, delta, reason, buffered)

    # ------------------------------------------------------------------------------------------ transactions
    def _moved(self, expected: str, now: str | None) -> BranchMoved:
        what = ""
        if now:
            subject, author = self.repo.commit_summary(now)
            what = f"commit {now[:12]} '{N.one_line(subject)[:60]}' ({author})"
        return BranchMoved(self.branch, expected, now, textsafe.shown(what, multiline=False))

    def update_refs(self, updates: list[RefUpdate], reason: str, expected_tip: str | None = None) -> None:
        """Apply `updates` to skillgit's refs in one compare-and-swap transaction (the store modules' one write
        path). `BranchMoved` when the skill branch left `expected_tip`; GitStateError when another ref moved; then
        nothing changed."""
        try:
            self.repo.transaction(updates, reason)
        except RefConflict as exc:
            raise self._conflict(exc, expected_tip) from None

    def _conflict(self, exc: RefConflict, expected_tip: str | None) -> GitStateError:
        now = self.repo.ref(self.branch_ref)
        if expected_tip is not None and now != expected_tip:
            return self._moved(expected_tip, now)
        why = exc.message.removeprefix("git update-ref failed: ")
        return GitStateError(f"a ref changed underneath skillgit: {why}", "another skillgit or git process is "
                             "writing to this repository; nothing was changed — run again")

    # ------------------------------------------------------------------------------------------ branches
    def start_branch(self, name: str, at: str, reason: str) -> bool:
        """Create branch `name` at `at` unless it exists (True when created; `branches.start`)."""
        return store_branches.start(self.repo, name, at, reason)

    def branch_tip(self, name: str) -> str | None:
        """The commit branch `name` points to, or None when it does not exist."""
        return self.repo.ref(R.branch_ref(name))

    def merge_skill(self, ours: str, theirs: str, message: str, *, names: tuple[str, str]) -> str:
        """The commit merging `theirs`' skill into `ours` (`branches.merge_skill`); no ref moves."""
        return store_branches.merge_skill(self.repo, self.skill_path, ours, theirs, message, names=names)

    def fast_forward(self, target: str, *, expected: str, reason: str, also: Sequence[RefUpdate] = ()) -> None:
        """Move the skill branch from `expected` to its descendant `target` (a commit that is not skillgit's step:
        a pull, an adopted night), and apply `also` (`worktrees.fast_forward`: `git merge --ff-only` in a worktree
        that has the branch checked out). `worktrees.WorktreeRefused` when git refuses there, `BranchMoved` when
        the branch left `expected`; then nothing changed."""
        try:
            W.fast_forward(self.repo, self.branch_ref, target, expected, reason, also)
        except RefConflict as exc:
            raise self._conflict(exc, expected) from None

    # ------------------------------------------------------------------------------------------ worktrees
    def checked_out(self) -> list[Worktree]:
        """The worktrees that have the skill branch checked out (`worktrees.checked_out`)."""
        return W.checked_out(self.repo, self.branch_ref)

    def check_clean(self) -> None:
        """Refuse now (GitStateError with a hint) if an accept could not keep a checked-out worktree consistent
        because its skill file has uncommitted changes of the user's: a run checks this before spending anything.
        An update that a kill interrupted right after a skillgit step moved the branch is finished first."""
        self.prepare_worktrees()

    def prepare_worktrees(self) -> list[Path]:
        """Finish interrupted worktree updates, then refuse (GitStateError) if the skill file differs from the tip
        in a worktree that has the branch checked out. Returns the worktrees that were brought up to date."""
        return W.prepare(self.repo, self.branch_ref, self.tip(), self.skill_path, self.branch)

    # ------------------------------------------------------------------------------------------ history
    def history(self, run: str | None = None, edits: bool = True) -> list[LogEntry]:
        """Seeds, accepted, rejected (also archived) and revert entries, oldest → newest; `edits=False` when the
        caller does not read `edits` beyond what commit messages and tags list (no candidate record is parsed)."""
        return store_history.history(self, run, edits)

    def negative_buffer(self, limit: int) -> list[RejectedEdit]:
        """Up to `limit` edits of rejected candidates, newest first (archived ones included)."""
        return store_negative.negative_buffer(self, limit)

    # ------------------------------------------------------------------------------------------ revert
    def revert(self, *, rev: str | None = None, to: str | None = None, steps: int | None = None,
               reason: str, wait: float = 0.0, on_wait: Callable[[str], None] | None = None) -> str:
        """Add a commit on the skill branch that restores an earlier skill; returns its sha. Exactly one of:
        `to` (the skill as at that revision), `rev` (undo that one step: its parent's text if it is the tip,
        else a 3-way revert of just its change), `steps` (the skill before the last N accepted steps). While a
        run holds the branch's lock: refused (exit 6), or after waiting up to `wait` seconds for it."""
        if sum(x is not None for x in (rev, to, steps)) != 1:
            raise SkillgitError("give exactly one of <rev>, --to REV or --steps N",
                                "e.g. `skillgit revert --steps 1` undoes the last accepted step")
        # never while a run works on the branch: its next step would build over it
        with self.lock(self.branch, wait=wait, on_wait=on_wait):
            return store_revert.revert(self, rev, to, steps, reason)

    def commit_on_branch(self, text: str, subject: str, body: str, trailers: dict[str, str],
                         records: Sequence[Note], reflog: str) -> str:
        """Commit `text` as the skill on top of the tip and move the branch (CAS), keeping worktrees consistent."""
        self.prepare_worktrees()
        tip = self.tip()
        worktrees = self.checked_out()
        tree, _ = skilltree.with_text(self.repo, tip, self.skill_path, text, package=self.is_package)
        sha = self.repo.commit_tree(tree, [tip], N.format_message(subject, body, trailers))
        old_notes, new_notes = self.repo.build_notes({sha: N.encode(note_dicts(records))})
        old_show, new_show = self.repo.build_notes({sha: f"skillgit: {N.one_line(subject)}\n"}, R.DISPLAY_NOTES_REF)
        self.update_refs([RefUpdate("update", self.branch_ref, sha, tip),
                          RefUpdate("update", R.NOTES_REF, new_notes, old_notes),
                          RefUpdate("update", R.DISPLAY_NOTES_REF, new_show, old_show)], reflog, expected_tip=tip)
        W.sync(self.repo, worktrees, tip, sha, self.skill_path)
        return sha

    # ------------------------------------------------------------------------------------------ runs
    def save_run(self, run: str, files: dict[str, str], message: str) -> str:
        """Commit `files` (path → text) as the new state of `refs/skillgit/runs/<run>` (parent = its previous
        state, CAS). Returns the commit."""
        return FileRef(self.repo, R.run_ref(run)).save(files, message, keep=False, trailers={R.TRAILER_RUN: run},
                                                       reflog=f"skillgit: run {run}: {N.one_line(message)}")

    def load_run(self, run: str) -> dict[str, str] | None:
        """The files of a run's latest state, or None when the run does not exist."""
        return FileRef(self.repo, R.run_ref(run)).files()

    def list_runs(self) -> list[str]:
        """Run ids, most recently saved first (ties: reverse name order)."""
        rows = self.repo.for_each_ref(["refname", "committerdate:unix"], R.RUNS_PREFIX)
        runs = [(int(date or 0), run) for ref, date in rows if (run := R.parse_run_ref(ref))]
        return [run for _, run in sorted(runs, reverse=True)]

    # ------------------------------------------------------------------------------------------ housekeeping
    def maintain(self, *, pack_now: bool = False) -> None:
        """Pack loose objects and refs as a run goes. skillgit writes with plumbing, which unlike `git commit`
        never runs git's automatic housekeeping, and every step writes a dozen small objects (skill blob, trees,
        commit, notes tree and commit, progress commit) and a ref or two: each a file of at least one 4 KB block.

        - When the repository holds `LOOSE_LIMIT` loose objects or more (`git count-objects`: exact, where
          `git gc --auto` samples one of 256 folders), they go into a new pack, small packs merged as they
          accumulate (`git repack -d --geometric=2`: each pack at least twice the next smaller, so a long run
          keeps a few packs and rewrites each object a few times), and the refs into `packed-refs`
          (`git pack-refs --all`). A run calls this every `loop.run.MAINTAIN_EVERY` steps and at each epoch's
          and its own end, so a finished run leaves fewer than `LOOSE_LIMIT` loose objects whatever its length.
        - Then `git gc --auto` in the foreground for the rest of git's housekeeping (too many packs, reflogs),
          with `gc.auto` = `GC_AUTO` unless the repository sets it.
        - The repository's own `gc.auto` rules both: 0 turns all of it off, N packs at N loose objects.
        - `pack_now` (`skillgit gc`, which packs the refs itself) packs whatever is loose first.

        Never raises: housekeeping must not stop a run."""
        setting = self.repo.config_get_all("gc.auto")
        own = int(setting[-1]) if setting and setting[-1].strip().lstrip("-").isdigit() else None
        if own is not None and own <= 0 and not pack_now:
            return
        limit = own if own is not None else LOOSE_LIMIT
        if pack_now:  # (`skillgit gc` has packed the refs itself, failing loudly if it could not)
            self.repo.repack()
        elif self.repo.loose_objects() >= limit:
            self.repo.repack(geometric=True)
            try:
                self.repo.pack_refs()
            except GitError:
                pass  # (another process holds packed-refs.lock: the next call packs them)
        self.repo.gc_auto(None if setting else GC_AUTO)

    # ------------------------------------------------------------------------------------------ lock
    @contextmanager
    def lock(self, name: str, wait: float = 0.0, on_wait: Callable[[str], None] | None = None) -> Iterator[Path]:
        """Hold `<git-common-dir>/skillgit/locks/<name>.lock` (O_EXCL, with pid/host/time) for the block.
        A lock whose process is gone (same host) is taken over; a live one raises SkillgitError(LOCKED), at once
        or after waiting `wait` seconds for it (`lock.hold`)."""
        with hold(self.repo.common_dir / "skillgit" / "locks", name, wait, on_wait) as path:
            yield path

    def lock_held(self, name: str) -> bool | None:
        """Whether a live process holds the lock `name` (None: held from another host, which cannot be checked)."""
        return held(self.repo.common_dir / "skillgit" / "locks", name)

    # ------------------------------------------------------------------------------------------ misc
    def export(self, rev: str, path: Path | str) -> Path:
        """Write the skill at `rev` to `path` (a file, or a folder that gets the skill's file name)."""
        text = self.read_skill(rev)
        return skilltree.export(self.repo, self.skill_path, text, path,
                                package_at=self.resolve(rev) if self.is_package else None)

    def push(self, remote: str = "origin"):
        from skillgit.store.sync import push
        return push(self, remote)

    def pull(self, remote: str = "origin", wait: float = 0.0, on_wait: Callable[[str], None] | None = None):
        from skillgit.store.sync import pull
        R.check_remote(remote)  # before waiting for anything
        # never while a run works on the branch: its next step would build over it
        with self.lock(self.branch, wait=wait, on_wait=on_wait):
            return pull(self, remote)

    def gc(self, keep: int = 20):
        from skillgit.store.sync import gc
        return gc(self, keep)
