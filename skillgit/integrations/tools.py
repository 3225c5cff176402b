"""The operations an agent can ask skillgit for, behind `skillgit mcp` — plain Python, no MCP SDK here.

Contract
- Every function takes a `Workspace` (the repository and config the server was started for, opened afresh on
  each call so the server starts anywhere and sees new commits) and returns text for an agent.
- `safe(text)` is applied by the server to everything it returns, errors included: secrets masked
  (`skillgit.redact`), control and bidi characters escaped (`skillgit.textsafe.shown`), length capped.
- Expected failures raise `SkillgitError` (message + hint). Arguments that name revisions or runs are checked
  (`check_ref`): never empty, never starting with `-` (git would read an option), no whitespace or control chars.
- Paths: every file or folder a tool reads, lists or has `skillgit` write resolves (real path, symlinks followed)
  inside the repository — its working tree or its git dir. A committed link that leaves it (a
  `.skillgit/sleep/<date>.md` pointing at `~/.ssh/id_rsa`) is skipped and named; a `sleep.report_dir` or
  `sleep.tasks_file` outside it is refused with the key and the fix. Files are opened without following a last
  link and read up to a cap.
- Read functions never write. `train` writes only a `skillgit/review/…` branch (and skillgit's own refs) through
  `commands.train_command`, and only when every command the run would take from the configuration or the task
  set is approved on this machine, with the files it runs (`sleep.approval_train`: a person approves with
  `skillgit approve --yes`; else it refuses, naming them, before anything runs); `train_dry_run` says what `train`
  would refuse. `sleep` runs `skillgit sleep` when this version has it (a night gates its own commands). Nothing
  here merges, reverts, pushes or moves the skill branch: adopting learned changes is a person's act, prepared by
  `review_summary`.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgit.errors import ExitCode, SkillgitError
from skillgit.integrations import commands as C
from skillgit.redact import redact, redact_mapping
from skillgit.textsafe import shown

MAX_CHARS = 60_000
MAX_DIFF = 30_000
_REF_RE = re.compile(r"^[^\s\x00-\x1f\x7f-][^\s\x00-\x1f\x7f]{0,199}$")


def safe(text: str, limit: int = MAX_CHARS) -> str:
    """Text fit to hand to an agent (see the module contract)."""
    text = shown(redact(text))
    if len(text) > limit:
        text = text[:limit] + f"\n… (cut at {limit} characters; use the skillgit command line for the rest)"
    return text


def to_json(data: Any) -> str:
    """A tool's answer: redacted, and with no raw control or bidi character (`textsafe.json_shown`: a pulled
    reason's U+202E reached the agent's screen as is); it parses to the same data."""
    from skillgit.textsafe import json_shown

    return json_shown(json.dumps(redact_mapping(data), indent=2, ensure_ascii=False, sort_keys=False, default=str))


def check_ref(value: str | None, what: str) -> str:
    text = (value or "").strip()
    if not _REF_RE.match(text):
        raise SkillgitError(f"invalid {what} {value!r}", f"give a {what} such as `3`, `RUN/3`, `rejected/RUN/3`, "
                            "a tag or a commit (no spaces, not starting with '-')")
    return text


def _cap(text: str, limit: int, what: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({what} cut at {limit} characters)\n"


@dataclass(frozen=True)
class Workspace:
    """The repository (None: the one around the current folder) and config (None: its skillgit.yaml)."""

    repo: Path | None = None
    config: Path | None = None

    def project(self):
        from skillgit.project import open_project

        return open_project(self.repo, self.config)

    def store(self, branch: str | None = None):
        from skillgit.store import Store

        project = self.project()
        return Store.open(project.root, project.config.skill.path, branch or project.config.skill.branch)


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


# ------------------------------------------------------------------------------------------------ reads
def log(ws: Workspace, run: str | None = None, limit: int = 20) -> str:
    from skillgit.store import read

    store = ws.store()
    entries = read.history(store, check_ref(run, "run id") if run else None)
    total = len(entries)
    entries = entries[-limit:]
    if not entries and run:
        known = read.runs(store)
        raise SkillgitError(f"unknown run '{run}'", f"known runs: {', '.join(known[:5])}" if known else
                            "there is no training run yet")
    if not entries:
        return f"no training steps yet on '{store.branch}' (skill {store.skill_path}); start with train_dry_run"
    head = (f"skill {store.skill_path} on branch '{store.branch}': the newest {len(entries)} of {total} "
            "entries, oldest first (step, verdict, val score, change, commit, summary)")
    rows = []
    for e in entries:
        summary = e.subject if e.verdict != "rejected" else f"{e.subject} — rejected: {e.reason}"
        delta = _num(e.delta, True) if e.verdict != "seed" else ""
        archived = " (archived)" if e.archived else ""
        rows.append(f"{e.label}  {e.verdict}{archived}  val {_num(e.score)} {delta}  {e.sha[:10]}  {summary}")
    return "\n".join([head, *rows])


def show(ws: Workspace, rev: str, full: bool = False) -> str:
    from skillgit.store import read

    detail = read.show(ws.store(), check_ref(rev, "revision"))
    out = [f"commit {detail.sha}" + (f" (parent {detail.parent[:12]})" if detail.parent else ""),
           f"subject: {detail.subject}"]
    if detail.outcome is not None:
        o = detail.outcome
        out.append(f"decision: {o.verdict.value} — val {_num(o.score_before)} → {_num(o.score_after)} "
                   f"({_num(o.delta, True)}); {o.reason}")
        out += [f"  edit: {edit}" for edit in o.edits]
        if o.coverage is not None:
            out.append(f"coverage: {o.coverage.describe()}")
    if detail.update is not None:
        skipped = [r for r in detail.update.apply if not r.applied]
        out.append(f"update: mode {detail.update.mode}, {len(detail.update.applied)} edit(s) applied, "
                   f"{len(skipped)} skipped" + (f" ({detail.update.invalid})" if detail.update.invalid else ""))
    if detail.revert is not None:
        r = detail.revert
        out.append(f"revert: mode {r.mode or '?'}, restored {r.target[:12] or '?'}, reason: {r.reason or 'none given'}")
    out += ["", _cap(detail.diff, MAX_DIFF, "diff") or "(no change to the skill)"]
    if full:
        out += ["notes (every record, JSON):", to_json([dict(n) for n in detail.notes])]
        if detail.corrupt_lines:
            out.append(f"({detail.corrupt_lines} corrupt note line(s) skipped)")
    elif detail.notes:
        out.append(f"({len(detail.notes)} note record(s): call show with full=true for reflections, ranking, "
                   "apply report and per-item scores)")
    return "\n".join(out)


def diff(ws: Workspace, a: str, b: str) -> str:
    store = ws.store()
    text = store.diff(store.resolve(check_ref(a, "revision")), store.resolve(check_ref(b, "revision")))
    return _cap(text, MAX_DIFF * 2, "diff") or f"(no change to the skill between {a} and {b})"


def rejected(ws: Workspace, limit: int = 10) -> str:
    from skillgit.store import read

    entries = [e for e in reversed(read.history(ws.store())) if e.verdict == "rejected"][:limit]
    if not entries:
        return "no rejected steps"
    rows = ["rejected steps, newest first (step, val score, change, reason, edits):"]
    for e in entries:
        rows.append(f"{e.label}{' (archived)' if e.archived else ''}  val {_num(e.score)} {_num(e.delta, True)}  "
                    f"{e.reason}  edits: {'; '.join(e.edits) or '–'}")
    return "\n".join(rows)


def _progress(ws: Workspace, run: str | None):
    from skillgit.store import read

    return read.run_progress(ws.store(), check_ref(run, "run id") if run else None)


def status(ws: Workspace, run: str | None = None) -> str:
    p = _progress(ws, run)
    last = p.last
    info: dict[str, Any] = {
        "run": p.run, "status": p.status, "stop_reason": p.stop_reason, "branch": p.branch,
        "steps_done": p.steps_done, "total_steps": p.total_steps or None, "accepted": p.accepted,
        "rejected": p.rejected, "seed_val": p.seed_score, "current_val": p.current_score,
        "calls": p.usage.calls, "tokens": p.usage.total_tokens, "cost_usd": round(p.usage.cost_usd, 4),
        "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(p.updated)) if p.updated else None,
        "last_step": None if last is None else {"step": last.step, "verdict": last.verdict.value,
                                                "delta": round(last.delta, 6), "reason": last.reason},
        "final_scores": {k: v.to_dict() for k, v in p.final_scores.items()},
    }
    return to_json(info)


def progress(ws: Workspace, run: str) -> str:
    return to_json(_progress(ws, run).to_dict())


def run_report(ws: Workspace, run: str) -> str:
    """A Markdown account of one run: scores, accepted and rejected steps."""
    from skillgit.store import read

    p = _progress(ws, run)
    entries = [e for e in read.history(ws.store(p.branch or None), p.run) if e.verdict != "seed"]
    out = [f"# skillgit run {p.run}", "",
           f"- status: {p.status}" + (f" ({p.stop_reason})" if p.stop_reason else ""),
           f"- branch: {p.branch}", f"- val: {_num(p.seed_score)} (seed) → {_num(p.current_score)}",
           f"- steps: {p.steps_done}, accepted {p.accepted}, rejected {p.rejected}",
           f"- spend: {p.usage.calls} calls, {p.usage.total_tokens} tokens, ${p.usage.cost_usd:.4f}"]
    for name, scores in p.final_scores.items():
        out.append(f"- {name}: val {_num(scores.val)}, test {_num(scores.test)} ({scores.rev[:10]})")
    out += ["", "| step | verdict | val | change | summary |", "| --- | --- | --- | --- | --- |"]
    for e in entries:
        summary = (e.subject if e.verdict != "rejected" else f"{e.subject} — {e.reason}").replace("|", "\\|")
        out.append(f"| {e.label} | {e.verdict} | {_num(e.score)} | {_num(e.delta, True)} | {summary} |")
    return "\n".join(out) + "\n"


def skill(ws: Workspace) -> str:
    return ws.store().read_skill()


REPORT_DIRS = (".skillgit/reports", "reports")  # under the repository root; and <git-common-dir>/skillgit/reports
HTML_REPORT = "skillgit-report-*.html"  # what `skillgit report` writes into the folder it runs in
NIGHT_REPORT = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")  # `skillgit sleep run`: <sleep.report_dir>/<date>.md
MAX_REPORTS = 10
MAX_NIGHT = 20_000


@dataclass(frozen=True)
class FoundReport:
    kind: str  # "html" (a training run, `skillgit report`) | "night" (a sleep night, Markdown)
    path: Path
    mtime: float


def repository_roots(root: Path) -> tuple[Path, ...]:
    """The real paths an MCP tool may touch: the working tree and the repository's git dir."""
    from skillgit.inbox import git_common_dir

    roots = [Path(os.path.realpath(root))]
    try:
        roots.append(Path(os.path.realpath(git_common_dir(root))))
    except SkillgitError:
        pass
    return tuple(dict.fromkeys(roots))


