"""Redaction speed: `skillgit.redact.redact` and the sleep `Scrubber` on a large synthetic transcript text, against
the detector set skillgit shipped before the maintained table (commit b9b0829: five regexes, the environment walked
on every call), measured in the same run.

    python bench/redaction.py [--quick] [--mb 32] [--repeats 5]

The text is what sessions carry: prose requests, the repository's own source (code is where `key`, `token` and
`secret` are everywhere), pytest and git output (SHAs, UUIDs, paths under /home), JSON tool results with ids, and
one planted secret (tests/secret_corpus.py's 42 formats in turn) every ~40 KB, cut into strings of 100 B – 30 KB as
a harvest sees them. Reported: MB/s per implementation (median of the repeats, and their min–max), the ratio to the
baseline, the CPU seconds a 1 GB harvest would spend here, the cost of `secret_values()` per call (walked vs
cached), and a validity check: how many planted secrets survive each implementation (the new ones: must be 0) and
how many masks land on the text without secrets (false positives, per MB). Writes bench/results/redaction.json.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ROOT, say, table, write_result  # noqa: E402

from skillgit import redact as R  # noqa: E402
from skillgit.sleep.scrub import build_scrubber  # noqa: E402
from tests.secret_corpus import FORMATS  # noqa: E402

# ---------------------------------------------------------------------------------------------- the baseline
# skillgit/redact.py and skillgit/sleep/scrub.py as of b9b0829, verbatim in what they match
_LEGACY = (
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{12,}"), "sk-***"),
    (re.compile(r"\b(ghp_|gho_|ghu_|ghs_|github_pat_|xox[abpr]-|hf_)[A-Za-z0-9_\-]{8,}"), r"\1***"),
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9_\-.~+/=:]{8,}", re.IGNORECASE), r"\1 ***"),
    (re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:)(?!\*\*\*@)[^\s/@]+@", re.IGNORECASE), r"\1***@"),
    (re.compile(r"""(?i)(["']?\b(?:x-)?(?:api[-_]?key|access[-_]?token|auth[-_]?token|client[-_]?secret|"""
                r"""password|authorization)["']?\s*[:=]\s*["']?)(?!Bearer\b|Basic\b|\*\*\*)([^\s"',;}]{4,})"""),
     r"\1***"),
)
_SEP = r"(?:\\\\|\\|/)"
_LEGACY_SCRUB = (
    (re.compile(r"(?<![\w.%+-])(?!git@)[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
     "<email>"),
    (re.compile(r"(?<![\w])[A-Za-z]:" + _SEP + "Users" + _SEP + r"(?:[A-Za-z0-9._ -]*[A-Za-z0-9_-]" + _SEP
                + r"|[A-Za-z0-9._-]+(?![\w.-]))"), "~/"),
    (re.compile(r"(?<![\w.~-])/(?:home|Users)/[A-Za-z0-9._-]+(?:/|(?![\w.-]))"), "~/"),
    (re.compile(r"(?<![\w.~-])/root(?:/|(?![\w.-]))"), "~/"),
)


def legacy_values() -> list[str]:
    known = R.registered()
    values = {v for k, v in os.environ.items() if known.is_secret_name(k) and v and len(v) >= 8} | known.values
    return sorted(values, key=len, reverse=True)


def legacy_redact(text: str) -> str:
    for value in legacy_values():  # the environment walked for every string
        if value in text:
            text = text.replace(value, "***")
    for pattern, repl in _LEGACY:
        text = pattern.sub(repl, text)
    return text


def legacy_scrub(text: str) -> str:
    text = legacy_redact(text)
    for pattern, repl in _LEGACY_SCRUB:
        text = pattern.sub(repl, text)
    return text


# ---------------------------------------------------------------------------------------------- the text
WORDS = ("the date parsing test fails again after the refactor please fix it and keep the public api the same "
         "why does the token refresh break when the session key expires explain the retry logic add a test for "
         "the config loader make the secret store read from the environment rename the auth helper").split()


def synthetic(megabytes: float, seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    """(strings, the secrets planted in them, strings without any secret)."""
    rng = random.Random(seed)
    source = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "skillgit").rglob("*.py"))
              if p.name != "secret_rules.py"]
    planted: list[str] = []

    def prose() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60))).capitalize() + "."

    def code() -> str:
        text = rng.choice(source)
        start = rng.randrange(max(1, len(text) - 4000))
        return text[start:start + rng.choice((400, 1500, 4000))]

    def pytest_log() -> str:
        lines = [f"tests/test_{rng.choice(WORDS)}.py::test_{rng.choice(WORDS)}_{i} PASSED [{i}%]" for i in range(30)]
        where = f"/home/dev/proj/src/{rng.choice(WORDS)}.py:{rng.randint(1, 900)}"
        return "\n".join(lines + [f"E   AssertionError at {where}", "=== 1 failed, 29 passed in 1.42s ==="])

    def git_log() -> str:
        return "\n".join(f"commit {rng.getrandbits(160):040x}\nAuthor: Dev <dev@example.com>\n\n    {prose()}\n"
                         for _ in range(8))

    def json_result() -> str:
        items = [f'{{"id": "{rng.getrandbits(128):032x}", "uuid": "{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-'
                 f'4{rng.getrandbits(12):03x}-a{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}", '
                 f'"name": "{rng.choice(WORDS)}", "path": "/Users/dev/app/{rng.choice(WORDS)}.ts", "max_tokens": 512}}'
                 for _ in range(20)]
        return "[" + ", ".join(items) + "]"

    makers = (prose, prose, code, code, code, pytest_log, git_log, json_result)
    strings: list[str] = []
    clean: list[str] = []
    total, next_secret, n = 0, 20_000, 0
    while total < megabytes * 1e6:
        text = rng.choice(makers)()
        if total >= next_secret:
            fmt = FORMATS[n % len(FORMATS)]
            text += f"\n{fmt.text}\n"
            planted.extend(fmt.leaks)
            next_secret, n = next_secret + 40_000, n + 1
        else:
            clean.append(text)
        strings.append(text)
        total += len(text)
    return strings, planted, clean


