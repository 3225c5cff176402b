"""CLI: `train`, `eval`, `demo`, `config show`, `status` — the commands that run the loop (`config import`:
cli/config_import.py)."""

import json
import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer

from skillgit import console
from skillgit.errors import ExitCode, Interrupted, SkillgitError
from skillgit.textsafe import shown

REPO = typer.Option(None, "--repo", "-C", help="The repository (default: the one around the current folder).")
CONFIG = typer.Option(None, "--config", help="Config file (default: skillgit.yaml at the repository root).")
SET = typer.Option(None, "-c", "--set", "-s",
                   help="Set a config key, as git -c does: -c train.batch_size=20 (repeatable).")
CFG_OPTIONS = typer.Option(None, "--cfg-options", help="SkillOpt-style overrides, key=value (repeatable).")


def _overrides(sets: Optional[list[str]], cfg_options: Optional[list[str]]) -> list[str]:
    from skillgit.config_yaml import parse_overrides

    return [*(sets or []), *parse_overrides(cfg_options or [])]


def _project(repo: Optional[Path], config: Optional[Path], overrides: list[str]):
    from skillgit.project import open_project

    return open_project(repo, config, overrides)


def train(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, set_: Optional[list[str]] = SET,
          cfg_options: Optional[list[str]] = CFG_OPTIONS,
          resume: bool = typer.Option(True, "--resume/--new",
                                      help="Continue the newest unfinished run with the same config (default), "
                                           "or start a new run."),
          run: Optional[str] = typer.Option(None, "--run", help="Continue this run id (an id no run has yet starts a "
                                                                 "new run of that name, and says so)."),
          dry_run: bool = typer.Option(False, "--dry-run",
                                       help="Print the plan and a call/token estimate; spend nothing."),
          as_json: bool = typer.Option(False, "--json", help="Print the run result as JSON on stdout."),
          events: bool = typer.Option(False, "--events", help="Progress as JSON lines on stderr (for scripts) "
                                                              "instead of the live display."),
          branch: Optional[str] = typer.Option(None, "--branch", help="Train onto this review branch (created at "
                                                                      "the skill branch's tip, or continued); the "
                                                                      "skill branch stays where it is."),
          keep_workspaces: bool = typer.Option(False, "--keep-workspaces",
                                               help="Agentic tasks: keep each rollout's throwaway workspace for "
                                                    "debugging (= --set env.keep_workspaces=true)."),
          skill: Optional[str] = typer.Option(None, "--skill", help="Train this skill of the `skills:` library "
                                                                    "(its path, tasks and branch)."),
          activation: bool = typer.Option(False, "--activation", help="With --skill (or --all: every skill, "
                                                                      "round-robin): train its description "
                                                                      "against its trigger cases (the activation "
                                                                      "track) instead of its body."),
          all_: bool = typer.Option(False, "--all", help="Train every skill of the `skills:` library in one run under "
                                                         "one budget, round-robin (one step per turn), each gated "
                                                         "on its own; `train --all` again continues it.")) -> None:
    """Train the skill: rollout → reflect → aggregate → select → update → gate, one commit per step."""
    from skillgit.session import build_trainer, open_session

    overrides = _overrides(set_, cfg_options) + (["env.keep_workspaces=true"] if keep_workspaces else [])
    if all_ or activation:
        _library_mode(repo, config, overrides, skill=skill, all_=all_, activation=activation, run=run, resume=resume,
                      as_json=as_json, events=events, again=(set_, cfg_options), excluded=(skill, branch, dry_run))
        return
    if skill:
        from skillgit.library import config as lib_config

        base = _project(repo, config, overrides)
        overrides = lib_config.overrides(lib_config.entry(base.config, skill, base.root)) + overrides
    review = None
    if branch:  # a review branch: the run's skill branch becomes it (skillgit pr proposes it back)
        from skillgit.review import branch as review_branch

        review = review_branch.prepare_project(_project(repo, config, overrides), branch, create=not dry_run)
        overrides += [f"skill.branch={review.head}"] if review.exists else []
    project = _project(repo, config, overrides)
    session = open_session(project, roles=() if dry_run else ("student", "teacher"))  # a dry run calls no model
    if dry_run:
        _print_plan(project, session, as_json)
        return
    from skillgit.cli.progress import RunDisplay  # lazy: rich.progress, the loop's events

    display = RunDisplay(console.err)
    sink = _json_events if events else display.handle
    _say_what_val_can_detect(project.config, len(session.splits.val), sink, events)
    if run is not None and not events:
        _say_if_new(session.store, run)
    trainer = build_trainer(session, run_id=run, resume=resume if run is None else True, on_event=sink)
    if review is not None:
        review_branch.record(session.store, trainer.run_id, review, trainer.progress.seed_rev or session.store.tip())
    # How to continue this run: the same command, except that `--new` would start yet another run.
    again = resume_command(trainer.run_id, repo, config, set_, cfg_options, branch, keep_workspaces, skill) \
        if run is None and not resume else None
    result = _run(trainer, None if events else display, again)
    _print_result(result, project.config.evaluation.gate_metric, as_json)
    if result.status == "stopped":
        if again:
            console.info(f"resume this run with: {again}")
        raise typer.Exit(int(ExitCode.BUDGET))