def inside(path: Path, roots: tuple[Path, ...]) -> bool:
    """True when `path`, every link in it followed, lies in one of `roots`."""
    real = Path(os.path.realpath(path))
    return any(real == r or r in real.parents for r in roots)


def read_inside(path: Path, roots: tuple[Path, ...], limit: int = 1 << 20) -> str:
    """The text of `path` (at most `limit` bytes) when it resolves inside `roots`; never through a link swapped in
    after the check (the real path is opened with O_NOFOLLOW)."""
    real = Path(os.path.realpath(path))
    if not inside(real, roots):
        raise SkillgitError(f"{path} resolves to {real}, outside the repository",
                            "the MCP server reads files inside the repository only")
    fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit).decode("utf-8", errors="replace")


def _sleep_paths(ws: Workspace) -> tuple[Path, list[tuple[str, Path]]]:
    """The repository root and the sleep paths its config names ((key, path)); defaults when it is unreadable."""
    from skillgit.sleep import settings as sleep_settings

    try:
        sp = sleep_settings.open_sleep_project(ws.repo, ws.config)
        return sp.root, [("sleep.report_dir", sp.path(sp.settings.report_dir)),
                         ("sleep.tasks_file", sp.path(sp.settings.tasks_file))]
    except SkillgitError:
        root = ws.project().root
        return root, [("sleep.report_dir", root / sleep_settings.DEFAULT_REPORT_DIR)]


