"""Scale: a long run (1,000 steps) on the simulated world, and what it leaves in git.

    python bench/scale.py [--quick] [--steps 1000]

In-process, the simulated backends without latency and small batches, epoch ends on (a few of them), so the
run takes minutes on two cores. Measured:
- git bookkeeping per step: the store's writes (propose, decide — both with their notes — and the run-ref
  progress save) and reads (step lookup, the negative buffer, reading the skill), in milliseconds and git
  subprocesses (and of those, the listings whose output grows with the history: `for-each-ref`, `notes list`,
  `log`), for the first, middle and last hundred steps (to see whether they grow with the history);
- memory: the process's resident set (RSS) after each step, and its growth per step (least-squares slope over the
  steps after the first third, when the run's caches and pools have filled): target ≤ 5 KB per step; also what
  the bench's own records (git calls, step clocks, store timings: alive in the same process) hold per step, and
  the growth net of them;
- `skillgit log` and `skillgit status` (the real CLI, subprocesses) wall time: the first of each after the run,
  then best and median of 7 (target ≤ 0.25 s); `log --json`; and `log` and `status` with their caches deleted
  before each run (what they pay after a ref the run did not move moved);
- start-up: `skillgit --help` (target ≤ 0.2 s) and `skillgit --version`, best and median of 7; the median CPU
  time of `log`, `status`, `--help` and `--version` (user + system, git children included), and the git
  processes `log` and `status` start (`GIT_TRACE`);
- the instructions `log`, `status` and `--help` execute (valgrind's cachegrind, when installed: a count a busy
  machine does not change) against the floor every read command shares: the interpreter with typer, GitPython and
  PyYAML imported;
- the size of .git (bytes and disk blocks; target ≤ 10 MB before gc, issue 22) and its loose objects;
- refs before and after `skillgit gc` (also the CLI), and `skillgit log` again after it.
The CLI runs as an installed skillgit does: with its .pyc files (one untimed run writes them first, even where
PYTHONDONTWRITEBYTECODE is set). With --keep, a copy of the project as it was before `skillgit gc` is kept next to
it (`project-before-gc`), to profile either state. Writes bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import GitMeter, StepClock, dir_size, git, make_project, say, table, workdir, write_result  # noqa: E402

WRITES = ("propose", "decide", "save_run")
READS = ("step_record", "discard_candidate", "negative_buffer", "read_skill")
# git commands whose output grows with the history (every tag, note or commit): a step that runs one reads more
# the longer the run (the negative buffer did, before the loop kept it as it goes)
LISTINGS = ("for-each-ref", "notes", "log")


class StoreTimer:
    """Wraps the store's bookkeeping methods and sums their wall time per kind (thread-safe)."""

    def __init__(self, store) -> None:
        self.events: list[tuple[float, str, float]] = []  # (start, method, seconds)
        self._lock = threading.Lock()
        for name in WRITES + READS:
            setattr(store, name, self._wrap(name, getattr(store, name)))

    def _wrap(self, name, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            start = time.monotonic()
            try:
                return fn(*args, **kwargs)
            finally:
                with self._lock:
                    self.events.append((start, name, time.monotonic() - start))
        return timed

    def within(self, start: float, end: float, names: tuple[str, ...]) -> float:
        with self._lock:
            return sum(d for s, n, d in self.events if start <= s < end and n in names)


_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # runs may write .pyc, as installs do


def run_skillgit(folder: Path, *args: str) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout) of one `skillgit ARGS` in `folder`; CPU is user + system of the process
    and its git children. The run may write .pyc files (as installing skillgit does): otherwise, where
    PYTHONDONTWRITEBYTECODE is set, every run would compile the modules changed since their .pyc was written."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "skillgit", *args], cwd=folder, capture_output=True, text=True,
                          env=_ENV)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"skillgit {' '.join(args)} failed: {proc.stderr[-1500:]}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, proc.stdout