def _say_if_new(store: Any, run: str) -> None:
    """`train --run ID` with an id no run has starts a run of that name: a typo must not do so silently."""
    if run not in store.list_runs():
        console.err.print(f"note: there is no run '{run}': starting a new run of that name (to continue a run, "
                          "name one that `skillgit status --run ID` or `skillgit log` shows)", markup=False,
                          highlight=False)


def _print_result(result: Any, metric: str, as_json: bool) -> None:
    from skillgit.cli.progress import scores_table

    if as_json:
        console.print_json({"run": result.run, "status": result.status, "reason": result.reason,
                            "steps": result.steps, "accepted": result.accepted, "rejected": result.rejected,
                            "scores": result.scores, "usage": result.usage})
        return
    console.out.print(scores_table(result.scores, metric))
    console.out.print(f"run {result.run}: {result.status} ({result.reason}); "
                      f"{result.accepted} accepted, {result.rejected} rejected")


def _print_plan(project: Any, session: Any, as_json: bool) -> None:
    """`train --dry-run`: the plan and its call/token estimate (`loop/plan.estimate`); nothing is spent."""
    from skillgit.dotenv import project_env
    from skillgit.loop.plan import estimate

    plan = estimate(project.config, session.splits, session.store.read_skill(), project_env(project.root).env,
                    project.root)
    if as_json:
        console.print_json(plan)
    else:
        console.out.print(shown(plan["text"]), markup=False, highlight=False)


def _run(trainer: Any, display: Any, again: Optional[str]) -> Any:
    """Train under the live `display` (None: `--events`); a stop the user can resume says how (`again`)."""
    from skillgit.llm.handoff import HandoffPending

    try:
        if display is None:
            return trainer.train()
        with display:
            return trainer.train()
    except HandoffPending as exc:  # teacher_backend: handoff: every question the run wrote waits for the agent
        raise _waiting(exc, again) from None
    except (Interrupted, KeyboardInterrupt) as exc:
        if not again:
            raise
        if isinstance(exc, Interrupted):
            exc.hint = f"resume this run with: {again}"
            raise
        raise Interrupted("interrupted", f"resume this run with: {again}") from None


def _waiting(exc: Any, again: Optional[str]) -> Exception:
    """The handoff stop, counting every question the run wrote before it stopped, with the resume command."""
    from skillgit.llm.handoff import HandoffPending, pending_prompts

    how = exc.resume.replace("`skillgit train`", f"`{again}`") if again else exc.resume
    return HandoffPending(exc.folder, pending_prompts(exc.folder) or exc.pending, how)


