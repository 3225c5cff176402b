"""`skillgit check`: the gate for human edits, for CI — score the skill at HEAD against a base on val with the
training gate's rules.

Contract:
- Both sides are the committed skill file (`skill.path`) at a revision: HEAD (what CI checked out) and the base
  (`--base`, else the merge-base of HEAD with the skill branch, else HEAD's parent when HEAD is on the skill
  branch). The working tree's uncommitted changes play no part.
- Scoring is `gate.Evaluator` over the project's val split with `evaluation.gate_repeats` and
  `evaluation.unscored_retries`; test is scored once per item and reported, never decisive. Both sides are scored
  in a round of their own (`check:<base>:<head>`: its own sample numbers), so the base is measured with HEAD,
  never answered by an earlier check's or run's scoring from the call journal; the same pair again replays.
- The verdict uses `gate.decide` with the project's `EvaluationCfg` (the gate always judges here, even when training
  runs with `use_gate: false`):
  - `improved` (exit 0): the gate would accept HEAD over the base;
  - `regressed` (exit 1): the base beats HEAD by the gate's own improvement checks (strict / significance / paired,
    with their margins and tests), or a `per_item` guard in `evaluation.gate` fails (an item dropped by more than
    `item_tolerance`, or was scored before and is unknown now);
  - `unchanged` (exit 0): neither — no regression within the gate's rules (also when the skill text is identical,
    which scores nothing);
  - `cannot_judge` (exit 2): the skill is missing at one side, or fewer than `evaluation.min_val_coverage` of val
    items could be scored for both sides (e.g. the student or the scorer failed), or the change edits the judge
    as well as the skill (`judge_paths`: the config file, the tasks, a scorer's or verifier's files, an agentic
    fixture differ between base and HEAD): the verdict would rest on rules the change chose, so nothing is scored
    and `judge_changed` names the files.
- Items flip as in `review.data` (pass = score ≥ 0.5). `render_markdown` is the table CI posts as the job summary.
- `refuse_commit_in_progress`: run from a `pre-commit` hook, HEAD is still the previous commit, so a commit that
  changes the skill would be judged by its parent's verdict; git names the index of the commit in progress to its
  hooks (GIT_INDEX_FILE), and when that index holds another skill than HEAD, check refuses (exit 2) and says to run
  it from `pre-push` instead. A commit in progress that leaves the skill as HEAD has it is checked as usual.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from skillgit.config import EvaluationCfg
from skillgit.errors import SkillgitError
from skillgit.loop import gate, guards
from skillgit.records import Coverage
from skillgit.review.data import NOT_RECORDED, ItemFlips, compare_items, wilson
from skillgit.review.pr import code, md
from skillgit.session import Session
from skillgit.store import Store
from skillgit.types import Item

EXIT = {"improved": 0, "unchanged": 0, "regressed": 1, "cannot_judge": 2}
HEADLINE = {"improved": "improvement — the gate would accept this edit", "unchanged": "no regression",
            "regressed": "regression", "cannot_judge": "cannot judge"}

ProgressFactory = Callable[[str], Callable[[int, int], None] | None]


@dataclass(frozen=True)
class Side:
    """One side of the comparison: a revision's skill and its scores (None = not scored or unknown)."""

    rev: str
    sha: str
    present: bool = True
    val: float | None = None
    val_scored: int = 0
    val_n: int = 0
    test: float | None = None
    test_scored: int = 0
    test_n: int = 0
    items: Mapping[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"rev": self.rev, "sha": self.sha, "present": self.present, "val": self.val,
                "val_scored": self.val_scored, "val_n": self.val_n, "test": self.test,
                "test_scored": self.test_scored, "test_n": self.test_n, "items": dict(self.items)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Side":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class CheckResult:
    verdict: str  # improved | unchanged | regressed | cannot_judge
    reason: str
    metric: str
    skill_path: str
    base: Side
    head: Side
    coverage: Coverage | None = None
    flips: ItemFlips = NOT_RECORDED
    checks: tuple[Mapping[str, Any], ...] = ()  # the forward gate's checks, each {name, passed, detail, numbers}
    detectable: str = ""  # what the val split lets the gate see (its minimum detectable effect)
    detectable_warning: bool = False  # … above 20 points
    judge_changed: tuple[str, ...] = ()  # the judge's files the change edits besides the skill (cannot_judge)

    @property
    def exit_code(self) -> int:
        return EXIT[self.verdict]

    @property
    def delta(self) -> float | None:
        if self.base.val is None or self.head.val is None:
            return None
        return self.head.val - self.base.val

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "exit": self.exit_code, "reason": self.reason, "metric": self.metric,
                "skill_path": self.skill_path, "delta": None if self.delta is None else round(self.delta, 6),
                "base": self.base.to_dict(), "head": self.head.to_dict(),
                "coverage": self.coverage.to_dict() if self.coverage else None, "flips": self.flips.to_dict(),
                "checks": [dict(c) for c in self.checks], "detectable": self.detectable,
                "detectable_warning": self.detectable_warning, "judge_changed": list(self.judge_changed)}


