"""`skillgit pr`: a pull request that carries its evidence — the body, pushing the head branch, `gh pr create`.

Contract:
- `render_body(review, base, head, skill_path)` is Markdown with, in order: a one-paragraph summary; seed / best /
  final on val and test with Wilson 95 % intervals over items; each accepted decision with its val before → after and
  Δ (the decision notes' numbers, as `skillgit log --json` shows them), the gate's reason, the val items it fixed and
  broke, its edits with their rationale, its diff and cost; the rejected alternatives collapsed in one `<details>`;
  cost and tokens by role and by stage; the config digest and how to reproduce. Model-written text is made inert
  (`textsafe.inert_markdown`: no raw HTML, link, image, autolink or `@` mention, table pipes escaped; diffs sit in a
  fence longer than any backtick run they contain). The body stays under GitHub's 65,536-character limit (counted as
  GitHub counts, in UTF-16 units, with 1,000 to spare): `fit_body` shortens diffs, lists and long texts first
  (SHRINK), then details fewer accepted decisions (pointing at `skillgit log` for the rest), and as a last resort cuts
  after a whole line with its open code fence / `<details>` closed and a note — the bound holds for any input.
- `check_head` refuses a head branch that does not exist (naming it and the fix) before anything is written: a
  local branch, or, when it is not to be pushed, a branch a remote has. `check_base` does the same for the base
  branch (a local branch or one a remote has: `gh pr create --base` names the remote's), and `check_distinct`
  refuses a head that is the base itself (a run trained on the branch it would merge into: nothing to propose).
- `push_head` pushes the head branch (with skillgit's notes, tags and runs) through `Store.push`: never forced; the
  branch and remote names are checked first (`refs.check_branch`, `refs.check_remote`).
- `create_with_gh` runs `gh pr create --base=… --head=… --title=… --body-file=…` in the repository (names checked
  by `refs.check_branch`; each value joined to its flag, so none can be read as a flag) and returns what gh
  printed (the PR's address); without `gh` on PATH it raises a SkillgitError that says what to install.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from skillgit import envs, textsafe
from skillgit.errors import SkillgitError
from skillgit.review.data import RunReview, StepReview, proposer_line, total_usage, wilson
from skillgit.review.show import flips_lines
from skillgit.store import Store
from skillgit.store import refs as R
from skillgit.types import Usage

GITHUB_BODY_LIMIT = 65_536
GH_INSTALL_HINT = ("install the GitHub CLI `gh` (https://cli.github.com — macOS: `brew install gh`, Debian/Ubuntu: "
                   "`sudo apt install gh`, Windows: `winget install --id GitHub.cli`), sign in with `gh auth login`, "
                   "then run the same command again")


@dataclass(frozen=True)
class PullRequest:
    run: str
    base: str
    head: str
    title: str
    body: str

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "base": self.base, "head": self.head, "title": self.title, "body": self.body}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PullRequest":
        return cls(*(str(data.get(k, "")) for k in ("run", "base", "head", "title", "body")))


# ---------------------------------------------------------------------------------------------- inert text
def md(text: str, limit: int | None = None) -> str:
    """One line of model- or user-written text, inert in Markdown (`textsafe.inert_markdown`: no HTML, link, image,
    autolink or mention; pipes escaped); longer than `limit` characters: cut there with "…" (before escaping, so no
    escape is cut in two)."""
    flat = " ".join(str(text).split())
    if limit is not None and len(flat) > limit:
        flat = flat[:max(0, limit - 1)] + "…"
    return textsafe.inert_markdown(flat)


def code(text: str) -> str:
    """Inline code that cannot be closed early by the text itself (`textsafe.code_span`)."""
    return textsafe.code_span(text)


def fence(body: str, lang: str = "") -> str:
    ticks = "`" * max(3, max((len(m) for m in re.findall(r"`+", body)), default=0) + 1)
    return f"{ticks}{lang}\n{body.rstrip(chr(10))}\n{ticks}"


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _interval(value: float | None, n: int | None) -> str:
    bounds = wilson(value, n)
    return "–" if bounds is None else f"{bounds[0]:.3f}–{bounds[1]:.3f}"


# ---------------------------------------------------------------------------------------------- sections
def _scores(review: RunReview) -> list[str]:
    m = review.metric
    rows = [f"| skill | val ({m}) | 95 % interval | test ({m}) | 95 % interval | commit |",
            "| --- | ---: | ---: | ---: | ---: | --- |"]
    for name in ("seed", "best", "final"):
        s = review.scores.get(name)
        if s is None:
            continue
        rows.append(f"| {name} | {_num(s.val)} | {_interval(s.val, review.val_n)} | {_num(s.test)} | "
                    f"{_interval(s.test, review.test_n)} | {code(s.rev[:10]) if s.rev else '–'} |")
    sizes = f"n = {review.val_n or '?'} val and {review.test_n or '?'} test items"
    rows += ["", f"Means over {sizes} (each item's score is its mean over the gate's repeats); intervals are Wilson "
                 "95 % intervals over items. Val decided every step; **test is reported, never used for a "
                 "decision.**"]
    named = envs.metric_of_config(review.config_yaml)
    if named:  # a benchmark environment scored the run: name the paper's metric that hard/soft stand for
        rows += ["", f"Scored by the environment {code(named[0])}: {md(named[1])}."]
    return rows


def _edits(d: StepReview, max_text: int | None) -> list[str]:
    lines = []
    for r in (d.update.applied if d.update else ()):
        e = r.edit
        target = e.target if max_text is None or len(e.target) <= max_text else e.target[:max_text - 1] + "…"
        where = f" at {code(target)}" if e.target and e.op != "append" else ""
        lines.append(f"- **{md(e.op)}**{where}: {md(e.content, max_text) or '(removed)'}")
        if e.rationale:
            lines.append(f"  - why: {md(e.rationale, max_text)}")
    return lines or ["- (no edit recorded)"]


def _diff(d: StepReview, max_lines: int) -> list[str]:
    if not d.diff:
        return ["(diff not available)"]
    lines = d.diff.splitlines()
    where = f"`skillgit show {d.outcome.sha[:12]}`"  # a commit: also found on a branch other than skill.branch
    if max_lines <= 0:
        return [f"Diff: {len(lines)} lines — {where}."]
    cut = lines[:max_lines]
    more = [f"… {len(lines) - max_lines} more lines: {where}"] if len(lines) > max_lines else []
    return [fence("\n".join(cut), "diff"), *more]


def _usage_line(u: Usage) -> str:
    return f"${u.cost_usd:.4f} · {u.calls} calls · {u.total_tokens:,} tokens"


def _accepted(review: RunReview, max_diff_lines: int, max_text: int | None, max_accepted: int | None) -> list[str]:
    out = [f"### Accepted edits ({len(review.accepted)})", ""]
    if not review.accepted:
        return out + ["None: the gate accepted no candidate in this run.", ""]
    shown = review.accepted if max_accepted is None else review.accepted[:max_accepted]
    for n, d in enumerate(shown, 1):
        o = d.outcome
        out += [f"#### {n}. {code(d.label)} ({code(o.sha[:10])}) — val {_num(o.score_before)} → {_num(o.score_after)} "
                f"(Δ {_num(o.delta, True)})", "",
                f"Gate: {md(o.reason, max_text)}" + (f" · {o.coverage.describe()}" if o.coverage and
                                                     o.coverage.describe() not in o.reason else ""), "",
                "Val items: " + " · ".join(md(line) for line in flips_lines(d.flips, bool(d.items))), "",
                *_edits(d, max_text), "", *_diff(d, max_diff_lines), "",
                f"Cost: {_usage_line(o.usage)}", *_train_line(d), ""]
    if len(shown) < len(review.accepted):
        out += [f"… and {len(review.accepted) - len(shown)} more accepted edit(s), left out to keep this body under "
                f"GitHub's size limit: `skillgit log --run {review.run}`, `skillgit show <commit>`.", ""]
    return out


def _train_line(d: StepReview) -> list[str]:
    """The step's train-batch rollout score (the skill before the edits), labelled; none when not recorded."""
    if d.train_score is None:
        return []
    return [f"Train batch (the rollouts this step learned from, scored with the skill before its edits): "
            f"{d.train_score:.4f}"]