def _outside(key: str, path: Path) -> str:
    return (f"{key} ({path}) resolves to {os.path.realpath(path)}, outside the repository: the MCP server reads and "
            f"writes inside the repository only; set {key} to a path inside it (or leave it at its default)")


def find_reports(ws: Workspace) -> tuple[list[FoundReport], list[Path], list[str]]:
    """Every HTML training report and sleep night report found inside the repository, newest first; the folders
    looked in; and what was refused (a folder or a linked file outside the repository), each said plainly."""
    from skillgit.inbox import git_common_dir

    root = ws.project().root
    roots = repository_roots(root)
    refused: list[str] = []
    html_dirs = [Path.cwd(), root, *(root / d for d in REPORT_DIRS), git_common_dir(root) / "skillgit" / "reports"]
    html_dirs = [d for d in html_dirs if inside(d, roots)]  # the server's folder only when it is in the repository
    night_dir: Path | None = dict(_sleep_paths(ws)[1])["sleep.report_dir"]
    if night_dir is not None and not inside(night_dir, roots):
        refused.append(_outside("sleep.report_dir", night_dir))
        night_dir = None
    folders = list(dict.fromkeys(f.resolve() for f in [*html_dirs, *([night_dir] if night_dir else [])]))
    seen: dict[Path, FoundReport] = {}

    def add(kind: str, path: Path) -> None:
        if not inside(path, roots):
            refused.append(f"skipped {path}: a link to {os.path.realpath(path)}, outside the repository")
        elif path.is_file():
            real = Path(os.path.realpath(path))
            seen[real] = FoundReport(kind, real, real.stat().st_mtime)

    for folder in dict.fromkeys(f.resolve() for f in html_dirs):
        if folder.is_dir():
            pattern = HTML_REPORT if folder in (Path.cwd().resolve(), root.resolve()) else "*.html"
            for path in sorted(folder.glob(pattern)):
                add("html", path)
    if night_dir is not None and night_dir.is_dir():
        for path in sorted(night_dir.iterdir()):
            if NIGHT_REPORT.match(path.name):
                add("night", path)
    found = sorted(seen.values(), key=lambda r: (r.mtime, r.path.name), reverse=True)
    return found, folders, refused