# ---------------------------------------------------------------------------------------------- the base
def _last_shared(store: Store, head: str, tip: str) -> str | None:
    """The newest commit on HEAD's first-parent chain that the skill branch contains (its merge-base with the
    branch in the usual cases: a PR branch forked from it, or GitHub's merge commit for a pull request). Ancestry
    along a first-parent chain is monotone, so a binary search asks git O(log n) times."""
    chain = [sha for sha, _ in store.repo.first_parent_chain(head)]  # newest first
    lo, hi = 0, len(chain)
    while lo < hi:
        mid = (lo + hi) // 2
        if store.repo.is_ancestor(chain[mid], tip):
            hi = mid
        else:
            lo = mid + 1
    return chain[lo] if lo < len(chain) else None


def resolve_base(store: Store, head_sha: str, base: str | None) -> tuple[str, str | None]:
    """(label, commit) of the base: `base` when given, else the merge-base with the skill branch, else HEAD~1."""
    if base:
        return base, store.resolve(base)
    shared = _last_shared(store, head_sha, store.tip())
    if shared is not None and shared != head_sha:
        return f"merge-base with {store.branch}", shared
    parents = store.repo.parents(head_sha)
    return "HEAD~1", parents[0] if parents else None


# ---------------------------------------------------------------------------------------------- scoring
def _side(label: str, sha: str, present: bool, val: gate.SplitScore | None, test: gate.SplitScore | None,
          metric: str, weight: float, val_n: int, test_n: int) -> Side:
    items: dict[str, float | None] = {}
    if val is not None:
        scored = {k: round(val.item_metric(k, metric, weight), 6) for k in val.per_item}
        items = {k: scored.get(k) for k in sorted(set(scored) | set(val.errors))}
    return Side(label, sha, present,
                round(val.mean(metric, weight), 6) if val is not None and val.per_item else None,
                len(val.per_item) if val is not None else 0, val_n,
                round(test.mean(metric, weight), 6) if test is not None and test.per_item else None,
                len(test.per_item) if test is not None else 0, test_n, items)


def refuse_commit_in_progress(store: Store, environ: Mapping[str, str], cwd: Path) -> None:
    """See the module's contract (`cwd`: where a relative GIT_INDEX_FILE is, as git's hooks get it)."""
    index = environ.get("GIT_INDEX_FILE")
    head = store.repo.ref("HEAD") if index else None
    if not index or head is None or store.repo.index_file_is(cwd / index, head, store.skill_path) is not False:
        return
    raise SkillgitError(f"a commit in progress changes {store.skill_path} (git gave this process its index: "
                        "GIT_INDEX_FILE, as in a pre-commit hook), but check scores the skill at HEAD, which is "
                        "still the previous commit: its verdict would not be about this edit",
                        "run `skillgit check` from a pre-push hook (HEAD is then the commit you push) or after "
                        "committing; `git commit --no-verify` skips the hook this time")