def cli_seconds(folder: Path, *args: str, repeat: int = 7) -> tuple[float, float, str, float]:
    """Best and median wall time of `skillgit ARGS` over `repeat` runs after an untimed one, the last stdout, and
    the median CPU time of those runs (user + system, git children included: what a busy machine inflates least)."""
    out = run_skillgit(folder, *args)[2]
    times, cpus = [], []
    for _ in range(repeat):
        wall, cpu, out = run_skillgit(folder, *args)
        times.append(wall)
        cpus.append(cpu)
    return min(times), statistics.median(times), out, statistics.median(cpus)


def git_commands(folder: Path, *args: str) -> list[str]:
    """The git commands one `skillgit ARGS` in `folder` runs (`GIT_TRACE`), in order: one process each."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace"
        subprocess.run([sys.executable, "-m", "skillgit", *args], cwd=folder, capture_output=True, check=True,
                       env={**_ENV, "GIT_TRACE": str(trace)})
        lines = trace.read_text(encoding="utf-8", errors="replace").splitlines() if trace.exists() else []
    return [line.split("trace: built-in: git ", 1)[1] for line in lines if "trace: built-in: git " in line]


@functools.cache
def compile_package() -> None:
    """skillgit's modules compiled, as installing it does (`compileall`), before a run that has no untimed one."""
    import skillgit

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(skillgit.__file__).parent)], check=True,
                   env=_ENV, capture_output=True)


def first_seconds(folder: Path, *args: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one `skillgit ARGS` with no untimed run before it (its modules compiled:
    `compile_package`), so that it meets the repository as it is: the first after the run does."""
    compile_package()
    wall, cpu, _ = run_skillgit(folder, *args)
    return wall, cpu


def miss_seconds(folder: Path, *args: str, repeat: int = 7) -> tuple[float, float]:
    """Best and median wall time of `skillgit ARGS` with the `log`/`status` caches deleted before each run (what
    it pays after a ref moved that the run did not move: a hand-written note, `revert`, `pull`)."""
    times = []
    for _ in range(repeat):
        for name in ("log.json.z", "log-edits.json.z", "status.json.z"):
            (folder / ".git" / "skillgit" / "cache" / name).unlink(missing_ok=True)
        times.append(first_seconds(folder, *args)[0])
    return min(times), statistics.median(times)


# What every read command imports before skillgit's own code runs: the interpreter, typer, GitPython and PyYAML.
FLOOR = "import typer, git, yaml"


def instructions(folder: Path, *args: str) -> int | None:
    """Instructions one `python ARGS` executes in `folder` (valgrind's cachegrind, the process itself without its
    git children): the same on a busy machine as on an idle one, unlike its seconds. None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    proc = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           sys.executable, *args], cwd=folder, capture_output=True, text=True, env=_ENV)
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    return int(found.group(1).replace(",", "")) if proc.returncode == 0 and found else None


def instruction_counts(folder: Path) -> dict[str, int | None]:
    """`log`, `status` and `--help` (cache hits, their .pyc written) and the floor they share (`FLOOR`)."""
    return {"log": instructions(folder, "-m", "skillgit", "log"),
            "status": instructions(folder, "-m", "skillgit", "status"),
            "help": instructions(folder, "-m", "skillgit", "--help"), "floor": instructions(folder, "-c", FLOOR)}


def ref_counts(folder: Path) -> dict[str, int]:
    refs = git(folder, "for-each-ref", "--format=%(refname)").splitlines()
    loose = sum(1 for p in (folder / ".git" / "refs").rglob("*") if p.is_file())
    packed = folder / ".git" / "packed-refs"
    return {"refs": len(refs), "loose_ref_files": loose,
            "packed": sum(1 for line in packed.read_text().splitlines() if line[:1] not in ("#", "^"))
            if packed.exists() else 0,
            "rejected_tags": sum(r.startswith("refs/tags/rejected/") for r in refs)}


