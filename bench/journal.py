"""Journal: the SQLite call journal (skillgit/llm/cache.py) against the JSON-lines journal it replaced.

    python bench/journal.py [--quick] [--threads 16] [--out PATH]

Two workloads, each written and then read back by both journals in the same run:
- many small calls: 10,000 replies of 2,000 characters (a long run's teacher and chat-student calls);
- few huge calls: 50 replies of 3,000,000 characters (a student that dumps whole files). The new journal refuses
  them at its default cap (`env.max_reply_chars` = 1,000,000: a tombstone is stored, the error is replayed);
  a third variant raises the cap to 4,000,000 to show what storing them compressed costs.
Replies are word-like text (compressible as model output is, unlike random bytes), different for every call
(`reply_text`).

Each phase runs in a fresh child process, so that memory and caches do not leak from one measurement to the next:
- write: open an empty journal and `put` every reply from `--threads` threads (the loop's worker pool);
  figure: puts per second. Then the parent measures the files on disk (database + WAL).
- read: open the journal (figure: seconds), `get` every key from `--threads` threads (figure: gets per second;
  open+gets: what a resumed run that needs every call once waits for), and peak RSS above the RSS just before the
  open, after the open and after the gets (figures: MB; the old journal holds every reply in memory).
Ratios are new ÷ old (for times, memory and disk below 1 is better; for throughputs above 1 is better).
Writes bench/results/journal.json.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import random
import resource
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

from benchlib import ROOT, say, table, workdir, write_result  # bench/ is sys.path[0] for a script; adds ROOT

from skillgit.llm.base import Reply
from skillgit.llm.cache import CallCache, ReplyTooLarge
from skillgit.types import Usage

USAGE = Usage(calls=1, prompt_tokens=900, completion_tokens=500, cost_usd=0.0004)
TOMBSTONE = 1 << 32  # counts replayed errors in the high bits of a sum of hits
VARIANTS = {"old": {}, "new": {"max_reply_chars": 1_000_000}, "new, cap 4M": {"max_reply_chars": 4_000_000}}
COLUMNS = [("workload", "workload", ""), ("journal", "journal", ""), ("open_s", "open s", ".4f"),
           ("puts_per_s", "puts/s", ",.0f"), ("gets_per_s", "gets/s", ",.0f"), ("resume_s", "open+gets s", ".3f"),
           ("disk_mb", "disk MB", ".2f"), ("open_mb", "open MB", ".1f"), ("peak_mb", "peak MB", ".1f"),
           ("stored", "stored", "")]
RATIO_COLUMNS = [("workload", "workload", ""), ("journal", "new ÷ old", ""), ("open_s", "open", ".4f"),
                 ("puts_per_s", "puts/s", ".2f"), ("gets_per_s", "gets/s", ".2f"), ("resume_s", "open+gets", ".3f"),
                 ("disk_mb", "disk", ".4f"), ("open_mb", "open mem", ".4f"), ("peak_mb", "peak mem", ".4f")]


# ---------------------------------------------------------------------------------------------- the old journal
class OldJournal:
    """skillgit's journal before the SQLite one, as it was (skillgit/llm/cache.py at commit 32ba81a): every
    entry loaded into a dict at open, one JSON line appended and fsync'ed per put under one lock."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._entries: dict[str, dict] = {}
        if path.exists():
            with path.open("r", encoding="utf-8") as fh:
                for line in fh:
                    try:
                        record = json.loads(line)
                        self._entries[record["k"]] = record
                    except (ValueError, KeyError, TypeError):
                        continue

    def get(self, key: str) -> Reply | None:
        with self._lock:
            record = self._entries.get(key)
        if record is None:
            return None
        return Reply(text=record["text"], usage=Usage(), model=record.get("model", ""),
                     trace=record.get("trace", ""), cached=True)

    def put(self, key: str, reply: Reply) -> None:
        record = {"k": key, "text": reply.text, "model": reply.model, "trace": reply.trace,
                  "usage": asdict(reply.usage)}
        with self._lock:
            self._entries[key] = record
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())


def open_journal(variant: str, folder: Path):
    if variant == "old":
        return OldJournal(folder / "calls.jsonl")
    return CallCache(folder / "calls.sqlite", **VARIANTS[variant])


def journal_files(variant: str, folder: Path) -> list[Path]:
    names = ["calls.jsonl"] if variant == "old" else ["calls.sqlite", "calls.sqlite-wal", "calls.sqlite-shm"]
    return [folder / n for n in names]


# ---------------------------------------------------------------------------------------------- workload
_VOCAB = ["".join(random.Random(i).choices("etaoinshrdlucmfwypvbgkqjxz", k=2 + i % 9)) for i in range(4000)]
_ZIPF = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(_VOCAB))))  # word frequencies as in text
_PUNCT = [" "] * 8 + [", ", ". ", "\n", " `", "` ", " (", ") ", " 42 ", " = "]
_BLOCK = 128 * 1024


