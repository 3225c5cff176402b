"""The scanner's speed work finds exactly what its separate passes found: the scheme pass and the secret-word pass now
share one search (`Scanner._words`), text keywords that share a part are tested for it first, and the run keywords
are one trie whose branches each start with a character (`run_trie`); a reference scanner with the two passes apart,
a test per keyword and the run regex as it was must give the same spans on the secret corpus, on source and
transcript text, and on generated text made of the passes' own words, operators and spaces."""

from __future__ import annotations

import random
import re
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from skillgit import redact
from skillgit.secret_scan import _NAME_MAP, _RUN, _RUN_MAP, Scanner, _Hits, trie
from tests.secret_corpus import FORMATS

ROOT = Path(__file__).resolve().parents[1]


class _Separate(Scanner):
    """The scanner as it was: a scheme pass, then a word pass, each with its own search; an iterator of run
    keywords per run found by the run regex; one substring test per text keyword."""

    def spans(self, text: str) -> list[tuple[int, int, int]]:
        raw = text.encode("ascii", "replace")
        low = raw.lower()
        hits = _Hits(text, self.accept)
        # the flag pass first, as `Scanner.spans` runs it: which of two overlapping places of the assignment detector
        # runs depends on the order (it is not run at a place inside a span it accepted: `_Hits.run`), and the order
        # is not what is compared here (`token=--token API_KEY`: flags last left `API_KEY` to the earlier span)
        if b"--" in low:
            self._flags(low, hits)
        self._schemes_then_words(low, hits)
        self._each_run(raw, low, hits)
        for keyword, dets in self.text_keywords:
            if keyword in low:
                for det in dets:
                    hits.run(det, -1, det.pattern.finditer(text))
        return hits.found

    def _schemes_then_words(self, low: bytes, hits: _Hits) -> None:
        text = hits.text
        for scheme in self.scheme_re.finditer(low):
            at = scheme.start()
            if at and _NAME_MAP[low[at - 1]] == 97:
                continue
            for det in self.word_rules:
                if scheme.group("w").decode() in det.keywords:
                    hits.run(det, at, (det.pattern.match(text, at),))
        names = b""
        hit = self.word_re.search(low)
        while hit is not None:
            names = names or low.translate(_NAME_MAP)
            self._word(low, names, hit, hits)
            hit = self.word_re.search(low, hit.end("w"))

    def _each_run(self, raw: bytes, low: bytes, hits: _Hits) -> None:
        text, n = hits.text, len(hits.text)
        for token in _RUN.finditer(raw.translate(_RUN_MAP)):
            lo, hi = token.span()
            for kw in self.run_re.finditer(low, lo, hi):
                for det in self.run_rules.get(kw.group().decode(), ()):
                    hits.run(det, lo, det.pattern.finditer(text, max(0, lo - 4), min(n, hi + 4)))


def _scanners() -> tuple[Scanner, Scanner]:
    new = redact._get_scanner()
    old = _Separate(new.detectors, redact._WORDS, redact._accept)
    old.run_re = _RUN_RE_BEFORE
    return new, old


def _run_re_before() -> re.Pattern[bytes]:
    """The run regex as it was: a look-behind alternative of the short keywords, then the long keywords' trie (the
    engine tried a match at every character; `run_trie` starts every branch with a character)."""
    run = redact._get_scanner().run_rules
    short, long = [k for k in run if len(k) <= 3], [k for k in run if len(k) > 3]
    return re.compile(b"(?<![a-z0-9])(?:" + trie(short).encode() + b")|" + trie(long).encode())


_RUN_RE_BEFORE = _run_re_before()


NEW, OLD = _scanners()


