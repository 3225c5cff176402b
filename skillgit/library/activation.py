"""Does a skill fire? Routers that pick skills for a prompt, and the scoring of trigger cases.

Contract:
- A router maps (prompt, the library) to the names of the skills loaded for it (`Router.route`). A router that
  could not find out (the agent failed, timed out) raises `RouteError`: the case is then unknown, left out of the
  scoring with its reason (`score_cases(errors=…)`), never counted as "did not fire"; the gate's coverage check
  sees it missing.
- `OverlapRouter` is the simulated agent's router: it picks the skills whose name and description cover at least
  `threshold` of the prompt's content words, the best `max_skills` of them; ties are broken by an order drawn from
  `seed`, and `noise` drops or swaps a pick with that chance, drawn from (seed, sample, prompt), so a scoring is
  deterministic per seed and sample number. It reads listings only, never a case's label.
- The real path reads which skills an agent loaded from its trace (`loaded_from_trace`): a call of the agent's
  skill tool naming the skill (Claude Code's `Skill` tool: `{"skill": "deploy"}`), or a read of the installed
  `SKILL.md`, whose result is not an error (`agents.trace.skill_load`). `TraceRouter` wraps any runner that returns
  an agent's stdout in a registered trace format.
- A case fires when its skill is among the loaded ones, and is correct when that equals `should_trigger`; its
  item score for the gate is 1 or 0 (`split_score`). `metrics` gives precision, recall and F1 per skill over its
  own cases (decoys are its negatives).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol, Sequence

from skillgit.agentic.trace import AgentTrace, parse, skill_load
from skillgit.errors import SkillgitError
from skillgit.library.model import Library, Listing, TriggerCase
from skillgit.loop.evaluate import SplitScore, blob_id

STOPWORDS = frozenset("""
a an and are as at be been but by can could do does did for from has have how i if in into is it its me my of
on or our please should so that the their them then there these this those to up us use used using was we what
when where which while who why will with would you your yours about after all also any before being both each
just make more most need not now only other over same some such than too very want get got let lets new one
skill
""".split())


def words(text: str) -> frozenset[str]:
    """The content words of `text`: lowercased, split on non-alphanumerics (hyphens too), stopwords dropped, a
    plural or -ing/-ed ending cut (so `deploying` meets `deploy`)."""
    out = set()
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        if w in STOPWORDS or len(w) < 2:
            continue
        for end in ("ing", "ed", "es", "s"):
            if w.endswith(end) and len(w) - len(end) >= 3 and not w.endswith("ss"):
                w = w[: -len(end)]
                break
        out.add(w)
    return frozenset(out)


class RouteError(SkillgitError):
    """The router could not say which skills an agent loaded (its run failed): the case is unknown."""


class Router(Protocol):
    def route(self, prompt: str, library: Library, sample: int = 0) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class OverlapRouter:
    threshold: float = 0.25
    max_skills: int = 1
    seed: int = 0
    noise: float = 0.0

    def coverage(self, prompt: str, listing: Listing) -> float:
        p = words(prompt)
        return len(p & words(f"{listing.name.replace('-', ' ')} {listing.description}")) / len(p) if p else 0.0

    def route(self, prompt: str, library: Library, sample: int = 0) -> tuple[str, ...]:
        listings = library.listings()

        def tie(name: str) -> str:
            return hashlib.sha256(f"{self.seed}:{name}".encode()).hexdigest()

        scored = sorted(((self.coverage(prompt, x), x.name) for x in listings), key=lambda t: (-t[0], tie(t[1])))
        picked = [name for score, name in scored if score >= self.threshold][: self.max_skills]
        if self.noise > 0:
            rng = random.Random(f"{self.seed}:{sample}:{prompt}")
            if picked and rng.random() < self.noise:
                picked = picked[1:]
            elif not picked and listings and rng.random() < self.noise:
                picked = [rng.choice(list(listings)).name]
        return tuple(picked)


def loaded_from_trace(trace: AgentTrace, names: Iterable[str], agent: str = "claude") -> tuple[str, ...]:
    """The skills of `names` the agent loaded in `trace` (see the module docstring), in `names`' order."""
    from skillgit.agents import registry

    preset = registry.get(agent).student
    tool = preset.skill_tool if preset is not None else ""
    install = preset.install_dir if preset is not None else ""
    return tuple(n for n in names
                 if skill_load(trace, n, install.format(name=n) + "/SKILL.md" if install else "", tool).state
                 == "loaded")