def _library_mode(repo: Optional[Path], config: Optional[Path], overrides: list[str], *, skill: Optional[str],
                  all_: bool, activation: bool, run: Optional[str], resume: bool, as_json: bool, events: bool,
                  again: tuple[Any, Any], excluded: tuple[Any, ...]) -> None:
    """`train --all` (every skill's body), `--all --activation` (every skill's description) and
    `--skill NAME --activation` (one skill's description)."""
    if activation and not (skill or all_):
        raise SkillgitError("--activation needs --skill NAME or --all",
                            "name the library skill whose description to train, or --all for every skill")
    if all_ and activation:
        from skillgit.cli.library import train_activation_all

        train_activation_all(_project(repo, config, overrides), run=run, as_json=as_json, excluded=excluded)
    elif all_:
        from skillgit.cli.library import train_all

        train_all(repo, config, overrides, run=run, resume=resume, as_json=as_json, events=events, again=again,
                  excluded=excluded)
    else:
        _train_activation(_project(repo, config, overrides), str(skill))


def _train_activation(project: Any, skill: str) -> None:
    from skillgit.library.run import run_activation

    def say(rec: Any) -> None:
        v = rec.verdict
        console.err.print(f"step {rec.step}: {'accepted' if v.accept else f'rejected ({v.stage})'} "
                          f"{rec.commit[:12]}: {shown(v.reason)}", markup=False, highlight=False)

    result = run_activation(project.root, project.config, skill, steps=project.config.train.max_steps or 4,
                            on_step=say)
    if not result.steps:
        console.out.print(f"{skill}: nothing to learn from its train trigger cases (no step taken)")
        return
    scored = [s.verdict for s in result.steps if s.verdict.scored and s.verdict.before is not None]
    last = result.steps[-1].verdict
    tally = (f"{len(result.steps)} step(s): {result.accepted} accepted, {len(result.steps) - result.accepted} "
             f"rejected (last: {last.stage})")
    if not scored:
        console.out.print(f"{skill}: no candidate was scored; {tally}")
        return
    before = scored[0].before.f1 if scored[0].before else 0.0
    after = next((v.after.f1 for v in reversed(scored) if v.accept and v.after), before)
    console.out.print(f"{skill}: val F1 {before:.2f} → {after:.2f} after {tally}")


def resume_command(run_id: str, repo: Optional[Path], config: Optional[Path], sets: Optional[list[str]],
                   cfg_options: Optional[list[str]], branch: Optional[str], keep_workspaces: bool,
                   skill: Optional[str] = None) -> str:
    """The shell line that continues `run_id` with the options it was started with (`--run ID` for `--new`;
    `skill`: the library skill it trained)."""
    import shlex

    words = ["skillgit", "train", "--run", run_id]
    words += ["-C", str(repo)] if repo is not None else []
    words += ["--config", str(config)] if config is not None else []
    for value in sets or []:
        words += ["--set", value]
    for value in cfg_options or []:
        words += ["--cfg-options", value]
    words += ["--branch", branch] if branch else []
    words += ["--keep-workspaces"] if keep_workspaces else []
    return shlex.join(words) + (f" --skill {shlex.quote(skill)}" if skill else "")


def _say_what_val_can_detect(cfg: Any, items: int, sink: Any, events: bool) -> None:
    """Before money is spent: the smallest gain the val split lets the gate see; a warning above 20 points."""
    from skillgit.loop import gate
    from skillgit.loop.events import Warning
    from skillgit.loop.proposing import field_size

    repeats, deterministic = gate.planned_repeats(cfg)
    line, warn = gate.detectable_line(cfg.evaluation, items, repeats, deterministic=deterministic,
                                      candidates=field_size(cfg))
    if warn:
        sink(Warning(line))
    elif not events:
        console.info(line)


def _json_events(event) -> None:
    sys.stderr.write(json.dumps(event.to_dict(), default=str) + "\n")
    sys.stderr.flush()