def _outer(spans: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """`spans` without those that lie inside another span of the same detector: they mask nothing more (the joined
    search resumes after a secret it found; the separate word pass resumed after the word, and so also reported
    `token_` inside `token=token_`: hypothesis found `--token token=token_`)."""
    return sorted({s for s in spans if not any(o != s and o[2] == s[2] and o[0] <= s[0] and s[1] <= o[1]
                                               for o in spans)})


def _same(text: str) -> None:
    assert _outer(NEW.spans(text)) == _outer(OLD.spans(text)), text[:200]


def test_the_joined_passes_find_what_the_separate_passes_found_on_the_secret_corpus():
    for planted in FORMATS:
        for text in (planted.text, f"x {planted.text} y", f"token {planted.text}", f"{planted.text}\nBearer x"):
            _same(text)
    found = sum(len(NEW.spans(p.text)) for p in FORMATS)
    assert found >= len(FORMATS) - 2  # the corpus is full of secrets: the comparison is not vacuous


def test_the_joined_passes_find_what_the_separate_passes_found_on_source_and_docs():
    files = sorted((ROOT / "skillgit").rglob("*.py"))[::7] + sorted((ROOT / "docs").rglob("*.md"))[:5]
    spans = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        for start in range(0, len(text), 3000):
            _same(text[start:start + 3000])
            spans += len(NEW.spans(text[start:start + 3000]))
    assert spans > 0


_PIECES = ["token", "Token", "TOKEN", "bearer", "Bearer", "basic", "digest", "key", "api", "API_KEY", "pass",
           "password", "secret", "auth", "credential", "creds", "access", "private", "pwd", "my", "x", "_", "-",
           ".", " ", "  ", "\t", "\n", "=", " = ", ":", ": ", "=>", "||", "?=", ",", "'", '"', '\\"', "--",
           "--token", "abc123XYZ789def", "Zq8Rk2Lw9Xv4Tn7Pq", "sk-", "ghp_", "AKIA", "***"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=16).map("".join))
@example("token=--token API_KEY")
def test_the_joined_passes_find_what_the_separate_passes_found_on_generated_text(text):
    _same(text)


def test_a_span_nested_in_another_of_its_detector_is_all_the_passes_may_differ_in():
    text = "--token token=token_"  # (with the word pass before the flag pass, the reference also found (14, 20))
    assert sorted(OLD.spans(text)) == NEW.spans(text) == [(8, 20, 0)]
    assert _outer(OLD.spans(text)) == _outer(NEW.spans(text)) == [(8, 20, 0)]
    assert _outer([(0, 5, 1), (2, 4, 2)]) == [(0, 5, 1), (2, 4, 2)]  # another detector's span is kept


def test_the_joined_passes_on_random_mixtures_of_secrets_and_prose():
    rng = random.Random(7)
    words = re.findall(r"\w+|\W", (ROOT / "README.md").read_text(encoding="utf-8")[:20000])
    for _ in range(300):
        parts = [rng.choice(words) for _ in range(rng.randint(5, 60))]
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(FORMATS).text)
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(_PIECES))
        _same("".join(parts))


def test_every_text_keyword_sits_under_one_gate_it_contains():
    gated = [(gate, keyword) for gate, group in NEW.text_gates for keyword, _ in group]
    assert sorted(k for _, k in gated) == sorted(k for k, _ in NEW.text_keywords)
    assert all(gate in keyword for gate, keyword in gated)
    assert len(NEW.text_gates) < len(NEW.text_keywords)  # the vendored table has keywords that share a part
    for _gate, keyword in gated:  # a text holding only the keyword runs its rules in both scanners
        _same(f"see {keyword.decode()} here: x")


_RUN_PIECES = sorted(redact._get_scanner().run_rules) + ["a", "x9", "_", "-", ".", "/", "=", " ", "(", "0", "S", "K"]


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(_RUN_PIECES), max_size=12).map("".join))
def test_the_run_keywords_trie_matches_where_and_what_the_look_behind_regex_matched(text):
    # what `Scanner._runs` asks of it: successive searches within a span, from the start and from each match's end
    low = text.encode("ascii", "replace").lower()

    def found(regex: re.Pattern[bytes]) -> list[tuple[int, int, bytes]]:
        out = []
        for lo in range(0, len(low), 3):
            for hi in {len(low), min(len(low), lo + 9), min(len(low), lo + 21)}:
                hit = regex.search(low, lo, hi)
                while hit is not None:
                    out.append((lo, hi, *hit.span(), hit.group()))
                    hit = regex.search(low, hit.end(), hi)
        return out

    assert found(NEW.run_re) == found(_RUN_RE_BEFORE)
    _same(text)


