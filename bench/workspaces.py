"""Agentic rollouts on a big repository: what skillgit's workspace costs next to the agent and the verifier
(issue 22's goal: skillgit's share of a rollout ≤ 15 % on a 5,000-file / 200 MB repository).

    python bench/workspaces.py [--quick] [--files 5000] [--mb 200] [--rollouts 12] [--max-rollouts 40] [--keep]

It generates the repository — the agentic example's `textkit` package (its source, tests and verifiers) plus
generated source files and binary assets up to `--files` files and `--mb` MB, committed and packed, with a
committed skill at `skill/` — and runs the example's textkit tasks on it with `workspace: {repo: ., rev: HEAD}`:
the real `AgentStudent` with the simulated coding agent (`python -m skillgit.world.agent`) and the tasks' real
pytest verifiers. Three ways to give each rollout its workspace, interleaved rollout by rollout (A B C A B C …, so
that drift on a shared machine hits all three alike), each with its own student:
- `worktree` (the baseline: skillgit before pooled workspaces): `git worktree add --detach` of the whole
  repository per rollout, its diff staged in that worktree, `git worktree remove` afterwards;
- `pooled`: `skillgit.agentic.workspace.Workspaces`, one workspace reset per rollout;
- `pooled+paths`: the same with `workspace.paths: [textkit, tests, pyproject.toml]` (a sparse checkout).
Measured per rollout: the wall time of `student.run`, the student's own setup / agent / verify timings, and, through
a timing wrapper around the workspace object, opening (create or reset), closing (remove or return to the pool) and
the diff. **skillgit's share** = (open + close + diff) ÷ wall, the issue's definition; `outside` = everything of the
wall that is not setup, agent or verify (also the skill install, the prompt file, trace parsing). The pools' first
rollout (the one full checkout a worker pays) is reported apart from the steady state. Figures: mean and 95 %
Student-t interval over rollouts; the baseline ÷ pooled ratio of skillgit seconds with a 95 % interval from 2,000
bootstrap resamples of the rollouts (paired by index). Rollouts continue past `--rollouts` until the pooled share's
interval is at most ±2 points wide or `--max-rollouts` is reached (then it says so).
Validity: every mode gives every rollout the same verdict and the same diff (a reset workspace is indistinguishable
from a fresh worktree), the sequential pools hold one workspace each, the user's repository is untouched
(status, worktrees, refs), and the repository has the asked size. Also measured: copying the generated tree with
`workspace.cow_copy` (FICLONE where the file system clones, else a kernel copy) against `shutil.copy2`.
Writes bench/results/workspaces.json.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ROOT, git, say, table, workdir, write_result  # noqa: E402

from skillgit.agentic import workspace as W  # noqa: E402
from skillgit.agentic.spec import AgenticSpec  # noqa: E402
from skillgit.agentic.student import AgentStudent  # noqa: E402
from skillgit.config import CommandCfg  # noqa: E402
from skillgit.store.git import GitRepo  # noqa: E402
from skillgit.store.lock import alive  # noqa: E402
from skillgit.tasks import load_items  # noqa: E402
from skillgit.types import Item  # noqa: E402

EXAMPLE = ROOT / "examples" / "agentic"
MODES = ("worktree", "pooled", "pooled+paths")
PATHS = ["textkit", "tests", "pyproject.toml"]
TARGET_HALF_WIDTH = 0.02  # the pooled share's 95 % interval: ± this many (fraction) or more rollouts
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


# ---------------------------------------------------------------------------------------------- the repository
def make_repo(folder: Path, files: int, mb: float, seed: int = 7) -> dict[str, Any]:
    """The textkit package plus generated files up to `files` files and `mb` MB (9 in 10 source-like text, 1 in 10
    incompressible binary), a committed skill, committed and packed; returns its size."""
    shutil.copytree(EXAMPLE / "repos" / "textkit", folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(EXAMPLE / "skill", folder / "skill")
    (folder / ".gitignore").write_text("__pycache__/\n*.pyc\n.pytest_cache/\nbuild/\n*.log\n")
    have = [p for p in folder.rglob("*") if p.is_file()]
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(2, 10)))
             for _ in range(4000)]
    n = max(0, files - len(have))
    size = int(mb * 1024 * 1024 - sum(p.stat().st_size for p in have)) // max(1, n)
    for i in range(n):
        sub = folder / "vendor" / f"pkg{i % 50:02d}" / f"mod{(i // 50) % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        if i % 10 == 0:
            (sub / f"asset{i}.bin").write_bytes(rng.randbytes(size))
        else:
            lines, got = [], 0
            while got < size:
                line = "    " + " = ".join(rng.choices(words, k=6)) + "\n"
                lines.append(line)
                got += len(line)
            (sub / f"module{i}.py").write_text("".join(lines)[:size])
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "big repository")
    GitRepo.open(folder).repack()
    tracked = git(folder, "ls-files").splitlines()
    return {"files": len(tracked), "bytes": sum((folder / p).stat().st_size for p in tracked)}


def tasks(repo: Path, n: int) -> list[Item]:
    """The example's textkit tasks on the repository itself (`workspace: {repo: ., rev: HEAD}`), cycled to `n`."""
    base = [i for i in load_items(EXAMPLE / "tasks.jsonl") if i.metadata.get("workspace", {}).get("fixture") ==
            "repos/textkit"]
    out = []
    for k in range(n):
        item = base[k % len(base)]
        meta = {key: v for key, v in item.metadata.items() if key != "task_dir"}
        out.append(Item(f"{item.id}#{k}", item.input, item.expected, {**meta, "workspace": {"repo": ".",
                                                                                            "rev": "HEAD"}}))
    return out