def eval_(rev: Optional[str] = typer.Argument(None, show_default=False,
                                              help="A revision of the skill: step number, run/step, tag, commit, "
                                                   "branch, HEAD (your checkout's commit, as `check` scores it) "
                                                   "(default: the skill branch's tip)."),
          split: str = typer.Option("val", "--split", help="val | test | train"),
          repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, set_: Optional[list[str]] = SET,
          as_json: bool = typer.Option(False, "--json", help="Per-item results as JSON on stdout."),
          env_table: bool = typer.Option(False, "--env",
                                         help="Score every split (train, val, test) and print the environment's "
                                              "own metric per split, with 95 % intervals: the paper's table.")
          ) -> None:
    """Score any revision of the skill on a split and print per-item results."""
    from skillgit.loop.gate import Evaluator
    from skillgit.session import open_session

    if split not in ("val", "test", "train"):
        raise SkillgitError(f"unknown split '{split}'", "use --split val, test or train")
    project = _project(repo, config, _overrides(set_, None))
    session = open_session(project, roles=("student",))
    cfg = project.config
    # No revision: the skill branch's tip. A revision means what git means by it: HEAD is the checkout's commit
    # (on a feature branch with an edited skill, that edit), never the skill branch under HEAD's name.
    commit = session.store.tip() if rev is None else session.store.resolve(rev)
    rev = rev if rev is not None else cfg.skill.branch
    text = session.store.read_skill(commit)
    splits = {"train": list(session.splits.train), "val": list(session.splits.val), "test": list(session.splits.test)}
    if env_table:
        _env_table(session, splits, text, rev, commit, as_json)
        return
    evaluator = Evaluator(session.student(), session.scorer, splits, workers=cfg.env.workers,
                          repeats=cfg.evaluation.gate_repeats if split == "val" else 1)  # val: as the gate sees it
    from skillgit.cli.progress import RunDisplay  # lazy: rich.progress, the loop's events

    display = RunDisplay(console.err)
    with display:
        result = evaluator.score(text, split, display.progress_callback(f"eval {split}"))
    metric, weight = cfg.evaluation.gate_metric, cfg.evaluation.mixed_weight
    rows: list[dict[str, Any]] = []
    for t in result.trajectories:
        rows.append({"id": t.item_id, "hard": t.score.hard if t.score else None,
                     "soft": t.score.soft if t.score else None,
                     "feedback": t.score.feedback if t.score else "", "error": t.error, "output": t.output})
    summary = {"rev": rev, "commit": commit, "split": split, "metric": metric,
               "mean": round(result.mean(metric, weight), 4),
               "hard": round(result.mean("hard"), 4), "soft": round(result.mean("soft"), 4),
               "n": len(result.per_item), "errors": len(result.errors), "blob": result.blob, "items": rows,
               # the benchmark's own metric when an environment scores (hard is its headline number)
               "env": session.env.name if session.env else None,
               "env_metric": session.env.metric if session.env else None}
    if as_json:
        console.print_json(summary)
        _fail_if_unscored(summary)
        return
    from rich.table import Table

    table = Table(title=f"{rev} ({commit[:10]}) on {split}", show_lines=False)
    for col in ("id", "hard", "soft", "feedback"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["id"], "-" if r["hard"] is None else f"{r['hard']:.2f}",
                      "-" if r["soft"] is None else f"{r['soft']:.2f}", r["error"] or r["feedback"][:80])
    console.out.print(table)
    console.out.print(f"{split} {metric}: {summary['mean']:.4f} over {summary['n']} items "
                      f"({summary['errors']} errors)")
    if session.env is not None:
        console.out.print(f"{session.env.name} ({session.env.metric}): {summary['hard']:.4f} on {split}, "
                          f"soft {summary['soft']:.4f}")
    _fail_if_unscored(summary)


def _env_table(session: Any, splits: dict[str, list], text: str, rev: str, commit: str, as_json: bool) -> None:
    """`eval --env`: the environment's metric (hard, its headline number; soft beside it) on every split, each with
    its item count, errors and the Wilson 95 % interval over items; val scored as the gate scores it."""
    from skillgit.cli.progress import RunDisplay

    env = session.env
    if env is None:
        raise SkillgitError("eval --env: this project trains on no environment (env.name is unset)",
                            "set env.name (`skillgit init --env NAME`, `skillgit env list`), or use --split")
    display = RunDisplay(console.err)
    with display:
        table = {split: _split_row(session, splits, split, text, display) for split in splits}
    if as_json:
        console.print_json({"rev": rev, "commit": commit, "env": env.name, "env_metric": env.metric, "splits": table})
    else:
        _print_env_table(f"{env.name} — {env.metric}: {rev} ({commit[:10]})", table)
    for split, row in table.items():
        if row["n"] == 0 and row["errors"]:
            raise SkillgitError(f"no item of the {split} split could be scored ({row['errors']} errors; first: "
                                f"{row['first_error']})", "check the student with `skillgit doctor`",
                                ExitCode.BACKEND)


