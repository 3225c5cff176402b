"""Mining at the size of a heavy user's history: `skillgit.sleep.cluster` (candidate pairs from a capped
inverted index, exact cosine on candidates, best-neighbour average linkage) against the pairwise grouping mining
used before (tests/sleep_reference.py: the full cosine matrix, every pair in a dict), measured in the same run on
the same requests.

    python bench/sleep_scale.py [--quick] [--sizes 1000,2000,4000] [--reference-max 4000] [--exact-max 20000]
        [--timeout 900] [--baseline CHECKOUT]

The requests come from tests/sleep_synthetic.py (recurring task families in a few phrasings with Zipf popularity,
follow-ups, one-off requests in the project's vocabulary), cut into units and featurised by `skillgit.sleep.mine`
as a night does. Each measurement runs in its own child process, so its peak RSS is its own: reported are CPU
seconds and wall seconds of the grouping alone, the child's peak RSS and its growth over the RSS it had once the
features were built (what the grouping itself took), and for the new grouping the whole `Miner` (add every session,
group, build the tasks). Validity: where both groupings ran, the clusters must be the same (`agree`); the new
grouping says when one of its caps bound (`exact` false), and then agreement is not promised. Above
`--reference-max` the agreement is checked against the new grouping with its caps lifted (exact by the argument in
skillgit/sleep/cluster.py, and checked against the reference on small data by tests/test_sleep_mine_scale.py). A
reference run over `--timeout` seconds is reported as not finished. `--baseline CHECKOUT` also measures another
checkout's whole `Miner` (its own copy of this script, its own skillgit) at every size, right after this one's:
the before/after ratio of a change, measured in the same run.

Harvest (`--harvest N`, default 200 sessions of ~540 KB, real-sized Claude Code 2.1 files with planted secrets):
the first pass over every file, streamed as a night streams it (`harvest(sink=…)`), and the incremental pass after
one more session was written (what `sleep harvest`'s cache and a night's saved state make the next run read), CPU
seconds, seconds per GB and the peak RSS of the child; valid when planted secrets reached the kept text and none
survived in a kept session. With `--baseline`, `--harvest-baseline M` files (written once) are harvested by both
checkouts' skillgit, interleaved (`--harvest-repeats`, 2 by default), each run in its own process: the before/after
CPU ratio (lowest of each);
valid when both hand on and return the very same sessions, state and counts (`same_output`, hashed) and read,
preview and scrub the shipped transcripts (tests/fixtures/transcripts) the same (`same_fixtures`).
Writes bench/results/sleep_scale.json.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ROOT, say, table, write_result  # noqa: E402

sys.path.insert(0, str(ROOT))


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(algo: str, n: int, seed: int) -> dict[str, Any]:
    """One measurement (run in a fresh process by `measure`)."""
    from skillgit.sleep.cluster import Stats, cluster
    from skillgit.sleep.mine import DEFAULT_THRESHOLD, Miner, split_units, unit_features
    from tests import sleep_reference
    from tests.sleep_synthetic import History

    if algo == "harvest":
        return harvest_child(n, seed)
    if algo == "miner":  # sessions streamed from the generator, as a night streams harvest: none is held
        base = _rss_mb()
        miner, spent, wall = Miner(), 0.0, time.perf_counter()
        for s in History(seed).units(n):
            cpu = time.process_time()
            miner.add(s)
            spent += time.process_time() - cpu
        cpu = time.process_time()
        result = miner.result()
        spent += time.process_time() - cpu
        return {"units": len(result.units), "groups": len(result.groups), "tasks": len(result.tasks),
                "exact": result.capped == 0, "cpu_s": round(spent, 3), "wall_s": round(time.perf_counter() - wall, 3),
                "peak_mb": round(_peak_mb(), 1), "grew_mb": round(max(0.0, _peak_mb() - base), 1)}
    sessions = list(History(seed).units(n))
    docs = [unit_features(u) for s in sessions for u in split_units(s) if u.request]
    del sessions
    base = _rss_mb()
    cpu, wall = time.process_time(), time.perf_counter()
    if algo == "reference":
        members = [m for m, _ in sleep_reference.group(docs, DEFAULT_THRESHOLD)]
        out = {"exact": True}
    elif algo == "uncapped":  # the new grouping without its caps: exact by construction, memory unbounded
        big = 10**12
        members = [list(c.members) for c in cluster(docs, DEFAULT_THRESHOLD, walk=big, keep=big, neighbours=big)]
        out = {"exact": True}
    else:
        stats = Stats()
        members = [list(c.members) for c in cluster(docs, DEFAULT_THRESHOLD, stats=stats)]
        out = {"exact": stats.exact, "nodes": stats.nodes, "pairs": stats.pairs}
    out.update(units=len(docs), groups=len(members),
               digest=hashlib.sha256(json.dumps(members).encode()).hexdigest()[:16], members=members)
    out.update(cpu_s=round(time.process_time() - cpu, 3), wall_s=round(time.perf_counter() - wall, 3),
               peak_mb=round(_peak_mb(), 1), grew_mb=round(max(0.0, _peak_mb() - base), 1))
    return out


def harvest_child(n: int, seed: int, kb: int = 540) -> dict[str, Any]:
    """`n` real-sized Claude Code files, harvested as a night does (`harvest(sink=…)`: each kept session handed on,
    none held), then once more after one more file was written (the incremental pass). CPU seconds are harvest's
    own (the sink's leak check is timed apart and left out). Validity, checked here: every planted secret that a
    kept session would show is masked — the planted values that reach the reader's kept text of the first files
    are counted (so the check is not vacuous), and no planted value occurs in any session the sink got."""
    import shutil
    import tempfile

    from skillgit.sleep.harvest import HarvestState, harvest
    from skillgit.sleep.scrub import build_scrubber
    from tests.sleep_synthetic import History

    folder = Path(tempfile.mkdtemp(prefix="skillgit-bench-harvest-"))
    try:
        home, repo = folder / "home", folder / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        history = History(seed)
        paths = history.write_claude(home, str(repo), n, kb)
        size = sum(p.stat().st_size for p in paths)
        leaks = _Leaks()
        planted = leaks.in_raw_sessions(paths[:50])
        base = _rss_mb()
        scrubber = build_scrubber(repo)
        cpu = time.process_time()
        first = harvest(["claude"], home, repo, [], HarvestState(), scrubber=scrubber, remote_lookup=None,
                        sink=leaks.sink)
        first_cpu = time.process_time() - cpu - leaks.cpu
        first_peak = _peak_mb()
        kept, state, secrets = first.streamed, first.state, first.redactions.secrets
        del first
        history.write_claude(home, str(repo), 1, kb)
        leaks.cpu = 0.0
        cpu = time.process_time()
        again = harvest(["claude"], home, repo, [], state, scrubber=scrubber, remote_lookup=None, sink=leaks.sink)
        return {"units": n, "mb": round(size / 1e6, 1), "kept": kept, "cpu_s": round(first_cpu, 3),
                "s_per_gb": round(first_cpu / (size / 1e9), 1),
                "incremental_cpu_s": round(time.process_time() - cpu - leaks.cpu, 3),
                "incremental_read": again.files_read, "incremental_kept": again.streamed,
                "peak_mb": round(first_peak, 1), "grew_mb": round(max(0.0, first_peak - base), 1),
                "masked": secrets, "planted_kept": planted, "leaked": sorted(leaks.found),
                "valid": planted > 0 and not leaks.found, "decoder": _decoder_used()}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _decoder_used() -> str:
    """Which JSON decoder harvest's reader used: msgspec's (the `fast` extra), jiter's (the default install since
    wave 13), or the standard library's ("json")."""
    from skillgit.sleep.readers import _common

    decode = (getattr(_common, "_DECODE", None) or [None])[0]
    owner = getattr(decode, "__self__", None)
    module = getattr(decode, "__module__", None) or (type(owner).__module__ if owner is not None else "")
    return "json" if decode is None else str(module).split(".")[0]