def _words(rng: random.Random, chars: int) -> str:
    words = rng.choices(_VOCAB, cum_weights=_ZIPF, k=chars // 4 + 8)
    seps = rng.choices(_PUNCT, k=len(words))
    return "".join(w + s for w, s in zip(words, seps))[:chars]


@functools.lru_cache(maxsize=1)
def _blocks() -> tuple[str, ...]:
    return tuple(_words(random.Random(-b), _BLOCK) for b in range(16))


def reply_text(i: int, chars: int) -> str:
    """Word-like text, compressible as model output is (zlib: ~1.8x at 2 KB, ~2.5x at 3 MB), different per `i`.
    Long replies are 128 KB blocks in an order of their own: further apart than zlib's 32 KB window, so that
    compression finds no more than it would in fresh text, at a fraction of the cost of generating it."""
    rng = random.Random(i)
    if chars <= 2 * _BLOCK:
        return _words(rng, chars)
    blocks = _blocks()
    return "".join(blocks[rng.randrange(len(blocks))] for _ in range(chars // _BLOCK + 1))[:chars]


def key_of(i: int) -> str:
    return f"{i:064x}"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def in_threads(threads: int, n: int, fn) -> tuple[float, list[int]]:
    """Run fn(i) for i in range(n) on `threads` threads (each its own slice, no per-call futures); returns the
    seconds taken and the sum of fn's results per thread."""
    totals = [0] * threads

    def work(t: int) -> None:
        totals[t] = sum(fn(i) for i in range(t, n, threads))

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - t0, totals


def child_write(variant: str, folder: Path, n: int, chars: int, threads: int) -> dict:
    replies = [Reply(reply_text(i, chars), usage=USAGE, model="bench-model") for i in range(n)]
    journal = open_journal(variant, folder)

    def put(i: int) -> int:
        try:
            journal.put(key_of(i), replies[i])
        except ReplyTooLarge:
            return 1
        return 0

    put_s, refused = in_threads(threads, n, put)
    if isinstance(journal, CallCache):
        journal.close()
    return {"put_s": put_s, "refused": sum(refused)}


def child_read(variant: str, folder: Path, n: int, threads: int) -> dict:
    before = rss_mb()
    t0 = time.perf_counter()
    journal = open_journal(variant, folder)
    open_s = time.perf_counter() - t0
    open_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux

    def get(i: int) -> int:  # 1: a reply, TOMBSTONE: a replayed error, 0: nothing
        try:
            return 1 if journal.get(key_of(i)) is not None else 0
        except ReplyTooLarge:
            return TOMBSTONE

    get_s, found = in_threads(threads, n, get)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"open_s": open_s, "get_s": get_s, "open_mb": max(0.0, open_peak - before),
            "peak_mb": max(0.0, peak - before), "hits": sum(found) % TOMBSTONE,
            "replayed_errors": sum(found) // TOMBSTONE}


def in_child(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, env=env,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


# ---------------------------------------------------------------------------------------------- main
def measure(workload: str, variant: str, folder: Path, n: int, chars: int, threads: int) -> dict:
    folder.mkdir(parents=True)
    say(f"{workload}: {variant}: writing {n:,} replies of {chars:,} characters")
    wrote = in_child("write", variant, str(folder), str(n), str(chars), str(threads))
    disk = sum(p.stat().st_size for p in journal_files(variant, folder) if p.exists())
    say(f"{workload}: {variant}: reading them back")
    read = in_child("read", variant, str(folder), str(n), "0", str(threads))
    stored = f"{read['hits']:,} replies" + (f", {read['replayed_errors']:,} tombstones" if read["replayed_errors"]
                                            else "")
    if read["hits"] + read["replayed_errors"] != n:
        raise SystemExit(f"{variant} lost entries: {read}")
    return {"workload": workload, "journal": variant, "n": n, "chars": chars, "open_s": read["open_s"],
            "puts_per_s": n / wrote["put_s"], "gets_per_s": n / read["get_s"],
            "resume_s": read["open_s"] + read["get_s"], "disk_mb": disk / 2**20, "open_mb": read["open_mb"],
            "peak_mb": read["peak_mb"], "stored": stored, "refused": wrote["refused"]}


def ratios(rows: list[dict]) -> list[dict]:
    out = []
    for row in rows:
        old = next(r for r in rows if r["workload"] == row["workload"] and r["journal"] == "old")
        if row is old:
            continue
        out.append({"workload": row["workload"], "journal": row["journal"],
                    **{k: row[k] / old[k] if old[k] else None
                       for k in ("open_s", "puts_per_s", "gets_per_s", "resume_s", "disk_mb", "open_mb", "peak_mb")}})
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a tiny setting for tests (seconds)")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--child", nargs=6, default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        phase, variant, folder, n, chars, threads = a.child
        data = (child_write(variant, Path(folder), int(n), int(chars), int(threads)) if phase == "write"
                else child_read(variant, Path(folder), int(n), int(threads)))
        print(json.dumps(data))
        return data

    small_n, big_n = (300, 2) if a.quick else (10_000, 50)
    workloads = [(f"{small_n:,} × 2 KB", small_n, 2_000, ("old", "new")),
                 (f"{big_n:,} × 3 MB", big_n, 3_000_000, ("old", "new", "new, cap 4M"))]
    rows = []
    with workdir("journal", a.keep) as tmp:
        for w, (workload, n, chars, variants) in enumerate(workloads):
            for v, variant in enumerate(variants):
                rows.append(measure(workload, variant, tmp / f"w{w}v{v}", n, chars, a.threads))
    ratio_rows = ratios(rows)
    print(table(rows, COLUMNS))
    print()
    print(table(ratio_rows, RATIO_COLUMNS))
    result = {"settings": {"threads": a.threads, "quick": a.quick}, "rows": rows, "ratios": ratio_rows}
    write_result("journal", result, a.out)
    return result


if __name__ == "__main__":
    main()
