"""Scoring a skill on a split: `SplitScore` (what a scoring found) and `Evaluator` (how it is made).

Contract:
- `Evaluator.score` runs the student on every item of a split, `repeats` samples per item, all in one wave; an
  item whose run failed (API error after retries, scorer crash) is *unknown*: retried `retries` more times, then
  left out, never counted as a failure. Every (item, repeat) score is kept (`SplitScore.samples`); `per_item` holds
  their means, the unit the gate tests.
- **Rounds.** Each scoring belongs to a round (the step it serves: `round=3`, `"e1-slow-update"`; `""` outside
  training). The blob-id cache answers only within a round, so an incumbent gated again in a later step is
  measured again, in the same wave as its candidates; `latest` returns the most recent scoring of a text from any
  round for reports that must not pay (the final val column). Each round asks for its own sample numbers
  (`sample_base`): a re-scoring is a new measurement, never the call journal answering the old requests, and a
  resumed round asks the same numbers again, so the journal answers what it already paid. `copy=1` scores a
  byte-identical copy of a text with yet other sample numbers (a second null control).
- **Identical repeats.** A scoring whose every item's repeats gave the same answer holds copies: it keeps one
  sample per item and says so (`identical`); copies are not evidence. A student known to give copies (temperature
  0), or found to on `IDENTICAL_STREAK` different texts in a row over `IDENTICAL_ITEMS` items (a deterministic
  model or agent: one weak skill alone can make a noisy student answer alike), is scored once per item from then
  on.
- Every scoring records the student's `fingerprint` (agent CLI version, config hash: whatever the student's
  `fingerprint` attribute gives), so the gate can tell two scorings of different students apart.
"""

from __future__ import annotations

import hashlib
import threading
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from skillgit.executor import Executor
from skillgit.llm.base import Student
from skillgit.llm.metering import bind_stage
from skillgit.loop.stages import Scorer, rollout_samples
from skillgit.records import ScoreRecord
from skillgit.types import Item, Trajectory

SAMPLE_STRIDE = 1000  # sample numbers per round: the repeats, then (from half-way) a copy control's
COPY_SLOT = SAMPLE_STRIDE // 2
MAX_REPEATS = COPY_SLOT  # evaluation.gate_repeats is checked against it
IDENTICAL_STREAK = 3  # different texts whose repeats all came back identical before the student counts as such…
IDENTICAL_ITEMS = 30  # …over at least this many (text, item) pairs (4 items alike thrice is no proof)