@dataclass(frozen=True)
class TraceRouter:
    """The real path: `run(prompt, library, sample)` runs an agent with the library installed and returns its
    stdout in trace format `fmt` (the agent registry's: `claude-stream`, …); the loaded skills are read from it
    (`library.agent.AgentRunner` runs a real CLI)."""

    run: Callable[[str, Library, int], str]
    fmt: str = "claude-stream"
    agent: str = "claude"

    def route(self, prompt: str, library: Library, sample: int = 0) -> tuple[str, ...]:
        trace = parse(self.run(prompt, library, sample), self.fmt)
        if trace.error:
            raise RouteError(f"the agent reported an error: {trace.error[:200]}", "the case is left out as unknown")
        return loaded_from_trace(trace, library.names, self.agent)


# ---------------------------------------------------------------------------------------------- scoring
@dataclass(frozen=True)
class CaseResult:
    case: TriggerCase
    loaded: tuple[str, ...]

    @property
    def fired(self) -> bool:
        return self.case.skill in self.loaded

    @property
    def correct(self) -> bool:
        return self.fired == self.case.should_trigger


def score_cases(router: Router, library: Library, cases: Sequence[TriggerCase], sample: int = 0,
                errors: dict[str, str] | None = None) -> list[CaseResult]:
    """Route every case's prompt once against the whole library (a prompt shared by cases is routed once). A
    case whose routing raised `RouteError` is left out; its reason goes to `errors` (case id → reason)."""
    routed: dict[str, tuple[str, ...] | str] = {}
    out = []
    for case in cases:
        if case.prompt not in routed:
            try:
                routed[case.prompt] = router.route(case.prompt, library, sample)
            except RouteError as exc:
                routed[case.prompt] = exc.message
        got = routed[case.prompt]
        if isinstance(got, str):
            if errors is not None:
                errors[case.id] = got
            continue
        out.append(CaseResult(case, got))
    return out


@dataclass(frozen=True)
class SkillMetrics:
    skill: str
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        return 2 * self.tp / (2 * self.tp + self.fp + self.fn) if self.tp else 0.0

    @property
    def cases(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    def describe(self) -> str:
        return (f"{self.skill}: precision {self.precision:.2f}, recall {self.recall:.2f}, F1 {self.f1:.2f} "
                f"over {self.cases} case(s)")


def metrics(results: Sequence[CaseResult]) -> dict[str, SkillMetrics]:
    """Precision, recall and F1 per skill, over each skill's own cases."""
    counts: dict[str, list[int]] = {}
    for r in results:
        row = counts.setdefault(r.case.skill, [0, 0, 0, 0])
        row[(0 if r.fired else 2) if r.case.should_trigger else (1 if r.fired else 3)] += 1
    return {s: SkillMetrics(s, *row) for s, row in sorted(counts.items())}


def split_score(results: Sequence[CaseResult], text: str, split: str = "val", round_: str = "",
                errors: dict[str, str] | None = None) -> SplitScore:
    """The results as the gate reads them: one item per case, 1.0 when it fired as it should (one sample: the
    router is deterministic for a sample number); `errors`: the unknown cases (the gate's coverage counts them)."""
    per_item = {r.case.id: (1.0, 1.0) if r.correct else (0.0, 0.0) for r in results}
    return SplitScore(split, blob_id(text), per_item, dict(errors or {}), identical=True, round=round_)