def objects(folder: Path) -> dict[str, int]:
    info = dict(line.split(": ", 1) for line in git(folder, "count-objects", "-v").splitlines())
    return {"loose": int(info["count"]), "packs": int(info["packs"]),
            "loose_kib": int(info["size"]), "pack_kib": int(info["size-pack"])}


def git_parts(git_dir: Path) -> dict[str, int]:
    """Bytes in files of what .git holds: loose objects, packs, the call journal, skillgit's other caches, the
    reflogs, the rest."""
    parts = {"loose objects": 0, "packs": 0, "call journal": 0, "other caches": 0, "reflogs": 0, "rest": 0}
    for p in git_dir.rglob("*"):
        if not p.is_file() or p.is_symlink():
            continue
        rel = p.relative_to(git_dir).parts
        if rel[0] == "objects":
            part = "packs" if rel[1] == "pack" else "loose objects" if len(rel[1]) == 2 else "rest"
        elif len(rel) > 2 and rel[:2] == ("skillgit", "cache"):
            part = "call journal" if rel[2].startswith("calls.sqlite") else "other caches"
        else:
            part = "reflogs" if rel[0] == "logs" else "rest"
        parts[part] += p.stat().st_size
    return parts


def slice_figures(rows: list[dict], label: str) -> dict:
    def stat(key):
        values = sorted(r[key] for r in rows)
        return {"mean": round(statistics.fmean(values), 2), "p50": round(values[len(values) // 2], 2),
                "p95": round(values[min(len(values) - 1, int(len(values) * 0.95))], 2)}
    return {"steps": label, "writes_ms": stat("writes_ms"), "reads_ms": stat("reads_ms"),
            "git_calls": stat("git_calls"), "git_requests": stat("git_requests"), "listings": stat("listings"),
            "step_ms": stat("step_ms")}


def rss_bytes() -> int:
    """This process's resident set (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def slope(points: list[tuple[int, int]]) -> float:
    """Least-squares slope of y over x (0 with fewer than two points)."""
    if len(points) < 2:
        return 0.0
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    var = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0


def deep_size(obj: object, seen: set[int] | None = None) -> int:
    """Bytes of `obj` and of everything it holds (containers, records with __dict__ or __slots__), each object
    counted once: what the bench's own records (git calls, step clocks, timings) hold."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        size += sum(deep_size(x, seen) for x in obj)
    elif hasattr(obj, "__dict__"):
        size += deep_size(vars(obj), seen)
    elif hasattr(obj, "__slots__"):
        size += sum(deep_size(getattr(obj, s), seen) for s in obj.__slots__ if hasattr(obj, s))
    return size


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a tiny setting for tests (seconds)")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--train", type=int, default=200, help="train items (train ÷ batch steps per epoch)")
    p.add_argument("--val", type=int, default=8)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    a = p.parse_args(argv)
    if a.quick:
        a.steps, a.train, a.val = 12, 24, 4

    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session

    with workdir("scale", a.keep) as tmp:
        config = {"train": {"batch_size": a.batch, "num_epochs": -(-a.steps * a.batch // a.train),
                            "max_steps": a.steps},
                  "gradient": {"minibatch_size": 2, "analyst_workers": 2},
                  "optimizer": {"slow_update_samples": 2}, "evaluation": {"eval_test": False},
                  "env": {"workers": 2}}
        folder = make_project(tmp / "project", n_train=a.train, n_val=a.val, config=config)
        size_before = dir_size(folder / ".git")
        session = open_session(open_project(folder, None, []))
        say(f"scale: {a.steps} steps, batch {a.batch}, {a.train} train / {a.val} val items")
        started = time.monotonic()
        last = [started]

        rss: list[tuple[int, int]] = []  # (step, bytes) after each numbered step

        def progress(event):
            if event.kind == "step_end" and event.outcome.step.isdigit():
                rss.append((int(event.outcome.step), rss_bytes()))
            if event.kind == "step_end" and event.outcome.step.isdigit() and int(event.outcome.step) % 100 == 0:
                now = time.monotonic()
                say(f"  step {event.outcome.step}: {now - started:.0f}s ({(now - last[0]) * 10:.0f} ms/step lately)")
                last[0] = now

        trainer = build_trainer(session, run_id="scale", resume=False, on_event=progress)
        clock = StepClock(trainer)
        timer = StoreTimer(session.store)
        started = time.monotonic()
        with GitMeter() as meter:
            result = trainer.train()
        run_s = time.monotonic() - started
        # The run is over: its process would exit here, closing the call journal (the last connection folds the
        # WAL, up to ~1 MB, into the database and removes it). .git is measured as a finished `skillgit train`
        # leaves it; the WAL the open journal held is recorded apart.
        journal = session.cache.path
        wal = journal.with_name(journal.name + "-wal") if journal is not None else None
        open_wal = wal.stat().st_size if wal is not None and wal.exists() else 0
        session.cache.close()
        # validity: the run left the `log`/`status` caches of the ref state it ended in (what the first `log` and
        # `status` after it answer from)
        from skillgit.store import logcache
        from skillgit.store.packed import read_packed

        current = logcache.state(session.store)
        caches_current = {name: str((read_packed(folder / ".git" / "skillgit" / "cache" / f"{name}.json.z") or {})
                                    .get("state", "")).split("\0")[0] == current for name in ("log", "status")}
        # What this bench itself kept per step (its records are alive in the measured process, so they are in the
        # RSS slope): the growth net of them is skillgit's.
        own_bytes = deep_size([meter.calls, meter.reads, timer.events, clock.marks, clock.edges, rss])
        rows = []
        for step, start, end in clock.windows():
            rows.append({"step": step, "step_ms": 1000 * (end - start),
                         "writes_ms": 1000 * timer.within(start, end, WRITES),
                         "reads_ms": 1000 * timer.within(start, end, READS),
                         "git_calls": len(meter.within(start, end)),
                         "listings": sum(c[2] in LISTINGS for c in meter.within(start, end)),
                         "git_requests": len(meter.reads_within(start, end))})
        n = len(rows)
        k = max(1, min(100, n // 3))
        slices = [slice_figures(rows[:k], f"1-{k}"), slice_figures(rows[n // 2 - k // 2:n // 2 - k // 2 + k],
                                                                   f"{n // 2 - k // 2 + 1}-{n // 2 - k // 2 + k}"),
                  slice_figures(rows[-k:], f"{n - k + 1}-{n}")]

        say("scale: skillgit log, sizes, gc")
        repeat = 1 if a.quick else 7
        first_log_s, first_log_cpu = first_seconds(folder, "log")  # before anything else reads the repository
        first_status_s, first_status_cpu = first_seconds(folder, "status")
        log_s, log_median_s, log_out, log_cpu = cli_seconds(folder, "log", repeat=repeat)
        log_json_s, log_json_median_s, _, _ = cli_seconds(folder, "log", "--json", repeat=repeat)
        status_s, status_median_s, _, status_cpu = cli_seconds(folder, "status", repeat=repeat)
        help_s, help_median_s, _, help_cpu = cli_seconds(folder, "--help", repeat=repeat)
        version_s, version_median_s, _, version_cpu = cli_seconds(folder, "--version", repeat=repeat)
        spawned = {"log": git_commands(folder, "log"), "status": git_commands(folder, "status")}
        miss_log_s, miss_log_median_s = miss_seconds(folder, "log", repeat=repeat)
        miss_status_s, miss_status_median_s = miss_seconds(folder, "status", repeat=repeat)
        first_seconds(folder, "log"), first_seconds(folder, "status")  # (their caches again, as the run left them)
        counts = {} if a.quick else instruction_counts(folder)  # (valgrind: ~10 s a count)
        git_size = dir_size(folder / ".git")
        parts = git_parts(folder / ".git")
        objs = objects(folder)
        refs_before = ref_counts(folder)
        if a.keep:
            shutil.copytree(folder, tmp / "project-before-gc", symlinks=True)
        gc_s, _, _, _ = cli_seconds(folder, "gc", repeat=1)
        refs_after = ref_counts(folder)
        log_after_s, log_after_median_s, _, _ = cli_seconds(folder, "log", repeat=repeat)
        size_after_gc = dir_size(folder / ".git")

    settled = [p for p in rss if p[0] > a.steps // 3]
    growth = slope(settled)
    own_per_step = own_bytes / max(1, len(rss))
    data = {"config": {"steps": a.steps, "batch_size": a.batch, "train_items": a.train, "val_items": a.val,
                       "quick": a.quick},
            "run_s": round(run_s, 1), "accepted": result.accepted, "rejected": result.rejected,
            "decided": result.accepted + result.rejected, "bookkeeping": slices,
            "rss": {"first_mb": round(rss[0][1] / 1e6, 1) if rss else None,
                    "last_mb": round(rss[-1][1] / 1e6, 1) if rss else None,
                    "growth_kb_per_step": round(growth / 1e3, 2), "over_steps": len(settled),
                    "bench_records_kb_per_step": round(own_per_step / 1e3, 2),
                    "growth_net_kb_per_step": round((growth - own_per_step) / 1e3, 2)},
            "status_s": round(status_s, 3), "status_median_s": round(status_median_s, 3),
            "log_s": round(log_s, 3), "log_median_s": round(log_median_s, 3), "log_json_s": round(log_json_s, 3),
            "log_json_median_s": round(log_json_median_s, 3), "log_lines": len(log_out.splitlines()),
            "first_log_after_run_s": round(first_log_s, 3), "first_status_after_run_s": round(first_status_s, 3),
            "first_log_after_run_cpu_s": round(first_log_cpu, 3), "caches_current_after_run": caches_current,
            "first_status_after_run_cpu_s": round(first_status_cpu, 3),
            "log_miss_s": round(miss_log_s, 3), "log_miss_median_s": round(miss_log_median_s, 3),
            "status_miss_s": round(miss_status_s, 3), "status_miss_median_s": round(miss_status_median_s, 3),
            "log_after_gc_s": round(log_after_s, 3), "log_after_gc_median_s": round(log_after_median_s, 3),
            "help_s": round(help_s, 3), "help_median_s": round(help_median_s, 3),
            "version_s": round(version_s, 3), "version_median_s": round(version_median_s, 3),
            "cpu_median_s": {"log": round(log_cpu, 3), "status": round(status_cpu, 3), "help": round(help_cpu, 3),
                             "version": round(version_cpu, 3)},
            "git_commands": spawned, "gc_s": round(gc_s, 3), "instructions": counts,
            "git_dir": {"before_run": size_before, "after_run": git_size, "after_gc": size_after_gc,
                        "objects": objs, "parts": parts, "journal_wal_while_open": open_wal},
            "refs": {"before_gc": refs_before, "after_gc": refs_after},
            "targets": {"log_median_s": 0.25, "status_median_s": 0.25, "help_median_s": 0.2, "git_dir_mb": 10.0,
                        "rss_growth_kb_per_step": 5.0},
            "meets_targets": bool(log_median_s <= 0.25 and status_median_s <= 0.25 and help_median_s <= 0.2
                                  and first_log_s <= 0.25 and first_status_s <= 0.25
                                  and git_size["disk"] < 10e6 and git_size["bytes"] < 10e6 and growth <= 5e3),
            "load": os.getloadavg()}
    write_result("scale", data, a.out)
    cols = [("steps", "steps", "")]
    for key, head in (("writes_ms", "writes ms"), ("reads_ms", "reads ms"), ("git_calls", "git calls"),
                      ("git_requests", "git requests"), ("listings", "listings"), ("step_ms", "step ms")):
        for m in ("mean", "p95"):
            cols.append((f"{key}.{m}", f"{head} {m}", ".1f"))
    kinds = ("writes_ms", "reads_ms", "git_calls", "git_requests", "listings", "step_ms")
    flat = [{"steps": s["steps"], **{f"{k}.{m}": s[k][m] for k in kinds for m in ("mean", "p95")}} for s in slices]
    print(table(flat, cols))
    print(f"\n{a.steps} steps ({data['decided']} decided candidates incl. epoch ends) in {run_s:.0f} s; "
          f"skillgit log (best/median of {repeat}) {log_s:.2f}/{log_median_s:.2f} s ({data['log_lines']} lines), "
          f"--json {log_json_s:.2f}/{log_json_median_s:.2f} s, after gc {log_after_s:.2f}/{log_after_median_s:.2f} s "
          f"(target: median ≤ 0.25 s)")
    print(f"skillgit status (best/median of {repeat}) {status_s:.2f}/{status_median_s:.2f} s (target: median "
          f"≤ 0.25 s); "
          f"RSS {data['rss']['first_mb']} → {data['rss']['last_mb']} MB, growth {growth / 1e3:.1f} KB/step over the "
          f"last {len(settled)} steps (target ≤ 5), of which the bench's own records {own_per_step / 1e3:.1f} KB/step: "
          f"{(growth - own_per_step) / 1e3:.1f} KB/step net")
    print(f"the first skillgit log after the run {first_log_s:.2f} s (CPU {first_log_cpu:.2f} s), the first status "
          f"{first_status_s:.2f} s (CPU {first_status_cpu:.2f} s; the run left current caches: {caches_current}) "
          f"(target ≤ 0.25 s); with the log/status caches deleted (best/median of {repeat}): log "
          f"{miss_log_s:.2f}/{miss_log_median_s:.2f} s, status {miss_status_s:.2f}/{miss_status_median_s:.2f} s")
    print(f"start-up (best/median of {repeat}): skillgit --help {help_s:.3f}/{help_median_s:.3f} s (target ≤ 0.2 s), "
          f"--version {version_s:.3f}/{version_median_s:.3f} s; median CPU (git children included): log "
          f"{log_cpu:.3f} s, status {status_cpu:.3f} s, --help {help_cpu:.3f} s, --version {version_cpu:.3f} s")
    print("git processes: " + "; ".join(f"{name} {len(cmds)} ({', '.join(c.split(' -')[0] for c in cmds)})"
                                        for name, cmds in spawned.items()))
    if counts and all(counts.values()):
        n = {k: v / 1e6 for k, v in counts.items() if v}
        print(f"instructions (cachegrind: the same on a busy machine): log {n['log']:.0f} M, status "
              f"{n['status']:.0f} M, --help {n['help']:.0f} M; the floor they share (python + typer + GitPython + "
              f"PyYAML imports) {n['floor']:.0f} M: log ×{n['log'] / n['floor']:.2f}, status "
              f"×{n['status'] / n['floor']:.2f}")
    print(f".git: {git_size['bytes'] / 1e6:.1f} MB in files, {git_size['disk'] / 1e6:.1f} MB on disk, "
          f"{objs['loose']} loose objects (target ≤ 10 MB); after gc {size_after_gc['disk'] / 1e6:.1f} MB on disk")
    print("  of which " + ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in parts.items())
          + f" (the open journal's WAL before the run's end: {open_wal / 1e6:.2f} MB)")
    print(f"refs: {refs_before['refs']} before gc ({refs_before['loose_ref_files']} loose files), "
          f"{refs_after['refs']} after ({refs_after['loose_ref_files']} loose files); gc took {gc_s:.2f} s")
    return data


if __name__ == "__main__":
    main()