def report(ws: Workspace) -> str:
    found, folders, refused = find_reports(ws)
    notes = [f"refused: {r}" for r in refused]
    if not found:
        how = ("make one with `skillgit report` (HTML, for a training run)" if C.cli_has("report") else
               "this version of skillgit has no `skillgit report` command yet; the resource "
               "skillgit://runs/{run}/report gives a Markdown account of a run, and `status` the numbers")
        return "\n".join([f"no report found (looked for {HTML_REPORT}, HTML reports and sleep night reports "
                          f"YYYY-MM-DD.md in {', '.join(str(f) for f in folders)}); {how}", *notes])
    stamp = lambda r: time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.mtime))  # noqa: E731
    kinds = {"html": "training report (HTML; open it in a browser)", "night": "sleep night report (Markdown)"}
    out = [f"reports, newest first ({min(len(found), MAX_REPORTS)} of {len(found)}):"]
    out += [f"- {r.path}  {kinds[r.kind]}, written {stamp(r)}" for r in found[:MAX_REPORTS]]
    out += notes
    night = next((r for r in found if r.kind == "night"), None)
    if night is not None:
        text = read_inside(night.path, repository_roots(ws.project().root), limit=MAX_NIGHT * 4)
        out += ["", f"the newest sleep night report, {night.path.name}:", "", _cap(text, MAX_NIGHT, "report")]
    return "\n".join(out)