class _Leaks:
    """The planted secrets (tests/secret_corpus.FORMATS) found in text: in the reader's raw sessions (what the
    scrubber must mask) and in the sessions harvest hands on (must be none)."""

    def __init__(self) -> None:
        import re

        from tests.secret_corpus import FORMATS

        self.names = {leak: f.name for f in FORMATS for leak in f.leaks}
        self.pattern = re.compile("|".join(re.escape(leak) for leak in sorted(self.names, key=len, reverse=True)))
        self.found: set[str] = set()
        self.cpu = 0.0

    def texts(self, session: Any) -> str:
        parts = [session.cwd or "", session.path or ""]
        for turn in session.turns:
            parts.append(turn.text)
            for call in turn.tool_calls:
                parts += [call.summary, call.command or "", *call.paths]
            parts += [result.output for result in turn.tool_results]
        return "\n".join(parts)

    def in_raw_sessions(self, paths: list[Path]) -> int:
        from skillgit.sleep.readers import get_reader

        try:  # what harvest keeps of a session before scrubbing it
            from skillgit.sleep.scrub import previews
        except ImportError:  # a checkout from before previews: it keeps the reader's whole session
            def previews(session: Any) -> Any:
                return session
        reader = get_reader("claude")
        return sum(len(self.pattern.findall(self.texts(previews(s)))) for p in paths for s in reader.read(p))

    def sink(self, session: Any, first_new_turn: int) -> None:
        cpu = time.process_time()
        self.found.update(self.names[m] for m in self.pattern.findall(self.texts(session)))
        self.cpu += time.process_time() - cpu


