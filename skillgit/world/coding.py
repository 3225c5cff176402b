"""The simulated *coding* world: hidden house conventions of a Python team, the concepts a skill package can
convey, the small grammar of coding requests, and the agent's built-in competence (recipes).

It mirrors the text world (rules.py) and keeps its honesty principles: the simulated coding agent (agent.py)
sees only the skill package, the workspace and the prompt; it behaves according to the *concepts* the package
conveys, matched loosely with rules.py's machinery (a matcher matches when one sentence contains all of its
terms; single words after light stemming, terms with spaces or symbols as substrings; harm concepts are ignored
in negated sentences, convention concepts are read anyway). The verifier tests of a task (hidden from the agent)
check the conventions below; nothing here knows about any task's tests.

| convention | natural behaviour | house convention (checked by the verifiers) |
| --- | --- | --- |
| docstring | no docstring | every new public function has a docstring |
| export | `__init__.py` untouched | new public functions imported in `pkg/__init__.py`, listed in `__all__` |
| valueerror | invalid input returns None | invalid input raises `ValueError` |
| type_hints | no annotations | every parameter and the return value annotated |
| changelog | CHANGELOG.md untouched | an entry under `## Unreleased` for every change |
| changelog_format | `- Added slugify.` | Keep a Changelog: `` - `slugify` (pkg/mod.py): … `` under `### Added` etc. |
| tests | no new test | a new, passing, non-skipped test in `tests/test_<module>.py` |
| logging | problems reported with print | no print in library code; `logging` warnings of the module's logger |

`changelog_format` is the detail a team keeps in a reference file (`references/changelog.md`); it implies
`changelog` (a format for entries is an instruction to write them).

Harm concepts make the agent do a wrong thing for every house: `print_debug` (a debug `print` in each new or
changed function), `return_none` (invalid input returns None even if ValueError is also asked for),
`assert_validation` (invalid input is checked with `assert`), `broad_except` (the body is wrapped in
`try/except Exception: return None`), `skip_tests` (new tests are marked `@pytest.mark.skip`), `no_docstring`,
`no_changelog`.

Request grammar (`parse_request`): the first sentence of the prompt is one of
    Add a function `NAME(P1, P2, ...)` to `PKG/MODULE.py` that BEHAVIOUR.
    Fix `NAME` in `PKG/MODULE.py`: BUG.
    Change `NAME` in `PKG/MODULE.py` so that it BEHAVIOUR.
followed by optional clause sentences: a sentence containing "invalid" names the invalid input (the function
must reject it; *how* is the valueerror convention), a sentence containing "report"/"reported" asks the function
to report skipped input (*how* is the logging convention). BEHAVIOUR/BUG is matched against the recipes'
cues (`RECIPES`): the agent is a competent coder for these request kinds, not a general one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from skillgit.world.rules import _NEGATION, _WORD, Concept, _compile, sentences, stem


@dataclass(frozen=True)
class Convention:
    """A hidden house convention, with the natural and the house behaviour in words (for docs and reports)."""

    id: str
    summary: str
    natural: str
    house: str


CONVENTIONS: tuple[Convention, ...] = (
    Convention("docstring", "every new public function has a docstring", "no docstring", "a docstring"),
    Convention("export", "new public functions are exported in the package's __all__", "not exported",
               "imported in __init__.py and listed in __all__"),
    Convention("valueerror", "invalid input raises ValueError", "returns None", "raise ValueError"),
    Convention("type_hints", "new functions have type hints", "no annotations", "parameters and return annotated"),
    Convention("changelog", "every change has a CHANGELOG.md entry under ## Unreleased", "no entry",
               "an entry under ## Unreleased"),
    Convention("changelog_format", "changelog entries follow Keep a Changelog", "- Added slugify.",
               "### Added / ### Changed / ### Fixed, - `slugify` (pkg/mod.py): ..."),
    Convention("tests", "tests/test_<module>.py gets a test for new or changed code", "no test",
               "a new, passing, non-skipped test"),
    Convention("logging", "library code reports through logging, never print", "print(...)",
               "logger.warning(...)"),
)

CONCEPTS: tuple[Concept, ...] = (
    # -- conventions (kind "rule"; topic = convention id), several paraphrase matchers each
    Concept("docstring", "docstring", "rule", "docstrings", (
        ("docstring",), ("doc string",), ("document", "function"), ("document", "public"))),
    Concept("export", "export", "rule", "export in __all__", (
        ("__all__",), ("export", "package"), ("export", "function"), ("expose", "package"), ("re-export",),
        ("__init__", "import"))),
    Concept("valueerror", "valueerror", "rule", "raise ValueError", (
        ("valueerror",), ("value error",), ("raise", "invalid"), ("raise", "bad input"), ("raise", "wrong input"))),
    Concept("type_hints", "type_hints", "rule", "type hints", (
        ("type hint",), ("type annotation",), ("annotate", "type"), ("annotation", "parameter"),
        ("annotation", "return"), ("type", "signature"))),
    Concept("changelog", "changelog", "rule", "changelog entry", (
        ("changelog",), ("change log",), ("## unreleased",))),
    Concept("changelog_format", "changelog_format", "rule", "Keep a Changelog format", (
        ("### added",), ("### fixed",), ("### changed",), ("keep a changelog",), ("changelog", "subsection"),
        ("changelog", "backtick"), ("entry", "backtick"), ("group", "entry", "kind"))),
    Concept("tests", "tests", "rule", "tests for new code", (
        ("unit test",), ("regression test",), ("tests/test_",), ("test file",), ("add", "test"), ("write", "test"),
        ("cover", "test"), ("test", "every change"), ("test", "new code"))),
    Concept("logging", "logging", "rule", "logging, not print", (
        ("logging",), ("logger",), ("print", "library"), ("instead of print",), ("log", "warning"))),
    # -- harms: wrong for every house; ignored in negated sentences ("never print debugging output")
    Concept("print_debug", "logging", "harm", "debug prints", (
        ("print", "debug"), ("print", "debugging"), ("debug", "output"), ("debugging", "output"),
        ("print", "progress"), ("print", "trace"), ("print", "intermediate"), ("print", "variable"))),
    Concept("return_none", "valueerror", "harm", "return None on invalid input", (
        ("return", "none", "invalid"), ("return", "none", "bad input"), ("return", "none", "error"),
        ("return", "none", "fail"))),
    Concept("assert_validation", "valueerror", "harm", "assert for validation", (
        ("assert statement",), ("use assert",), ("assert", "validat"), ("assert", "validation"))),
    Concept("broad_except", "valueerror", "harm", "catch every exception", (
        ("catch", "all", "exception"), ("catch", "every", "exception"), ("except exception",), ("swallow",),
        ("broad", "except"))),
    Concept("skip_tests", "tests", "harm", "skipped tests", (
        ("skip", "test"), ("pytest.mark.skip",), ("test", "optional"), ("disable", "test"), ("xfail",))),
    Concept("no_docstring", "docstring", "harm", "no docstrings", (
        ("omit", "docstring"), ("skip", "docstring"), ("docstring", "unnecessary"), ("docstring", "optional"))),
    Concept("no_changelog", "changelog", "harm", "no changelog", (
        ("skip", "changelog"), ("changelog", "optional"), ("changelog", "unnecessary"), ("leave", "changelog"))),
)


def _variants(matcher: tuple[str, ...]) -> list[tuple[str, ...]]:
    """`matcher` and its variants with plural word terms: the light stemmer maps "docstring" to "docstr" but
    "docstrings" to "docstring", so a matcher word also matches the stem of its plural."""
    out: list[tuple[str, ...]] = [()]
    for term in matcher:
        forms = [term, term + "s"] if _WORD.fullmatch(term) and stem(term) != stem(term + "s") else [term]
        out = [v + (f,) for v in out for f in forms]
    return out


_COMPILED = tuple((c, tuple(_compile(v) for m in c.matchers for v in _variants(m))) for c in CONCEPTS)


@dataclass(frozen=True)
class CodingReading:
    """What the agent takes from a skill text: conventions and harms conveyed, and its non-empty line count."""

    conventions: frozenset[str]
    harms: frozenset[str]
    lines: int

    def to_dict(self) -> dict[str, object]:
        return {"conventions": sorted(self.conventions), "harms": sorted(self.harms), "lines": self.lines}


@lru_cache(maxsize=4096)
def read_coding(text: str) -> CodingReading:
    """The concepts `text` conveys (module docstring); pure and cached."""
    rules: set[str] = set()
    harms: set[str] = set()
    for sentence in sentences(text):
        norm = " ".join(sentence.lower().split())
        stems = frozenset(stem(w) for w in _WORD.findall(norm))
        negated = _NEGATION.search(norm) is not None
        for c, matchers in _COMPILED:
            if c.kind == "harm" and negated:
                continue
            if any(words <= stems and all(p in norm for p in phrases) for words, phrases in matchers):
                (rules if c.kind == "rule" else harms).add(c.id)
    if "changelog_format" in rules:
        rules.add("changelog")
    lines = sum(1 for line in (text or "").splitlines() if line.strip())
    return CodingReading(frozenset(rules), frozenset(harms), lines)


# ---------------------------------------------------------------------------------------------- packages
def referenced_files(main_text: str, files: Mapping[str, str]) -> list[str]:
    """The reference files (keys of `files` other than the main file, paths relative to the package root) an
    agent opens: a file counts iff its relative path (e.g. `references/changelog.md`, case-sensitive, optionally
    with a leading `./`) appears in the main text or in a reference already opened (so references may chain).
    A real agent only opens the files its instructions point at; an unreferenced file has no effect."""
    opened: list[str] = []
    texts = [main_text]
    while texts:
        text = texts.pop()
        for path in sorted(files):
            if path not in opened and path in text:
                opened.append(path)
                texts.append(files[path])
    return opened


# ---------------------------------------------------------------------------------------------- requests
@dataclass(frozen=True)
class Request:
    """One parsed coding request. `kind`: add | fix | change; `params` only for add (else read from the code)."""

    kind: str
    name: str
    module_path: str  # e.g. textkit/strings.py
    behaviour: str
    params: tuple[str, ...] = ()
    invalid: str = ""  # the invalid-input sentence, "" when there is none
    report: bool = False

    @property
    def package(self) -> str:
        return self.module_path.split("/")[0]

    @property
    def module(self) -> str:
        return self.module_path[:-3].replace("/", ".")

    @property
    def test_path(self) -> str:
        return f"tests/test_{self.module_path.rsplit('/', 1)[-1]}"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "name": self.name, "module_path": self.module_path, "behaviour": self.behaviour,
                "params": list(self.params), "invalid": self.invalid, "report": self.report}


_PATH = r"`(?P<module>[A-Za-z_]\w*(?:/[A-Za-z_]\w*)+\.py)`"
_ADD = re.compile(r"Add a function `(?P<name>[A-Za-z_]\w*)\((?P<params>[^)]*)\)` to " + _PATH
                  + r" that (?P<behaviour>.+)", re.DOTALL)
_FIX = re.compile(r"Fix `(?P<name>[A-Za-z_]\w*)` in " + _PATH + r": (?P<behaviour>.+)", re.DOTALL)
_CHANGE = re.compile(r"Change `(?P<name>[A-Za-z_]\w*)` in " + _PATH + r" so that it (?P<behaviour>.+)", re.DOTALL)
_SENTENCE = re.compile(r"(?<=\.)\s+(?=[A-Z`])")


def parse_request(prompt: str) -> Request | None:
    """The request in `prompt` (grammar in the module docstring), or None when it does not fit the grammar."""
    parts = _SENTENCE.split(" ".join((prompt or "").split()))
    if not parts or not parts[0]:
        return None
    first, clauses = parts[0].rstrip("."), parts[1:]
    invalid = next((c for c in clauses if re.search(r"\binvalid\b", c, re.IGNORECASE)), "")
    report = any(re.search(r"\breport(ed|s)?\b", c, re.IGNORECASE) for c in clauses)
    for kind, pattern in (("add", _ADD), ("fix", _FIX), ("change", _CHANGE)):
        m = pattern.fullmatch(first)
        if m:
            params: tuple[str, ...] = ()
            if kind == "add":
                params = tuple(p.strip() for p in m.group("params").split(",") if p.strip())
                if not all(re.fullmatch(r"[A-Za-z_]\w*", p) for p in params):
                    return None
            return Request(kind, m.group("name"), m.group("module"), m.group("behaviour").strip(), params,
                           invalid, report)
    return None


# ---------------------------------------------------------------------------------------------- recipes
@dataclass(frozen=True)
class Recipe:
    """How the agent implements one kind of behaviour. Code uses `__P0__`, `__P1__`, … for the parameters,
    `__INVALID__` for the invalid-input action (a statement) and `__REPORT__` for the report statement.

    - `cue`: regex (case-insensitive) on the request's behaviour text.
    - `hints`: annotations of the parameters and the return value (used when type hints are conveyed).
    - `guard`: condition (in terms of `__P0__` …) that makes input invalid; checked first when the request has
      an invalid-input clause. `invalid_param`: index of the parameter the error message names.
    - `body`: the implementation lines (4-space indents relative to the function body).
    - `imports`: module-level imports the body needs (`import x` / `from x import y`).
    - `examples` / `invalid_example`: argument lists (as code) the agent uses in the tests it writes; it computes
      the expected values by running its own implementation, never from anything in the workspace.
    - `report`: (%-format message, argument expression) of the report statement.
    """

    id: str
    cue: str
    hints: tuple[str, ...]
    returns: str
    body: tuple[str, ...]
    guard: str = ""
    invalid_param: int = 0
    imports: tuple[str, ...] = ()
    examples: tuple[tuple[str, ...], ...] = ()
    invalid_example: tuple[str, ...] = ()
    report: tuple[str, str] = ("", "")


_ISO = r're.fullmatch(r"\d{4}-\d{2}-\d{2}", __P0__) is None'
RECIPES: tuple[Recipe, ...] = (
    Recipe("slug", r"\bhyphens?\b", ("str",), "str",
           ('return re.sub(r"[^a-z0-9]+", "-", __P0__.lower()).strip("-")',),
           guard='re.search(r"[A-Za-z0-9]", __P0__) is None', imports=("import re",),
           examples=(("'Hello, World!'",), ("'  Many   spaces -- here '",)), invalid_example=("'!!!'",)),
    Recipe("truncate", r"\bshortens?\b", ("str", "int"), "str",
           ("if len(__P0__) <= __P1__:", "    return __P0__", 'return __P0__[: __P1__ - 3] + "..."'),
           guard="__P1__ < 3", invalid_param=1,
           examples=(("'hello world'", "8"), ("'hi'", "8")), invalid_example=("'hello'", "2")),
    Recipe("count_words", r"number of .*words", ("str",), "int", ("return len(__P0__.split())",),
           guard="not isinstance(__P0__, str)",
           examples=(("'one two  three'",), ("''",)), invalid_example=("None",)),
    Recipe("parse_bool", r"\btrue for\b", ("str",), "bool",
           ("value = __P0__.strip().lower()", 'if value in ("yes", "true", "on", "1"):', "    return True",
            'if value in ("no", "false", "off", "0"):', "    return False", "__INVALID__"),
           examples=(("' Yes '",), ("'off'",)), invalid_example=("'maybe'",)),
    Recipe("clamp", r"limited to the range", ("float", "float", "float"), "float",
           ("return max(__P1__, min(__P2__, __P0__))",), guard="__P1__ > __P2__", invalid_param=1,
           examples=(("5", "0", "3"), ("-1", "0", "3"), ("2", "0", "3")), invalid_example=("1", "3", "0")),
    Recipe("chunk_fix", r"drops the last", ("list", "int"), "list",
           ("return [__P0__[i:i + __P1__] for i in range(0, len(__P0__), __P1__)]",),
           guard="__P1__ < 1", invalid_param=1,
           examples=(("[1, 2, 3, 4, 5]", "2"), ("[]", "3")), invalid_example=("[1, 2]", "0")),
    Recipe("pairs", r"key=value", ("str",), "dict[str, str]",
           ("pairs = {}", "for line in __P0__.splitlines():", '    if "=" not in line:',
            "        if line.strip():", "            __REPORT__", "        continue",
            '    key, _, value = line.partition("=")', "    pairs[key.strip()] = value.strip()", "return pairs"),
           examples=(("'a=1\\nb = 2'",), ("'a=1\\nnot a pair\\nc=3'",)),
           report=("skipping line without '=': %r", "line")),
    Recipe("strip_space", r"strips? leading and trailing", ("str",), "str", ('return " ".join(__P0__.split())',),
           examples=(("'  a   b  '",), ("'x'",))),
    Recipe("amount_cents", r"number of cents", ("str",), "int",
           ('cleaned = __P0__.strip().lstrip("$").replace(",", "")', "return int(Decimal(cleaned) * 100)"),
           guard=r're.fullmatch(r"\s*\$?\d[\d,]*(\.\d{1,2})?\s*", __P0__) is None',
           imports=("import re", "from decimal import Decimal"),
           examples=(("'12.5'",), ("'$1,234.50'",)), invalid_example=("'twelve'",)),
    Recipe("format_cents", r"thousands separator", ("int",), "str",
           ('return f"{__P0__ // 100:,}.{__P0__ % 100:02d}"',), guard="__P0__ < 0",
           examples=(("123450",), ("5",)), invalid_example=("-1",)),
    Recipe("split_evenly", r"differ by at most one", ("int", "int"), "list[int]",
           ("base, extra = divmod(__P0__, __P1__)", "return [base + 1 if i < extra else base for i in range(__P1__)]"),
           guard="__P1__ < 1", invalid_param=1,
           examples=(("100", "3"), ("10", "5")), invalid_example=("100", "0")),
    Recipe("add_days", r"days after", ("str", "int"), "str",
           ("return (date.fromisoformat(__P0__) + timedelta(days=__P1__)).isoformat()",),
           guard=_ISO, imports=("import re", "from datetime import date, timedelta"),
           examples=(("'2024-02-28'", "2"), ("'2024-12-31'", "1")), invalid_example=("'next tuesday'", "1")),
    Recipe("weekend", r"saturday or sunday", ("str",), "bool",
           ("return date.fromisoformat(__P0__).weekday() >= 5",),
           guard=_ISO, imports=("import re", "from datetime import date"),
           examples=(("'2024-03-09'",), ("'2024-03-11'",)), invalid_example=("'someday'",)),
    Recipe("total_fix", r"ignores the first", ("list[int]",), "int", ("return sum(__P0__)",),
           examples=(("[100, 250]",), ("[5]",))),
    Recipe("rows", r"\(date, cents\)", ("str",), "list[tuple[str, int]]",
           ("rows = []", "for line in __P0__.splitlines():",
            r'    match = re.fullmatch(r"\s*(\d{4}-\d{2}-\d{2})\s*;\s*(\d+(?:\.\d{1,2})?)\s*", line)',
            "    if match is None:", "        if line.strip():", "            __REPORT__", "        continue",
            "    rows.append((match.group(1), int(Decimal(match.group(2)) * 100)))", "return rows"),
           imports=("import re", "from decimal import Decimal"),
           examples=(("'2024-03-05;12.50\\n2024-03-06;3'",), ("'2024-03-05;1\\nbad line'",)),
           report=("skipping unparsable line: %r", "line")),
    Recipe("round_half_up", r"halves away from zero", ("float",), "int",
           ("rounded = Decimal(str(__P0__)).quantize(Decimal(1), rounding=ROUND_HALF_UP)", "return int(rounded)"),
           imports=("from decimal import ROUND_HALF_UP, Decimal",),
           examples=(("2.5",), ("-2.5",), ("3.4",))),
)


def recipe_for(request: Request) -> Recipe | None:
    """The first recipe whose cue matches the request's behaviour, or None (the agent cannot do it)."""
    return next((r for r in RECIPES if re.search(r.cue, request.behaviour, re.IGNORECASE)), None)
