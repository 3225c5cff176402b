"""The engine that runs `skillgit.redact`'s detector table over a text. It decides nothing about what a secret is
(that is the table's and `redact`'s post-check's business); it decides where each detector is worth running.

Contract
- `Detector` is one row: an id, a pattern (a vendored one compiles on first use), a `gate` saying where it runs,
  the `keywords` that gate it, which group is the secret, a minimum Shannon entropy, how many leading characters
  stay readable, allowlists. Gates: "word" — anchored at a keyword of it followed by a space (`Bearer X`);
  "name" — anchored at the start of the name just before an assignment operator within reach of a secret word
  (`DB_PASSWORD=…`, `"api_key": "…"`), or at a `--flag` holding a secret word (`--token …`); "context" —
  anchored at one of its keywords in or just before such a name (gitleaks' `vendor … = value` rules and its
  generic rule); "run" — inside a run of token characters that holds one of its keywords (`AKIA…`, `ghp_…`);
  "text" — the whole text, when one of its keywords occurs (`-----BEGIN`, `://`).
- `vendored(rules, global_allow)` turns `skillgit.secret_rules`' rows (gitleaks' maintained set) into detectors,
  choosing each rule's gate from its pattern.
- `Scanner(detectors, words, accept).spans(text)` returns (start, end, characters kept) for every match `accept`
  takes. A few cheap passes over the lower-cased ASCII bytes find the candidates: a trie of `words` followed by an
  assignment operator, and the word rules' keywords followed by a space (one search finds the places of both);
  `--` flags holding a word; runs of at least `MIN_RUN` token characters (a byte translation and a substring
  search), then a trie of the run keywords over those runs only (keywords of ≤ 3 characters only where a token
  starts; a run's detectors depend on its characters only and are remembered, `RUN_MEMO_SIZE` runs at most); and
  a substring test per text keyword (keywords sharing a part are tested for it first). A detector runs only where a
  pass put it, once per place. On a text of at least `GATE_CHARS` characters, the word, flag and text-keyword passes
  run only when a Rust regex (`rust_search`) whose matches include theirs finds one: it tells in ~1 ns per
  character what the passes' own searches take ~15 to tell, and most texts hold no place at all.
- `rust_search(pattern)` is a test of whether a Rust-syntax regex matches anywhere in a text, made of pydantic-core's
  string validator (the SDKs' pydantic 2 installs it); None without it. A text Rust cannot read (a lone surrogate)
  is said to match: such a test only ever skips a pass that finds nothing.
- `mask(text, spans, token)` merges overlapping spans and replaces each with `token`, after its kept prefix (and
  can say which parts it replaced).
Every pattern is Python `re`; nothing here raises on any input text (a pattern error is a bug in the table).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

MIN_RUN = 16
_RUN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.~+/=%|"
_RUN_MAP = bytes(ord("a") if c in _RUN_CHARS else ord(" ") for c in range(256))
_RUN = re.compile(b"a" * MIN_RUN + b"a*")  # a run (the scanner finds them with `_RUN_START` and the next space)
_RUN_START = b"a" * MIN_RUN
RUN_MEMO_SIZE = 16384  # runs whose detectors a scanner remembers (paths and names recur); emptied when full
ALLOW_MEMO_SIZE = 4096  # (secret, match) pairs whose allowlist answer a detector remembers; emptied when full
# after a secret word: within a name's length an assignment operator (gitleaks' set, plus JSON-escaped quotes)
_WORD_TAIL = rb"""(?P<nm>[ \t\w.\-]{0,30}?)[\s'"\\]{0,4}(?:=|>|:|\|\||\?=|,)"""
# name characters → "a", the rest → " ": a name's start is found with bytes.rfind, not a backtracking regex
_NAME_MAP = bytes(ord("a") if c in b"abcdefghijklmnopqrstuvwxyz0123456789_.-" else ord(" ") for c in range(256))
_MAX_NAME = 80
_ASSIGNMENT_OP = "(?:=|>|:{1,3}=|"  # how gitleaks' keyword rules spell the operator before the value
_GITLEAKS_END = r"""(?:[\x60'"\s;]|\\[nr]|$)"""  # how they spell the end of a secret


def entropy(text: str) -> float:
    """Shannon entropy of `text` in bits per character."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


@dataclass(frozen=True)
class Detector:
    id: str
    source: re.Pattern[str] | str  # a vendored rule's pattern is compiled the first time a gate sends text to it
    gate: str  # "word" | "name" | "context" | "run" | "text"
    keywords: tuple[str, ...] = ()  # lower case
    group: int | str | tuple[str, ...] = 0  # 0: the first group that matched, else the whole match; -1: the
    # whole match; a name or a tuple of names: the first of them that matched
    min_entropy: float = 0.0
    keep: int = 0  # leading characters kept readable (a public prefix: `sk-`); -1: as long as group 1
    allow_secret: re.Pattern[str] | str | None = None  # an allowlist tested on the secret
    allow_match: re.Pattern[str] | str | None = None  # an allowlist tested on the whole match
    check: str = ""  # a post-check the accepting function knows by name ("assign", "scheme")
    # what continues an accepted span past a length cap in `source` (the assignment's bare value): the span is
    # extended over it, and the detector is not run again at a place inside a span it already accepted
    tail: re.Pattern[str] | None = None

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """`source` compiled (a scanner reads it at every place a gate sends a detector: kept in the instance)."""
        return self._compiled("source")  # type: ignore[return-value]

    def _compiled(self, name: str) -> re.Pattern[str] | None:
        value = getattr(self, name)
        if isinstance(value, str):
            value = re.compile(value)
            object.__setattr__(self, name, value)  # a cache: the same pattern, compiled once
        return value

    def span(self, match: re.Match[str]) -> tuple[int, int] | None:
        if self.group == -1:
            return match.span()
        if self.group:
            names = self.group if isinstance(self.group, tuple) else (self.group,)
            return next((match.span(g) for g in names if match.group(g)), None)
        for index in range(1, (match.re.groups or 0) + 1):
            if match.group(index):
                return match.span(index)
        return match.span()

    def allowed(self, secret: str, whole: str) -> bool:
        """True when an allowlist of the rule lets this finding through (a placeholder, a key *name*, …). The
        answer depends on the two strings only: it is remembered per detector (`ALLOW_MEMO_SIZE` pairs; gitleaks'
        match allowlists are alternations the regex engine tries at every character, and code repeats its lines)."""
        memo: dict[tuple[str, str], bool] | None = self.__dict__.get("_allow_memo")
        if memo is None:
            memo = {}
            object.__setattr__(self, "_allow_memo", memo)  # a cache, like `_compiled`'s: not a field
        found = memo.get((secret, whole))
        if found is None:
            allow_secret, allow_match = self._compiled("allow_secret"), self._compiled("allow_match")
            found = bool((allow_secret is not None and allow_secret.search(secret))
                         or (allow_match is not None and allow_match.search(whole)))
            if len(memo) >= ALLOW_MEMO_SIZE:
                memo.clear()
            memo[(secret, whole)] = found
        return found


def either(patterns: Iterable[str]) -> str:
    """One pattern matching any of `patterns` (a leading global flag group becomes a scoped one)."""
    return "|".join(re.sub(r"^\(\?([a-z]+)\)(.*)$", r"(?\1:\2)", rx, flags=re.S) if re.match(r"\(\?[a-z]+\)", rx)
                    else f"(?:{rx})" for rx in patterns if rx)


def vendored(rules: Iterable[tuple[Any, ...]], global_allow: Iterable[str]) -> list[Detector]:
    """Detectors for rows (id, pattern, group, entropy, keywords, allow-secret, allow-match) of a vendored set."""
    common = either(global_allow)
    out = []
    for rid, regex, group, min_entropy, keywords, allow_secret, allow_match in rules:
        head = _secret_source(regex)
        if _ASSIGNMENT_OP in regex:  # a keyword, then an assignment, then the value
            gates = {"context": keywords}
        elif re.search(r"\\s|\\S|\[\^|[ .]\*|\(\?s|\\n", head):  # the secret may hold a space: no run holds it
            gates = {"text": keywords}
        else:  # a token: gated by the keywords inside it (run); by a vendor's name (text) only when none is
            # inside it. It ends where any token ends (`….env`, `…_old`), not only at gitleaks' code delimiters.
            regex = regex.replace(_GITLEAKS_END, r"(?![A-Za-z0-9])")
            inside = tuple(k for k in keywords if k in head or _in_order(k, head))
            gates = {"run": inside} if inside else {"text": keywords}
        secret_allow = "|".join(rx for rx in (either(allow_secret), common) if rx)
        match_allow = either(allow_match)
        for gate, words in gates.items():
            if words:
                out.append(Detector(rid, regex, gate, tuple(words), group, min_entropy,
                                    allow_secret=secret_allow or None, allow_match=match_allow or None))
    return out


def _in_order(keyword: str, head: str) -> bool:
    """True when the pattern spells `keyword` with alternatives (`(?:ghu|ghs)_`, `xox[os]-`, `(?:sk|rk)_(?:test`):
    its characters appear in order near the start of the pattern's source."""
    it = iter(head[:80])
    return all(ch in it for ch in keyword)


def _secret_source(regex: str) -> str:
    """The lower-cased source of a pattern's first capturing group (or the whole pattern), escapes removed."""
    i, n, start, in_class = 0, len(regex), None, False
    while i < n and start is None:
        c = regex[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(" and not regex.startswith("(?", i):
            start = i
        i += 1
    if start is None:
        return regex.replace("\\", "").lower()
    depth, i = 0, start
    while i < n:
        if regex[i] == "\\":
            i += 2
            continue
        depth += {"(": 1, ")": -1}.get(regex[i], 0)
        if depth == 0:
            break
        i += 1
    return regex[start:i + 1].replace("\\", "").lower()


def trie(words: Iterable[str]) -> str:
    """A regex matching any of `words`, factored as a trie (Python's engine tries alternatives one by one)."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = "(?:" + "|".join(alts) + ")" if len(alts) > 1 or "" in node else alts[0]
        return body + "?" if "" in node else body

    return emit(root) or "(?!)"


def run_trie(short: Iterable[str], long: Iterable[str]) -> str:
    """The regex `(?<![a-z0-9])(?:trie(short))|trie(long)` as one trie each of whose branches starts with a
    character, so that the regex engine skips to the characters a keyword starts with (with the look-behind first,
    it tried a match at every character). A short keyword checks the character before it once its first character
    matched, and is tried before the long keywords sharing that character, as the first alternative was."""
    root: dict[str, Any] = {}
    words = [(k, True) for k in short] + [(k, False) for k in long]
    for word, is_short in words:
        node = root.setdefault(re.escape(word[0]), {})
        if is_short:
            node = node.setdefault("(?<![a-z0-9]" + re.escape(word[0]) + ")", {})
        for ch in word[1:]:
            node = node.setdefault(re.escape(ch), {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        pieces = sorted((p for p in node if p), key=lambda p: (not p.startswith("(?<"), p))  # the check first
        alts = [piece + emit(node[piece]) for piece in pieces]
        if not alts:
            return ""
        body = "(?:" + "|".join(alts) + ")" if len(alts) > 1 or "" in node else alts[0]
        return body + "?" if "" in node else body

    return emit(root) or "(?!)"


Accept = Callable[[Detector, str, "re.Match[str]", tuple[int, int]], bool]
GATE_CHARS = 200  # texts at least this long go through the Rust gates first (shorter: the searches cost as little)
RUST_MIN = (2, 50)  # the pydantic-core release `rust_search` was checked against (tests/test_secret_scan_passes.py)


def rust_search(pattern: str) -> Callable[[str], bool] | None:
    """`bool(re.search(pattern, text))` in Rust's regex crate (its syntax; no look-arounds), through the validator
    pydantic-core makes of a string pattern; None without pydantic-core (of at least `RUST_MIN`) or when the pattern
    does not compile. A text that is not valid Unicode for Rust (a lone surrogate) is said to match."""
    try:
        import pydantic_core
        from pydantic_core import SchemaValidator, core_schema

        found = str(getattr(pydantic_core, "__version__", "0")).split(".")[:2]
        if tuple(int(part) if part.isdigit() else 0 for part in found) < RUST_MIN:
            return None
        test = SchemaValidator(core_schema.str_schema(pattern=pattern, regex_engine="rust-regex")).isinstance_python
    except Exception:  # noqa: BLE001 - no pydantic-core, or a pattern it refuses: the passes run as they did
        return None

    def search(text: str) -> bool:
        if test(text):
            return True
        if text.isascii():
            return False
        try:  # Rust reads UTF-8: a lone surrogate makes the text unreadable to it, and then the pass runs
            text.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    return search


def rust_literal(literal: bytes | str) -> str:
    """`literal` in Rust's regex syntax: letters and digits as they are, every other character escaped, except that
    a `?` of a bytes literal (sought in a text's ASCII copy, where `?` also stands for any other character) is
    `?` or any character beyond ASCII."""
    if isinstance(literal, bytes):
        return "".join("[?\\x{80}-\\x{10FFFF}]" if ch == "?" else rust_literal(ch) for ch in literal.decode("latin-1"))
    return "".join(ch if ch.isascii() and ch.isalnum() else f"\\x{{{ord(ch):X}}}" for ch in literal)


def _rust_gates(words: Iterable[str], spaced: Iterable[str], text_gates: Iterable[bytes]) -> tuple[str, str, str]:
    """The Rust patterns whose matches in a text include every place `either_re`, `flag_re` and the text keywords'
    substring tests find in its lower-cased ASCII copy: each element made a class of every character that copy
    turns into one it matches (a letter either case, `?` any character beyond ASCII, `\\s` ASCII's whitespace),
    look-aheads made the character they look at, laziness dropped (a search only says whether)."""
    names = "(?:" + "|".join(sorted(map(rust_literal, set(words)))) + ")"
    either = "(?:" + "|".join(sorted(map(rust_literal, set(words) | set(spaced)))) + ")"
    tail = "[ \\t0-9a-z_.-]{0,30}[ \\t\\n\\r\\x0B\\x0C'\"\\\\]{0,4}(?:=|>|:|\\|\\||[?\\x{80}-\\x{10FFFF}]=|,)"
    return ("(?i)" + either + "(?:" + tail + "|[ \\t]+[^ \\t\\n\\r\\x0B\\x0C])",
            "(?i)--[0-9a-z_.-]{0,40}" + names + "[0-9a-z_.-]{0,20}[ \\t]+[^ \\t\\n\\r\\x0B\\x0C-]",
            "(?i)(?:" + "|".join(rust_literal(gate) for gate in text_gates) + ")")


class Scanner:
    """A detector table compiled into its gates (see the module contract)."""

    def __init__(self, detectors: Iterable[Detector], words: Iterable[str], accept: Accept) -> None:
        self.detectors = tuple(detectors)
        self.accept = accept
        self.by_id = {d.id: d for d in self.detectors}
        self.word_rules = tuple(d for d in self.detectors if d.gate == "word")
        self.name_rules = tuple(d for d in self.detectors if d.gate == "name")
        context: dict[str, list[Detector]] = {}
        run: dict[str, list[Detector]] = {}
        self.text_rules: tuple[tuple[bytes, Detector], ...] = tuple(
            (k.encode(), d) for d in self.detectors if d.gate == "text" for k in d.keywords)
        self.text_keywords = _by_keyword(self.text_rules)  # one substring test per keyword (rules share `curl`)
        self.text_gates = _gates(self.text_keywords)  # keywords sharing a part are tested for it first
        for det in self.detectors:
            for k in det.keywords if det.gate in ("context", "run") else ():
                (context if det.gate == "context" else run).setdefault(k, []).append(det)
        self.context_rules = {k: tuple(v) for k, v in context.items()}
        # a keyword also runs the rules of every keyword it starts with (`xoxb-` and `xoxb`)
        self.run_rules = {k: tuple(dict.fromkeys(d for p, ds in run.items() if k.startswith(p) for d in ds))
                          for k in run}
        words = tuple(words)
        self.word_re = re.compile(b"(?P<w>" + trie(words).encode() + b")" + _WORD_TAIL)
        # a word rule's keyword then a space (`Bearer X`); a flag holding a secret word then a space (`--token X`)
        spaced = {k for d in self.word_rules for k in d.keywords}
        self.scheme_re = re.compile(b"(?P<w>" + trie(spaced).encode() + rb")[ \t]+(?=[^\s])")
        # one search finds the places of both passes (see `_words`): a word of either, then an assignment or a space
        self.either_re = re.compile(b"(?P<w>" + trie(set(words) | spaced).encode() + b")(?:" + _WORD_TAIL
                                    + rb"|[ \t]+(?=[^\s]))")
        self.flag_re = re.compile(b"--[a-z0-9_.\\-]{0,40}?(?:" + trie(words).encode() + b")[a-z0-9_.\\-]{0,20}[ \t]+"
                                  b"(?=[^\\s-])")
        self.context_re = re.compile(trie(context).encode())
        # a keyword of three characters or fewer (`sk`, `s.`, `ey`) is inside many words: only where a token starts
        short, long = [k for k in run if len(k) <= 3], [k for k in run if len(k) > 3]
        self.run_re = re.compile(run_trie(short, long).encode())
        self._run_memo: dict[bytes, tuple[Detector, ...]] = {}
        self.rust_patterns = _rust_gates(words, spaced, (gate for gate, _ in self.text_gates))
        self._rust: list[Callable[[str], bool] | None] = []  # made on the first long text (`_gated`)

    def _gated(self) -> list[Callable[[str], bool] | None]:
        """The Rust tests of `rust_patterns` (words, flags, text keywords; None: that pass runs ungated)."""
        if not self._rust:
            self._rust[:] = [rust_search(pattern) for pattern in self.rust_patterns]
        return self._rust

    def spans(self, text: str) -> list[tuple[int, int, int]]:
        raw = text.encode("ascii", "replace")  # one byte per character: byte offsets are text offsets
        low = raw.lower()
        hits = _Hits(text, self.accept)
        words, flags, texts = self._gated() if len(text) >= GATE_CHARS else _UNGATED
        if b"--" in low and (flags is None or flags(text)):  # every flag starts with it
            self._flags(low, hits)
        place = self.either_re.search(low) if words is None or words(text) else None
        if place is not None:
            self._words(low, place, hits)
        if len(raw) >= MIN_RUN:
            self._runs(raw, low, hits)
        for gate, keywords in self.text_gates if texts is None or texts(text) else ():
            if gate in low:
                for keyword, dets in keywords:
                    if keyword in low:
                        for det in dets:
                            hits.run(det, -1, det.pattern.finditer(text))
        return hits.found

    def _scheme(self, low: bytes, at: int, word: str, hits: _Hits) -> None:
        if at and _NAME_MAP[low[at - 1]] == 97:  # inside a longer word ("mytoken x")
            return
        for det in self.word_rules:
            if word in det.keywords:
                hits.run(det, at, (det.pattern.match(hits.text, at),))

    def _flags(self, low: bytes, hits: _Hits) -> None:
        for flag in self.flag_re.finditer(low):
            for det in self.name_rules:
                hits.run(det, flag.start(), (det.pattern.match(hits.text, flag.start()),))

    def _words(self, low: bytes, place: re.Match[bytes] | None, hits: _Hits) -> None:
        """The scheme pass and the secret-word pass, from one search: at each place `either_re` finds, each pass's
        own regex is matched (`scheme_re`, `word_re`), so each finds what it would find alone. The search goes on
        after a word the word pass took, else one character on: a scheme starting inside a word is skipped by
        either pass (a name character precedes it), and nothing starts in the spaces after a scheme."""
        search, match_word, match_scheme, names = self.either_re.search, self.word_re.match, self.scheme_re.match, b""
        while place is not None:
            p = place.start()
            scheme = match_scheme(low, p)
            if scheme is not None:
                self._scheme(low, p, scheme.group("w").decode(), hits)
            hit = match_word(low, p)
            if hit is None:
                place = search(low, p + 1)
                continue
            names = names or low.translate(_NAME_MAP)  # made once, when the first word is found
            self._word(low, names, hit, hits)
            place = search(low, hit.end("w"))  # after the word, not its tail: no word is skipped

    def _word(self, low: bytes, names: bytes, hit: re.Match[bytes], hits: _Hits) -> None:
        text, p, word = hits.text, hit.start(), hit.group("w").decode()
        # the assigned name is the one just before the operator; when the secret word begins it, it begins
        # earlier still (`OPENAI_API_KEY` holds `api`)
        end = hit.end("nm")
        while end > p and low[end - 1:end] in b" \t":
            end -= 1
        start = names.rfind(b" ", max(0, end - _MAX_NAME), end) + 1 or max(0, end - _MAX_NAME)
        while start < p and low[start:start + 1] in b".-":
            start += 1
        for det in self.name_rules:
            hits.run(det, start, (det.pattern.match(text, start),))
        for det in self.context_rules.get(word, ()):  # gitleaks' generic rule is keyed by the secret words
            hits.run(det, p, (det.pattern.match(text, p),))
        for kw in self.context_re.finditer(low, max(0, start - 24), end):  # a vendor's name (ADAFRUIT_KEY)
            if kw.start() != p:
                for det in self.context_rules.get(kw.group().decode(), ()):
                    hits.run(det, kw.start(), (det.pattern.match(text, kw.start()),))

    def _runs(self, raw: bytes, low: bytes, hits: _Hits) -> None:
        text, n, rules_of, memo = hits.text, len(hits.text), self._run_detectors, self._run_memo
        runs = raw.translate(_RUN_MAP)
        lo = runs.find(_RUN_START)  # the runs, as `_RUN` finds them: a substring search is ~3× its regex scan
        while lo >= 0:
            hi = runs.find(b" ", lo)
            hi = n if hi < 0 else hi
            run = low[lo:hi]
            dets = memo.get(run)
            if dets is None:
                dets = rules_of(run)
                if len(memo) >= RUN_MEMO_SIZE:
                    memo.clear()
                memo[run] = dets
            for det in dets:
                hits.run(det, lo, det.pattern.finditer(text, max(0, lo - 4), min(n, hi + 4)))
            lo = runs.find(_RUN_START, hi)

    def _run_detectors(self, run: bytes) -> tuple[Detector, ...]:
        """The detectors of the run keywords in `run` (a whole run, lower-cased), in the order its keywords are
        found, each once. It depends on the run's characters only: what precedes a run is no token character (or
        nothing), which the short keywords' look-behind reads alike, so a run's detectors are remembered."""
        search, found = self.run_re.search, {}
        kw = search(run)  # most runs hold no keyword: one search, no iterator
        while kw is not None:
            found.update(dict.fromkeys(self.run_rules.get(kw.group().decode(), ())))
            kw = search(run, kw.end())
        return tuple(found)


_UNGATED: list[Callable[[str], bool] | None] = [None, None, None]


def _by_keyword(rules: Iterable[tuple[bytes, Detector]]) -> tuple[tuple[bytes, tuple[Detector, ...]], ...]:
    grouped: dict[bytes, list[Detector]] = {}
    for keyword, det in rules:
        grouped.setdefault(keyword, []).append(det)
    return tuple((k, tuple(v)) for k, v in grouped.items())


GATE_MIN = 6  # the shortest part keywords must share to be tested for it first


def _gates(keywords: tuple[tuple[bytes, tuple[Detector, ...]], ...]
           ) -> tuple[tuple[bytes, tuple[tuple[bytes, tuple[Detector, ...]], ...]], ...]:
    """The text keywords grouped under a part they all hold (`webhook` for `webhookb2` and `incomingwebhook`):
    where the part is absent, so is every keyword of its group, and one substring test replaces several. A keyword
    sharing no part of `GATE_MIN` characters is its own gate."""
    left, out = list(keywords), []
    while left:
        first = left.pop(0)
        keyword, best = first[0], b""
        for other, _ in left:
            match = SequenceMatcher(None, keyword, other, autojunk=False).find_longest_match(
                0, len(keyword), 0, len(other))
            if match.size > len(best):
                best = keyword[match.a:match.a + match.size]
        gate = best if len(best) >= GATE_MIN else keyword
        group = [first] + [(k, d) for k, d in left if gate in k]
        left = [(k, d) for k, d in left if gate not in k]
        out.append((gate, tuple(group)))
    return tuple(out)


class _Hits:
    """One text's accepted spans; each detector runs once per place (`tried`)."""

    __slots__ = ("text", "accept", "found", "tried", "last")

    def __init__(self, text: str, accept: Accept) -> None:
        self.text, self.accept = text, accept
        self.found: list[tuple[int, int, int]] = []
        self.tried: set[tuple[str, int]] = set()
        self.last: dict[str, tuple[int, int]] = {}  # a detector with a `tail` → the last span it accepted

    def run(self, det: Detector, at: int, matches: Iterable[re.Match[str] | None]) -> None:
        last = self.last.get(det.id)
        if (det.id, at) in self.tried or last is not None and last[0] <= at < last[1]:
            return
        self.tried.add((det.id, at))
        for match in matches:
            span = det.span(match) if match is not None else None
            if span is not None and span[1] > span[0] and self.accept(det, self.text, match, span):  # type: ignore[arg-type]
                if det.tail is not None:  # (linear: `api_key=` repeated over 240 KB took minutes)
                    span = (span[0], det.tail.match(self.text, span[1]).end())  # type: ignore[union-attr]
                    self.last[det.id] = span
                keep = len(match.group(1)) if det.keep < 0 else det.keep  # type: ignore[union-attr]
                self.found.append((span[0], span[1], max(0, min(keep, span[1] - span[0] - 1))))


_GLUED = re.compile(r"[A-Za-z0-9_]*")  # what a mask takes with it past a span's end (see `mask`)


def mask(text: str, spans: list[tuple[int, int, int]], token: str,
         replaced: list[tuple[int, int, int]] | None = None) -> tuple[str, int]:
    """`text` with every span replaced by `token` after its kept prefix (overlapping spans merged), and how many.
    Where spans start together the longest kept prefix wins (`ghp_***`), except a span that keeps -1 characters
    (a known secret value), which keeps none. A span never ends inside a word: letters and digits glued to its
    end are masked with it (a fixed-length key followed by `TOKEN` left `***TOKEN`, a word a second pass took for
    an auth scheme: masking was not idempotent). `replaced`, when given, gets (start, end, len(token)) of each
    part of `text` that was replaced, in order."""
    if not spans:
        return text, 0
    spans = [(start, _GLUED.match(text, end).end(), keep) for start, end, keep in spans]  # type: ignore[union-attr]
    spans.sort(key=lambda s: (s[0], s[2] != -1, -s[2], -s[1]))
    merged: list[list[int]] = []
    for start, end, keep in spans:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end, keep])
    out, pos = [], 0
    for start, end, keep in merged:
        out += [text[pos:start + max(keep, 0)], token]
        pos = end
        if replaced is not None:
            replaced.append((start + max(keep, 0), end, len(token)))
    out.append(text[pos:])
    return "".join(out), len(merged)
