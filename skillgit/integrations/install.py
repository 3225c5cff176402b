"""`skillgit install|uninstall claude|codex|copilot [--project|--user]`: put skillgit into an agent, and take it out
again exactly.

Contract
- `install(agent, scope, ...)` plans every artifact (see `artifacts.py`) before writing anything. A file that is
  there and was not written by skillgit — a whole file with other content, a JSON key holding something else, a
  skillgit block the manifest does not know, a TOML table already defined — stops the install with a hint and
  nothing is written.
- Idempotent: an artifact already installed and unchanged is left alone; one an older skillgit wrote and nobody
  changed since is replaced by the current text; one someone changed is left alone with a warning.
- The manifest (`<git-common-dir>/skillgit/integrations.json` for --project, `~/.skillgit/integrations.json` for
  --user) records for every artifact its file, what was inserted at which offset, the folders created and the
  file's content hash before and after — never a user's previous content (it may hold credentials): the previous
  bytes are the current bytes minus the inserted text.
- `uninstall(agent, scope, ...)` removes exactly what the manifest records for that agent. A file still as it
  was written is deleted, or gets its exact previous bytes back; folders install created are removed when empty;
  the manifest goes when its last record does. If a file changed since install, only skillgit's own entry or
  block is removed (when it is still there unchanged) and a warning says so; a whole file someone edited, or an
  entry someone changed, is left in place with a warning.
- The project's trained skill file (skill.path in skillgit.yaml) is never touched.
- Transactional: install records every write in the manifest (marked pending) *before* it writes anything, then
  writes; when a write fails (a read-only folder, a full disk, Ctrl-C) everything already written is put back —
  created files and folders removed, edited files given their exact previous bytes — and the error says what
  failed; nothing is left that the manifest does not record. Whatever could not be put back stays recorded, so
  `uninstall` removes it.
- Writes are atomic (a temporary file renamed over the target, through symlinks), keep the file's mode and
  line endings (a CRLF file gets CRLF lines).
- Symlinks: install writes through a symlink — the file, or any folder on the way to it — only when it leads to
  a place inside the artifact's root (`artifacts.roots`: the repository; the home folder or the agent's own
  home); a dangling symlink, one leading out of the root, a folder where a file goes or a file where a folder goes
  stop the install (nothing written). Uninstall never deletes a symlink: it restores the content behind it, or
  leaves it with a warning.
- The manifest is not trusted by uninstall: it acts only on records naming a path this agent's install writes
  (`artifacts.artifacts`, same kind) that is still inside its root once symlinks are followed, and deletes or
  edits a file only when its content hash is the one the record says skillgit left; a created folder is removed
  only when it is above that file, inside the root, and empty. Anything else stays, with a warning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from skillgit.errors import ExitCode, SkillgitError
from skillgit.integrations import locations as L
from skillgit.integrations.artifacts import (
    SCOPES,
    Artifact,
    FileArtifact,
    JsonArtifact,
    artifacts,
    installer,
    notes,
    root_of,
    roots,
    trust_artifact,
)
from skillgit.integrations.install_plan import (
    Step,
    kind_of,
    plan_one,
    still_there,
    undo,
)
from skillgit.integrations.manifest import (
    Action,
    Manifest,
    Record,
    Report,
    abs_path,
    contained,
    lexical,
    missing_dirs,
    read_text,
    rel_path,
    remove_dirs,
    sha,
    write_text,
)


# ------------------------------------------------------------------------------------------------ targets
@dataclass(frozen=True)
class Target:
    agent: str
    scope: str
    base: Path  # the repository root (project) or the home folder (user)
    manifest: Path
    protected: Path | None = None  # the project's trained skill file: never touched


def target(agent: str, scope: str, repo: Path | None = None, home: Path | None = None) -> Target:
    installer(agent)  # SkillgitError naming the install targets for an agent without any
    if scope not in SCOPES:
        raise SkillgitError(f"unknown scope '{scope}'", "use --project or --user")
    if scope == "user":
        base = (home or Path.home()).resolve()
        return Target(agent, scope, base, L.user_manifest(base))
    from skillgit.project import find_root, open_project

    root = find_root(repo)
    protected = None
    try:
        protected = (root / open_project(root).config.skill.path).resolve()
    except SkillgitError:
        pass  # an unreadable skillgit.yaml: nothing to protect that we know of
    return Target(agent, scope, root, L.project_manifest(root), protected)


def _report(t: Target, actions: list[Action], warnings: list[str], notes: list[str] | None = None) -> Report:
    return Report(t.agent, t.scope, str(t.base), str(t.manifest), tuple(actions), tuple(warnings),
                  tuple(notes or ()))


# ------------------------------------------------------------------------------------------------ install
def _settle(rec: Record, path: Path) -> Record | None:
    """A pending record left by an interrupted install: installed (no longer pending), never written (None), or
    changed since (kept, so the plan treats it like any edited file)."""
    try:
        current = read_text(path)
    except SkillgitError:
        return replace(rec, pending=False)
    if current is not None and sha(current) == rec.sha_after:
        return replace(rec, pending=False)
    return None if rec.untouched(current) else replace(rec, pending=False)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, SkillgitError):
        return exc.message
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _save(manifest: Manifest, records: dict[str, Record], order: list[str]) -> Manifest:
    return replace(manifest, records=tuple(records[p] for p in order if p in records)).save()


def _put_back(step: Step, prior: str | None, created: list[Path]) -> None:
    """Undo one write of a failed install: the file gets the bytes it had just before (or goes, when install
    created it), then the folders install created for it go when empty. A file someone changed meanwhile (its
    content is neither what was there nor what install wrote) is not touched."""
    path = step.artifact.path
    current = read_text(path)
    if current is not None and current != prior and sha(current) == sha(step.text):
        if prior is None:
            path.unlink()
        else:
            write_text(path, prior)
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:
            pass


def _trust(t: Target, home: Path | None, env: Mapping[str, str] | None) -> tuple[JsonArtifact, Path] | None:
    """The Copilot CLI trust entry a project install may record (`artifacts.trust_artifact`), else None."""
    if t.agent != "copilot" or t.scope != "project":
        return None
    env = os.environ if env is None else env
    return trust_artifact(t.base, home or Path(env.get("HOME") or Path.home()), env)


def _plan(t: Target, manifest: Manifest, before: dict[str, Record], folders: tuple[Path, ...],
          arts: list[Artifact]) -> tuple[list[Step], list[str]]:
    """One step per artifact (pending records settled into `before`), and the warnings of skipped ones."""
    steps: list[Step] = []
    warnings: list[str] = []
    for art in arts:
        rel = rel_path(t.base, art.path)
        if t.protected is not None and art.path.resolve() == t.protected:
            warnings.append(f"skipped {rel}: it is the skill this project trains (skill.path); skillgit never "
                            "edits it outside training")
            steps.append(Step(art, rel, "skip", "the project's trained skill"))
            continue
        rec = manifest.record_for(rel)
        if rec is not None and rec.agent != t.agent:
            steps.append(Step(art, rel, "conflict", f"already installed by `skillgit install {rec.agent}`",
                               hint=f"run `skillgit uninstall {rec.agent}` first"))
            continue
        if rec is not None and rec.pending:
            rec = _settle(rec, art.path)
            if rec is None:
                before.pop(rel)
            else:
                before[rel] = rec
        steps.append(plan_one(art, rec, rel, root_of(art.path, folders) or t.base))
    return steps, warnings


def _pending(t: Target, todo: list[Step], before: dict[str, Record]) -> dict[str, Record]:
    """The manifest's records with every write of `todo` recorded as pending (with the folders it creates)."""
    records, claimed = dict(before), set()
    for s in todo:
        old = before.get(s.rel)
        dirs = [d for d in missing_dirs(t.base, s.artifact.path.parent) if d not in claimed]
        claimed.update(dirs)
        records[s.rel] = Record(t.agent, kind_of(s.artifact), s.rel, sha(s.text) or "", sha(s.before), s.offset,
                                s.inserted, tuple(s.key_path), s.value, s.append,
                                (old.created_dirs if old is not None else ()) +
                                tuple(rel_path(t.base, d) for d in dirs), pending=True)
    return records


