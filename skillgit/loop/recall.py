"""Recall of similar past trajectories for contrastive reflection (`optimizer.recall_k`; SkillOpt-Sleep's
`recall_k`): next to each reflect minibatch the teacher sees the k most similar trajectories of earlier steps.

Contract:
- The memory is written by the steps themselves: `rows(trajs, …)` turns a step's scored train trajectories into
  JSON rows (redacted, each text field cut to `MEMORY_CHARS`), which the step's candidate notes carry
  (`details["recall_memory"]`). Nothing else is ever a row: a val or test scoring is never recorded here.
- `Memory.load(store, scope, branch, skill)` reads the rows back from every candidate note in the repository, once
  per process (scope "branch": rows recorded on this skill branch, this run's and earlier runs'; "skill": on any
  branch training the same skill file — a night of sleep recalls the nights before it); `add` keeps it up to date
  in the process. `before(run, step)`: the rows step `step` of `run` may recall: never its own step or a later
  one of its run, so a restarted step sees exactly what its first attempt saw; of those, the newest `POOL` rows
  (its own run's first, then by run id and step) keep a long history's cost bounded.
- `Recaller(rows, k, chars, hidden, expected)` is what `stages.reflect` asks for one minibatch (its trajectories
  and outcome): the k most similar rows as one `<recalled>` block that follows the minibatch's trajectories, and
  their keys (recorded in the patch). It is a pure function of the rows and the minibatch: a resumed step builds
  the same prompt, and the call journal answers it.
- Judge isolation: a row whose item id or task text is a val or test item's (`hidden`) is never shown (it may
  have been a train item of an earlier run or night); `<expected>` is what the current scorer lets a teacher read
  of a *current train* item (`expected`, built with `judging.teacher_reference`), and absent for any other row.
- Similarity: Okapi BM25 (k1 1.2, b 0.75) over word tokens of the task text and the answer; a row's score for a
  minibatch is its best score against one of the minibatch's trajectories. Contrast first: a row of an item of
  the minibatch with the other outcome (the same task, solved one way and failed the other) ranks above every
  other row; any other row whose outcome differs from the minibatch's counts `CONTRAST_BONUS` times its
  similarity. At most one row per (item, outcome) (the most similar, then the latest); a row that repeats a
  current trajectory (same item, same answer) or shares no word with the minibatch is left out. Ties: the
  latest (run, step, item id) first. Each recalled trajectory adds at most `chars` characters of text
  (`optimizer.recall_chars`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from skillgit import redact
from skillgit.config import Config
from skillgit.judging import teacher_reference
from skillgit.prompts import _as_text, _truncate
from skillgit.tagcodec import container, leaf
from skillgit.tasks import Splits
from skillgit.types import Item, Trajectory, is_failure

POOL = 4000  # the newest rows a step searches (its own run's first, then by run id, which is a time stamp)
MEMORY_CHARS = 2000  # each text field of a row as the note keeps it (recall_chars cuts what a prompt shows)
CONTRAST_BONUS = 1.5  # a row with the other outcome than the minibatch's counts this many times its similarity
K1, B = 1.2, 0.75  # BM25
# Of a recalled trajectory's `chars`, the share each field may take (the answer matters most).
SHARES = (("input", 0.35), ("output", 0.4), ("expected", 0.1), ("feedback", 0.15))
_WORD = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text or "")]


def _norm(text: str) -> str:
    return " ".join((text or "").lower().split())


# ---------------------------------------------------------------------------------------------- rows
def rows(trajs: Sequence[Trajectory], *, run: str, step: int, branch: str, skill: str) -> list[dict[str, Any]]:
    """The memory rows of a step's trajectories (scored ones only: an unknown run says nothing)."""
    out = []
    for t in trajs:
        if not t.ok or t.score is None:
            continue
        out.append({"run": run, "step": int(step), "branch": branch, "skill": skill, "item": t.item_id,
                    "input": _cut(t.input), "output": _cut(t.output), "feedback": _cut(t.score.feedback),
                    "hard": round(float(t.score.hard), 4), "soft": round(float(t.score.soft), 4)})
    return out


def _cut(text: str) -> str:
    return redact.redact(_truncate(text or "", MEMORY_CHARS))


