"""Shared pieces of the benchmarks: bench projects, the latency server's config, instruments, timeline maths,
result files and tables.

Contracts:
- `make_project(folder, seed=..., n_train=..., n_val=..., n_test=..., config=...)` writes a simulated-world
  skillgit project (the demo's, with its own train/val/test split files and `config` deep-merged into
  skillgit.yaml) and commits it, so that in-process runs and `skillgit` CLI subprocesses see the same config.
- `server_config(base_url, workers)` is the config fragment that routes both roles through the latency server
  with the openai backend, with *every* parallelism knob (env.workers, gradient.analyst_workers and both
  roles' `concurrency`) set to `workers`: the per-role `concurrency` caps the pool sizes, so leaving it at its
  default would silently measure a different parallelism.
- `GitMeter` records every git subprocess (start, end, subcommand) while active; `StepClock` records when a
  trainer finished saving each step, which bounds the step windows.
- `critical_path(calls)`, `union(intervals)` and `waves_by_counts(...)` are the timeline maths (see
  bench/README.md for why the critical path is the limit).
- `write_result(name, data)` writes `bench/results/<name>.json` with the machine description added.
Progress goes to stderr (`say`); tables to stdout.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
for _p in (str(ROOT), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import yaml  # noqa: E402

from skillgit.cli.demo import create_project  # noqa: E402
from skillgit.config import SimulatedCfg  # noqa: E402
from skillgit.store import git as repo_mod  # noqa: E402

try:  # the long-lived git processes' module (in older trees they were in store/git.py)
    from skillgit.store import gitproc as proc_mod  # noqa: E402
except ImportError:  # pragma: no cover - an older tree
    proc_mod = repo_mod
from skillgit.world import generate_tasks  # noqa: E402

# Epoch-level mechanisms (slow update, meta skill, meta reflect) and the final test scoring are not part of a
# step; the step benchmarks switch them off so that every measured window is one plain step.
PLAIN_STEPS = {"optimizer": {"use_slow_update": False, "use_meta_skill": False, "use_meta_reflect": False},
               "evaluation": {"eval_test": False}}


def say(*parts: Any) -> None:
    print(*parts, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- projects
def deep_merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, text=True).stdout.strip()


def make_project(folder: Path, *, seed: int = 0, n_train: int = 40, n_val: int = 30, n_test: int = 0,
                 config: dict | None = None) -> Path:
    """A committed simulated-world project with split files `splits/{train,val,test}.jsonl` (see module doc)."""
    create_project(folder, seed)
    items = generate_tasks(SimulatedCfg(seed=seed), n_train + n_val + n_test)
    splits = folder / "splits"
    splits.mkdir()
    for name, part in (("train", items[:n_train]), ("val", items[n_train:n_train + n_val]),
                       ("test", items[n_train + n_val:])):
        if part:
            (splits / f"{name}.jsonl").write_text("".join(json.dumps(i.to_dict()) + "\n" for i in part))
    cfg = yaml.safe_load((folder / "skillgit.yaml").read_text())
    cfg = deep_merge(cfg, {"env": {"split_dir": "splits"}})
    cfg = deep_merge(cfg, config or {})
    (folder / "skillgit.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    git(folder, "add", "splits", "skillgit.yaml")
    git(folder, "commit", "-q", "-m", "bench: splits and config")
    return folder


def server_config(base_url: str, workers: int) -> dict:
    """Both roles through the latency server, every parallelism knob at `workers` (module contract)."""
    role = {"base_url": base_url, "concurrency": workers, "max_retries": 2, "timeout_s": 120}
    return {"model": {"teacher_backend": "openai", "teacher_model": "sim-teacher", "student_backend": "openai",
                      "student_model": "sim-student", "teacher": dict(role), "student": dict(role)},
            "gradient": {"analyst_workers": workers}, "env": {"workers": workers}}


def copy_project(src: Path, dest: Path) -> Path:
    """A byte-for-byte copy of a project (work tree and .git, call journal included)."""
    shutil.copytree(src, dest, symlinks=True)
    return dest


def dir_size(path: Path) -> dict[str, int]:
    """{"bytes": sum of file sizes, "disk": bytes allocated (blocks), "files": count} under `path`."""
    total = disk = files = 0
    for p in path.rglob("*"):
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            total += st.st_size
            disk += getattr(st, "st_blocks", 0) * 512
            files += 1
    return {"bytes": total, "disk": disk, "files": files}


# ---------------------------------------------------------------------------------------------- instruments
class GitMeter:
    """Records every git subprocess skillgit runs in this process while active: (start, end, subcommand); and, in
    `reads`, every request answered by a repository's long-lived git processes (cat-file, mktree,
    hash-object: no process each)."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float, str]] = []
        self.reads: list[tuple[float, float, str]] = []
        self._lock = threading.Lock()
        self._orig = None
        self._patched: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> "GitMeter":
        orig = self._orig = repo_mod.GitRepo._exec
        meter = self

        def timed(g, args, stdin=None, env=None):
            start = time.monotonic()
            try:
                return orig(g, args, stdin, env)
            finally:
                with meter._lock:
                    meter.calls.append((start, time.monotonic(), repo_mod._subcommand(args)))

        repo_mod.GitRepo._exec = staticmethod(timed)
        # Requests to long-lived git processes (absent in older trees: there every read and write is a process).
        self._patched = []
        for cls_name, method in (("_BatchReader", "request"), ("_LineServer", "ask")):
            cls = getattr(proc_mod, cls_name, None)
            if cls is not None:
                orig_m = getattr(cls, method)
                self._patched.append((cls, method, orig_m))
                setattr(cls, method, self._timed_request(orig_m, cls_name))
        return self

    def _timed_request(self, orig_m, label):
        meter = self

        def timed_request(self_, *args):
            start = time.monotonic()
            try:
                return orig_m(self_, *args)
            finally:
                with meter._lock:
                    meter.reads.append((start, time.monotonic(), label))
        return timed_request

    def __exit__(self, *exc: Any) -> None:
        repo_mod.GitRepo._exec = staticmethod(self._orig)
        for cls, method, orig_m in self._patched:
            setattr(cls, method, orig_m)

    def within(self, start: float, end: float) -> list[tuple[float, float, str]]:
        with self._lock:
            return [c for c in self.calls if start <= c[0] < end]

    def reads_within(self, start: float, end: float) -> list[tuple[float, float, str]]:
        with self._lock:
            return [c for c in self.reads if start <= c[0] < end]