def review_summary(ws: Workspace, run: str | None = None, branch: str | None = None) -> str:
    """A pull-request body for a person: what a run (or review branch) changed, why, the scores, and how to
    adopt or undo it. Prepares only; adopts nothing."""
    from skillgit.store import read

    project = ws.project()
    skill_branch = project.config.skill.branch
    store = ws.store(check_ref(branch, "branch") if branch else None)
    run_id = check_ref(run, "run id") if run else _newest_run(store)
    entries = read.history(store, run_id)
    accepted = [e for e in entries if e.verdict == "accepted"]
    seed = next((e for e in entries if e.verdict == "seed"), None)
    base = seed.sha if seed else (accepted[0].parent if accepted and accepted[0].parent else store.tip())
    change = store.diff(base, accepted[-1].sha if accepted else base)
    first = seed.score if seed else None
    last = accepted[-1].score if accepted else first
    out = [f"## skillgit: learned changes to `{store.skill_path}` (run {run_id})", "",
           (f"Val score: {_num(first)} → {_num(last)} over {len(accepted)} accepted step(s); "
           f"{sum(e.verdict == 'rejected' for e in entries)} rejected."), "", "### Accepted steps"]
    out += _step_lines(entries, accepted)
    out += ["", "### Diff", "```diff", _cap(change, MAX_DIFF, "diff").rstrip("\n") or "(no change)", "```", "",
            "### For the reviewer", *_for_reviewer(store.branch, skill_branch, store.skill_path, run_id),
            "", "_Prepared by an agent with skillgit. Adopting it is a person's decision._"]
    return "\n".join(out) + "\n"


def _step_lines(entries: list, accepted: list) -> list[str]:
    """The accepted steps (each with its val gain), then the last 10 rejected ones (not part of the change)."""
    out = [f"- {e.label} ({_num(e.delta, True)} val): {e.subject}" for e in accepted] or ["- none"]
    rejected = [e for e in entries if e.verdict == "rejected"]
    if rejected:
        out += ["", "### Rejected (not part of this change)", *(f"- {e.label}: {e.reason}" for e in rejected[-10:])]
    return out


def _newest_run(store: Any) -> str:
    """The run of the branch's newest training step (reverts aside)."""
    from skillgit.store import read

    runs = [e.run for e in read.history(store) if e.run and e.verdict != "revert"]
    if not runs:
        raise SkillgitError(f"no training run on '{store.branch}' yet", "train first (train_dry_run, then train)")
    return runs[-1]


def _for_reviewer(branch: str, skill_branch: str, skill_path: str, run_id: str) -> list[str]:
    """How to review, adopt or discard a review branch; how to review or undo steps on the skill branch."""
    if branch != skill_branch:
        return [f"- review: `git diff {skill_branch}..{branch} -- {skill_path}`, `skillgit log --run {run_id}`",
                f"- adopt: `git checkout {skill_branch} && git merge --ff-only {branch}`",
                f"- discard: `git branch -D {branch}`"]
    return [f"- review: `skillgit log --run {run_id}`, `skillgit show <step>`",
            "- undo an adopted step: `skillgit revert --steps 1 --reason \"…\"`"]


# ------------------------------------------------------------------------------------------------ actions
def _tail(stderr: str, lines: int = 12) -> str:
    """The end of a child's stderr, preferring its human lines (`error:` / `hint:`) over JSON event lines."""
    rows = [r for r in stderr.splitlines() if r.strip()]
    human = [r for r in rows if not r.lstrip().startswith("{")]
    return "\n".join((human or rows)[-lines:])