# one first-pass harvest of the files under argv[2] by the skillgit of checkout argv[1], streamed (no session held);
# `output` hashes everything it handed on and returned (each kept session as JSON, the state, the counts, the
# warnings), hashed apart from the CPU it reports
_HARVEST_AT = """
import hashlib, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
""" + inspect.getsource(_decoder_used) + """
from skillgit.sleep.harvest import HarvestState, harvest
from skillgit.sleep.scrub import build_scrubber
home, repo = Path(sys.argv[2]) / "home", Path(sys.argv[2]) / "repo"
scrubber, kept, out, spent = build_scrubber(repo), [], hashlib.sha256(), [0.0]
def text(value):
    return json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
def sink(session, first):
    cpu = time.process_time()
    out.update(text([session.to_dict(), first]))
    kept.append(session.key)
    spent[0] += time.process_time() - cpu
cpu = time.process_time()
result = harvest(["claude"], home, repo, [], HarvestState(), scrubber=scrubber, remote_lookup=None, sink=sink)
cpu = time.process_time() - cpu - spent[0]
out.update(text([result.state.to_dict(), result.redactions.to_dict(), [w.to_dict() for w in result.warnings],
                 result.unknown_records]))
print(json.dumps({"cpu_s": round(cpu, 3), "kept": len(kept), "masked": result.redactions.secrets,
                  "output": out.hexdigest()[:16], "decoder": _decoder_used(),
                  "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""

# every transcript shipped under argv[2] read by the readers of checkout argv[1], then digested, previewed and scrubbed
# as harvest does: a hash of what that gives (the same fixture files for both checkouts)
_FIXTURES_AT = """
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from skillgit.sleep.harvest_digest import digest
from skillgit.sleep.readers import get_reader
from skillgit.sleep.scrub import build_scrubber, previews
root, out, scrubber = Path(sys.argv[2]), hashlib.sha256(), build_scrubber(None, homes=["/home/user"])
for folder in sorted(p for p in root.iterdir() if p.is_dir()):
    reader = get_reader(folder.name)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        for session in reader.read(path):
            clean, counts = scrubber.scrub_session(previews(session))
            row = [path.relative_to(root).as_posix(), digest(session), {**clean.to_dict(), "path": None},
                   counts.to_dict()]
            out.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass"))
print(out.hexdigest()[:16])
"""


def fixtures_output(code: Path, timeout: float) -> str | None:
    """The hash `_FIXTURES_AT` prints for checkout `code` on this checkout's shipped transcripts (None: it failed)."""
    proc = subprocess.run([sys.executable, "-c", _FIXTURES_AT, str(code), str(ROOT / "tests/fixtures/transcripts")],
                          cwd=code, capture_output=True, text=True, timeout=timeout)
    return proc.stdout.strip() if proc.returncode == 0 else None


