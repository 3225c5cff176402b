"""`skillgit report` and `skillgit show`'s summary, on a repository trained with the simulated world (`skillgit
demo --dir D --steps 4`, the real CLI) and on a hand-built history whose per-item scores are known exactly.

Also home of the helpers test_pr.py and test_check.py share: a hermetic environment for module-scoped fixtures
(conftest's is per test) and `build_history`, a run written with the real store."""

from __future__ import annotations

import json
import os
import re
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from skillgit.records import Coverage, RunProgress, SkillScores, StepKind, StepOutcome, Verdict
from skillgit.review import data
from skillgit.store import Store, read
from tests.conftest import FIXED_DATE, git, run_cli, run_cli_inproc

SEED = "# Skill\n\nRewrite records in the house style.\n"


# ---------------------------------------------------------------------------------------------- shared helpers
@contextmanager
def hermetic(home: Path) -> Iterator[None]:
    """conftest's hermetic environment, for fixtures that outlive one test (module scope)."""
    with pytest.MonkeyPatch.context() as mp:
        home.mkdir(parents=True, exist_ok=True)
        mp.setenv("HOME", str(home))
        mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        mp.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
        for key, value in (("GIT_AUTHOR_NAME", "Test Author"), ("GIT_AUTHOR_EMAIL", "author@example.com"),
                           ("GIT_COMMITTER_NAME", "Test Committer"), ("GIT_COMMITTER_EMAIL", "committer@example.com"),
                           ("GIT_AUTHOR_DATE", FIXED_DATE), ("GIT_COMMITTER_DATE", FIXED_DATE),
                           ("GIT_TERMINAL_PROMPT", "0"), ("NO_COLOR", "1"), ("COLUMNS", "160")):
            mp.setenv(key, value)
        (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
        for name in list(os.environ):
            upper = name.upper()
            if any(s in upper for s in ("API_KEY", "OPENAI", "ANTHROPIC", "AZURE_")) or upper.startswith("SKILLGIT_"):
                mp.delenv(name, raising=False)
        yield


def ok(proc):
    assert proc.returncode == 0, proc.stderr
    return proc


def log_json(root: Path, *args: str) -> list[dict]:
    return json.loads(ok(run_cli_inproc("log", "--json", *args, cwd=root)).stdout)


def gate_items(root: Path, sha: str) -> dict[str, float | None]:
    """A commit's per-item val scores (hard), read straight from its note with git: the tests' own oracle."""
    text = git(root, "notes", "--ref", "skillgit", "show", sha, check=False)
    for line in text.splitlines():
        record = json.loads(line) if line.strip() else {}
        if record.get("kind") == "gate" and record.get("val"):
            out: dict[str, float | None] = {k: None for k in record["val"].get("errors", {})}
            out.update({k: v[0] for k, v in record["val"]["per_item"].items()})
            return out
    return {}


def flips(before: dict, after: dict) -> tuple[list[str], list[str]]:
    keys = sorted(set(before) & set(after))
    known = [k for k in keys if before[k] is not None and after[k] is not None]
    return ([k for k in known if before[k] < 0.5 <= after[k]], [k for k in known if after[k] < 0.5 <= before[k]])


def _decide(store: Store, text: str, step: int, seq: int, accept: bool, before: float, after: float,
            per_item: dict[str, float], errors: dict[str, str], edit: str, run: str = "r1") -> str:
    applied = {"op": "append", "content": edit, "rationale": f"because of step {step}", "target": ""}
    candidate = {"kind": "candidate", "run": run, "step": step, "type": "step", "mode": "patch",
                 "apply": [{"edit": applied, "status": "applied", "reason": ""},
                           {"edit": {"op": "append", "content": "unused idea"}, "status": "skipped_over_budget",
                            "reason": "ranked 2 of 2; budget 1"}],
                 "edits": [applied], "train": {"hard_mean": 0.5, "soft_mean": 0.75},
                 "usage": {"by_stage": {}, "timings_s": {"rollout": 1.5, "gate": 2.0}}}
    total = len(per_item) + len(errors)
    outcome = StepOutcome(run=run, step=str(step), kind=StepKind.STEP, epoch=1, seq=seq,
                          verdict=Verdict.ACCEPTED if accept else Verdict.REJECTED, score_before=before,
                          score_after=after, reason="better" if accept else "worse", edits=(f"append: {edit}",),
                          coverage=Coverage(len(per_item), total, tuple(errors)))
    gate = {"kind": "gate", "run": run, "step": step, "metric": "hard", "score_before": before, "score_after": after,
            "reason": outcome.reason,
            "val": {"per_item": {k: [v, v] for k, v in per_item.items()}, "errors": errors}}
    cand = store.propose(text, run=run, step=step, subject=f"skill: step {step}", body=f"- append: {edit}",
                         trailers={"Skillgit-Seq": str(seq)}, note=[candidate], defer_note=True)
    store.decide(cand, accept=accept, reason=outcome.reason, score_before=before, score_after=after, note=[gate],
                 decision=outcome)
    return cand.sha


def build_history(root: Path) -> dict[str, str]:
    """A finished run `r1` on main: step 1 accepted (from the seed), step 2 accepted (fixes b and c, breaks a, d
    unknown before), step 3 rejected. Returns the commits by name."""
    store = Store.open(root, "SKILL.md")
    seed = store.tip()
    s1 = _decide(store, SEED + "Use ISO dates.\n", 1, 1, True, 0.25, 0.5,
                 {"a": 1.0, "b": 0.0, "c": 0.0, "e": 1.0}, {"d": "student: HTTP 500"}, "Use ISO dates.")
    s2 = _decide(store, SEED + "Use ISO dates.\nUppercase codes.\n", 2, 2, True, 0.5, 0.8,
                 {"a": 0.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0}, {}, "Uppercase codes.")
    s3 = _decide(store, SEED + "Use ISO dates.\nUppercase codes.\nShout.\n", 3, 3, False, 0.8, 0.2,
                 {"a": 0.0, "b": 0.0, "c": 0.0, "d": 1.0, "e": 0.0}, {}, "Shout.")
    scores = {"seed": SkillScores(seed, 0.25, 0.3), "best": SkillScores(s2, 0.8, 0.7),
              "final": SkillScores(s2, 0.8, 0.7)}
    progress = RunProgress(run="r1", config_digest="d1g3st", branch="main", status="finished", next_step=4,
                           total_steps=3, accepted=2, rejected=1, seq=3, seed_rev=seed, seed_score=0.25,
                           current_score=0.8, started=1.7e9, updated=1.7e9 + 60, final_scores=scores)
    store.save_run("r1", {"progress.json": json.dumps(progress.to_dict()),
                          "config.yaml": "evaluation:\n  gate_metric: hard\n  mixed_weight: 0.5\n"}, "run finished")
    return {"seed": seed, "s1": s1, "s2": s2, "s3": s3}


# ---------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """`skillgit demo --dir D --steps 4`: a repository trained on main with the simulated world."""
    base = tmp_path_factory.mktemp("demo")
    with hermetic(base / "home"):
        ok(run_cli_inproc("demo", "--dir", str(base / "d"), "--steps", "4", cwd=base))
    return base / "d"


@pytest.fixture
def history(make_repo) -> tuple[Path, dict[str, str]]:
    root = make_repo({"SKILL.md": SEED})
    return root, build_history(root)


# ---------------------------------------------------------------------------------------------- report
def _heatmap_cells(page: str) -> tuple[int, int]:
    counts = []
    for group in ("heatmap-cells-known", "heatmap-cells-unknown"):
        found = re.search(rf'<g id="{group}">(.*?)</g>', page, re.S)
        counts.append(len(re.findall(r"<rect ", found.group(1))) if found else 0)
    return counts[0], counts[1]


def test_report_writes_one_offline_page_with_one_column_per_decision(demo, tmp_path):
    entries = log_json(demo)
    run = entries[0]["run"]
    decisions = [e for e in entries if e["verdict"] in ("accepted", "rejected")]
    assert len(decisions) >= 4 and {"accepted", "rejected"} <= {e["verdict"] for e in decisions}
    proc = ok(run_cli("report", "--renderer", "builtin", "--repo", str(demo), cwd=tmp_path))
    out = tmp_path / f"skillgit-report-{run}.html"  # the default: in the current folder
    assert proc.stdout.strip() == str(out) and [p.name for p in tmp_path.iterdir()] == [out.name]
    page = out.read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page
    # one decision article per decision, in decision order, each with its own Δ as `log --json` has it
    assert re.findall(r'class="decision (accepted|rejected)" id="d(\d+)"', page) == [
        (e["verdict"], str(e["seq"])) for e in sorted(decisions, key=lambda e: e["seq"])]
    # the heatmap: one column per decision plus the seed's, one row per val item (unknown cells drawn apart)
    items = set()
    for e in decisions:
        items |= set(gate_items(demo, e["sha"]))
    known, unknown = _heatmap_cells(page)
    assert known + unknown == (len(decisions) + 1) * len(items)
    # the seed's column is known: the first decision's gate note records its base's per-item scores
    # -o writes where asked
    other = ok(run_cli("report", run, "-o", str(tmp_path / "sub" / "r.html"), cwd=demo))
    assert Path(other.stdout.strip()).read_text(encoding="utf-8").count('class="decision ') == len(decisions)


def test_report_model_keeps_unknown_apart_from_failed(history):
    root, shas = history
    review = data.load_run(Store.open(root, "SKILL.md"), "r1")
    report = data.to_run_report(review, project="p", skill_path="SKILL.md")
    assert [s.step for s in report.steps] == ["1", "2", "3"]
    assert [(s.verdict, s.val_before, s.val_after) for s in report.steps] == [
        ("accepted", 0.25, 0.5), ("accepted", 0.5, 0.8), ("rejected", 0.8, 0.2)]
    assert report.steps[0].item_scores == {"a": 1.0, "b": 0.0, "c": 0.0, "d": None, "e": 1.0}
    assert report.steps[0].coverage == pytest.approx(0.8) and report.steps[0].train_score == 0.5
    assert report.steps[0].seconds == {"rollout": 1.5, "gate": 2.0}
    assert [e.status for e in report.steps[0].edits] == ["applied", "skipped_over_budget"]
    assert "+Uppercase codes." in report.steps[1].diff
    assert (report.val.seed, report.val.final, report.test.final) == (0.25, 0.8, 0.7)
    assert report.val_items == ("a", "b", "c", "d", "e") and report.config_digest == "d1g3st"
    assert f"git branch repro/r1 {shas['seed'][:12]}" in report.reproduce
    assert data.RunReport.from_dict(report.to_dict()) == report


# ---------------------------------------------------------------------------------------------- show
def test_show_opens_with_a_summary_that_names_the_flips(demo):
    entries = log_json(demo)
    kept = {e["sha"] for e in entries if e["verdict"] in ("accepted", "seed")}
    # a decision whose parent was itself decided by the run: both sides' per-item scores are in git
    target = next(e for e in entries if e["verdict"] in ("accepted", "rejected") and e["parent"] in kept
                  and gate_items(demo, e["parent"]))
    fixed, broke = flips(gate_items(demo, target["parent"]), gate_items(demo, target["sha"]))
    proc = ok(run_cli_inproc("show", target["label"], cwd=demo))
    text = proc.stdout
    first = text.splitlines()[0]
    assert first.startswith(f"{target['verdict']} {target['label']}")
    assert f"→ {target['score']:.4f}  Δ {target['delta']:+.4f}" in text
    assert f"fixed ({len(fixed)}): {', '.join(fixed[:12]) or 'none'}" in text
    assert f"broke ({len(broke)}): {', '.join(broke[:12]) or 'none'}" in text
    assert "why: " in text and "\ndiff:\n" in text and "cost: $" in text
    assert "[candidate]" not in text  # the full records stay behind --full
    full = ok(run_cli_inproc("show", target["label"], "--full", cwd=demo)).stdout
    assert "[decision]" in full and "[candidate]" in full and "[gate]" in full


def test_plain_git_log_shows_the_short_note_and_no_json(demo):
    """`git log` / `git show` (no --notes option: init's notes.displayRef) print the display note of a trained
    commit — verdict, val before → after, edits — and none of the JSON records, which stay in refs/notes/skillgit."""
    entries = [e for e in log_json(demo) if e["verdict"] == "accepted"]
    assert entries
    for args in (("log", "-1", entries[0]["sha"]), ("show", "-s", entries[0]["sha"])):
        proc = subprocess.run(["git", *args], cwd=demo, capture_output=True, text=True, check=True)
        assert proc.stderr == ""  # no "notes ref ... is invalid" warning either
        note = proc.stdout.partition("\nNotes (skillgit-log):\n")[2]
        first = note.splitlines()[0].strip()
        e = entries[0]
        assert first.startswith(f"skillgit: accepted {e['run']}/{e['step']} · val "), proc.stdout
        assert f"→ {e['score']:.4f} ({e['delta'] * 100:+.1f})" in first and f" · {len(e['edits'])} edit(s)" in first
        assert note.splitlines()[1].strip().startswith("gate: ") and len(note.splitlines()) == 2
        assert '{"' not in proc.stdout and "Notes (skillgit)" not in proc.stdout
    # the JSON records exist: only not displayed by default
    data_note = git(demo, "log", "-1", "--notes=skillgit", "--format=%N", entries[0]["sha"])
    assert '{"' in data_note and '"kind":"decision"' in data_note.replace(" ", "")


def test_show_summary_of_a_hand_built_history(history):
    root, shas = history
    text = ok(run_cli_inproc("show", "2", cwd=root)).stdout
    assert text.startswith("accepted r1/0002 (step, epoch 1)")
    assert "val 0.5000 → 0.8000  Δ +0.3000 · 5/5 val items scored" in text
    assert "fixed (2): b, c" in text and "broke (1): a" in text and "unknown on one side (1): d" in text
    assert "1. append: Uppercase codes." in text and "why: because of step 2" in text
    assert "+Uppercase codes." in text
    cost = next(line for line in text.splitlines() if line.startswith("cost: $"))
    assert "train" not in cost  # the train batch's score is no cost: its own, labelled line
    assert ("train batch: 0.5000 (mean rollout score of the skill before this step's edits, on the step's train "
            "items)") in text
    first = ok(run_cli_inproc("show", "1", cwd=root)).stdout
    assert "flips not recorded" in first  # the seed's per-item scores are not in git: never "nothing changed"
    rejected = ok(run_cli_inproc("show", "rejected/r1/3", cwd=root)).stdout
    assert rejected.startswith("rejected r1/0003") and "tag rejected/r1/0003" in rejected
    assert "broke (3): b, c, e" in rejected
    plain = ok(run_cli_inproc("show", shas["seed"], cwd=root)).stdout
    assert "not a skillgit decision" in plain


def test_show_summary_via_the_read_api_escapes_nothing_itself(history):
    from skillgit.review.show import summary

    root, shas = history
    store = Store.open(root, "SKILL.md")
    text = summary(store, read.show(store, shas["s2"]), "2")
    assert "more: skillgit show 2 --full" in text


# ---------------------------------------------------------------------------------------------- small parts
def test_wilson_interval():
    lo, hi = data.wilson(0.5, 100)
    assert (round(lo, 4), round(hi, 4)) == (0.4038, 0.5962)
    lo, hi = data.wilson(0.0, 30)
    assert lo == 0.0 and 0.11 < hi < 0.12
    assert data.wilson(None, 30) is None and data.wilson(0.5, 0) is None


def test_compare_items_separates_unknown_and_unrecorded():
    got = data.compare_items({"a": 1.0, "b": 0.0, "c": None, "d": 0.67}, {"a": 0.33, "b": 1.0, "c": 1.0, "d": 1.0})
    assert (got.fixed, got.broke, got.unknown) == (("b",), ("a",), ("c",)) and got.recorded
    assert not data.compare_items(None, {"a": 1.0}).recorded
    assert data.ItemFlips.from_dict(got.to_dict()) == got