# ---------------------------------------------------------------------------------------------- measuring
def rate(fn: Callable[[str], str], strings: list[str], repeats: int) -> tuple[float, float, float]:
    """(median, min, max) MB/s of CPU time over `repeats` passes."""
    size = sum(map(len, strings)) / 1e6
    rates = []
    for _ in range(repeats):
        start = time.process_time()
        for s in strings:
            fn(s)
        rates.append(size / max(time.process_time() - start, 1e-9))
    return statistics.median(rates), min(rates), max(rates)


def survivors(fn: Callable[[str], str], strings: Iterable[str], planted: list[str]) -> int:
    out = "\n".join(fn(s) for s in strings)
    return sum(leak in out for leak in planted)


def masks_per_mb(fn: Callable[[str], str], clean: list[str]) -> float:
    size = sum(map(len, clean)) / 1e6
    return sum(fn(s).count("***") - s.count("***") for s in clean) / max(size, 1e-9)


def per_call_us(fn: Callable[[], object], n: int = 2000) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 MB, 2 repeats: seconds")
    parser.add_argument("--mb", type=float, default=32.0, help="megabytes of text (default 32)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    megabytes, repeats = (1.0, 2) if args.quick else (args.mb, args.repeats)
    for i in range(60):  # a realistic environment: a few dozen variables, some of them credentials
        os.environ.setdefault(f"BENCH_SETTING_{i}", f"value-{i}")
    os.environ.setdefault("BENCH_SERVICE_TOKEN", "bench-token-value-0123456789")
    say(f"building {megabytes:g} MB of synthetic transcript text")
    strings, planted, clean = synthetic(megabytes)
    R.redact("warm up")  # the detector table compiles once per process (~0.2 s): not a per-text cost
    scrubber = build_scrubber(environ=dict(os.environ))
    impls: dict[str, Callable[[str], str]] = {"redact (b9b0829 baseline)": legacy_redact, "redact": R.redact,
                                              "scrub (b9b0829 baseline)": legacy_scrub, "scrub": scrubber.text}
    rows = []
    for name, fn in impls.items():
        say(f"measuring {name}")
        median, low, high = rate(fn, strings, repeats)
        rows.append({"implementation": name, "mb_s": median, "mb_s_min": low, "mb_s_max": high,
                     "cpu_s_per_gb": 1000 / median, "survivors": survivors(fn, strings, planted),
                     "planted": len(planted), "masks_per_mb_clean": masks_per_mb(fn, clean[:2000])})
    base = {r["implementation"].split()[0]: r["mb_s"] for r in rows if "baseline" in r["implementation"]}
    for r in rows:
        r["ratio"] = r["mb_s"] / base[r["implementation"].split()[0]]
    values = {"walked_us": per_call_us(legacy_values), "cached_us": per_call_us(R.secret_values)}
    print(table(rows, [("implementation", "implementation", "s"), ("mb_s", "MB/s", ".1f"),
                       ("mb_s_min", "min", ".1f"), ("mb_s_max", "max", ".1f"), ("ratio", "× baseline", ".2f"),
                       ("cpu_s_per_gb", "CPU s / GB", ".0f"), ("survivors", "secrets left", "d"),
                       ("planted", "of", "d"), ("masks_per_mb_clean", "masks/MB clean", ".2f")]))
    print(f"\nsecret_values(): {values['walked_us']:.1f} µs walked per call (baseline), "
          f"{values['cached_us']:.2f} µs cached; {len(strings)} strings, {sum(map(len, strings)) / 1e6:.1f} MB")
    valid = all(r["survivors"] == 0 for r in rows if "baseline" not in r["implementation"])
    print("validity: " + ("every planted secret masked by the new implementations" if valid else
                          "FAILED: a planted secret survived the new redactor"))
    write_result("redaction", {"size_mb": sum(map(len, strings)) / 1e6, "strings": len(strings), "repeats": repeats,
                               "rows": rows, "secret_values_us": values, "valid": valid}, args.out)
    return 0 if valid else 1


if __name__ == "__main__":
    sys.exit(main())