def row_of(value: Any) -> dict[str, Any] | None:
    """A row read back from a note (anyone may have written it): None unless every field has its type."""
    if not isinstance(value, Mapping):
        return None
    texts = ("run", "branch", "skill", "item", "input", "output", "feedback")
    if not all(isinstance(value.get(k), str) for k in texts):
        return None
    step, hard, soft = value.get("step"), value.get("hard"), value.get("soft")
    if not isinstance(step, int) or isinstance(step, bool):
        return None
    if not isinstance(hard, (int, float)) or not isinstance(soft, (int, float)) or isinstance(hard, bool) \
            or isinstance(soft, bool):
        return None
    return {**{k: value[k] for k in texts}, "step": step, "hard": float(hard), "soft": float(soft)}


def key_of(row: Mapping[str, Any]) -> tuple[str, int, str]:
    return (str(row["run"]), int(row["step"]), str(row["item"]))


def label(row: Mapping[str, Any]) -> str:
    return f"{row['run']}/{row['step']}/{row['item']}"


def failed(row: Mapping[str, Any]) -> bool:
    return float(row["hard"]) < 1.0 - 1e-9  # types.is_failure's rule


# ---------------------------------------------------------------------------------------------- memory
@dataclass
class Memory:
    """Every row this process knows, by key (see the module contract)."""

    scope: str
    branch: str
    skill: str
    by_key: dict[tuple[str, int, str], dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, store: Any, cfg: Config) -> "Memory":
        from skillgit.store.notes import decode_lenient

        memory = cls(cfg.optimizer.recall_scope, cfg.skill.branch, cfg.skill.path)
        for _, text in sorted(store.note_texts().items()):
            if '"recall_memory"' not in text:
                continue
            records, _ = decode_lenient(text)
            for record in records:
                if record.get("kind") == "candidate" and isinstance(record.get("recall_memory"), list):
                    memory.add(record["recall_memory"])
        return memory

    def add(self, values: Iterable[Any]) -> None:
        for value in values:
            row = row_of(value)
            if row is not None and self._in_scope(row) and key_of(row) not in self.by_key:
                self.by_key[key_of(row)] = {**row, "_tf": term_counts(row)}  # tokenised once per process

    def _in_scope(self, row: Mapping[str, Any]) -> bool:
        if self.scope == "skill":
            return row["skill"] == self.skill
        return row["branch"] == self.branch

    def before(self, run: str, step: int) -> list[dict[str, Any]]:
        eligible = [k for k in self.by_key if not (k[0] == run and k[1] >= step)]
        newest = sorted(eligible, key=lambda k: (k[0] == run, k[0], k[1], k[2]), reverse=True)[:POOL]
        return [self.by_key[k] for k in sorted(newest)]


# ---------------------------------------------------------------------------------------------- index
class Index:
    """Okapi BM25 over the rows' task text and answer, through postings (a query costs what its words occur in)."""

    def __init__(self, docs: Sequence[Mapping[str, Any]]):
        self.docs = list(docs)
        tfs = [d.get("_tf") or term_counts(d) for d in self.docs]
        length = [sum(c.values()) for c in tfs]
        avg = (sum(length) / len(length)) if length else 1.0
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for i, (tf, n) in enumerate(zip(tfs, length)):
            norm = K1 * (1 - B + B * n / avg) if avg else K1
            for word, count in tf.items():
                self.postings.setdefault(word, []).append((i, count * (K1 + 1) / (count + norm)))
        total = len(self.docs)
        self.idf = {w: math.log(1 + (total - len(p) + 0.5) / (len(p) + 0.5)) for w, p in self.postings.items()}

    def scores(self, query: str) -> list[float]:
        out = [0.0] * len(self.docs)
        for word in sorted(set(tokens(query)) & self.idf.keys()):  # sorted: the same float sums every time
            idf = self.idf[word]
            for i, part in self.postings[word]:
                out[i] += idf * part
        return out


def term_counts(row: Mapping[str, Any]) -> Counter:
    return Counter(tokens(row["input"] + "\n" + row["output"]))


@dataclass(frozen=True)
class Recalled:
    """One minibatch's recall: the block the prompt carries after its trajectories, and the rows' labels."""

    block: str
    labels: tuple[str, ...]