def blob_id(text: str) -> str:
    """The SHA-1 git blob id of `text` (what `git hash-object` prints in a SHA-1 repository; a SHA-256 repository
    names blobs otherwise), computed without touching git: a cache key for skill texts, never looked up in git."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def metric_of(hard: float, soft: float, metric: str, mixed_weight: float = 0.5) -> float:
    if metric == "hard":
        return hard
    if metric == "soft":
        return soft
    return mixed_weight * hard + (1.0 - mixed_weight) * soft


def sample_base(round_: int | str, copy: int = 0) -> int:
    """The first sample number a round asks for: 0 for the run's start (`""`, `0`), `step × SAMPLE_STRIDE` for a
    numbered step, a stable hash for named ones (epoch candidates); a copy control starts half a stride later."""
    text = str(round_)
    if text in ("", "0", "start"):
        index = 0
    elif text.isdigit():
        index = int(text)
    else:
        index = 1_000_000 + zlib.crc32(text.encode("utf-8")) % 1_000_000
    return index * SAMPLE_STRIDE + (COPY_SLOT if copy else 0)


def student_fingerprint(student: Any) -> dict[str, str]:
    """The student's `fingerprint` (a mapping, or a callable returning one), looked up through wrappers that keep
    the wrapped student in `.inner`; {} when it has none."""
    obj = student
    for _ in range(8):
        try:
            value = getattr(obj, "fingerprint", None)
            if callable(value):
                value = value()
        except Exception:  # noqa: BLE001 - a fingerprint is evidence, never a reason to stop scoring
            value = None
        if isinstance(value, Mapping):
            return {str(k): str(v) for k, v in sorted(value.items())}
        obj = getattr(obj, "__dict__", {}).get("inner")
        if obj is None:
            break
    return {}


@dataclass
class SplitScore:
    """Per-item (hard, soft) over the items that could be scored; `errors` lists the unknown ones. `samples` holds
    each repeat's (hard, soft) for items scored more than once; `per_item` is always their mean. `repeats` is what
    was asked per item, `identical` that the student's repeats are copies (each item scored once), `round` the
    round it was scored in and `fingerprint` the student's."""

    split: str
    blob: str
    per_item: dict[str, tuple[float, float]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    trajectories: list[Trajectory] = field(default_factory=list)
    samples: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # agentic: setup / agent / verify, summed over runs
    repeats: int = 1
    identical: bool = False
    round: str = ""
    fingerprint: dict[str, str] = field(default_factory=dict)

    def item_metric(self, item_id: str, metric: str, mixed_weight: float = 0.5) -> float:
        hard, soft = self.per_item[item_id]
        return metric_of(hard, soft, metric, mixed_weight)

    def item_samples(self, item_id: str, metric: str, mixed_weight: float = 0.5) -> list[float]:
        """The item's score per repeat (one value when it was scored once, or its repeats are copies)."""
        rows = self.samples.get(item_id)
        if not rows or self.identical:
            return [self.item_metric(item_id, metric, mixed_weight)]
        return [metric_of(h, s, metric, mixed_weight) for h, s in rows]

    def sample_count(self, ids: Sequence[str] | set[str] | None = None) -> int:
        """Scored samples of the items `ids` (default: all): repeats that are copies count once."""
        keys = [k for k in self.per_item if ids is None or k in ids]
        return sum((0 if self.identical else len(self.samples.get(k) or ())) or 1 for k in keys)

    def mean(self, metric: str, mixed_weight: float = 0.5, ids: set[str] | None = None) -> float:
        keys = [k for k in self.per_item if ids is None or k in ids]
        if not keys:
            return 0.0
        return sum(self.item_metric(k, metric, mixed_weight) for k in keys) / len(keys)

    def record(self) -> ScoreRecord:
        """This scoring as a gate note keeps it (scores rounded to 4 places)."""
        def pair(h: float, s: float) -> tuple[float, float]:
            return round(h, 4), round(s, 4)

        return ScoreRecord(self.split, self.blob, {k: pair(*v) for k, v in self.per_item.items()},
                           dict(self.errors), self.repeats, self.sample_count(), self.identical, self.round,
                           dict(self.fingerprint), dict(self.seconds),
                           {k: tuple(pair(*v) for v in rows) for k, rows in self.samples.items()})

    def to_record(self) -> dict[str, Any]:
        return self.record().to_dict()

    @classmethod
    def from_trajectories(cls, split: str, blob: str, trajectories: list[Trajectory]) -> SplitScore:
        """The score of runs already made (one sample each), e.g. a step's train batch for `two_split`."""
        result = cls(split, blob, trajectories=list(trajectories))
        for t in trajectories:
            if t.ok and t.score is not None:
                result.per_item[t.item_id] = (t.score.hard, t.score.soft)
                result.errors.pop(t.item_id, None)
            elif t.item_id not in result.per_item:
                result.errors[t.item_id] = t.error or "unknown"
        return result


@dataclass(frozen=True)
class _Request:
    skill: str
    split: str
    items: tuple[Item, ...]
    repeats: int
    key: tuple[str, ...]
    base: int  # the first sample number
    round: str


class Evaluator:
    """Scores skills on named splits (`score`, `score_many`) or on a given list of items (`score_items`, e.g. a
    step's train batch for `two_split`), `repeats` samples per item (see the module's contract).
    `deterministic`: the student's repeats are known to be copies (temperature 0): score each item once."""

    def __init__(self, student: Student, scorer: Scorer, splits: dict[str, list[Item]], *, workers: int,
                 repeats: int = 1, retries: int = 0, executor: Executor | None = None,
                 deterministic: bool = False):
        self.student = student
        self.scorer = scorer
        self.splits = splits
        self.workers = workers
        self.executor = executor  # None: the thread pool
        self.asked_repeats = max(1, repeats)
        self.deterministic = deterministic
        self.identical_seen = ""  # why repeats were found to be copies (said once by the run)
        self._identical_texts: list[str] = []  # blobs of the latest scorings whose repeats were all copies
        self._identical_items = 0  # …and how many items they scored
        self.retries = max(0, retries)
        self.retried = 0  # unknown item runs tried again
        self._cache: dict[tuple[str, ...], SplitScore] = {}
        self._latest: dict[tuple[str, ...], SplitScore] = {}
        self._inflight: dict[tuple[str, ...], threading.Event] = {}
        self._round: str | None = None
        self._lock = threading.Lock()
        self.cache_hits = 0
        self._unbooked: dict[str, float] = {}  # phase seconds not yet taken into the run's progress

    @property
    def repeats(self) -> int:
        """Samples per val item as scored now: 1 once the student's repeats are known to be copies."""
        return 1 if self.deterministic else self.asked_repeats

    def take_seconds(self) -> dict[str, float]:
        """The setup / agent / verify seconds of every rollout made since the last call (retries included)."""
        with self._lock:
            out, self._unbooked = self._unbooked, {}
        return out

    def score(self, skill: str, split: str, on_progress: Callable[[int, int], None] | None = None, *,
              round: int | str = "", copy: int = 0) -> SplitScore:
        """`repeats` samples per item of `split`; errors (unknown runs) are excluded, not counted as zero."""
        return self.score_many([skill], split, on_progress, round=round, copy=copy)[0]

    def score_many(self, skills: Sequence[str | tuple[str, int]], split: str,
                   on_progress: Callable[[int, int], None] | None = None, *, round: int | str = "",
                   copy: int = 0) -> list[SplitScore]:
        """Several texts on `split` in one wave (an incumbent and its candidate: the same moment of the student);
        a `(text, copy)` pair asks for that copy. A text this round scored already, or is scoring in another
        thread, is not scored twice."""
        items = tuple(self.splits[split])
        pairs = [s if isinstance(s, tuple) else (s, copy) for s in skills]
        requests = [self._request(text, split, items, self.repeats, (), round, c) for text, c in pairs]
        return self._run(requests, on_progress)

    def score_items(self, skill: str, items: list[Item], split: str = "train", *, repeats: int = 1,
                    on_progress: Callable[[int, int], None] | None = None, round: int | str = "") -> SplitScore:
        """`skill` on exactly `items` (labelled `split`), `repeats` samples each; cached like `score`."""
        ids = hashlib.sha1("\x1f".join(i.id for i in items).encode("utf-8")).hexdigest()
        request = self._request(skill, split, tuple(items), max(1, repeats), (ids, str(repeats)), round, 0)
        return self._run([request], on_progress)[0]

    def latest(self, skill: str, split: str) -> SplitScore:
        """The most recent scoring of `skill` on `split` from any round; scored now (round "") if there is none."""
        with self._lock:
            found = self._latest.get((blob_id(skill), split))
        return found if found is not None else self.score(skill, split)

    # ------------------------------------------------------------------------------------------ internals
    def _request(self, skill: str, split: str, items: tuple[Item, ...], repeats: int, extra: tuple[str, ...],
                 round_: int | str, copy: int) -> _Request:
        key = (blob_id(skill), split, *extra, str(round_), str(copy))
        return _Request(skill, split, items, repeats, key, sample_base(round_, copy), str(round_))

    def _run(self, requests: list[_Request], on_progress: Callable[[int, int], None] | None) -> list[SplitScore]:
        mine: list[_Request] = []
        waits: list[threading.Event] = []
        with self._lock:
            for r in requests:
                self._enter_round(r.round)
                if r.key in self._cache:
                    self.cache_hits += 1
                elif r.key in self._inflight:
                    waits.append(self._inflight[r.key])
                elif all(r.key != m.key for m in mine):
                    self._inflight[r.key] = threading.Event()
                    mine.append(r)
        try:
            if mine:
                self._measure(mine, on_progress)
        finally:
            with self._lock:
                for r in mine:
                    self._inflight.pop(r.key).set()
        for event in waits:
            event.wait()
        out = []
        for r in requests:
            with self._lock:
                found = self._cache.get(r.key)
            if found is None:  # the thread that claimed it failed: its error was raised there; try here
                found = self._run([r], on_progress)[0]
            out.append(found)
        return out

    def _enter_round(self, name: str) -> None:
        """A new round: earlier rounds' scorings stop answering (they stay in `latest`). Lock held."""
        if name != self._round:
            self._round = name
            self._cache = {k: v for k, v in self._cache.items() if k[-2] == name}

    def _measure(self, requests: list[_Request], on_progress: Callable[[int, int], None] | None) -> None:
        stage = "gate" if requests[0].split == "val" else requests[0].split
        student = bind_stage(self.student, stage)
        fingerprint = student_fingerprint(self.student)
        # One wave: every (text, repeat, item) at once; per text sample-major (its first len(items) are sample 0).
        jobs = [(n, item, r.base + s) for n, r in enumerate(requests) for s in range(r.repeats) for item in r.items]

        def run(chosen: list[tuple[int, Item, int]], progress: Callable[[int, int], None] | None
                ) -> list[Trajectory]:
            table = _JobTable(student, [(requests[n].skill, sample) for n, _, sample in chosen])
            return rollout_samples(table, "", [(item, i) for i, (_, item, _) in enumerate(chosen)], self.scorer,
                                   workers=self.workers, on_progress=progress, executor=self.executor)

        trajs = run(jobs, on_progress)
        spent = [dict(t.timings) for t in trajs]  # per job, retries included
        for _ in range(self.retries):  # unknown runs are tried again before anything is decided on them
            failed = [i for i, t in enumerate(trajs) if not t.ok]
            if not failed:
                break
            with self._lock:
                self.retried += len(failed)
            for i, t in zip(failed, run([jobs[i] for i in failed], None)):
                trajs[i], spent[i] = t, add_seconds(spent[i], t.timings)
        per_text = [[t for (m, _, _), t in zip(jobs, trajs) if m == n] for n in range(len(requests))]
        results = [self._collect(r, per_text[n], fingerprint, _seconds_of(n, jobs, spent))
                   for n, r in enumerate(requests)]
        with self._lock:
            for row in spent:
                if row:
                    self._unbooked = add_seconds(self._unbooked, row)
            self._watch_copies(requests, results, per_text)
            for r, s in zip(requests, results):
                self._cache[r.key] = s
                self._latest[r.key[:2]] = s

    def _watch_copies(self, requests: list[_Request], results: list[SplitScore],
                      trajs: list[list[Trajectory]]) -> None:
        """Collapse val scorings whose repeats came back as copies, and once enough different skill texts did
        (IDENTICAL_STREAK texts, IDENTICAL_ITEMS items), score each val item once from then on. Under the lock."""
        for n, r in enumerate(requests):
            if r.repeats < 2 or r.split != "val":
                continue
            if _copies(trajs[n], r.repeats):
                results[n] = _collapsed(results[n])
                if r.key[0] not in self._identical_texts:
                    self._identical_texts.append(r.key[0])
                    self._identical_items += len(r.items)
            else:
                self._identical_texts.clear()
                self._identical_items = 0
        if not self.deterministic and len(self._identical_texts) >= IDENTICAL_STREAK \
                and self._identical_items >= IDENTICAL_ITEMS:
            self.deterministic = True
            self.identical_seen = (
                f"the student's {max(r.repeats for r in requests)} repeats of every val item came back identical "
                f"for {len(self._identical_texts)} different skill texts (temperature 0, or a deterministic "
                f"model or agent): each val item is scored once from now on")

    def _collect(self, r: _Request, trajs: list[Trajectory], fingerprint: dict[str, str],
                 seconds: dict[str, float]) -> SplitScore:
        result = SplitScore(r.split, r.key[0], repeats=r.repeats, identical=self.deterministic, round=r.round,
                            fingerprint=fingerprint, seconds=seconds)
        rows: dict[str, list[tuple[float, float]]] = {}
        for t in trajs:
            if t.ok and t.score is not None:
                rows.setdefault(t.item_id, []).append((t.score.hard, t.score.soft))
            else:
                result.errors[t.item_id] = t.error or "unknown"
        result.trajectories = trajs[:len(r.items)]
        for item_id, scores in rows.items():
            result.per_item[item_id] = (sum(h for h, _ in scores) / len(scores),
                                        sum(s for _, s in scores) / len(scores))
            result.errors.pop(item_id, None)
        if r.repeats > 1:
            result.samples = rows  # every (item, repeat) score: the per_item check reads their spread
        return result


class _JobTable:
    """A student for `rollout_samples` whose `sample` argument indexes (skill text, sample) pairs: one wave for
    several texts, through the one rollout path (its error handling, progress and executor)."""

    def __init__(self, student: Student, table: list[tuple[str, int]]):
        self.student = student
        self.table = table

    @property
    def id(self) -> str:
        return self.student.id

    def run(self, skill: str, item: Item, sample: int = 0) -> Any:
        text, real = self.table[sample]
        return self.student.run(text, item, real)


def _copies(trajs: list[Trajectory], repeats: int) -> bool:
    """Every item was answered `repeats` times, the same answer each time (and there are at least two items)."""
    answers: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for t in trajs:
        if not t.ok:
            return False
        answers.setdefault(t.item_id, set()).add(t.output)
        counts[t.item_id] = counts.get(t.item_id, 0) + 1
    return len(answers) >= 2 and all(len(a) == 1 for a in answers.values()) and \
        all(c == repeats for c in counts.values())


def _collapsed(score: SplitScore) -> SplitScore:
    """`score` with its copies dropped: one sample per item, marked identical."""
    score.samples = {}
    score.identical = True
    return score


def phase_seconds(trajs: list[Trajectory]) -> dict[str, float]:
    """Summed setup / agent / verify seconds of rollouts (empty for students that do not report them)."""
    out: dict[str, float] = {}
    for t in trajs:
        for phase, value in t.timings.items():
            out[phase] = round(out.get(phase, 0.0) + float(value), 3)
    return out


def add_seconds(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    return {k: round(a.get(k, 0.0) + b.get(k, 0.0), 3) for k in sorted({*a, *b})}


def _seconds_of(n: int, jobs: list[tuple[int, Item, int]], spent: list[dict[str, float]]) -> dict[str, float]:
    """The seconds request `n`'s jobs took, per stage, retries included."""
    seconds: dict[str, float] = {}
    for (m, _, _), row in zip(jobs, spent):
        if m == n and row:
            seconds = add_seconds(seconds, row)
    return seconds
