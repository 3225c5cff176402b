"""What the dashboard reads from the repository: runs, one run's decisions, branches, config files, reports, and
when any of them changed. Blocking (git through `skillgit.store`): the server calls these in a worker thread.

Contract:
- Reads only, through the store's read API (`store.read`, `review.data`); nothing here writes to git.
- `runs()` reads each run's progress once per state of its ref (one `for-each-ref` lists every run with its
  commit; a run whose commit did not change is served from memory). "running" is re-checked every time against
  the run's lock (a killed run reads as interrupted, as `skillgit status` says).
- `RefWatch.changed()` says whether anything under the refs a dashboard shows (runs, branches, notes, tags) moved,
  by the size and time of git's ref files alone: no git command runs while nothing changes, so the server can
  ask every second.
- `configs()` lists the config files a run may be started with: `skillgit*.yaml`/`.yml` at the top of the
  repository and every `.yaml`/`.yml` under `configs/` (SkillOpt's layout), as paths relative to the root that
  resolve inside it, plus the config the dashboard was opened with.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from skillgit.errors import SkillgitError
from skillgit.project import Project
from skillgit.store import Store, read
from skillgit.store import refs as R

CONFIG_GLOBS = ("skillgit*.yaml", "skillgit*.yml")
CONFIG_DIR = "configs"
MAX_CONFIGS = 300


def usage_dict(usage: Any) -> dict[str, Any]:
    return usage.to_dict() if hasattr(usage, "to_dict") else dict(usage or {})


def progress_summary(p: Any) -> dict[str, Any]:
    """A run's saved progress as the page shows it (the fields of `skillgit status --json` it uses)."""
    return {"run": p.run, "status": p.status, "reason": p.stop_reason, "branch": p.branch, "step": p.steps_done,
            "total_steps": p.total_steps, "accepted": p.accepted, "rejected": p.rejected, "val": p.current_score,
            "seed_val": p.seed_score, "cost_usd": round(p.usage.cost_usd, 6), "calls": p.usage.calls,
            "tokens": p.usage.total_tokens, "started": p.started, "updated": p.updated,
            "errors": dict(p.errors), "retries": p.retries,
            "final_scores": {k: v.to_dict() for k, v in p.final_scores.items()}}


class Views:
    def __init__(self, project: Project, store: Store):
        self.project = project
        self.store = store
        self._lock = threading.Lock()  # one git reader at a time (the store is not shared across threads)
        self._runs: dict[str, tuple[str, dict[str, Any]]] = {}  # run → (its ref's commit, summary)

    # ------------------------------------------------------------------------------------------ lists
    def runs(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self.store.repo.for_each_ref(["refname", "objectname", "committerdate:unix"], R.RUNS_PREFIX)
            found = sorted(((int(date or 0), run, sha) for ref, sha, date in rows
                            if (run := R.parse_run_ref(ref))), reverse=True)
            out = []
            for _, run, sha in found:
                cached = self._runs.get(run)
                if cached is None or cached[0] != sha:
                    try:
                        summary = progress_summary(read.run_progress(self.store, run))
                    except SkillgitError as exc:  # (the same shape: a page shows it like any run)
                        from skillgit.records import RunProgress

                        summary = progress_summary(RunProgress(run, "", "", status="unreadable",
                                                               stop_reason=exc.message))
                    self._runs[run] = cached = (sha, summary)
                summary = dict(cached[1])
                if summary.get("status") == "running" and summary.get("branch") and \
                        self.store.lock_held(str(summary["branch"])) is False:
                    summary.update(status="interrupted", reason="its process is gone (killed?)")
                out.append(summary)
            return out

    def branches(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self.store.repo.for_each_ref(["refname", "objectname", "committerdate:unix", "subject"],
                                                "refs/heads/")
        out = []
        for ref, sha, date, subject in rows:
            if ref.startswith(R.CANDIDATES_PREFIX):
                continue
            name = ref.removeprefix("refs/heads/")
            out.append({"name": name, "sha": sha, "date": int(date or 0), "subject": subject,
                        "skill": name == self.store.branch})
        return sorted(out, key=lambda b: (not b["skill"], -b["date"]))

    def configs(self) -> list[str]:
        root = self.project.root.resolve()
        found: list[Path] = []
        for pattern in CONFIG_GLOBS:
            found += sorted(root.glob(pattern))
        folder = root / CONFIG_DIR
        if folder.is_dir():
            for dirpath, dirnames, filenames in os.walk(folder):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                found += [Path(dirpath) / f for f in sorted(filenames) if f.endswith((".yaml", ".yml"))]
                if len(found) > MAX_CONFIGS:
                    break
        if self.project.config_path is not None:
            found.insert(0, Path(self.project.config_path))
        out: list[str] = []
        for path in found:
            try:
                rel = path.resolve().relative_to(root).as_posix()
            except (ValueError, OSError):
                continue  # (a symbolic link out of the repository)
            if path.is_file() and rel not in out:
                out.append(rel)
        return out[:MAX_CONFIGS]

    # ------------------------------------------------------------------------------------------ one run
    def run(self, run: str) -> dict[str, Any]:
        """A run's saved progress and its decisions (no diffs), oldest first."""
        from skillgit.review import data

        R.validate_run(run)
        with self._lock:
            review = data.load_run(self.store, run, diff_of=lambda d: False)
        decisions = []
        for d in review.decisions:
            o = d.outcome
            decisions.append({**o.to_dict(), "label": d.label, "train_score": d.train_score})
        progress = progress_summary(review.progress)
        return {"progress": progress, "metric": review.metric, "head": review.head, "base": review.base,
                "decisions": decisions, "usage_by_stage": {k: usage_dict(v) for k, v in
                                                           review.progress.usage_by_stage.items()}}

    def report_html(self, run: str) -> str:
        """`skillgit report`'s page for `run`."""
        from skillgit.report import render_html
        from skillgit.review import data

        R.validate_run(run)
        with self._lock:
            review = data.load_run(self.store, run, split_sizes=_split_sizes(self.project))
        page = data.to_run_report(review, project=self.project.root.name, skill_path=self.store.skill_path)
        return render_html(page)


def _split_sizes(project: Project) -> dict[str, int]:
    from skillgit.tasks import load_splits

    try:
        splits = load_splits(project.config.env, project.root)
    except (SkillgitError, OSError, ValueError):
        return {}
    return {"train": len(splits.train), "val": len(splits.val), "test": len(splits.test)}


class RefWatch:
    """Notices that refs moved by stat-ing git's ref storage (loose refs under the watched folders, packed-refs,
    a reftable folder): see the module contract."""

    WATCHED = ("refs/skillgit", "refs/heads", "refs/notes", "refs/tags/rejected")

    def __init__(self, git_dir: Path):
        self.git_dir = git_dir
        self._last = self._signature()

    def _signature(self) -> frozenset[tuple[str, int, int]]:
        out: set[tuple[str, int, int]] = set()
        paths = [self.git_dir / "packed-refs"]
        for sub in (*self.WATCHED, "reftable"):
            top = self.git_dir / sub
            if not top.is_dir():
                continue
            for dirpath, _, filenames in os.walk(top):
                paths.append(Path(dirpath))
                paths += [Path(dirpath) / f for f in filenames]
        for path in paths:
            try:
                st = path.stat()
            except OSError:
                continue
            out.add((str(path), st.st_mtime_ns, st.st_size))
        return frozenset(out)

    def changed(self) -> bool:
        now = self._signature()
        moved, self._last = now != self._last, now
        return moved