def with_paths(item: Item) -> Item:
    return Item(item.id, item.input, item.expected, {**item.metadata, "workspace": {
        **item.metadata["workspace"], "paths": PATHS}})


# ---------------------------------------------------------------------------------------------- the baseline
class WorktreeWorkspaces:
    """skillgit's workspaces before issue 22, for `repo` tasks: a `git worktree add` per rollout, the committed skill
    removed, the diff staged in the worktree, `git worktree remove` at the end."""

    def __init__(self, repo: GitRepo, skill_path: str):
        self.repo, self.skill_path = repo, skill_path
        self.root = Path(tempfile.gettempdir()) / f"skillgit-bench-wt-{os.getpid()}"
        for stale in self.root.parent.glob("skillgit-bench-wt-*"):  # what a killed run of this bench left
            pid = stale.name.rsplit("-", 1)[1]
            if pid.isdigit() and not alive(int(pid)):
                shutil.rmtree(stale, ignore_errors=True)

    def hidden(self, spec: AgenticSpec) -> list[str]:
        return [self.skill_path]

    @contextmanager
    def open(self, spec: AgenticSpec) -> Iterator[Path]:
        folder = self.root / os.urandom(6).hex()
        ws = folder / "ws"
        folder.mkdir(parents=True)
        try:
            self.repo.worktree_add(ws, spec.rev)
            shutil.rmtree(ws / self.skill_path)
            yield ws
        finally:
            self.repo.worktree_remove(ws)
            shutil.rmtree(folder, ignore_errors=True)

    def diff(self, ws: Path, exclude: Sequence[str] = ()) -> str:
        return GitRepo.open(ws).workspace_diff(exclude)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class Timed:
    """Wraps a workspaces object: the seconds of each open (enter), close (exit) and diff of the last rollout."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.last: dict[str, float] = {}

    def hidden(self, spec: AgenticSpec) -> list[str]:
        return self.inner.hidden(spec)

    @contextmanager
    def open(self, spec: AgenticSpec) -> Iterator[Path]:
        t0 = time.perf_counter()
        manager = self.inner.open(spec)
        ws = manager.__enter__()
        self.last = {"open": time.perf_counter() - t0}
        try:
            yield ws
        except BaseException:
            if not manager.__exit__(*sys.exc_info()):
                raise
        else:
            t1 = time.perf_counter()
            manager.__exit__(None, None, None)
            self.last["close"] = time.perf_counter() - t1

    def diff(self, ws: Path, exclude: Sequence[str] = ()) -> str:
        t0 = time.perf_counter()
        try:
            return self.inner.diff(ws, exclude)
        finally:
            self.last["diff"] = time.perf_counter() - t0


def student(repo: Path, mode: str) -> tuple[AgentStudent, Timed]:
    built = AgentStudent(CommandCfg(preset="simulated", timeout_s=120), project_root=repo, model=None,
                         env=dict(os.environ), skill_path="skill", skill_branch="main")
    inner = WorktreeWorkspaces(built.repo, "skill") if mode == "worktree" else built.workspaces
    timed = Timed(inner)
    built.workspaces = timed  # type: ignore[assignment]  # (the same three calls the student makes)
    return built, timed


# ---------------------------------------------------------------------------------------------- statistics
def mean_ci(values: Sequence[float]) -> dict[str, float]:
    n, m = len(values), statistics.fmean(values)
    if n < 2:
        return {"mean": m, "lo": m, "hi": m, "n": n}
    half = T95[max(k for k in T95 if k <= n - 1)] * statistics.stdev(values) / math.sqrt(n)
    return {"mean": m, "lo": m - half, "hi": m + half, "n": n}


def ratio_ci(num: Sequence[float], den: Sequence[float], seed: int = 0) -> dict[str, float]:
    """mean(num) ÷ mean(den) with a 95 % percentile interval from bootstrap resamples of the paired rollouts."""
    rng, n = random.Random(seed), len(num)
    boots = []
    for _ in range(2000):
        pick = [rng.randrange(n) for _ in range(n)]
        boots.append(sum(num[i] for i in pick) / max(1e-12, sum(den[i] for i in pick)))
    boots.sort()
    return {"mean": sum(num) / max(1e-12, sum(den)), "lo": boots[49], "hi": boots[1949], "n": n}


def cow_measure(src: Path, dest: Path) -> dict[str, Any]:
    """Copy the generated tree with `cow_copy` and with `shutil.copy2`; MB/s each, and whether clones happened."""
    out: dict[str, Any] = {"bytes": sum(p.stat().st_size for p in src.rglob("*") if p.is_file())}
    for name, fn in (("cow_copy", W.cow_copy), ("copy2", shutil.copy2)):
        shutil.rmtree(dest, ignore_errors=True)
        t0 = time.perf_counter()
        shutil.copytree(src, dest, copy_function=fn)
        out[f"{name}_s"] = round(time.perf_counter() - t0, 3)
        out[f"{name}_mb_s"] = round(out["bytes"] / 1e6 / max(1e-9, out[f"{name}_s"]), 1)
    out["reflink"] = src.stat().st_dev not in W._NO_CLONE
    shutil.rmtree(dest, ignore_errors=True)
    return out


# ---------------------------------------------------------------------------------------------- the run
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="200 files / 4 MB, 3 rollouts per mode")
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--mb", type=float, default=200.0)
    ap.add_argument("--rollouts", type=int, default=12, help="rollouts per mode before the interval check")
    ap.add_argument("--max-rollouts", type=int, default=40)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.quick:
        a.files, a.mb, a.rollouts, a.max_rollouts = 200, 4.0, 3, 3
    with workdir("workspaces", a.keep) as tmp:
        repo = tmp / "repo"
        t0 = time.perf_counter()
        size = make_repo(repo, a.files, a.mb)
        say(f"workspaces: repository of {size['files']} files, {size['bytes'] / 2**20:.0f} MB in "
            f"{time.perf_counter() - t0:.0f} s")
        before = (git(repo, "status", "--porcelain"), git(repo, "worktree", "list"), git(repo, "for-each-ref"))
        built = {m: student(repo, m) for m in MODES}
        rows: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
        items = tasks(repo, a.max_rollouts)
        k = 0
        while k < a.max_rollouts:
            for mode in MODES:
                item = with_paths(items[k]) if mode == "pooled+paths" else items[k]
                st, timed = built[mode]
                t1 = time.perf_counter()
                reply = st.run((EXAMPLE / "skill" / "SKILL.md").read_text(), item)
                wall = time.perf_counter() - t1
                own = sum(timed.last.values())
                rows[mode].append({"wall": wall, **timed.last, **reply.timings, "own": own,
                                   "outside": wall - sum(reply.timings.values()),
                                   "share": own / wall, "hard": reply.score.hard if reply.score else None,
                                   "diff_text": reply.trace.split("workspace diff:")[1]})
            k += 1
            say(f"workspaces: rollout {k}: " + ", ".join(f"{m} {rows[m][-1]['wall']:.2f} s "
                                                         f"({rows[m][-1]['share']:.0%})" for m in MODES))
            steady = [r["share"] for r in rows["pooled"][1:]]
            if k >= a.rollouts and len(steady) >= 2:
                ci = mean_ci(steady)
                if (ci["hi"] - ci["lo"]) / 2 <= TARGET_HALF_WIDTH:
                    break
        slots = {m: len([p for p in built[m][1].inner.pool_folder.iterdir() if p.name.isdigit()])
                 for m in MODES if m != "worktree"}
        for _, timed in built.values():
            timed.inner.close()
        after = (git(repo, "status", "--porcelain"), git(repo, "worktree", "list"), git(repo, "for-each-ref"))
        cow = cow_measure(repo / "vendor", tmp / "copy") if (repo / "vendor").is_dir() else {}

    summary = []
    for mode in MODES:
        rs = rows[mode]
        first, rest = rs[0], rs[1:] or rs
        summary.append({"mode": mode, "rollouts": len(rs), "first_s": first["wall"], "first_open_s": first["open"],
                        "wall_s": mean_ci([r["wall"] for r in rest])["mean"],
                        "open_s": statistics.fmean(r["open"] for r in rest),
                        "close_s": statistics.fmean(r.get("close", 0.0) for r in rest),
                        "diff_s": statistics.fmean(r["diff"] for r in rest),
                        "agent_verify_s": statistics.fmean(r["agent"] + r["verify"] + r["setup"] for r in rest),
                        "share": mean_ci([r["share"] for r in rest]),
                        "share_with_first": sum(r["own"] for r in rs) / sum(r["wall"] for r in rs),
                        "outside_share": statistics.fmean(r["outside"] / r["wall"] for r in rest)})
    base = [r["own"] for r in rows["worktree"][1:] or rows["worktree"]]
    for row in summary:
        mine = [r["own"] for r in rows[row["mode"]][1:] or rows[row["mode"]]]
        row["ratio"] = ratio_ci(base, mine)
        s = row["share"]
        row["share_text"] = f"{s['mean']:.1%} [{s['lo']:.1%}, {s['hi']:.1%}]"
        r = row["ratio"]
        row["ratio_text"] = f"{r['mean']:.1f} [{r['lo']:.1f}, {r['hi']:.1f}]"
    print(table(summary, [("mode", "mode", "s"), ("rollouts", "n", "d"), ("first_s", "1st s", ".2f"),
                          ("wall_s", "wall s", ".2f"), ("open_s", "open s", ".3f"), ("close_s", "close s", ".3f"),
                          ("diff_s", "diff s", ".3f"), ("agent_verify_s", "agent+verify s", ".2f"),
                          ("share_text", "skillgit share [95 %]", "s"),
                          ("share_with_first", "share incl. 1st", ".1%"),
                          ("ratio_text", "× baseline's skillgit s [95 %]", "s")]))
    verdicts = {m: [r["hard"] for r in rows[m]] for m in MODES}
    diffs = {m: [r["diff_text"] for r in rows[m]] for m in MODES}
    checks = {"same_verdicts": verdicts["pooled"] == verdicts["worktree"] == verdicts["pooled+paths"],
              "same_diffs": diffs["pooled"] == diffs["worktree"] == diffs["pooled+paths"],
              "one_workspace_per_pool": slots["pooled"] == 1 and slots["pooled+paths"] == 1,
              "user_repository_untouched": before == after,
              "repository_size": size["files"] >= a.files and size["bytes"] >= a.mb * 1024 * 1024 * 0.99}
    pooled = next(r for r in summary if r["mode"] == "pooled")
    tight = (pooled["share"]["hi"] - pooled["share"]["lo"]) / 2 <= TARGET_HALF_WIDTH
    valid = all(checks.values())
    print(f"\nrepository: {size['files']} files, {size['bytes'] / 2**20:.0f} MB; copy of vendor/: "
          f"cow_copy {cow.get('cow_copy_mb_s', '-')} MB/s, copy2 {cow.get('copy2_mb_s', '-')} MB/s, "
          f"reflink {'yes' if cow.get('reflink') else 'no (this file system copies)'}")
    print(f"goal: pooled share ≤ 15 %: {'met' if pooled['share']['hi'] <= 0.15 else 'NOT met'} "
          f"({pooled['share_text']}); interval {'±≤ 2 points' if tight else 'NOT tight: more rollouts needed'}")
    print("validity: " + ("ok (" + ", ".join(checks) + ")" if valid else
                          "FAILED: " + ", ".join(k for k, v in checks.items() if not v)))
    write_result("workspaces", {
        "config": {"files": a.files, "mb": a.mb, "rollouts": a.rollouts, "max_rollouts": a.max_rollouts,
                   "modes": list(MODES), "paths": PATHS, "agent": "simulated (python -m skillgit.world.agent)",
                   "share": "(open + close + diff) / wall of student.run; steady state = rollouts after the first",
                   "ci": "95 % Student-t over rollouts; ratio: 95 % bootstrap percentile (2,000 resamples)"},
        "repository": size, "summary": [{k: v for k, v in r.items() if not k.endswith("_text")} for r in summary],
        "rollouts": {m: [{k: v for k, v in r.items() if k != "diff_text"} for r in rows[m]] for m in MODES},
        "cow": cow, "slots": slots, "checks": checks, "valid": valid, "tight": tight}, a.out)
    return 0 if valid else 1


if __name__ == "__main__":
    sys.exit(main())