class StepClock:
    """Step windows of a run, measured in-process.

    A numbered step starts when the loop enters `trainer._step` (its rollout is the first thing it does) and ends
    when the next one starts: its decision is written in the background during that next rollout, so that is
    where its bookkeeping lands. The last step ends when its decision has landed (`trainer._settle_decision`) or,
    when the run scores test at its end, when that closing scoring starts (`trainer._closing_scores`: the decision
    lands during it, as a step's lands during the next rollout).
    Epoch-end work falls into the window of the step before it. `usage_windows` is per progress save instead
    (`trainer._save`; a step's save lands after the next step's rollout)."""

    def __init__(self, trainer) -> None:
        # (save message, when it finished, ledger snapshot); the first mark opens the run's first window
        self.marks: list[tuple[str, float, dict]] = [("(start)", time.monotonic(), trainer.ledger.snapshot())]
        # ("step N" | "settled" | "closing", when, ledger snapshot)
        self.edges: list[tuple[str, float, dict]] = []
        inner_save, inner_step, inner_settle = trainer._save, trainer._step, trainer._settle_decision
        inner_closing = getattr(trainer, "_closing_scores", None)  # (absent in older trees)

        def save(message: str, **kwargs: Any) -> None:
            inner_save(message, **kwargs)  # a background save ends when the loop moves on, not when it lands
            self.marks.append((message, time.monotonic(), trainer.ledger.snapshot()))

        def step(n: int, *args: Any, **kwargs: Any) -> Any:
            self.edges.append((f"step {n}", time.monotonic(), trainer.ledger.snapshot()))
            return inner_step(n, *args, **kwargs)

        def settle(*args: Any, **kwargs: Any) -> Any:
            out = inner_settle(*args, **kwargs)
            self.edges.append(("settled", time.monotonic(), trainer.ledger.snapshot()))
            return out

        trainer._save, trainer._step, trainer._settle_decision = save, step, settle
        scores_test = bool(trainer.cfg.evaluation.eval_test and trainer._sealed_test.splits.get("test"))
        if inner_closing is not None and scores_test:  # (no test scoring: nothing for the decision to land during)
            def closing(*args: Any, **kwargs: Any) -> Any:
                self.edges.append(("closing", time.monotonic(), trainer.ledger.snapshot()))
                return inner_closing(*args, **kwargs)

            trainer._closing_scores = closing

    def windows(self) -> list[tuple[int, float, float]]:
        """(step, start, end) for every numbered step."""
        return [(step, start, end) for step, start, end, _ in self._steps()]

    def calls_by_stage(self) -> dict[int, dict[str, int]]:
        """step → {stage: model calls paid in that step's window} (from the ledger; cached calls are not paid)."""
        return {step: calls for step, _, _, calls in self._steps()}

    def usage_windows(self) -> list[dict[str, Any]]:
        """One entry per save after the first: {"label": save message, "by_stage": {stage: {calls, prompt_tokens,
        completion_tokens}}, "saved": {stage: calls answered from the call cache}} spent since the save before."""
        out = []
        for (_, _, snap0), (message, _, snap1) in zip(self.marks, self.marks[1:]):
            by_stage = {}
            for stage, u in snap1["by_stage"].items():
                before = snap0["by_stage"].get(stage, {})
                d = {k: u.get(k, 0) - before.get(k, 0) for k in ("calls", "prompt_tokens", "completion_tokens")}
                if d["calls"]:
                    by_stage[stage] = d
            saved = {k: v - snap0["saved_calls"].get(k, 0) for k, v in snap1["saved_calls"].items()}
            out.append({"label": message, "by_stage": by_stage, "saved": {k: v for k, v in saved.items() if v}})
        return out

    def _steps(self):
        starts = [i for i, (label, _, _) in enumerate(self.edges) if label.startswith("step ")]
        for k, i in enumerate(starts):
            label, begin, snap0 = self.edges[i]
            if k + 1 < len(starts):
                _, after, snap1 = self.edges[starts[k + 1]]
            else:  # the last step: until its decision landed, or the closing scoring it lands during began
                closing = [e for e in self.edges[i + 1:] if e[0] == "closing"]
                settled = [e for e in self.edges[i + 1:] if e[0] == "settled"]
                if not (closing or settled):
                    continue
                _, after, snap1 = closing[0] if closing else settled[-1]
            calls = {stage: u.get("calls", 0) - snap0["by_stage"].get(stage, {}).get("calls", 0)
                     for stage, u in snap1["by_stage"].items()}
            yield int(label[5:]), begin, after, {k: v for k, v in calls.items() if v}