def run_check(session: Session, *, base: str | None = None, head: str = "HEAD", with_test: bool = True,
              progress: ProgressFactory = lambda label: None) -> CheckResult:
    """Score the skill at `head` against `base` (see the module's contract)."""
    cfg = session.project.config
    store, ecfg = session.store, dataclasses.replace(session.project.config.evaluation, use_gate=True)
    metric, weight = ecfg.gate_metric, ecfg.mixed_weight
    head_sha = store.resolve(head)
    base_label, base_sha = resolve_base(store, head_sha, base)
    val_items, test_items = list(session.splits.val), list(session.splits.test) if with_test else []
    texts = {name: _skill_text(store, sha) for name, sha in (("base", base_sha), ("head", head_sha))}
    sides = {"base": (base_label, base_sha or ""), "head": (head, head_sha)}
    unjudged = _unjudged(store.skill_path, metric, texts, sides, len(val_items), len(test_items))
    if unjudged is not None:
        return unjudged
    changed = judge_changes(store, base_sha or "", head_sha, judge_paths(session, [*val_items, *test_items]))
    if changed:
        return _judge_changed(store.skill_path, metric, sides, changed, len(val_items), len(test_items))
    student = session.student()
    repeats, deterministic = gate.planned_repeats(cfg)
    evaluator = gate.Evaluator(student, session.scorer, {"val": val_items}, workers=cfg.env.workers,
                               repeats=repeats, retries=ecfg.unscored_retries, deterministic=deterministic)
    # both sides measured now, in a round of their own: the base is never answered by an old scoring in the call
    # journal (CI caches it) while HEAD is asked fresh; the same pair checked again replays for free
    round_ = f"check:{base_sha}:{head_sha}"
    scores = {name: evaluator.score(texts[name] or "", "val", progress(f"val {name}"), round=round_)
              for name in ("base", "head")}
    tests: dict[str, gate.SplitScore | None] = {"base": None, "head": None}
    if test_items:  # reported, never decisive: one sample per item
        reporter = gate.Evaluator(student, session.scorer, {"test": test_items}, workers=cfg.env.workers,
                                  retries=ecfg.unscored_retries)
        tests = {name: reporter.score(texts[name] or "", "test", progress(f"test {name}"), round=round_)
                 for name in ("base", "head")}
    base_side, head_side = (_side(*sides[n], True, scores[n], tests[n], metric, weight, len(val_items),
                                  len(test_items)) for n in ("base", "head"))
    verdict, reason, result = judge(ecfg, scores["base"], scores["head"], [i.id for i in val_items],
                                    seed=zlib.crc32(f"{cfg.train.seed}:check:{base_sha}:{head_sha}".encode()))
    flips = compare_items(base_side.items, head_side.items)
    detectable, warn = gate.detectable_line(ecfg, len(val_items), evaluator.repeats,
                                            deterministic=evaluator.deterministic)
    return CheckResult(verdict, reason, metric, store.skill_path, base_side, head_side, result.coverage, flips,
                       tuple(c.to_dict() for c in result.checks), detectable, warn)


def _skill_text(store: Any, sha: str | None) -> str | None:
    data = store.repo.blob_at(sha, store.skill_path) if sha else None
    return data.decode("utf-8", "replace") if data is not None else None


def _unjudged(skill_path: str, metric: str, texts: dict[str, str | None], sides: dict[str, tuple[str, str]],
              val_n: int, test_n: int) -> CheckResult | None:
    """The result when nothing can be scored: the skill missing at a side, the same text at both, no val split."""
    def unscored(name: str) -> Side:
        label, sha = sides[name]
        return Side(label, sha, texts[name] is not None, val_n=val_n, test_n=test_n)

    missing = [name for name in ("base", "head") if texts[name] is None]
    if missing:
        where = " and ".join(f"{n} ({sides[n][1][:12] or 'no commit'})" for n in missing)
        return CheckResult("cannot_judge", f"the skill file {skill_path} is missing at {where}", metric,
                           skill_path, unscored("base"), unscored("head"))
    if texts["base"] == texts["head"]:
        return CheckResult("unchanged", f"{skill_path} is identical at both revisions: nothing to score",
                           metric, skill_path, unscored("base"), unscored("head"))
    if not val_n:
        return CheckResult("cannot_judge", "the val split is empty: nothing to judge on", metric, skill_path,
                           unscored("base"), unscored("head"))
    return None


# ---------------------------------------------------------------------------------------------- the judge
def judge_paths(session: Session, items: Sequence[Item]) -> list[str]:
    """The repository paths the verdict rests on besides the skill (`guards.judge_paths`)."""
    project = session.project
    return guards.judge_paths(project.root, project.config_path, project.config.env, session.scorer, items)


def judge_changes(store: Store, base: str, head: str, paths: Sequence[str]) -> list[str]:
    """The `paths` whose committed content differs between `base` and `head` (added, removed or edited); a folder
    holding the skill is compared without it. Nothing differs without a base."""
    if not base:
        return []
    return [p for p in paths if _content(store, base, p) != _content(store, head, p)]


def _content(store: Store, commit: str, path: str) -> Any:
    entry = store.repo.tree_entry(commit, path)
    skill = store.skill_path.strip("/")
    if entry is None or entry.type != "tree" or not (skill == path or skill.startswith(path + "/")):
        return None if entry is None else (entry.mode, entry.sha)
    inside = (f"{path}/{e.name}" for e in store.repo.ls_tree(entry.sha, recursive=True))
    return sorted(n for n in inside if n != skill and not n.startswith(skill + "/"))