def _json_result(done: C.Completed, what: str, ok_codes: tuple[int, ...] = (0,)) -> Any:
    if done.timed_out:
        raise SkillgitError(f"{what} did not finish within {done.seconds:.0f} s and was stopped",
                            "runs are resumable: call it again with the same review_branch, or run it in a "
                            "terminal", ExitCode.INTERRUPTED)
    if done.returncode not in ok_codes:
        raise SkillgitError(f"{what} failed (exit {done.returncode}): {_tail(done.stderr)}",
                            "fix the cause above (see `skillgit doctor` for backends) and try again")
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"output": done.stdout.strip()}


def _gate(ws: Workspace) -> Any:
    """What the commands of a run started here need (`approval_train.TrainGate`)."""
    from skillgit.sleep.approval_train import train_gate

    project = ws.project()
    return train_gate(project.root, project.config)


def train_dry_run(ws: Workspace, max_steps: int | None = None, timeout_s: float = 300) -> str:
    from skillgit.sleep.approval_train import APPROVE_HINT

    project = ws.project()
    done = C.run(C.dry_run_command(project.root, ws.config, max_steps=max_steps), timeout_s, cwd=project.root)
    plan = _json_result(done, "the dry run")
    text = plan.pop("text", None) if isinstance(plan, dict) else None
    why = _gate(ws).reason()
    gate = (f"train would be refused: {why}; {APPROVE_HINT}" if why else
            "train may run: every command it takes from the configuration and the task set is approved here")
    return (f"{text}\n\n" if text else "") + f"{gate}\n\nestimate (no model was called):\n" + to_json(plan)


def train(ws: Workspace, budget: C.Budget, max_steps: int | None = None, review_branch: str | None = None,
          timeout_s: float = 3600, resume: bool = False) -> str:
    budget.require()
    if resume and not review_branch:
        raise SkillgitError("resume needs the review branch the run trains onto",
                            "pass review_branch (the review_branch of the train result you continue)")
    gate = _gate(ws)  # an agent may have been steered: only what a person approved here runs
    if gate.reason():
        raise gate.refusal()
    store = ws.store()
    root, skill_branch = store.repo.root, store.branch
    branch = C.review_branch_name(review_branch)
    if resume and store.repo.ref(f"refs/heads/{branch}") is None:
        raise SkillgitError(f"no review branch '{branch}' to resume",
                            "pass the review_branch a train result named, or train without resume")
    created = C.prepare_review_branch(root, branch, store.tip())
    done = C.run(C.train_command(root, ws.config, budget, branch, max_steps=max_steps, resume=resume), timeout_s,
                 cwd=root)
    result = _json_result(done, "training", ok_codes=(0, int(ExitCode.BUDGET)))
    if not isinstance(result, dict):
        result = {"output": result}
    waiting = done.returncode == int(ExitCode.BUDGET) and "teacher answer(s)" in done.stderr  # handoff teacher
    if waiting:
        result["waiting_for_answers"] = (f"{_tail(done.stderr, 2)}\nanswer them (pending_questions, answer); then "
                                         f"call train again with resume=true and review_branch={branch!r} (or run "
                                         "the command in the hint) to continue this run")
    result.update({
        "review_branch": branch, "review_branch_created": created, "skill_branch": skill_branch,
        "stopped_at_budget": done.returncode == int(ExitCode.BUDGET) and not waiting,
        "adoption": "not done: merging the review branch is a person's decision",
        "for_a_person": [f"git diff {skill_branch}..{branch} -- {store.skill_path}",
                         f"git checkout {skill_branch} && git merge --ff-only {branch}",
                         f"git branch -D {branch}  # to discard it"],
    })
    return to_json(result)