def _split_row(session: Any, splits: dict[str, list], split: str, text: str, display: Any) -> dict[str, Any]:
    from skillgit.loop.gate import Evaluator
    from skillgit.review.data import wilson

    cfg = session.project.config
    row: dict[str, Any] = {"n": 0, "hard": None, "soft": None, "errors": 0, "interval": None, "first_error": ""}
    if not splits[split]:
        return row
    evaluator = Evaluator(session.student(), session.scorer, splits, workers=cfg.env.workers,
                          repeats=cfg.evaluation.gate_repeats if split == "val" else 1)
    result = evaluator.score(text, split, display.progress_callback(f"eval {split}"))
    row.update(n=len(result.per_item), errors=len(result.errors),
               first_error=next(iter(result.errors.values()), ""))
    if row["n"]:
        row.update(hard=round(result.mean("hard"), 4), soft=round(result.mean("soft"), 4))
        bounds = wilson(row["hard"], row["n"])
        row["interval"] = [round(b, 4) for b in bounds] if bounds else None
    return row


def _print_env_table(title: str, table: dict[str, dict[str, Any]]) -> None:
    from rich.table import Table

    out = Table(title=title, show_lines=False)
    for col in ("split", "items", "hard", "95 % interval", "soft", "errors"):
        out.add_column(col)
    num = lambda v: "–" if v is None else f"{v:.4f}"  # noqa: E731
    for split, row in table.items():
        bounds = row["interval"]
        out.add_row(split, str(row["n"]), num(row["hard"]), f"{bounds[0]:.3f}–{bounds[1]:.3f}" if bounds else "–",
                    num(row["soft"]), str(row["errors"]))
    console.out.print(out)


def _fail_if_unscored(summary: dict) -> None:
    """An eval in which no item could be scored measured nothing: say so and exit non-zero (4), never 0."""
    if summary["n"] == 0 and summary["errors"]:
        first = next((r["error"] for r in summary["items"] if r.get("error")), "unknown error")
        raise SkillgitError(f"no item of the {summary['split']} split could be scored ({summary['errors']} errors; "
                            f"first: {first})", "check the student with `skillgit doctor` and the scorer config",
                            ExitCode.BACKEND)


def config_show(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, set_: Optional[list[str]] = SET,
                cfg_options: Optional[list[str]] = CFG_OPTIONS,
                as_json: bool = typer.Option(False, "--json", help="JSON instead of YAML."),
                show_origin: bool = typer.Option(False, "--show-origin",
                                                 help="One line per key: where it was set, the key, its value.")
                ) -> None:
    """Print the resolved config (defaults, the user config, _base_ files and overrides applied; secrets masked)."""
    from skillgit.config_output import dump_config
    from skillgit.redact import redact_mapping

    project = _project(repo, config, _overrides(set_, cfg_options))
    if show_origin:
        _show_origins(project, as_json)
    elif as_json:
        console.print_json(redact_mapping(project.config.to_dict()))
    else:
        console.out.print(shown(dump_config(project.config, mask_secrets=True)), markup=False, highlight=False)


def _show_origins(project: Any, as_json: bool) -> None:
    """`config show --show-origin`: like `git config --list --show-origin`, one `origin<TAB>key=value` line per key
    (origin: `default`, a file, or the command line)."""
    from skillgit.config_layers import origin_rows, shown_origin

    rows = origin_rows(project.config, project.origins)
    if as_json:
        console.print_json([{"origin": shown_origin(o), "key": k, "value": v} for o, k, v in rows])
        return
    for origin, key, value in rows:
        text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else value
        sys.stdout.write(f"{shown_origin(origin)}\t{key}={shown(text, multiline=False)}\n")  # (rich: no tab)


