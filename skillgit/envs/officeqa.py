"""`officeqa`: OfficeQA (Databricks, 2025) — a question answered from a corpus of documents (U.S. Treasury
Bulletins) that the student searches and reads through tools, turn by turn, before it answers.

Format read (the published release, github.com/databricks/officeqa and Hugging Face `databricks/officeqa`): the
benchmark CSV (`officeqa.csv`, `officeqa_pro.csv`, `officeqa_full.csv`: `uid`, `question`, `answer`,
`source_docs`, `source_files`, `difficulty`; JSON/JSONL rows with those keys too) and the corpus as the release's
transformed text files, `treasury_bulletins_parsed/transformed/*.txt` (or `transformed_page_level/`, whose
`--- PAGE N ---` markers split pages) next to the CSV, or the folder `env.options.corpus` names.

The tool runtime (an episode of `skillgit.envs.episode`: one student call per action, the whole transcript what
the teacher reads, shortened by the agent-trace rules). The first observation states the question and the tools:
- `search QUERY` — the `SEARCH_HITS` best pages by term overlap, each with a snippet;
- `read DOC PAGE` — one page of one document (cut past `READ_CHARS`);
- `list` — the documents and their page counts;
- `answer TEXT` — the final answer; it ends the episode. No answer within `max_turns` actions scores 0.
Documents without page markers are paged every `PAGE_CHARS` characters (at a line break).

Metric (the release's `reward.py` rules, written here): the answer (inside `<FINAL_ANSWER>` tags when present) is
compared with the ground truth — numbers with commas removed and unicode minus normalised, unit words ignored
(`36080 million` equals `36080`), each ground-truth number matched within `env.options.tolerance` (relative),
year-like numbers in the answer ignored unless the truth has them, and any words of the truth (a month, a name)
required in the answer; a ground truth without numbers must equal the answer as text (case, quotes and
parentheticals aside). hard = that
match; soft = the share of the truth's numbers matched (a list answer half right scores 0.5). Feedback names the
answer given and whether it matched, never the truth.

The tolerance defaults to 0 — exact after the fuzzy formatting rules — because that is how the published
evaluation grades: `reward.py`'s entry point `score_answer(ground_truth, predicted, tolerance=0.00)` (the 0.05 in
its signature belongs to the inner `fuzzy_match_answer`, which `score_answer` always calls with its own 0), the
AgentBeats green agent (arnavsinghvi11/officeqa_agentbeats) scores "at 0.0 tolerance", and the OfficeQA
leaderboard's `tolerance` setting defaults to 0.0. Set `env.options.tolerance: 0.05` to grade as
`fuzzy_match_answer` alone would.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgit.envs import rows
from skillgit.envs.episode import EpisodeEnv, TextEnvironment, Transition
from skillgit.errors import ConfigError
from skillgit.tasks import TaskFileError
from skillgit.textmatch import clip
from skillgit.types import Item, Score

PAGE_CHARS = 3000
READ_CHARS = 3000
SEARCH_HITS = 5
SNIPPET_CHARS = 240
CORPUS_DIRS = ("treasury_bulletins_parsed/transformed_page_level", "treasury_bulletins_parsed/transformed",
               "transformed_page_level", "transformed", "documents", "docs")
TOOLS = ("Tools (one per turn): `search QUERY` finds pages; `read DOC PAGE` shows one page; `list` lists the "
         "documents; `answer TEXT` gives your final answer and ends the task.")

SEED_SKILL = """---
name: officeqa
description: Answer a question from a corpus of financial documents by searching and reading them.
---

# Answering from documents