def sleep(ws: Workspace, action: str, budget: C.Budget | None = None, timeout_s: float = 3600) -> str:
    if action == "run":
        (budget or C.Budget()).require()  # refused without a budget, whatever this version can do
    if not C.cli_has("sleep", action):
        raise SkillgitError(f"`skillgit sleep {action}` is not available in this version of skillgit",
                            "upgrade skillgit; finished Claude Code sessions are still recorded in the sleep inbox")
    project = ws.project()
    root, paths = _sleep_paths(ws)
    for key, path in paths:  # `skillgit sleep` writes there: never outside the repository on an agent's behalf
        if not inside(path, repository_roots(root)):
            raise SkillgitError(_outside(key, path), f"edit {key} in skillgit.yaml, or run `skillgit sleep` "
                                "yourself in a terminal")
    argv = C.sleep_command(project.root, ws.config, action, budget)
    result = _json_result(C.run(argv, timeout_s, cwd=project.root), f"sleep {action}",
                          ok_codes=(0, int(ExitCode.BUDGET)))
    return to_json(result)


# ------------------------------------------------------------------------------------------------ handoff
MAX_QUESTION_CHARS = 50_000  # the prompts one `pending_questions` answer carries (the rest: ask again)


def _handoff_folder(ws: Workspace) -> tuple[Path, str]:
    """The project's handoff folder (llm/handoff.py: inside the repository) and its teacher backend."""
    from skillgit.llm.handoff import folder_for

    project = ws.project()
    folder = folder_for(project.config, project.root)
    if not inside(folder, repository_roots(project.root)):
        raise SkillgitError(_outside("model.teacher.handoff.dir", folder), "edit it in skillgit.yaml")
    return folder, project.config.model.teacher_backend


def _cut_question(question: dict[str, Any], limit: int, prompt_file: Path) -> dict[str, Any]:
    """A question whose messages exceed `limit` characters, each message cut to its share (the file has it all)."""
    share = max(limit // max(len(question["prompt"]), 1), 1000)
    question["prompt"] = [{**m, "content": _cap(m["content"], share, "message")} for m in question["prompt"]]
    return {**question, "truncated": True, "prompt_file": str(prompt_file)}


def pending_questions(ws: Workspace, limit: int = 5) -> str:
    """The teacher's questions waiting for an answer (teacher_backend: handoff), oldest first, with their prompts."""
    from skillgit.llm.handoff import questions

    folder, backend = _handoff_folder(ws)
    found = questions(folder)
    shown: list[dict[str, Any]] = []
    used = 0
    for q in found[:limit]:
        if shown and used + q.chars() > MAX_QUESTION_CHARS:
            break
        item = q.to_dict()
        shown.append(item if q.chars() <= MAX_QUESTION_CHARS else
                     _cut_question(item, MAX_QUESTION_CHARS, folder / f"{q.id}.prompt.md"))
        used += q.chars()
    info: dict[str, Any] = {
        "folder": str(folder), "teacher_backend": backend, "pending": len(found), "shown": len(shown),
        "how_to_answer": "for each question, act as the teacher: read its prompt (system and user messages) and "
                         "call `answer` with its id and ONE JSON object in the answer_format (nothing else); then "
                         "the user runs `skillgit train` again (it resumes and asks nothing twice)",
        "questions": shown}
    if backend != "handoff":
        info["note"] = (f"model.teacher_backend is {backend!r}, not 'handoff': training does not wait for these "
                        "answers")
    if len(found) > len(shown):
        info["more"] = f"{len(found) - len(shown)} more: answer these, then call pending_questions again"
    return to_json(info)


def answer(ws: Workspace, qid: str, text: str) -> str:
    """Store the answer to one pending question (validated id, capped size, stored as data)."""
    from skillgit.llm.handoff import pending_prompts, write_answer
    from skillgit.llm.jsonout import extract_json

    folder, _ = _handoff_folder(ws)
    write_answer(folder, qid, text)
    obj, why = extract_json(text)
    left = len(pending_prompts(folder))
    info: dict[str, Any] = {"id": qid.strip(), "stored": True, "pending": left,
                            "next": "answer the next question" if left else
                            "no question is pending: the user runs `skillgit train` again to resume the run"}
    if obj is None:
        info["warning"] = (f"this answer holds no JSON object ({why}): skillgit records it as malformed teacher "
                           "output and asks once more (a new question)")
    return to_json(info)