def harvest_pair(n: int, seed: int, baseline: Path, timeout: float, repeats: int = 2) -> list[dict[str, Any]]:
    """The before/after pair: the same `n` files (written once) harvested by this checkout's skillgit and by
    `baseline`'s, interleaved `repeats` times, each run in its own process; the rows keep each one's lowest CPU."""
    import shutil
    import tempfile

    from tests.sleep_synthetic import History

    folder = Path(tempfile.mkdtemp(prefix="skillgit-bench-harvest-pair-"))
    try:
        (folder / "repo").mkdir()
        subprocess.run(["git", "init", "-q", str(folder / "repo")], check=True)
        size = sum(p.stat().st_size for p in History(seed).write_claude(folder / "home", str(folder / "repo"), n))
        runs: dict[str, list[dict[str, Any]]] = {"this": [], "baseline": []}
        for _ in range(repeats):
            for name, code in (("this", ROOT), ("baseline", baseline)):
                say(f"harvest of the same {n} files by {name} ({code}) …")
                proc = subprocess.run([sys.executable, "-c", _HARVEST_AT, str(code), str(folder)], cwd=code,
                                      capture_output=True, text=True, timeout=timeout)
                if proc.returncode == 0:
                    runs[name].append(json.loads(proc.stdout))
        rows = []
        for name, got in runs.items():
            row: dict[str, Any] = {"algo": f"same {n} files: {name}", "requests": n, "mb": round(size / 1e6, 1)}
            if got:
                best = min(got, key=lambda r: r["cpu_s"])
                row.update(best, s_per_gb=round(best["cpu_s"] / (size / 1e9), 1),
                           cpu_runs=[r["cpu_s"] for r in got])
            else:
                row["note"] = "failed"
            rows.append(row)
        if "cpu_s" in rows[0] and "cpu_s" in rows[1]:
            rows[0]["cpu_ratio"] = round(rows[1]["cpu_s"] / max(rows[0]["cpu_s"], 1e-3), 2)
        # validity: both checkouts hand on and return the very same thing, on these files and on the fixtures
        outputs = {r["output"] for got in runs.values() for r in got}
        fixtures = {fixtures_output(code, timeout) for code in (ROOT, baseline)}
        rows[0]["same_output"] = len(outputs) == 1 and all(runs.values())
        rows[0]["same_fixtures"] = len(fixtures) == 1 and None not in fixtures
        return rows
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def same_units(found: list[list[int]], exact: list[list[int]]) -> float:
    """The share of units whose cluster is exactly the one the exact grouping gives them."""
    theirs = {u: tuple(c) for c in exact for u in c}
    total = sum(len(c) for c in exact) or 1
    return sum(len(c) for c in found if theirs.get(c[0]) == tuple(c)) / total