class Recaller:
    """The k most similar past rows for a minibatch (see the module contract)."""

    def __init__(self, past: Sequence[Mapping[str, Any]], k: int, chars: int, hidden: Iterable[Item],
                 expected: Mapping[str, Any]):
        hidden = list(hidden)
        hidden_ids = {i.id for i in hidden}
        hidden_texts = {_norm(i.input) for i in hidden}
        self.rows = [dict(r) for r in past if r["item"] not in hidden_ids and _norm(r["input"]) not in hidden_texts]
        self.index = Index(self.rows)
        self.k, self.chars, self.expected = k, chars, dict(expected)

    def __call__(self, trajs: Sequence[Trajectory], outcome: str) -> Recalled | None:
        ranked = self.rank(trajs, outcome)
        if not ranked:
            return None
        return Recalled(self.render(ranked, trajs), tuple(label(r) for r, _ in ranked))

    def rank(self, trajs: Sequence[Trajectory], outcome: str) -> list[tuple[dict[str, Any], float]]:
        if self.k <= 0 or not self.rows or not trajs:
            return []
        batch_failed = outcome == "failure" if outcome in ("failure", "success") else \
            any(is_failure(t.score) for t in trajs)
        current = {(t.item_id, _norm(t.output)) for t in trajs}
        ids = {t.item_id for t in trajs}
        best = [0.0] * len(self.rows)
        for t in trajs:
            for i, s in enumerate(self.index.scores(t.input + "\n" + t.output)):
                best[i] = max(best[i], s)
        found = []
        for row, sim in zip(self.rows, best):
            if sim <= 0 or (row["item"], _norm(row["output"])) in current:
                continue
            contrast = failed(row) != batch_failed
            pair = contrast and row["item"] in ids
            found.append(((-int(pair), -round(sim * (CONTRAST_BONUS if contrast else 1.0), 9)), row, sim))
        found.sort(key=lambda x: key_of(x[1]), reverse=True)  # ties: the latest first
        found.sort(key=lambda x: x[0])
        out: list[tuple[dict[str, Any], float]] = []
        slots: set[tuple[str, bool]] = set()
        for _, row, sim in found:  # one row per (item, outcome): the best placed
            slot = (row["item"], failed(row))
            if slot not in slots and len(out) < self.k:
                slots.add(slot)
                out.append((row, sim))
        return out

    def render(self, ranked: Sequence[tuple[Mapping[str, Any], float]], trajs: Sequence[Trajectory]) -> str:
        ids = {t.item_id for t in trajs}
        blocks = []
        for row, sim in ranked:
            texts = {"input": row["input"], "output": row["output"],
                     "expected": _as_text(self.expected.get(row["item"])) if row["item"] in self.expected else "",
                     "feedback": row["feedback"]}
            # redacted again: a row read from a collaborator's note was not necessarily written by skillgit
            children = [leaf(name, redact.redact(_truncate(texts[name], max(40, int(self.chars * share)))), 3)
                        for name, share in SHARES if name != "expected" or row["item"] in self.expected]
            attrs = [("id", row["item"]), ("run", row["run"]), ("step", row["step"]),
                     ("outcome", "failure" if failed(row) else "success"), ("hard", f"{row['hard']:.2f}"),
                     ("soft", f"{row['soft']:.2f}"), ("same_item", "yes" if row["item"] in ids else None),
                     ("similarity", f"{sim:.2f}")]
            blocks.append(container("recalled_trajectory", children, attrs))
        note = ("earlier attempts at similar train tasks, with earlier skill versions; not part of this minibatch: "
                "contrast them with it (what differs between a success and a failure of the same kind of task)")
        return "\n\n" + container("recalled", blocks, [("k", len(blocks)), ("note", note)])



# ---------------------------------------------------------------------------------------------- the loop's side
def recaller(memory: Memory, cfg: Config, run: str, step: int, splits: Splits, scorer: Any) -> Recaller:
    """Step `step`'s recaller: the memory before it, val and test hidden, train items' teacher references."""
    expected = {i.id: teacher_reference(scorer, i) for i in splits.train}
    return Recaller(memory.before(run, step), cfg.optimizer.recall_k, cfg.optimizer.recall_chars,
                    (*splits.val, *splits.test), expected)


def remember(memory: Memory | None, cfg: Config, trajs: Sequence[Trajectory], run: str, step: int
             ) -> dict[str, Any]:
    """The step's memory rows as its candidate notes' details (`{}` when recall is off); kept in `memory` too."""
    if cfg.optimizer.recall_k <= 0:
        return {}
    found = rows(trajs, run=run, step=step, branch=cfg.skill.branch, skill=cfg.skill.path)
    if memory is not None:
        memory.add(found)
    return {"recall_memory": found}