# ---------------------------------------------------------------------------------------------- timeline maths
def union(intervals: Iterable[tuple[float, float]]) -> float:
    """Total length covered by at least one interval."""
    total, cur_start, cur_end = 0.0, None, None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        total += cur_end - cur_start
    return total


def critical_path(calls: Sequence[dict]) -> tuple[float, int]:
    """(seconds, calls) of the longest chain of calls in which each starts after the previous one ended.

    With the configured parallelism and every call taking the same time, that chain is the sequence of waves
    the step cannot avoid: a call waits either for a result it needs or for a free slot, and both end a wave."""
    ordered = sorted(calls, key=lambda c: c["start"])
    best: list[tuple[float, int]] = []
    for i, c in enumerate(ordered):
        prev = max((best[j] for j in range(i) if ordered[j]["end"] <= c["start"]), default=(0.0, 0))
        best.append((prev[0] + c["end"] - c["start"], prev[1] + 1))
    return max(best, default=(0.0, 0))


STUDENT_STAGES = ("rollout", "gate", "slow_update", "test")


def waves_by_counts(calls_by_stage: dict[str, int], student_parallel: int, teacher_parallel: int) -> int:
    """Σ over stages of ceil(calls ÷ parallelism): the waves if every stage's calls were independent of each
    other (a lower bound; merge levels that depend on each other need more)."""
    waves = 0
    for stage, n in calls_by_stage.items():
        p = student_parallel if stage in STUDENT_STAGES else teacher_parallel
        waves += math.ceil(n / max(1, p))
    return waves