def _restore(records: dict[str, Record], before: dict[str, Record], rel: str) -> None:
    """Back to what the manifest said before this install for `rel`."""
    if rel in before:
        records[rel] = before[rel]
    else:
        records.pop(rel, None)


def _roll_back(t: Target, todo: list[Step], done: list[tuple[Step, str | None, list[Path]]], manifest: Manifest,
               records: dict[str, Record], before: dict[str, Record], order: list[str]) -> list[str]:
    """Put back what a failed install wrote, in reverse order, and save the records; what could not be put back."""
    left: list[str] = []
    for s, prior, created in reversed(done):
        try:
            _put_back(s, prior, created)
            _restore(records, before, s.rel)
        except (OSError, SkillgitError) as undo:
            left.append(f"{s.rel} ({_reason(undo)})")
    for s in todo[len(done):]:  # never started
        _restore(records, before, s.rel)
    try:
        _save(manifest, records, order)
    except (OSError, SkillgitError) as save:
        left.append(f"the install record {t.manifest} ({_reason(save)})")
    return left


def _failed(t: Target, failed: str, exc: BaseException, left: list[str]) -> SkillgitError:
    message = f"nothing installed: could not write {failed} ({_reason(exc)}); everything written before it " \
              "was put back"
    hint = f"make {Path(abs_path(t.base, failed)).parent} writable (or install with the other scope) and run " \
           "the install again"
    if left:
        message += f", except {', '.join(left)}"
        hint += f"; then `skillgit uninstall {t.agent}` removes what is left (it is recorded)"
    return SkillgitError(message, hint, ExitCode.USAGE)