def _rejected(review: RunReview, max_items: int, max_text: int | None) -> list[str]:
    rejected = review.rejected
    out = [f"### Rejected alternatives ({len(rejected)})", ""]
    if not rejected:
        return out + ["None.", ""]
    out += [f"<details><summary>{len(rejected)} candidate(s) the gate rejected, with why</summary>", ""]
    for d in rejected[:max_items]:
        o = d.outcome
        out.append(f"- {code(d.label)} val {_num(o.score_before)} → {_num(o.score_after)} (Δ {_num(o.delta, True)}), "
                   f"tag {code(d.tag)}: {md(o.reason, max_text)}")
        out += ([f"  - {md(e.op)}: {md(e.content or e.target, max_text)}" for e in d.applied]
                or ["  - (no applicable edit)"])
    if len(rejected) > max_items:
        out.append(f"- … and {len(rejected) - max_items} more: `skillgit rejected`")
    return out + ["", "</details>", ""]


def _usage_table(review: RunReview) -> list[str]:
    p = review.progress
    out = ["### Cost and tokens", "", "| | calls | prompt tokens | completion tokens | cost (USD) |",
           "| --- | ---: | ---: | ---: | ---: |"]
    for title, group in (("role", p.usage_by_role), ("stage", p.usage_by_stage)):
        for name, u in sorted(group.items()):
            out.append(f"| {title}: {md(name)} | {u.calls} | {u.prompt_tokens:,} | {u.completion_tokens:,} | "
                       f"{u.cost_usd:.4f} |")
    total = p.usage if p.usage.calls else total_usage(p.usage_by_stage)
    out.append(f"| **total** | {total.calls} | {total.prompt_tokens:,} | {total.completion_tokens:,} | "
               f"{total.cost_usd:.4f} |")
    if len(p.proposers) > 1:  # mixed proposers (optimizer.proposers, or the schedule switched)
        out += ["", "Proposers (acceptance over the candidates each made, and what building them cost):", "",
                *(f"- {md(proposer_line(name, stats))}" for name, stats in sorted(p.proposers.items()))]
    return out + [""]