def step_figures(window: tuple[int, float, float], timeline: list[dict], meter: GitMeter | None,
                 latency: float) -> dict[str, Any]:
    """Wall time, model-busy time, critical path and overhead of one step window (see README)."""
    step, start, end = window
    calls = [c for c in timeline if start <= c["start"] < end]
    wall = end - start
    busy = union((c["start"], min(c["end"], end)) for c in calls)
    cp, waves = critical_path(calls)
    out = {"step": step, "wall_s": round(wall, 4), "model_busy_s": round(busy, 4),
           "critical_path_s": round(cp, 4), "waves": waves, "calls": len(calls),
           "ratio": round(wall / cp, 4) if cp else None,
           "outside_models_s": round(wall - busy, 4),
           "outside_share": round((wall - busy) / wall, 5) if wall else None,
           "latency_s": latency}
    if meter is not None:
        gits = meter.within(start, end)
        out["git_calls"] = len(gits)
        out["git_s"] = round(sum(e - s for s, e, _ in gits), 4)
        out["git_requests"] = len(meter.reads_within(start, end))
    return out


# ---------------------------------------------------------------------------------------------- results
def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor()
    gitv = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    import openai

    return {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(), "git": gitv,
            "platform": platform.platform(), "openai_sdk": openai.__version__}


def write_result(name: str, data: dict[str, Any], out: Path | None = None) -> Path:
    path = out or RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "machine": machine(), **data}
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    say(f"results: {path}")
    return path


def table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
    """Columns are (key, header, format spec); missing values print as '-'."""
    def cell(row, key, spec):
        value = row.get(key)
        return "-" if value is None else format(value, spec)

    cells = [[cell(r, k, s) for k, _, s in columns] for r in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, (_, h, _) in enumerate(columns)]
    lines = ["  ".join(h.rjust(w) for (_, h, _), w in zip(columns, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


@contextmanager
def workdir(prefix: str, keep: bool = False) -> Iterator[Path]:
    import tempfile

    path = Path(tempfile.mkdtemp(prefix=f"skillgit-bench-{prefix}-"))
    try:
        yield path
    finally:
        if keep:
            say(f"kept {path}")
        else:
            shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- a measured run
def warm_seed_scores(folder: Path) -> None:
    """Score the seed skill on val once, so that the call journal answers the run's opening evaluation and the
    measured runs spend their time on steps only (the server must be the same one the runs will use)."""
    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session

    session = open_session(open_project(folder, None, []))
    trainer = build_trainer(session, run_id="warm", resume=False)
    trainer.evaluator.score(session.store.read_skill(), "val")


def measure_run(folder: Path, server, *, steps: int, latency: float, overrides: Sequence[str] = (),
                run_id: str = "bench") -> dict[str, Any]:
    """Train `steps` steps in-process on `folder` (latency server `server`) and return per-step figures
    (`step_figures`) with each step's paid calls by stage, plus the run's totals."""
    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session

    project = open_project(folder, None, [f"train.max_steps={steps}", *overrides])
    session = open_session(project)
    trainer = build_trainer(session, run_id=run_id, resume=False)
    clock = StepClock(trainer)
    server.reset()
    started = time.monotonic()
    with GitMeter() as meter:
        result = trainer.train()
    total = time.monotonic() - started
    timeline = server.timeline()
    by_stage = clock.calls_by_stage()
    cfg = project.config
    student_p = min(cfg.env.workers, cfg.model.student.concurrency)
    teacher_p = min(cfg.gradient.analyst_workers, cfg.model.teacher.concurrency)
    rows = []
    for window in clock.windows():
        row = step_figures(window, timeline, meter, latency)
        row["calls_by_stage"] = by_stage.get(window[0], {})
        row["waves_by_counts"] = waves_by_counts(row["calls_by_stage"], student_p, teacher_p)
        row["limit_by_counts_s"] = round(row["waves_by_counts"] * latency, 4)
        rows.append(row)
    return {"steps": rows, "run_s": round(total, 3), "accepted": result.accepted, "rejected": result.rejected,
            "parallelism": {"student": student_p, "teacher": teacher_p}}


def mean(rows: list[dict], key: str, digits: int = 4) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(sum(values) / len(values), digits) if values else None