def _refuse_conflicts(steps: list[Step]) -> None:
    conflicts = [s for s in steps if s.what == "conflict"]
    if conflicts:
        lines = "; ".join(f"{s.rel}: {s.detail}" for s in conflicts)
        raise SkillgitError(f"nothing installed: {lines}", " | ".join(s.hint for s in conflicts if s.hint),
                            ExitCode.USAGE)


def _write_all(t: Target, todo: list[Step], manifest: Manifest, records: dict[str, Record],
               before: dict[str, Record], order: list[str]) -> None:
    """Write every step; on any failure put back what was written, in reverse order, and raise."""
    done: list[tuple[Step, str | None, list[Path]]] = []
    failed = ""
    try:
        for s in todo:
            failed = s.rel
            created = missing_dirs(t.base, s.artifact.path.parent)
            done.append((s, read_text(s.artifact.path), created))
            s.artifact.path.parent.mkdir(parents=True, exist_ok=True)
            write_text(s.artifact.path, s.text or "",
                       isinstance(s.artifact, FileArtifact) and s.artifact.executable)
    except BaseException as exc:
        left = _roll_back(t, todo, done, manifest, records, before, order)
        if not isinstance(exc, (OSError, SkillgitError)):
            raise
        raise _failed(t, failed, exc, left) from None


def install(agent: str, scope: str, repo: Path | None = None, home: Path | None = None,
            env: Mapping[str, str] | None = None, dry_run: bool = False, trust_folder: bool = False) -> Report:
    """Install `agent`'s artifacts (see the module contract); `trust_folder` (copilot --project only): also add
    the repository to the Copilot CLI's trusted folders, which it needs to read the project's MCP servers."""
    t = target(agent, scope, repo, home)
    manifest = Manifest.load(t.manifest, t.base)
    folders = roots(agent, scope, t.base, env)
    arts = artifacts(agent, scope, t.base, env)
    if trust_folder:
        trust = _trust(t, home, env)
        if trust is None:
            raise SkillgitError("--trust-folder is for `skillgit install copilot --project` only",
                                "the Copilot CLI's trusted folders are what it needs to read a repository's MCP "
                                "servers; other agents and the user scope need no trust")
        arts.append(trust[0])
        folders = (*folders, trust[1])
    before = {r.path: r for r in manifest.records}  # the records as they stand (pending ones settled by _plan)
    steps, warnings = _plan(t, manifest, before, folders, arts)
    _refuse_conflicts(steps)
    actions = [Action(s.what, s.rel, s.detail) for s in steps]
    for s in steps:
        warnings.extend(s.warnings)
    if dry_run:
        return _report(t, actions, warnings, notes(agent, scope, t.base, os.environ if env is None else env))
    known = {r.path for r in manifest.records}
    order = [r.path for r in manifest.records] + [s.rel for s in steps if s.rel not in known]
    todo = [s for s in steps if s.what in ("create", "insert", "update") and s.text is not None]
    # 1. record first: every write is in the manifest (pending) before any file is touched
    records = _pending(t, todo, before)
    if todo:
        try:
            manifest = _save(manifest, records, order)
        except (OSError, SkillgitError) as exc:
            raise SkillgitError(f"nothing installed: cannot write the install record {t.manifest} "
                                f"({_reason(exc)})", f"make {t.manifest.parent} writable and run the install again",
                                ExitCode.USAGE) from None
    # 2. write; on any failure put back what was written, in reverse order
    _write_all(t, todo, manifest, records, before, order)
    # 3. done: the records are final
    if todo:
        _save(manifest, {k: replace(r, pending=False) for k, r in records.items()}, order)
    return _report(t, actions, warnings, notes(agent, scope, t.base, os.environ if env is None else env))


# ------------------------------------------------------------------------------------------------ uninstall
def _owned_dirs(base: Path, root: Path, rec: Record) -> tuple[str, ...]:
    """The record's created folders that may be removed: above its file and inside its root (an agent home
    install created counts; the repository or home folder never does)."""
    path = lexical(abs_path(base, rec.path))
    return tuple(d for d in rec.created_dirs
                 if lexical(abs_path(base, d)) in path.parents and lexical(abs_path(base, d)) != lexical(base)
                 and contained(root, abs_path(base, d)))