def measure(algo: str, n: int, seed: int, timeout: float, code: Path | None = None) -> dict[str, Any]:
    """One child measurement; with `code` (another checkout of skillgit), that checkout's own copy of this script
    measures with its own skillgit (the `baseline` rows)."""
    row: dict[str, Any] = {"algo": f"baseline {algo}" if code else algo, "requests": n}
    script, cwd = (code / "bench" / "sleep_scale.py", code) if code else (Path(__file__), ROOT)
    try:
        proc = subprocess.run([sys.executable, str(script), "--child", algo, str(n), str(seed)], capture_output=True,
                              text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        row["note"] = f"not finished in {timeout:.0f} s"
        return row
    if proc.returncode != 0:
        row["note"] = f"failed: {proc.stderr.strip().splitlines()[-1:]}"
        return row
    row.update(json.loads(proc.stdout))
    return row


def compare(rows: list[dict[str, Any]], sizes: list[int]) -> None:
    """Adds to the rows what they are measured against: agreement and ratios against the exact grouping, and the
    before/after ratios of the `--baseline` checkout's Miner."""
    by = {(r["algo"], r["requests"]): r for r in rows}
    for n in sizes:
        new, ref = by.get(("cluster", n)), by.get(("reference", n))
        exact = ref if ref and "digest" in ref else by.get(("uncapped", n))
        if new and exact and "digest" in new and "digest" in exact:
            new["agree"] = new["digest"] == exact["digest"]
            new["same_units"] = same_units(new["members"], exact["members"])
        if new and ref and "cpu_s" in new and "cpu_s" in ref:
            new["cpu_ratio"] = round(ref["cpu_s"] / max(new["cpu_s"], 1e-3), 1)
            new["mem_ratio"] = round(ref["grew_mb"] / max(new["grew_mb"], 0.1), 1)
        miner, base = by.get(("miner", n)), by.get(("baseline miner", n))
        if miner and base and "cpu_s" in miner and "cpu_s" in base:  # before/after: baseline ÷ this checkout
            miner["cpu_ratio"] = round(base["cpu_s"] / max(miner["cpu_s"], 1e-3), 2)
            miner["mem_ratio"] = round(base["grew_mb"] / max(miner["grew_mb"], 0.1), 2)
            miner["same_groups"] = miner["groups"] == base["groups"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="150 and 300 requests: seconds")
    ap.add_argument("--sizes", default="1000,2000,4000", help="request counts, comma-separated")
    ap.add_argument("--reference-max", type=int, default=4000, help="largest size the pairwise reference runs at")
    ap.add_argument("--exact-max", type=int, default=20000,
                    help="largest size the uncapped grouping runs at (the exact clusters, to compare with)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds a reference run may take")
    ap.add_argument("--harvest", type=int, default=200, help="session files for the harvest measurement (0: none)")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="another checkout of skillgit (e.g. `git worktree add /tmp/base main`): its Miner is "
                         "measured at every size in the same run, interleaved, for the before/after ratio")
    ap.add_argument("--harvest-baseline", type=int, default=0,
                    help="with --baseline: session files both checkouts harvest, for the before/after CPU ratio")
    ap.add_argument("--harvest-repeats", type=int, default=2,
                    help="with --harvest-baseline: how many times each checkout harvests the files (lowest CPU kept)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        algo, n, seed = args.child
        print(json.dumps(child(algo, int(n), int(seed))))
        return
    sizes = [150, 300] if args.quick else [int(s) for s in args.sizes.split(",") if s.strip()]
    rows = []
    for n in sizes:
        exact = "reference" if n <= args.reference_max else ("uncapped" if n <= args.exact_max else None)
        for algo in ("cluster", "miner", *((exact,) if exact else ())):
            say(f"{algo} at {n} requests …")
            rows.append(measure(algo, n, args.seed, args.timeout))
            if algo == "miner" and args.baseline:
                say(f"baseline miner ({args.baseline}) at {n} requests …")
                rows.append(measure("miner", n, args.seed, args.timeout, code=args.baseline.resolve()))
    harvest_n = 4 if args.quick else args.harvest
    harvest_row = None  # the JSON's "harvest" is this row only, never a before/after row (--harvest 0)
    if harvest_n:
        say(f"harvest of {harvest_n} session files …")
        harvest_row = measure("harvest", harvest_n, args.seed, args.timeout)
    pair_rows = []
    if args.baseline and args.harvest_baseline:
        pair_rows = harvest_pair(args.harvest_baseline, args.seed, args.baseline.resolve(), args.timeout,
                                 args.harvest_repeats)
    harvest_rows = ([harvest_row] if harvest_row else []) + pair_rows
    compare(rows, sizes)
    for row in rows:
        row.pop("members", None)
    print(table(rows, [("algo", "grouping", ""), ("requests", "requests", "d"), ("units", "units", "d"),
                       ("groups", "groups", "d"), ("cpu_s", "CPU s", ".2f"), ("wall_s", "wall s", ".2f"),
                       ("peak_mb", "peak RSS MB", ".0f"), ("grew_mb", "grew MB", ".0f"), ("exact", "exact", ""),
                       ("agree", "agrees", ""), ("same_units", "same cluster", ".1%"),
                       ("cpu_ratio", "ref/new CPU", ".2f"), ("mem_ratio", "ref/new MB", ".2f"), ("note", "note", "")]))
    if args.baseline:
        print("(miner rows: ref = the --baseline checkout's Miner, measured in this run)")
    if harvest_rows:
        print()
        print(table(harvest_rows, [("algo", "harvest", ""), ("decoder", "JSON decoder", ""),
                                   ("requests", "sessions", "d"), ("mb", "MB", ".1f"),
                                   ("kept", "kept", "d"), ("cpu_s", "first CPU s", ".2f"),
                                   ("s_per_gb", "s per GB", ".1f"), ("cpu_ratio", "× baseline CPU", ".2f"),
                                   ("incremental_cpu_s", "incremental CPU s", ".3f"),
                                   ("incremental_read", "files read", "d"), ("peak_mb", "peak RSS MB", ".0f"),
                                   ("grew_mb", "grew MB", ".0f"), ("masked", "secrets masked", "d"),
                                   ("planted_kept", "planted in kept text", "d"),
                                   ("leaked", "leaked", ""), ("valid", "valid", ""),
                                   ("same_output", "same output as baseline", ""),
                                   ("same_fixtures", "same on fixtures", ""), ("note", "note", "")]))
    write_result("sleep_scale", {"sizes": sizes, "seed": args.seed, "rows": rows,
                                 "harvest": harvest_row, "harvest_before_after": pair_rows}, args.out)


if __name__ == "__main__":
    main()