def _reproduce(review: RunReview) -> list[str]:
    commands = review.reproduce().replace(" && ", "\n")
    return ["### Reproduce", "",
            f"Config digest {code(review.progress.config_digest or '?')}; the run's resolved config (secrets "
            f"masked) and progress are on {code('refs/skillgit/runs/' + review.run)} (shared by `skillgit push`).",
            "", fence("skillgit pull origin   # the run ref, notes and rejected tags\n" + commands, "bash"), ""]


def render_body(review: RunReview, *, base: str, head: str, skill_path: str, max_diff_lines: int = 200,
                max_rejected: int = 200, max_text: int | None = None, max_accepted: int | None = None) -> str:
    """The body; the max_* arguments shorten it (diff lines per edit, rejected alternatives listed, characters
    of one model-written text, accepted decisions detailed; None: no limit)."""
    p = review.progress
    seed, final = review.scores.get("seed"), review.scores.get("final")
    change = (f"val {_num(seed.val)} → {_num(final.val)}" if seed and final else "")
    head_lines = [
        f"## What skillgit learned: {code(skill_path)}", "",
        f"Run {code(review.run)} trained {code(skill_path)} on {code(head)} (from {code(base)}): "
        f"{len(review.decisions)} gate decision(s), **{len(review.accepted)} accepted**, {len(review.rejected)} "
        f"rejected; {change} on the gate metric ({md(review.metric)}). Run status: {md(p.status)}"
        + (f" ({md(p.stop_reason)})" if p.stop_reason else "") + ".", "",
        "### Scores", "", *_scores(review), ""]
    body = [*head_lines, *_accepted(review, max_diff_lines, max_text, max_accepted),
            *_rejected(review, max_rejected, max_text), *_usage_table(review), *_reproduce(review),
            f"<sub>Written by `skillgit pr --run {review.run}`. Audit: `git log {base}..{head}` (each learned "
            f"commit's verdict, val Δ and edits), `skillgit show <commit>`, `skillgit report {review.run}`.</sub>", ""]
    return "\n".join(body)


def github_length(text: str) -> int:
    """The length GitHub's limit counts (UTF-16 code units: a character outside the BMP counts twice)."""
    return len(text.encode("utf-16-le")) // 2