def _refusal(base: Path, rec: Record, known: dict[str, str], folders: tuple[Path, ...]) -> str | None:
    """Why uninstall must not act on `rec` at all (None when it may): the manifest is data, not authority."""
    path = abs_path(base, rec.path)
    if known.get(rec.path) != rec.kind:
        return "it is not a file skillgit installs for this agent (the install record names it: edited?)"
    root = root_of(path, folders)
    if root is None or not contained(root, path):
        return f"it leads out of {root or base} through a symlink"
    return None


def _remove_one(base: Path, root: Path, rec: Record) -> tuple[Action, str | None]:
    path = abs_path(base, rec.path)
    dirs = _owned_dirs(base, root, rec)
    try:
        current = read_text(path)
    except SkillgitError as exc:  # a folder, or not text any more: someone else's now
        return Action("keep", rec.path, "not skillgit's file any more"), f"{rec.path}: {exc.message}; left in place"
    if rec.pending and rec.untouched(current):
        remove_dirs(base, dirs)
        return Action("gone", rec.path, "never written (an interrupted install)"), None
    if current is not None and path.is_symlink() and (rec.kind == "file" or rec.sha_before is None):
        warning = f"{rec.path} is now a symlink (not what skillgit created); left in place"
        return Action("keep", rec.path, "a symlink"), warning
    if current is None:
        remove_dirs(base, dirs)
        return Action("gone", rec.path, "already removed"), None
    previous = undo(current, rec)
    if previous is not None:
        if rec.kind == "file" or rec.sha_before is None:
            path.unlink()
            remove_dirs(base, dirs)
            return Action("remove", rec.path), None
        write_text(path, previous)
        return Action("restore", rec.path, "previous content restored byte for byte"), None
    part = "entry" if rec.kind == "json" else "block"
    if rec.kind == "file":
        warning = f"{rec.path} was changed after skillgit installed it; left in place (delete it if unneeded)"
        return Action("keep", rec.path, "changed after install"), warning
    span = still_there(current, rec)
    if span is None:
        warning = f"skillgit's {part} in {rec.path} was changed after install; left in place (remove it by hand)"
        return Action("keep", rec.path, f"skillgit's {part} was changed"), warning
    rest = current[:span[0]] + current[span[1]:]
    if rec.sha_before is None and not rest.strip():
        path.unlink()
        remove_dirs(base, dirs)
    else:
        write_text(path, rest)
    warning = f"{rec.path} changed after install: removed only skillgit's {part}, kept the rest"
    return Action("remove", rec.path, f"only skillgit's {part}: the file changed since install"), warning


def uninstall(agent: str, scope: str, repo: Path | None = None, home: Path | None = None,
              dry_run: bool = False, env: Mapping[str, str] | None = None) -> Report:
    """Remove what `install(agent, scope)` recorded (see the module contract)."""
    t = target(agent, scope, repo, home)
    manifest = Manifest.load(t.manifest, t.base)
    mine = [r for r in manifest.records if r.agent == agent]
    if not mine:
        return _report(t, [], [f"nothing to uninstall: skillgit is not installed for {agent} ({scope})"])
    folders = roots(agent, scope, t.base, env)
    arts = artifacts(agent, scope, t.base, env)
    trust = _trust(t, home, env)
    if trust is not None:  # recorded only when the person asked for it (install --trust-folder)
        arts.append(trust[0])
        folders = (*folders, trust[1])
    known = {rel_path(t.base, a.path): kind_of(a) for a in arts}
    actions, warnings, kept = [], [], []
    for rec in reversed(mine):
        refusal = _refusal(t.base, rec, known, folders)
        if refusal is not None:
            actions.append(Action("keep", rec.path, "not touched"))
            warnings.append(f"{rec.path}: {refusal}; left in place")
            continue
        if dry_run:
            actions.append(Action("remove", rec.path))
            continue
        try:
            action, warning = _remove_one(t.base, root_of(abs_path(t.base, rec.path), folders) or t.base, rec)
        except OSError as exc:
            action, warning = Action("keep", rec.path, "could not be removed"), \
                f"{rec.path}: could not remove it ({_reason(exc)}); still recorded: run the uninstall again"
            kept.append(rec)
        actions.append(action)
        if warning:
            warnings.append(warning)
    if not dry_run:
        replace(manifest, records=tuple(r for r in manifest.records if r.agent != agent or r in kept)).save()
    return _report(t, actions, warnings)
