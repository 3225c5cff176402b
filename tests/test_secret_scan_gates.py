"""The Rust gates (`secret_scan.rust_search`) only ever skip work that finds nothing: on a text of at least
`GATE_CHARS` characters the scanner's word, flag and text-keyword passes and the scrubber's address and home steps
run only when a Rust regex says a place of theirs may be there. Every text those passes would search is one the gate
takes (a superset, whatever the characters: case, non-ASCII, lone surrogates), and the spans and the scrubbed text
are the ones the ungated passes give."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from skillgit import redact, secret_scan
from skillgit.secret_scan import GATE_CHARS, rust_search
from skillgit.sleep.scrub import Scrubber, build_scrubber
from tests.secret_corpus import FORMATS

ROOT = Path(__file__).resolve().parents[1]
SCANNER = redact._get_scanner()
FILLER = "plain words of prose and code, nothing to see here; " * 5  # makes a text long enough to be gated
assert len(FILLER) >= GATE_CHARS

# the passes' own words, operators and spaces; characters the lower-cased ASCII copy turns into `?` or that Unicode
# case folding maps to an ASCII letter (Kelvin sign, long s); lone surrogates, which Rust cannot read
_PIECES = ["token", "Token", "TOKEN", "bearer", "Bearer", "basic", "digest", "key", "api", "API_KEY", "pass", "pwd",
           "secret", "auth", "credential", "creds", "access", "private", "x", "_", "-", ".", " ", "\t", "\n", "\r",
           "\x0b", "\x0c", "=", ":", ">", "||", "?=", ",", "'", '"', "\\", "--", "--token ", "Zq8Rk2Lw9Xv4Tn7Pq",
           "é", "…", "€=", "\u212a", "\u017f", "\u00a0", "\u2028", "\ud800", "\udfff", "://", "curl", "-----BEGIN",
           "WebHook", "Airtable", "facebook", "sntrys_eyJpYXQiO", ".contribsys.com", "@", "a@b.io", "/home/", "/root",
           "/Users/", "sers", "SERS", "C:\\Users\\", "***"]


def _ungated(text: str) -> list[tuple[int, int, int]]:
    saved = list(SCANNER._gated())
    SCANNER._rust[:] = [None, None, None]
    try:
        return SCANNER.spans(text)
    finally:
        SCANNER._rust[:] = saved


def test_the_gates_are_made_of_rust_here():
    # the default install has pydantic-core (the SDKs' pydantic 2): every gate is a Rust test, not skipped
    assert all(gate is not None for gate in SCANNER._gated())
    assert rust_search("(?i)a[?\\x{80}-\\x{10FFFF}]=") is not None


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=14).map("".join))
def test_every_text_a_pass_would_search_is_one_its_gate_takes(text):
    words, flags, texts = SCANNER._gated()
    assert words is not None and flags is not None and texts is not None
    low = text.encode("ascii", "replace").lower()
    if SCANNER.either_re.search(low):
        assert words(text)
    if SCANNER.flag_re.search(low):
        assert flags(text)
    if any(gate in low for gate, _ in SCANNER.text_gates):
        assert texts(text)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=14).map("".join), st.integers(0, 2))
def test_gated_spans_are_the_ungated_spans(text, where):
    long = (FILLER + text, text + FILLER, FILLER[:100] + text + FILLER[:100])[where]
    assert SCANNER.spans(long) == _ungated(long)


def test_gated_spans_are_the_ungated_spans_on_the_secret_corpus_source_and_docs():
    found = 0
    for planted in FORMATS:
        for text in (FILLER + planted.text, planted.text + "\n" + FILLER, f"{FILLER}token {planted.text}"):
            assert SCANNER.spans(text) == _ungated(text)
            found += bool(SCANNER.spans(text))
    assert found >= len(FORMATS)  # not vacuous: the corpus is full of secrets
    files = sorted((ROOT / "skillgit").rglob("*.py"))[::5] + sorted((ROOT / "docs").rglob("*.md"))[:5]
    for path in files:
        text = path.read_text(encoding="utf-8")
        for start in range(0, len(text), 2000):
            assert SCANNER.spans(text[start:start + 2000]) == _ungated(text[start:start + 2000])


def _scrub_both(scrubber: Scrubber, text: str) -> None:
    gated = scrubber.scrub(text)
    saved = list(scrubber._gate)
    scrubber._gate[:] = [None]
    try:
        assert gated == scrubber.scrub(text), text[:200]
    finally:
        scrubber._gate[:] = saved


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_PIECES + ["/home/alice/src", "/Users/bob/x", "/srv/me/project/", "C:\\Users\\Ann\\",
                                           "USERS", "carol@example.com"]), max_size=10).map("".join))
def test_the_scrubbers_address_and_home_gate_changes_nothing(text):
    scrubber = build_scrubber(None, homes=["/srv/me", "/root"], environ={})
    _scrub_both(scrubber, FILLER + text)
    _scrub_both(scrubber, text + FILLER)
    assert scrubber._gate and scrubber._gate[0] is not None


def test_a_text_rust_cannot_read_is_scanned_and_scrubbed_all_the_same():
    # a lone surrogate makes the text invalid UTF-8: pydantic-core's test says "no match" for it, so the gate must
    # say "match" instead, or the secret, the address and the home path below would be kept (they were, without it)
    text = FILLER + "\ud800 api_key = 'Zq8Rk2Lw9Xv4Tn7PqZ3'\nmail carol@example.com at /home/alice/notes\n" + FILLER
    assert SCANNER._gated()[0] is not None and SCANNER._gated()[0](text)
    clean, counts = build_scrubber(None, homes=[], environ={}).scrub(text)
    assert "Zq8Rk2Lw9Xv4Tn7PqZ3" not in clean and "carol@" not in clean and "/home/alice" not in clean
    assert counts.secrets == 1 and counts.emails == 1 and counts.home_paths == 1


def test_without_a_usable_pydantic_core_the_passes_run_ungated(monkeypatch):
    monkeypatch.setattr(secret_scan, "RUST_MIN", (999, 0))
    assert rust_search("abc") is None
    scanner = secret_scan.Scanner(SCANNER.detectors, redact._WORDS, redact._accept)
    text = FILLER + "token = 'Zq8Rk2Lw9Xv4Tn7PqZ3'"
    assert scanner._gated() == [None, None, None] and scanner.spans(text) == _ungated(text) != []