def status(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
           run: Optional[str] = typer.Option(None, "--run", help="Which run (default: the newest)."),
           as_json: bool = typer.Option(False, "--json", help="Print the status as JSON on stdout."),
           skill: Optional[str] = typer.Option(None, "--skill", help="A skill library (`skills:`): this skill's "
                                                                    "newest run (without --skill and --run: one "
                                                                    "row per skill).")) -> None:
    """Show the current (or newest) run: step, scores, errors and retries, spend by stage and role, ETA."""
    from skillgit.library import views
    from skillgit.store import read

    project = views.project_for(repo, config, skill)
    store = views.store_for(project)
    if project.config.skills and not skill and not run:
        from skillgit.cli.library import library_status

        library_status(store, project.config, as_json, status_info)
        return
    if skill and not run:
        run = views.newest_run(store, project.config, skill)
        if run is None:
            raise SkillgitError(f"skill {skill!r} has no training run yet",
                                f"start one: skillgit train --skill {skill}")
    progress = views.with_own_total(store, read.run_progress(store, run))
    info = status_info(progress, read.val_trend(store, progress, cached=True))
    if as_json:
        console.print_json(info)
        return
    lines = []
    for key in ("run", "status", "reason", "step", "accepted", "rejected", "val", "seed_val", "val_trend", "errors",
                "retries", "unscored", "coverage", "calls", "tokens", "cost_usd", "rollout_seconds", "updated",
                "eta_s"):
        if key == "rollout_seconds" and not info[key]:
            continue
        value = _status_value(info, key)
        lines.append(f"{key.replace('_', ' '):>12}: {shown(str(value if value is not None else '-'))}")
    if progress.agent.calls:  # the agent teacher's turns and wall time (budget.max_agent_turns / max_agent_seconds)
        a = progress.agent
        lines.append(f"{'agent':>12}: {a.calls} teacher call(s), {a.turns} turns, {a.seconds:.0f}s wall")
    if len(progress.proposers) > 1:  # mixed proposers (optimizer.proposers, or the schedule switched)
        from skillgit.review.data import proposer_line

        for name, stats in sorted(progress.proposers.items()):
            lines.append(f"{'proposer':>12}: {shown(proposer_line(name, stats))}")
    if info["usage_by_stage"]:
        lines += ["usage by stage and role", usage_table(info["usage_by_stage"], info["usage_by_role"])]
    typer.echo("\n".join(lines))  # (plain text, as `log` prints: no rich import for a read command)


def _status_value(info: dict, key: str) -> Any:
    """One `status` row's value as shown: step of total, errors by kind, rollout seconds by phase."""
    value = info[key]
    if key == "step":
        return f"{info['step']}/{info['total_steps']}"
    if key == "errors":
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "0"
    if key == "rollout_seconds":
        return " · ".join(f"{k} {v:.0f}s" for k, v in value.items())
    return value


def status_info(p, vals: list[float | None]) -> dict:
    """`status --json`: one shape, one type per field (docs/JSON.md)."""
    from skillgit.report.sparkline import sparkline

    done, total = p.steps_done, p.total_steps
    eta = None
    if p.status == "running" and total and done and p.started and p.updated:
        eta = round((p.updated - p.started) / done * (total - done))
    return {"run": p.run, "status": p.status, "reason": p.stop_reason, "step": done, "total_steps": total,
            "accepted": p.accepted, "rejected": p.rejected, "val": p.current_score, "seed_val": p.seed_score,
            "val_trend": sparkline(vals, lo=0.0, hi=1.0), "errors": dict(p.errors), "retries": p.retries,
            "unscored": p.unscored, "calls": p.usage.calls, "tokens": p.usage.total_tokens,
            # the last gate's evidence: "28/30 val items, 79/90 samples scored"
            "coverage": p.last.coverage.describe() if p.last and p.last.coverage else None,
            "cost_usd": round(p.usage.cost_usd, 4),
            "usage_by_stage": {k: v.to_dict() for k, v in p.usage_by_stage.items()},
            "usage_by_role": {k: v.to_dict() for k, v in p.usage_by_role.items()},
            "updated": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(p.updated)) if p.updated else None,
            "eta_s": eta, "last": p.last.to_dict() if p.last else None,
            "rollout_seconds": dict(p.rollout_seconds),
            "proposers": {k: v.to_dict() for k, v in sorted(p.proposers.items())}, "proposer_switch": p.proposer_switch,
            "agent_teacher": p.agent.to_dict()}