def _judge_changed(skill_path: str, metric: str, sides: dict[str, tuple[str, str]], changed: list[str],
                   val_n: int, test_n: int) -> CheckResult:
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    reason = (f"cannot judge: the change edits the judge as well as the skill ({shown} differ between the base and "
              f"HEAD), so its verdict would rest on rules it chose itself; merge that change on its own first "
              f"(a person reviews it), then check the skill edit against it (or pass --base at a commit that "
              f"already has it)")
    base, head = (Side(*sides[n], val_n=val_n, test_n=test_n) for n in ("base", "head"))
    return CheckResult("cannot_judge", reason, metric, skill_path, base, head, judge_changed=tuple(changed))


def judge(ecfg: EvaluationCfg, before: gate.SplitScore, after: gate.SplitScore, items: list[str], *, seed: int = 0
          ) -> tuple[str, str, gate.GateResult]:
    """(verdict, reason, the forward gate result) for `after` (HEAD) against `before` (the base)."""
    forward = gate.decide(ecfg, before, after, seed=seed, items=items)
    if forward.reason.startswith("cannot judge") or any(c.name == "coverage" for c in forward.checks):
        return "cannot_judge", forward.reason, forward
    if forward.accept:
        return "improved", forward.reason, forward
    # Is the base better than HEAD by the gate's own improvement checks? (Guards such as per_item would ask the
    # opposite question when reversed; the forward per_item check covers them.)
    improvement = tuple(m for m in ecfg.gate if m in gate.IMPROVEMENT_CHECKS) or ("strict",)
    backward = gate.decide(dataclasses.replace(ecfg, gate=improvement), after, before, seed=seed, items=items)
    dropped = next((c for c in forward.checks if c.name == "per_item" and not c.passed), None)
    if backward.accept:
        return "regressed", f"worse: the base would pass the gate against HEAD — {backward.reason}", forward
    if dropped is not None:
        return "regressed", f"per_item: {dropped.detail}", forward
    return "unchanged", f"no regression within the gate's rules — {forward.reason}", forward


# ---------------------------------------------------------------------------------------------- output
def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _cell(value: float | None, n: int) -> str:
    bounds = wilson(value, n)
    return _num(value) + (f" ({bounds[0]:.2f}–{bounds[1]:.2f})" if bounds else "")


def _ids(ids: tuple[str, ...], limit: int = 20) -> str:
    shown = ", ".join(code(i) for i in ids[:limit])
    return (shown + (f" … and {len(ids) - limit} more" if len(ids) > limit else "")) or "none"


def render_markdown(result: CheckResult) -> str:
    b, h = result.base, result.head
    delta = result.delta
    test_delta = None if b.test is None or h.test is None else h.test - b.test
    lines = [f"## skillgit check: {code(result.skill_path)}", "",
             f"**{HEADLINE[result.verdict]}** (exit {result.exit_code}) — {md(result.reason)}", "",
             f"| {md(result.metric)} | base {code(b.sha[:10] or '–')} | HEAD {code(h.sha[:10] or '–')} | Δ |",
             "| --- | ---: | ---: | ---: |",
             f"| val (decides; {b.val_n} items) | {_cell(b.val, b.val_scored)} | {_cell(h.val, h.val_scored)} | "
             f"{_num(delta, True)} |",
             *([f"| test (reported only; {b.test_n} items) | {_cell(b.test, b.test_scored)} | "
                f"{_cell(h.test, h.test_scored)} | {_num(test_delta, True)} |"] if b.test_n else []),
             f"| val items scored | {b.val_scored}/{b.val_n} | {h.val_scored}/{h.val_n} | |", ""]
    if result.detectable:
        lines += [("⚠️ " if result.detectable_warning else "") + md(result.detectable), ""]
    f = result.flips
    if f.recorded:
        lines += [f"**Val items flipped** (pass = score ≥ 0.5): fixed {len(f.fixed)}: {_ids(f.fixed)} · "
                  f"broke {len(f.broke)}: {_ids(f.broke)}"
                  + (f" · unknown on one side {len(f.unknown)}: {_ids(f.unknown)}" if f.unknown else ""), ""]
    if result.checks:
        lines += ["<details><summary>gate checks</summary>", ""]
        lines += [f"- {'✅' if c.get('passed') else '❌'} {md(str(c.get('name')))}: {md(str(c.get('detail')))}"
                  for c in result.checks]
        lines += ["", "</details>", ""]
    lines.append(f"<sub>Intervals: Wilson 95 % over items. Base: {md(b.rev)}. Exit codes: 0 no regression, "
                 "1 regression, 2 cannot judge.</sub>")
    return "\n".join(lines) + "\n"