# Shortening settings, tried in order until the body fits: (diff lines, rejected listed, characters of one text).
SHRINK = ((200, 200, None), (60, 100, 2000), (15, 50, 500), (0, 20, 200))
BODY_BUDGET = GITHUB_BODY_LIMIT - 1000  # headroom for what GitHub adds or counts differently


def fit_body(review: RunReview, *, base: str, head: str, skill_path: str, budget: int = BODY_BUDGET) -> str:
    """The body shortened until it fits `budget`: diffs and lists first (SHRINK), then fewer accepted decisions
    in detail (the rest named by a pointer to `skillgit log`), then — only for inputs no setting can fit — cut at
    a line with a note. Always ≤ `budget` (GitHub length)."""
    def render(lines: int, rejected: int, text: int | None, accepted: int | None = None) -> str:
        return render_body(review, base=base, head=head, skill_path=skill_path, max_diff_lines=lines,
                           max_rejected=rejected, max_text=text, max_accepted=accepted)

    for setting in SHRINK:
        body = render(*setting)
        if github_length(body) <= budget:
            return body
    lo, hi = 0, len(review.accepted)  # the most accepted decisions that still fit, by bisection
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if github_length(render(*SHRINK[-1], mid)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    body = render(*SHRINK[-1], lo)
    if github_length(body) <= budget:
        return body
    note = (f"\n… cut here: this body is over GitHub's size limit. Whole: `skillgit pr --run {review.run} "
            f"--body-file pr.md`.\n")
    return hard_cut(body, note, budget)


def _closers(text: str) -> str:
    """What closes the code fence and `<details>` blocks `text` leaves open (a cut must not swallow the rest)."""
    fence: int | None = None
    details = 0
    for line in text.splitlines():
        m = re.match(r"^(`{3,})", line.strip())
        if fence is None and m:
            fence = len(m.group(1))
        elif fence is not None and m and line.strip() == m.group(1) and len(m.group(1)) >= fence:
            fence = None
        elif fence is None:
            details += line.count("<details>") - line.count("</details>")
    return ("\n" + "`" * fence + "\n" if fence else "") + "\n</details>\n" * max(0, details)


def hard_cut(body: str, note: str, budget: int) -> str:
    """`body` cut after a whole line, its open blocks closed, then `note`: at most `budget` (GitHub length)."""
    lines = body.splitlines(keepends=True)
    used, keep = github_length(note) + 64, 0  # 64: room for the closers
    for line in lines:  # the longest prefix of whole lines that leaves room for the note
        used += github_length(line)
        if used > budget:
            break
        keep += 1
    while keep >= 0:
        text = "".join(lines[:keep])
        out = text + _closers(text) + note
        if github_length(out) <= budget:
            return out
        keep -= 1
    return note if github_length(note) <= budget else ""


def build(review: RunReview, *, base: str, head: str, skill_path: str) -> PullRequest:
    """The pull request for `review`, its body shortened (`fit_body`) until GitHub accepts its size."""
    body = fit_body(review, base=base, head=head, skill_path=skill_path)
    seed, final = review.scores.get("seed"), review.scores.get("final")
    scores = (f" (val {seed.val:.3f} → {final.val:.3f})" if seed and final and seed.val is not None
              and final.val is not None else "")
    title = f"skillgit: {len(review.accepted)} learned edit(s) to {skill_path}{scores}"
    return PullRequest(review.run, base, head, title, body)


# ---------------------------------------------------------------------------------------------- sharing
def check_head(store: Store, head: str, *, push: bool) -> None:
    """Refuse a head branch that does not exist (a SkillgitError naming it and the fix), before any body is written:
    it must be a local branch, or, when it is not to be pushed, a branch a remote has (`refs/remotes/<remote>/…`, or
    a run's branch that `skillgit pull` fetched): `gh pr create --head` opens a pull request from the remote's."""
    if store.branch_tip(head) is not None:
        return
    remote = _on_remotes(store, head)
    if remote and not push:
        return
    if remote:
        raise SkillgitError(f"'{head}' is not a local branch: --push pushes a local branch (a remote has "
                            f"{remote[0].removeprefix('refs/')})",
                            f"git switch {head} (it creates the local branch from the remote's), or leave out --push")
    raise SkillgitError(f"head branch '{head}' does not exist in {store.repo.root}",
                        f"pass --head with an existing branch (`git branch --all` lists them), create it "
                        f"(git branch {head} <commit>), or train onto it (`skillgit train --branch {head}`)")


def check_base(store: Store, base: str, *, given: bool) -> None:
    """Refuse a base branch that exists neither locally nor on a remote (a SkillgitError naming it and the fix), before
    any body is written; a branch only a remote has is fine (`gh pr create --base` names the remote's). `given`: it
    was typed with --base (else it is the run's recorded base or skill.branch)."""
    if store.branch_tip(base) is not None or _on_remotes(store, base):
        return
    where = "--base" if given else "the run's base (the branch its --branch started from, else skill.branch)"
    raise SkillgitError(f"base branch '{base}' does not exist in {store.repo.root}, locally or on a remote ({where})",
                        f"pass --base with the branch the pull request merges into (`git branch --all` lists them), "
                        f"or fetch it first (`git fetch <remote> {base}`)")


def check_distinct(run: str, head: str, base: str) -> None:
    """Refuse head == base: a run trained on the branch it would merge into has nothing to propose (its edits are on
    the base already), so no body is written; the error says how to get a pull request instead."""
    if head != base:
        return
    raise SkillgitError(f"run {run} trained on '{head}', the branch it would merge into: its edits are there already, "
                        f"so there is no pull request to write (head and base are both '{head}')",
                        "train onto a review branch instead (`skillgit train --branch review/NAME`, then `skillgit "
                        "pr`), or pass --base with a branch that lacks the edits; for a record of this run: "
                        f"`skillgit report {run}`")


def _on_remotes(store: Store, branch: str) -> list[str]:
    """The remote refs holding `branch`: `refs/remotes/<remote>/<branch>`, or a run's branch `skillgit pull` fetched."""
    return [ref for (ref,) in store.repo.for_each_ref(["refname"], "refs/remotes/", R.REMOTE_PREFIX)
            if _remote_branch(ref) == branch]


def _remote_branch(ref: str) -> str | None:
    """The branch name of `refs/remotes/<remote>/<branch>` or `<REMOTE_PREFIX><remote>/heads/<branch>`."""
    if ref.startswith(R.REMOTE_PREFIX):
        _, sep, name = ref.removeprefix(R.REMOTE_PREFIX).partition("/heads/")
        return name if sep else None
    parts = ref.removeprefix("refs/remotes/").split("/", 1)
    return parts[1] if len(parts) == 2 and parts[1] != "HEAD" else None


def push_head(store: Store, head: str, remote: str):
    """Push `head` with skillgit's notes, rejected tags and runs (`Store.push`: atomic, never forced). Both names
    are checked first (a `:` in `head` would make its refspec push to another branch)."""
    R.check_branch(head, "head branch")
    R.check_remote(remote)
    return Store(store.repo, store.skill_path, head).push(remote)


def create_with_gh(pr: PullRequest, body_file: Path, cwd: Path, timeout_s: float = 120.0) -> str:
    """`gh pr create` for `pr` in `cwd`; returns gh's stdout (the new PR's address)."""
    gh = shutil.which("gh")
    if gh is None:
        raise SkillgitError("`gh` (the GitHub CLI) is not installed or not on PATH",
                            f"{GH_INSTALL_HINT}; the body is ready in {body_file}")
    # `--flag=value`: a value can never be read as another flag, whatever it begins with
    argv = [gh, "pr", "create", f"--base={R.check_branch(pr.base, 'base branch')}",
            f"--head={R.check_branch(pr.head, 'head branch')}", f"--title={pr.title}", f"--body-file={body_file}"]
    from skillgit import process

    # (in its own process group, as every child: `gh` and what it starts are killed at the timeout or on Ctrl-C)
    proc = process.run(argv, cwd=cwd, env=os.environ, timeout_s=timeout_s)
    if proc.timed_out:
        raise SkillgitError(f"`gh pr create` did not finish within {timeout_s:.0f} s",
                            "check `gh auth status` and your network, then run again")
    if proc.returncode != 0:
        why = next((line.strip() for line in proc.stderr.splitlines() if line.strip()), f"exit {proc.returncode}")
        raise SkillgitError(f"`gh pr create` failed: {why}",
                            f"check `gh auth status` (and that '{pr.head}' is pushed: --push origin); the body is "
                            f"in {body_file}")
    return proc.stdout