def usage_table(by_stage: dict, by_role: dict) -> str:
    """Calls, tokens and cost per role, then per stage (`status`'s table, plain columns), safe to print: the names
    come from a run's saved progress, which `skillgit pull` brings from collaborators."""
    rows: list[list[str] | None] = []
    for group in (by_role, by_stage):
        if rows:
            rows.append(None)
        rows += [[name, str(u["calls"]), f"{u['prompt_tokens']:,}", f"{u['completion_tokens']:,}",
                  f"{u['cost_usd']:.4f}"] for name, u in sorted(group.items())]
    return shown(console.columns(["", "calls", "prompt tok", "completion tok", "cost $"], rows, right=(1, 2, 3, 4)))


def demo(dir_: Optional[Path] = typer.Option(None, "--dir", help="Keep the demo repository here (a normal "
                                                                "skillgit project; `skillgit train` continues it)."),
         seed: int = typer.Option(0, "--seed", help="Seed of the simulated world and the run."),
         steps: Optional[int] = typer.Option(None, "--steps", help="How many training steps (default 8; 6 with "
                                                                   "--agentic; 4 with --sleep or --library)."),
         agentic: bool = typer.Option(False, "--agentic", help="Train a skill PACKAGE for a coding agent on coding "
                                                               "tasks in real repositories (simulated agent, real "
                                                               "pytest verifiers)."),
         teacher: str = typer.Option("chat", "--teacher", help="chat: the simulated chat teacher; agent: the simulated "
                                                               "agent teacher edits a copy of the skill package each "
                                                               "step (with --agentic)."),
         sleep: bool = typer.Option(False, "--sleep", help="Run one night of `skillgit sleep` on shipped Claude "
                                                           "Code sessions in a fixture agent home: harvest, mine, "
                                                           "replay, gated commits on sleep/<date> (never reads your "
                                                           "HOME; --seed seeds the run, the world is the sessions'"
                                                           ")."),
         library: bool = typer.Option(False, "--library", help="Train which skill fires: the activation track on "
                                                               "a library of three skills with overlapping "
                                                               "descriptions (simulated router, held-out trigger "
                                                               "cases, interference and listing-budget checks).")
         ) -> None:
    """Train a skill offline on the simulated world (no API key): shows log, diff and test before → after."""
    from skillgit.cli.progress import RunDisplay  # lazy: rich.progress, the loop's events

    if steps is not None and steps < 1:  # (`steps or 8` below ran 8 steps for --steps 0)
        raise SkillgitError(f"--steps must be at least 1, got {steps}", "try --steps 8")
    display = RunDisplay(console.err)
    if library:
        from skillgit.library.demo import run_library_demo

        if agentic or sleep:
            raise SkillgitError("--library excludes --agentic and --sleep", "give one of them")
        run_library_demo(dir_, seed=seed, steps=steps or 4, display=display)
        return
    if sleep:
        from skillgit.sleep.demo import run_sleep_demo

        if agentic:
            raise SkillgitError("--sleep and --agentic exclude each other", "give one of them")
        run_sleep_demo(dir_, seed=seed, steps=steps or 4, display=display)
        return
    from skillgit.cli.demo import run_demo

    run_demo(dir_, seed=seed, steps=steps or (6 if agentic else 8), display=display, agentic=agentic,
             teacher=teacher)


def register(app: typer.Typer) -> None:
    app.command("train")(train)
    app.command("eval")(eval_)
    app.command("status")(status)
    app.command("demo")(demo)
    from skillgit.cli.config_import import config_import

    config_app = typer.Typer(help="Inspect the configuration; import a SkillOpt config.", no_args_is_help=True)
    config_app.command("show")(config_show)
    config_app.command("import")(config_import)
    app.add_typer(config_app, name="config")