Search the documents for the figures the question needs, read the pages the search finds, and compute the
answer from the values you read. Reply with one tool call per turn; finish with `answer` and the value in the
unit and rounding the question asks for.
"""

# ---------------------------------------------------------------------------------------------- the metric
_NUMBER = re.compile(r"-?\d+\.?\d*%?")
_UNITS = ("trillions", "trillion", "billions", "billion", "millions", "million", "thousands", "thousand",
          "hundreds", "hundred", "percentage", "percent")
_FINAL = re.compile(r"<FINAL_ANSWER>\s*(.*?)\s*</FINAL_ANSWER>", re.S | re.I)


def final_answer(text: str) -> str:
    found = _FINAL.search(str(text or ""))
    return found.group(1).strip() if found else str(text or "").strip()


def numbers(text: str) -> list[float]:
    plain = str(text).replace("\u2212", "-").replace(",", "")
    return [float(m.rstrip("%")) for m in _NUMBER.findall(plain) if m not in ("-", "")]


def words(text: str) -> str:
    """The words of an answer besides its numbers and unit words ("March 1977" → "march")."""
    out = _NUMBER.sub(" ", str(text).replace("\u2212", "-").lower().replace(",", ""))
    for unit in _UNITS:
        out = re.sub(rf"\b{unit}\b", " ", out)
    out = " ".join(re.sub(r"[^\w\s]", " ", out).split())
    return out if len(out) >= 2 else ""


def _year(value: float) -> bool:
    return 1900 <= value <= 2100 and value == int(value)


def _close(truth: float, got: float, tolerance: float) -> bool:
    return got == 0 if truth == 0 else abs(truth - got) / abs(truth) <= tolerance + 1e-12


def _text_equal(truth: str, got: str) -> bool:
    def clean(text: str) -> str:
        text = re.sub(r"\([^)]*\)", " ", text.strip().lower().strip("\"'"))
        return " ".join(text.split()).strip(" .")
    return clean(truth) == clean(got)


def match(truth: str, answer: str, tolerance: float = 0.0) -> float:
    """The share of the truth's numbers the answer matches (0 when words of the truth are missing from the answer,
    1 or 0 for a text answer); hard = this == 1."""
    want, got = numbers(truth), numbers(answer)
    if not want or not got:
        return float(not want and _text_equal(truth, answer))
    truth_words, answer_words = words(truth), words(answer)
    if truth_words and not (answer_words and (truth_words in answer_words or answer_words in truth_words)):
        return 0.0
    if not (any(_year(v) for v in want) or truth_words):
        got = [v for v in got if not _year(v)]
    found = sum(1 for value in want if any(_close(value, g, tolerance) for g in got))
    return found / len(want)


# ---------------------------------------------------------------------------------------------- the corpus
_PAGE_MARK = re.compile(r"^-{2,}\s*PAGE\s+(\d+)\s*-{2,}\s*$", re.M | re.I)
_TERM = re.compile(r"[a-z0-9]+")


def pages_of(text: str) -> list[str]:
    if _PAGE_MARK.search(text):
        parts = _PAGE_MARK.split(text)
        return [parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)] or [text]
    pages, rest = [], text
    while len(rest) > PAGE_CHARS:
        cut_at = rest.rfind("\n", 0, PAGE_CHARS)
        cut_at = cut_at if cut_at > PAGE_CHARS // 2 else PAGE_CHARS
        pages.append(rest[:cut_at].strip())
        rest = rest[cut_at:]
    return [*pages, rest.strip()]


@dataclass
class Corpus:
    pages: dict[str, list[str]]  # document name (file stem) → its pages

    @classmethod
    def load(cls, folder: Path) -> "Corpus":
        found = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in (".txt", ".md"))
        if not found:
            raise TaskFileError(f"{folder}: no .txt documents in the corpus folder",
                                "point env.options.corpus at the transformed text files")
        docs = {}
        for file in found:
            try:
                docs[file.stem] = pages_of(file.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise TaskFileError(f"cannot read {file}: {exc}", "the corpus must be UTF-8 text") from None
        return cls(docs)

    def search(self, query: str) -> list[tuple[str, int, str]]:
        terms = [t for t in _TERM.findall(query.lower()) if len(t) > 1]
        if not terms:
            return []
        scored = []
        for doc, pages in self.pages.items():
            for number, page in enumerate(pages, start=1):
                counts = Counter(_TERM.findall(page.lower()))
                hit = sum(1 for t in set(terms) if counts[t])
                if hit:
                    scored.append((hit, sum(min(counts[t], 5) for t in terms), doc, number, page))
        scored.sort(key=lambda s: (-s[0], -s[1], s[2], s[3]))
        return [(doc, number, snippet(page, terms)) for _, _, doc, number, page in scored[:SEARCH_HITS]]


def snippet(page: str, terms: list[str]) -> str:
    low = page.lower()
    at = min((low.find(t) for t in terms if low.find(t) >= 0), default=0)
    start = max(0, at - SNIPPET_CHARS // 3)
    start = page.rfind(" ", 0, start) + 1 if start else 0  # at a word's start
    return " ".join(page[start:start + SNIPPET_CHARS].split())


# ---------------------------------------------------------------------------------------------- the episode
class Desk:
    """One episode: the question, the tools over the corpus, the answer once given."""

    def __init__(self, question: str, corpus: Corpus, truth: str, tolerance: float):
        self.question, self.corpus = question, corpus
        self.truth, self.tolerance = truth, tolerance  # the judge's: never in an observation
        self.answer: str | None = None

    def reset(self) -> str:
        return f"Question: {self.question}\n{len(self.corpus.pages)} documents are available. {TOOLS}"

    def step(self, action: str) -> Transition:
        verb, _, rest = action.strip().partition(" ")
        verb, rest = verb.lower().rstrip(":"), rest.strip()
        if verb in ("answer", "final", "final_answer"):
            if not rest:
                return Transition("An answer needs its value: `answer TEXT`.", False)
            self.answer = final_answer(rest)
            reward = match(self.truth, self.answer, self.tolerance)
            return Transition(f"Answer recorded: {clip(self.answer, 200)}", True, reward)
        if verb == "search":
            hits = self.corpus.search(rest)
            if not hits:
                return Transition(f"No page matches {clip(rest, 80)!r}.", False)
            return Transition("\n".join(f"[{doc} page {n}] {text}" for doc, n, text in hits), False)
        if verb == "read":
            return Transition(self._read(rest), False)
        if verb == "list":
            return Transition("\n".join(f"{doc} ({len(p)} pages)" for doc, p in self.corpus.pages.items()), False)
        return Transition(f"Unknown action {clip(action, 60)!r}. {TOOLS}", False)

    def _read(self, rest: str) -> str:
        parts = rest.split()
        doc = parts[0].removesuffix(".txt") if parts else ""
        if doc not in self.corpus.pages:
            return f"No document {clip(doc, 80)!r}; `list` shows them."
        pages = self.corpus.pages[doc]
        number = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 1
        if not 1 <= number <= len(pages):
            return f"{doc} has pages 1 to {len(pages)}."
        text = pages[number - 1]
        more = f"\n[… page cut at {READ_CHARS} characters]" if len(text) > READ_CHARS else ""
        return f"[{doc} page {number} of {len(pages)}]\n{text[:READ_CHARS]}{more}"


def _csv_rows(path: Path) -> list[tuple[dict[str, Any], str]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"cannot read {path}: {exc}", "the benchmark CSV must be UTF-8") from None
    reader = csv.DictReader(io.StringIO(text))
    return [(dict(row), f"{path}:{reader.line_num}") for row in reader]


class OfficeQA(EpisodeEnv):
    name = "officeqa"
    summary = "OfficeQA: a question answered from documents the student searches and reads with tools, multi-turn"
    metric = "accuracy: the answer's numbers match the truth within tolerance (reward.py rules); soft = share matched"
    source = ("OfficeQA (github.com/databricks/officeqa; Hugging Face databricks/officeqa): officeqa*.csv with "
              "treasury_bulletins_parsed/transformed/*.txt next to it (or env.options.corpus)")
    seed_skill = SEED_SKILL
    sample = "officeqa.csv"
    options_default = {"max_turns": 12, "tolerance": 0.0}

    def __init__(self, options: dict[str, Any] | None = None):
        super().__init__(options)
        self._corpora: dict[str, Corpus] = {}

    @property
    def tolerance(self) -> float:
        value = self.options.get("tolerance", 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ConfigError(f"env.options.tolerance: must be a number from 0 to 1, got {value!r}",
                              "e.g. tolerance: 0 (exact, as the published evaluation grades) or 0.05 (5 %)")
        return float(value)

    def _corpus_folder(self, data: Path) -> Path:
        base = data.parent if data.is_file() else data
        option = self.options.get("corpus")
        if option:
            folder = Path(str(option)).expanduser()
            folder = folder if folder.is_absolute() else (base / folder)
            if not folder.is_dir():
                raise TaskFileError(f"env.options.corpus: not a folder: {folder}", "name the corpus text folder")
            return folder.resolve()
        for sub in CORPUS_DIRS:
            if (base / sub).is_dir():
                return (base / sub).resolve()
        raise TaskFileError(f"{base}: no corpus folder next to the questions (looked for {', '.join(CORPUS_DIRS)})",
                            "download treasury_bulletins_parsed/transformed/ or set env.options.corpus")

    def load(self, path: Path) -> list[Item]:
        path = Path(path)
        self.tolerance, self.max_turns  # noqa: B018 — a bad option fails `init` and `doctor`, not the first rollout
        folder = self._corpus_folder(path)
        self._corpora[str(folder)] = Corpus.load(folder)
        table = _csv_rows(path) if path.suffix.lower() == ".csv" else list(rows.rows(path))
        def item(row: rows.Row, where: str, item_id: str) -> Item:
            question = rows.field(row, ("question",), where, "question")
            answer = rows.field(row, ("answer",), where, "answer")
            meta = {"corpus": str(folder), "difficulty": str(row.get("difficulty") or "")}
            return Item(str(row.get("uid") or item_id), " ".join(str(question).split()), str(answer).strip(), meta)

        return rows.items(path, item, table)

    def corpus(self, item: Item) -> Corpus:
        folder = str(item.metadata["corpus"])
        if folder not in self._corpora:  # a resumed run's items come from the journal: read the corpus again
            self._corpora[folder] = Corpus.load(Path(folder))
        return self._corpora[folder]

    def make(self, item: Item) -> TextEnvironment:
        return Desk(item.input, self.corpus(item), str(item.expected), self.tolerance)

    def final_score(self, world: TextEnvironment, reward: float, done: bool, turns: int) -> Score:
        answer = getattr(world, "answer", None)
        if answer is None:
            return Score(0.0, 0.0, f"no answer after {turns} actions (the task needs `answer TEXT` to finish)")
        share = reward
        if share >= 1.0:
            return Score(1.0, 1.0, f"correct: {clip(answer, 80)!r} matches (after {turns} actions)")
        part = f"; {share:.0%} of the values in the expected answer found" if share else ""
        return Score(0.0, share, clip(f"the answer {answer!r} does not match{part} (after {turns} actions)", 300))

    def teacher_reference(self, item: Item) -> Any:
        return item.expected  # a train item's answer is the training signal, as for SearchQA