_RUNS = ["sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "ghp_" + "x" * 36, "AKIAIOSFODNN7EXAMPLE",
         "/home/user/src/project/module_name.py", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
         "xoxb-123456789012-1234567890123-abcdefghijABCDEFGHIJklmn", "a3t" + "b" * 20, "npm_" + "a1" * 18]


def test_a_runs_detectors_are_remembered_alike_wherever_the_run_stands():
    # `Scanner._runs` remembers the detectors of each run it met; the same run after another character, at the
    # start or end of a text, after text that is not ASCII, or in another casing finds what the reference finds
    scanner = Scanner(NEW.detectors, redact._WORDS, redact._accept)
    for run in _RUNS:
        for before in ("", " ", "x ", "=", '"', "é", "…", "(", "\n", "key: "):
            for after in ("", " ", "\n", ")", '"', ".", "é"):
                for text in (before + run + after, before + run.upper() + after, f"{before}{run} {run}{after}"):
                    assert sorted(scanner.spans(text)) == sorted(OLD.spans(text)), text
    assert scanner._run_memo  # the second sight of each run came from the memo


def test_the_run_memo_is_bounded(monkeypatch):
    from skillgit import secret_scan

    monkeypatch.setattr(secret_scan, "RUN_MEMO_SIZE", 8)
    scanner = Scanner(NEW.detectors, redact._WORDS, redact._accept)
    for i in range(40):
        text = f"token_{i:04d}_abcdefghijklmnop ghp_{'y' * 36}"
        assert sorted(scanner.spans(text)) == sorted(OLD.spans(text))
        assert len(scanner._run_memo) <= 8


def test_an_allowlist_answer_is_remembered_per_pair_and_is_the_allowlists_own(monkeypatch):
    # `Detector.allowed` remembers its answer per (secret, whole match): the same answer its two regexes give, and
    # no more than ALLOW_MEMO_SIZE pairs per detector
    from dataclasses import replace

    from skillgit import secret_scan

    generic = redact._get_scanner().by_id["generic-api-key"]
    monkeypatch.setattr(secret_scan, "ALLOW_MEMO_SIZE", 5)
    fresh = replace(generic)  # a detector of its own, its memo empty
    secret_rx, match_rx = re.compile(str(generic.allow_secret.pattern)), re.compile(str(generic.allow_match.pattern))
    pairs = [("a1b2c3d4e5f6g7h8", f"api_key = {v}") for v in ("a1b2c3d4e5f6g7h8", "x")] + [
        ("true", "token: true"), ("/usr/local/bin/x", "key=/usr/local/bin/x"), ("Zq8xZq8xZq8xZq8x", "rapid=Zq8xZq8x"),
        ("${API_TOKEN}", "auth = ${API_TOKEN}"), ("s3cr3tvalue1234", "author: s3cr3tvalue1234")] + [
        (f"k{i:02d}x9Qz7Lw3Rt5Yp", f"secret_{i} = k{i:02d}x9Qz7Lw3Rt5Yp") for i in range(12)]
    answers = {bool(secret_rx.search(s) or match_rx.search(w)) for s, w in pairs}
    assert answers == {True, False}  # both answers are among the pairs
    for secret, whole in pairs + pairs[::-1]:
        assert fresh.allowed(secret, whole) == bool(secret_rx.search(secret) or match_rx.search(whole)), whole
        assert len(fresh.__dict__["_allow_memo"]) <= 5
